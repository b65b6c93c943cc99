"""Cost of loading, validating and rendering a harness, per call.

Each operation runs many times; the script prints the median time per call (µs), calls per
second, and the ratio to a baseline measured in the same run on the same machine:

- read (round-trip, and plain data as ``load_harness`` reads) / load / validate against ``json.loads`` of the same documents as JSON (the floor for
  turning bytes into data) and, when PyYAML with libyaml is installed, its C ``safe_load`` of
  the same YAML bytes (a fast YAML parser that keeps no comments);
- render against ``json.dumps`` of what render produces (the least a client does with it).

    python benchmarks/bench_harness.py [--harness harnesses/livecommerce] [--repeat 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessctl.harness import load_harness, read_documents, render_harness, validate_documents
from harnessctl.harness.check import check_harness_dir
from harnessctl.harness.loader import build_harness, harness_files
from harnessctl.harness.save import render_harness_files

ROOT = Path(__file__).resolve().parents[1]


def median_us(fn: Callable[[], Any], repeat: int, inner: int = 1) -> float:
    """Median over ``repeat`` samples of the time of one call, each sample timing ``inner`` calls."""
    fn()  # warm caches (schemas, validators, imports)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter_ns() - start) / inner / 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness", type=Path, default=ROOT / "harnesses" / "livecommerce")
    parser.add_argument("--repeat", type=int, default=200, help="samples per operation")
    args = parser.parse_args()
    root: Path = args.harness

    rels = harness_files(root)
    raw = {rel: (root / rel).read_bytes() for rel in rels}
    docs = read_documents(root)
    as_json = {rel: json.dumps(doc).encode() for rel, doc in docs.items()}
    harness = load_harness(root)
    rendered = render_harness(harness)
    backends = sorted({t.backend for t in harness.tools})  # the check runs, whatever is registered

    def parse_json() -> None:
        for data in as_json.values():
            json.loads(data)

    results: list[tuple[str, float, str, float]] = []
    baselines: dict[str, float] = {"json.loads": median_us(parse_json, args.repeat, inner=20)}
    try:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        name = "yaml.safe_load (libyaml)" if loader is not yaml.SafeLoader else "yaml.safe_load (pure)"

        def parse_pyyaml() -> None:
            for data in raw.values():
                yaml.load(data, Loader=loader)  # noqa: S506 - a safe loader

        baselines[name] = median_us(parse_pyyaml, args.repeat, inner=5)
    except ImportError:
        pass

    results.append(
        (
            "read_documents (ruamel round-trip, safe reader)",
            median_us(lambda: read_documents(root), args.repeat),
            "json.loads",
            0,
        )
    )
    results.append(
        (
            "read_documents(round_trip=False) (what load reads)",
            median_us(lambda: read_documents(root, round_trip=False), args.repeat),
            "json.loads",
            0,
        )
    )
    results.append(
        (
            "validate_documents (schemas + cross-file)",
            median_us(lambda: validate_documents(docs, backends=backends), args.repeat),
            "json.loads",
            0,
        )
    )
    results.append(
        (
            "build_harness (documents -> model)",
            median_us(lambda: build_harness(docs), args.repeat, inner=20),
            "json.loads",
            0,
        )
    )
    results.append(
        ("load_harness (read + validate + build)", median_us(lambda: load_harness(root), args.repeat), "json.loads", 0)
    )
    results.append(
        (
            "check_harness_dir (what `validate` runs)",
            median_us(lambda: check_harness_dir(root, backends=backends), args.repeat),
            "json.loads",
            0,
        )
    )
    results.append(
        (
            "render_harness_files (save, fresh)",
            median_us(lambda: render_harness_files(harness), max(20, args.repeat // 5)),
            "json.loads",
            0,
        )
    )

    def dump_rendered() -> None:
        json.dumps({"system": rendered.system_prompt, "tools": rendered.tools})

    baselines["json.dumps(rendered)"] = median_us(dump_rendered, args.repeat, inner=200)
    results.append(
        (
            "render_harness (prompt + tool specs)",
            median_us(lambda: render_harness(harness), args.repeat, inner=200),
            "json.dumps(rendered)",
            0,
        )
    )

    size = sum(len(b) for b in raw.values())
    print(f"harness: {root} — {len(rels)} files, {size:,} bytes; median of {args.repeat} samples per line\n")
    print(f"{'operation':52} {'µs/call':>11} {'calls/s':>11}   ratio to baseline")
    print("-" * 104)
    for name, us in baselines.items():
        print(f"{'baseline: ' + name:52} {us:11.1f} {1e6 / us:11.0f}")
    print("-" * 104)
    for name, us, base, _ in results:
        ratio = us / baselines[base]
        extra = ""
        pyyaml = next((k for k in baselines if k.startswith("yaml.safe_load")), None)
        if base == "json.loads" and pyyaml:
            extra = f", {us / baselines[pyyaml]:.1f}× {pyyaml}"
        print(f"{name:52} {us:11.1f} {1e6 / us:11.0f}   {ratio:.1f}× {base}{extra}")


if __name__ == "__main__":
    main()
