"""The worked example of docs/harness.md runs as written: each `harnessctl` line of its block,
in order, on a copy of the shipped harness (the block's /tmp paths moved under tmp_path)."""

from __future__ import annotations

import shlex
import shutil

from .harness_support import LIVECOMMERCE, REPO_ROOT, run_cli

DOC = REPO_ROOT / "docs" / "harness.md"


def example_commands() -> list[str]:
    text = DOC.read_text(encoding="utf-8").split("### Worked example", 1)[1]
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def test_the_worked_example_runs_step_by_step(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)  # eval reads the suites under evals/
    commands = example_commands()
    assert commands[0] == "cp -r harnesses/livecommerce /tmp/shop"
    shutil.copytree(LIVECOMMERCE, tmp_path / "shop")
    exits = []
    for command in commands[1:]:
        args = shlex.split(command.replace("/tmp/", f"{tmp_path}/"))
        assert args[0] == "harnessctl"
        result = run_cli(*args[1:])
        assert "Traceback" not in result.output
        exits.append((args[1], result.exit_code))
    assert exits == [("import", 0), ("import", 0), ("validate", 0), ("diff", 1), ("augment", 0), ("eval", 0)]
    variants = sorted(p for p in (tmp_path / "shop-variants").iterdir() if p.is_dir())
    assert len(variants) == 5
    assert all((v / "skills" / "coupon_codes" / "references" / "stacking.md").is_file() for v in variants)
