"""Trajectory datasets under harness variants: TRL-ready JSONL for supervised fine-tuning.

For each (case, variant) pair the oracle — or a teacher model — answers the case in the
simulator with the runtime *under that variant*, so every trajectory is consistent with its own
harness by construction (renamed tools called by their new names, replies within the perturbed
length limit). The scorer checks each one; only those that pass are kept (rejection sampling —
for the oracle a failed check means a variant broke the task, so it is counted too).

Pairs (deterministic in ``seed``):

- ``n`` cases from the simulator (``faults`` of them with a fault plan); ``val_share`` of the
  cases, and ``val_share`` of a pool of ``variants`` variants, go to validation: no case id and
  no variant id is in both files;
- training cases: ``canonical_share`` of them under the canonical (source) harness, the rest
  spread evenly over the training variants; validation cases over the validation variants (the
  canonical harness is a training "variant");
- ``fixed_harness=True`` writes the baseline instead: the same cases, all under the canonical
  harness (split by case only — there is one harness).

Variants live in memory (their manifests go to ``variants.jsonl``); ``hide_skills`` is applied
per case, protecting the skill the case needs.

Row format (one JSON object per line)::

    {"messages": [...OpenAI chat: system, user, assistant with tool_calls, tool...],
     "tools": "<JSON string of the OpenAI tool specs>",
     "meta": {"case_id", "intent", "harness", "harness_version", "variant_id", "source",
              "split", "score", "hidden_skills", "hash"}}

``tools`` is a JSON *string* and each ``tool_calls[].function.arguments`` is a JSON *string*
(the OpenAI wire format): ``datasets`` would otherwise merge the differing argument and schema
objects of different rows into one struct padded with nulls. TRL's SFT trainer parses a string
``tools`` column; Qwen-style chat templates print string arguments as they are.
:func:`chat_template_inputs` turns a row back into objects for templates that want them.

Interruptible and resumable: rows are appended and flushed as each pair ends, every pair is
logged in ``pairs.jsonl``; a rerun with the same spec skips logged pairs and known hashes.

>>> summary = build_trajectories(load_harness("harnesses/livecommerce"), "out/data",
...                              TrajectorySpec(n=5000))                # doctest: +SKIP
>>> summary.kept, summary.acceptance_rate                             # doctest: +SKIP
(5000, 1.0)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing as mp
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.harness.errors import HarnessError, Issue
from harnessctl.harness.model import Harness
from harnessctl.harness.render import render_harness
from harnessctl.models.registry import resolve_model
from harnessctl.runtime.loop import run_episode
from harnessctl.sim.cases import generate_cases
from harnessctl.sim.oracle import OracleModel
from harnessctl.sim.phrasings import check_phrasings
from harnessctl.sim.scorer import HARD_FAILURES, PASS_THRESHOLD, score_episode

from .feasibility import feasible_floors, harness_fingerprint
from .manifest import source_info
from .operators import OPERATORS, OpContext, derive_seed, resolve_operators, unhideable_skills
from .paraphrase import Paraphraser
from .paraphrasers import make_paraphraser
from .variants import DEFAULT_STRENGTH, Variant, VariantSpec, iter_variants
from .writer import default_jobs, ignore_interrupts

DATASET_SCHEMA_VERSION = 1
CANONICAL = "canonical"
TRAIN_FILE, VALIDATION_FILE = "train.jsonl", "validation.jsonl"
SPEC_FILE, PAIRS_FILE, VARIANTS_FILE, SUMMARY_FILE = "dataset.json", "pairs.jsonl", "variants.jsonl", "summary.json"
#: Kept when an oracle trajectory scores at least this (a perfect agent; lower = a broken variant).
ORACLE_MIN_SCORE = 0.99
#: Seed offset of the simulator cases of a dataset (cases and variants use separate streams).
_CASES_SALT = "trajectory-cases"

ProgressFn = Callable[[int, int, "TrajectorySummary"], None]


class DatasetOutputError(HarnessError):
    """The output folder holds another dataset (or something else)."""


@dataclass
class TrajectorySpec:
    """What dataset to build. The same spec always gives the same pairs and the same bytes
    (with the oracle; a served teacher is as deterministic as its sampling)."""

    n: int = 1000
    seed: int = 0
    variants: int = 50
    ops: list[str] = field(default_factory=lambda: resolve_operators(None))
    strength: float = DEFAULT_STRENGTH
    paraphraser: str = "lexicon"
    canonical_share: float = 0.3
    val_share: float = 0.1
    fixed_harness: bool = False
    faults: float = 0.2
    teacher: str | None = None  # None: the oracle; else a model string (see harnessctl.models.registry)
    min_score: float | None = None  # None: ORACLE_MIN_SCORE for the oracle, the scorer's pass mark for a teacher
    vary_wording: float = 0.0  # share of cases whose viewer message is reworded (see harnessctl.sim.wording)
    phrasings: dict[str, list[str]] | None = None  # message kind -> added templates (see harnessctl.sim.phrasings)
    #: The oracle opens each skill-loading turn with a ``<think>`` note quoting the catalog line of
    #: the skill it loads (``description : name``; see :class:`harnessctl.sim.oracle.OracleModel`).
    quote_skills: bool = False

    def __post_init__(self) -> None:
        self.ops = resolve_operators(self.ops)
        for name, value in (
            ("canonical_share", self.canonical_share),
            ("val_share", self.val_share),
            ("faults", self.faults),
            ("strength", self.strength),
            ("vary_wording", self.vary_wording),
        ):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        if self.quote_skills and self.teacher:
            raise ValueError("quote_skills writes the oracle's own notes: leave it off with a teacher")
        if self.val_share >= 1.0 and self.n:
            raise ValueError("val_share must be below 1: training needs cases too")
        if self.n < 0 or self.variants < 0:
            raise ValueError("n and variants must be >= 0")
        if not self.fixed_harness and self.canonical_share < 1.0 and self.variants < 1:
            raise ValueError("variants must be >= 1 unless canonical_share is 1 or fixed_harness is set")
        if self.phrasings is not None:
            issues = check_phrasings(self.phrasings)
            if issues:
                raise ValueError("; ".join(str(i) for i in issues))
            self.phrasings = {k: list(v) for k, v in self.phrasings.items()} or None

    @property
    def source(self) -> str:
        return "teacher" if self.teacher else "oracle"

    def variant_spec(self) -> VariantSpec:
        # Training data always draws from the training vocabulary; held-out surfaces are for eval.
        return VariantSpec(
            seed=self.seed, ops=self.ops, strength=self.strength, split="train", paraphraser=self.paraphraser
        )


@dataclass(frozen=True)
class Pair:
    """One (case, variant) pair: ``index`` is its place in the dataset plan."""

    index: int
    case_index: int
    variant_id: str  # CANONICAL or a variant id
    split: str  # train | validation


@dataclass
class TrajectorySummary:
    """Counts of one build (``summary.json``)."""

    out: str
    source: str
    pairs: int = 0
    attempted: int = 0
    kept: int = 0
    rejected: int = 0
    duplicates: int = 0
    skipped: int = 0  # finished in an earlier run
    train: int = 0
    validation: int = 0
    canonical_train: int = 0
    train_variants: int = 0
    validation_variants: int = 0
    mean_score: float = 0.0
    rejections: dict[str, int] = field(default_factory=dict)  # first failure -> count

    @property
    def acceptance_rate(self) -> float:
        """Share of attempted pairs whose trajectory passed the scorer (duplicates passed too)."""
        return round((self.kept + self.duplicates) / self.attempted, 4) if self.attempted else 1.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["acceptance_rate"] = self.acceptance_rate
        return d


# -- the plan -----------------------------------------------------------------------------------


def plan_pairs(spec: TrajectorySpec) -> tuple[list[Pair], list[str], list[str]]:
    """The pairs of a dataset, and the training / validation variant ids they use.

    >>> pairs, tv, vv = plan_pairs(TrajectorySpec(n=20, variants=10, val_share=0.1))
    >>> len(pairs), sorted({p.split for p in pairs}), set(tv) & set(vv)
    (20, ['train', 'validation'], set())
    """
    rng = random.Random(derive_seed("trajectory-plan", spec.seed, spec.n))
    order = list(range(spec.n))
    rng.shuffle(order)
    n_val = int(round(spec.val_share * spec.n))
    if spec.n > 1:
        n_val = min(n_val, spec.n - 1)
    val_cases = set(order[:n_val])
    vspec = spec.variant_spec()
    all_ids = [vspec.variant_id(i) for i in range(spec.variants)]
    if spec.fixed_harness:
        train_ids, val_ids = [], []
    else:
        k = max(1, int(round(spec.val_share * len(all_ids)))) if n_val and len(all_ids) > 1 else 0
        val_ids, train_ids = all_ids[len(all_ids) - k :], all_ids[: len(all_ids) - k]
        if not train_ids:  # one variant only: it serves training
            train_ids, val_ids = all_ids, []
    train_cases = [i for i in range(spec.n) if i not in val_cases]
    n_canonical = (
        len(train_cases) if spec.fixed_harness or not train_ids else int(round(spec.canonical_share * len(train_cases)))
    )
    canonical = set(rng.sample(train_cases, n_canonical))
    assign: dict[int, tuple[str, str]] = {}
    rest = [i for i in train_cases if i not in canonical]
    rng.shuffle(rest)
    for j, i in enumerate(rest):
        assign[i] = (train_ids[j % len(train_ids)], "train")
    for i in canonical:
        assign[i] = (CANONICAL, "train")
    val_list = sorted(val_cases)
    rng.shuffle(val_list)
    for j, i in enumerate(val_list):
        vid = CANONICAL if spec.fixed_harness or not val_ids else val_ids[j % len(val_ids)]
        assign[i] = (vid, "validation")
    pairs = [Pair(index=i, case_index=i, variant_id=assign[i][0], split=assign[i][1]) for i in range(spec.n)]
    used = {p.variant_id for p in pairs}
    return pairs, [v for v in train_ids if v in used], [v for v in val_ids if v in used]


def dataset_cases(spec: TrajectorySpec) -> list[Any]:
    """The simulator cases of a dataset (the same for the HSA and the fixed-harness builds)."""
    # Training templates only: the suites' viewer messages are held out (see sim.templates).
    return generate_cases(
        spec.n,
        seed=derive_seed(_CASES_SALT, spec.seed) % (2**31),
        faults=spec.faults or None,
        messages="train",
        vary_wording=spec.vary_wording,
        phrasings=spec.phrasings,
    )


# -- rows -----------------------------------------------------------------------------------------


def row_hash(messages_json: str, tools_json: str) -> str:
    """The dedup key of a trajectory: a hash of its serialized messages and tools."""
    digest = hashlib.sha256(messages_json.encode("utf-8"))
    digest.update(b"\x00" + tools_json.encode("utf-8"))
    return digest.hexdigest()[:24]


def _plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages with every tool-call ``arguments`` as a JSON string."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("content") is None:
            m["content"] = ""
        if m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                fn = dict(tc.get("function") or {})
                if not isinstance(fn.get("arguments"), str):
                    fn["arguments"] = json.dumps(fn.get("arguments") or {}, ensure_ascii=False)
                calls.append(
                    {
                        "id": str(tc.get("id", "")),
                        "type": "function",
                        "function": {"name": fn.get("name", ""), "arguments": fn["arguments"]},
                    }
                )
            m["tool_calls"] = calls
        out.append(m)
    return out


def chat_template_inputs(row: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(messages, tools)`` of a dataset row as objects, for ``tokenizer.apply_chat_template``.

    >>> msgs, tools = chat_template_inputs(row)                             # doctest: +SKIP
    >>> tokenizer.apply_chat_template(msgs, tools=tools, tokenize=False)    # doctest: +SKIP
    """
    tools = row["tools"]
    tools = json.loads(tools) if isinstance(tools, str) else tools
    messages = []
    for m in row["messages"]:
        m = {k: v for k, v in dict(m).items() if v is not None}
        if m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                fn = dict(tc["function"])
                if isinstance(fn.get("arguments"), str):
                    fn["arguments"] = json.loads(fn["arguments"] or "{}")
                calls.append({**{k: v for k, v in tc.items() if v is not None}, "function": fn})
            m["tool_calls"] = calls
        messages.append(m)
    return messages, tools


