"""Evaluation: suites, runs that resume, latency percentiles, an agent-as-judge, compare, report.

=================  ==========================================================================
``suites``         the four suite files in ``evals/`` (load, sample, hash); ``build`` rebuilds them
``ifeval``         IFEval prompts and scoring with the ``if-verifiable`` checkers, offline
``perturb``        viewer-message perturbations of the robustness suite
``variants``       held-out HSA variant specs and their frozen harnesses (``evals/variants/``)
``runner``         concurrent, cached, retried, timed, resumable runs (``run_eval``, ``resume_eval``)
``store``          the run folder: ``manifest.json``, ``records.jsonl``, ``summary.json``
``cache``          the model-call cache and the retrying wrapper around a backend
``summary``        scores 0-100 per suite, breakdowns, pass^k, latency percentiles
``stats``          percentiles, bootstrap intervals, Cohen's kappa, pass^k
``compare``        run B against run A: deltas with intervals, flips, regression verdict
``report``         the self-contained HTML report
``judge``          the rubric judge: verdicts, robust parsing, pairwise with position swap
``calibrate``      the judge against human labels; ``labels`` reads and writes label files
``labelset``       the shipped, programmatically labelled calibration set
=================  ==========================================================================

>>> from harnessctl.eval import EvalConfig, run_eval        # doctest: +SKIP
>>> run_eval(EvalConfig(suites=["livestream"], model="oracle", limit=50)).summary["suites"]["livestream"]["score"]   # doctest: +SKIP
100.0
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "EvalConfig": "runner",
    "run_eval": "runner",
    "resume_eval": "runner",
    "arun_eval": "runner",
    "aresume_eval": "runner",
    "RunStore": "store",
    "CaseResult": "results",
    "summarize": "summary",
    "compare_results": "compare",
    "render_report": "report",
    "Judge": "judge",
    "Verdict": "judge",
    "calibrate": "calibrate",
    "read_labels": "labels",
    "load_suite": "suites",
    "score_response": "ifeval",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    # Lazy: ``import harnessctl.eval`` stays cheap for commands that need one piece.
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
