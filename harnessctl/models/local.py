"""An embedded model: a Hugging Face checkpoint run in process with transformers.

``local:<path>`` loads a model folder (``config.json``, weights, tokenizer with a chat template)
from disk only; nothing is downloaded. Each turn renders the conversation with the tokenizer's
own chat template and ``tools=``, generates, and parses tool calls from the text. Concurrent
turns (``eval -j N``, the embedded server's request threads) are batched: requests that wait
together and share their sampling settings run as one left-padded ``model.generate`` (up to
``max_batch`` rows), and each gets exactly the tokens it would get alone. The response
carries the prompt and completion token ids and the completion's log-probabilities: the seam a
trainer uses to drive the agent loop for RL.

>>> m = LocalModel("local:.harnessctl/models/tiny")                       # doctest: +SKIP
>>> r = m.generate([{"role": "user", "content": "hi"}], [], GenerationSettings(max_tokens=8))  # doctest: +SKIP
>>> len(r.completion_token_ids) <= 8                                      # doctest: +SKIP
True
"""

from __future__ import annotations

import json
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessctl.models._quiet import quiet_transformers
from harnessctl.models.adapters import is_adapter, load_adapter_model
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.batching import GATHER_S, BatchStats, RequestBatcher
from harnessctl.models.toolcall_text import parse_tool_calls
from harnessctl.models.types import ModelResponse

PREFIX = "local:"
#: The shortest prefix shared by a batch's prompts that is computed once for all of them.
MIN_SHARED_PREFIX = 64
#: Memory the prefix cache may hold (MiB), unless told otherwise: about 40 turns of a 135 M-parameter
#: model (46 KB per token in float32, ~1,100 tokens a turn) — every episode of an ``eval -j 16`` twice
#: over — and thousands of the tiny model's.
DEFAULT_PREFIX_CACHE_MB = 2048
THREADS_ENV = "HARNESSCTL_THREADS"
#: Markers kept in decoded text even when a tokenizer lists them as special.
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"
_KEEP = frozenset({TOOL_CALL_OPEN, TOOL_CALL_CLOSE, "<think>", "</think>"})


class ContextLengthError(ModelError):
    """The prompt plus ``max_tokens`` do not fit the model's positions: no retry can help."""


def local_path(spec: str) -> Path:
    """The folder named by a ``local:<path>`` spec (or a bare path)."""
    return Path(spec[len(PREFIX) :] if spec.startswith(PREFIX) else spec).expanduser()


