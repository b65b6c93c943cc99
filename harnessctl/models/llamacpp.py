"""An embedded model run by llama.cpp (``llama-cpp-python``): the same turns as :class:`LocalModel`,
one sequence at a time, several times faster to decode on a CPU.

``llamacpp:<file.gguf>`` loads a GGUF file (one :func:`~harnessctl.models.gguf_export.export_gguf`
wrote carries its chat template); ``llamacpp:<folder>`` takes a model or adapter folder, exports it
once to a cached GGUF (keyed by the folder's fingerprint, see
:func:`~harnessctl.models.gguf_export.cached_gguf_path`) and renders turns with the folder's own
tokenizer — so the prompt token ids are exactly :class:`LocalModel`'s.

Each turn renders the conversation with the Hugging Face tokenizer's chat template and ``tools=``,
hands the token ids to ``llama_cpp.Llama.generate``, which keeps the KV cache of the previous
request and recomputes only what follows the longest prefix the two share (an episode's earlier
turns, the rendered harness of the case before), samples greedily or per
:class:`GenerationSettings`, stops at the end-of-turn ids, at ``max_tokens`` and after a closed tool
call followed by something else (as :class:`LocalModel` does), and decodes with the Hugging Face
tokenizer. Requests run one at a time under a lock: llama.cpp's high-level API holds one sequence.

>>> m = LlamaCppModel("llamacpp:out/sft")                                       # doctest: +SKIP
>>> m.generate([{"role": "user", "content": "hi"}], [], GenerationSettings(max_tokens=8)).content  # doctest: +SKIP
'Hello! How can I help?'
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessctl.models._quiet import quiet_transformers
from harnessctl.models.adapters import is_adapter, resolve_adapter_base, tokenizer_source
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.gguf_export import cached_gguf_path, export_gguf, read_gguf_meta, source_fingerprint
from harnessctl.models.local import (
    THREADS_ENV,
    ContextLengthError,
    _after_calls,
    _first_line,
    _strip_special,
    _writes_tool_calls,
    collect_stop_ids,
    common_prefix,
    completion_response,
    render_prompt_ids,
)
from harnessctl.models.types import ModelResponse

PREFIX = "llamacpp:"
#: The weight type a folder is exported in when none is named: F16 wrote every greedy turn
#: transformers wrote on the SmolLM2 adapter (Q8_0: 41 of 46) and is fast enough (docs/models.md).
DEFAULT_TYPE = "f16"
#: The context llama.cpp allocates unless told otherwise (or the model's, when shorter): an
#: episode's longest prompt plus its reply, with room to spare.
DEFAULT_CONTEXT = 8192
INSTALL_HINT = "install llama-cpp-python (builds from source, ~3 min): pip install 'harnessctl[llamacpp]'"


def llamacpp_path(spec: str) -> Path:
    """The file or folder a ``llamacpp:<path>`` spec names."""
    return Path(spec[len(PREFIX) :] if spec.startswith(PREFIX) else spec).expanduser()


def llama_threads(threads: int | None = None) -> int:
    """llama.cpp's threads: ``threads``, else ``$HARNESSCTL_THREADS``, else one per core but one.

    The core left over runs the Python side (chat template, tokenizer, server). llama.cpp's threads
    wait for each other at every layer, so one that is descheduled stalls them all: on two shared
    cores, two threads were 4-200x slower than one whenever anything else ran (docs/models.md).
    """
    return threads or int(os.environ.get(THREADS_ENV, "0") or 0) or max(1, (os.cpu_count() or 1) - 1)


class LlamaCppModel:
    """A GGUF model in process through llama.cpp, behind the :class:`ModelBackend` interface.

    ``qtype`` is the weight type a folder is exported in (``f32``, ``f16``, ``q8_0``); a file is
    used as it is. ``threads``: see :func:`llama_threads`. ``n_ctx``: the positions llama.cpp
    allocates (the model's, at most :data:`DEFAULT_CONTEXT`, unless given).

    >>> m = LlamaCppModel("llamacpp:model.q8_0.gguf", threads=1)                 # doctest: +SKIP
    """

    def __init__(
        self,
        spec: str,
        *,
        qtype: str = DEFAULT_TYPE,
        threads: int | None = None,
        n_ctx: int | None = None,
        log: Callable[[str], None] | None = None,
    ):
        path = llamacpp_path(spec)
        self.name = f"{PREFIX}{path}"
        self.path = path
        try:
            import llama_cpp
        except ImportError:
            raise ModelError(f"{self.name}: {INSTALL_HINT}") from None
        if path.is_dir():
            self.gguf_path = self._exported(path, qtype, log)
            self.tokenizer, generation_eos = _folder_tokenizer(path)
        elif path.is_file() and path.suffix == ".gguf":
            self.gguf_path = path
            self.tokenizer, generation_eos = _file_tokenizer(path)
        else:
            raise ModelError(
                f"{self.name}: no such GGUF file or model folder (write one with "
                f"`harnessctl model export-gguf MODEL --out FILE.gguf`)"
            )
        if not self.tokenizer.chat_template:
            raise ModelError(f"{self.name}: no chat template; the embedded backend needs one with tools")
        meta = read_gguf_meta(self.gguf_path)
        context = int(meta.get("context_length") or DEFAULT_CONTEXT)
        self.max_positions = n_ctx or min(context, DEFAULT_CONTEXT)
        self.threads = llama_threads(threads)
        try:
            self.llm = llama_cpp.Llama(
                model_path=str(self.gguf_path),
                n_ctx=self.max_positions,
                n_batch=512,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                verbose=False,
            )
        except (ValueError, RuntimeError) as e:
            raise ModelError(f"{self.name}: llama.cpp cannot load {self.gguf_path}: {_first_line(e)}") from None
        self._stop_ids = collect_stop_ids(self.tokenizer, generation_eos, meta.get("eos_token_id"))
        self._tool_call_stop = _writes_tool_calls(self.tokenizer)
        self._lock = threading.Lock()
        #: Prompt tokens llama.cpp did not compute again because the request before shared them.
        self.cached_prefix_tokens = 0
        #: Prompt tokens computed (prefill), for the benchmarks' tokens/s.
        self.computed_prompt_tokens = 0
        self._last: list[int] = []

    def __repr__(self) -> str:
        return f"LlamaCppModel({self.name!r})"

    def for_episode(self, case: Any, harness: Any) -> LlamaCppModel:
        return self

    @staticmethod
    def _exported(folder: Path, qtype: str, log: Callable[[str], None] | None) -> Path:
        """The cached GGUF export of ``folder`` in ``qtype``, written on first use."""
        if not is_adapter(folder) and not (folder / "config.json").is_file():
            raise ModelError(f"{PREFIX}{folder}: not a model folder (no config.json or adapter_config.json)")
        target = cached_gguf_path(source_fingerprint(folder), qtype)
        if not target.is_file():
            if log:
                log(f"exporting {folder} to {target} ({qtype}, once)")
            export_gguf(folder, target, qtype=qtype)
        return target

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
        """Token ids of the rendered conversation, ending with the assistant's generation prompt."""
        return render_prompt_ids(self.tokenizer, messages, tools)

    def generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        settings: GenerationSettings,
        *,
        on_text: Callable[[str], None] | None = None,
    ) -> ModelResponse:
        """One assistant turn: content, parsed tool calls, prompt and completion token ids.
        ``on_text`` (the embedded server's streaming) gets the text so far after each token.

        >>> m.generate(msgs, tools, GenerationSettings(max_tokens=64)).tool_calls   # doctest: +SKIP
        """
        started = time.perf_counter()
        try:
            prompt = self.prompt_ids(messages, tools)
        except Exception as e:  # noqa: BLE001 - template errors are the caller's input problem
            raise ModelError(f"{self.name}: the chat template failed on these messages: {_first_line(e)}") from None
        if len(prompt) + settings.max_tokens > self.max_positions:
            raise ContextLengthError(
                f"{self.name}: prompt of {len(prompt)} tokens + max_tokens {settings.max_tokens} exceeds "
                f"the {self.max_positions} positions llama.cpp holds"
            )
        with self._lock:
            completion = self._complete(prompt, settings, on_text)
        return self._response(prompt, completion, started)

    async def agenerate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        """:meth:`generate` in a worker thread (requests still run one at a time)."""
        return await asyncio.to_thread(self.generate, messages, tools, settings)

    def _complete(
        self, prompt: list[int], settings: GenerationSettings, on_text: Callable[[str], None] | None
    ) -> list[int]:
        shared = common_prefix(self._last, prompt)
        # llama.cpp recomputes at least the prompt's last token, to have its logits
        reused = min(shared, len(prompt) - 1)
        self.cached_prefix_tokens += reused
        self.computed_prompt_tokens += len(prompt) - reused
        sampled = settings.temperature > 0
        if sampled:
            self.llm.set_seed(settings.seed if settings.seed is not None else int(time.time_ns() & 0x7FFFFFFF))
        completion: list[int] = []
        # reset=True (the default) is what keeps the longest common prefix: llama.cpp drops only
        # the KV entries after it and evaluates the rest
        tokens = self.llm.generate(
            prompt,
            temp=settings.temperature if sampled else 0.0,
            top_p=settings.top_p if sampled else 1.0,
            top_k=0,
            min_p=0.0,
            repeat_penalty=1.0,
        )
        for token in tokens:
            completion.append(int(token))
            if token in self._stop_ids or len(completion) >= settings.max_tokens:
                break
            if on_text is not None:
                on_text(_strip_special(self.tokenizer.decode(completion, skip_special_tokens=False), self.tokenizer))
            if self._tool_call_stop and _after_calls(
                self.tokenizer.decode(completion[-12:], skip_special_tokens=False)
            ):
                break
        tokens.close()
        self._last = prompt + completion
        return completion

    def _response(self, prompt: list[int], completion: list[int], started: float) -> ModelResponse:
        return completion_response(
            self.tokenizer,
            self._stop_ids,
            prompt,
            completion,
            cut_after_calls=self._tool_call_stop,
            logprobs=None,
            started=started,
        )


