"""Test doubles and fixtures of the loop room.

:class:`ShortRuleSpanModel` is a deliberately weakened model: the simulator's oracle, except that
it reads only the first two rules of a skill — a call that a later rule asks for is never made.
Moving that rule up is a harness edit that fixes it, which is what the loop must find.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Self

from harnessctl.sim.oracle import OracleModel, OraclePolicy

_TOOL_REF = re.compile(r"\{\{\s*tool\.([A-Za-z0-9_]+)\s*\}\}")


def ignored_tools(harness: Any, skill_key: str | None, span: int = 2) -> set[str]:
    """Tools that only rules past the first ``span`` of the skill ask for."""
    if not skill_key:
        return set()
    try:
        rules = harness.skill(skill_key).rules
    except KeyError:
        return set()
    seen = {t for r in rules[:span] for t in _TOOL_REF.findall(r.text)}
    late = {t for r in rules[span:] for t in _TOOL_REF.findall(r.text)}
    return late - seen


class _ShortSpanPolicy(OraclePolicy):
    def __init__(self, case: Any, harness: Any, span: int) -> None:
        super().__init__(case, harness)
        self.span = span
        skipped = ignored_tools(harness, case.expect.skill, span)
        self.calls = [c for c in self.calls if c.tool not in skipped]

    def for_episode(self, case: Any, harness: Any) -> OraclePolicy:
        return _ShortSpanPolicy(case, harness, self.span)


class ShortRuleSpanModel(OracleModel):
    """The oracle, reading only the first ``span`` rules of each skill."""

    name = "short-rule-span"
    cacheable = False

    def __init__(self, span: int = 2) -> None:
        super().__init__()
        self.span = span

    def for_episode(self, case: Any, harness: Any) -> OraclePolicy:
        return _ShortSpanPolicy(case, harness, self.span)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def harness_repo(tmp_path: Path, source: Path) -> Path:
    """A fresh git repository holding a copy of ``source`` at ``harnesses/<name>``, one commit;
    returns the harness folder. Tests never touch the project's own repository."""
    root = tmp_path / "repo"
    folder = root / "harnesses" / source.name
    shutil.copytree(source, folder)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "loop@example.com")
    git(root, "config", "user.name", "loop tests")
    git(root, "add", ".")
    git(root, "commit", "-qm", "harness")
    return folder


def hc(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the real CLI (``python -m harnessctl.cli.main``) and return what it did."""
    import sys

    from tests.conftest import REPO_ROOT

    return subprocess.run(
        [sys.executable, "-m", "harnessctl.cli.main", *args],
        check=False,
        capture_output=True,
        text=True,
        cwd=cwd or REPO_ROOT,
        timeout=timeout,
    )


class StreamingStub:
    """An OpenAI-compatible endpoint that streams: ``first_s`` before the first token, then
    ``tokens`` chunks ``gap_s`` apart, and the usage in a last chunk (as vLLM does with
    ``stream_options.include_usage``). With ``refuse_stream`` it answers a streaming request
    with a 400, as servers without streaming do. Use as a context manager; ``url`` is its base URL."""

    def __init__(self, *, first_s: float = 0.05, tokens: int = 8, gap_s: float = 0.01, refuse_stream: bool = False):
        self.first_s, self.tokens, self.gap_s, self.refuse_stream = first_s, tokens, gap_s, refuse_stream
        self.requests: list[dict[str, Any]] = []

    def __enter__(self) -> Self:
        import json
        import threading
        import time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                stub.requests.append(body)
                base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body.get("model", "stub")}
                if body.get("stream") and stub.refuse_stream:
                    self._json(
                        400, {"error": {"message": "streaming is not supported; send stream=false", "code": 400}}
                    )
                    return
                time.sleep(stub.first_s)
                if not body.get("stream"):
                    self._json(
                        200,
                        {
                            **base,
                            "object": "chat.completion",
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": "hi " * stub.tokens},
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": {
                                "prompt_tokens": 10,
                                "completion_tokens": stub.tokens,
                                "total_tokens": 10 + stub.tokens,
                            },
                        },
                    )
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()

                def send(obj: Any) -> None:
                    self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
                    self.wfile.flush()

                for i in range(stub.tokens):
                    if i:
                        time.sleep(stub.gap_s)
                    send(
                        {
                            **base,
                            "choices": [
                                {"index": 0, "delta": {"role": "assistant", "content": "hi "}, "finish_reason": None}
                            ],
                        }
                    )
                send({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                send(
                    {
                        **base,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": 10,
                            "completion_tokens": stub.tokens,
                            "total_tokens": 10 + stub.tokens,
                        },
                    }
                )
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def run_cli(*args: str) -> Any:
    """Run ``harnessctl ARGS`` in process (typer's CliRunner on the real app): the same commands
    as :func:`hc` without paying the interpreter's start and imports again. Stdout and stderr
    come back apart (``.stdout``, ``.stderr``); an uncaught exception fails the test."""
    from typer.testing import CliRunner

    from harnessctl.cli.main import app

    return CliRunner().invoke(app, list(args), catch_exceptions=False)
