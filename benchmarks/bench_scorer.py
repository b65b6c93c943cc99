"""Benchmark of the scorer as an instrument: what it passes and fails, measured on real data.

1. Labelled replies (``tests/sim/data/labelled_replies.jsonl``): the share the scorer reads right
   on the correct side and on the wrong side (goal: at least 0.97 each), per batch; beside it the
   polarity set (``tests/sim/data/polarity_replies.jsonl``: rewordings and negations derived from
   oracle replies on livestream cases), each side and each family.
2. Probes built from the oracle on the livestream suite (see :mod:`harnessctl.sim.probes`): the
   oracle, its reply negated, reworded, padded past ``max_reply_chars``, and the harness-blind
   reference under a copy with tightened constraints.
3. Oracle vs oracle-blind per suite, and per variant family on the variant suite.
4. Overlap of viewer messages between the default 5,000-trajectory training set and each agent
   suite, beside the overlap the same generator gives without the held-out split (baseline).
5. The size of each suite.

    python benchmarks/bench_scorer.py [--limit N]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnessctl.augment.trajectories import TrajectorySpec, dataset_cases
from harnessctl.eval.runner import HarnessResolver
from harnessctl.eval.suites import AGENT_SUITES, load_suite, sample, suite_index
from harnessctl.harness import load_harness
from harnessctl.models.registry import resolve_model
from harnessctl.runtime import run_episode
from harnessctl.sim import score_episode
from harnessctl.sim.generate import generate_cases
from harnessctl.sim.meaning import states
from harnessctl.sim.probes import probe_table
from harnessctl.sim.templates import message_overlap

HARNESS = REPO / "harnesses" / "livecommerce"
EVALS = REPO / "evals"
LABELLED = REPO / "tests" / "sim" / "data" / "labelled_replies.jsonl"
POLARITY = REPO / "tests" / "sim" / "data" / "polarity_replies.jsonl"


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged_correct(r: dict) -> bool:
    """The scorer's reading of a labelled reply: every fact (one of each any-of group) stated, of
    its own product where the row names them, with the viewer's question where the row has it."""
    subj = r.get("subjects") or {}

    def said(f: str) -> bool:
        return states(f, r["reply"], subject=subj.get(f), others=list(subj.values()), question=r.get("query"))

    return all(said(f) for f in r["facts"]) and all(any(said(f) for f in g) for g in r["any_facts"])


def _sides(rows: list[dict]) -> str:
    parts = []
    for side in ("correct", "wrong"):
        side_rows = [r for r in rows if r["label"] == side]
        right = sum(judged_correct(r) == (side == "correct") for r in side_rows)
        parts.append(f"{side} {right}/{len(side_rows)} = {right / len(side_rows):.3f}" if side_rows else f"{side} -")
    return "   ".join(parts)


def polarity_accuracy() -> None:
    rows = _read(POLARITY)
    print(f"   polarity set: {len(rows)} over {len({r['intent'] for r in rows})} intents   {_sides(rows)}")
    families = collections.defaultdict(list)
    for r in rows:
        families[(r["label"], r["family"])].append(r)
    for (label, family), fam in sorted(families.items()):
        right = sum(judged_correct(r) == (label == "correct") for r in fam)
        print(f"     {label:7s} {family:13s} {right}/{len(fam)}")


def labelled_accuracy() -> None:
    rows = _read(LABELLED)
    print(f"1. labelled replies: {len(rows)} over {len({r['intent'] for r in rows})} intents")
    batches = ["all", *sorted({r.get("batch", "first") for r in rows})]
    for batch in batches:
        chosen = [r for r in rows if batch == "all" or r.get("batch", "first") == batch]
        print(f"   {batch:8s} " + _sides(chosen))
    polarity_accuracy()


def pass_rates(items: list, model_name: str, resolver: HarnessResolver) -> dict[str, tuple[int, int]]:
    model = resolve_model(f"oracle-blind:{HARNESS}" if model_name == "oracle-blind" else model_name)
    by: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for item in items:
        h = resolver.get(item.harness)
        b = score_episode(
            run_episode(h, item.case, model.for_episode(item.case, h), rendered=resolver.rendered(item.harness)),
            item.case,
        )
        spec = item.harness or {}
        if spec.get("kind") == "rev":
            group = f"history:{spec['rev']}"
        elif spec.get("kind") == "variant":
            group = "mix (all families)" if len(spec["ops"]) > 1 else f"family:{spec['ops'][0]}"
        else:
            group = None
        for key in ["all"] + ([group] if group else []):
            by[key][0] += b.passed
            by[key][1] += 1
    return {k: (a, n) for k, (a, n) in by.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="an evenly spread sample of N cases per suite")
    args = parser.parse_args()
    t0 = time.perf_counter()
    labelled_accuracy()

    shipped = load_harness(HARNESS)
    live = [i.case for i in sample(load_suite("livestream", EVALS), args.limit)]
    print(f"\n2. probes on the livestream suite ({len(live)} cases): pass rate %")
    for name, rate in probe_table(live, shipped).items():
        print(f"   {name:16s} {rate:6.1f}")

    print("\n3. oracle vs oracle-blind: pass rate % (passed/cases)")
    resolver = HarnessResolver(HARNESS, EVALS)  # the variant suite's frozen variants, as `harnessctl eval` loads them
    for suite in AGENT_SUITES:
        items = sample(load_suite(suite, EVALS), args.limit)
        a, b = pass_rates(items, "oracle", resolver), pass_rates(items, "oracle-blind", resolver)
        for key in sorted(a, key=lambda k: (k != "all", k)):
            (pa, n), (pb, _) = a[key], b[key]
            label = suite if key == "all" else f"  {key}"
            print(
                f"   {label:24s} oracle {100 * pa / n:5.1f}   oracle-blind {100 * pb / n:5.1f}   ({pa}/{n} vs {pb}/{n})"
            )

    print("\n4. viewer-message overlap with the default 5,000-trajectory training set (held-out side)")
    train = dataset_cases(TrajectorySpec(n=5000))
    for suite in AGENT_SUITES:
        held = [i.case for i in load_suite(suite, EVALS)]
        o = message_overlap(train, held)
        base = message_overlap(generate_cases(5000, seed=0), generate_cases(len(held), seed=51_001))
        print(
            f"   {suite:11s} verbatim {o['verbatim']}/{o['held_out_messages']} ({100 * o['verbatim_share']:.1f} %), "
            f"templates shared {o['templates_shared']}/{o['templates']} ({100 * o['templates_shared_share']:.1f} %), "
            f"(template, product) pairs shared {o['pairs_shared']}/{o['pairs']}"
        )
    print(
        f"   baseline without the split: verbatim {100 * base['verbatim_share']:.1f} %, templates shared "
        f"{100 * base['templates_shared_share']:.1f} %, pairs shared {100 * base['pairs_shared_share']:.1f} %"
    )

    index = suite_index(EVALS)
    print(
        f"\n5. suites version {index.get('suites_version')}: "
        + ", ".join(f"{k} {v['n']}" for k, v in index["suites"].items())
    )
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
