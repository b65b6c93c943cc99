"""The README is the front door, not a lab notebook: it opens with the two commands, stays within
:data:`MAX_README_LINES` lines, and every file it links to exists (studies live under docs/studies/)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: The most lines the README may have: what it is, the two commands, what a user types, one
#: results table with its command, the layout, links.
MAX_README_LINES = 150


def test_the_readme_fits_in_150_lines_and_opens_with_the_two_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move narrative to docs/"
    first_block = "\n".join(lines[: lines.index("```", next(i for i, ln in enumerate(lines) if ln == "```bash") + 1)])
    assert "make demo" in first_block and "make test" in first_block


def test_every_file_the_readme_links_to_exists():
    text = README.read_text(encoding="utf-8")
    links = [m.group(1).split("#")[0] for m in re.finditer(r"\]\(([^)]+)\)", text)]
    local = [link for link in links if link and "://" not in link]
    assert local, "the README links to its docs"
    missing = [link for link in local if not (REPO / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