class LocalModel:
    """A transformers causal LM from a local folder. One worker thread runs the model; concurrent
    ``generate`` calls that can share a batch (:func:`batch_key`) run together, up to
    ``max_batch`` at a time (``1``: one at a time), after waiting up to ``gather_s`` for company.
    ``return_logprobs`` adds the log-probability of each generated token under the model's
    unprocessed distribution (temperature 1).

    >>> m = LocalModel("local:.harnessctl/models/tiny", max_batch=8)            # doctest: +SKIP
    """

    def __init__(
        self,
        spec: str,
        *,
        device: str = "cpu",
        dtype: str | None = None,
        return_logprobs: bool = True,
        max_batch: int = 16,
        gather_s: float = GATHER_S,
        prefix_cache_mb: int | None = None,
        threads: int | None = None,
    ):
        path = local_path(spec)
        self.name = f"{PREFIX}{path}"
        self.path = path
        self.return_logprobs = return_logprobs
        if not path.is_dir():
            raise ModelError(f"{self.name}: no such model folder (build one with `harnessctl model init --out {path}`)")
        adapter = is_adapter(path)
        if not adapter and not (path / "config.json").is_file():
            raise ModelError(
                f"{self.name}: not a model folder (no config.json or adapter_config.json); expected a "
                "save_pretrained() checkpoint or an adapter written by `harnessctl train`"
            )
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise ModelError(
                f"{self.name}: the embedded backend needs torch and transformers ({e}); install harnessctl[train]"
            ) from None
        set_threads(threads)
        torch_dtype = getattr(torch, dtype) if dtype else (torch.float32 if adapter else None)
        try:
            with quiet_transformers():
                if adapter:
                    self.model, self.tokenizer = load_adapter_model(path, dtype=torch_dtype)
                    self.model.to(device)
                else:
                    self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
                    self.model = AutoModelForCausalLM.from_pretrained(
                        path, local_files_only=True, dtype=torch_dtype
                    ).to(device)
        except (OSError, ValueError) as e:
            raise ModelError(f"{self.name}: cannot load the checkpoint: {_first_line(e)}") from None
        if not self.tokenizer.chat_template:
            raise ModelError(
                f"{self.name}: the tokenizer has no chat template; the embedded backend needs one with tools"
            )
        self.model.eval()
        self.device = device
        self._torch = torch
        self._stop_ids = stop_token_ids(self.tokenizer, self.model)
        if self.tokenizer.pad_token_id is None:  # left padding needs one; a stop token is never attended
            self.tokenizer.pad_token = self.tokenizer.convert_ids_to_tokens(self._stop_ids[0])
        self._pad_id = self.tokenizer.pad_token_id
        #: Prompt tokens a batch did not compute again because its rows share them.
        self.shared_prefix_tokens = 0
        #: Prompt tokens taken from the prefix cache instead of computed (turns and cases before).
        self.cached_prefix_tokens = 0
        budget = DEFAULT_PREFIX_CACHE_MB if prefix_cache_mb is None else prefix_cache_mb
        self.prefix_cache = PrefixCache(budget * (1 << 20)) if budget > 0 else None
        self._tool_call_stop = _writes_tool_calls(self.tokenizer)
        self._batcher = RequestBatcher(self._run_batch, max_batch=max_batch, gather_s=gather_s, name="local-model")
        self.max_positions = int(getattr(self.model.config, "max_position_embeddings", 0) or 0)

    def __repr__(self) -> str:
        return f"LocalModel({self.name!r})"

    def for_episode(self, case: Any, harness: Any) -> LocalModel:
        return self

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
        """One assistant turn: content, parsed tool calls, token ids and log-probabilities.

        Safe to call from many threads at once: concurrent calls that can share a batch (see
        :func:`batch_key`) run as one ``model.generate``, each getting what it would get alone.

        ``on_text``, when given, is called as the tokens come (transformers' ``TextStreamer``
        decoding, a word at a time) with the completion's text so far, turn markers removed and
        tool-call blocks still in: the embedded server streams from it. A streamed call runs alone,
        and ``on_text`` is called from the model's worker thread.

        >>> m.generate(msgs, [], GenerationSettings(max_tokens=16), on_text=print)   # doctest: +SKIP
        """
        request = _Request(messages, tools, settings, on_text, time.perf_counter())
        return self._batcher.call(request, batch_key(settings, streaming=on_text is not None))

    async def agenerate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        """:meth:`generate` for an asyncio caller: the request waits in the batch queue without a
        thread of its own, so ``eval -j 8`` puts eight requests in one batch.

        >>> responses = await asyncio.gather(*(m.agenerate(msgs, [], s) for msgs in chats))   # doctest: +SKIP
        """
        request = _Request(messages, tools, settings, None, time.perf_counter())
        return await self._batcher.acall(request, batch_key(settings))

    @property
    def batch_stats(self) -> BatchStats:
        """How many requests and batches this model has run, by batch size."""
        return self._batcher.stats

    # -- the worker's side ------------------------------------------------------------------------

    def _prompt(self, request: _Request) -> list[int]:
        try:
            prompt = self.prompt_ids(request.messages, request.tools)
        except Exception as e:  # noqa: BLE001 - template errors are the caller's input problem
            raise ModelError(f"{self.name}: the chat template failed on these messages: {_first_line(e)}") from None
        max_tokens = request.settings.max_tokens
        if self.max_positions and len(prompt) + max_tokens > self.max_positions:
            raise ContextLengthError(
                f"{self.name}: prompt of {len(prompt)} tokens + max_tokens {max_tokens} exceeds "
                f"the model's {self.max_positions} positions"
            )
        return prompt

    def _run_batch(self, requests: list[_Request]) -> list[ModelResponse | Exception]:
        """The batcher's ``run``: render every prompt (a request that fails here fails alone),
        then generate the rest as one batch."""
        results: list[ModelResponse | Exception | None] = [None] * len(requests)
        prompts: list[list[int]] = []
        rows: list[int] = []
        for i, request in enumerate(requests):
            try:
                prompts.append(self._prompt(request))
                rows.append(i)
            except ModelError as e:
                results[i] = e
        if rows:
            for i, response in zip(rows, self._generate_rows([requests[i] for i in rows], prompts), strict=True):
                results[i] = response
        return results  # type: ignore[return-value]

    def _generate_rows(self, requests: list[_Request], prompts: list[list[int]]) -> list[ModelResponse]:
        """One ``model.generate`` over left-padded prompts that share their settings (the first
        request's), their common prefix computed once; each row is cut at its own stop token and
        ``max_tokens``, its logprobs taken from its own steps' logits."""
        torch = self._torch
        settings = requests[0].settings
        budgets = [r.settings.max_tokens for r in requests]
        sample = settings.temperature > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": max(budgets),
            "do_sample": sample,
            "eos_token_id": self._stop_ids,
            "pad_token_id": self._pad_id,
            "return_dict_in_generate": True,
            "output_logits": self.return_logprobs,
        }
        if sample:
            kwargs["temperature"] = settings.temperature
            kwargs["top_p"] = settings.top_p
            kwargs["top_k"] = 0
        else:
            # Greedy: clear sampling defaults a checkpoint's generation_config may carry.
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if len(requests) == 1 and requests[0].on_text is not None:
            kwargs["streamer"] = _text_callback(self.tokenizer, requests[0].on_text)
        if len(requests) == 1 and settings.seed is not None:
            torch.manual_seed(settings.seed)
        with torch.inference_mode():
            if self.prefix_cache is not None:
                input_ids, attention_mask, cache = self._cached_layout(prompts)
            else:
                input_ids, attention_mask, cache = self._shared_layout(prompts)
            width = input_ids.shape[1]
            if cache is not None:
                kwargs["cache"] = cache
            criteria = _stopping_list()
            if len(set(budgets)) > 1:
                criteria.append(_row_budgets(budgets, width, self.device))
            if self._tool_call_stop:
                criteria.append(_closed_tool_call_criterion(self.tokenizer, width))
            if criteria:
                kwargs["stopping_criteria"] = criteria
            out = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
            if self.prefix_cache is not None:
                self._store_rows(prompts, cache, attention_mask, out.sequences[:, width:])
        steps = out.logits if self.return_logprobs and out.logits else None
        responses = []
        for row, (request, prompt) in enumerate(zip(requests, prompts, strict=True)):
            completion = _cut(out.sequences[row, width:].tolist(), request.settings.max_tokens, self._stop_ids)
            logprobs = None
            if steps is not None and completion:
                own = torch.stack([step[row] for step in steps[: len(completion)]]).float()  # (its tokens, vocab)
                chosen = torch.tensor(completion, device=own.device, dtype=torch.long)
                logprobs = own.log_softmax(-1).gather(-1, chosen[:, None])[:, 0].tolist()
            responses.append(self._response(request, prompt, completion, logprobs))
        return responses

    def _shared_layout(self, prompts: list[list[int]]) -> tuple[Any, Any, Any]:
        """Without the prefix cache: left-padded prompts, after the prefix they all share (the
        system prompt and tools of an eval's episodes), which is computed once and its KV cache
        copied to every row. ``(input_ids, attention_mask, cache or None)``."""
        from transformers import DynamicCache

        torch = self._torch
        shared = _shared_prefix(prompts) if len(prompts) > 1 else 0
        batch = self.tokenizer.pad(
            {"input_ids": [p[shared:] for p in prompts]},
            padding=True,
            padding_side="left",
            return_attention_mask=True,
            return_tensors="pt",
        )
        input_ids, attention_mask = batch["input_ids"].to(self.device), batch["attention_mask"].to(self.device)
        if not shared:
            return input_ids, attention_mask, None
        prefix = torch.tensor([prompts[0][:shared]], device=self.device)
        cache = DynamicCache(config=self.model.config)
        self.model(input_ids=prefix, cache=cache, use_cache=True, logits_to_keep=1)
        cache.batch_repeat_interleave(len(prompts))
        self.shared_prefix_tokens += shared * (len(prompts) - 1)
        input_ids = torch.cat([prefix.expand(len(prompts), -1), input_ids], dim=1)
        attention_mask = torch.cat([torch.ones_like(input_ids[:, :shared]), attention_mask], dim=1)
        return input_ids, attention_mask, cache

    def _cached_layout(self, prompts: list[list[int]]) -> tuple[Any, Any, Any]:
        """With the prefix cache: each row starts from the longest cached prefix of its own prompt
        (its episode's last turn, else the harness every row shares, computed once here when no
        earlier batch did), and only the rest is computed.

        Row ``i`` is laid out as ``[pad][cached_i][pad][rest_i]``: the cached parts are aligned to
        end at one column (the KV cache, each row's entries left-padded), the rests left-padded
        after it. Padding is masked and positions count only real tokens, so every row sees its
        prompt as it would alone. Returns ``(input_ids, attention_mask, cache)``."""
        from transformers import DynamicCache

        torch = self._torch
        shared = _shared_prefix(prompts) if len(prompts) > 1 else 0
        if shared:
            if self.prefix_cache.lookup(prompts[0][:shared], count=False)[0] < shared:
                self._prefix_kv(prompts[0][:shared])  # the harness once, for every row below
            self.shared_prefix_tokens += shared * (len(prompts) - 1)
        found = [self.prefix_cache.lookup(p[:-1]) for p in prompts]
        cached = [n for n, _ in found]
        width_cached = max(cached)
        rests = [p[n:] for p, n in zip(prompts, cached)]
        width_rest = max(len(r) for r in rests)
        pad = self._pad_id
        rows, masks = [], []
        for p, n, rest in zip(prompts, cached, rests):
            lead, gap = width_cached - n, width_rest - len(rest)
            rows.append([pad] * lead + p[:n] + [pad] * gap + rest)
            masks.append([0] * lead + [1] * n + [0] * gap + [1] * len(rest))
        input_ids = torch.tensor(rows, device=self.device)
        attention_mask = torch.tensor(masks, device=self.device)
        self.cached_prefix_tokens += sum(cached)
        cache = DynamicCache(config=self.model.config)  # passed even when empty: the rows are kept from it
        if not width_cached:
            return input_ids, attention_mask, cache
        reference = next(layers for n, (_, layers) in zip(cached, found) if n)
        for layer, (ref, _) in enumerate(reference):
            keys, values = [], []
            for n, (_, layers) in zip(cached, found):
                lead = ref.new_zeros((1, ref.shape[1], width_cached - n, ref.shape[3]))
                k, v = layers[layer] if n else (lead[:, :, :0], lead[:, :, :0])
                keys.append(torch.cat([lead, k], dim=2))
                values.append(torch.cat([lead, v], dim=2))
            cache.update(torch.cat(keys), torch.cat(values), layer)
        return input_ids, attention_mask, cache

    def _store_rows(self, prompts: list[list[int]], cache: Any, attention_mask: Any, generated: Any) -> None:
        """Keep each row's prompt and completion (all but its last token) in the prefix cache:
        what its episode's next turn starts with. The row's real positions are taken out of the
        batch's padded KV cache."""
        torch = self._torch
        width = attention_mask.shape[1]
        for row, prompt in enumerate(prompts):
            completion = _cut(generated[row].tolist(), generated.shape[1], self._stop_ids)
            tokens = prompt + completion[:-1]
            if len(tokens) < MIN_SHARED_PREFIX:
                continue
            real = torch.cat(
                [
                    attention_mask[row].nonzero()[:, 0],
                    torch.arange(width, width + len(completion) - 1, device=self.device),
                ]
            )
            layers = [
                (layer.keys[row : row + 1, :, real], layer.values[row : row + 1, :, real]) for layer in cache.layers
            ]
            if all(k.shape[2] == len(tokens) for k, _ in layers):
                self.prefix_cache.store(tokens, layers)

    def _prefix_kv(self, tokens: list[int]) -> Any:
        """A KV cache holding ``tokens``: the longest cached prefix of them, extended by the rest
        (computed here), and stored back for the batches after."""
        from transformers import DynamicCache

        torch = self._torch
        cache = DynamicCache(config=self.model.config)
        done, layers = self.prefix_cache.lookup(tokens)
        for i, (k, v) in enumerate(layers):
            cache.update(k, v, i)
        if done < len(tokens):
            rest = torch.tensor([tokens[done:]], device=self.device)
            self.model(input_ids=rest, cache=cache, use_cache=True, logits_to_keep=1)
            # the cache's tensors are replaced, never written in place, as generation appends
            # (torch.cat): keeping references is enough
            self.prefix_cache.store(tokens, [(layer.keys, layer.values) for layer in cache.layers])
        return cache

    def _response(
        self, request: _Request, prompt: list[int], completion: list[int], logprobs: list[float] | None
    ) -> ModelResponse:
        return completion_response(
            self.tokenizer,
            self._stop_ids,
            prompt,
            completion,
            cut_after_calls=self._tool_call_stop,
            logprobs=logprobs,
            started=request.started,
        )


