"""The oracle is a perfect agent under whatever harness it is given, and the scorer agrees.

These are the project's proof that scoring goes by key: the same 500 cases score the same
under the shipped harness, under hand-made renamed/reordered/re-limited variants, and under the
first version from git (which has no flash-sale skill).
"""

from __future__ import annotations

import copy
from statistics import mean

import pytest

from harnessctl.harness import render_harness
from harnessctl.runtime import run_episode
from harnessctl.runtime.text import count_emojis
from harnessctl.sim import OracleModel, generate_cases, score_episode

from .variants import harness_at, renamed_variant


@pytest.fixture(scope="module")
def cases():
    # A fault plan on about a third of them: retries, then graceful replies when faults persist.
    return generate_cases(500, seed=11, faults=0.35)


def run_all(h, cases):
    rendered = render_harness(h)
    oracle = OracleModel()
    out = []
    for c in cases:
        rec = run_episode(h, c, oracle, rendered=rendered)
        out.append((c, rec, score_episode(rec, c)))
    return out


def test_oracle_scores_at_least_099_under_the_shipped_harness(shipped, cases):
    results = run_all(shipped, cases)
    assert mean(b.total for _, _, b in results) >= 0.99
    assert sum(b.passed for _, _, b in results) >= 0.99 * len(results)
    faulted = [(c, r) for c, r, _ in results if c.faults]
    assert len(faulted) > 100
    # Faults really happened and were recovered from: some calls failed, then were retried.
    assert any(s.attempt == 2 and s.ok for _, r in faulted for s in r.tool_steps)


def test_oracle_scores_the_same_under_renamed_reordered_relimited_variants(shipped, cases):
    variant = renamed_variant(shipped, max_reply_chars=80, result_format="text")
    results = run_all(variant, cases)
    assert mean(b.total for _, _, b in results) >= 0.99
    # It called the tools and the loader by their *new* names, and read text-format results.
    names = {s.name for _, r, _ in results for s in r.tool_steps}
    assert "open_playbook" in names and "fn_sliated_tcudorp_teg" in names
    assert "get_product_details" not in names and "load_skill" not in names
    assert all(len(r.reply) <= 80 for _, r, _ in results)
    results_shown = [
        m["content"] for _, r, _ in results for m in r.messages if m["role"] == "tool" and m["name"] != "open_playbook"
    ]
    assert results_shown and all(text.startswith("RESULT >>\n") for text in results_shown)


@pytest.mark.parametrize(
    "change",
    [
        {"max_reply_chars": 60, "max_emojis": 0},
        {"max_tool_calls": 2},
        {"max_turns": 2},
        {"max_attempts": 1},
        {"max_attempts": 3, "retry_on": ["tool_error", "timeout", "invalid_call", "empty_result"]},
    ],
    ids=["60-chars-no-emoji", "2-tool-calls", "2-turns", "no-retry", "3-attempts-retry-empty"],
)
def test_oracle_follows_changed_constraints_and_hooks(shipped, cases, change):
    v = renamed_variant(shipped, result_format="json")
    for key in ("max_reply_chars", "max_emojis", "max_tool_calls", "max_turns"):
        if key in change:
            v.prompt.constraints[key].value = change[key]
    if "max_attempts" in change:
        v.hooks.retry.max_attempts = change["max_attempts"]
    if "retry_on" in change:
        v.hooks.retry.on = change["retry_on"]
    results = run_all(v, cases[:250])
    assert mean(b.total for _, _, b in results) >= 0.99
    for _, rec, _ in results:
        assert len(rec.reply) <= v.prompt.constraints["max_reply_chars"].value
        assert count_emojis(rec.reply) <= v.prompt.constraints["max_emojis"].value
        assert sum(1 for s in rec.tool_steps) <= v.prompt.constraints["max_tool_calls"].value
        assert len(rec.model_steps) <= v.prompt.constraints["max_turns"].value
        assert rec.termination.value == "reply"


def test_oracle_under_v1_from_git_copes_with_the_missing_flash_sale_skill(repo_root, cases):
    v1 = harness_at("v1", repo_root)
    assert "flash_sale" not in {s.key for s in v1.skills}
    results = run_all(v1, cases)
    assert mean(b.total for _, _, b in results) >= 0.99
    flash = [r for c, r, _ in results if c.intent == "flash_sale"]
    assert flash and all(set(r.skills_loaded) == {"price_promo", "stock_size"} for r in flash)


def test_oracle_writes_from_tool_results_not_from_the_expected_facts(shipped):
    for case in generate_cases(60, seed=3):
        blind = copy.deepcopy(case)
        blind.expect.facts = []
        blind.expect.any_facts = []
        blind.expect.fact_sources = {}
        with_facts = run_episode(shipped, case, OracleModel())
        without = run_episode(shipped, blind, OracleModel())
        assert with_facts.reply == without.reply


def test_oracle_needs_a_case_and_a_harness():
    from harnessctl.models.base import GenerationSettings, ModelError

    with pytest.raises(ModelError, match="for_episode"):
        OracleModel().generate([], [], GenerationSettings())


def test_oracle_think_notes_stay_within_the_think_budget(shipped):
    for case in generate_cases(30, seed=4):
        rec = run_episode(shipped, case, OracleModel(think=True))
        assert all(0 < s.think_tokens <= 64 for s in rec.model_steps)
        assert "<think>" not in rec.reply
        assert score_episode(rec, case).reasoning == 1.0
