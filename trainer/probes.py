"""Probes of what a checkpoint can do that the agent stages rely on (the copy probe after stage 0
is the experimental wing's, ``harnessctl/experimental/copy_rows.py``).

The skill-choice probe (:func:`skill_choice_probe`, ``harnessctl model probe``) asks, on rows of an
SFT dataset, which option of the first listing-backed call (the skill loader's) the model gives the
highest probability after the viewer's message, under teacher forcing; its greedy reading
(:func:`greedy_choice_probe`, ``model probe --greedy``) reads the same decisions from the first
turn any model backend writes, served models included; :func:`probe_dataset` runs either on a
dataset folder the way ``model probe`` does.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessctl.harness.loader import load_harness
from harnessctl.models._quiet import quiet_transformers
from harnessctl.models.adapters import is_adapter, load_adapter_model
from harnessctl.models.base import GenerationSettings, ModelError, agenerate, reads_answer_key
from harnessctl.models.registry import expand_model_spec, resolve_model
from trainer.common import TrainError
from trainer.data import read_chat_rows

# -- the skill choice -------------------------------------------------------------------------------


@dataclass
class ChoiceItem:
    """One decision of a trajectory row: the turns before it, the tools listed, the listing's
    options and the one the row chose."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    turn: dict[str, Any]  # the assistant turn that makes the choice (its first tool call)
    parameter: str  # the argument that names the choice
    options: list[str]
    chosen: str

    @property
    def tool(self) -> str:
        """The name the row's listing gives the tool that makes the choice (the skill loader)."""
        return self.turn["tool_calls"][0]["function"]["name"]


def choice_items(rows: list[dict[str, Any]]) -> tuple[list[ChoiceItem], int]:
    """The first decision of each row that makes one from a listing: the first tool call of its
    first assistant turn that calls a tool, where an argument takes a value from the tool's ``enum``
    (the skill loader under any name a harness variant gave it); the turns before it, a greeting
    answered included, are its context. Returns the items and how many rows had none.

    >>> row = {"messages": [{"role": "user", "content": "price?"}, {"role": "assistant", "content": "",
    ...        "tool_calls": [{"type": "function", "function": {"name": "load_skill", "arguments": '{"name": "b"}'}}]}],
    ...        "tools": [{"type": "function", "function": {"name": "load_skill", "parameters": {"type": "object",
    ...        "properties": {"name": {"type": "string", "enum": ["a", "b", "c"]}}}}}]}
    >>> items, skipped = choice_items([row])
    >>> items[0].options, items[0].chosen, skipped
    (['a', 'b', 'c'], 'b', 0)
    """
    items, skipped = [], 0
    for row in rows:
        tools = json.loads(row["tools"] or "[]") if isinstance(row["tools"], str) else row["tools"]
        item = _first_choice(row["messages"], tools)
        if item is None:
            skipped += 1
        else:
            items.append(item)
    return items, skipped


