"""The study's numbers: each arm's scores read from its evaluation run, the issue's goals judged
on them (met / missed / n/a, with the numbers), and the markdown table beside the paper's.

>>> scores = {"fixed-sft": {"livestream": 70.0, "variant": 40.0}}
>>> g = judge_goals(scores)[0]
>>> g["goal"], g["status"]
('fixed-SFT collapses on edits', 'met')
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from harnessctl.eval.stats import bootstrap, latency_stats
from harnessctl.eval.store import RunStore
from harnessctl.loop.diagnose import load_run_items
from harnessctl.loop.onscreen import on_screen_product_use
from harnessctl.loop.stale import FormerNameIndex, stale_name_use
from trainer.common import hardware_text

#: The paper's table (HAT, and fixed-harness SFT where it reports one), suites version 2 in miniature.
PAPER = {
    "hat": {"livestream": 94.8, "variant": 94.6, "ifeval": 83.5},
    "fixed-sft": {"ifeval": 73.8},
}
#: Points a later stage may lose on a suite and still count as "not losing it" (eval noise).
HOLD_TOLERANCE = 2.0


def arm_metrics(run_dir: str | Path) -> dict[str, Any]:
    """An arm's numbers from its evaluation run folder: the suite scores, the slices (held-out
    edits, the real history v1/v2, tool faults, prompt perturbations) with a 95 % bootstrap
    interval over the cases of each, the per-family scores of the variant suite, and latency
    percentiles over every live agent episode.

    >>> arm_metrics("experiments/quick/arms/hat/eval/suites")["scores"]["livestream"]   # doctest: +SKIP
    41.7
    """
    store = RunStore.open(run_dir)
    results = store.results()
    by_suite: dict[str, list[Any]] = defaultdict(list)
    for r in results:
        by_suite[r.suite].append(r)

    def mean(rs: list[Any]) -> float | None:
        return round(100.0 * sum(r.score for r in rs) / len(rs), 2) if rs else None

    def interval(rs: list[Any]) -> list[float] | None:
        # how far the score of this sample may be from the suite's: the goals compare scores
        # a few points apart, on tens of cases
        if not rs:
            return None
        iv = bootstrap([r.score for r in rs], lambda xs: sum(xs) / len(xs), seed=0)
        return [round(100.0 * iv.low, 2), round(100.0 * iv.high, 2)]

    variant, robust = by_suite.get("variant", []), by_suite.get("robustness", [])
    items = _agent_items(store, {s for s in ("livestream", "variant") if by_suite.get(s)})
    samples = {
        **by_suite,
        "heldout_edits": [r for r in variant if any(f.startswith("op:") for f in r.families)],
        "history_v1": [r for r in variant if "history:v1" in r.families],
        "history_v2": [r for r in variant if "history:v2" in r.families],
        "tool_faults": [r for r in robust if any(f.startswith("fault:") for f in r.families)],
        "perturbations": [r for r in robust if any(f.startswith("perturb:") for f in r.families)],
    }
    scores = {s: mean(rs) for s, rs in by_suite.items()}
    slices = {k: mean(rs) for k, rs in samples.items() if k not in by_suite}
    families: dict[str, list[Any]] = defaultdict(list)
    for r in variant:
        for f in r.families:
            families[f].append(r)
    live = [r.latency_s for r in results if r.suite != "ifeval" and not r.cached and r.error is None]
    lat = latency_stats(live).to_dict()
    components: dict[str, dict[str, float]] = {}
    for suite, rs in by_suite.items():
        names = sorted({k for r in rs for k in r.components})
        if names:  # agent suites: the rubric's components, each a mean over the suite's cases
            components[suite] = {
                k: round(100.0 * sum(r.components.get(k, 0.0) for r in rs) / len(rs), 2) for k in names
            }
    return {
        "scores": scores,
        "slices": slices,
        "intervals": {k: interval(rs) for k, rs in samples.items()},
        "components": components,
        "stale_names": _stale_names(store, variant, items),
        "on_screen": _on_screen(by_suite, items),
        "families": {f: {"score": mean(rs), "n": len(rs)} for f, rs in sorted(families.items())},
        "n": {s: len(rs) for s, rs in by_suite.items()},
        "errors": sum(r.error is not None for r in results),
        "latency": {"p50_s": lat.get("p50"), "p95_s": lat.get("p95"), "n": len(live)},
    }


def _agent_items(store: Any, suites: set[str]) -> dict[tuple[str, str], Any]:
    """The run's suite items (case and harness) of ``suites``, read once for the metrics below."""
    if not suites:
        return {}

    config = store.manifest.get("config") or {}
    return load_run_items(store.root, config.get("evals_dir", "evals"), suites)


