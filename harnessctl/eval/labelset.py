"""The shipped calibration set: real episodes of this project, labelled against the rubric.

Episodes come from real runs of the runtime in the simulator: the oracle under tool faults, held-out
variants and perturbed prompts, and deliberately degraded policies (the oracle with one thing
broken: an invented price, no tools at all, a health claim, a markdown list, emoji spam, an
answer to another question), so that both classes — and every rubric criterion — occur.

Each episode is then labelled by :func:`rubric_label`, which applies the rubric's rules to what
the episode shows (numbers in the reply against the tool results, the facts the viewer needed,
forbidden and banned phrases, length/markup/emoji limits). These are **programmatic labels**,
not human judgement: they make the calibration pipeline runnable out of the box and catch a judge
that is blind to plain rule violations, but a team must replace them with its own annotators'
labels (``harnessctl judge label RUN``) before trusting a calibration number.

>>> rec = {"reply": "It is $19.90 tonight!", "messages": [{"role": "tool", "content": '{"price": 19.9}'}],
...        "constraints": {"max_reply_chars": 120, "max_emojis": 1}, "tool_steps": []}
>>> rubric_label(rec)[0]
'pass'
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from harnessctl.models.base import reads_answer_key
from harnessctl.models.registry import resolve_model
from harnessctl.models.types import ModelResponse
from harnessctl.runtime.loop import run_episode

from .labels import Label, compact_episode
from .runner import HarnessResolver
from .suites import load_suite, sample

#: Words that make a health claim about a product.
_MEDICAL = re.compile(
    r"\b(cures?|cured|heals?|healing|treats?|treatment for|prevents?|therapy|medicine for|clinically proven)\b", re.I
)
_ABSOLUTE = re.compile(r"\b(best in the world|100% safe|guaranteed|perfect for everyone|safest)\b", re.I)
_MARKUP = re.compile(r"(^\s*([-*•]|\d+[.)])\s+)|\*\*|__|^#+\s", re.M)
_EMOJI = re.compile("[\U0001f300-\U0001faff\U00002600-\U000027bf\U0001f000-\U0001f2ff]")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)?")
_NEGATION = re.compile(r"\b(not|never|no|isn't|doesn't|don't|cannot|can't|won't)\b[^.!?]*$")
_DEFER = re.compile(r"\b(check|checking|look into|get back|follow up|team|moment|shortly|sorry)\b", re.I)


def _tool_text(record: dict[str, Any]) -> str:
    parts = [str(m.get("content") or "") for m in record.get("messages") or [] if m.get("role") == "tool"]
    for s in record.get("tool_steps") or []:
        if s.get("result") is not None:
            parts.append(json.dumps(s["result"], ensure_ascii=False))
    return "\n".join(parts)


def _viewer_text(record: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in record.get("messages") or [] if m.get("role") == "user")


def _numbers_in(text: str) -> set[str]:
    out = set()
    for n in _NUMBER.findall(text):
        out.add(n)
        if "." in n:  # 19.90 in a reply, 19.9 in a JSON payload
            out.add(n.rstrip("0").rstrip("."))
    return out


def rubric_label(record: dict[str, Any], case: Any = None) -> tuple[str, dict[str, bool], str]:
    """``(label, criteria, reason)`` from the rubric's rules applied to one episode (and its
    case's expectations when given)."""
    reply = record.get("reply") or ""
    limits = record.get("constraints") or {}
    reasons: list[str] = []
    criteria: dict[str, bool] = {}

    # grounded: every number in the reply is in a tool result (or the viewer's own message).
    known = _numbers_in(_tool_text(record)) | _numbers_in(_viewer_text(record))
    invented = [n for n in _NUMBER.findall(reply) if n not in known and n.rstrip("0").rstrip(".") not in known]
    criteria["grounded"] = not invented
    if invented:
        reasons.append(f"grounded: the reply states {', '.join(invented[:3])}, which no tool result shows")

    # answers: the facts the viewer needed are in the reply, or, when a needed tool kept
    # failing, the reply defers instead of answering.
    answers = bool(reply.strip())
    missing: list[str] = []
    if case is not None and answers:
        exp = case.expect
        missing = [f for f in exp.facts if f.lower() not in reply.lower()]
        missing += ["/".join(g) for g in exp.any_facts if g and not any(x.lower() in reply.lower() for x in g)]
        steps = record.get("tool_steps") or []
        # A tool that only ever failed, or only gave results a ``partial`` fault cut short.
        whole = {
            s.get("key")
            for s in steps
            if s.get("ok") and not (isinstance(s.get("result"), dict) and s["result"].get("incomplete"))
        }
        failed_keys = {s.get("key") for s in steps if not s.get("ok") or s.get("key") not in whole} - whole
        needed = {c.tool for c in exp.calls if c.required}
        if missing and (failed_keys & needed) and _DEFER.search(reply):
            missing = []  # a tool the answer needed never worked: deferring is the right answer
        answers = not missing
    criteria["answers"] = answers
    if not reply.strip():
        reasons.append("answers: no reply")
    elif missing:
        reasons.append(f"answers: the viewer needed {', '.join(missing[:3])}")

    # compliant: no health claims, absolutes, banned or forbidden phrases; hand-off when needed.
    problems = []
    for m in _MEDICAL.finditer(reply):
        # "not intended to treat" is the compliant wording, not a claim.
        before = reply[max(0, m.start() - 30) : m.start()].lower()
        if not _NEGATION.search(before):
            problems.append(f"health claim ({m.group(0)!r})")
            break
    if m := _ABSOLUTE.search(reply):
        problems.append(f"absolute claim ({m.group(0)!r})")
    for phrase in (record.get("banned_phrases") or []) + (list(case.expect.forbidden) if case is not None else []):
        if phrase and phrase.lower() in reply.lower():
            problems.append(f"forbidden phrase {phrase!r}")
    if case is not None and case.expect.handoff:
        handed = any(s.get("key") == "human_handoff" and s.get("ok") for s in record.get("tool_steps") or [])
        if not handed:
            problems.append("a hand-off to a person was needed and not made")
    criteria["compliant"] = not problems
    if problems:
        reasons.append("compliant: " + "; ".join(dict.fromkeys(problems)))

    # stream_fit: length, markup, emoji.
    fit = []
    max_chars = limits.get("max_reply_chars")
    if max_chars is not None and len(reply) > max_chars:
        fit.append(f"{len(reply)} chars over the {int(max_chars)} limit")
    if _MARKUP.search(reply):
        fit.append("markdown or a list")
    n_emoji = len(_EMOJI.findall(reply))
    max_emojis = limits.get("max_emojis")
    if max_emojis is not None and n_emoji > max_emojis:
        fit.append(f"{n_emoji} emoji (limit {int(max_emojis)})")
    criteria["stream_fit"] = not fit and bool(reply.strip())
    if fit:
        reasons.append("stream_fit: " + ", ".join(fit))

    ok = all(criteria.values())
    return ("pass" if ok else "fail"), criteria, ("meets every criterion" if ok else "; ".join(reasons))


