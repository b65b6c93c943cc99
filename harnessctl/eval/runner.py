"""Run suites against a model: concurrent, cached, retried, timed, resumable.

The runner is the one place with concurrency, checkpoints and retries; an episode itself is the
runtime's pure ``arun_episode`` (harness, case, model -> record) and its score is the
simulator's ``score_episode`` (record, case -> breakdown).

- **Concurrency**: ``jobs`` cases at a time on one asyncio loop (a semaphore), so a served model
  sees ``jobs`` requests in flight; in-process backends run in worker threads.
- **Cache**: model calls keyed by model, endpoint, messages, tools and settings, in
  ``.cache/harnessctl/model_calls.sqlite`` (errors never cached; ``cache=False`` turns it off).
- **Retries** on transport errors with backoff; a **per-case timeout** turns a stuck case into a
  recorded ``timeout`` result instead of a stuck run.
- **Checkpoints**: each result is appended to ``records.jsonl`` and flushed as the case ends;
  :func:`resume_eval` runs exactly the cases (and repeats) not on disk yet.

>>> cfg = EvalConfig(suites=["livestream"], model="oracle", limit=20)   # doctest: +SKIP
>>> outcome = run_eval(cfg)                                              # doctest: +SKIP
>>> outcome.summary["suites"]["livestream"]["score"]                     # doctest: +SKIP
100.0
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import platform
import subprocess
import time
import types
import typing
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from harnessctl.harness import load_harness
from harnessctl.harness.render import render_harness
from harnessctl.harness.store import HarnessStore
from harnessctl.models.base import GenerationSettings, ModelError, agenerate, cacheable
from harnessctl.models.registry import answers_instructions, memorised_surface, resolve_model, runs_checkpoint
from harnessctl.runtime.loop import arun_episode
from harnessctl.runtime.record import EpisodeRecord, ModelStep, Termination
from harnessctl.sim.scorer import score_episode  # importing the simulator registers oracle and oracle-blind

from .cache import CallCache, EvalBackend
from .ifeval import IFEvalCase, score_response
from .results import PASS_THRESHOLD, CaseResult
from .store import RunError, RunStore
from .suites import AGENT_SUITES, SUITES, SuiteItem, check_fits, file_sha256, load_suite, sample, suite_info
from .summary import summarize

DEFAULT_CACHE = Path(".cache") / "harnessctl" / "model_calls.sqlite"
#: Packages whose versions a manifest records.
_PACKAGES = ("harnessctl", "litellm", "transformers", "torch", "trl", "if-verifiable", "nltk", "rich", "typer")

Progress = Callable[[str, int, int], None]  # (suite, done, total)

#: Cases per suite an in-process model (``local:``, ``shipped:``) runs when no ``--limit`` is
#: given: an evenly spread sample, since every case costs seconds of CPU (``--all`` or
#: ``--limit 0``: every case).
IN_PROCESS_LIMIT = 100
#: A scaled case timeout is this many times a case's measured time with ``jobs`` in flight...
TIMEOUT_FACTOR = 4.0
#: ...and never below this many seconds (a first case, a busier minute, a longer answer).
MIN_CASE_TIMEOUT_S = 60.0


def default_limit(model: str, limit: int | None, *, all_cases: bool = False) -> tuple[int | None, bool]:
    """``(cases per suite, sampled by default)`` for a ``--limit`` as given: ``0`` or ``all_cases``
    mean every case (``None``); no limit on an in-process model means :data:`IN_PROCESS_LIMIT`.

    >>> default_limit("shipped:hat", None), default_limit("shipped:hat", 0), default_limit("openai/x", None)
    ((100, True), (None, False), (None, False))
    >>> default_limit("local:m", None, all_cases=True), default_limit("local:m", 5)
    ((None, False), (5, False))
    """
    if all_cases or limit == 0:
        return None, False
    if limit is None and runs_checkpoint(model):
        return IN_PROCESS_LIMIT, True
    return limit, False


def scaled_timeout(case_s: float, jobs: int) -> float:
    """The per-case timeout for a model whose case took ``case_s`` alone: with ``jobs`` cases
    sharing one in-process model a case may wait for the others' turns, so the timeout grows with
    both; the measurement is taken under the machine's load at the time.

    >>> scaled_timeout(0.2, 8), scaled_timeout(3.7, 8)
    (60.0, 118.4)
    """
    return round(max(MIN_CASE_TIMEOUT_S, TIMEOUT_FACTOR * case_s * jobs), 1)


@dataclass
class EvalConfig:
    """Everything that decides what a run does, recorded typed in its manifest (a resume reads
    it back with :meth:`from_dict`). Secrets are never part of it: ``api_key_env`` names the
    environment variable that holds the key."""

    suites: list[str] = field(default_factory=lambda: ["livestream"])
    model: str = "oracle"
    api_base: str | None = None
    api_key_env: str | None = None
    jobs: int = 8
    limit: int | None = None  # per suite, an evenly spread deterministic sample
    repeat: int = 1
    cache: bool = True
    cache_path: str = str(DEFAULT_CACHE)
    latency_budget_s: float = 15.0
    case_timeout_s: float = 120.0
    retries: int = 2
    harness_path: str = "harnesses/livecommerce"
    evals_dir: str = "evals"
    runs_dir: str = "runs"
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int = 0  # generation seed; repeat r uses seed + r
    #: Share of results (0-1) that may end in an error before the run counts as failed.
    max_error_share: float = 0.0
    #: ``limit`` is the in-process default (:data:`IN_PROCESS_LIMIT`), not one asked for.
    sampled: bool = False
    #: Set the case timeout from a timed preflight case (in-process models; :func:`scaled_timeout`).
    scale_timeout: bool = False
    #: Seconds the preflight case took alone, when it was timed.
    preflight_case_s: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.suites, str):
            self.suites = [self.suites]
        if "all" in self.suites:
            self.suites = list(SUITES)
        for s in self.suites:
            if s not in SUITES:
                raise ValueError(f"unknown suite {s!r}: choose livestream, variant, robustness, ifeval or all")
        if self.jobs < 1:
            raise ValueError(f"-j/--jobs must be at least 1, got {self.jobs}")
        if self.repeat < 1:
            raise ValueError(f"--repeat must be at least 1, got {self.repeat}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit must be at least 1, got {self.limit}")
        if self.case_timeout_s <= 0:
            raise ValueError("the per-case timeout must be positive")
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"--temperature must be in [0, 2], got {self.temperature:g}")
        if self.max_tokens < 1:
            raise ValueError(f"--max-tokens must be at least 1, got {self.max_tokens}")
        if self.retries < 0:
            raise ValueError(f"--retries must be at least 0, got {self.retries}")
        if self.latency_budget_s <= 0:
            raise ValueError("the latency budget must be positive")
        if not 0.0 <= self.max_error_share <= 1.0:
            raise ValueError(f"--max-error-share must be in [0, 1], got {self.max_error_share:g}")

    def use_model(self, model: str, limit: int | None = None, *, all_cases: bool = False) -> EvalConfig:
        """Run ``model``, with the cases per suite :func:`default_limit` gives ``limit`` as asked
        (``0`` or ``all_cases``: every case); refuses the oracle on IFEval alone (it has no answers
        for the prompts). Returns the config.

        >>> config = EvalConfig(model="").use_model("shipped:hat")
        >>> config.model, config.limit, config.sampled
        ('shipped:hat', 100, True)
        """
        self.model = model
        self.limit, self.sampled = default_limit(model, limit, all_cases=all_cases)
        if model == "oracle" and self.suites == ["ifeval"]:
            raise ValueError("the oracle has no answers for IFEval prompts: pass --model (a served or local model)")
        return self

    def settings(self, repeat: int) -> GenerationSettings:
        return GenerationSettings(
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed + repeat,
            timeout_s=self.case_timeout_s,
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalConfig:
        """A config from its manifest form, every field checked against its type (a damaged or
        redacted value is a ``ValueError`` naming the field, never a failure in every case).

        >>> EvalConfig.from_dict({"model": "oracle", "max_tokens": 48}).max_tokens
        48
        """
        hints = typing.get_type_hints(cls)
        values = {}
        for k, v in d.items():
            if k not in cls.__dataclass_fields__:
                continue
            if not _has_type(v, hints[k]):
                raise ValueError(f"setting {k!r} is {v!r}, not {_type_name(hints[k])}")
            values[k] = float(v) if hints[k] is float else v
        return cls(**values)


def _has_type(value: Any, hint: Any) -> bool:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return any(_has_type(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if typing.get_origin(hint) is list:
        (inner,) = typing.get_args(hint)
        return isinstance(value, list) and all(_has_type(v, inner) for v in value)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", type(None): "null"}


def _type_name(hint: Any) -> str:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return " or ".join(_type_name(h) for h in typing.get_args(hint))
    if typing.get_origin(hint) is list:
        return f"a list of {_type_name(typing.get_args(hint)[0]).split(' ', 1)[-1]}s"
    return _TYPE_NAMES.get(hint, getattr(hint, "__name__", str(hint)))


@dataclass
class EvalOutcome:
    store: RunStore
    summary: dict[str, Any]
    ran: int  # results produced by this call
    skipped: dict[str, str] = field(default_factory=dict)  # suite -> why it was not run


# -- planning -------------------------------------------------------------------------------------


def skipped_suites(config: EvalConfig) -> dict[str, str]:
    """Suites a model cannot take: the simulator's policies (its kind declares no
    ``answers_instructions``) know live-commerce cases, not general instructions."""
    if not answers_instructions(config.model) and "ifeval" in config.suites:
        return {"ifeval": "the oracle is the simulator's reference policy; it has no answers for general instructions"}
    return {}


def plan(config: EvalConfig) -> dict[str, list[SuiteItem]]:
    """The items each suite will run (after ``--limit``), in order."""
    skip = skipped_suites(config)
    return {s: sample(load_suite(s, config.evals_dir), config.limit) for s in config.suites if s not in skip}


# -- harnesses ------------------------------------------------------------------------------------


class HarnessResolver:
    """The harness each case runs under, built once per distinct spec and kept.

    A held-out variant is loaded from the suites' frozen variants in ``evals_dir`` when the
    harness under evaluation is the one they were frozen from, and regenerated by HSA on it
    otherwise (``evals_dir=None``: always regenerated); :attr:`variants` records which, per
    variant id (:func:`harnessctl.eval.variants.obtain_variant`).

    >>> resolver = HarnessResolver("harnesses/livecommerce", evals_dir="evals")
    >>> spec = load_suite("variant")[0].harness
    >>> resolver.get(spec).name, resolver.variants[spec["id"]]["source"]
    ('livecommerce', 'frozen')
    """

    def __init__(self, harness_path: str | Path, evals_dir: str | Path | None = None):
        self.harness_path = Path(harness_path)
        self.evals_dir = evals_dir
        self._cache: dict[str, Any] = {}
        self._rendered: dict[str, Any] = {}
        #: How each held-out variant was obtained, by id: ``{"source": "frozen", "file", "sha256"}``
        #: or ``{"source": "regenerated", "why"}``.
        self.variants: dict[str, dict[str, Any]] = {}

    def variant_record(self) -> dict[str, Any]:
        """What a run records about its variants: counts ``frozen`` / ``regenerated`` and each one's
        entry (empty when no case ran under a held-out variant)."""
        from .variants import provenance  # lazy: eval.variants (and HSA) stay off `harnessctl --help` start-up

        return provenance(self.variants) if self.variants else {}

    def get(self, spec: dict[str, Any] | None) -> Any:
        key = json.dumps(spec or {}, sort_keys=True)
        if key not in self._cache:
            self._cache[key] = self._build(spec or {})
        return self._cache[key]

    def rendered(self, spec: dict[str, Any] | None) -> Any:
        """The harness rendered once (system prompt + tool specs), shared by its cases."""
        key = json.dumps(spec or {}, sort_keys=True)
        if key not in self._rendered:
            self._rendered[key] = render_harness(self.get(spec))
        return self._rendered[key]

    def _build(self, spec: dict[str, Any]) -> Any:
        kind = spec.get("kind", "shipped")
        if kind == "shipped":
            return load_harness(self.harness_path)
        if kind == "rev":
            return HarnessStore(self.harness_path).resolve(str(spec["rev"])).harness
        if kind == "variant":
            from .variants import obtain_variant  # lazy: as in variant_record

            harness, how = obtain_variant(self.get(spec.get("base")), spec, self.evals_dir)
            self.variants[str(spec.get("id"))] = how
            return harness
        raise ValueError(f"unknown harness spec kind {kind!r} in a suite case (expected shipped, rev or variant)")


# -- manifest -------------------------------------------------------------------------------------


def _package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _git_commit(path: Path) -> tuple[str | None, bool | None]:
    """The commit of the repository holding ``path`` and whether the harness folder has edits."""
    try:
        top = path if path.is_dir() else path.parent
        commit = subprocess.run(
            ["git", "-C", str(top), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return None, None
        dirty = subprocess.run(
            ["git", "-C", str(top), "status", "--porcelain", "--", "."], capture_output=True, text=True, timeout=10
        )
        return commit.stdout.strip(), bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None, None


def build_manifest(
    config: EvalConfig, items: dict[str, list[SuiteItem]], harness: Any, variants: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A new run's manifest; ``variants``: how its held-out variants were obtained
    (:meth:`HarnessResolver.variant_record`), recorded under ``"variants"`` when given."""
    commit, dirty = _git_commit(Path(config.harness_path))
    manifest = {
        "suite": "+".join(config.suites) if len(config.suites) < 4 else "all",
        "model": config.model,
        "api_base": config.api_base,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "harness": {
            "name": getattr(harness, "name", None),
            "version": getattr(harness, "version", None),
            "path": config.harness_path,
            "commit": commit,
            "dirty": dirty,
        },
        # The harness-blind reference's memorised surface (None for any other model): a blind
        # reference is a different model for every surface it memorised.
        "reference": memorised_surface(config.model),
        "suites": {s: {**suite_info(s, config.evals_dir), "planned_cases": len(v)} for s, v in items.items()},
        "planned": {s: len(v) * config.repeat for s, v in items.items()},
        "case_ids": {s: [i.id for i in v] for s, v in items.items()},
        "seeds": {"generation": config.seed, "repeats": [config.seed + r for r in range(config.repeat)]},
        "config": asdict(config),
        "packages": _package_versions(),
    }
    if variants:
        manifest["variants"] = variants
    return manifest


