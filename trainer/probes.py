"""Probes of what a checkpoint can do that the agent stages rely on, measured after stage 0.

The copy probe asks, greedily, for a code drawn fresh for each prompt and counts the answers that
hold it whole: echo it, look it up among a few labelled codes, and pass it to a generic tool whose
other arguments the corpus repeats (a flight number). A model that recalls instead of reading
answers with a code it has seen in training (``KL605``) or one shaped like a code. An agent needs
the copy: the product id in the overlay, the order id the viewer typed, a skill's name in a renamed
listing. The prompts use a seed no corpus row is drawn with.

>>> copy_probe("experiments/full/arms/base/model", n=30)   # doctest: +SKIP
{'echo': 0.0, 'lookup': 0.0, 'tool_argument': 0.0, 'n': 30}
"""

from __future__ import annotations

import random
from typing import Any

from trainer.general_corpus import random_code, tool_spec

#: Seed of the probe's prompts (the corpus draws with the run's seed, 0 by default).
PROBE_SEED = 91_357
_LABELS = ("red", "blue", "green", "amber", "violet", "silver")


def copy_prompts(n: int, *, seed: int = PROBE_SEED) -> list[tuple[str, list[dict[str, Any]], Any, str]]:
    """``n`` prompts of each kind: (kind, messages, tools or None, the code the answer must hold).

    >>> [p[0] for p in copy_prompts(1)]
    ['echo', 'lookup', 'tool_argument']
    """
    rng = random.Random(seed)
    flight_tools = [
        tool_spec("flight_status", "whether a flight number is on time", "flight"),
        tool_spec("get_weather", "current weather for a city", "city"),
    ]
    out = []
    for _ in range(n):
        code = random_code(rng)
        out.append(("echo", [{"role": "user", "content": f"Repeat this code exactly: {code}"}], None, code))
        labels = rng.sample(_LABELS, 4)
        codes = {label: random_code(rng) for label in labels}
        asked = rng.choice(labels)
        listing = ", ".join(f"{label} {c}" for label, c in codes.items())
        question = f"The codes are: {listing}. Which code is {asked}?"
        out.append(("lookup", [{"role": "user", "content": question}], None, codes[asked]))
        flight = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(2)) + str(rng.randint(10, 9999))
        out.append(
            ("tool_argument", [{"role": "user", "content": f"Is flight {flight} on time?"}], flight_tools, flight)
        )
    return out


def copy_probe(model: Any, tokenizer: Any = None, *, n: int = 30, max_new_tokens: int = 32) -> dict[str, Any]:
    """The share of ``n`` prompts per kind (echo, lookup, tool argument) whose greedy answer holds
    the fresh code whole; ``model`` is a loaded causal LM (with ``tokenizer``) or a checkpoint folder."""
    import torch

    if isinstance(model, str):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model)
        model = AutoModelForCausalLM.from_pretrained(model)
    model.eval()
    hits: dict[str, int] = {"echo": 0, "lookup": 0, "tool_argument": 0}
    for kind, messages, tools, code in copy_prompts(n):
        enc = tokenizer.apply_chat_template(
            messages, tools=tools, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        enc = {k: v.to(model.device) for k, v in enc.items()}
        with torch.no_grad():
            out = model.generate(
                **enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )
        answer = tokenizer.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        hits[kind] += code in answer
    return {**{k: round(v / n, 3) for k, v in hits.items()}, "n": n}