def _stale_names(store: Any, variant: list[Any], items: dict[tuple[str, str], Any]) -> dict[str, int] | None:
    """Variant-suite episodes that called a tool or skill by a name the variant renamed (a name of
    the harness it was made from, or of an earlier version): how far the arm follows the surface
    it was trained on instead of the one it is shown."""
    if not variant:
        return None

    config = store.manifest.get("config") or {}
    return stale_name_use(variant, FormerNameIndex(config.get("harness_path"), items, config.get("evals_dir", "evals")))


def _on_screen(by_suite: dict[str, list[Any]], items: dict[tuple[str, str], Any]) -> dict[str, dict[str, int]] | None:
    """Per agent suite (livestream, variant): whether the first product lookup named the product on
    screen -- copying an id from the viewer's message, which every fact of the reply depends on."""
    suites = sorted(s for s in ("livestream", "variant") if by_suite.get(s))
    return {s: on_screen_product_use(by_suite[s], items) for s in suites} or None


def _get(scores: dict[str, dict[str, Any]], arm: str, key: str) -> float | None:
    v = (scores.get(arm) or {}).get(key)
    return float(v) if isinstance(v, (int, float)) else None


def _goal(goal: str, rule: str, ok: bool | None, numbers: str) -> dict[str, Any]:
    return {
        "goal": goal,
        "rule": rule,
        "status": "n/a" if ok is None else ("met" if ok else "missed"),
        "numbers": numbers,
    }