# -- running pairs --------------------------------------------------------------------------------


@dataclass
class _Runner:
    """Everything needed to run any pair of one build (shared with forked workers)."""

    source: Harness
    spec: TrajectorySpec
    cases: list[Any]
    variants: dict[str, Harness]
    variant_seeds: dict[str, int]
    model: Any
    min_score: float
    hide: bool
    _rendered: dict[tuple[str, tuple[str, ...]], tuple[Any, str]] = field(default_factory=dict)  # render + tools JSON
    _refs: dict[str, frozenset[str]] = field(default_factory=dict)

    def harness_for(self, pair: Pair, case: Any) -> tuple[Harness, list[str]]:
        if pair.variant_id == CANONICAL:
            return self.source, []
        base = self.variants[pair.variant_id]
        if not self.hide:
            return base, []
        protected = {case.expect.skill} if getattr(case.expect, "skill", None) else set()
        shallow = dataclasses.replace(base)  # new skill list only; elements stay shared (read-only)
        refs = self._refs.get(pair.variant_id)
        if refs is None:
            refs = self._refs[pair.variant_id] = frozenset(unhideable_skills(base))
        ctx = OpContext(
            split="train",
            strength=self.spec.strength,
            protected_skill_keys=frozenset(protected),
            referenced_skill_keys=refs,
        )
        OPERATORS["hide_skills"].fn(
            shallow, ctx, random.Random(derive_seed(self.variant_seeds[pair.variant_id], "hide_skills"))
        )
        kept = {s.key for s in shallow.skills}
        return shallow, [s.key for s in base.skills if s.key not in kept]

    def run(self, pair: Pair) -> dict[str, Any]:
        case = self.cases[pair.case_index]
        harness, hidden = self.harness_for(pair, case)
        key = (pair.variant_id, tuple(hidden))
        cached = self._rendered.get(key)
        if cached is None:
            r = render_harness(harness)
            cached = self._rendered[key] = (r, json.dumps(r.tools, ensure_ascii=False))
        rendered, tools = cached
        rec = run_episode(harness, case, self.model, rendered=rendered)
        score = score_episode(rec, case)
        ok = score.passed and score.total >= self.min_score
        result: dict[str, Any] = {
            "pair": pair.index,
            "case_id": case.id,
            "variant_id": pair.variant_id,
            "split": pair.split,
            "score": score.total,
            "status": "kept" if ok else "rejected",
        }
        if not ok:
            kinds = [f.split(":", 1)[0] for f in score.failures] or [f"score<{self.min_score}"]
            hard = [k for k in kinds if k in HARD_FAILURES]
            result["failure"] = (hard or kinds)[0]  # the worst reason first
            return result
        messages_json = json.dumps(_plain_messages(rec.messages), ensure_ascii=False)
        if rec.tools is not rendered.tools:  # the runtime showed other specs than rendered
            tools = json.dumps(rec.tools, ensure_ascii=False)
        digest = row_hash(messages_json, tools)
        meta = {
            "case_id": case.id,
            "intent": case.intent,
            "harness": self.source.name,
            "harness_version": self.source.version,
            "variant_id": pair.variant_id,
            "source": self.spec.source,
            "split": pair.split,
            "score": score.total,
            "hidden_skills": hidden,
            "hash": digest,
        }
        result["hash"] = digest
        # One serialization of the messages serves the hash and the row.
        result["line"] = (
            f'{{"messages": {messages_json}, "tools": {json.dumps(tools, ensure_ascii=False)}, '
            f'"meta": {json.dumps(meta, ensure_ascii=False)}}}\n'
        )
        return result