def completion_response(
    tokenizer: Any,
    stop_ids: list[int],
    prompt: list[int],
    completion: list[int],
    *,
    cut_after_calls: bool,
    logprobs: list[float] | None,
    started: float,
) -> ModelResponse:
    """A turn's :class:`ModelResponse` from its token ids, as every in-process engine answers:
    cut after its last tool call when it went on past it (``cut_after_calls``), decoded without
    its stop token and turn markers, tool calls parsed, the finish reason read off how it ended."""
    stopped = bool(completion) and completion[-1] in stop_ids
    if not stopped and cut_after_calls:
        closed = _closed_tool_calls(tokenizer, completion)
        if closed is not None:  # stopped after its last call, before what followed it
            completion, stopped = closed, True
    body = completion[:-1] if stopped and completion[-1] in stop_ids else completion
    text = _strip_special(tokenizer.decode(body, skip_special_tokens=False), tokenizer)
    content, calls, errors = parse_tool_calls(text)
    finish = "length" if not stopped else ("tool_calls" if calls else "stop")
    return ModelResponse(
        content=content,
        tool_calls=calls,
        finish_reason=finish,
        prompt_tokens=len(prompt),
        completion_tokens=len(completion),
        latency_s=time.perf_counter() - started,
        prompt_token_ids=prompt,
        completion_token_ids=completion,
        logprobs=logprobs,
        parse_errors=errors,
    )