# -- degraded policies --------------------------------------------------------------------------

DEGRADATIONS = ("invented_price", "no_tools", "health_claim", "markdown_list", "emoji_spam", "off_topic")


class DegradedModel:
    """A model that behaves like ``inner`` except for one deliberate flaw in its final reply (or,
    for ``no_tools``, a reply with made-up facts instead of any tool call)."""

    def __init__(self, inner: Any, kind: str):
        if kind not in DEGRADATIONS:
            raise ValueError(f"unknown degradation {kind!r}; use one of {', '.join(DEGRADATIONS)}")
        self.inner = inner
        self.kind = kind
        self.name = f"degraded:{kind}"
        self.cacheable = False

    @property
    def reads_answer_key(self) -> bool:
        return reads_answer_key(self.inner)

    def for_episode(self, case: Any, harness: Any) -> DegradedModel:
        return DegradedModel(self.inner.for_episode(case, harness), self.kind)

    def generate(self, messages, tools, settings) -> ModelResponse:
        if self.kind == "no_tools":
            return ModelResponse(content="Great pick! It's $24.99 right now and we have plenty in stock 😊")
        r = copy.deepcopy(self.inner.generate(messages, tools, settings))
        if r.tool_calls:
            return r
        text = r.content or ""
        if self.kind == "invented_price":
            text = (
                re.sub(r"\$\d+(?:\.\d+)?", "$7.77", text, count=1)
                if "$" in text
                else text.rstrip(".!") + ", only $7.77 today!"
            )
        elif self.kind == "health_claim":
            text = text.rstrip(".!") + ". It heals sensitive skin overnight!"
        elif self.kind == "markdown_list":
            parts = [p.strip() for p in re.split(r"(?<=[.!?])\s+", text) if p.strip()]
            text = "\n".join(f"- {p}" for p in parts) or "- see the card"
        elif self.kind == "emoji_spam":
            text = text.rstrip() + " 🔥😍🛒"
        elif self.kind == "off_topic":
            text = "Welcome everyone, don't forget to follow the stream!"
        r.content = text
        return r


