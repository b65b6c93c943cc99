"""Proposed edits: the patch language, validation before an edit is offered, the offline rules,
the LLM proposer through litellm, and applying an edit as a commit on a branch."""

from __future__ import annotations

import json

import pytest

from harnessctl.eval.results import CaseResult
from harnessctl.harness import load_harness
from harnessctl.loop.apply import commit_edit
from harnessctl.loop.diagnose import diagnose_results, diagnose_run
from harnessctl.loop.edits import EditError, Proposal, apply_edit, check_proposal
from harnessctl.loop.propose import propose_llm, propose_rules
from harnessctl.models.scripted import ScriptedModel
from harnessctl.models.server import serve_in_background
from harnessctl.sim.case import Case, Expectation, ExpectedCall
from tests.conftest import LIVECOMMERCE

from .support import git, harness_repo, hc, run_cli


def test_operations_set_fields_and_move_elements_on_a_copy(livecommerce):
    ops = [
        {"op": "set", "element": "tool", "key": "promotions", "field": "description", "value": "list deals"},
        {"op": "move", "element": "rule", "parent": "price_promo", "key": "end_time", "to": 1},
        {"op": "set", "element": "hook", "key": "retry", "field": "max_attempts", "value": 3},
    ]
    edited = apply_edit(livecommerce, ops)
    assert edited.tool("promotions").description == "list deals"
    assert next(r.key for r in edited.skill("price_promo").rules) == "end_time"
    assert edited.hooks.retry.max_attempts == 3
    assert livecommerce.hooks.retry.max_attempts == 2  # the original is untouched


@pytest.mark.parametrize(
    "op, message",
    [
        ({"op": "set", "element": "tool", "key": "nope", "field": "name", "value": "x"}, "no tool with key 'nope'"),
        (
            {"op": "set", "element": "tool", "key": "promotions", "field": "backend", "value": "x"},
            "field 'backend' cannot be set",
        ),
        (
            {"op": "set", "element": "constraint", "key": "max_reply_chars", "field": "value", "value": 999},
            "outside its range 60..200",
        ),
        ({"op": "move", "element": "prompt_block", "key": "persona", "to": 99}, "position must be 1..6"),
        ({"op": "delete", "element": "tool", "key": "promotions"}, "unknown op 'delete'"),
    ],
)
def test_an_operation_that_does_not_apply_says_why(livecommerce, op, message):
    with pytest.raises(EditError, match=message):
        apply_edit(livecommerce, [op])


def test_a_proposal_that_would_leave_an_invalid_harness_is_never_offered(livecommerce):
    bad = Proposal(
        "x", "t", "r", [], [{"op": "set", "element": "hook", "key": "retry", "field": "max_attempts", "value": 30}]
    )
    check_proposal(bad, livecommerce, LIVECOMMERCE)
    assert not bad.valid and "max_attempts" in bad.issues[0] and "hooks.yaml" in bad.issues[0]
    good = Proposal(
        "y", "t", "r", [], [{"op": "set", "element": "hook", "key": "retry", "field": "max_attempts", "value": 3}]
    )
    check_proposal(good, livecommerce, LIVECOMMERCE)
    assert good.valid and good.diff["changes"][0]["key"] == "retry"


def _failed(case_id: str, failures: list[str], score: float = 0.2, record: dict | None = None) -> CaseResult:
    return CaseResult("livestream", case_id, score=score, failures=failures, record=record or {})


def test_rule_two_confused_skills_get_sharper_descriptions(livecommerce):
    cases = {
        ("livestream", f"c{i}"): Case(f"c{i}", "price", "q", expect=Expectation(skill="price_promo")) for i in range(3)
    }
    d = diagnose_results([_failed(f"c{i}", ["wrong_skill:flash_sale"]) for i in range(3)], cases=cases)
    p = propose_rules(d, livecommerce, harness_dir=LIVECOMMERCE)[0]
    assert p.targets == ["skill:price_promo", "skill:flash_sale"] and p.valid
    edited = apply_edit(livecommerce, p.ops)
    assert "(not: announce a flash sale" in edited.skill("price_promo").description
    assert "(not: give the live price" in edited.skill("flash_sale").description