def _folder_tokenizer(folder: Path) -> tuple[Any, Any]:
    """``(tokenizer, generation eos)`` of a model or adapter folder (an adapter without its own
    tokenizer uses its base's), loaded as :class:`LocalModel` loads them."""
    from transformers import AutoTokenizer, GenerationConfig

    source: Path | str = folder
    config_from: Path | str = folder
    if is_adapter(folder):
        config_from = resolve_adapter_base(folder)
        source = tokenizer_source(folder, config_from)
    try:
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
            try:
                eos = GenerationConfig.from_pretrained(config_from, local_files_only=True).eos_token_id
            except OSError:
                eos = None
    except (OSError, ValueError) as e:
        raise ModelError(f"{PREFIX}{folder}: cannot load the tokenizer: {_first_line(e)}") from None
    return tokenizer, eos


def _file_tokenizer(path: Path) -> tuple[Any, Any]:
    """``(tokenizer, None)`` rebuilt from a GGUF file's vocabulary by transformers, with the chat
    template the file carries."""
    import contextlib
    import io

    from transformers import AutoTokenizer

    try:
        with quiet_transformers(), contextlib.redirect_stderr(io.StringIO()):
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    except (OSError, ValueError, KeyError) as e:
        raise ModelError(f"{PREFIX}{path}: cannot read the tokenizer in the file: {_first_line(e)}") from None
    template = read_gguf_meta(path).get("chat_template")
    if template:
        tokenizer.chat_template = template
    return tokenizer, None