@dataclass
class _Request:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    settings: GenerationSettings
    on_text: Callable[[str], None] | None
    started: float


def batch_key(settings: GenerationSettings, *, streaming: bool = False) -> tuple[Any, ...] | None:
    """Which requests may share one ``model.generate``: greedy ones together, sampled ones with
    the same temperature and top_p together; ``None`` (run alone) for a streamed request or a
    sampled one with its own seed (a seed fixes one sequence's draws, not a batch's).
    ``max_tokens`` does not matter: each row stops at its own.

    >>> batch_key(GenerationSettings(max_tokens=8)) == batch_key(GenerationSettings(max_tokens=64, seed=3))
    True
    >>> batch_key(GenerationSettings(temperature=0.7, seed=1)) is None
    True
    """
    if streaming:
        return None
    if settings.temperature > 0:
        if settings.seed is not None:
            return None
        return ("sample", settings.temperature, settings.top_p)
    return ("greedy",)


def set_threads(threads: int | None) -> int:
    """Set torch's CPU threads: ``threads``, else ``$HARNESSCTL_THREADS``, else torch's default
    (one per core). Returns the count in use. On a busy machine fewer threads can be faster."""
    import torch

    wanted = threads or int(os.environ.get(THREADS_ENV, "0") or 0)
    if wanted > 0 and torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
    return torch.get_num_threads()