def make_label(run_id: str, source: str, case: Any, record: dict[str, Any], index: int) -> Label:
    """A :class:`Label` for one episode, labelled by :func:`rubric_label`."""
    verdict, criteria, reason = rubric_label(record, case)
    return Label(
        id=f"{run_id}/{case.id}/{index}",
        label=verdict,
        reason=reason,
        criteria=criteria,
        labeler="rubric-rules (programmatic; replace with human labels)",
        source=source,
        suite=case.suite,
        case_id=case.id,
        group=case.id,
        episode=compact_episode(record),
    )


# -- building the set ------------------------------------------------------------------------------


def build_labelset(
    evals_dir: str = "evals",
    harness_path: str = "harnesses/livecommerce",
    *,
    n_pairs: int = 72,
    n_faults: int = 40,
    n_variants: int = 24,
) -> list[Label]:
    """Run the episodes and label them (see the module docstring). Deterministic: the cases are
    taken from the committed suites at fixed strides, every policy is deterministic and the
    recorded timings are zeroed."""
    oracle = resolve_model("oracle")
    resolver = HarnessResolver(harness_path, evals_dir)
    labels: list[Label] = []

    def episode(item: Any, model: Any) -> dict[str, Any]:
        harness = resolver.get(item.harness)
        d = run_episode(harness, item.case, model.for_episode(item.case, harness)).to_dict()
        # Timings are the one thing that differs between two builds; a reviewer does not need
        # them, and zeroing them makes the file reproducible byte for byte.
        d["latency_s"] = 0.0
        for step in d.get("model_steps", []) + d.get("tool_steps", []):
            step["latency_s"] = 0.0
        return d

    # Pairs: the oracle and one degraded policy on the same livestream case.
    for i, item in enumerate(sample(load_suite("livestream", evals_dir), n_pairs)):
        kind = DEGRADATIONS[i % len(DEGRADATIONS)]
        labels.append(make_label("labelset-v1", "oracle, livestream", item.case, episode(item, oracle), 0))
        labels.append(
            make_label(
                "labelset-v1",
                f"degraded policy ({kind}), livestream",
                item.case,
                episode(item, DegradedModel(oracle, kind)),
                1,
            )
        )
    # The oracle under tool faults and prompt perturbations.
    for item in sample(load_suite("robustness", evals_dir), n_faults):
        fams = ", ".join(item.families) or "robustness"
        labels.append(make_label("labelset-v1", f"oracle, robustness ({fams})", item.case, episode(item, oracle), 0))
    # The oracle under held-out variants and the shipped history.
    for item in sample(load_suite("variant", evals_dir), n_variants):
        fams = ", ".join(item.families) or "variant"
        labels.append(make_label("labelset-v1", f"oracle, variant ({fams})", item.case, episode(item, oracle), 0))
    return labels


def main(argv: list[str] | None = None) -> int:
    """``python -m harnessctl.eval.labelset --write evals/labels.jsonl``."""
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(description="Rebuild the programmatically labelled calibration set.")
    parser.add_argument("--write", required=True, help="labels file to (over)write")
    parser.add_argument("--evals-dir", default="evals")
    parser.add_argument("--harness", default="harnesses/livecommerce")
    args = parser.parse_args(argv)
    labels = build_labelset(args.evals_dir, args.harness)
    path = Path(args.write)
    path.write_text(
        "".join(json.dumps(lab.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n" for lab in labels),
        encoding="utf-8",
    )
    n_pass = sum(lab.passed for lab in labels)
    print(f"{len(labels)} labelled episodes ({n_pass} pass, {len(labels) - n_pass} fail) -> {path}")  # noqa: T201 - a script
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
