"""Build the suite files from the simulator, the harness history, HSA and the IFEval checkers.

Deterministic: every random choice comes from a seed in :data:`~harnessctl.eval.suites.SEEDS`,
so ``harnessctl eval build-suites`` rewrites the same bytes. The builders only *describe* cases
(and, for variants, the seed and operators that make the harness); no episode is run. The one
thing built beside the cases is each held-out variant's harness, frozen as data in
``evals/variants/<spec id>.json`` (:func:`freeze_variants`), so that eval loads it instead of
running HSA again.

>>> index = build_all("evals", harness_path="harnesses/livecommerce")   # doctest: +SKIP
>>> index["suites"]["variant"]["n"]                                     # doctest: +SKIP
1600
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessctl.harness import load_harness
from harnessctl.harness.fileio import atomic_write
from harnessctl.harness.store import HarnessStore
from harnessctl.sim.case import Case
from harnessctl.sim.cases import generate_cases
from harnessctl.sim.task import FAULT_KINDS

from . import ifeval as ifeval_mod
from .perturb import KINDS as PERTURBATIONS
from .perturb import perturb
from .suites import (
    INDEX,
    SEEDS,
    SIZES,
    SUITE_FORMAT_VERSION,
    SUITES,
    SuiteItem,
    file_sha256,
    suite_path,
    write_suite,
)
from .variants import (
    OPERATOR_FAMILIES,
    VARIANTS_DIR,
    binding_constraints,
    freeze_variant,
    frozen_path,
    frozen_text,
    variant_spec,
    variant_specs,
)

#: The shipped history the variant suite replays (the current version is the livestream suite).
HISTORY_REVS = ("v1", "v2")
#: ``--ifeval-prompts google/IFEval`` fetches the official prompts with ``datasets`` (online only).
HUB_IFEVAL = "google/IFEval"

Progress = Callable[[str, int, int], None]


#: Which viewer-message templates the suites draw (see :mod:`harnessctl.sim.templates`): the
#: held-out side, always, for the suites a model is scored on; the training side only for a
#: control (``build-suites --messages train``): the same cases worded as training data words
#: them, so that a score gap between the two is the gap a model has on phrasings it never saw.
MESSAGE_SIDES = ("eval", "train")


def _generate(n: int, seed: int, suite: str, messages: str = "eval", **kwargs: Any) -> list[Case]:
    return list(generate_cases(n, seed, suite=suite, messages=messages, **kwargs))


def _tag(case: Case, suite: str, prefix: str, *tags: str) -> Case:
    case.id = f"{prefix}-{case.id}"
    case.tags = list(case.tags) + [t for t in tags if t not in case.tags]
    return case


def _supported(case: Case, harness: Any) -> bool:
    """The harness has every element the case needs (an old version may lack a skill or tool)."""
    keys_s = {s.key for s in harness.skills}
    keys_t = {t.key for t in harness.tools}
    if case.expect.skill is not None and case.expect.skill not in keys_s:
        return False
    return all(c.tool in keys_t for c in case.expect.calls)


def build_livestream(
    harness: Any, n: int = SIZES["livestream"], seed: int = SEEDS["livestream"], messages: str = "eval"
) -> list[SuiteItem]:
    """Viewer cases under the harness being evaluated."""
    cases = _generate(n, seed, "livestream", messages)
    return [SuiteItem("livestream", _tag(c, "livestream", "ls")) for c in cases]


def build_variant(
    harness: Any,
    harness_path: str | Path,
    n: int = SIZES["variant"],
    seed: int = SEEDS["variant"],
    n_variants: int = 40,
    messages: str = "eval",
) -> list[SuiteItem]:
    """Cases under held-out HSA variants (7/8) and under the shipped history's versions (1/8).
    Each held-out variant also binds the reply constraints (see
    :func:`~harnessctl.eval.variants.binding_constraints`).

    A variant case stores the variant's spec — seed, operators, strength, split; the harness
    it describes is frozen beside the suite by :func:`freeze_variants`.
    """
    rng = random.Random(seed)
    n_history = n // 8
    n_hsa = n - n_history
    items: list[SuiteItem] = []
    # Held-out variants: one operator family each (so by-family scores say which kind of change
    # hurts), then mixes of all families.
    specs = []
    for i in range(n_variants):
        fams = [OPERATOR_FAMILIES[i % len(OPERATOR_FAMILIES)]] if i < n_variants // 2 else list(OPERATOR_FAMILIES)
        vseed = seed * 1000 + i
        specs.append(
            variant_spec(
                seed=vseed, ops=fams, strength=0.5 if len(fams) == 1 else 0.7, bind=binding_constraints(harness, vseed)
            )
        )
    per_variant = n_hsa // n_variants
    cases = _generate(n_hsa, seed + 1, "variant", messages)
    for i, c in enumerate(cases):
        spec = specs[min(i // max(per_variant, 1), n_variants - 1)]
        c.variant = spec["id"]
        items.append(SuiteItem("variant", _tag(c, "variant", "var", *[f"op:{f}" for f in spec["ops"]]), spec))
    # The shipped history: the same kind of viewer traffic under each earlier version.
    store = HarnessStore(harness_path)
    per_rev = n_history // len(HISTORY_REVS)
    for j, rev in enumerate(HISTORY_REVS):
        old = store.resolve(rev).harness
        kept: list[Case] = []
        offset = 0
        while len(kept) < per_rev:
            batch = _generate(per_rev * 2, seed + 100 + 10 * j + offset, "variant", messages)
            kept.extend(c for c in batch if _supported(c, old))
            offset += 1
        for c in kept[:per_rev]:
            c.variant = f"history-{rev}"
            items.append(
                SuiteItem("variant", _tag(c, "variant", f"hist{rev}", f"history:{rev}"), {"kind": "rev", "rev": rev})
            )
    rng.shuffle(items)  # interleave so that --limit samples every source
    return items


def freeze_variants(harness: Any, items: list[SuiteItem]) -> dict[str, str]:
    """The frozen variant files of the variant suite's ``items``: file name -> text, one per
    distinct held-out spec, each made by HSA from ``harness`` (see :mod:`harnessctl.eval.variants`).

    >>> freeze_variants(None, [])
    {}
    """
    return {
        frozen_path(spec_id, ".").name: frozen_text(freeze_variant(harness, spec))
        for spec_id, spec in variant_specs(items).items()
    }


def write_frozen_variants(files: dict[str, str], evals_dir: str | Path) -> Path:
    """Write the frozen variant files into ``<evals_dir>/variants/`` and remove the ones no case
    names any more; returns the folder.

    >>> import tempfile
    >>> folder = write_frozen_variants({"heldout-tools-1.json": "{}"}, tempfile.mkdtemp())
    >>> [p.name for p in folder.iterdir()]
    ['heldout-tools-1.json']
    """
    folder = Path(evals_dir) / VARIANTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        atomic_write(folder / name, text)
    for old in folder.glob("*.json"):
        if old.name not in files:
            old.unlink()
    return folder


def build_robustness(
    harness: Any, n: int = SIZES["robustness"], seed: int = SEEDS["robustness"], messages: str = "eval"
) -> list[SuiteItem]:
    """Half tool faults (each kind on the first attempt of a needed tool, some on every attempt),
    half prompt perturbations."""
    n_faults = n // 2
    n_prompt = n - n_faults
    rng = random.Random(seed)
    items: list[SuiteItem] = []
    fault_cases = [
        c
        for c in _generate(n_faults * 2, seed, "robustness", messages)
        if any(call.required for call in c.expect.calls)
    ][:n_faults]
    for i, c in enumerate(fault_cases):
        kind = FAULT_KINDS[i % len(FAULT_KINDS)]
        needed = [call.tool for call in c.expect.calls if call.required]
        tool = rng.choice(needed)
        # Mostly one failed attempt then recovery; every fifth case the fault persists.
        persistent = i % 5 == 4
        c.faults = {tool: [kind] * (8 if persistent else 1)}
        tags = [f"fault:{kind}"] + (["fault:persistent"] if persistent else [])
        items.append(SuiteItem("robustness", _tag(c, "robustness", "rob", *tags)))
    for i, c in enumerate(_generate(n_prompt, seed + 1, "robustness", messages)):
        kind = PERTURBATIONS[i % len(PERTURBATIONS)]
        p = perturb(c, kind, seed=seed + i)
        items.append(SuiteItem("robustness", _tag(p, "robustness", "rob")))
    rng.shuffle(items)
    return items


def build_ifeval(
    n: int = SIZES["ifeval"], seed: int = SEEDS["ifeval"], prompts_file: str | Path | None = None
) -> list[SuiteItem]:
    """Official IFEval prompts from ``prompts_file`` when given (a local ``input_data.jsonl``, or
    ``google/IFEval`` to fetch them with ``datasets`` — online only), else generated ones."""
    if prompts_file and str(prompts_file) == HUB_IFEVAL and not Path(prompts_file).exists():
        cases = ifeval_mod.load_official_from_hub()
    elif prompts_file:
        cases = ifeval_mod.load_official(prompts_file)
    else:
        cases = ifeval_mod.build_cases(n, seed)
    return [SuiteItem("ifeval", c) for c in cases]


def build_all(
    evals_dir: str | Path = "evals",
    *,
    harness_path: str | Path = "harnesses/livecommerce",
    suites: list[str] | None = None,
    ifeval_prompts: str | Path | None = None,
    progress: Progress | None = None,
    messages: str = "eval",
) -> dict[str, Any]:
    """(Re)write the suite files, the variant suite's frozen variants (``evals/variants/``) and
    ``evals/suites.json``; returns the index. ``messages="train"``
    builds the control suites (viewer messages from the training side's templates), recorded as
    such in the index so that a run on them is never compared with a run on the real suites."""
    if messages not in MESSAGE_SIDES:
        raise ValueError(f"messages must be one of {', '.join(MESSAGE_SIDES)}, got {messages!r}")
    names = suites or list(SUITES)
    for s in names:
        if s not in SUITES:
            raise ValueError(f"unknown suite {s!r}: choose one of {', '.join(SUITES)}")
    harness = load_harness(harness_path)
    evals_dir = Path(evals_dir)
    index_path = evals_dir / INDEX
    index = json.loads(index_path.read_text(encoding="utf-8")) if index_path.is_file() else {}
    index.setdefault("format_version", SUITE_FORMAT_VERSION)
    index.setdefault("suites", {})
    # Every suite is built before the first file is written: a suite that cannot be built (the
    # variant suite outside git, say) leaves the folder as it was, not half rewritten.
    built: dict[str, list[SuiteItem]] = {}
    for k, s in enumerate(names):
        if progress:
            progress("build", k, len(names))
        if s == "livestream":
            built[s] = build_livestream(harness, messages=messages)
        elif s == "variant":
            built[s] = build_variant(harness, harness_path, messages=messages)
        elif s == "robustness":
            built[s] = build_robustness(harness, messages=messages)
        else:
            built[s] = build_ifeval(prompts_file=ifeval_prompts)
    frozen = freeze_variants(harness, built["variant"]) if "variant" in built else None
    for s, items in built.items():
        path = write_suite(s, items, evals_dir)
        index["suites"][s] = {
            "version": f"{SUITE_FORMAT_VERSION}.{SEEDS[s]}",
            "suites_version": SUITE_FORMAT_VERSION,
            "n": len(items),
            "seed": SEEDS[s],
            "source": "official IFEval prompts" if (s == "ifeval" and ifeval_prompts) else "generated",
            "sha256": file_sha256(path),
            # only the control says so: the real suites' index stays as it was
            **({"messages": messages} if messages != "eval" and s != "ifeval" else {}),
        }
    if frozen is not None:
        write_frozen_variants(frozen, evals_dir)
    index["format_version"] = SUITE_FORMAT_VERSION
    # Per suite its own; the whole set has one only when every suite was built at it.
    versions = {str(v.get("suites_version", str(v.get("version", "")).split(".")[0])) for v in index["suites"].values()}
    index["suites_version"] = versions.pop() if len(versions) == 1 else "mixed"
    index["suites"] = {k: index["suites"][k] for k in SUITES if k in index["suites"]}
    index_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(index_path, json.dumps(index, indent=2) + "\n")
    if progress:
        progress("build", len(names), len(names))
    return index


def main(argv: list[str] | None = None) -> int:
    """``python -m harnessctl.eval.build --write``: rebuild every suite in ./evals."""
    import argparse

    parser = argparse.ArgumentParser(description="Rebuild the evaluation suites deterministically.")
    parser.add_argument("--write", action="store_true", help="write the files (otherwise only count)")
    parser.add_argument("--evals-dir", default="evals")
    parser.add_argument("--harness", default="harnesses/livecommerce")
    parser.add_argument("--suite", action="append", choices=SUITES)
    args = parser.parse_args(argv)
    if not args.write:
        parser.error("pass --write to rebuild the files")
    index = build_all(args.evals_dir, harness_path=args.harness, suites=args.suite)
    for name, info in index["suites"].items():
        print(f"{name}: {info['n']} cases, sha256 {info['sha256'][:12]} ({suite_path(name, args.evals_dir)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