# -- one case -------------------------------------------------------------------------------------


class CaseRunner:
    """Runs one (item, repeat) to a :class:`CaseResult`; never raises for a case's own failure."""

    def __init__(self, config: EvalConfig, backend: Any, resolver: HarnessResolver):
        self.config = config
        self.backend = backend
        self.resolver = resolver

    async def run(self, item: SuiteItem, repeat: int) -> CaseResult:
        started = time.perf_counter()
        try:
            if isinstance(item.case, IFEvalCase):
                coro = self._ifeval(item, repeat)
            else:
                coro = self._agent(item, repeat)
            return await asyncio.wait_for(coro, timeout=self.config.case_timeout_s)
        except TimeoutError:
            return self._failed(
                item,
                repeat,
                f"timeout after {self.config.case_timeout_s:g}s",
                Termination.TIMEOUT,
                time.perf_counter() - started,
            )
        except ModelError as e:
            return self._failed(
                item, repeat, f"model error: {e}", Termination.MODEL_ERROR, time.perf_counter() - started
            )
        except Exception as e:  # noqa: BLE001 - one broken case must not stop a 4,500-case run
            return self._failed(
                item, repeat, f"{type(e).__name__}: {e}", Termination.MODEL_ERROR, time.perf_counter() - started
            )

    def _failed(
        self, item: SuiteItem, repeat: int, error: str, termination: Termination, latency_s: float, **extra: Any
    ) -> CaseResult:
        """An errored case: scored 0, never a pass, its error kept (``extra``: the record, call counts)."""
        return CaseResult(
            suite=item.suite,
            case_id=item.id,
            repeat=repeat,
            intent=item.intent,
            families=item.families,
            variant=_variant_id(item),
            score=0.0,
            passed=False,
            failures=["error"],
            latency_s=latency_s,
            termination=termination.value,
            error=error[:500],
            **extra,
        )

    async def _agent(self, item: SuiteItem, repeat: int) -> CaseResult:
        harness = self.resolver.get(item.harness)
        backend = (
            self.backend.for_episode(item.case, harness) if isinstance(self.backend, EvalBackend) else self.backend
        )
        record: EpisodeRecord = await arun_episode(
            harness,
            item.case,
            backend,
            settings=self.config.settings(repeat),
            rendered=self.resolver.rendered(item.harness),
            deadline_s=self.config.case_timeout_s,
        )
        record.variant_id = record.variant_id or _variant_id(item)
        counts = _call_counts(backend)
        if record.termination in (Termination.MODEL_ERROR, Termination.TIMEOUT):
            # The model never finished the episode: an error, not a (partly) scored answer.
            errors = [s.error for s in record.model_steps if s.error]
            if record.termination == Termination.TIMEOUT:
                why = f"timeout after {self.config.case_timeout_s:g}s"
            else:
                why = errors[-1] if errors else "the model failed"
            return self._failed(
                item, repeat, str(why), record.termination, record.latency_s, record=_stored(record), **counts
            )
        breakdown = score_episode(record, item.case)
        total = float(breakdown.total)
        passed = bool(getattr(breakdown, "passed", total >= PASS_THRESHOLD))
        cached = isinstance(backend, EvalBackend) and backend.calls > 0 and backend.cache_hits == backend.calls
        return CaseResult(
            suite=item.suite,
            case_id=item.id,
            repeat=repeat,
            intent=item.intent,
            families=item.families,
            variant=_variant_id(item),
            score=total,
            passed=passed,
            components={k: float(v) for k, v in dict(breakdown.components).items()},
            failures=[str(f) for f in breakdown.failures],
            latency_s=record.latency_s,
            cached=cached,
            termination=record.termination.value
            if isinstance(record.termination, Termination)
            else str(record.termination),
            error=None,
            record=_stored(record),
            **counts,
            details={"failure_entries": list((getattr(breakdown, "details", None) or {}).get("failure_entries", []))},
        )

    async def _ifeval(self, item: SuiteItem, repeat: int) -> CaseResult:
        case: IFEvalCase = item.case  # type: ignore[assignment]
        backend = self.backend.for_episode(case, None) if isinstance(self.backend, EvalBackend) else self.backend
        messages = [{"role": "user", "content": case.prompt}]
        started = time.perf_counter()

        response = await agenerate(backend, messages, [], self.config.settings(repeat))
        latency = time.perf_counter() - started
        text = response.content or ""
        # Scored inline: a check takes about a millisecond, less than handing the GIL to a
        # worker thread and back would cost the other cases in flight.
        score = score_response(case, text)
        record = EpisodeRecord(
            case_id=case.id,
            harness="ifeval",
            model=self.config.model,
            messages=messages + [{"role": "assistant", "content": text}],
            model_steps=[
                ModelStep(
                    turn=0,
                    latency_s=latency,
                    prompt_tokens=response.prompt_tokens,
                    completion_tokens=response.completion_tokens,
                )
            ],
            reply=text,
            raw_reply=text,
            latency_s=latency,
        )
        cached = isinstance(backend, EvalBackend) and backend.calls > 0 and backend.cache_hits == backend.calls
        inst = score.instructions
        return CaseResult(
            suite=item.suite,
            case_id=case.id,
            repeat=repeat,
            intent=case.intent,
            families=item.families,
            score=score.total,
            passed=score.prompt_strict,
            components={
                "prompt_strict": float(score.prompt_strict),
                "prompt_loose": float(score.prompt_loose),
                "instruction_strict": sum(v.strict for v in inst) / len(inst) if inst else 0.0,
                "instruction_loose": sum(v.loose for v in inst) / len(inst) if inst else 0.0,
            },
            failures=[f"ifeval:{v.instruction_id}" for v in inst if not v.strict],
            latency_s=latency,
            cached=cached,
            termination=Termination.REPLY.value,
            record=record.to_dict(),
            details={"ifeval": score.to_dict()},
            **_call_counts(backend),
        )


