"""The ``ifeval`` suite: general instruction following, scored with the IFEval checkers.

The checkers come from the maintained ``if-verifiable`` package (Google's IFEval instruction
registry and its strict/loose protocol); nothing of them is copied here. This module adds what
the project needs around them:

- **prompts**: the official IFEval prompts when the user has them (a local ``input_data.jsonl``,
  or ``datasets`` when online and asked for), otherwise IFEval-style prompts built offline from
  the checker's *own* instruction registry over the project's live-commerce base prompts;
- **offline sentence splitting**: the checkers count sentences with NLTK's Punkt tokenizer, whose
  English parameters (``punkt_tab``) are normally downloaded. When they are not installed we build
  a parameter set (a list of common English abbreviations, nothing learned from outside data) into
  a local cache folder and put it first on NLTK's data path. Nothing is downloaded, ever.
- **aggregation**: prompt-level and instruction-level accuracy, strict and loose.

>>> case = IFEvalCase(id="ifeval-x", prompt="Describe the serum. Do not use any commas.",
...                   instruction_id_list=["punctuation:no_comma"], kwargs=[{}])
>>> score_response(case, "It is light and smells of citrus.").prompt_strict
True
>>> score_response(case, "It is light, and smells of citrus.").prompt_strict
False
"""

from __future__ import annotations

import logging
import os
import random
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.harness.fileio import atomic_write
from harnessctl.sim.jsonl import read_jsonl

SUITE = "ifeval"

#: Abbreviations the offline Punkt parameters know (lower case, no final period), so that
#: "Dr. Lee" or "approx. 3 days" do not end a sentence. Written for this project.
_ABBREVIATIONS = (
    "mr mrs ms dr prof sr jr st vs etc e.g i.e approx dept est inc ltd co corp jan feb mar apr jun "
    "jul aug sep sept oct nov dec mon tue wed thu fri sat sun no nos fig min max pcs qty oz lb lbs "
    "ft in cm mm kg g ml hr hrs mins sec secs a.m p.m u.s u.k"
).split()

_setup_lock = threading.Lock()
_ready = False


