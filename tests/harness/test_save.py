"""Saving a harness: edits keep comments, order and quoting (one field, one diff line); fresh
folders are tidy and byte-for-byte reproducible; whatever is written loads back equal; an
invalid harness writes nothing."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harnessctl.harness import HarnessError, load_harness, read_documents
from harnessctl.harness.model import PromptBlock, Rule, Skill
from harnessctl.harness.save import render_harness_files, save_harness
from harnessctl.harness.starter import write_starter

from .harness_support import LIVECOMMERCE, copy_harness, sim_backends, snapshot  # noqa: F401


def same(a, b) -> bool:
    return dataclasses.replace(a, root=None) == dataclasses.replace(b, root=None)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path):
    """A git repository holding a copy of the shipped harness, committed."""
    repo = tmp_path / "repo"
    copy_harness(repo / "harnesses" / "livecommerce")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "v3")
    return repo


def numstat(repo: Path) -> list[tuple[int, int, str]]:
    git(repo, "add", "-A")
    rows = [line.split("\t") for line in git(repo, "diff", "--cached", "--numstat").splitlines()]
    return [(int(a), int(d), path.removeprefix("harnesses/livecommerce/")) for a, d, path in rows]


# -- editing a harness in place ----------------------------------------------------------------


def test_saving_an_unchanged_harness_over_its_source_changes_no_byte(repo, sim_backends):
    root = repo / "harnesses" / "livecommerce"
    save_harness(load_harness(root), root, base=root)
    assert numstat(repo) == []


def test_a_one_field_edit_is_a_one_line_git_diff(repo, sim_backends):
    root = repo / "harnesses" / "livecommerce"
    h = load_harness(root)
    h.prompt.constraints["max_reply_chars"].value = 100
    save_harness(h, root, base=root)
    assert numstat(repo) == [(1, 1, "prompt.yaml")]
    assert "-    value: 120\n+    value: 100" in git(repo, "diff", "--cached")
    assert same(load_harness(root), h)


def test_renaming_a_tool_touches_one_line_of_its_file(repo, sim_backends):
    root = repo / "harnesses" / "livecommerce"
    h = load_harness(root)
    h.tool("order_status").name = "where_is_my_order"
    save_harness(h, root, base=root)
    assert numstat(repo) == [(1, 1, "tools/order_status.yaml")]
    assert same(load_harness(root), h)


def test_reordered_blocks_move_whole_and_comments_stay(repo, sim_backends):
    root = repo / "harnesses" / "livecommerce"
    h = load_harness(root)
    h.prompt.blocks.reverse()
    save_harness(h, root, base=root)
    text = (root / "prompt.yaml").read_text()
    assert text.startswith("# System prompt: blocks are shown in this order.")
    assert [b.key for b in load_harness(root).prompt.blocks] == [b.key for b in h.prompt.blocks]
    assert same(load_harness(root), h)
    [(added, deleted, path)] = numstat(repo)
    assert path == "prompt.yaml" and added == deleted  # lines moved, none rewritten


def test_a_rewritten_block_keeps_its_folded_style(repo, sim_backends):
    root = repo / "harnesses" / "livecommerce"
    h = load_harness(root)
    h.prompt.blocks[1] = PromptBlock(
        "grounding",
        "Quote prices, stock and dates only from a tool result in this conversation; never guess a number or a date.",
    )
    save_harness(h, root, base=root)
    text = (root / "prompt.yaml").read_text()
    assert "  - key: grounding\n    text: >-\n      Quote prices" in text
    assert same(load_harness(root), h)


def test_a_removed_skill_loses_its_file_and_an_added_one_gets_its_own(repo, sim_backends):
    root = repo / "harnesses" / "livecommerce"
    h = load_harness(root)
    h.skills = [s for s in h.skills if s.key != "flash_sale"]
    h.skills.append(
        Skill("wishlist", "save_for_later", "keep a product for a viewer", [Rule("ask", "Ask which size.")], [])
    )
    save_harness(h, root, base=root)
    assert not (root / "skills" / "flash_sale.yaml").exists()
    assert (root / "skills" / "wishlist.yaml").read_text().startswith("key: wishlist\nname: save_for_later\n")
    assert same(load_harness(root), h)
    changes = {path: (a, d) for a, d, path in numstat(repo)}
    assert set(changes) == {"skills/flash_sale.yaml", "skills/wishlist.yaml"}


def test_saving_into_another_folder_with_a_base_keeps_the_comments(tmp_path, sim_backends):
    h = load_harness(LIVECOMMERCE)
    h.prompt.constraints["max_emojis"].value = 0
    out = save_harness(h, tmp_path / "variant", base=LIVECOMMERCE)
    assert (out / "hooks.yaml").read_text() == (LIVECOMMERCE / "hooks.yaml").read_text()
    assert "# The live-commerce streaming avatar." in (out / "harness.yaml").read_text()
    assert same(load_harness(out), h)


def test_saving_from_documents_leaves_the_callers_documents_alone(tmp_path, sim_backends):
    docs = read_documents(LIVECOMMERCE)
    before = copy.deepcopy(docs)
    h = load_harness(LIVECOMMERCE)
    h.tool("promotions").description = "list the deals of a product"
    save_harness(h, tmp_path / "out", base=docs)
    assert docs == before
    assert same(load_harness(tmp_path / "out"), h)


# -- fresh folders -----------------------------------------------------------------------------


def test_a_fresh_folder_is_tidy_reloads_equal_and_is_reproducible(tmp_path, sim_backends):
    h = load_harness(LIVECOMMERCE)
    a = save_harness(h, tmp_path / "a")
    b = save_harness(copy.deepcopy(h), tmp_path / "b")
    files_a = {p.relative_to(a): p.read_bytes() for p in sorted(a.rglob("*.yaml"))}
    files_b = {p.relative_to(b): p.read_bytes() for p in sorted(b.rglob("*.yaml"))}
    assert files_a == files_b
    assert sorted(str(p) for p in files_a) == sorted(
        ["harness.yaml", "prompt.yaml", "hooks.yaml"]
        + [f"skills/{s.key}.yaml" for s in h.skills]
        + [f"tools/{t.key}.yaml" for t in h.tools]
    )
    reloaded = load_harness(a)
    assert same(reloaded, h)
    assert render_harness_files(reloaded) == {str(k): v.decode() for k, v in files_a.items()}  # a fixed point
    assert "tools: [order_status, human_handoff]" in (a / "skills" / "complaint.yaml").read_text()


def test_skills_and_tools_in_an_order_file_names_cannot_give_are_listed_in_harness_yaml(tmp_path, sim_backends):
    h = load_harness(LIVECOMMERCE)
    h.skills.reverse()
    h.tools = h.tools[1:] + h.tools[:1]
    out = save_harness(h, tmp_path / "shuffled")
    assert sorted(p.name for p in (out / "skills").iterdir()) == sorted(f"{s.key}.yaml" for s in h.skills)
    order = read_documents(out)["harness.yaml"]["order"]
    assert order == {"skills": [s.key for s in h.skills], "tools": [t.key for t in h.tools]}
    reloaded = load_harness(out)
    assert [s.key for s in reloaded.skills] == [s.key for s in h.skills]
    assert same(reloaded, h)


def test_a_fresh_folder_in_file_name_order_needs_no_order_list(tmp_path, sim_backends):
    out = save_harness(load_harness(LIVECOMMERCE), tmp_path / "plain")
    assert "order" not in read_documents(out)["harness.yaml"]


def test_moving_a_skill_changes_harness_yaml_only_and_renames_no_file(repo, sim_backends):
    root = repo / "harnesses" / "livecommerce"
    h = load_harness(root)
    h.skills.insert(0, h.skills.pop(h.skills.index(h.skill("greeting"))))
    save_harness(h, root, base=root)
    [(added, deleted, path)] = numstat(repo)
    assert (deleted, path) == (0, "harness.yaml") and added == len(h.skills) + 2  # order:, skills:, one line each
    git(repo, "commit", "-q", "-m", "greeting first")
    h.skills.insert(1, h.skills.pop())  # the last one moves up: one line moves in the list
    save_harness(h, root, base=root)
    assert numstat(repo) == [(1, 1, "harness.yaml")]
    assert [s.key for s in load_harness(root).skills] == [s.key for s in h.skills]


def test_an_order_list_must_name_every_skill_once_and_only_skills_that_exist(tmp_path, sim_backends):
    from harnessctl.harness.check import validate_harness_dir

    root = copy_harness(tmp_path / "lc")
    keys = sorted(p.stem for p in (root / "skills").iterdir())
    listed = ["greetings", *[k for k in keys if k not in ("greeting", "complaint")]]
    text = (root / "harness.yaml").read_text()
    (root / "harness.yaml").write_text(text + "order:\n  skills: [" + ", ".join(listed) + "]\n")
    issues = {(i.message, i.hint) for i in validate_harness_dir(root)}
    assert issues == {
        ("order.skills names unknown skill 'greetings'", "did you mean 'greeting'?"),
        (
            "order.skills does not list skill 'greeting' (skills/greeting.yaml)",
            "add greeting where it should appear, or remove order.skills to use file-name order",
        ),
        (
            "order.skills does not list skill 'complaint' (skills/complaint.yaml)",
            "add complaint where it should appear, or remove order.skills to use file-name order",
        ),
    }
    assert all(i.file == "harness.yaml" and i.line for i in validate_harness_dir(root))


def test_an_order_list_sets_the_prompt_order_of_skills(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    keys = sorted(p.stem for p in (root / "skills").iterdir())
    wanted = keys[::-1]
    with open(root / "harness.yaml", "a") as f:
        f.write("order:\n  skills: [" + ", ".join(wanted) + "]\n")
    h = load_harness(root)
    assert [s.key for s in h.skills] == wanted
    assert [t.key for t in h.tools] == sorted(p.stem for p in (root / "tools").iterdir())  # no list: file order


def test_saving_a_fresh_harness_over_a_harness_folder_removes_stale_files(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    h = load_harness(root)
    h.tools = [t for t in h.tools if t.key != "return_policy"]
    h.skills = [s for s in h.skills if "return_policy" not in s.tools]
    save_harness(h, root)
    assert not (root / "tools" / "return_policy.yaml").exists()
    assert same(load_harness(root), h)


# -- nothing is written on failure -------------------------------------------------------------


def test_an_invalid_harness_is_refused_and_nothing_is_written(repo, tmp_path, sim_backends):
    root = repo / "harnesses" / "livecommerce"
    h = load_harness(root)
    h.prompt.constraints["max_reply_chars"].value = 999
    h.skill("greeting").tools.append("no_such_tool")
    before = snapshot(root)
    with pytest.raises(HarnessError) as e:
        save_harness(h, root, base=root)
    assert {(i.file, i.message) for i in e.value.issues} == {
        ("prompt.yaml", "max_reply_chars: value 999 is outside its range [60, 200]"),
        ("skills/greeting.yaml", "unknown tool key 'no_such_tool'"),
    }
    assert snapshot(root) == before
    with pytest.raises(HarnessError):
        save_harness(h, tmp_path / "new")
    assert not (tmp_path / "new").exists() and list(tmp_path.glob(".new.*")) == []


def test_values_files_cannot_hold_are_refused_before_writing(tmp_path):
    h = load_harness(LIVECOMMERCE, validate=False)
    h.variables["when"] = object()
    with pytest.raises(HarnessError, match="harness.yaml: cannot write this file: cannot represent an object"):
        save_harness(h, tmp_path / "out", validate=False)
    assert not (tmp_path / "out").exists()


def test_refuses_a_folder_that_holds_something_else(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("buy milk")
    with pytest.raises(HarnessError, match="folder is not empty and holds no harness"):
        save_harness(load_harness(LIVECOMMERCE, validate=False), tmp_path / "notes", validate=False)
    assert [p.name for p in (tmp_path / "notes").iterdir()] == ["todo.txt"]


def test_refuses_a_harness_folder_whose_skills_folder_is_a_link(tmp_path):
    root = copy_harness(tmp_path / "lc")
    outside = tmp_path / "elsewhere"
    (root / "skills").rename(outside)
    (root / "skills").symlink_to(outside)
    before = snapshot(outside)
    with pytest.raises(HarnessError, match="skills/ is a symbolic link"):
        save_harness(load_harness(LIVECOMMERCE, validate=False), root, validate=False)
    assert snapshot(outside) == before


# -- any text survives the round trip ----------------------------------------------------------

TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="{}"),
    min_size=1,
    max_size=160,
)


@pytest.fixture(scope="module")
def starter(tmp_path_factory):
    """A small harness (the starter's eight files) keeps the property test quick."""
    root = tmp_path_factory.mktemp("starter") / "shop"
    write_starter(root, name="shop")
    return load_harness(root, validate=False), root


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: the failing example is shown as found
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(block=TEXT, rule=TEXT, description=TEXT, variable=TEXT)
def test_any_text_round_trips_fresh_and_as_an_edit(tmp_path_factory, starter, block, rule, description, variable):
    base, base_root = starter
    h = copy.deepcopy(base)
    h.prompt.blocks[0].text = block
    h.skill("greeting").rules[0].text = rule
    h.tool("order_status").description = description
    h.variables["brand"] = variable
    out = tmp_path_factory.mktemp("texts")
    save_harness(h, out / "fresh", validate=False)
    assert same(load_harness(out / "fresh", validate=False), h)
    save_harness(h, out / "edit", base=base_root, validate=False)
    assert same(load_harness(out / "edit", validate=False), h)