_RUNNER: _Runner | None = None


def _run_chunk(pairs: list[Pair]) -> list[dict[str, Any]]:
    assert _RUNNER is not None
    return [_RUNNER.run(p) for p in pairs]


def _chunks(items: list[Pair], size: int) -> Iterator[list[Pair]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


# -- the build ------------------------------------------------------------------------------------


def _spec_doc(spec: TrajectorySpec, source: Harness) -> dict[str, Any]:
    doc = asdict(spec)
    # Written only when used, so datasets built before the options existed still resume.
    if not spec.vary_wording:
        del doc["vary_wording"]
    if not spec.phrasings:
        del doc["phrasings"]
    if not spec.quote_skills:
        del doc["quote_skills"]
    return {
        "schema_version": DATASET_SCHEMA_VERSION,
        "spec": doc,
        "source_fingerprint": harness_fingerprint(source),
    }


def _prepare_out(out: Path, doc: dict[str, Any], force: bool) -> None:
    spec_path = out / SPEC_FILE
    if not out.exists():
        return
    if not out.is_dir():
        raise DatasetOutputError(Issue(str(out), "exists and is not a folder", hint="choose another --out"))
    if not spec_path.is_file():
        if any(out.iterdir()):
            raise DatasetOutputError(
                Issue(str(out), "folder is not empty and holds no dataset.json", hint="choose a new or empty --out")
            )
        return
    try:
        old = json.loads(spec_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DatasetOutputError(Issue(str(spec_path), f"unreadable ({e})", hint="choose a new --out")) from None
    if old == doc:
        return
    if not force:
        old_spec = old.get("spec", {})
        changed = sorted(k for k in set(doc["spec"]) | set(old_spec) if old_spec.get(k) != doc["spec"].get(k))
        what = (
            "the source harness changed"
            if old.get("source_fingerprint") != doc["source_fingerprint"]
            else "another spec"
        )
        raise DatasetOutputError(
            Issue(
                str(out),
                f"holds a dataset built with {what}" + (f" ({', '.join(changed)} differ)" if changed else ""),
                hint="rerun with the same settings to resume, pass --force to start over, or choose another --out",
            )
        )
    for name in (SPEC_FILE, PAIRS_FILE, VARIANTS_FILE, SUMMARY_FILE, TRAIN_FILE, VALIDATION_FILE):
        (out / name).unlink(missing_ok=True)


def _read_complete_lines(path: Path) -> list[str]:
    """Complete lines of a JSONL file; a torn last line (a kill mid-write) is cut off."""
    if not path.is_file():
        return []
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    if cut < len(data):
        with open(path, "r+b") as f:
            f.truncate(cut)
    return [line for line in data[:cut].decode("utf-8").splitlines() if line.strip()]


def build_trajectories(
    source: Harness,
    out: str | Path,
    spec: TrajectorySpec,
    *,
    force: bool = False,
    model: Any = None,
    paraphraser: Paraphraser | None = None,
    jobs: int | None = None,
    api_base: str | None = None,
    on_progress: ProgressFn | None = None,
) -> TrajectorySummary:
    """Build (or resume) the dataset ``spec`` describes under ``out``; returns its counts.

    ``model`` overrides the model ``spec.teacher`` names (any backend object: a trainer's
    policy, a scripted model). Oracle builds run in ``jobs`` forked workers (default: the
    usable CPUs); a teacher runs in this process, one episode at a time.
    """
    global _RUNNER

    out = Path(out)
    doc = _spec_doc(spec, source)
    _prepare_out(out, doc, force)
    out.mkdir(parents=True, exist_ok=True)
    spec_path = out / SPEC_FILE
    if not spec_path.is_file():
        spec_path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    if model is None:
        if spec.quote_skills:  # oracle only: the spec refuses it with a teacher
            model = OracleModel(quote_skills=True)
        else:
            model = resolve_model(spec.teacher or "oracle", api_base=api_base)
    if spec.min_score is not None:
        min_score = spec.min_score
    elif spec.teacher:
        min_score = PASS_THRESHOLD
    else:
        min_score = ORACLE_MIN_SCORE

    pairs, train_ids, val_ids = plan_pairs(spec)
    cases = dataset_cases(spec)
    used = train_ids + val_ids
    variants: dict[str, Variant] = {}
    if used:
        vspec = spec.variant_spec()
        index_of = {vspec.variant_id(i): i for i in range(spec.variants)}
        para = paraphraser or make_paraphraser(spec.paraphraser)
        floors = feasible_floors(source)
        meta = source_info(source)
        # hide_skills needs the case: it runs per pair (see _Runner.harness_for).
        shared = dataclasses.replace(vspec, ops=[o for o in vspec.ops if o != "hide_skills"])
        for v in iter_variants(
            source,
            shared,
            sorted(index_of[i] for i in used),
            paraphraser=para,
            constraint_floors=floors,
            source_meta=meta,
        ):
            variants[v.id] = v
        (out / VARIANTS_FILE).write_text(
            "".join(
                json.dumps(variants[i].manifest.to_dict(), sort_keys=True, ensure_ascii=False) + "\n"
                for i in sorted(variants)
            ),
            encoding="utf-8",
        )

    summary = TrajectorySummary(out=str(out), source=spec.source, pairs=len(pairs))
    summary.train_variants, summary.validation_variants = len(train_ids), len(val_ids)
    logged: dict[int, dict[str, Any]] = {}
    for line in _read_complete_lines(out / PAIRS_FILE):
        entry = json.loads(line)
        logged[int(entry["pair"])] = entry
    seen: set[str] = set()
    counts = {"train": 0, "validation": 0}
    canonical_train = 0
    pair_of_case = {cases[p.case_index].id: p for p in pairs}
    for name, split in ((TRAIN_FILE, "train"), (VALIDATION_FILE, "validation")):
        for line in _read_complete_lines(out / name):
            meta = json.loads(line)["meta"]
            seen.add(meta["hash"])
            counts[split] += 1
            canonical_train += split == "train" and meta["variant_id"] == CANONICAL
            p = pair_of_case.get(meta["case_id"])
            if p is not None and p.index not in logged:  # written, then killed before its log line
                logged[p.index] = {"pair": p.index, "status": "kept", "score": meta["score"]}
    todo = [p for p in pairs if p.index not in logged]
    summary.skipped = len(pairs) - len(todo)
    scores: list[float] = [float(e["score"]) for e in logged.values() if e.get("status") == "kept"]
    for e in logged.values():
        _count(summary, e)

    runner = _Runner(
        source=source,
        spec=spec,
        cases=cases,
        variants={k: v.harness for k, v in variants.items()},
        variant_seeds={k: v.manifest.seed for k, v in variants.items()},
        model=model,
        min_score=min_score,
        hide="hide_skills" in spec.ops,
    )
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if spec.teacher or getattr(model, "name", "") != "oracle" or "fork" not in mp.get_all_start_methods():
        jobs = 1  # a served teacher's client is not fork-safe; its concurrency is the server's
    _RUNNER = runner
    files = {
        "train": open(out / TRAIN_FILE, "a", encoding="utf-8"),
        "validation": open(out / VALIDATION_FILE, "a", encoding="utf-8"),
    }
    ledger = open(out / PAIRS_FILE, "a", encoding="utf-8")
    try:
        chunk = 64
        if jobs == 1 or len(todo) < 2 * chunk:
            results: Iterable[list[dict[str, Any]]] = map(_run_chunk, _chunks(todo, chunk))
            pool = None
        else:
            pool = mp.get_context("fork").Pool(jobs, initializer=ignore_interrupts)
            results = pool.imap(_run_chunk, _chunks(todo, chunk))
        try:
            for batch in results:
                for r in batch:
                    line = r.pop("line", None)
                    if line is not None:
                        if r["hash"] in seen:
                            r["status"] = "duplicate"
                        else:
                            seen.add(r["hash"])
                            files[r["split"]].write(line)
                            counts[r["split"]] += 1
                            canonical_train += r["split"] == "train" and r["variant_id"] == CANONICAL
                            scores.append(float(r["score"]))
                    _count(summary, r)
                    ledger.write(json.dumps(r, sort_keys=True) + "\n")
                for f in (*files.values(), ledger):
                    f.flush()
                if on_progress:
                    summary.train, summary.validation = counts["train"], counts["validation"]
                    on_progress(summary.attempted, len(pairs), summary)
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()
    finally:
        _RUNNER = None
        for f in (*files.values(), ledger):
            f.close()
    summary.train, summary.validation = counts["train"], counts["validation"]
    summary.canonical_train = canonical_train
    summary.mean_score = round(sum(scores) / len(scores), 4) if scores else 0.0
    (out / SUMMARY_FILE).write_text(json.dumps(summary.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return summary


def _count(summary: TrajectorySummary, entry: dict[str, Any]) -> None:
    summary.attempted += 1
    status = entry.get("status")
    if status == "kept":
        summary.kept += 1
    elif status == "duplicate":
        summary.duplicates += 1
    else:
        summary.rejected += 1
        reason = str(entry.get("failure", "failed"))
        summary.rejections[reason] = summary.rejections.get(reason, 0) + 1