def _stored(record: EpisodeRecord) -> dict[str, Any]:
    """The record as a run keeps it: ``record.to_dict()`` without the tool specs (the same for
    every case under a harness, and reproducible from the suite's harness spec and the
    manifest's commit). Built shallowly — the record is discarded after, and a deep
    ``asdict`` per case costs the event loop more than the rest of the bookkeeping together."""
    d: dict[str, Any] = {}
    for f in fields(record):
        if f.name == "tools":
            continue
        v = getattr(record, f.name)
        if f.name in ("model_steps", "tool_steps"):
            v = [dict(vars(step)) for step in v]
        elif isinstance(v, Termination):
            v = v.value
        d[f.name] = v
    return d


def _call_counts(backend: Any) -> dict[str, int]:
    if isinstance(backend, EvalBackend):
        return {"model_calls": backend.calls, "cache_hits": backend.cache_hits}
    return {}


def _variant_id(item: SuiteItem) -> str | None:
    if isinstance(item.case, IFEvalCase):
        return None
    return item.case.variant


# -- the run --------------------------------------------------------------------------------------


def make_backend(config: EvalConfig, backend: Any | None = None) -> EvalBackend:
    """The model, resolved from ``config.model`` (unless given), wrapped with cache and retries."""
    if backend is None:
        key_unset = config.api_key_env is not None and not os.environ.get(config.api_key_env)
        if config.api_base and not runs_checkpoint(config.model) and not key_unset:  # an unset key is said first
            # a dead endpoint is told now, not after the seconds litellm takes to load
            # lazy: litellm's backend module is off start-up; only a run with an api_base needs it
            from harnessctl.models.litellm_backend import check_reachable

            check_reachable(config.model, config.api_base)
        backend = resolve_model(
            config.model,
            api_base=config.api_base,
            api_key_env=config.api_key_env,
            timeout_s=config.case_timeout_s,
            max_retries=config.retries,
        )
        retries = 0  # the served backend retries transport errors itself
    else:
        retries = config.retries
    cache = CallCache(config.cache_path) if config.cache and cacheable(backend) else None
    return EvalBackend(backend, cache=cache, api_base=config.api_base, retries=retries)