def test_rule_a_budget_most_failures_hit_is_raised_to_what_the_cases_need(livecommerce):
    livecommerce.prompt.constraints["max_tool_calls"].value = 1  # a deliberately tight budget
    need3 = Expectation(skill="price_promo", calls=[ExpectedCall("product_details"), ExpectedCall("promotions")])
    cases = {("livestream", f"c{i}"): Case(f"c{i}", "price", "q", expect=need3) for i in range(2)}
    d = diagnose_results([_failed(f"c{i}", ["over_tool_budget"]) for i in range(2)], cases=cases)
    p = propose_rules(d, livecommerce, harness_dir=LIVECOMMERCE)[0]
    # the skill loader and two calls: 3, within the constraint's range 1..8
    assert p.ops == [{"op": "set", "element": "constraint", "key": "max_tool_calls", "field": "value", "value": 3}]
    assert p.valid and p.targets == ["constraint:max_tool_calls"]


def test_rule_a_business_limit_is_never_raised_its_block_moves_up(livecommerce):
    d = diagnose_results([_failed(f"c{i}", ["over_length"]) for i in range(3)])
    p = propose_rules(d, livecommerce, harness_dir=LIVECOMMERCE)[0]
    assert p.ops == [{"op": "move", "element": "prompt_block", "key": "reply_style", "to": 1}]


def test_rule_a_retry_policy_that_gives_up_before_the_faults_clear(livecommerce):
    case = Case(
        "c1",
        "stock",
        "q",
        expect=Expectation(skill="stock_size", calls=[ExpectedCall("stock_check")]),
        faults={"stock_check": ["timeout", "timeout", "ok"]},
    )
    record = {
        "retry": {"max_attempts": 2},
        "tool_steps": [
            {"key": "stock_check", "ok": False, "error": "timeout", "attempt": 1},
            {"key": "stock_check", "ok": False, "error": "timeout", "attempt": 2},
        ],
    }
    d = diagnose_results([_failed("c1", ["missing_fact:in stock"], record=record)], cases={("livestream", "c1"): case})
    p = next(p for p in propose_rules(d, livecommerce, harness_dir=LIVECOMMERCE) if p.targets == ["hook:retry"])
    assert {"op": "set", "element": "hook", "key": "retry", "field": "max_attempts", "value": 3} in p.ops


def test_rule_a_rule_never_followed_is_reworded_and_moved_first(weak_run):
    h = load_harness(LIVECOMMERCE)
    d = diagnose_run(weak_run.store.root, harness=h)
    props = propose_rules(d, h, harness_dir=LIVECOMMERCE)
    rule_props = [p for p in props if p.source == "rules:rule_not_followed"]
    assert rule_props and all(p.valid for p in props)
    ops = rule_props[0].ops
    assert ops[0]["field"] == "text" and ops[0]["value"].startswith("First, ") and ops[-1]["op"] == "move"


def test_an_llm_proposer_is_asked_through_litellm_and_its_invalid_edits_are_rejected(weak_run):
    answer = {
        "proposals": [
            {
                "title": "hand off first",
                "rationale": "missed hand-offs",
                "targets": ["rule:complaint.hand_off"],
                "ops": [{"op": "move", "element": "rule", "parent": "complaint", "key": "hand_off", "to": 1}],
            },
            {
                "title": "too many retries",
                "rationale": "x",
                "targets": ["hook:retry"],
                "ops": [{"op": "set", "element": "hook", "key": "retry", "field": "max_attempts", "value": 99}],
            },
        ]
    }
    seen = []

    def reply(messages, tools):
        seen.append(messages)
        return "Here you go:\n" + json.dumps(answer)

    url, stop = serve_in_background(ScriptedModel([reply], name="proposer", repeat_last=True), model_name="proposer")
    try:
        h = load_harness(LIVECOMMERCE)
        valid, rejected = propose_llm(
            diagnose_run(weak_run.store.root, harness=h), h, "openai/proposer", harness_dir=LIVECOMMERCE, api_base=url
        )
    finally:
        stop()
    assert [p.title for p in valid] == ["hand off first"] and valid[0].source == "llm:openai/proposer"
    assert [p.title for p in rejected] == ["too many retries"] and "maximum 10" in rejected[0].issues[0]
    context = json.loads(seen[0][-1]["content"])
    assert context["clusters"] and context["harness"]["skills"]  # the diagnosis and the harness went along