def judge_goals(scores: dict[str, dict[str, Any]], latency: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The issue's goals on the arms' numbers. ``scores[arm]`` maps ``livestream``, ``variant``,
    ``robustness``, ``ifeval`` and ``tool_faults`` to 0-100; ``latency`` is the final model's
    ``{"p50_s", "p95_s"}``. A goal whose arms were not run is ``n/a``; the rules never change
    with the model."""
    g = []
    ls, var = _get(scores, "fixed-sft", "livestream"), _get(scores, "fixed-sft", "variant")
    ok = None if ls is None or var is None else var <= ls - 15
    g.append(
        _goal("fixed-SFT collapses on edits", "variant <= livestream - 15", ok, f"variant {var} vs livestream {ls}")
    )

    ls, var = _get(scores, "hsa-sft", "livestream"), _get(scores, "hsa-sft", "variant")
    ok = None if ls is None or var is None else (var >= 0.95 * ls and ls >= 60)
    g.append(
        _goal(
            "HSA-SFT follows edits",
            "variant >= 0.95 x livestream, livestream >= 60",
            ok,
            f"variant {var} vs livestream {ls}",
        )
    )

    base_if, sft_if, opd_if = (_get(scores, a, "ifeval") for a in ("base", "hsa-sft", "hsa-sft-opd"))
    sft_ls, opd_ls = _get(scores, "hsa-sft", "livestream"), _get(scores, "hsa-sft-opd", "livestream")
    if None in (base_if, sft_if, opd_if, sft_ls, opd_ls):
        ok, numbers = None, "no numbers (an arm not run, or no such cases in the sample)"
    else:
        lost = base_if - sft_if
        recovered = opd_if - sft_if
        numbers = (
            f"ifeval base {base_if}, HSA-SFT {sft_if}, +OPD {opd_if} (lost {lost:.1f}, recovered {recovered:.1f}); "
            f"livestream {sft_ls} -> {opd_ls}"
        )
        ok = None if lost <= 0 else (recovered >= 0.9 * lost and abs(opd_ls - sft_ls) <= 2.0)
        if lost <= 0:
            numbers += " — SFT lost no ifeval points, nothing to restore"
    g.append(
        _goal("OPD restores general ability", ">= 90 % of the ifeval points SFT lost, livestream within 2", ok, numbers)
    )

    tf_rl, tf_sft = _get(scores, "hat", "tool_faults"), _get(scores, "hsa-sft-opd", "tool_faults")
    keep = [(_get(scores, "hat", k), _get(scores, "hsa-sft-opd", k)) for k in ("livestream", "variant")]
    if tf_rl is None or tf_sft is None or any(a is None or b is None for a, b in keep):
        ok, numbers = None, "no numbers (an arm not run, or no such cases in the sample)"
    else:
        ok = tf_rl >= tf_sft + 5 and all(a >= b - HOLD_TOLERANCE for a, b in keep)  # type: ignore[operator]
        numbers = (
            f"tool faults {tf_sft} -> {tf_rl}; livestream {keep[0][1]} -> {keep[0][0]}; "
            f"variant {keep[1][1]} -> {keep[1][0]}"
        )
    g.append(
        _goal(
            "HSA-RL raises robustness",
            f"tool faults +5 over its parent, livestream and variant within {HOLD_TOLERANCE:g}",
            ok,
            numbers,
        )
    )

    p50, p95 = (latency or {}).get("p50_s"), (latency or {}).get("p95_s")
    where = (latency or {}).get("where", "in process")
    ok = None if p95 is None else p95 < 15.0
    g.append(
        _goal(
            "final model within the latency budget",
            "P95 < 15 s per reply",
            ok,
            f"P50 {_s(p50)}, P95 {_s(p95)} ({where})",
        )
    )
    return g


def _s(x: Any) -> str:
    return "—" if x is None else f"{x:.2f} s"


def _n(x: Any) -> str:
    return "—" if x is None else f"{x:.1f}"


#: The rubric components that say whether a model follows the harness it is shown.
FOLLOWING = ("skill_selection", "tool_rationality", "correctness")


def component_table(results: dict[str, Any]) -> list[str]:
    """Markdown lines: per arm, the components that show harness following on livestream (the
    shipped harness) against variant (edited harnesses) -- a model that memorised one surface
    loses skill selection and tool rationality under edits before its total moves much."""
    arms = [a for a in results["arms"] if a.get("status") == "done" and a["metrics"].get("components")]
    if not arms:
        return []
    head = " | ".join(f"{k.replace('_', ' ')} (livestream → variant)" for k in FOLLOWING)
    lines = [
        "Rubric components (0-100, mean over each suite's cases):",
        "",
        f"| arm | {head} |",
        "| --- |" + " ---: |" * len(FOLLOWING),
    ]
    stale = any(arm["metrics"].get("stale_names") for arm in arms)
    if stale:
        lines[2] += " variant episodes using a renamed element's old name (calls) |"
        lines[3] += " ---: |"
    on_screen = any((arm["metrics"].get("on_screen") or {}).get("livestream") for arm in arms)
    if on_screen:
        lines[2] += " livestream: first product lookup names the one on screen |"
        lines[3] += " ---: |"
    for arm in arms:
        comps = arm["metrics"]["components"]
        live, var = comps.get("livestream", {}), comps.get("variant", {})
        cells = " | ".join(f"{_n(live.get(k))} → {_n(var.get(k))}" for k in FOLLOWING)
        if stale:
            use = arm["metrics"].get("stale_names")
            cells += f" | {use['cases']} of {use['episodes']} ({use['calls']})" if use else " | —"
        if on_screen:
            seen = (arm["metrics"].get("on_screen") or {}).get("livestream")
            cells += f" | {seen['named']} of {seen['episodes']}" if seen else " | —"
        lines.append(f"| {arm['label']} | {cells} |")
    return [*lines, ""]


def copy_probe_line(results: dict[str, Any]) -> str:
    """One sentence on whether stage 0 copies (its copy probe), or "" when the base arm has none.

    A model that cannot copy a fresh string from its context cannot read the product on screen or
    a renamed listing, whatever SFT does after, so the study states it beside the scores.

    >>> copy_probe_line({"arms": [{"name": "base", "train_extra": {"copy_probe":
    ...     {"echo": 0.5, "lookup": 0.0, "tool_argument": 0.1, "n": 30}}}]})
    'Stage 0 copy probe (greedy answers that hold a fresh code whole, 30 prompts per kind): echo 50.0 %, lookup 0.0 %, tool argument 10.0 %.'
    """
    base = next((a for a in results.get("arms", []) if a.get("name") == "base"), None)
    probe = ((base or {}).get("train_extra") or {}).get("copy_probe")
    if not probe:
        return ""
    # The kinds the probe measured (older studies' probes have no pick kind).
    kinds = ", ".join(f"{k.replace('_', ' ')} {100 * v:.1f} %" for k, v in probe.items() if k != "n")
    return f"Stage 0 copy probe (greedy answers that hold a fresh code whole, {probe['n']} prompts per kind): {kinds}."


def ifeval_sample(results: dict[str, Any]) -> str:
    """How many IFEval prompts each arm was scored on, in words.

    >>> ifeval_sample({"ifeval_prompts": 10}), ifeval_sample({"ifeval_prompts": "every prompt"})
    ('10 prompts', 'every prompt')
    """
    n = results.get("ifeval_prompts", results.get("eval_cases"))
    return f"{n} prompts" if isinstance(n, int) else str(n)


#: The columns of the intervals table: the scores the goals compare.
INTERVAL_COLUMNS = ("livestream", "variant", "robustness", "tool_faults", "ifeval")


def interval_table(results: dict[str, Any]) -> list[str]:
    """Markdown lines: each arm's 95 % bootstrap interval (over the cases it was scored on) for the
    scores the goals compare -- whether two arms differ by more than their samples do."""
    arms = [a for a in results["arms"] if a.get("status") == "done" and a["metrics"].get("intervals")]
    if not arms:
        return []
    lines = [
        "95 % bootstrap intervals over the cases each score was measured on:",
        "",
        "| arm | " + " | ".join(k.replace("_", " ") for k in INTERVAL_COLUMNS) + " |",
        "| --- |" + " ---: |" * len(INTERVAL_COLUMNS),
    ]
    for arm in arms:
        ivs = arm["metrics"]["intervals"]
        cells = [f"{iv[0]:.1f}–{iv[1]:.1f}" if iv else "—" for iv in (ivs.get(k) for k in INTERVAL_COLUMNS)]
        lines.append(f"| {arm['label']} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def hardware_line(machines: list[dict[str, Any]]) -> str:
    """Where the study's arms trained, in words, for the compute line ("" when not recorded).

    >>> hardware_line([{"device": "cpu", "processor": "AMD EPYC", "threads": 2, "precision": "fp32",
    ...                 "arms": ["base", "hat"]}])
    'trained on cpu (AMD EPYC), 2 threads, fp32'
    >>> hardware_line([{"device": "cpu", "processor": "A", "threads": 2, "precision": "bf16", "arms": ["base"]},
    ...                {"device": "cpu", "processor": "B", "threads": 2, "precision": "fp32", "arms": ["hat"]}])
    'trained on cpu (A), 2 threads, bf16: base; cpu (B), 2 threads, fp32: hat'
    """
    if not machines:
        return ""
    if len(machines) == 1:
        return "trained on " + hardware_text(machines[0])
    return "trained on " + "; ".join(f"{hardware_text(m)}: {', '.join(m.get('arms', []))}" for m in machines)


def markdown_table(results: dict[str, Any]) -> str:
    """The study's table (arms × suites and slices, compute), the paper's numbers beside, and the goals."""
    lines = [
        f"# HAT in miniature — study `{results['id']}` ({results['plan']['preset']})",
        "",
        (
            f"Produced by `{results['command']}`. Scores 0-100 on suites v2, {results['eval_cases']} per suite per arm "
            f"(an even spread of each suite); IFEval on {ifeval_sample(results)}."
        ),
        "",
        "| arm | livestream | variant | history v1 | history v2 | robustness | tool faults | ifeval | P50 | P95 | steps | train s | eval s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for arm in results["arms"]:
        if arm.get("status") != "done":
            lines.append(f"| {arm['label']} | {arm.get('status', 'not run')} |" + " |" * 12)
            continue
        m, c = arm["metrics"], arm["compute"]
        s, sl, lat = m["scores"], m["slices"], m["latency"]
        lines.append(
            f"| {arm['label']} | {_n(s.get('livestream'))} | {_n(s.get('variant'))} | {_n(sl.get('history_v1'))} | "
            f"{_n(sl.get('history_v2'))} | {_n(s.get('robustness'))} | {_n(sl.get('tool_faults'))} | {_n(s.get('ifeval'))} | "
            f"{_s(lat.get('p50_s'))} | {_s(lat.get('p95_s'))} | {c.get('train_steps', 0)} | {c.get('train_s', 0):.0f} | "
            f"{c.get('eval_s', 0):.0f} |"
        )
    for arm, label in (("hat", "paper: HAT"), ("fixed-sft", "paper: fixed-harness SFT")):
        p = PAPER[arm]
        lines.append(
            f"| *{label}* | {_n(p.get('livestream'))} | {_n(p.get('variant'))} | — | — | — | — | {_n(p.get('ifeval'))} |"
            + " — |" * 5
        )
    jobs = results["plan"].get("eval_jobs")
    lines += [
        "",
        "The paper's LS-QA is our livestream suite, its Harness-Variant our variant suite."
        + (f" P50/P95: seconds per episode in process, {jobs} episodes in flight." if jobs else ""),
        "",
        *interval_table(results),
        *component_table(results),
        *([line, ""] if (line := copy_probe_line(results)) else []),
        "## Goals",
        "",
    ]
    for goal in results["goals"]:
        lines.append(f"- **{goal['status']}** — {goal['goal']} ({goal['rule']}): {goal['numbers']}")
    total = results.get("compute", {})
    lines += [
        "",
        (
            f"Compute: data {total.get('data_s', 0):.0f} s, training {total.get('train_s', 0):.0f} s, "
            f"evaluation {total.get('eval_s', 0):.0f} s; wall time of the last invocation {total.get('wall_s', 0):.0f} s"
            + (f"; {where}." if (where := hardware_line(total.get("hardware") or [])) else ".")
        ),
        "",
    ]
    return "\n".join(lines)