def preflight(config: EvalConfig, backend: EvalBackend) -> None:
    """Check, before the first case, that the model can answer at all: the endpoint answers and
    serves this model name (served backends: their own ``preflight``), and ``max_tokens`` fits
    the model's context (in-process checkpoints). Raises :class:`ModelError` saying what to fix.
    The cache is not consulted: a cached run still needs a model for the cases not cached."""
    inner = backend.inner
    positions = getattr(inner, "max_positions", 0) or 0
    if positions and config.max_tokens >= positions:
        raise ModelError(
            f"{config.model}: --max-tokens {config.max_tokens} leaves no room for a prompt in the model's "
            f"{positions} positions; pass a smaller --max-tokens"
        )
    check = getattr(inner, "preflight", None)
    if check is not None:
        check(config.settings(0))


def run_estimate(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """How long a run's planned cases take one after another at its timed preflight case, or None
    when no case was timed (a served model, a timeout given): ``{cases, seconds, config}``.
    Batching cases in flight (``-j``) makes the run shorter; the progress bar shows the real rate.

    >>> run_estimate({"planned": {"variant": 1600}, "config": {"preflight_case_s": 2.0}})["seconds"]
    3200.0
    """
    config = manifest.get("config") or {}
    case_s = config.get("preflight_case_s")
    if not case_s:
        return None
    cases = sum((manifest.get("planned") or {}).values())
    return {"cases": cases, "seconds": round(cases * float(case_s), 1), "config": config}


async def time_case(config: EvalConfig, model: Any, resolver: HarnessResolver, item: SuiteItem) -> float:
    """Seconds ``item`` takes alone on ``model`` (no cache), run twice so that loading the weights
    and warming the prefix cache are not counted; the same number under the same load as the run."""
    runner = CaseRunner(replace(config, case_timeout_s=max(config.case_timeout_s, 600.0)), model, resolver)
    await runner.run(item, 0)
    started = time.perf_counter()
    await runner.run(item, 0)
    return round(time.perf_counter() - started, 3)


async def _run_pending(
    pending: list[tuple[SuiteItem, int]],
    runner: CaseRunner,
    store: RunStore,
    jobs: int,
    progress: Progress | None,
    totals: dict[str, int],
    done: dict[str, int],
) -> int:
    sem = asyncio.Semaphore(jobs)
    ran = 0

    async def one(item: SuiteItem, repeat: int) -> None:
        nonlocal ran
        async with sem:
            result = await runner.run(item, repeat)
        store.append(result)  # flushed before the next case is counted done
        ran += 1
        done[item.suite] += 1
        if progress:
            progress(item.suite, done[item.suite], totals[item.suite])

    tasks = [asyncio.create_task(one(item, r)) for item, r in pending]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
    return ran


def _pending(
    items: dict[str, list[SuiteItem]], repeat: int, done_keys: set[tuple[str, str, int]]
) -> list[tuple[SuiteItem, int]]:
    # Repeat-major order: a run stopped early has one full pass before the second begins.
    return [
        (item, r) for r in range(repeat) for s, v in items.items() for item in v if (s, item.id, r) not in done_keys
    ]


async def arun_eval(
    config: EvalConfig,
    *,
    backend: Any | None = None,
    progress: Progress | None = None,
    run_id: str | None = None,
    on_start: Callable[[RunStore], None] | None = None,
) -> EvalOutcome:
    """Start a new run: plan, write the manifest, run every case, write ``summary.json``.
    ``on_start`` gets the run folder as soon as it exists (to tell a person how to resume)."""
    items = plan(config)
    if not items:
        reasons = "; ".join(f"{s}: {why}" for s, why in skipped_suites(config).items())
        raise ValueError(f"nothing to run ({reasons})")
    resolver = HarnessResolver(config.harness_path, config.evals_dir)
    harness = resolver.get(None)
    for s, v in items.items():  # a suite written for another harness's skills and tools is refused
        check_fits(s, v, harness, config.harness_path)
    for v in items.values():  # build every harness (git versions, variants) before the clock starts
        for item in v:
            if item.harness is not None:
                resolver.get(item.harness)
    wrapped = make_backend(config, backend)
    if backend is None:  # a backend handed in is the caller's to vouch for
        preflight(config, wrapped)
    if config.scale_timeout and runs_checkpoint(config.model):
        first = next(iter(v[0] for v in items.values() if v))
        config.preflight_case_s = await time_case(config, wrapped.inner, resolver, first)
        config.case_timeout_s = scaled_timeout(config.preflight_case_s, config.jobs)
    manifest = build_manifest(config, items, harness, resolver.variant_record())
    store = RunStore.create(config.runs_dir, manifest, run_id=run_id)
    if on_start:
        on_start(store)
    return await _execute(config, items, wrapped, resolver, store, progress)


async def _execute(
    config: EvalConfig,
    items: dict[str, list[SuiteItem]],
    backend: EvalBackend,
    resolver: HarnessResolver,
    store: RunStore,
    progress: Progress | None,
) -> EvalOutcome:
    existing = store.results()
    # A case that ended in an error runs again: its new line supersedes the old one.
    done_keys = {r.key for r in existing if r.error is None}
    pending = _pending(items, config.repeat, done_keys)
    totals = {s: len(v) * config.repeat for s, v in items.items()}
    done = {s: sum(1 for r in existing if r.suite == s and r.key in done_keys) for s in items}
    if progress:
        for s in items:
            progress(s, done[s], totals[s])
    runner = CaseRunner(config, backend, resolver)
    try:
        ran = await _run_pending(pending, runner, store, config.jobs, progress, totals, done)
    finally:
        store.close()
        if backend.cache is not None:
            backend.cache.close()
    summary = summarize(store.results(), store.manifest, latency_budget_s=config.latency_budget_s)
    summary["skipped"] = skipped_suites(config)
    if resolver.variants:  # frozen or regenerated, per variant: never a silent choice
        summary["variants"] = resolver.variant_record()
    store.write_summary(summary)
    return EvalOutcome(store=store, summary=summary, ran=ran, skipped=skipped_suites(config))


async def arun_items(
    config: EvalConfig,
    items: dict[str, list[SuiteItem]],
    store: RunStore,
    *,
    backend: Any | None = None,
    progress: Progress | None = None,
) -> EvalOutcome:
    """Run any cases — ``items``, suite name -> items, named suites or not (a failing slice, an
    evolution suite) — into the run folder ``store`` with the runner's concurrency, cache,
    retries, timeouts and error accounting. Only the (case, repeat) pairs not on disk yet, or
    that ended in an error, run: called again on the same folder, it resumes. ``summary.json`` is
    written at the end. Without a ``backend`` the model of ``config`` is resolved and preflighted.
    An item runs (and is recorded) under the suite it is listed under, whatever its own ``suite``.

    >>> store = RunStore.create("runs", build_manifest(config, items, harness), run_id="slice")   # doctest: +SKIP
    >>> asyncio.run(arun_items(config, items, store)).summary["suites"]["livestream"]["score"]    # doctest: +SKIP
    """
    items = {s: [i if i.suite == s else replace(i, suite=s) for i in v] for s, v in items.items()}
    resolver = HarnessResolver(config.harness_path, config.evals_dir)
    for v in items.values():  # build every harness (git versions, variants) before the clock starts
        for item in v:
            resolver.get(item.harness)
    wrapped = make_backend(config, backend)
    if backend is None:  # a backend handed in is the caller's to vouch for
        preflight(config, wrapped)
    return await _execute(config, items, wrapped, resolver, store, progress)


def run_eval(
    config: EvalConfig,
    *,
    backend: Any | None = None,
    progress: Progress | None = None,
    run_id: str | None = None,
    on_start: Callable[[RunStore], None] | None = None,
) -> EvalOutcome:
    """Synchronous :func:`arun_eval`."""
    return asyncio.run(arun_eval(config, backend=backend, progress=progress, run_id=run_id, on_start=on_start))


async def aresume_eval(
    run: str | Path,
    *,
    runs_dir: str | Path = "runs",
    jobs: int | None = None,
    backend: Any | None = None,
    progress: Progress | None = None,
) -> EvalOutcome:
    """Finish a run that stopped (killed, interrupted, crashed): same plan, only the missing
    (case, repeat) pairs run. A torn last line is cut off first."""
    store = RunStore.open(run, runs_dir)
    manifest = store.checked_manifest()
    try:
        config = EvalConfig.from_dict(manifest["config"])
    except (ValueError, TypeError) as e:
        raise RunError(
            f"{store.root / 'manifest.json'}: {e}; this run cannot be resumed with its settings — start a new run"
        ) from None
    if jobs is not None:
        if jobs < 1:
            raise ValueError(f"-j/--jobs must be at least 1, got {jobs}")
        config.jobs = jobs
    for s, info in (manifest.get("suites") or {}).items():
        now = suite_info(s, config.evals_dir).get("sha256")
        if info.get("sha256") and now != info["sha256"]:
            raise RunError(
                f"suite {s} changed since run {store.run_id} started ({config.evals_dir}/{s}.jsonl has another hash); "
                "start a new run instead of resuming"
            )
    check_frozen_variants(manifest, store.run_id)
    items = plan(config)
    planned_ids = manifest.get("case_ids") or {}
    for s, v in items.items():
        if s in planned_ids and [i.id for i in v] != planned_ids[s]:
            raise RunError(f"the plan of suite {s} differs from run {store.run_id}'s manifest; start a new run")
    store.repair()
    return await arun_items(config, items, store, backend=backend, progress=progress)


def check_frozen_variants(manifest: dict[str, Any], run_id: str) -> None:
    """Refuse to resume a run whose frozen held-out variants changed on disk since it started: its
    finished cases ran under the old harnesses, the rest would run under new ones."""
    by_variant = (manifest.get("variants") or {}).get("by_variant") or {}
    for variant_id, entry in sorted(by_variant.items()):
        if entry.get("source") != "frozen" or not entry.get("sha256"):
            continue
        path = Path(entry.get("file") or "")
        now = file_sha256(path) if path.is_file() else None
        if now != entry["sha256"]:
            state = "is gone" if now is None else "has another hash"
            raise RunError(
                f"frozen variant {variant_id} changed since run {run_id} started ({path} {state}); "
                "start a new run instead of resuming"
            )


def resume_eval(
    run: str | Path,
    *,
    runs_dir: str | Path = "runs",
    jobs: int | None = None,
    backend: Any | None = None,
    progress: Progress | None = None,
) -> EvalOutcome:
    """Synchronous :func:`aresume_eval`."""
    return asyncio.run(aresume_eval(run, runs_dir=runs_dir, jobs=jobs, backend=backend, progress=progress))


__all__ = [
    "AGENT_SUITES",
    "CaseRunner",
    "EvalConfig",
    "EvalOutcome",
    "HarnessResolver",
    "IN_PROCESS_LIMIT",
    "arun_eval",
    "arun_items",
    "aresume_eval",
    "default_limit",
    "make_backend",
    "plan",
    "preflight",
    "resume_eval",
    "run_estimate",
    "run_eval",
    "scaled_timeout",
    "time_case",
]
