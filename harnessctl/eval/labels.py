"""Human labels of episodes, for calibrating the judge: ``evals/labels.jsonl``.

One line per labelled episode, self-contained (the episode travels with its label, so a labels
file can be shared without the run it came from)::

    {"id": "run/suite/case/0", "label": "pass" | "fail", "reason": "...",
     "criteria": {"grounded": true, ...},          # optional, per rubric criterion
     "labeler": "who or what labelled it", "source": "how the episode was produced",
     "suite": ..., "case_id": ..., "episode": {EpisodeRecord without system prompt and tool specs}}

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "labels.jsonl")
>>> append_label(path, Label(id="e1", label="pass", reason="grounded and short", episode={"reply": "hi"}))
>>> [l.id for l in read_labels(path)]
['e1']
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.errors import HarnessctlError
from harnessctl.sim.jsonl import read_jsonl

from .results import CaseResult
from .store import RunStore

LABELS_SCHEMA_VERSION = 1


class LabelError(HarnessctlError, ValueError):
    """A labels file line is not a label; the message names file, line and field."""


@dataclass
class Label:
    id: str
    label: str  # "pass" | "fail"
    reason: str = ""
    criteria: dict[str, bool] = field(default_factory=dict)
    labeler: str = ""
    source: str = ""
    suite: str = ""
    case_id: str = ""
    group: str = ""  # episodes of the same case share a group (used to form pairwise pairs)
    episode: dict[str, Any] = field(default_factory=dict)
    schema_version: int = LABELS_SCHEMA_VERSION

    @property
    def passed(self) -> bool:
        return self.label == "pass"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compact_episode(record: dict[str, Any]) -> dict[str, Any]:
    """An episode record without what a reviewer does not need (the system prompt text and the
    tool specs), to keep label files small. The judge renders the rest."""
    d = dict(record)
    d["messages"] = [m for m in d.get("messages") or [] if m.get("role") != "system"]
    d.pop("tools", None)
    d.pop("turn_token_ids", None)
    return d


def read_labels(path: str | Path) -> list[Label]:
    """Every label in ``path``; raises :class:`LabelError` naming line and field on bad input."""
    out: list[Label] = []
    p = Path(path)
    if p.is_dir():
        raise LabelError(f"{p}: is a folder; pass the labels file (JSONL), e.g. evals/labels.jsonl")
    if not p.is_file():
        raise LabelError(f"{p}: no such labels file (make one with `harnessctl judge label RUN --out {p}`)")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise LabelError(f"{p}: not UTF-8 text (byte {e.start}); a labels file is JSONL, one label per line") from None
    # A last line cut short after complete ones is an interrupted labelling session's: left out.
    rows = read_jsonl(p, lambda where, e: LabelError(f"{where}: not JSON ({e.msg})"), torn_tail="\n" in text)
    for lineno, d in rows:
        if not isinstance(d, dict):
            raise LabelError(f"{p}:{lineno}: a label is a JSON object")
        for name in ("id", "label"):
            if name not in d:
                raise LabelError(f"{p}:{lineno}: missing field {name!r}")
        if d["label"] not in ("pass", "fail"):
            raise LabelError(f'{p}:{lineno}: field \'label\' must be "pass" or "fail", got {d["label"]!r}')
        if not isinstance(d.get("episode", {}), dict):
            raise LabelError(f"{p}:{lineno}: field 'episode' must be an episode record object")
        out.append(Label(**{k: v for k, v in d.items() if k in Label.__dataclass_fields__}))
    return out


def append_label(path: str | Path, label: Label) -> None:
    """Append one label and flush it (a labelling session can stop at any point)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "a", encoding="utf-8") as f:
        f.write(json.dumps(label.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n")
        f.flush()


def label_id(run_id: str, result: CaseResult) -> str:
    return f"{run_id}/{result.suite}/{result.case_id}/{result.repeat}"


def pending(run_id: str, results: Iterable[CaseResult], labels_path: str | Path) -> list[CaseResult]:
    """The results of a run that still need a label (skipping IFEval, which has no episode to
    judge, and results without a record). Resuming a labelling session is just calling this again."""
    done: set[str] = set()
    if Path(labels_path).is_file():
        done = {lab.id for lab in read_labels(labels_path)}
    return [r for r in results if r.record and r.suite != "ifeval" and label_id(run_id, r) not in done]


def label_from_result(
    run_id: str,
    result: CaseResult,
    verdict: str,
    reason: str,
    *,
    criteria: dict[str, bool] | None = None,
    labeler: str = "",
    source: str = "",
) -> Label:
    """A :class:`Label` for one result of a run."""
    return Label(
        id=label_id(run_id, result),
        label=verdict,
        reason=reason,
        criteria=dict(criteria or {}),
        labeler=labeler,
        source=source or f"run {run_id}",
        suite=result.suite,
        case_id=result.case_id,
        group=result.case_id,
        episode=compact_episode(result.record or {}),
    )


@dataclass
class LabelSession:
    """A run's episodes still to label (``todo``) and the labels file each answer is appended to
    at once (so that a session stopped anywhere goes on where it stopped).

    >>> session = open_label_session("tiny1", out_file="evals/labels.jsonl", labeler="ana")   # doctest: +SKIP
    >>> session.save(session.todo[0], "pass", "grounded and short")                          # doctest: +SKIP
    """

    run_id: str
    todo: list[CaseResult]
    out_file: Path
    labeler: str = ""

    def save(self, result: CaseResult, verdict: str, reason: str, criteria: dict[str, bool] | None = None) -> None:
        """Append the label of ``result`` (``verdict``: ``pass`` or ``fail``)."""
        append_label(
            self.out_file,
            label_from_result(self.run_id, result, verdict, reason, criteria=criteria, labeler=self.labeler),
        )


def open_label_session(
    run: str | Path, *, runs_dir: str | Path = "runs", out_file: str | Path, labeler: str = ""
) -> LabelSession:
    """The labelling of ``run`` (an id under ``runs_dir``, or its folder) into ``out_file``: the
    episodes it has no label for yet (see :func:`pending`); ``labeler`` defaults to ``$USER``."""
    store = RunStore.open(run, runs_dir)
    todo = pending(store.run_id, store.results(), out_file)
    return LabelSession(store.run_id, todo, Path(out_file), labeler or os.environ.get("USER", ""))
