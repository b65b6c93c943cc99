"""``harnessctl model export-gguf MODEL --out FILE [--type f16|q8_0]``: a model as one GGUF file.

Registered on the ``model`` group by :mod:`harnessctl.cli.model_cmds`; the work is
:func:`harnessctl.models.gguf_export.export_gguf`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import JsonOpt, checkpoint_folder
from .output import CLIError, cli_errors, out, print_json


def model_export_gguf(
    model: Annotated[
        str, typer.Argument(help="local:PATH, shipped:NAME or a model/adapter folder (an adapter is merged).")
    ],
    out_file: Annotated[Path, typer.Option("--out", help="The GGUF file to write.")],
    qtype: Annotated[str, typer.Option("--type", help="Weight type: f16, q8_0 (or f32).")] = "f16",
    as_json: JsonOpt = False,
) -> None:
    """Write a Llama-architecture model (SmolLM2 and its adapters) as a GGUF file for llama.cpp.

    The file carries the chat template; `--model llamacpp:FILE` runs it (`pip install 'harnessctl[llamacpp]'`)."""
    # lazy: the GGUF exporter stays off the `harnessctl --help` path
    from harnessctl.models.gguf_export import GGUF_TYPES, export_gguf

    with cli_errors():
        if qtype not in GGUF_TYPES:
            raise CLIError(f"--type {qtype}: choose one of {', '.join(GGUF_TYPES)}")
        folder = Path(checkpoint_folder(model))
        if not folder.is_dir():
            raise CLIError(f"{model}: no such model folder; name local:PATH, shipped:NAME or an adapter folder")
        if out_file.suffix != ".gguf":
            raise CLIError(f"--out {out_file}: name a file ending in .gguf")
        result = export_gguf(folder, out_file, qtype=qtype)
    if as_json:
        print_json(
            {
                "model": model,
                "out": str(result.path),
                "type": result.qtype,
                "bytes": result.bytes,
                "tokenizer_from": result.tokenizer_from,
                "fingerprint": result.fingerprint,
                "seconds": round(result.seconds, 2),
            }
        )
        return
    out.print(
        f"wrote [bold cyan]{result.path}[/] ({result.qtype}, {result.bytes / 1e6:.0f} MB, {result.seconds:.1f} s); "
        f"run it with --model llamacpp:{result.path}"
    )
