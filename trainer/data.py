"""Chat datasets for the supervised stages: read and check rows, measure them in tokens, size
``max_length`` from the data, and hand TRL a ``datasets.Dataset``.

A row is what ``harnessctl augment --trajectories`` writes: ``{"messages": [...OpenAI chat...],
"tools": "<JSON list of tool specs>" | [...], "meta": {...}}``.

>>> rows = read_chat_rows("out/datasets/livecommerce", "train")          # doctest: +SKIP
>>> plan = plan_lengths(token_lengths(rows, tokenizer), requested=0, max_positions=4096, max_share=0.02)  # doctest: +SKIP
>>> plan.max_length, plan.over                                            # doctest: +SKIP
(1600, 0)
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessctl.augment.trajectories import _plain_messages, chat_template_inputs
from harnessctl.sim.jsonl import read_jsonl
from trainer.common import TrainError

ROLES = ("system", "user", "assistant", "tool")


def read_chat_rows(folder: str | Path, split: str = "train", what: str = "--data") -> list[dict[str, Any]]:
    """The rows of ``FOLDER/SPLIT.jsonl`` (or of a .jsonl file), checked: each has a non-empty
    ``messages`` list of chat turns with at least one assistant turn, and a ``tools`` list
    (``what`` names the option the folder came from in errors)."""
    p = Path(folder)
    path = p if p.is_file() else p / f"{split}.jsonl"
    if not p.exists():
        raise TrainError(
            f"{what} {folder}: no such folder; build one with `harnessctl augment --trajectories N --out DIR`"
        )
    if not path.is_file():
        raise TrainError(f"{what} {folder}: no {path.name} in it; is it a folder written by `augment --trajectories`?")

    def not_json(where: str, e: json.JSONDecodeError) -> TrainError:
        return TrainError(f"{where}: not valid JSON ({e.msg}); each line is one {{messages, tools}} object")

    rows = [check_row(row, f"{path}:{number}") for number, row in read_jsonl(path, not_json)]
    if not rows:
        raise TrainError(f"{path}: no rows; the dataset is empty")
    return rows


def check_row(row: Any, where: str) -> dict[str, Any]:
    """One row as ``{"messages": [...], "tools": [...]}``, or a :class:`TrainError` naming the column."""
    if not isinstance(row, dict):
        raise TrainError(f"{where}: a row is a JSON object with messages and tools, got {type(row).__name__}")
    messages = row.get("messages")
    if "messages" not in row:
        raise TrainError(f"{where}: no 'messages' column; rows need messages (OpenAI chat) and tools")
    if not isinstance(messages, list) or not messages:
        raise TrainError(f"{where}: 'messages' must be a non-empty list of chat turns")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise TrainError(f"{where}: messages[{i}] has no role among {', '.join(ROLES)}")
    if not any(m.get("role") == "assistant" for m in messages):
        raise TrainError(f"{where}: 'messages' has no assistant turn: nothing to learn from")
    if "tools" not in row:
        raise TrainError(f"{where}: no 'tools' column; rows need tools (a list of OpenAI tool specs, [] for none)")
    tools = row["tools"]
    if isinstance(tools, str):
        try:
            tools = json.loads(tools or "[]")
        except json.JSONDecodeError:
            raise TrainError(
                f"{where}: 'tools' is a string but not JSON; write the list of tool specs as JSON"
            ) from None
    if not isinstance(tools, list):
        raise TrainError(f"{where}: 'tools' must be a list of tool specs, got {type(tools).__name__}")
    return {"messages": messages, "tools": tools}


def join_viewer_rows(rows: list[dict[str, Any]], viewers_per_row: int) -> list[dict[str, Any]]:
    """Rows answered under one harness (the same system prompt and tools) joined into chats of up to
    ``viewers_per_row`` viewers, in file order: one after the other, as comments arrive in a live room.

    Why: a row spends most of its tokens on the harness (system prompt and tool specs, ~1,100 of
    ~1,200), and carries one skill choice; joined, the harness is read once per several choices, so
    a step teaches more decisions per token. Each viewer's turns keep their own context line.

    >>> rows = [{"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": f"q{i}"},
    ...          {"role": "assistant", "content": f"a{i}"}], "tools": []} for i in range(3)]
    >>> [[m["content"] for m in r["messages"]] for r in join_viewer_rows(rows, 2)]
    [['S', 'q0', 'a0', 'q1', 'a1'], ['S', 'q2', 'a2']]
    """
    if viewers_per_row < 1:
        raise TrainError(f"viewers_per_row must be 1 or more, got {viewers_per_row}")
    if viewers_per_row == 1:
        return rows
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(_harness_key(row), []).append(row)
    joined = []
    for members in groups.values():
        for start in range(0, len(members), viewers_per_row):
            joined.append(_one_chat(members[start : start + viewers_per_row]))
    return joined


def _harness_key(row: dict[str, Any]) -> tuple[str, str]:
    """What makes two rows answered under the same harness: their system prompt and tool specs."""
    first = row["messages"][0]
    system = first.get("content") or "" if first.get("role") == "system" else ""
    return system, json.dumps(row["tools"], sort_keys=True)


def _one_chat(chunk: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows of one harness as one chat: the first row whole, the others' turns after its system turn."""
    messages = list(chunk[0]["messages"])
    for row in chunk[1:]:
        rest = row["messages"]
        messages.extend(rest[1:] if rest[0].get("role") == "system" else rest)
    return {"messages": messages, "tools": chunk[0]["tools"]}