class PrefixCache:
    """KV caches of prompt prefixes, keyed by their exact tokens, least recently used dropped first
    past ``max_bytes`` (the idea of vLLM's automatic prefix caching, for one process).

    A lookup returns the longest stored prefix shared with the tokens asked for (at least
    :data:`MIN_SHARED_PREFIX`), cut to what they share: the rendered harness of every case under
    it, and the whole of an episode's earlier turn.

    >>> cache = PrefixCache(max_bytes=1 << 20)
    >>> cache.lookup(list(range(100)))
    (0, [])
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[int, ...], list[tuple[Any, Any]]] = OrderedDict()
        self._sizes: dict[tuple[int, ...], int] = {}
        self.hits = 0
        self.misses = 0

    @property
    def bytes(self) -> int:
        return sum(self._sizes.values())

    def lookup(self, tokens: list[int], *, count: bool = True) -> tuple[int, list[tuple[Any, Any]]]:
        """``(n, layers)``: how many leading ``tokens`` are cached and each layer's (keys, values)
        cut to them (views, not copies); ``(0, [])`` when no entry shares enough. ``count=False``
        only asks (no hit or miss counted, the entry's age unchanged)."""
        best, best_key = 0, None
        for key in self._entries:
            n = common_prefix(key, tokens)
            if n > best:
                best, best_key = n, key
        # one token of the prompt stays to be computed, so a lookup never returns all of it
        best = min(best, len(tokens))
        if best_key is None or best < MIN_SHARED_PREFIX:
            self.misses += count
            return 0, []
        if not count:
            return best, []
        self.hits += 1
        self._entries.move_to_end(best_key)
        layers = self._entries[best_key]
        return best, [(k[..., :best, :], v[..., :best, :]) for k, v in layers]

    def store(self, tokens: list[int], layers: list[tuple[Any, Any]]) -> None:
        """Keep ``layers`` (one (keys, values) pair per layer, batch of one) as the cache of ``tokens``;
        an entry that is a prefix of it is replaced."""
        key = tuple(tokens)
        for old in [k for k in self._entries if len(k) <= len(key) and key[: len(k)] == k]:
            self._drop(old)
        size = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in layers)
        if size > self.max_bytes:
            return
        self._entries[key] = layers
        self._sizes[key] = size
        while self.bytes > self.max_bytes and self._entries:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: tuple[int, ...]) -> None:
        self._entries.pop(key, None)
        self._sizes.pop(key, None)