def cache_dir() -> Path:
    """Where harnessctl keeps built data it can rebuild (``$HARNESSCTL_CACHE_DIR`` or
    ``~/.cache/harnessctl``)."""
    env = os.environ.get("HARNESSCTL_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "harnessctl"


def ensure_offline_checkers() -> None:
    """Make the IFEval checkers usable with no network: Punkt parameters on NLTK's path and a
    deterministic language detector. Idempotent and thread-safe; called by every public scorer.

    >>> ensure_offline_checkers()          # doctest: +SKIP
    """
    global _ready
    if _ready:
        return
    with _setup_lock:
        if _ready:
            return
        import nltk

        try:
            nltk.data.find("tokenizers/punkt_tab/english/")
        except LookupError:
            root = cache_dir() / "nltk_data"
            _write_punkt_tab(root / "tokenizers" / "punkt_tab" / "english")
            if str(root) not in nltk.data.path:
                nltk.data.path.insert(0, str(root))
        import langdetect

        # langdetect samples at random; a fixed seed makes the language checker deterministic.
        langdetect.DetectorFactory.seed = 0
        # The official checkers log a response whose language cannot be detected (and count the
        # instruction as followed) on the root logger: one line per such response, in the middle
        # of a progress bar. The rule stays; the line goes.
        logging.getLogger().addFilter(_drop_undetected_language)
        _ready = True


def _drop_undetected_language(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Unable to detect language for text")


def _write_punkt_tab(folder: Path) -> None:
    """Write an English ``punkt_tab`` model (the four files NLTK's PunktTokenizer reads)."""
    files = {
        "abbrev_types.txt": "\n".join(sorted(_ABBREVIATIONS)) + "\n",
        "collocations.tab": "",
        "sent_starters.txt": "",
        "ortho_context.tab": "",
    }
    if all(
        (folder / name).is_file() and (folder / name).read_text(encoding="utf-8") == text
        for name, text in files.items()
    ):
        return
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        atomic_write(folder / name, text)


def registry() -> tuple[dict[str, Any], dict[str, set[str]]]:
    """The checker package's instruction registry and its conflict table."""
    ensure_offline_checkers()
    from if_verifiable.ifeval import instructions_registry as reg

    return dict(reg.INSTRUCTION_DICT), {k: set(v) for k, v in reg.INSTRUCTION_CONFLICTS.items()}


# -- cases --------------------------------------------------------------------------------------


@dataclass
class IFEvalCase:
    """One IFEval prompt: the text and the verifiable instructions it carries (official format)."""

    id: str
    prompt: str
    instruction_id_list: list[str]
    kwargs: list[dict[str, Any]]
    suite: str = SUITE
    source: str = "generated"  # generated | official
    seed: int = 0
    base: str = ""  # the base prompt the instructions were added to (generated prompts)

    @property
    def intent(self) -> str:
        """The instruction group of the first instruction (``punctuation``, ``length_constraints``...)."""
        return self.instruction_id_list[0].split(":")[0] if self.instruction_id_list else "none"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> IFEvalCase:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


# Live-commerce writing tasks: the project's own base prompts.
_TASKS = (
    "Write an opening script for a live shopping stream that features {p}.",
    "Write a reply to a viewer who asks whether {p} is worth buying.",
    "Describe {p} for viewers who just joined the stream.",
    "Write the product card blurb for {p}.",
    "Write a thank-you message to viewers after tonight's flash sale of {p}.",
    "Explain the return policy for {p} to a viewer, in plain words.",
    "Write a short FAQ about {p} for the pinned comment of the stream.",
    "Write a teaser post announcing tomorrow's live drop of {p}.",
    "Give three reasons shoppers like {p}.",
    "Write a calm answer to a viewer who complains that {p} arrived late.",
    "Write a 30-second segment comparing {p} with {q}.",
    "Write tips for a new live host who will present {p}.",
    "Write a message that invites viewers to ask questions about {p}.",
    "Write a story about a shopper who found {p} during a live stream.",
    "Write an email to regular viewers about the restock of {p}.",
    "Explain to a viewer how to choose between {p} and {q}.",
    "Write a poem that a live host could read while showing {p}.",
    "Write a short note for the stream moderators about questions they may get on {p}.",
    "Write a product update telling viewers that {p} is now shipping to more regions.",
    "Summarize what viewers asked most about {p} this week.",
)
_PRODUCTS = (
    "a bamboo cutting board",
    "a vitamin C face serum",
    "a merino wool beanie",
    "wireless earbuds",
    "a cast-iron skillet",
    "a linen summer dress",
    "a matte lipstick set",
    "a smart desk lamp",
    "a jar of wildflower honey",
    "running shoes",
    "a ceramic pour-over coffee set",
    "a silk pillowcase",
    "a portable power bank",
    "a gift box of dark chocolate",
    "a waterproof rain jacket",
    "a robot vacuum",
    "a hydrating sheet mask pack",
    "a cotton hoodie",
    "a mechanical keyboard",
    "a set of glass food containers",
    "green tea from a family farm",
    "a leather crossbody bag",
    "a sunscreen stick",
    "a scented soy candle",
)


def build_cases(n: int = 1000, seed: int = 20250801, max_instructions: int = 3) -> list[IFEvalCase]:
    """IFEval-style cases built offline: a base prompt plus 1..``max_instructions`` instructions
    drawn from the checker registry (no conflicting pair), with the checker's own wording and
    kwargs. Same ``(n, seed)``, same cases.

    >>> cases = build_cases(5, seed=1)
    >>> len(cases), all(c.instruction_id_list for c in cases)
    (5, True)
    """
    instruction_dict, conflicts = registry()
    ids = sorted(instruction_dict)
    rng = random.Random(seed)
    cases: list[IFEvalCase] = []
    for i in range(n):
        case_seed = rng.randrange(2**31)
        crng = random.Random(case_seed)
        product, other = crng.sample(_PRODUCTS, 2)
        base = crng.choice(_TASKS).format(p=product, q=other)
        chosen: list[str] = []
        # Round-robin over the registry for the first instruction, so every checker is covered.
        first = ids[i % len(ids)]
        chosen.append(first)
        want = crng.randint(1, max_instructions)
        candidates = [x for x in ids if x != first]
        crng.shuffle(candidates)
        for cand in candidates:
            if len(chosen) >= want:
                break
            if any(cand in conflicts.get(c, set()) or c in conflicts.get(cand, set()) for c in chosen):
                continue
            chosen.append(cand)
        descriptions, kwargs = _describe(instruction_dict, chosen, base, case_seed)
        prompt = base + " " + " ".join(d[0].upper() + d[1:] if d else d for d in descriptions)
        cases.append(
            IFEvalCase(
                id=f"ifeval-{i:05d}",
                prompt=prompt.strip(),
                instruction_id_list=chosen,
                kwargs=kwargs,
                seed=case_seed,
                base=base,
            )
        )
    return cases


def _describe(
    instruction_dict: dict[str, Any], ids: list[str], base: str, seed: int
) -> tuple[list[str], list[dict[str, Any]]]:
    """Let each checker word its instruction and pick its arguments, under a fixed seed (the
    checkers draw from the global ``random`` module, so its state is saved and restored)."""
    state = random.getstate()
    try:
        random.seed(seed)
        descriptions, kwargs = [], []
        for iid in ids:
            checker = instruction_dict[iid](iid)
            if iid == "combination:repeat_prompt":
                text = checker.build_description(prompt_to_repeat=base)
            else:
                text = checker.build_description()
            args = checker.get_instruction_args() or {}
            descriptions.append(text.strip())
            kwargs.append({k: v for k, v in args.items() if v is not None})
        return descriptions, kwargs
    finally:
        random.setstate(state)


def load_official(path: str | Path) -> list[IFEvalCase]:
    """Official IFEval prompts from a local ``input_data.jsonl`` (fields ``key``, ``prompt``,
    ``instruction_id_list``, ``kwargs``), e.g. a copy of Google's file.

    Raises ``ValueError`` naming the line and field when a line is not an IFEval prompt.
    """
    return [
        _official_row(row, f"{path}:{lineno}")
        for lineno, row in read_jsonl(path, lambda where, e: ValueError(f"{where}: not JSON ({e.msg})"))
    ]


def load_official_from_hub() -> list[IFEvalCase]:
    """Official IFEval prompts through ``datasets`` (needs the network; never called implicitly)."""
    from datasets import load_dataset

    try:
        rows = load_dataset("google/IFEval", split="train")
    except Exception as e:  # noqa: BLE001 - any failure to fetch means the same thing to the user
        raise ValueError(
            f"could not fetch google/IFEval ({type(e).__name__}); offline, pass a local input_data.jsonl "
            "or leave --ifeval-prompts out to build prompts from the checker registry"
        ) from None
    return [_official_row(dict(r), f"google/IFEval row {i}") for i, r in enumerate(rows)]


def _official_row(row: dict[str, Any], where: str) -> IFEvalCase:
    for name in ("key", "prompt", "instruction_id_list", "kwargs"):
        if name not in row:
            raise ValueError(
                f"{where}: missing field {name!r} (an IFEval prompt has key, prompt, instruction_id_list, kwargs)"
            )
    kwargs = [{k: v for k, v in (kw or {}).items() if v is not None} for kw in row["kwargs"]]
    return IFEvalCase(
        id=f"ifeval-official-{row['key']}",
        prompt=row["prompt"],
        instruction_id_list=list(row["instruction_id_list"]),
        kwargs=kwargs,
        source="official",
    )


# -- scoring ------------------------------------------------------------------------------------


@dataclass
class InstructionVerdict:
    instruction_id: str
    strict: bool
    loose: bool


@dataclass
class IFEvalScore:
    """Prompt-level (all instructions followed) and per-instruction verdicts, strict and loose."""

    prompt_strict: bool
    prompt_loose: bool
    instructions: list[InstructionVerdict] = field(default_factory=list)

    @property
    def total(self) -> float:
        """The episode's score in [0, 1]: prompt-level strict accuracy."""
        return 1.0 if self.prompt_strict else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_strict": self.prompt_strict,
            "prompt_loose": self.prompt_loose,
            "instructions": [asdict(v) for v in self.instructions],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> IFEvalScore:
        return cls(d["prompt_strict"], d["prompt_loose"], [InstructionVerdict(**v) for v in d.get("instructions", [])])


def score_response(case: IFEvalCase, response: str) -> IFEvalScore:
    """Score one response with the checker package's strict/loose protocol (a ``<think>``
    block is dropped first; an empty response fails every instruction).

    >>> c = IFEvalCase("x", "Answer in lowercase.", ["change_case:english_lowercase"], [{}])
    >>> score_response(c, "all lowercase here").instructions[0].strict
    True
    """
    ensure_offline_checkers()
    from if_verifiable.common import evaluate_instructions
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

    results, _ = evaluate_instructions(
        response=response or "",
        instruction_id_list=case.instruction_id_list,
        kwargs_list=case.kwargs,
        prompt=case.prompt,
        instruction_registry=INSTRUCTION_DICT,
    )
    by_id = {r.instruction_id: r for r in results}
    verdicts = [
        InstructionVerdict(
            iid,
            bool(by_id[iid].strict_pass) if iid in by_id else False,
            bool(by_id[iid].loose_pass) if iid in by_id else False,
        )
        for iid in case.instruction_id_list
    ]
    return IFEvalScore(
        prompt_strict=bool(verdicts) and all(v.strict for v in verdicts),
        prompt_loose=bool(verdicts) and all(v.loose for v in verdicts),
        instructions=verdicts,
    )


def accuracy(scores: Iterable[IFEvalScore]) -> dict[str, float]:
    """The four IFEval accuracies (0-1): prompt- and instruction-level, strict and loose.

    >>> s = [IFEvalScore(True, True, [InstructionVerdict("a", True, True)]),
    ...      IFEvalScore(False, True, [InstructionVerdict("a", True, True), InstructionVerdict("b", False, True)])]
    >>> accuracy(s)["instruction_strict"]
    0.6666666666666666
    """
    scores = list(scores)
    inst = [v for s in scores for v in s.instructions]
    n, m = len(scores), len(inst)
    return {
        "prompt_strict": sum(s.prompt_strict for s in scores) / n if n else 0.0,
        "prompt_loose": sum(s.prompt_loose for s in scores) / n if n else 0.0,
        "instruction_strict": sum(v.strict for v in inst) / m if m else 0.0,
        "instruction_loose": sum(v.loose for v in inst) / m if m else 0.0,
        "n_prompts": n,
        "n_instructions": m,
    }
