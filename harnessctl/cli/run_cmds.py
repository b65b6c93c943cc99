"""``harnessctl run | serve | model init``: one live turn, serving a model, building the tiny model.

- ``run --query "..."`` answers one viewer message with the harness and a model, in the
  simulator, and shows the skill loaded, each tool call and result, the reply, the score
  breakdown and the latency (``--json``: the record and the score as one object).
- ``serve MODEL`` serves a model over the OpenAI API: ``vllm serve`` with the hermes tool-call
  parser when vLLM and a GPU are present, the embedded server otherwise.
- ``model init`` builds the untrained tiny model (tokenizer, chat template, random weights).
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from harnessctl.eval.stats import parse_duration
from harnessctl.harness import load_harness
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.registry import TINY_MODEL_DIR, expand_model_spec, resolve_model
from harnessctl.sim.live import live_turn

from .common import (
    ApiBaseOpt,
    ApiKeyEnvOpt,
    CaseTimeoutOpt,
    HarnessOpt,
    JsonOpt,
    MaxTokensOpt,
    ModelOpt,
    RetriesOpt,
    TemperatureOpt,
    choose_model,
    resolve_harness_path,
)
from .output import CLIError, cli_errors, err, fail, out, print_json

model_app = typer.Typer(help="Build and inspect models.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("serve")(serve)
    app.add_typer(model_app, name="model")
    model_app.command("init")(model_init)


# -- run -----------------------------------------------------------------------------------


def run(
    query: Annotated[str, typer.Option("--query", "-q", help="The viewer's message.")],
    product: Annotated[
        str | None, typer.Option("--product", "-p", help="Catalog id of the product on screen, e.g. P001.")
    ] = None,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    harness: HarnessOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the simulated world and for sampling.")] = 0,
    temperature: TemperatureOpt = 0.0,
    max_tokens: MaxTokensOpt = 256,
    case_timeout: CaseTimeoutOpt = "120s",
    retries: RetriesOpt = 2,
    as_json: JsonOpt = False,
) -> None:
    """Answer one viewer message live and show every step, the score and the latency."""
    with cli_errors(LookupError, ValueError):  # an unknown product, an empty query
        path = resolve_harness_path(harness)
        spec = choose_model(model)
        try:
            timeout_s = parse_duration(case_timeout)
        except ValueError as e:
            raise CLIError(f"--case-timeout: {e}") from None
        settings = GenerationSettings(temperature=temperature, max_tokens=max_tokens, seed=seed, timeout_s=timeout_s)
        try:
            backend = resolve_model(
                spec, api_base=api_base, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=retries
            )
            turn = live_turn(
                query=query, product_id=product, harness_path=path, model=backend, seed=seed, settings=settings
            )
        except ModelError as e:
            raise CLIError(f"model: {e}") from None
    if as_json:
        print_json(turn.to_dict())
    else:
        _print_turn(turn)
    if turn.model_error:
        # The record is shown (it says what happened); the exit code says the model is unusable.
        _fail_model(turn.model_error, spec, api_base)


def _fail_model(error: str, spec: str, api_base: str | None) -> None:
    hint = ""
    if "Connection" in error or "Timeout" in error:
        hint = f"; is the server at {api_base} running? (harnessctl serve ...)" if api_base else ""
    fail(_escape(f"model {spec} failed: {error}{hint}"))


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _print_turn(turn: Any) -> None:
    record, score = turn.record, turn.score
    head = Text("model ", style="dim").append(record.model, style="bold cyan")
    head.append("  harness ", style="dim").append(
        f"{record.harness} {record.harness_version or ''}".strip(), style="bold"
    )
    head.append("  case ", style="dim").append(turn.case.id).append(f" ({turn.case.intent})", style="dim")
    out.print(head)
    out.print(Text("viewer: ", style="bold magenta").append(turn.case.query))
    if turn.case.context.product_id:
        out.print(Text("on screen: ", style="dim").append(turn.case.context.product_id))
    out.print(
        Text("skill loaded: ", style="bold").append(
            ", ".join(record.skills_loaded) or "none", style="green" if record.skills_loaded else "red"
        )
    )

    if record.tool_steps:
        out.print(Text("tool calls", style="bold"))
    else:
        out.print(Text("no tool calls", style="dim"))
    for i, s in enumerate(record.tool_steps, 1):
        # One line per call, cropped to the terminal: the record (--json) has everything.
        line = Text(f"{i:>2}. ", style="dim").append(s.name, style="bold")
        if s.key and s.key != s.name:
            line.append(f" ({s.key})", style="dim")
        if s.attempt > 1:
            line.append(f" retry {s.attempt}", style="yellow")
        line.append(f" {_short(s.arguments, 60)}").append(f"  {s.latency_s * 1000:.0f} ms", style="dim").append(" → ")
        if s.error:
            line.append(s.error, style="red")
        else:
            line.append(_short(s.result, 200), style="green")
        out.print(line, soft_wrap=False, no_wrap=True, overflow="ellipsis", crop=True)

    for m in record.model_steps:
        for problem in [*(m.parse_errors or []), *([m.error] if m.error else [])]:
            out.print(
                Text(f"model turn {m.turn}: ", style="yellow").append(problem),
                soft_wrap=False,
                no_wrap=True,
                overflow="ellipsis",
                crop=True,
            )

    reply = Text(record.reply or "(no reply)", style="bold" if record.reply else "red")
    out.print(Panel(reply, title="reply", title_align="left", expand=False), soft_wrap=False)
    out.print(Text(f"{len(record.reply)} chars · ended by {record.termination.value}", style="dim"))
    for g in record.guard_events:
        out.print(Text("guard: ", style="yellow").append(_short(g, 200)))

    table = Table(title="score", title_justify="left", expand=False)
    table.add_column("component")
    table.add_column("value", justify="right")
    for name, value in _score_items(score):
        style = "green" if value >= 0.999 else ("yellow" if value >= 0.5 else "red")
        table.add_row(name, Text(f"{value:.2f}", style=style))
    out.print(table, soft_wrap=False)
    failures = getattr(score, "failures", None) or []
    if failures:
        out.print(Text("failures: ", style="bold red").append(", ".join(map(str, failures))))
    model_s = sum(m.latency_s for m in record.model_steps)
    tools_s = sum(s.latency_s for s in record.tool_steps)
    out.print(
        Text("latency ", style="dim")
        .append(f"{record.latency_s * 1000:.0f} ms", style="bold")
        .append(
            f"  (model {model_s * 1000:.0f} ms over {len(record.model_steps)} turns, tools {tools_s * 1000:.0f} ms)",
            style="dim",
        )
    )


def _score_items(score: Any) -> list[tuple[str, float]]:
    d = score.to_dict() if hasattr(score, "to_dict") else dict(score)
    items = []
    total = d.get("total", d.get("score"))
    for k, v in (d.get("components") or d).items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in ("total", "score"):
            items.append((k, float(v)))
    if isinstance(total, (int, float)):
        items.append(("total", float(total)))
    return items


def _short(value: Any, width: int = 70) -> str:
    import json

    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())  # one line per table row
    return text if len(text) <= width else text[: width - 1] + "…"


# -- serve ---------------------------------------------------------------------------------


def _log_to_stderr() -> None:
    """The server's log lines (a client that disconnected, a failing backend) as one line each."""
    import logging

    logger = logging.getLogger("harnessctl.models.server")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def serve(
    model: Annotated[
        str | None,
        typer.Argument(
            help="local:<path>, a model folder, or (with vLLM) a model id. Default: as for `eval` (the oracle cannot be served)."
        ),
    ] = None,
    host: Annotated[
        str,
        typer.Option(
            "--host", help="Address to listen on. Loopback by default; anything else exposes the model to the network."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free port).")] = 8000,
    name: Annotated[
        str | None, typer.Option("--name", help="Model name clients ask for (default: the folder name).")
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option("--api-key-env", help="Require clients to send the key held in this environment variable."),
    ] = None,
    embedded: Annotated[
        bool, typer.Option("--embedded", help="Use the embedded server even when vLLM could run.")
    ] = False,
) -> None:
    """Serve a model over the OpenAI chat-completions API (vLLM on a GPU, else embedded)."""
    # lazy: the server and checkpoint backends stay off the `harnessctl --help` path
    from harnessctl.models.server import serve_model

    with cli_errors(LookupError, ValueError):
        api_key = _api_key(api_key_env)
        spec = _serve_spec(model) if model else choose_model(None)
        if spec == "oracle":
            raise CLIError(
                "the oracle answers known cases only (it reads the case, not the request), so it cannot be served; serve a model folder"
                + ("" if model else " (no MODEL given and no trained or shipped model found)")
            )
        if not _is_loopback(host):
            err.print(
                f"[yellow]warning:[/] listening on {host}: the model is reachable from the network"
                + ("" if api_key else "; consider --api-key-env")
            )
        _log_to_stderr()
        serve_model(
            spec,
            host=host,
            port=port,
            served_name=name,
            api_key=api_key,
            embedded=embedded,
            on_exec=lambda command: err.print(f"[dim]exec: {' '.join(command)}[/]"),
            on_listening=lambda server: _print_serving(server, api_key_env if api_key else None),
            on_stopped=lambda: err.print("[dim]stopped[/]"),
        )


def _print_serving(server: Any, api_key_env: str | None) -> None:
    """Where the embedded server listens and the options that use it."""
    out.print(
        Panel(
            Text.assemble(
                ("serving ", "dim"),
                (server.model_name, "bold cyan"),
                (" at ", "dim"),
                (server.url, "bold"),
                "\n",
                ("use it with: ", "dim"),
                f"--model openai/{server.model_name} --api-base {server.url}",
                ("" if not api_key_env else f" --api-key-env {api_key_env}"),
                "\n",
                ("embedded server (no vLLM/GPU here); Ctrl-C stops it", "dim"),
            ),
            expand=False,
        )
    )


def _serve_spec(model: str) -> str:
    if model.startswith("shipped:"):
        return expand_model_spec(model)
    if model == "oracle" or model.startswith("local:"):
        return model
    path = Path(model).expanduser()
    if path.is_dir():
        return f"local:{model}"
    if model.startswith(("/", "./", "../", "~")) or path.exists():
        # Meant as a folder: say what is wrong with it, not that it is no litellm string.
        what = "is not a folder" if path.exists() else "does not exist"
        raise CLIError(f"{model} {what}: serve a model folder (e.g. one made by `harnessctl model init --out PATH`)")
    return model


def _api_key(env_name: str | None) -> str | None:
    if env_name is None:
        return None
    value = os.environ.get(env_name)
    if not value:
        raise CLIError(f"environment variable {env_name} is not set (it should hold the API key)")
    return value


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# -- model init ----------------------------------------------------------------------------


def model_init(
    out_dir: Annotated[
        Path | None, typer.Option("--out", "-o", help="Folder to create. Default: .harnessctl/models/tiny")
    ] = None,
    harness: HarnessOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the corpus and the random weights.")] = 0,
    vocab_size: Annotated[
        int, typer.Option("--vocab-size", min=1, help="Largest BPE vocabulary (the corpus may yield fewer tokens).")
    ] = 4096,
    hidden: Annotated[int, typer.Option("--hidden", min=8, help="Model width.")] = 128,
    intermediate: Annotated[int, typer.Option("--intermediate", min=8, help="MLP width.")] = 256,
    layers: Annotated[int, typer.Option("--layers", min=1, help="Transformer layers.")] = 4,
    heads: Annotated[int, typer.Option("--heads", min=1, help="Attention heads.")] = 4,
    kv_heads: Annotated[
        int | None, typer.Option("--kv-heads", min=1, help="Key/value heads (default: --heads).")
    ] = None,
    max_positions: Annotated[
        int, typer.Option("--max-positions", min=256, help="Longest sequence, prompt + reply.")
    ] = 4096,
    conversations: Annotated[
        int, typer.Option("--conversations", min=1, help="Conversations in the tokenizer's corpus.")
    ] = 400,
    corpus: Annotated[
        str, typer.Option("--corpus", help="auto | oracle | harness: where the corpus comes from.")
    ] = "auto",
    force: Annotated[bool, typer.Option("--force", help="Replace the folder if it exists.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Build the tiny model from scratch, offline: tokenizer, chat template with tools, random weights."""
    # lazy: the tiny model builder stays off the `harnessctl --help` path
    from harnessctl.models.tiny import TinyModelConfig, build_tiny_model

    with cli_errors():
        target = out_dir or TINY_MODEL_DIR
        try:
            config = TinyModelConfig(
                seed=seed,
                vocab_size=vocab_size,
                hidden_size=hidden,
                intermediate_size=intermediate,
                num_layers=layers,
                num_heads=heads,
                num_kv_heads=kv_heads or heads,
                max_position_embeddings=max_positions,
                corpus_conversations=conversations,
                corpus_source=corpus,
            )
        except ValueError as e:
            raise CLIError(str(e)) from None
        h = load_harness(resolve_harness_path(harness))
        with err.status("building the tiny model", spinner="dots") as status:
            try:
                report = build_tiny_model(target, h, config, overwrite=force, progress=lambda msg: status.update(msg))
            except FileExistsError as e:
                raise CLIError(str(e)) from None
    if as_json:
        print_json(report.to_dict())
        return
    _print_tiny_model(report, config)


def _print_tiny_model(report: Any, config: Any) -> None:
    """The tiny model just built: its size, vocabulary, shape, corpus and build time; how to try it."""
    table = Table(title=f"tiny model → {report.path}", title_justify="left", show_header=False, expand=False)
    table.add_column(style="dim")
    table.add_column()
    table.add_row("parameters", f"{report.parameters:,}")
    table.add_row("vocabulary", f"{report.vocab_size:,} tokens")
    table.add_row(
        "shape", f"hidden {config.hidden_size}, {config.num_layers} layers, {config.num_heads} heads, tied embeddings"
    )
    table.add_row(
        "corpus",
        f"{report.corpus_conversations} {report.corpus_source} conversations, {report.corpus_chars:,} chars ({report.harness} {report.harness_version or ''})",
    )
    table.add_row("build time", ", ".join(f"{k} {v:.2f}s" for k, v in report.seconds.items()))
    out.print(table)
    out.print(
        Text("untrained: try it with ", style="dim").append(
            f'harnessctl run -q "how much?" --model local:{report.path}'
        )
    )