def test_an_accepted_edit_is_committed_on_a_new_branch(tmp_path, livecommerce):
    folder = harness_repo(tmp_path, LIVECOMMERCE)
    repo = folder.parent.parent
    edited = apply_edit(livecommerce, [{"op": "move", "element": "prompt_block", "key": "reply_style", "to": 1}])
    applied = commit_edit(folder, edited, branch="harness-edit/reply-style-first", message="reply style first")
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "harness-edit/reply-style-first"
    assert applied.files == ["harnesses/livecommerce/prompt.yaml"]
    assert next(b.key for b in load_harness(folder).prompt.blocks) == "reply_style"
    assert git(repo, "status", "--porcelain").strip() == ""


def test_an_edit_that_cannot_be_committed_leaves_no_branch_and_no_change(tmp_path, livecommerce):
    folder = harness_repo(tmp_path, LIVECOMMERCE)
    repo = folder.parent.parent
    head = git(repo, "rev-parse", "HEAD")
    broken = apply_edit(livecommerce, [])
    broken.hooks.retry.max_attempts = 30  # invalid: the schema allows at most 10
    with pytest.raises(Exception, match="max_attempts"):
        commit_edit(folder, broken, branch="harness-edit/broken", message="x")
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert "harness-edit/broken" not in git(repo, "branch")
    assert git(repo, "status", "--porcelain").strip() == ""


def test_edit_cli_lists_validated_proposals_and_applies_the_picked_one(tmp_path, weak_run):
    folder = harness_repo(tmp_path, LIVECOMMERCE)
    repo = folder.parent.parent
    cmd = ["edit", str(weak_run.store.root), "-H", str(folder), "--json"]
    shown = hc(*cmd)  # a real process: the command as a person runs it
    assert shown.returncode == 0, shown.stderr
    listed = json.loads(shown.stdout)
    assert listed["proposals"] and listed["applied"] is None and all(p["diff"] for p in listed["proposals"])
    applied = run_cli(*cmd, "--apply", "--pick", "1", "--branch", "fix/one")
    assert applied.exit_code == 0, applied.output
    assert json.loads(applied.stdout)["applied"]["branch"] == "fix/one"
    assert git(repo, "log", "-1", "--format=%s").startswith("livecommerce: " + listed["proposals"][0]["title"])


# -- harnessctl patch: an edit people decided, written as data -------------------------------------


def test_patch_applies_the_weekly_edit_keeping_comments_and_git_diff_shows_it(tmp_path, repo_root):
    folder = harness_repo(tmp_path, LIVECOMMERCE)
    patch_file = repo_root / "scripts" / "weekly-edit.yaml"
    result = run_cli("patch", str(patch_file), "-H", str(folder), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ops"] == 5 and report["title"].startswith("deals overlay")
    edited = load_harness(folder)
    assert edited.tool("promotions").name == "find_deals"
    assert edited.skill("price_promo").name == "price_and_deals"
    assert edited.constraint("max_reply_chars") == 100
    assert "single best coupon" in next(r.text for r in edited.skill("price_promo").rules if r.key == "check_deals")
    # the files keep their comments; git sees a change to commit and tag like any edit
    comments = [
        line for line in (LIVECOMMERCE / "prompt.yaml").read_text().splitlines() if line.lstrip().startswith("#")
    ]
    prompt_file = (folder / "prompt.yaml").read_text()
    assert comments and all(c in prompt_file for c in comments)  # the moved block's file keeps its comments
    assert "find_deals" in (folder / "tools" / "promotions.yaml").read_text()
    assert "tools/promotions.yaml" in git(folder.parents[1], "status", "--short")


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "ops:\n  - {op: set, element: tool, key: nope, field: name, value: x}\n",
            "operation 1: no tool with key 'nope'",
        ),
        ("title: empty\n", "'ops' must be a non-empty list"),
        ("ops: [\n", "patch.yaml"),
        ("ops:\n  - !!python/object:os.system {}\n", "patch.yaml"),
    ],
)
def test_a_wrong_patch_is_one_message_exit_2_and_nothing_written(tmp_path, text, message):
    folder = harness_repo(tmp_path, LIVECOMMERCE)
    before = {p: p.read_bytes() for p in folder.rglob("*.yaml")}
    patch_file = tmp_path / "patch.yaml"
    patch_file.write_text(text)
    result = run_cli("patch", str(patch_file), "-H", str(folder))
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert {p: p.read_bytes() for p in folder.rglob("*.yaml")} == before


def test_a_missing_patch_file_is_named(tmp_path):
    folder = harness_repo(tmp_path, LIVECOMMERCE)
    result = run_cli("patch", str(tmp_path / "nope.yaml"), "-H", str(folder))
    assert result.exit_code == 2 and "nope.yaml: no such patch file" in result.stderr
