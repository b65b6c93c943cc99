"""The loop: diagnose → edit → evaluate → release, with the model held fixed.

=================  ==========================================================================
``failures``       a run's failures traced to a score component and a harness element
``diagnose``       failures clustered by kind, component and element, ranked by impact
``edits``          the edit language (set/move by stable key), applied to a copy and validated
``propose``        edit proposals: offline rules, or an LLM through litellm
``apply``          an accepted edit committed on a new branch (never an invalid harness left)
``evaluate``       runs of a harness folder on chosen cases (a failing slice, an evolution suite)
``journal``        the loop's resumable journal (``loops/<id>/journal.jsonl``)
``improve``        the improvement loop within a budget of candidates
``evolution``      the evolution suite built from the semantic diff production → candidate
``release``        the gate, the version tag, the ``refs/production/<name>`` pointer, rollback
``bench``          the latency bench against a served endpoint; ``vllm serve`` command lines
``report``         the diagnosis section of a run's HTML report and the bench page
=================  ==========================================================================

>>> from harnessctl.loop import diagnose_run, release, GateConfig     # doctest: +SKIP
>>> diagnose_run("runs/failing").clusters[0].element                   # doctest: +SKIP
'constraint:max_reply_chars'
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "diagnose_run": "diagnose",
    "Diagnosis": "diagnose",
    "failure_items": "failures",
    "Proposal": "edits",
    "apply_edit": "edits",
    "check_proposal": "edits",
    "propose_rules": "propose",
    "propose_llm": "propose",
    "commit_edit": "apply",
    "evaluate_items": "evaluate",
    "standard_items": "evaluate",
    "Journal": "journal",
    "LoopConfig": "improve",
    "run_loop": "improve",
    "build_evolution_suite": "evolution",
    "GateConfig": "release",
    "release": "release",
    "rollback": "release",
    "bench_latency": "bench",
    "vllm_serve_command": "bench",
}

__all__ = [
    "Diagnosis",
    "GateConfig",
    "Journal",
    "LoopConfig",
    "Proposal",
    "apply_edit",
    "bench_latency",
    "build_evolution_suite",
    "check_proposal",
    "commit_edit",
    "diagnose_run",
    "evaluate_items",
    "failure_items",
    "propose_llm",
    "propose_rules",
    "release",
    "rollback",
    "run_loop",
    "standard_items",
    "vllm_serve_command",
]


def __getattr__(name: str) -> Any:
    # Lazy: importing the room stays cheap for commands that need one piece.
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
