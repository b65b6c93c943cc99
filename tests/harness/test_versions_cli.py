"""Versions in git through the real CLI: show, log, tag, diff on real repositories.

A session fixture builds one repository with three tagged versions of the shipped harness
(v1 as shipped, v2 adds a skill and renames a tool, v3 tightens a constraint and moves a
prompt block); tests that write copy it first.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.harness import HarnessStore, StoreError

HARNESS = "harnesses/livecommerce"
FLASH_DEAL = """\
key: flash_deal
name: flash_deal
description: announce a ten-minute deal on the product on screen
rules:
  - key: price_and_end
    text: Call {{ tool.promotions }} and say the deal price and when it ends.
tools: [promotions]
"""


def run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def commit_all(repo: git.Repo, message: str) -> None:
    repo.git.add("-A")
    repo.git.commit("-q", "-m", message)


def new_repo(path: Path) -> git.Repo:
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "Live Ops")
        cfg.set_value("user", "email", "liveops@example.com")
        cfg.set_value("commit", "gpgsign", "false")
        cfg.set_value("tag", "gpgsign", "false")
    return repo


@pytest.fixture(scope="session")
def history_repo(tmp_path_factory, livecommerce_path) -> Path:
    """A repository whose harness has versions v1, v2, v3, each tagged with `harnessctl tag`."""
    root = tmp_path_factory.mktemp("history") / "shop"
    repo = new_repo(root)
    h = root / HARNESS
    shutil.copytree(livecommerce_path, h)
    text = (h / "harness.yaml").read_text()
    (h / "harness.yaml").write_text(re.sub(r"(?m)^version:.*\n", "", text))  # not versioned yet
    (h / "skills" / "flash_sale.yaml").unlink()
    commit_all(repo, "harness for the spring season")
    assert run("tag", "v1", "-m", "first week on air", "-H", str(h)).exit_code == 0

    (h / "skills" / "flash_deal.yaml").write_text(FLASH_DEAL)
    edit(h / "tools" / "order_status.yaml", "name: track_order", "name: where_is_my_order")
    commit_all(repo, "flash deals; clearer order tool name")
    assert run("tag", "v2", "-m", "flash deals", "-H", str(h)).exit_code == 0

    edit(h / "prompt.yaml", "value: 120", "value: 100")
    prompt = (h / "prompt.yaml").read_text()
    block = re.search(r"(?ms)^  - key: escalation\n.*?(?=^  - key:|^constraints:)", prompt).group(0)
    prompt = prompt.replace(block, "")
    prompt = prompt.replace("  - key: grounding\n", block + "  - key: grounding\n")
    (h / "prompt.yaml").write_text(prompt)
    commit_all(repo, "shorter replies; escalation first")
    assert run("tag", "v3", "-m", "shorter replies", "-H", str(h)).exit_code == 0
    return root


@pytest.fixture
def shop(history_repo, tmp_path) -> Path:
    """A private copy of the history repository (for tests that write)."""
    dst = tmp_path / "shop"
    shutil.copytree(history_repo, dst, symlinks=True)
    return dst


def state(root: Path) -> tuple[str, list[str], bytes, str]:
    repo = git.Repo(root)
    return (
        repo.head.commit.hexsha,
        sorted(t.name for t in repo.tags),
        (root / HARNESS / "harness.yaml").read_bytes(),
        repo.git.status("--porcelain"),
    )


# -- log and show ------------------------------------------------------------------------


def test_log_lists_versions_newest_first_with_what_changed(history_repo):
    result = run("log", "--json", "-H", str(history_repo / HARNESS))
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)["entries"]
    labels = [e["label"] for e in entries]
    # Each version is a one-line commit after the commits it releases.
    assert [e["label"] for e in entries if e["version"]] == ["v3", "v2", "v1"]
    assert labels[0] == "v3" and len(labels) == 6
    by_label = {e["label"]: e for e in entries}
    v3, v2, v1 = by_label["v3"], by_label["v2"], by_label["v1"]
    assert (v3["since"], v2["since"], v1["since"]) == ("v2", "v1", None)
    assert "max_reply_chars 120→100" in v3["summary"] and "block escalation moved 6→2" in v3["summary"]
    assert v2["summary"] == "+skill flash_deal, tool order_status renamed track_order→where_is_my_order"
    assert v1["summary"].startswith("first version: 10 skills, 8 tools")
    assert v2["message"] == "livecommerce v2: flash deals" and v2["author"] == "Live Ops"
    work = entries[1]  # the commit v3 released, summarized on its own
    assert work["version"] is None and work["since"] == "v2" and work["summary"] == v3["summary"]
    assert work["message"] == "shorter replies; escalation first"


def test_log_prints_a_table_of_versions(history_repo):
    result = run("log", "-H", str(history_repo / HARNESS))
    assert result.exit_code == 0
    for version in ("v1", "v2", "v3"):
        assert re.search(rf"│ {version} +│ \d{{4}}-\d\d-\d\d", result.stdout)
    assert "flash_deal" in result.stdout


def test_show_reads_a_version_a_revision_and_the_working_folder(history_repo):
    h = str(history_repo / HARNESS)
    v1 = json.loads(run("show", "v1", "--json", "-H", h).stdout)
    v2 = json.loads(run("show", "HEAD~2", "--json", "-H", h).stdout)  # v3 is HEAD, its change HEAD~1
    now = json.loads(run("show", "--json", "-H", h).stdout)
    tool = lambda d: next(t for t in d["harness"]["tools"] if t["key"] == "order_status")["name"]  # noqa: E731
    assert (v1["ref"]["kind"], v1["harness"]["version"], tool(v1)) == ("version", "v1", "track_order")
    assert (v2["ref"]["kind"], v2["ref"]["version"], tool(v2)) == ("revision", "v2", "where_is_my_order")
    assert (now["ref"]["kind"], now["harness"]["version"]) == ("folder", "v3")


def test_show_prints_a_readable_tree(history_repo):
    result = run("show", "v2", "-H", str(history_repo / HARNESS))
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("livecommerce v2 · commit ")
    for expected in (
        "prompt blocks (6)",
        "constraints (5)",
        "skills (11)",
        "tools (8)",
        "hooks",
        "flash_deal",
        "order_status “where_is_my_order”",
        "order_id*: string",
        "max_reply_chars = 120",
    ):
        assert expected in out, expected


# -- diff --------------------------------------------------------------------------------


def test_diff_of_two_versions_explains_the_change_and_exits_1(history_repo):
    result = run("diff", "v1", "v3", "--json", "-H", str(history_repo / HARNESS))
    assert result.exit_code == 1
    d = json.loads(result.stdout)
    assert (d["from"], d["to"], d["bump"]) == ("v1", "v3", "minor")
    found = {(c["kind"], c["element"], c["key"], json.dumps(c["from"]), json.dumps(c["to"])) for c in d["changes"]}
    assert found == {
        (
            "added",
            "skill",
            "flash_deal",
            "null",
            json.dumps(
                {
                    "name": "flash_deal",
                    "description": "announce a ten-minute deal on the product on screen",
                    "rules": ["price_and_end"],
                    "tools": ["promotions"],
                }
            ),
        ),
        ("renamed", "tool", "order_status", '"track_order"', '"where_is_my_order"'),
        ("changed", "constraint", "max_reply_chars", "120", "100"),
        ("reordered", "prompt_block", "escalation", "6", "2"),
    }


def test_diff_of_equal_harnesses_exits_0(history_repo):
    h = str(history_repo / HARNESS)
    result = run("diff", "v3", "HEAD", "-H", h)
    assert result.exit_code == 0
    assert "no semantic differences" in result.stdout
    assert run("diff", "v3", h, "-H", h).exit_code == 0  # a version against the working folder


def test_diff_reads_like_a_reviewed_change(history_repo):
    result = run("diff", "v1", "v3", "-H", str(history_repo / HARNESS))
    lines = result.stdout.splitlines()
    assert lines[0] == "livecommerce v1 → v3 · suggested bump: minor"
    text = result.stdout
    assert "+ skill flash_deal" in text
    assert "~ tool order_status  renamed track_order → where_is_my_order" in text
    assert "~ constraint max_reply_chars  value 120 → 100" in text
    assert "↕ block escalation  moved up: now after persona (position 6 → 2)" in text
    assert [s for s in ("Skills", "Tools", "Prompt", "Constraints") if s in lines] == [
        "Skills",
        "Tools",
        "Prompt",
        "Constraints",
    ]


def test_diff_shows_word_level_rule_edits(shop):
    h = shop / HARNESS
    edit(
        h / "skills" / "compliance.yaml", "best, safest, perfect or guaranteed", "best, safest, flawless or guaranteed"
    )
    result = run("diff", "v3", str(h), "-H", str(h))
    assert result.exit_code == 1
    assert "~ rule compliance.no_absolutes  reworded  [minor]" in result.stdout
    assert "[-perfect -]{+flawless +}" in result.stdout  # plain markers when there is no colour


def test_diff_stat_counts_changes_per_element(history_repo):
    result = run("diff", "v1", "v3", "--stat", "-H", str(history_repo / HARNESS))
    assert result.exit_code == 1
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[2:] if line.strip()}
    assert rows["skill"] == ["1", "1"] and rows["tool"] == ["1", "1"] and rows["constraint"] == ["1", "1"]
    assert result.stdout.rstrip().endswith("4 changes")


def test_diff_of_two_folders_needs_no_git(tmp_path, livecommerce_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(livecommerce_path, a)
    shutil.copytree(livecommerce_path, b)
    edit(b / "tools" / "stock_check.yaml", "name: check_stock", "name: units_left")
    result = run("diff", str(a), str(b), "--json")
    assert result.exit_code == 1
    assert [(c["kind"], c["to"]) for c in json.loads(result.stdout)["changes"]] == [("renamed", "units_left")]


@pytest.mark.parametrize(
    "args, message",
    [
        (["diff", "v1", "v9"], "unknown version, revision or folder 'v9' — known versions: v1, v2, v3"),
        (["show", "no-such-branch"], "unknown version, revision or folder 'no-such-branch'"),
        (["diff", "v1", "HEAD~40"], "unknown version, revision or folder 'HEAD~40'"),
    ],
)
def test_unknown_references_are_errors_with_exit_2(history_repo, args, message):
    result = run(*args, "-H", str(history_repo / HARNESS))
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_versions_need_a_git_repository(tmp_path, livecommerce_path):
    h = tmp_path / "loose"
    shutil.copytree(livecommerce_path, h)
    for args in (["log"], ["diff", "v1", "v2"], ["tag", "v4"]):
        result = run(*args, "-H", str(h))
        assert result.exit_code == 2
        assert "not inside a git repository" in result.stderr


def test_a_commit_where_the_harness_is_broken_is_reported_with_its_file(shop):
    repo = git.Repo(shop)
    h = shop / HARNESS
    (h / "skills" / "greeting.yaml").write_text("key: greeting\nname: [unclosed\n")
    commit_all(repo, "oops")
    result = run("show", "HEAD", "-H", str(h))
    assert result.exit_code == 2
    assert re.search(rf"{repo.head.commit.hexsha[:7]}:{HARNESS}/skills/greeting.yaml:\d+", result.stderr)
    log = json.loads(run("log", "--json", "-H", str(h)).stdout)["entries"]
    assert log[0]["summary"].startswith("invalid: ")


def test_a_broken_working_folder_names_its_files_as_the_user_reaches_them(shop):
    h = shop / HARNESS
    (h / "skills" / "greeting.yaml").write_text("key: greeting\nname: [unclosed\n")
    for args in (["show"], ["diff", "v3", str(h)]):
        result = run(*args, "-H", str(h))
        assert result.exit_code == 2
        assert re.search(rf"^error: {re.escape(str(h))}/skills/greeting.yaml:\d+:\d+: ", result.stderr, re.M), (
            result.stderr
        )
        assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["show"], ["log"], ["tag", "v4"], ["diff", "v1", "v2"]])
def test_a_harness_file_given_as_the_harness_points_at_its_folder(history_repo, command):
    h = history_repo / HARNESS
    result = run(*command, "-H", str(h / "prompt.yaml"))
    assert result.exit_code == 2
    assert (
        f"{h / 'prompt.yaml'}: is a file, not a harness folder — pass the folder that holds it: -H {h}" in result.stderr
    )


def test_log_of_a_harness_never_committed_says_what_to_do(tmp_path, livecommerce_path):
    repo = new_repo(tmp_path / "fresh")
    (tmp_path / "fresh" / "README").write_text("shop\n")
    commit_all(repo, "readme only")  # a repository with history, none of it the harness's
    shutil.copytree(livecommerce_path, tmp_path / "fresh" / "h")
    result = run("log", "-H", str(tmp_path / "fresh" / "h"))
    assert result.exit_code == 0
    assert "no commits touch this harness yet" in result.stdout and "harnessctl tag v1" in result.stdout


def test_a_symbolic_link_in_a_committed_harness_is_refused(shop):
    repo = git.Repo(shop)
    h = shop / HARNESS
    (h / "skills" / "greeting.yaml").unlink()
    (h / "skills" / "greeting.yaml").symlink_to("/etc/hostname")
    commit_all(repo, "link")
    result = run("show", "HEAD", "-H", str(h))
    assert result.exit_code == 2
    assert "skills/greeting.yaml: is a symbolic link" in result.stderr


# -- tag ---------------------------------------------------------------------------------


def test_tag_commits_a_one_line_version_change_and_an_annotated_tag(shop):
    repo = git.Repo(shop)
    h = shop / HARNESS
    edit(h / "prompt.yaml", "value: 100", "value: 90")
    (shop / "README.md").write_text("not part of the harness\n")
    repo.git.add("README.md")  # staged elsewhere in the repo: must stay out of the version commit
    repo.git.add(HARNESS)
    repo.git.commit("-q", "-m", "even shorter", "--", HARNESS)
    result = run("tag", "v4", "-m", "90 chars for the new overlay", "-H", str(h))
    assert result.exit_code == 0, result.output
    assert "tagged v4 at" in result.stdout
    head = repo.head.commit
    assert head.message.strip() == "livecommerce v4: 90 chars for the new overlay"
    assert list(head.stats.files) == [f"{HARNESS}/harness.yaml"]
    patch = repo.git.diff("HEAD~1", "HEAD", "-U0")
    assert [line for line in patch.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-version: v3",
        "+version: v4",
    ]
    tag = repo.tags["v4"]
    assert tag.commit == head and tag.tag is not None and "90 chars" in tag.tag.message
    assert repo.git.diff("--cached", "--name-only") == "README.md"
    versions = json.loads(run("log", "--json", "-H", str(h)).stdout)["versions"]
    assert [v["name"] for v in versions] == ["v1", "v2", "v3", "v4"]


@pytest.mark.parametrize("change", ["unstaged", "staged", "untracked"])
def test_tag_refuses_uncommitted_changes_and_writes_nothing(shop, change):
    repo = git.Repo(shop)
    h = shop / HARNESS
    if change == "untracked":
        (h / "skills" / "giveaway.yaml").write_text(FLASH_DEAL.replace("flash_deal", "giveaway"))
    else:
        edit(h / "prompt.yaml", "value: 100", "value: 90")
        if change == "staged":
            repo.git.add(HARNESS)
    before = state(shop)
    result = run("tag", "v4", "-H", str(h))
    assert result.exit_code == 2
    assert "uncommitted changes under the harness folder" in result.stderr
    assert state(shop) == before


@pytest.mark.parametrize(
    "file, old, new, problem",
    [
        ("tools/stock_check.yaml", "name: check_stock", "\tname: check_stock", "tools/stock_check.yaml:2"),  # not YAML
        (
            "skills/compliance.yaml",
            "tools: [product_details]",
            "tools: [product_detials]",
            "unknown tool key 'product_detials'",
        ),
    ],
    ids=["malformed-yaml", "unknown-tool-reference"],
)
def test_tag_refuses_an_invalid_harness_and_writes_nothing(shop, file, old, new, problem):
    repo = git.Repo(shop)
    h = shop / HARNESS
    edit(h / file, old, new)
    commit_all(repo, "broken on purpose")
    before = state(shop)
    result = run("tag", "v4", "-H", str(h))
    assert result.exit_code == 2
    assert "refusing to tag v4: the committed harness is invalid" in result.stderr
    assert f"{HARNESS}/{file}" in result.stderr and problem in result.stderr
    assert state(shop) == before


@pytest.mark.parametrize(
    "version, message",
    [
        ("v2", "version v2 already exists"),
        ("latest", "'latest' is not a version name"),
        ("v4.1", "'v4.1' is not a version name"),
    ],
)
def test_tag_refuses_an_existing_version_or_a_bad_name(shop, version, message):
    before = state(shop)
    result = run("tag", version, "-H", str(shop / HARNESS))
    assert result.exit_code == 2
    assert message in result.stderr
    assert state(shop) == before


def test_tag_accepts_semantic_versions(shop):
    result = run("tag", "1.0.0", "-m", "first release", "-H", str(shop / HARNESS))
    assert result.exit_code == 0, result.output
    assert "1.0.0" in [t.name for t in git.Repo(shop).tags]


def test_a_failing_commit_hook_leaves_nothing_behind(shop):
    hook = shop / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'policy: no commits today' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = state(shop)
    result = run("tag", "v4", "-H", str(shop / HARNESS))
    assert result.exit_code == 2
    assert "git refused the version commit" in result.stderr
    assert state(shop) == before


def test_a_failure_after_the_commit_undoes_the_commit(shop, monkeypatch):
    def broken_tag(self, *args, **kwargs):
        raise KeyboardInterrupt  # e.g. Ctrl-C between the commit and the tag

    before = state(shop)
    monkeypatch.setattr(git.Repo, "create_tag", broken_tag)
    with pytest.raises(KeyboardInterrupt):
        HarnessStore(shop / HARNESS).tag("v4", "never finished")
    assert state(shop) == before


def test_two_harnesses_in_one_repository_keep_their_own_versions(shop, livecommerce_path):
    repo = git.Repo(shop)
    other = shop / "harnesses" / "outlet"
    shutil.copytree(livecommerce_path, other)
    edit(other / "harness.yaml", "name: livecommerce", "name: outlet")
    (other / "harness.yaml").write_text(re.sub(r"(?m)^version:.*\n", "", (other / "harness.yaml").read_text()))
    commit_all(repo, "outlet channel")
    result = run("tag", "v1", "-m", "outlet opens", "-H", str(other))
    assert result.exit_code == 0, result.output
    assert "outlet/v1" in [t.name for t in repo.tags]  # v1 already marks the other harness
    assert [v.name for v in HarnessStore(other).list_versions()] == ["v1"]
    assert [v.name for v in HarnessStore(shop / HARNESS).list_versions()] == ["v1", "v2", "v3"]
    assert HarnessStore(other).resolve("v1").harness.name == "outlet"


# -- versions without tags ---------------------------------------------------------------


def test_versions_resolve_on_a_clone_without_tags(history_repo, tmp_path):
    clone = git.Repo.clone_from(history_repo, tmp_path / "clone", no_tags=True)
    assert list(clone.tags) == []
    h = str(tmp_path / "clone" / HARNESS)
    log = json.loads(run("log", "--json", "-H", h).stdout)
    assert [e["label"] for e in log["entries"] if e["version"]] == ["v3", "v2", "v1"]
    assert all(v["tag"] is None for v in log["versions"])
    result = run("diff", "v1", "v2", "--json", "-H", h)
    assert result.exit_code == 1
    assert {c["key"] for c in json.loads(result.stdout)["changes"]} == {"flash_deal", "order_status"}


def test_versions_resolve_after_tags_are_deleted_and_refuse_to_be_reused(shop):
    repo = git.Repo(shop)
    for t in list(repo.tags):
        repo.delete_tag(t)
    h = str(shop / HARNESS)
    shown = json.loads(run("show", "v2", "--json", "-H", h).stdout)
    assert shown["ref"]["commit"] == repo.commit("HEAD~2").hexsha
    result = run("tag", "v3", "-H", h)
    assert result.exit_code == 2 and "version v3 already exists" in result.stderr


def test_a_store_outside_git_says_so():
    with pytest.raises(StoreError, match="no harness folder"):
        HarnessStore(None).list_versions()


# -- the project's own history -----------------------------------------------------------


@pytest.fixture(scope="session")
def project_clone(repo_root, tmp_path_factory) -> Path:
    """A fresh clone of this project without tags, as CI or a new teammate gets it."""
    if not (repo_root / ".git").exists():
        pytest.skip("not a git checkout")
    if (repo_root / ".git" / "shallow").exists():
        pytest.skip("a shallow clone holds no history; versions need a full clone")
    dst = tmp_path_factory.mktemp("project") / "clone"
    git.Repo.clone_from(repo_root, dst, no_tags=True)
    return dst


@pytest.mark.parametrize("where", ["checkout", "clone_without_tags"])
def test_the_shipped_history_explains_v1_to_v3(repo_root, project_clone, monkeypatch, where):
    monkeypatch.chdir(repo_root if where == "checkout" else project_clone)
    result = run("diff", "v1", "v3", "--json")
    assert result.exit_code == 1, result.output
    d = json.loads(result.stdout)
    events = {(c["kind"], c["element"], c.get("parent"), c["key"]): c for c in d["changes"]}
    assert ("added", "skill", None, "flash_sale") in events
    renamed = events[("renamed", "tool", None, "order_status")]
    assert (renamed["from"], renamed["to"]) == ("check_order", "track_order")
    limit = events[("changed", "constraint", None, "max_reply_chars")]
    assert (limit["field"], limit["from"], limit["to"]) == ("value", 160, 120)
    compliance = {k for kind, element, parent, k in events if element == "rule" and parent == "compliance"}
    assert compliance == {"not_medicine", "facts_only", "no_absolutes", "see_professional"}
    assert ("reordered", "prompt_block", None, "reply_style") in events
    assert d["bump"] == "minor"

    log = json.loads(run("log", "--json").stdout)["entries"]
    versions = [e["label"] for e in log if e["version"]]
    assert versions[:3] == ["v3", "v2", "v1"]
    v2 = next(e for e in log if e["label"] == "v2")
    assert v2["summary"] == "+skill flash_sale, tool order_status renamed check_order→track_order"
