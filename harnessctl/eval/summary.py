"""A run's summary: scores 0-100 per suite with the per-component breakdown, by intent and by
operator family, pass^k for repeated runs, IFEval accuracies and latency percentiles.

>>> from harnessctl.eval.results import CaseResult
>>> rs = [CaseResult("livestream", "a", score=1.0, passed=True, intent="price", latency_s=0.2),
...       CaseResult("livestream", "b", score=0.5, intent="stock", latency_s=0.4)]
>>> s = summarize(rs, latency_budget_s=0.3)
>>> s["suites"]["livestream"]["score"], s["suites"]["livestream"]["latency"]["over_budget"]
(75.0, 0.5)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harnessctl.models.registry import SHIPPED_DATA_DIR, SHIPPED_PREFIX

from .ifeval import IFEvalScore, accuracy
from .results import CaseResult
from .stats import latency_stats, pass_hat_k

SUITE_ORDER = ("livestream", "variant", "robustness", "ifeval")
#: How a run of the oracle is labelled wherever its scores are shown: it is no model.
ORACLE_LABEL = "reference policy (reads the answer key)"


def model_label(model: str | None) -> str:
    """The model as a person should read it: the oracle says what it is, and a checkpoint shipped
    in the package goes by its name (runs recorded before the default was named kept its path).

    >>> model_label("oracle")
    'oracle — reference policy (reads the answer key)'
    >>> from harnessctl.models.registry import SHIPPED_DATA_DIR
    >>> model_label(f"local:{SHIPPED_DATA_DIR / 'hat'}")
    'shipped:hat'
    """
    if model == "oracle":
        return f"oracle — {ORACLE_LABEL}"
    return shipped_name(model)


def shipped_name(model: str | None) -> str:
    """``shipped:NAME`` for ``local:`` + the install path of a shipped checkpoint; any other model
    string unchanged.

    >>> shipped_name("openai/tiny")
    'openai/tiny'
    """
    text = str(model)
    if text.startswith("local:"):
        path = Path(text.removeprefix("local:"))
        if path.parent == SHIPPED_DATA_DIR:
            return f"{SHIPPED_PREFIX}{path.name}"
    return text


def distinct_errors(results: Iterable[CaseResult], limit: int = 5) -> list[dict[str, Any]]:
    """The first ``limit`` distinct errors of a run, in order of first appearance, with counts.

    >>> distinct_errors([CaseResult("s", "a", error="boom"), CaseResult("s", "b", error="boom")])
    [{'error': 'boom', 'count': 2, 'first_case': 'a'}]
    """
    seen: dict[str, dict[str, Any]] = {}
    for r in results:
        if r.error is None:
            continue
        if r.error in seen:
            seen[r.error]["count"] += 1
        elif len(seen) < limit:
            seen[r.error] = {"error": r.error, "count": 1, "first_case": r.case_id}
    return list(seen.values())


def _pct(x: float) -> float:
    return round(100.0 * x, 2)


def _group(results: list[CaseResult], key) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        for k in key(r):
            groups[k].append(r)
    return {
        k: {
            "score": _pct(sum(r.score for r in rs) / len(rs)),
            "pass_rate": _pct(sum(r.passed for r in rs) / len(rs)),
            "n": len(rs),
        }
        for k, rs in sorted(groups.items())
    }


def suite_summary(results: list[CaseResult], latency_budget_s: float | None = None) -> dict[str, Any]:
    """The summary of one suite's results (repeats included)."""
    n_results = len(results)
    cases = {r.case_id for r in results}
    comps: dict[str, list[float]] = defaultdict(list)
    for r in results:
        for k, v in r.components.items():
            if isinstance(v, (int, float)):
                comps[k].append(float(v))
    # Latency of fully cached episodes says nothing about the model: leave them out (a run
    # answered wholly from the cache has no latency to report, not a latency of zero).
    live = [r for r in results if not r.cached and r.error is None]
    # A case that ended in an error (a timeout, a model error) has no score: counting it as 0
    # would make the score depend on the machine's load. It is counted under errors, and
    # ``--resume`` runs it again.
    scored = [r for r in results if r.error is None]
    out: dict[str, Any] = {
        "score": _pct(sum(r.score for r in scored) / len(scored)) if scored else 0.0,
        "n": len(cases),
        "n_results": n_results,
        "n_scored": len(scored),
        "pass_rate": _pct(sum(r.passed for r in scored) / len(scored)) if scored else 0.0,
        "errors": n_results - len(scored),
        "cached": sum(r.cached for r in results),
        "model_calls": sum(r.model_calls for r in results),
        "cache_hits": sum(r.cache_hits for r in results),
        "components": {k: _pct(sum(v) / len(v)) for k, v in sorted(comps.items())},
        "by_intent": _group(scored, lambda r: [r.intent or "unknown"]),
        "by_family": _group(scored, lambda r: r.families or ["none"]),
        # Failure categories: "hallucinated_number:$7.77" counts as hallucinated_number.
        "failures": dict(Counter(f.split(":", 1)[0] for r in results for f in r.failures).most_common()),
        "latency": latency_stats([r.latency_s for r in live], latency_budget_s).to_dict(),
    }
    repeats = max((r.repeat for r in results), default=0) + 1
    if repeats > 1:
        by_case: dict[str, list[bool]] = defaultdict(list)
        for r in results:
            by_case[r.case_id].append(r.passed)
        complete = {c: v for c, v in by_case.items() if len(v) >= repeats}
        if complete:
            out["pass_hat_k"] = {
                str(k): _pct(sum(pass_hat_k(sum(v), len(v), k) for v in complete.values()) / len(complete))
                for k in range(1, repeats + 1)
            }
    ife = [IFEvalScore.from_dict(r.details["ifeval"]) for r in results if "ifeval" in r.details]
    if ife:
        out["ifeval"] = {k: (_pct(v) if isinstance(v, float) else v) for k, v in accuracy(ife).items()}
    return out


def summarize(
    results: Iterable[CaseResult], manifest: dict[str, Any] | None = None, *, latency_budget_s: float | None = None
) -> dict[str, Any]:
    """The whole run's summary (what ``summary.json`` holds and ``--json`` prints)."""
    manifest = manifest or {}
    by_suite: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        by_suite[r.suite].append(r)
    order = [s for s in SUITE_ORDER if s in by_suite] + sorted(s for s in by_suite if s not in SUITE_ORDER)
    budget = (
        latency_budget_s if latency_budget_s is not None else (manifest.get("config") or {}).get("latency_budget_s")
    )
    suites = {s: suite_summary(by_suite[s], budget) for s in order}
    every = [r for s in order for r in by_suite[s]]
    return {
        "run_id": manifest.get("run_id"),
        "model": manifest.get("model"),
        "model_label": model_label(manifest.get("model")),
        "reference_policy": manifest.get("model") == "oracle",
        "harness": manifest.get("harness"),
        "complete": all(len({r.key for r in by_suite[s]}) >= (manifest.get("planned") or {}).get(s, 0) for s in order),
        "overall": {"score": round(sum(v["score"] for v in suites.values()) / len(suites), 2) if suites else 0.0},
        "errors": sum(v["errors"] for v in suites.values()),
        "first_errors": distinct_errors(every),
        "cache": {
            "model_calls": sum(v["model_calls"] for v in suites.values()),
            "hits": sum(v["cache_hits"] for v in suites.values()),
        },
        "suites": suites,
        # how the held-out variants were obtained (frozen or regenerated), as the manifest says
        **({"variants": manifest["variants"]} if manifest.get("variants") else {}),
    }