def common_prefix(a: tuple[int, ...] | list[int], b: list[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _writes_tool_calls(tokenizer: Any) -> bool:
    """Whether replies are cut after their last tool call (templates that write ``<tool_call>``)."""
    return "tool_call" in str(getattr(tokenizer, "chat_template", "") or "")


def _stopping_list() -> Any:
    from transformers import StoppingCriteriaList

    return StoppingCriteriaList()


def _closed_tool_call_criterion(tokenizer: Any, width: int) -> Any:
    """A stopping criterion that ends a row once it has closed a tool call and then started
    anything but another call (a model that goes on writing after its calls: a tool result it
    invents, prose). The row's tokens after the last call are cut in :meth:`LocalModel._response`."""
    import torch
    from transformers import StoppingCriteria

    class ClosedToolCall(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            # only what the row generated: a prompt may end with an earlier turn's call
            tails = [tokenizer.decode(row[width:][-12:], skip_special_tokens=False) for row in input_ids.tolist()]
            return torch.tensor([_after_calls(t) for t in tails], device=input_ids.device)

    return ClosedToolCall()


def _after_calls(text: str) -> bool:
    """Whether ``text`` closed a tool call and then began something other than whitespace or
    another ``<tool_call>``.

    >>> _after_calls('{"a": 1}</tool_call>Sure!'), _after_calls('</tool_call> <tool'), _after_calls('</tool_call>')
    (True, False, False)
    """
    end = text.rfind(TOOL_CALL_CLOSE)
    if end < 0:
        return False
    rest = text[end + len(TOOL_CALL_CLOSE) :].lstrip()
    return bool(rest) and not (TOOL_CALL_OPEN.startswith(rest) or rest.startswith(TOOL_CALL_OPEN))


def _closed_tool_calls(tokenizer: Any, completion: list[int]) -> list[int] | None:
    """The completion cut right after its last ``</tool_call>``, when it went on past it with
    something else (see :func:`_after_calls`); None otherwise."""
    text = tokenizer.decode(completion, skip_special_tokens=False)
    if not _after_calls(text):
        return None
    for n in range(len(completion) - 1, 0, -1):
        if tokenizer.decode(completion[:n], skip_special_tokens=False).rstrip().endswith(TOOL_CALL_CLOSE):
            head = tokenizer.decode(completion[: n - 1], skip_special_tokens=False)
            if not head.rstrip().endswith(TOOL_CALL_CLOSE):
                return completion[:n]
    return None


def _shared_prefix(prompts: list[list[int]]) -> int:
    """How many leading tokens every prompt shares, when worth computing once (at least
    :data:`MIN_SHARED_PREFIX`; each prompt keeps one token of its own to feed the model).

    >>> _shared_prefix([[1] * 80 + [2], [1] * 80 + [3, 4]]), _shared_prefix([[1, 2], [1, 3]])
    (80, 0)
    """
    n, shortest = 0, min(len(p) for p in prompts) - 1
    first = prompts[0]
    while n < shortest and all(p[n] == first[n] for p in prompts):
        n += 1
    return n if n >= MIN_SHARED_PREFIX else 0


def _cut(tokens: list[int], max_tokens: int, stop_ids: list[int]) -> list[int]:
    """A row's own completion: at most ``max_tokens``, ending at its first stop token (kept)."""
    tokens = tokens[:max_tokens]
    for i, token in enumerate(tokens):
        if token in stop_ids:
            return tokens[: i + 1]
    return tokens


def _row_budgets(budgets: list[int], width: int, device: str) -> Any:
    """A stopping criterion that finishes each row at its own ``max_tokens`` (later tokens of a
    finished row are padding), so a short request does not run the batch's longest budget."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    limits = torch.tensor(budgets, device=device)

    class RowBudgets(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return (input_ids.shape[1] - width) >= limits

    return StoppingCriteriaList([RowBudgets()])


def _text_callback(tokenizer: Any, on_text: Callable[[str], None]) -> Any:
    """A transformers ``TextStreamer`` that hands the text so far to ``on_text`` instead of
    printing it (transformers is imported here, not when this module is)."""
    from transformers import TextStreamer

    class TextCallback(TextStreamer):
        def __init__(self) -> None:
            super().__init__(tokenizer, skip_prompt=True, skip_special_tokens=False)
            self.text = ""

        def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
            if text:
                self.text += text
                on_text(_strip_special(self.text, tokenizer))

    return TextCallback()


def render_prompt_ids(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
    """The token ids of a conversation rendered with ``tokenizer``'s chat template and ``tools``,
    ending with the assistant's generation prompt: what every in-process engine feeds its model."""
    out = tokenizer.apply_chat_template(
        _template_messages(messages), tools=tools or None, add_generation_prompt=True, tokenize=True, return_dict=True
    )
    return list(out["input_ids"])


def _template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as chat templates expect them: tool-call arguments as objects, not JSON text."""
    out = []
    for m in messages:
        calls = m.get("tool_calls")
        if calls:
            m = dict(m)
            fixed = []
            for c in calls:
                fn = dict(c.get("function", c))
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        parsed = json.loads(args) if args.strip() else {}
                        if isinstance(parsed, dict):
                            fn["arguments"] = parsed
                    except json.JSONDecodeError:
                        pass  # the template writes the raw text back, as the model wrote it
                fixed.append({"type": "function", "id": c.get("id", ""), "function": fn})
            m["tool_calls"] = fixed
        if m.get("content") is None:
            m = dict(m)
            m["content"] = ""
        out.append(m)
    return out


def stop_token_ids(tokenizer: Any, model: Any) -> list[int]:
    """The end-of-turn ids of a checkpoint (tokenizer and generation config), deduplicated."""
    return collect_stop_ids(tokenizer, getattr(getattr(model, "generation_config", None), "eos_token_id", None))


def collect_stop_ids(tokenizer: Any, *more: Any) -> list[int]:
    """The tokenizer's end-of-turn id and ``more`` (ids or lists of them: a generation config's,
    a file's), deduplicated in that order; a :class:`ModelError` when there is none."""
    ids: list[int] = []
    for value in (tokenizer.eos_token_id, *more):
        for i in value if isinstance(value, list) else [value]:
            if isinstance(i, int) and i not in ids:
                ids.append(i)
    if not ids:
        raise ModelError("the checkpoint defines no end-of-turn token (eos_token_id)")
    return ids


def _strip_special(text: str, tokenizer: Any) -> str:
    # Drop turn markers a model may emit mid-text (special tokens), keep <tool_call>/<think>.
    for tok in getattr(tokenizer, "all_special_tokens", []):
        if tok and tok not in _KEEP:
            text = text.replace(tok, "")
    return text


def _first_line(e: Exception) -> str:
    s = str(e).strip()
    return (s.splitlines()[0] if s else type(e).__name__)[:300]
