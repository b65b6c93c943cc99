"""`harnessctl import skills` / `export skills`: Agent Skills folders in and out of a harness.

Each folder becomes one skill (rules from the body's list items and paragraphs), its files are
copied and served on request, scripts are never run, and every bad folder is refused with one
line naming the file, exit code 2, and nothing written. Export then re-import changes nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harnessctl.harness import HarnessError, load_harness
from harnessctl.harness.agent_skills import join_body, split_body
from harnessctl.harness.render import render_harness, render_skill
from harnessctl.harness.skill_files import read_skill_file

from .harness_support import REPO_ROOT, copy_harness, run_cli, sim_backends, snapshot  # noqa: F401

EXAMPLES = REPO_ROOT / "examples" / "interchange"


@pytest.fixture
def shop(tmp_path, sim_backends):  # noqa: F811
    return copy_harness(tmp_path / "shop")


def skill_folder(parent: Path, name: str, front: str, body: str = "", files: dict[str, str] | None = None) -> Path:
    """An Agent Skills folder ``parent/name`` with SKILL.md = ``---`` front ``---`` body, plus ``files``."""
    folder = parent / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    for rel, text in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


def import_json(shop: Path, *folders: Path) -> dict:
    result = run_cli("import", "skills", *map(str, folders), "-H", str(shop), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def refused(shop: Path, *folders: Path):
    """Import ``folders``; assert exit 2, no traceback, nothing written; return the error line."""
    before = snapshot(shop)
    result = run_cli("import", "skills", *map(str, folders), "-H", str(shop))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert snapshot(shop) == before
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


# -- what a folder becomes ---------------------------------------------------------------------


def test_a_folder_with_front_matter_only_is_a_skill_without_rules(shop, tmp_path):
    folder = skill_folder(tmp_path / "in", "size-chart", "name: size-chart\ndescription: read the size chart\n")
    out = import_json(shop, folder)
    assert [(c["kind"], c["key"]) for c in out["diff"]["changes"]] == [("added", "size_chart")]
    skill = load_harness(shop).skill("size_chart")
    assert (skill.name, skill.description, skill.rules) == ("size-chart", "read the size chart", [])


def test_list_items_and_paragraphs_become_rules_in_order_under_their_sections(shop):
    import_json(shop, EXAMPLES / "skills" / "coupon-codes")
    skill = load_harness(shop).skill("coupon_codes")
    assert [r.text for r in skill.rules] == [
        "Call find_coupons with the product on screen before you name any code.",
        "Quote the code exactly as the tool returns it, with its end time if it has one.",
        "Never invent a code or a discount the tool did not return.",
        "If no coupon applies, say so and mention the live-room price instead.",
        "The stacking rules are in references/stacking.md; read it when a viewer asks to combine codes.",
    ]
    assert skill.rules[0].key == "call_find_coupons_with_the"
    assert "## What never to do\n\n- {{ rule }}" in skill.layout
    assert skill.extra == {"license": "Apache-2.0", "metadata": {"author": "live-ops", "version": "1.0"}}


def test_numbered_items_nested_lists_and_code_fences_stay_whole():
    body = "Intro line.\n\n1. First\n   - nested a\n   - nested b\n2) Second\n\n```\n- not an item\n```\n"
    rules, layout = split_body(body)
    assert rules == ["Intro line.", "First\n   - nested a\n   - nested b", "Second", "```\n- not an item\n```"]
    assert layout == "{{ rule }}\n\n1. {{ rule }}\n2) {{ rule }}\n\n{{ rule }}\n"
    assert join_body(rules, layout) == body


def test_allowed_tools_map_to_the_harness_tools_by_name_and_unknown_ones_are_named(shop, tmp_path):
    folder = skill_folder(
        tmp_path / "in",
        "stock-help",
        "name: stock-help\ndescription: stock questions\nallowed-tools: check_stock Bash(git:*)\n",
        "- Check the stock first.\n",
    )
    out = import_json(shop, folder)
    assert load_harness(shop).skill("stock_help").tools == ["stock_check"]
    assert any("allowed-tools names 'Bash(git:*)', which is no tool of the harness" in w for w in out["warnings"])


def test_references_are_copied_into_the_harness_and_served_by_the_skill_loader(shop):
    import_json(shop, EXAMPLES / "skills" / "coupon-codes")
    copied = shop / "skills" / "coupon_codes" / "references" / "stacking.md"
    assert copied.read_bytes() == (EXAMPLES / "skills/coupon-codes/references/stacking.md").read_bytes()
    h = load_harness(shop)
    skill = h.skill("coupon_codes")
    assert read_skill_file(h, skill, "references/stacking.md").startswith("# Stacking coupons")
    assert "Files (call load_skill with name and file to read one): references/stacking.md" in render_skill(h, skill)
    loader = render_harness(h).tools[0]["function"]["parameters"]["properties"]
    assert "file" in loader
    with pytest.raises(HarnessError, match="serves no file '../harness.yaml'"):
        read_skill_file(h, skill, "../harness.yaml")


def test_an_agent_reads_a_reference_file_through_the_skill_loader_and_never_a_script(shop):
    from harnessctl.models.scripted import ScriptedModel
    from harnessctl.runtime import run_episode
    from harnessctl.sim import case_from_query

    import_json(shop, EXAMPLES / "skills" / "coupon-codes", EXAMPLES / "skills" / "gift-wrap")
    h = load_harness(shop)

    def load(**args: str) -> str:
        return f"<tool_call>{json.dumps({'name': 'load_skill', 'arguments': args})}</tool_call>"

    model = ScriptedModel(
        [
            load(name="coupon-codes", file="references/stacking.md"),
            load(name="gift-wrap", file="scripts/wrap_quote.py"),
            "One store coupon per order!",
        ]
    )
    rec = run_episode(h, case_from_query("can I stack two codes?", "P001"), model)
    served, script = [m["content"] for m in rec.messages if m["role"] == "tool"]
    assert "Only one store coupon applies per order." in served
    assert "serves no file 'scripts/wrap_quote.py'" in script
    assert "gift wrap: free" not in script


def test_a_harness_without_skill_files_renders_its_loader_as_before(shop):
    loader = render_harness(load_harness(shop)).tools[0]["function"]["parameters"]
    assert loader["properties"].keys() == {"name"}


def test_scripts_are_never_run_never_served_and_recorded_as_inert_files(shop, tmp_path):
    marker = tmp_path / "ran"
    folder = skill_folder(
        tmp_path / "in",
        "wrap",
        "name: wrap\ndescription: gift wrap\n",
        "- Offer gift wrap.\n",
        {"scripts/setup.py": f"open({str(marker)!r}, 'w').write('ran')\n"},
    )
    out = import_json(shop, folder)
    assert any("ships scripts/setup.py — scripts are never run; recorded as inert files" in w for w in out["warnings"])
    h = load_harness(shop)
    skill = h.skill("wrap")
    assert skill.inert_files == ["scripts/setup.py"] and skill.files == []
    with pytest.raises(HarnessError, match="scripts are never served"):
        read_skill_file(h, skill, "scripts/setup.py")
    assert not marker.exists()


def test_the_import_prints_its_semantic_diff(shop):
    result = run_cli("import", "skills", str(EXAMPLES / "skills" / "gift-wrap"), "-H", str(shop))
    assert result.exit_code == 0, result.output
    assert "+ skill gift_wrap  “gift-wrap”" in result.stdout
    assert "suggested bump: minor" in result.stdout


# -- bad folders: one line, exit 2, nothing written --------------------------------------------

LONG_NAME = "a" * 65


@pytest.mark.parametrize(
    ("what", "front", "body", "expected"),
    [
        (
            "malformed front matter",
            "name: broken\ndescription: [unclosed\n",
            "",
            "SKILL.md:4:1: invalid YAML:",
        ),
        (
            "no front matter",
            None,
            "# Just markdown\n",
            "SKILL.md:1: no YAML front matter: the first line is not --- — start the file with ---, then name: and "
            "description: lines, then ---",
        ),
        (
            "a name over 64 characters",
            f"name: {LONG_NAME}\ndescription: d\n",
            "",
            "SKILL.md:2: name is 65 characters; the limit is 64 ($.name) — shorten it, and rename the folder to match",
        ),
        (
            "a name that is not lowercase letters, digits and hyphens",
            "name: Gift_Wrap\ndescription: d\n",
            "",
            "SKILL.md:2: name 'Gift_Wrap' is not a valid skill name ($.name) — a skill name is lowercase letters, "
            "digits and hyphens (no hyphen first, last or twice in a row)",
        ),
        (
            "a description over 1,024 characters",
            f"name: bad\ndescription: {'d' * 1025}\n",
            "",
            "SKILL.md:3: description is 1025 characters; the limit is 1024 ($.description) — shorten it; put the "
            "detail in the body",
        ),
        (
            "no description",
            "name: bad\n",
            "",
            "SKILL.md:1: missing required field 'description' — add `description:` (what it does, when to use it)",
        ),
    ],
)
def test_a_bad_skill_md_is_refused_naming_the_file_and_line(shop, tmp_path, what, front, body, expected):
    folder = tmp_path / "in" / "bad"
    folder.mkdir(parents=True)
    text = body if front is None else f"---\n{front}---\n{body}"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    line = refused(shop, folder)
    assert line.startswith(f"error: {folder}/")
    assert expected in line, line


def test_two_folders_with_the_same_name_are_refused(shop, tmp_path):
    a = skill_folder(tmp_path / "a", "wrap", "name: wrap\ndescription: one\n")
    b = skill_folder(tmp_path / "b", "wrap", "name: wrap\ndescription: two\n")
    line = refused(shop, a, b)
    assert line == (
        f"error: {b}/SKILL.md: skill name 'wrap' is also the name of {a}/SKILL.md — every skill needs its own name; "
        "import one of the two"
    )


def test_a_symlink_out_of_the_folder_is_refused(shop, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("password", encoding="utf-8")
    folder = skill_folder(tmp_path / "in", "leaky", "name: leaky\ndescription: d\n")
    (folder / "references").mkdir()
    os.symlink(secret, folder / "references" / "notes.md")
    line = refused(shop, folder)
    assert line == (
        f"error: {folder}/references/notes.md: is a symbolic link to {secret} (outside the skill folder); links are "
        "refused — copy the file itself into the skill folder"
    )


def test_a_10_mb_body_is_refused_with_the_limit(shop, tmp_path):
    folder = skill_folder(tmp_path / "in", "huge", "name: huge\ndescription: d\n", "- x\n" * (10 * 1024 * 1024 // 4))
    line = refused(shop, folder)
    assert line == (
        f"error: {folder}/SKILL.md: is 10.0 MiB; the limit is 256 KiB — move long material to references/ files"
    )


def test_one_bad_folder_among_good_ones_writes_nothing(shop, tmp_path):
    good = EXAMPLES / "skills" / "gift-wrap"
    bad = skill_folder(tmp_path / "in", "bad", f"name: {LONG_NAME}\ndescription: d\n")
    refused(shop, good, bad)


def test_a_name_already_used_by_a_hand_written_skill_is_not_overwritten(shop, tmp_path):
    # the shipped skill `flash_sale` is named flash_sale: an imported flash-sale gets its own key
    folder = skill_folder(tmp_path / "in", "flash-sale", "name: flash-sale\ndescription: d\n", "- Be quick.\n")
    out = import_json(shop, folder)
    assert [(c["kind"], c["key"]) for c in out["diff"]["changes"]] == [("added", "flash_sale_2")]


# -- round trips -------------------------------------------------------------------------------


def test_exported_skills_reimport_with_an_empty_diff(shop, tmp_path):
    import_json(shop, EXAMPLES / "skills" / "coupon-codes", EXAMPLES / "skills" / "gift-wrap")
    out = tmp_path / "exported"
    result = run_cli(
        "export", "skills", "-H", str(shop), "--out", str(out), "--skill", "coupon_codes", "--skill", "gift-wrap"
    )
    assert result.exit_code == 0, result.output
    again = import_json(shop, out / "coupon-codes", out / "gift-wrap")
    assert again["diff"]["changes"] == []
    assert again["written"] == []


def test_export_gives_back_the_name_description_and_body_byte_for_byte(shop, tmp_path):
    import_json(shop, EXAMPLES / "skills" / "coupon-codes", EXAMPLES / "skills" / "gift-wrap")
    out = tmp_path / "exported"
    assert run_cli("export", "skills", "-H", str(shop), "--out", str(out)).exit_code == 0
    for name in ("coupon-codes", "gift-wrap"):
        source = (EXAMPLES / "skills" / name / "SKILL.md").read_text(encoding="utf-8")
        exported = (out / name / "SKILL.md").read_text(encoding="utf-8")
        assert exported.split("\n---\n", 1)[1] == source.split("\n---\n", 1)[1]  # the body
        for line in source.splitlines()[1:3]:  # name: and description:
            assert line in exported.splitlines()
    assert (out / "gift-wrap" / "scripts" / "wrap_quote.py").is_file()
    assert (out / "coupon-codes" / "references" / "stacking.md").is_file()


def test_every_shipped_skill_exports_and_reimports_with_only_its_name_made_valid(shop, tmp_path):
    out = tmp_path / "exported"
    result = run_cli("export", "skills", "-H", str(shop), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "name 'explain_price' is not a valid Agent Skills name; exported as 'explain-price'" in result.stderr
    again = import_json(shop, *sorted(out.iterdir()))
    kinds = {(c["kind"], c["element"]) for c in again["diff"]["changes"]}
    assert kinds <= {("renamed", "skill")}  # underscores became hyphens; rules, keys and order are kept
    assert len(load_harness(shop).skills) == 11


def test_export_refuses_a_folder_that_exists(shop, tmp_path):
    out = tmp_path / "exported"
    (out / "greet-viewer").mkdir(parents=True)
    result = run_cli("export", "skills", "-H", str(shop), "--out", str(out), "--skill", "greeting")
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == f"error: {out}/greet-viewer: already exists — choose another --out, or remove the folder"
    )
