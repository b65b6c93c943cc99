"""The four evaluation suites: versioned JSONL files in ``evals/``, rebuilt deterministically.

=============  =====================================================================================
``livestream``  viewer cases under the harness being evaluated
``variant``     cases under held-out HSA variants (specs in the cases, harnesses frozen in
                ``evals/variants/``) and under the shipped history's versions (v1, v2)
``robustness``  tool faults (error, timeout, malformed, partial, empty) and prompt perturbations
                (typos, paraphrases, noisy chat, distracting context)
``ifeval``      general instruction following, scored by the IFEval checkers
=============  =====================================================================================

A line of an agent suite is a :class:`~harnessctl.sim.case.Case` (fields at their defaults
left out, to keep files small) plus ``"harness"``: how to obtain the harness the case runs
under (absent: the harness under evaluation; ``{"kind": "rev", "rev": "v1"}``: a version from
git; ``{"kind": "variant", "seed": .., "ops": [..], ...}``: a held-out HSA variant of it). A line
of ``ifeval`` is an :class:`~harnessctl.eval.ifeval.IFEvalCase`. ``evals/suites.json`` records
the suites version and each suite's version, case count, build seed and SHA-256; a run's
manifest copies it. Agent suites draw viewer messages from the held-out templates only
(``generate_cases(..., messages="eval")``); training data draws from the others.

Rebuild with ``harnessctl eval build-suites`` (or ``python -m harnessctl.eval.build --write``):
same code and seeds, same bytes.

>>> items = load_suite("livestream")                     # doctest: +SKIP
>>> items[0].case.intent, items[0].harness is None       # doctest: +SKIP
('price', True)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from harnessctl.errors import HarnessctlError
from harnessctl.harness.fileio import atomic_write
from harnessctl.sim.case import Case
from harnessctl.sim.jsonl import read_jsonl

from .ifeval import IFEvalCase

SUITES = ("livestream", "variant", "robustness", "ifeval")
AGENT_SUITES = ("livestream", "variant", "robustness")
INDEX = "suites.json"
#: The suites version: bumped when the way suites are built changes (cases regenerate
#: differently, so the same case id names another case). ``compare`` refuses runs of different
#: versions. 2: facts matched by meaning, constraints that bind, real ``partial`` faults, held-out
#: viewer messages, variants that bind their reply constraints, 1/8 history in ``variant``.
SUITE_FORMAT_VERSION = "2"

#: Build seeds, one per suite; suites never share a seed with each other or with training data
#: (the augment room's training seeds start elsewhere and held-out variants use their own split).
SEEDS = {"livestream": 51_001, "variant": 52_001, "robustness": 53_001, "ifeval": 54_001}
SIZES = {"livestream": 1200, "variant": 1600, "robustness": 1200, "ifeval": 1000}


class SuiteError(HarnessctlError, ValueError):
    """A suite file is missing or damaged; the message names file, line and what to do."""


@dataclass
class SuiteItem:
    """One case of a suite, with how to obtain its harness."""

    suite: str
    case: Case | IFEvalCase
    harness: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return self.case.id

    @property
    def intent(self) -> str:
        return self.case.intent

    @property
    def families(self) -> list[str]:
        """Operator families / perturbations / faults that shaped this case (for the by-family
        breakdown): the case's ``op:``, ``fault:``, ``perturb:`` and ``history:`` tags, or the
        instruction groups of an IFEval prompt."""
        if isinstance(self.case, IFEvalCase):
            return sorted({iid.split(":")[0] for iid in self.case.instruction_id_list})
        prefixes = ("op:", "fault:", "perturb:", "history:")
        return [t for t in self.case.tags if t.startswith(prefixes)]

    def to_line(self) -> str:
        if isinstance(self.case, IFEvalCase):
            d = self.case.to_dict()
        else:
            d = _compact(self.case)
            if self.harness is not None:
                d["harness"] = self.harness
        return json.dumps(d, ensure_ascii=False, separators=(",", ":"), sort_keys=False)


def _compact(case: Case) -> dict[str, Any]:
    """``Case.to_dict()`` without fields at their default values (``from_dict`` restores them)."""
    d = case.to_dict()
    defaults = {f.name: f.default for f in fields(Case)}
    out: dict[str, Any] = {}
    for k, v in d.items():
        if k in ("id", "intent", "query", "suite"):
            out[k] = v
        elif k == "context":
            ctx = {ck: cv for ck, cv in v.items() if cv not in (None, {}, [])}
            if ctx:
                out[k] = ctx
        elif k == "expect":
            exp = {}
            for ek, ev in v.items():
                if ek == "calls":
                    ev = [
                        {
                            ck: cv
                            for ck, cv in c.items()
                            if (ck, cv) not in (("required", True), ("round", 1)) and cv != {}
                        }
                        for c in ev
                    ]
                if ev not in (None, [], {}, False):
                    exp[ek] = ev
            out[k] = exp
        elif v not in (None, [], {}) and v != defaults.get(k):
            out[k] = v
    return out


def case_from_line(d: dict[str, Any]) -> Case:
    """The agent case of one parsed suite line; keys a case does not have (``harness``, a
    variant's own fields) are ignored. Raises ``TypeError``/``KeyError``/``ValueError`` on a bad line.

    >>> case_from_line({"id": "c1", "intent": "price", "query": "how much?", "harness": "base"}).id
    'c1'
    """
    known = {f.name for f in fields(Case)}
    return Case.from_dict({k: v for k, v in d.items() if k in known})


def suite_path(name: str, evals_dir: str | Path = "evals") -> Path:
    return Path(evals_dir) / f"{name}.jsonl"


def load_suite(name: str, evals_dir: str | Path = "evals") -> list[SuiteItem]:
    """Every case of a suite, in file order. Raises :class:`SuiteError` naming file and line."""
    if name not in SUITES:
        raise SuiteError(f"unknown suite {name!r}: choose one of {', '.join(SUITES)} or all")
    path = suite_path(name, evals_dir)
    rebuild = "harnessctl eval build-suites" + ("" if Path(evals_dir) == Path("evals") else f" --evals-dir {evals_dir}")
    if not path.is_file():
        raise SuiteError(f"{path}: suite file missing; rebuild the suites with `{rebuild}`")
    items: list[SuiteItem] = []
    seen: set[str] = set()

    def damaged(where: str, e: Exception) -> SuiteError:
        return SuiteError(f"{where}: not a {name} case ({e}); rebuild with `{rebuild}`")

    for lineno, d in read_jsonl(path, damaged):
        try:
            if name == "ifeval":
                item = SuiteItem(name, IFEvalCase.from_dict(d))
            else:
                item = SuiteItem(name, case_from_line(d), d.get("harness"))
        except (TypeError, KeyError, ValueError) as e:
            raise damaged(f"{path}:{lineno}", e) from None
        if item.id in seen:
            raise SuiteError(f"{path}:{lineno}: duplicate case id {item.id!r}")
        seen.add(item.id)
        items.append(item)
    return items


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def suite_index(evals_dir: str | Path = "evals") -> dict[str, Any]:
    """``evals/suites.json``: per suite its version, case count, seed and SHA-256."""
    path = Path(evals_dir) / INDEX
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def suite_info(name: str, evals_dir: str | Path = "evals") -> dict[str, Any]:
    """What a run's manifest records about a suite: version, seed, count and the file's hash."""
    path = suite_path(name, evals_dir)
    info = dict((suite_index(evals_dir).get("suites") or {}).get(name) or {})
    info["path"] = str(path)
    info["sha256"] = file_sha256(path) if path.is_file() else None
    return info


_GOLDEN = (5**0.5 - 1) / 2


def sample(items: list[SuiteItem], limit: int | None, seed: int = 0) -> list[SuiteItem]:
    """A deterministic, evenly spread sample of ``limit`` items (all of them when ``None``):
    spreading keeps every intent and family represented, which the first N would not. A non-zero
    ``seed`` shifts each pick within its stride, so other seeds draw other cases, still spread.

    >>> [i for i in sample(list(range(10)), 3)], [i for i in sample(list(range(10)), 3, seed=1)]
    ([0, 3, 6], [2, 5, 8])
    """
    if limit is None or limit >= len(items):
        return list(items)
    if limit <= 0:
        return []
    step = len(items) / limit
    offset = (seed * _GOLDEN) % 1.0  # seeds 1, 2, 3 ... land far apart within the stride
    return [items[min(len(items) - 1, int((i + offset) * step))] for i in range(limit)]


def write_suite(name: str, items: Iterable[SuiteItem], evals_dir: str | Path = "evals") -> Path:
    """Write a suite file atomically; returns its path."""
    path = suite_path(name, evals_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, "".join(item.to_line() + "\n" for item in items))
    return path


def missing_keys(items: Iterable[SuiteItem], harness: Any) -> dict[str, list[str]]:
    """The skill and tool keys the cases expect that ``harness`` lacks: ``{"skills": [...],
    "tools": [...]}``, empty lists when the suite fits it (IFEval prompts expect none).

    >>> from harnessctl.harness import load_harness   # doctest: +SKIP
    >>> missing_keys(load_suite("livestream"), load_harness("harnesses/myshop"))   # doctest: +SKIP
    {'skills': ['price_promo', ...], 'tools': ['get_promotions', ...]}
    """
    skills = {s.key for s in harness.skills}
    tools = {t.key for t in harness.tools}
    lack: dict[str, set[str]] = {"skills": set(), "tools": set()}
    for item in items:
        expect = getattr(item.case, "expect", None)
        if expect is None:
            continue
        if expect.skill and expect.skill not in skills:
            lack["skills"].add(expect.skill)
        lack["tools"].update(c.tool for c in expect.calls if c.tool not in tools)
    return {k: sorted(v) for k, v in lack.items()}


def check_fits(suite: str, items: list[SuiteItem], harness: Any, harness_path: str | Path) -> None:
    """Refuse, with a :class:`SuiteError` saying how to build suites for it, a suite whose cases
    expect skills or tools (by key) that the harness lacks: it would score the harness on work it
    cannot do."""
    lack = missing_keys(items, harness)
    if not (lack["skills"] or lack["tools"]):
        return
    named = "; ".join(f"{k}: {', '.join(v[:5])}{' …' if len(v) > 5 else ''}" for k, v in lack.items() if v)
    name = getattr(harness, "name", "the harness")
    raise SuiteError(
        f"suite {suite}: its cases expect what {name} ({harness_path}) lacks ({named}); they are written "
        f"for another harness. Build suites for it: `harnessctl eval build-suites -H {harness_path} "
        f"--evals-dir evals-{name}` where its keys match the simulator's, or write cases by its own keys "
        f"in evals-{name}/<suite>.jsonl; then pass --evals-dir evals-{name}"
    )


def find_evals_dir(evals_dir: str | Path, start: str | Path | None = None) -> Path:
    """``evals_dir`` as given when it exists or is absolute; a relative one missing here is looked
    for in the folders above (the project's ``evals/`` seen from inside a harness folder).

    >>> find_evals_dir("/nonexistent/evals")
    PosixPath('/nonexistent/evals')
    """
    given = Path(evals_dir)
    here = Path(start) if start is not None else Path.cwd()
    if given.is_absolute() or (here / given).is_dir():
        return given
    for folder in here.resolve().parents:
        if (folder / given).is_dir():
            return folder / given
    return given
