"""Probes of the scorer: policies built from the oracle by changing only its final reply or the
harness it sees, with the pass rate a trustworthy scorer must give each.

=================================  ==========================================================
probe                              a trustworthy scorer
=================================  ==========================================================
``oracle``                         passes (≈ 100 %)
``negated``                        fails (≈ 0 %): each fact in the reply negated
``reworded``                       passes (≈ 100 %): "2-4 days" → "2 to 4 days", "10% off" →
                                   "10 percent off", "35 left" → "35 units left", "Jun 15" →
                                   "June 15", "in stock" → "available right now", "21:00" → "9pm"
``padded``                         fails (≈ 0 %): a correct reply padded past
                                   ``max_reply_chars`` with two emoji (the guard truncates it)
``blind_tightened``                passes only the cases its replies happen to fit: the
                                   harness-blind reference under a copy of the harness with
                                   ``max_reply_chars`` 60 and ``max_emojis`` 0
=================================  ==========================================================

>>> reword("Only 35 left, ships in 2-4 days, 10% off until Jun 15 at 21:00, in stock!")
'Only 35 units left, ships in 2 to 4 days, 10 percent off until June 15 at 9pm, available right now!'
>>> negate("Yes, Glow Serum is in stock!", ["in stock"])
'No, Glow Serum is not in stock!'
>>> rates = probe_table(cases, harness)                     # doctest: +SKIP
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from typing import Any

from harnessctl.models.types import ModelResponse
from harnessctl.runtime import run_episode
from harnessctl.sim.oracle import OracleBlindModel, OracleModel
from harnessctl.sim.scorer import score_episode

PROBES = ("oracle", "negated", "reworded", "padded", "blind_tightened")
_MONTHS = {
    "Jan": "January",
    "Feb": "February",
    "Mar": "March",
    "Apr": "April",
    "Jun": "June",
    "Jul": "July",
    "Aug": "August",
    "Sep": "September",
    "Oct": "October",
    "Nov": "November",
    "Dec": "December",
}
_MONTH_RE = re.compile(r"\b(" + "|".join(_MONTHS) + r") (\d{1,2})\b")
_PAD = " Honestly one of my favourite things in the whole show, everyone keeps asking about it"


def reword(reply: str) -> str:
    """The same reply, the same meaning, other words (the rewordings a viewer would accept)."""
    out = re.sub(r"(?<![\d.])(\d+)-(\d+) days\b", r"\1 to \2 days", reply)
    out = re.sub(r"(?<![\d.])(\d+(?:\.\d+)?)% off\b", r"\1 percent off", out)
    out = re.sub(r"(?<![\d.$])(\d+) left\b", r"\1 units left", out)
    out = _MONTH_RE.sub(lambda m: f"{_MONTHS[m.group(1)]} {m.group(2)}", out)
    out = re.sub(r"\bin stock\b", "available right now", out)

    def twelve(m: re.Match[str]) -> str:
        h, mi = int(m.group(1)), int(m.group(2))
        suffix = "pm" if h >= 12 else "am"
        h12 = h % 12 or 12
        return f"{h12}{suffix}" if mi == 0 else f"{h12}:{mi:02d}{suffix}"

    return re.sub(r"(?<![\d:])([01]?\d|2[0-3]):([0-5]\d)(?![\d:])", twelve, out)


def negate(reply: str, facts: Iterable[str]) -> str:
    """The reply with every expected fact it states negated ("not <fact>"), led by "No,"
    when it opens with "Yes," (the oracle's facts, said the other way round)."""
    out = reply
    for fact in sorted({f for f in facts if f}, key=len, reverse=True):
        out = re.sub(rf"(?<![\w@$]){re.escape(fact)}(?![\w])", lambda m: f"not {m.group(0)}", out, flags=re.IGNORECASE)
    out = re.sub(r"^Yes,", "No,", out)
    return out


def pad(reply: str, limit: int) -> str:
    """A correct reply made longer than ``limit`` characters, ending with two emoji."""
    out = reply
    while len(out) <= limit:
        out += _PAD
    return out + " 🎉🎉"


class ReplyProbe:
    """The oracle bound to a case, with its final reply passed through ``rewrite(reply, case)``."""

    #: A probe wraps the oracle and rewrites with the case's facts: it is given the answer key.
    reads_answer_key = True

    def __init__(self, name: str, rewrite: Callable[[str, Any], str], inner: Any = None) -> None:
        self.name = name
        self.rewrite = rewrite
        self.inner = inner if inner is not None else OracleModel()
        self._case: Any = None
        self._policy: Any = None

    def for_episode(self, case: Any, harness: Any) -> ReplyProbe:
        bound = ReplyProbe(self.name, self.rewrite, self.inner)
        bound._case = case
        bound._policy = self.inner.for_episode(case, harness)
        return bound

    def generate(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: Any) -> ModelResponse:
        resp = self._policy.generate(messages, tools, settings)
        if not resp.tool_calls:
            resp.content = self.rewrite(resp.content or "", self._case)
        return resp


def tightened(harness: Any, *, max_reply_chars: int = 60, max_emojis: int = 0) -> Any:
    """A copy of ``harness`` with its reply constraints tightened."""
    h = copy.deepcopy(harness)
    cons = h.prompt.constraints
    if "max_reply_chars" in cons:
        cons["max_reply_chars"].value = max_reply_chars
    if "max_emojis" in cons:
        cons["max_emojis"].value = max_emojis
    return h


def probe_table(cases: list[Any], harness: Any) -> dict[str, float]:
    """Pass rate (0-100) of each probe on ``cases`` under ``harness`` (the shipped one)."""
    limit = int(harness.constraint("max_reply_chars", 120) or 120)
    models: dict[str, tuple[Any, Any]] = {
        "oracle": (OracleModel(), harness),
        "negated": (
            ReplyProbe(
                "negated", lambda r, c: negate(r, list(c.expect.facts) + [f for g in c.expect.any_facts for f in g])
            ),
            harness,
        ),
        "reworded": (ReplyProbe("reworded", lambda r, c: reword(r)), harness),
        "padded": (ReplyProbe("padded", lambda r, c: pad(r, limit)), harness),
        "blind_tightened": (OracleBlindModel(harness), tightened(harness)),
    }
    out = {}
    for name, (model, h) in models.items():
        passed = 0
        for case in cases:
            rec = run_episode(h, case, model.for_episode(case, h))
            passed += score_episode(rec, case).passed
        out[name] = round(100.0 * passed / len(cases), 1) if cases else 0.0
    return out