def _first_choice(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChoiceItem | None:
    # The first turn that calls a tool decides; assistant turns before it without a call are the
    # conversation so far (a greeting answered before the viewer's question), part of the context.
    at = next((i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")), None)
    if at is None:
        return None
    call = messages[at]["tool_calls"][0]["function"]
    spec = next((t["function"] for t in tools if t.get("function", {}).get("name") == call["name"]), None)
    if spec is None:
        return None
    args = json.loads(call["arguments"]) if isinstance(call["arguments"], str) else call["arguments"]
    for parameter, schema in (spec.get("parameters") or {}).get("properties", {}).items():
        options = schema.get("enum") or []
        if len(options) > 1 and args.get(parameter) in options:
            return ChoiceItem(messages[:at], tools, messages[at], parameter, list(options), args[parameter])
    return None


def _with_choice(turn: dict[str, Any], parameter: str, option: str, listing: str = "") -> dict[str, Any]:
    """The turn with its first call's ``parameter`` set to ``option`` (arguments re-serialised the
    same way for every option, the chosen one included). A turn that opens by quoting the chosen
    skill's catalog line (``augment --quote-skills``) quotes ``option``'s line of ``listing`` (the
    system prompt) instead: the quote names the answer, so every option is scored with its own.

    >>> turn = {"content": "<think>tell prices : pay_a</think>", "tool_calls": [{"function":
    ...         {"name": "load", "arguments": '{"name": "pay_a"}'}}]}
    >>> _with_choice(turn, "name", "ship_b", "- tell prices : pay_a\\n- ship things : ship_b")["content"]
    '<think>ship things : ship_b</think>'
    """
    calls = [dict(c, function=dict(c["function"])) for c in turn["tool_calls"]]
    first = calls[0]["function"]
    args = json.loads(first["arguments"]) if isinstance(first["arguments"], str) else dict(first["arguments"])
    chosen = args.get(parameter)
    args[parameter] = option
    first["arguments"] = json.dumps(args, ensure_ascii=False)
    content = turn.get("content") or ""
    quoted = _QUOTE.fullmatch(content)
    if quoted and quoted.group(2) == chosen:
        line = next((x for x in catalog_lines(listing) if x.endswith(f" : {option}")), None)
        if line is not None:
            content = f"<think>{line}{quoted.group(3)}</think>"
    return {**turn, "content": content, "tool_calls": calls}


#: A turn that opens by quoting a catalog line (``augment --quote-skills``): ``<think>description
#: : name</think>``, with an optional ``; ...`` note after the line.
_QUOTE = re.compile(r"<think>([^;]*?) : ([^;]*?)((?:; .*)?)</think>", flags=re.S)


def quoted_line(content: str) -> str | None:
    """The catalog line a turn's opening ``<think>`` note quotes (``description : name``), or None.

    >>> quoted_line('<think>tell prices : pay_a</think>'), quoted_line("Hi there!")
    ('tell prices : pay_a', None)
    """
    think = re.match(r"<think>.*?</think>", content or "", flags=re.S)
    quoted = _QUOTE.fullmatch(think.group(0)) if think else None
    return f"{quoted.group(1)} : {quoted.group(2)}" if quoted else None


def catalog_lines(listing: str) -> list[str]:
    """The bulleted lines of a system prompt's skill catalog, bullets dropped.

    >>> catalog_lines("Skills:\\n- tell prices : pay_a\\n- ship things : ship_b")
    ['tell prices : pay_a', 'ship things : ship_b']
    """
    return [line[2:] for line in listing.splitlines() if line.startswith("- ")]


def _system_text(messages: list[dict[str, Any]]) -> str:
    return next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")


def option_logprobs(model: Any, tokenizer: Any, item: ChoiceItem) -> dict[str, float]:
    """The log-probability the model gives the deciding turn, written with each option, after the
    turns before it: ``{option: log p(turn | context)}``."""
    import torch

    prompt = tokenizer.apply_chat_template(item.messages, tools=item.tools, add_generation_prompt=True, tokenize=False)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    sequences = []
    for option in item.options:
        turn = _with_choice(item.turn, item.parameter, option, _system_text(item.messages))
        text = tokenizer.apply_chat_template([*item.messages, turn], tools=item.tools, tokenize=False)
        if not text.startswith(prompt):
            raise ValueError("the chat template writes the context differently once the turn follows it")
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if ids[: len(prompt_ids)] != prompt_ids:
            raise ValueError("the tokenizer splits the context differently once the turn follows it")
        sequences.append(ids)
    # The context is the same for every option: run it once, then every option's turn on a copy
    # of its key/value cache, right-padded (a pad after a turn's last token changes nothing the
    # turn's own tokens see under causal attention).
    start = len(prompt_ids)
    with torch.no_grad():
        context = model(input_ids=torch.tensor([prompt_ids], device=model.device), use_cache=True)
        cache = context.cache
        cache.batch_repeat_interleave(len(sequences))
        tails = [s[start:] for s in sequences]
        width = max(len(t) for t in tails)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        ids = torch.tensor([t + [pad] * (width - len(t)) for t in tails], device=model.device)
        logits = model(input_ids=ids, cache=cache, use_cache=True).logits.float()
    first = torch.log_softmax(context.logits[0, -1].float(), dim=-1)  # the turn's first token
    scores = {}
    for row, (option, tail) in enumerate(zip(item.options, tails)):
        logp = torch.log_softmax(logits[row, : len(tail) - 1], dim=-1)
        rest = logp.gather(1, torch.tensor(tail[1:], device=model.device)[:, None]).sum()
        scores[option] = float(first[tail[0]] + rest)
    return scores


def load_probe_model(folder: str) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of a checkpoint folder, or of a LoRA adapter merged onto its base."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if is_adapter(folder):
        return load_adapter_model(folder, dtype="float32", merge=True)
    with quiet_transformers():
        return AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)


def probe_items(rows: list[dict[str, Any]] | None, *, n: int, seed: int) -> tuple[list[ChoiceItem], int, int]:
    """The first ``n`` decisions of the rows shuffled by ``seed`` (both readings of the probe take
    the same ones), how many rows make none, and how many rows there were."""
    rows = list(rows or [])
    random.Random(seed).shuffle(rows)
    items, skipped = choice_items(rows)
    return items[:n], skipped, len(rows)


def skill_choice_probe(
    model: Any,
    tokenizer: Any = None,
    rows: list[dict[str, Any]] | None = None,
    *,
    n: int = 100,
    seed: int = 0,
    on_item: Any = None,
    shipped_names: Collection[str] | None = None,
) -> dict[str, Any]:
    """The first decision of ``n`` dataset rows (shuffled by ``seed``) under teacher forcing: does
    the model give the row's own option the highest probability among the listing's? This is the
    skill choice alone — no sampling, no later turn — so it tells a choice the model has not
    learned from one it makes but loses in generation. ``chance`` is the mean of 1 / options.

    With ``shipped_names`` (the shipped harness's skill names), ``by_name`` splits the rows by
    whether the row's own option keeps its shipped name or a variant renamed it: a model that
    memorised the shipped surface is right on the first kind only, a model that reads the listing
    on both.

    >>> skill_choice_probe("shipped-model-folder", rows=read_chat_rows("data/fixed"), n=100)  # doctest: +SKIP
    {'rows': 100, 'correct': 96, 'share': 0.96, 'chance': 0.091, 'dataset_rows': 5397, 'without_choice': 1611, ...}
    """
    if isinstance(model, str):
        model, tokenizer = load_probe_model(model)
    model.eval()
    items, skipped, dataset_rows = probe_items(rows, n=n, seed=seed)
    hits, confusions = [], Counter()
    for done, item in enumerate(items, start=1):
        scores = option_logprobs(model, tokenizer, item)
        picked = max(item.options, key=lambda o: scores[o])
        hits.append(picked == item.chosen)
        if picked != item.chosen:
            confusions[(item.chosen, picked)] += 1
        if on_item is not None:
            on_item(done, len(items))
    return _choice_summary(items, hits, confusions, skipped, dataset_rows, shipped_names)


def _choice_summary(
    items: list[ChoiceItem],
    hits: list[bool],
    confusions: Counter,
    skipped: int,
    dataset_rows: int,
    shipped_names: Collection[str] | None,
) -> dict[str, Any]:
    """What both readings of the probe report: rows, hits, chance, the commonest confusions
    (``chosen`` → ``picked``) and, with ``shipped_names``, the kept/renamed split."""
    chance = sum(1 / len(i.options) for i in items) / len(items) if items else 0.0
    return {
        "rows": len(items),
        "correct": sum(hits),
        "share": round(sum(hits) / len(items), 3) if items else 0.0,
        "chance": round(chance, 3),
        "dataset_rows": dataset_rows,
        "without_choice": skipped,
        "confusions": [{"chosen": a, "picked": b, "rows": k} for (a, b), k in confusions.most_common(5)],
        **({"by_name": _by_name(items, hits, shipped_names)} if shipped_names is not None else {}),
    }


def _by_name(items: list[ChoiceItem], hits: list[bool], shipped_names: Collection[str]) -> dict[str, dict[str, int]]:
    """Rows and hits among the items whose own option keeps a shipped name, and among the renamed."""
    split = {"shipped": {"rows": 0, "correct": 0}, "renamed": {"rows": 0, "correct": 0}}
    for item, hit in zip(items, hits):
        part = split["shipped" if item.chosen in shipped_names else "renamed"]
        part["rows"] += 1
        part["correct"] += hit
    return split


# -- the skill choice, in generation --------------------------------------------------------------

#: What a greedy first turn did with a row's decision, in the order the report lists them.
GREEDY_OUTCOMES = ("right", "other_option", "unlisted", "other_tool", "unknown_tool", "no_call")


def read_first_turn(item: ChoiceItem, response: Any) -> dict[str, Any]:
    """What a generated turn (a :class:`~harnessctl.models.types.ModelResponse`) did with the
    row's decision: ``outcome`` is one of :data:`GREEDY_OUTCOMES` — the row's own option, another
    option of the listing, a value the listing does not hold, another listed tool, a tool no
    listing holds, no call at all. A turn that opens by quoting a catalog line also says whether
    the quote is a line of the system prompt's listing, whether the call takes the name the quote
    ends with, and whether it quotes the row's own line.

    >>> from harnessctl.models.types import ModelResponse, ToolCall
    >>> item = ChoiceItem([{"role": "system", "content": "- tell prices : pay_a"}], [], {"tool_calls": [
    ...     {"function": {"name": "load", "arguments": "{}"}}]}, "name", ["pay_a", "ship_b"], "pay_a")
    >>> read_first_turn(item, ModelResponse("<think>tell prices : pay_a</think>", [ToolCall("load", {"name": "pay_a"})]))
    {'outcome': 'right', 'tool': 'load', 'called': 'pay_a', 'quote': 'tell prices : pay_a', 'quote_in_listing': True, 'quote_names_call': True, 'quote_right': True}
    """
    listed = {t.get("function", {}).get("name") for t in item.tools}
    call = response.tool_calls[0] if response.tool_calls else None
    called = None
    if call is None:
        outcome = "no_call"
    elif call.name == item.tool:
        called = (call.arguments or {}).get(item.parameter)
        called = called if isinstance(called, str) else None
        outcome = "right" if called == item.chosen else "other_option" if called in item.options else "unlisted"
    else:
        outcome = "other_tool" if call.name in listed else "unknown_tool"
    reading: dict[str, Any] = {"outcome": outcome, "tool": call.name if call else None, "called": called}
    quote = quoted_line(response.content)
    if quote is not None:
        reading.update(
            quote=quote,
            quote_in_listing=quote in catalog_lines(_system_text(item.messages)),
            quote_names_call=called is not None and quote.endswith(f" : {called}"),
            quote_right=quote.endswith(f" : {item.chosen}"),
        )
    return reading


def greedy_choice_probe(
    backend: Any,
    rows: list[dict[str, Any]] | None = None,
    *,
    n: int = 100,
    seed: int = 0,
    max_tokens: int = 128,
    jobs: int = 8,
    on_item: Any = None,
    shipped_names: Collection[str] | None = None,
    shipped_loader: str | None = None,
) -> dict[str, Any]:
    """The same decisions as :func:`skill_choice_probe`, read from what the model writes: its
    greedy first turn after the viewer's message (``backend`` is any model backend — a checkpoint
    in process, a served model through litellm), ``jobs`` turns in flight at once. Where teacher
    forcing asks which option the model finds likeliest, this asks what it does — call the row's
    skill, another, a name no listing holds, or answer without a call — and, on quoting data,
    whether its quote is a line of the listing at all. With ``shipped_loader`` (the shipped
    harness's skill-loader name), ``loader`` counts the rows whose first call goes to the row's own
    loader, split by whether the row's variant kept that name or renamed it: a model that calls
    the shipped name by heart calls no listed tool where it was renamed.

    >>> from harnessctl.models.registry import resolve_model
    >>> greedy_choice_probe(resolve_model("shipped:hat"), rows=read_chat_rows("data/hsa", "validation"))  # doctest: +SKIP
    {'rows': 100, 'correct': 21, 'share': 0.21, 'chance': 0.1, 'outcomes': {'right': 21, 'other_option': 70, ...}, ...}
    """
    import asyncio

    items, skipped, dataset_rows = probe_items(rows, n=n, seed=seed)
    settings = GenerationSettings(temperature=0.0, max_tokens=max_tokens)

    async def read_all() -> list[dict[str, Any]]:
        sem, done = asyncio.Semaphore(max(1, jobs)), 0

        async def one(item: ChoiceItem) -> dict[str, Any]:
            nonlocal done
            async with sem:
                response = await agenerate(backend, item.messages, item.tools, settings)
            done += 1
            if on_item is not None:
                on_item(done, len(items))
            return {"chosen": item.chosen, **read_first_turn(item, response)}

        return list(await asyncio.gather(*(one(item) for item in items)))

    readings = asyncio.run(read_all())
    hits = [r["outcome"] == "right" for r in readings]
    outcomes = Counter(r["outcome"] for r in readings)
    quoted = [r for r in readings if "quote" in r]
    confusions = Counter((r["chosen"], _what_was_called(r)) for r in readings if r["outcome"] != "right")
    return {
        **_choice_summary(items, hits, confusions, skipped, dataset_rows, shipped_names),
        "outcomes": {k: outcomes.get(k, 0) for k in GREEDY_OUTCOMES},
        "quotes": {
            "rows": len(quoted),
            **{k: sum(r[k] for r in quoted) for k in ("quote_in_listing", "quote_names_call", "quote_right")},
        },
        **({"loader": _by_loader(items, readings, shipped_loader)} if shipped_loader is not None else {}),
        "readings": readings,
    }


def _by_loader(items: list[ChoiceItem], readings: list[dict[str, Any]], shipped_loader: str) -> dict[str, Any]:
    """Rows, and rows whose first call went to the row's own loader, among the rows whose loader
    keeps its shipped name and among the renamed."""
    split = {"kept": {"rows": 0, "called": 0}, "renamed": {"rows": 0, "called": 0}}
    for item, reading in zip(items, readings):
        part = split["kept" if item.tool == shipped_loader else "renamed"]
        part["rows"] += 1
        part["called"] += reading["tool"] == item.tool
    return split


def _what_was_called(reading: dict[str, Any]) -> str:
    """A wrong reading in a word: the option called, or the tool called instead, or no call."""
    if reading["called"] is not None:
        return reading["called"]
    return f"{reading['tool']}()" if reading["tool"] else "(no call)"


def probe_dataset(
    model: str,
    data: str | Path,
    *,
    split: str = "train",
    rows: int = 100,
    seed: int = 0,
    harness: str | Path | None = None,
    greedy: bool = False,
    api_base: str | None = None,
    api_key_env: str | None = None,
    max_tokens: int = 128,
    jobs: int = 8,
    on_item: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """``harnessctl model probe``: the skill choice of ``model`` on ``rows`` rows of a dataset
    folder's ``split`` (or of a .jsonl file), under teacher forcing (:func:`skill_choice_probe`; a
    checkpoint folder, ``local:PATH`` or ``shipped:NAME``) or, with ``greedy``, from the first turn
    it writes (:func:`greedy_choice_probe`; any model string but the reference policies). With
    ``harness`` (the shipped harness the data's variants came from) the rows are split by whether
    their skill kept its shipped name. Returns the probe's result with ``model``, ``data``,
    ``split`` (None for a file: its rows are read whatever ``split`` says) and ``reading``; raises
    :class:`TrainError` for a model, a dataset or a harness it cannot probe."""
    backend, folder = None, None
    if greedy:
        backend = _probe_backend(model, api_base, api_key_env)
    else:
        folder = expand_model_spec(model).removeprefix("local:")
        if not any((Path(folder) / name).is_file() for name in ("config.json", "adapter_config.json")):
            raise TrainError(
                f"{model}: not a checkpoint folder (no config.json or adapter_config.json); the probe reads a checkpoint's "
                "probabilities: pass a folder, local:PATH or shipped:NAME, or add --greedy to read "
                "a served model's turns"
            )
    dataset = read_chat_rows(data, split)
    shipped_names, shipped_loader = None, None
    if harness is not None:
        shipped = load_harness(harness)
        shipped_names = {skill.name for skill in shipped.skills}
        shipped_loader = shipped.skill_loader.name
    common = {"rows": dataset, "n": rows, "seed": seed, "on_item": on_item, "shipped_names": shipped_names}
    if greedy:
        try:
            result = greedy_choice_probe(
                backend, max_tokens=max_tokens, jobs=jobs, shipped_loader=shipped_loader, **common
            )
        except ModelError as e:
            raise TrainError(f"{model}: {e}") from None
    else:
        result = skill_choice_probe(folder, **common)
    is_dir = Path(data).is_dir()
    if not result["rows"]:
        raise TrainError(
            f"--data {data}: no row of {f'{split}.jsonl' if is_dir else 'it'} makes a choice from a listing"
        )
    reading = "greedy" if greedy else "teacher_forcing"
    return {"model": model, "data": str(data), "split": split if is_dir else None, "reading": reading, **result}


def _probe_backend(model: str, api_base: str | None, api_key_env: str | None) -> Any:
    """The backend a greedy probe asks; the oracle has no turn to probe (it reads a case's answer
    key, and dataset rows carry none)."""
    if Path(model).expanduser().is_dir():  # a checkpoint folder, as under teacher forcing
        model = f"local:{model}"
    backend = resolve_model(model, api_base=api_base, api_key_env=api_key_env)
    if reads_answer_key(backend):
        raise TrainError(
            f"{model}: the probe asks a model; the reference policies read a case's answer key, "
            "which dataset rows do not carry: pass a checkpoint or a served model"
        )
    return backend