def decision_cuts(rows: list[dict[str, Any]], share: float) -> list[dict[str, Any]]:
    """Copies of every ``1/share``-th row cut after its first assistant turn (rows whose first
    assistant turn is their last are not copied); a ``share`` above 1 cuts every row that many
    times over (2.5: twice, then every other row once more).

    Why: the first assistant turn of an episode is the decision the rest follows (which skill to
    load, or which tool to call first), yet it is a few tokens of a row's assistant loss; a cut
    copy carries that decision and nothing else, so the choice gets a larger share of the loss
    without reweighting TRL's loss.

    >>> rows = [{"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": f"q{i}"},
    ...          {"role": "assistant", "content": f"c{i}"}, {"role": "tool", "content": "t"},
    ...          {"role": "assistant", "content": f"r{i}"}], "tools": []} for i in range(2)]
    >>> [[m["content"] for m in r["messages"]] for r in decision_cuts(rows, 0.5)]
    [['S', 'q1', 'c1']]
    >>> len(decision_cuts(rows, 2.0))
    4
    """
    if not 0.0 <= share <= MAX_DECISION_COPIES:
        raise TrainError(f"decision_rows must be within [0, {MAX_DECISION_COPIES}], got {share}")
    cuts, owed = [], 0.0
    for row in rows if share else []:
        owed += share
        messages = row["messages"]
        first = next(i for i, m in enumerate(messages) if m.get("role") == "assistant")
        while owed >= 1.0 - 1e-9:
            owed -= 1.0
            if first < len(messages) - 1:
                cuts.append({"messages": messages[: first + 1], "tools": row["tools"]})
    return cuts


#: The most times one row is cut into decision chats (``decision_rows``).
MAX_DECISION_COPIES = 8


def first_call(row: dict[str, Any]) -> str:
    """The row's first assistant tool call as ``name(arguments)`` ("" when it calls none): under one
    harness, the decision a cut row teaches (which skill to load, which tool to call first).

    >>> first_call({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "",
    ...   "tool_calls": [{"function": {"name": "load_skill", "arguments": {"name": "stock"}}}]}], "tools": []})
    'load_skill({"name": "stock"})'
    """
    turn = next(m for m in row["messages"] if m.get("role") == "assistant")
    calls = turn.get("tool_calls") or []
    if not calls:
        return ""
    fn = calls[0].get("function") or {}
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            pass
    return f"{fn.get('name', '')}({json.dumps(args, sort_keys=True)})"


def balanced_decision_chats(cuts: list[dict[str, Any]], viewers: int, seed: int = 0) -> list[dict[str, Any]]:
    """Cut rows joined ``viewers`` to a chat under their harness so that, within each harness, every
    first call is equally frequent and no chat repeats one (up to as many viewers as the harness has
    distinct first calls). The harness keeps its number of cut viewers: a rare call reuses its rows,
    a common one leaves some of its own out.

    Why: a decision chat with the frequency of the cases teaches the common skills as a prior (a
    checkpoint that quotes ``stock_and_size`` whatever the viewer asked), and a chat that repeats a
    call lets later viewers copy an earlier answer instead of reading the listing. With each call once
    per chat and all calls equally often, only the viewer's words tell which line is right.

    >>> def cut(q, skill):
    ...     call = {"function": {"name": "load_skill", "arguments": {"name": skill}}}
    ...     return {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": q},
    ...             {"role": "assistant", "content": "", "tool_calls": [call]}], "tools": []}
    >>> cuts = [cut("q1", "a"), cut("q2", "a"), cut("q3", "a"), cut("q4", "b")]
    >>> chats = balanced_decision_chats(cuts, viewers=4)
    >>> [sorted(m["content"] for m in c["messages"] if m["role"] == "user") for c in chats]
    [['q1', 'q4'], ['q3', 'q4']]
    """
    rng = random.Random(seed)
    groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for row in cuts:
        groups.setdefault(_harness_key(row), {}).setdefault(first_call(row), []).append(row)
    chats = []
    for by_call in groups.values():
        buckets = list(by_call.values())
        for bucket in buckets:
            rng.shuffle(bucket)
        width = min(viewers, len(buckets))
        # As many cut viewers as the harness had, each call equally often: rare calls reuse their
        # rows, common ones use some of theirs. A round is one pass over the calls in a fresh order.
        rounds = -(-sum(len(b) for b in buckets) // len(buckets))
        parts = -(-len(buckets) // width)  # chats per round, as even as the calls allow
        for turn in range(rounds):
            picks = [b[turn % len(b)] for b in buckets]
            rng.shuffle(picks)
            chats.extend(_one_chat(picks[part::parts]) for part in range(parts))
    return chats


def training_chats(
    rows: list[dict[str, Any]],
    *,
    viewers_per_row: int = 1,
    decision_rows: float = 0.0,
    decision_viewers: int = 0,
    decision_balance: bool = False,
) -> tuple[list[dict[str, Any]], int]:
    """The chats one SFT stage trains on, and how many of them are decision chats: ``rows`` joined
    ``viewers_per_row`` to a chat (:func:`join_viewer_rows`), then the :func:`decision_cuts` of a
    share ``decision_rows`` of them joined ``decision_viewers`` to a chat under their harness
    (0: as many as ``viewers_per_row``); with ``decision_balance``, joined by
    :func:`balanced_decision_chats` instead.

    Why join the cuts: a cut viewer is its question and its first call, ~60-100 tokens against the
    harness's ~640; sixteen under one harness put sixteen choices in the tokens one whole viewer
    row spends on one.

    >>> rows = [{"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": f"q{i}"},
    ...          {"role": "assistant", "content": f"c{i}"}, {"role": "tool", "content": "t"},
    ...          {"role": "assistant", "content": f"r{i}"}], "tools": []} for i in range(3)]
    >>> chats, n = training_chats(rows, viewers_per_row=3, decision_rows=1.0, decision_viewers=3)
    >>> n, [m["content"] for m in chats[-1]["messages"]]
    (1, ['S', 'q0', 'c0', 'q1', 'c1', 'q2', 'c2'])
    """
    whole = join_viewer_rows(rows, viewers_per_row)
    cuts = decision_cuts(rows, decision_rows)
    if decision_rows > 1.0:
        # Copies of one row would sit side by side and join into the same chats: a seeded shuffle
        # puts each copy among other viewers (the joining keeps each harness's rows together).
        random.Random(0).shuffle(cuts)
    width = decision_viewers or viewers_per_row
    decisions = balanced_decision_chats(cuts, width) if decision_balance else join_viewer_rows(cuts, width)
    return whole + decisions, len(decisions)


def token_lengths(rows: list[dict[str, Any]], tokenizer: Any) -> list[int]:
    """Each row's length in tokens, rendered with the tokenizer's chat template and its tools."""
    lengths = []
    for row in rows:
        messages, tools = chat_template_inputs({"messages": row["messages"], "tools": row["tools"]})
        ids = tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=True, return_dict=True)["input_ids"]
        lengths.append(len(ids))
    return lengths


@dataclass
class LengthPlan:
    """``max_length`` and what it costs: rows longer than it are dropped (assistant-only loss
    would drop them silently), counted before training."""

    max_length: int
    rows: int
    over: int
    longest: int

    @property
    def share_over(self) -> float:
        return self.over / self.rows if self.rows else 0.0


def plan_lengths(lengths: list[int], *, requested: int, max_positions: int, max_share: float) -> LengthPlan:
    """Size ``max_length`` (``requested`` 0: the longest row rounded up to 64 tokens, within the
    model's positions) and refuse above ``max_share`` of rows over it.

    >>> plan_lengths([100, 700, 1500], requested=0, max_positions=4096, max_share=0.0).max_length
    1536
    >>> plan_lengths([100, 700, 1500], requested=1024, max_positions=4096, max_share=0.1)
    Traceback (most recent call last):
    ...
    trainer.common.TrainError: 1 of 3 rows (33.3 %) are longer than max_length 1024 tokens and would be cut; raise max_length to 1536 (longest row 1500 tokens) or max_truncated_share to 0.34
    """
    longest = max(lengths) if lengths else 0
    size = requested or -(-longest // 64) * 64
    if max_positions:
        size = min(size, max_positions)
    over = sum(n > size for n in lengths)
    plan = LengthPlan(max_length=size, rows=len(lengths), over=over, longest=longest)
    if plan.share_over > max_share:
        fit = -(-longest // 64) * 64
        room = f" (the model has {max_positions} positions)" if max_positions and fit > max_positions else ""
        raise TrainError(
            f"{over} of {len(lengths)} rows ({100 * plan.share_over:.1f} %) are longer than max_length {size} tokens "
            f"and would be cut; raise max_length to {fit} (longest row {longest} tokens){room} or "
            f"max_truncated_share to {plan.share_over + 0.005:.2f}"
        )
    return plan


def to_dataset(rows: list[dict[str, Any]]) -> Any:
    """A ``datasets.Dataset`` TRL can read: ``messages`` with tool-call arguments as JSON text and
    ``tools`` as a JSON string column (``datasets`` would merge differing argument dicts)."""
    from datasets import Dataset

    plain = [
        {"messages": _plain_messages(r["messages"]), "tools": json.dumps(r["tools"], ensure_ascii=False)} for r in rows
    ]
    return Dataset.from_list(plain, on_mixed_types="use_json")
