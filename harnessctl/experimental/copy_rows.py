"""The copy corpus and the copy probe: rows whose answer holds a string drawn fresh for the row,
which only copying from the conversation predicts, for a stage 0 trained from scratch; and the
probe that asks, greedily, for such a code after training. The tiny model, built from scratch,
needed them to copy a product id or a renamed skill's name at all (docs/studies/copying.md); a
pretrained base (SmolLM2) copies already, so they are study-only.

Copy rows (``copy_share`` of the stage-0 corpus, the kinds' shares ``copy_mix``): echo a code,
look a code up in a list, repeat a number the user gave, call a tool with the user's code and
answer with the numbers it returned, or pick a guide from a listing by its description
(:func:`pick_row`). The copy probe (``copy_probe`` prompts per kind) asks for a fresh code: echo
it, look it up among a few labelled codes, pass it to a generic tool whose other arguments the
corpus repeats (a flight number), and pick, from a listing of guides under fresh names, the one
whose description fits a request the corpus never asks; a model that recalls instead of reading
answers with a code it saw in training. The prompts use a seed no corpus row is drawn with.

>>> rows = copy_corpus(200, seed=0, share=0.5)
>>> 70 < sum(r["meta"]["kind"] == "copy" for r in rows) < 130
True
>>> copy_probe("experiments/full/arms/base/model", n=30)   # doctest: +SKIP
{'echo': 0.0, 'lookup': 0.0, 'tool_argument': 0.0, 'pick': 0.0, 'n': 30}
"""

from __future__ import annotations

import json
import random
from typing import Any

from harnessctl.models.syllables import pronounceable_name
from trainer.base import BaseHook, ExtraRows
from trainer.base_config import BaseStageConfig
from trainer.common import TrainResult, read_manifest, write_manifest
from trainer.general_corpus import general_rows, tool_spec

_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"
_COPY_LABELS = ("red", "blue", "green", "amber", "violet", "silver", "north", "south", "east", "west", "gate", "desk")
#: Generic lookup tools of the copy rows: (canonical name, description, parameter, what the code names).
_CODE_TOOLS = (
    ("track_parcel", "where a parcel is, by its tracking code", "code", "parcel"),
    ("check_ticket", "the state of a support ticket", "ticket_id", "ticket"),
    ("find_locker", "which floor a storage locker is on", "locker", "locker"),
    ("lookup_booking", "the details of a table booking", "booking_ref", "booking"),
)


#: The copy rows' kinds and their shares: echo most, the plainest copy and the one copying first
#: forms on (docs/studies/copying.md). ``pick`` (a guide chosen from a listing by its description, see
#: :func:`pick_row`) is 0 unless a copy mix names it, so the default mix draws as it always did.
COPY_KINDS = ("echo", "lookup", "number", "tool", "pick")
COPY_WEIGHTS = (0.5, 0.2, 0.1, 0.2, 0.0)


def random_code(rng: random.Random) -> str:
    """A code drawn fresh, in one of the shapes ids take (``K31``, ``QX-4821``, ``TR482913``).

    >>> random_code(random.Random(3))
    'U259791'
    """
    letters = "".join(rng.choice(_LETTERS) for _ in range(rng.randint(1, 3)))
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(2, 6)))
    return f"{letters}{rng.choice(('', '-'))}{digits}"


def parse_copy_mix(text: str) -> tuple[float, ...]:
    """The copy kinds' weights, in :data:`COPY_KINDS` order, from ``kind=weight`` pairs; kinds not
    named get 0, and an empty text gives :data:`COPY_WEIGHTS`. Raises ``ValueError`` naming what is wrong.

    >>> parse_copy_mix("lookup=2,tool=1")
    (0.0, 2.0, 0.0, 1.0, 0.0)
    """
    if not text.strip():
        return COPY_WEIGHTS
    weights = dict.fromkeys(COPY_KINDS, 0.0)
    for part in text.split(","):
        kind, sep, value = (x.strip() for x in part.partition("="))
        if not sep or kind not in weights:
            raise ValueError(f"{part.strip()!r} is not KIND=WEIGHT with KIND one of {', '.join(COPY_KINDS)}")
        try:
            weights[kind] = float(value)
        except ValueError:
            raise ValueError(f"the weight of {kind} must be a number, got {value!r}") from None
        if not weights[kind] >= 0.0:  # also refuses nan
            raise ValueError(f"the weight of {kind} must be 0 or more, got {value}")
    if not sum(weights.values()) > 0.0:
        raise ValueError("at least one copy kind needs a weight above 0")
    return tuple(weights.values())


def copy_row(rng: random.Random, weights: tuple[float, ...] = COPY_WEIGHTS) -> dict[str, Any]:
    """A row whose answer copies a string drawn for this row from the conversation: an echo, a
    lookup in a list of pairs, a number the user gave, a tool call with the user's code and an
    answer with the numbers the tool returned, or a guide's fresh name picked from a listing by
    its description (``weights``: the kinds' shares, in :data:`COPY_KINDS` order)."""
    kind = rng.choices(COPY_KINDS, weights=weights)[0]
    tools: list[dict[str, Any]] = []
    if kind == "echo":
        code = random_code(rng)
        q = rng.choice(("Repeat this code exactly: {c}", "Please say {c} back to me.", "Copy this id: {c}"))
        messages = [{"role": "user", "content": q.format(c=code)}, {"role": "assistant", "content": code}]
    elif kind == "lookup":
        labels = rng.sample(_COPY_LABELS, rng.randint(3, 5))
        codes = {label: random_code(rng) for label in labels}
        asked = rng.choice(labels)
        listing = ", ".join(f"{label} {code}" for label, code in codes.items())
        messages = [
            {"role": "user", "content": f"The codes are: {listing}. Which code is {asked}?"},
            {"role": "assistant", "content": f"The {asked} code is {codes[asked]}."},
        ]
    elif kind == "number":
        height, weight = rng.randint(140, 200), rng.randint(40, 110)
        asked = rng.choice(("height", "weight"))
        answer = f"You said {height} cm." if asked == "height" else f"You said {weight} kg."
        messages = [
            {"role": "user", "content": f"I am {height} cm tall and weigh {weight} kg. What {asked} did I give?"},
            {"role": "assistant", "content": answer},
        ]
    elif kind == "pick":
        return pick_row(rng)
    else:
        listed = rng.sample(_CODE_TOOLS, rng.randint(2, 4))
        canonical = rng.random() < 0.3
        names = {t[0]: (t[0] if canonical else pronounceable_name(rng)) for t in listed}
        tools = [tool_spec(names[t[0]], t[1], t[2]) for t in listed]
        key, _desc, param, noun = rng.choice(listed)
        code, number, days = random_code(rng), rng.randint(2, 98), rng.randint(1, 9)
        result = {"id": code, "floor" if key == "find_locker" else "number": number, "days": days}
        answer = f"Your {noun} {code} shows number {number}, with {days} days to go."
        if key == "find_locker":
            answer = f"Locker {code} is on floor {number}, booked for {days} more days."
        messages = [
            {"role": "user", "content": f"Can you check my {noun} {code}?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": names[key], "arguments": {param: code}}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_0", "name": names[key], "content": json.dumps(result)},
            {"role": "assistant", "content": answer},
        ]
    return {"messages": messages, "tools": tools, "meta": {"kind": "copy", "copy": kind}}


#: Guides of the pick rows, far from live commerce: (description, requests). The last request of
#: each is held out of the corpus for the pick probe (:func:`copy_prompts`).
GUIDES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "book a table at a restaurant",
        (
            "Can I reserve a table for four tonight?",
            "I want to book dinner for two at eight",
            "Is there a free table on Friday evening?",
            "Please hold a table for us at the restaurant",
        ),
    ),
    (
        "renew a library book",
        (
            "My library book is due tomorrow, can I keep it longer?",
            "I need more time with the novel I borrowed",
            "Can you extend my loan at the library?",
            "Renew the book I checked out last week",
        ),
    ),
    (
        "report a lost bank card",
        (
            "I lost my bank card on the bus",
            "Someone stole my debit card!",
            "My card is missing, please block it",
            "I can't find my credit card anywhere",
        ),
    ),
    (
        "check the train timetable",
        (
            "When does the next train to the coast leave?",
            "What time is the last train tonight?",
            "Are there morning trains on Sunday?",
            "Show me the train times for tomorrow",
        ),
    ),
    (
        "reset a forgotten password",
        (
            "I forgot my password",
            "I can't log in, my password doesn't work",
            "How do I get a new password?",
            "Help, I don't remember my login password",
        ),
    ),
    (
        "plan a hiking route",
        (
            "Suggest a trail for a day hike",
            "Which mountain path is good for beginners?",
            "I want to walk in the hills this weekend",
            "Plan me a hike near the lake",
        ),
    ),
    (
        "explain a recipe step",
        (
            "What does it mean to fold the egg whites?",
            "How long should I knead this dough?",
            "The recipe says simmer, what is that?",
            "I'm stuck on step three of the cake recipe",
        ),
    ),
    (
        "find a parking spot",
        (
            "Where can I park near the stadium?",
            "Is there a car park close to the museum?",
            "I need somewhere to leave my car downtown",
            "Any free parking spaces around here?",
        ),
    ),
    (
        "cancel a gym membership",
        (
            "I want to stop my gym subscription",
            "Please end my fitness club membership",
            "How do I quit the gym?",
            "Cancel my membership at the gym",
        ),
    ),
    (
        "translate a short phrase",
        (
            "How do you say good night in Spanish?",
            "Translate thank you into French",
            "What is hello in Japanese?",
            "Can you put this sentence into German?",
        ),
    ),
    (
        "water and care for house plants",
        (
            "How often should I water my fern?",
            "My cactus leaves are turning yellow",
            "Does a basil plant need a lot of light?",
            "What's the best way to care for an orchid?",
        ),
    ),
    (
        "rent a car for a trip",
        (
            "I need a car for three days",
            "Can I hire a small car at the airport?",
            "Rent me a van for the weekend",
            "Is there a rental car available on Monday?",
        ),
    ),
    (
        "buy cinema tickets",
        (
            "Two tickets for the late film please",
            "Can I book seats for the movie tonight?",
            "I want to see the new film on Saturday",
            "Get me cinema tickets for the eight o'clock show",
        ),
    ),
    (
        "feed and walk a dog",
        (
            "How much should my puppy eat?",
            "How long should I walk my dog each day?",
            "What food is good for an old dog?",
            "My dog needs more exercise, any tips?",
        ),
    ),
    (
        "pay an electricity bill",
        (
            "I want to pay my power bill",
            "How do I settle the electricity invoice?",
            "My energy bill is due, can I pay it now?",
            "Pay this month's electric bill",
        ),
    ),
    (
        "fix a slow laptop",
        (
            "My laptop takes ages to start",
            "Why is my computer so slow?",
            "The notebook freezes when I open many tabs",
            "How can I speed up my old laptop?",
        ),
    ),
    (
        "learn a new language",
        (
            "What's the best way to start learning Italian?",
            "I want to practise my Portuguese every day",
            "How many words should I learn per week?",
            "Tips for picking up a second language?",
        ),
    ),
    (
        "visit a museum",
        (
            "When is the art museum open?",
            "Is the history museum free on Sundays?",
            "What exhibitions are on at the museum?",
            "I'd like to see the dinosaur hall at the museum",
        ),
    ),
    (
        "set a morning alarm",
        (
            "Wake me up at six tomorrow",
            "Set an alarm for seven thirty",
            "I need an alarm before my early flight",
            "Can you ring me at dawn?",
        ),
    ),
    (
        "write a thank-you note",
        (
            "Help me thank my teacher in a card",
            "I want to write a note to thank my neighbour",
            "What should I say to thank a friend for a gift?",
            "Draft a short thank-you message for my host",
        ),
    ),
    (
        "check the weather forecast",
        (
            "Will it rain tomorrow?",
            "Is it going to be sunny this weekend?",
            "What's the forecast for Tuesday?",
            "Do I need an umbrella later?",
        ),
    ),
    (
        "repair a bicycle tyre",
        (
            "My bike has a flat tyre",
            "How do I patch an inner tube?",
            "The back wheel of my bicycle keeps losing air",
            "Fix the puncture on my bike",
        ),
    ),
    (
        "choose a board game for a group",
        (
            "What game can six friends play together?",
            "Suggest a board game for a family night",
            "Any good party games for a big group?",
            "Which table game works for kids and adults?",
        ),
    ),
    (
        "sign up for a swimming class",
        (
            "Can my son join a swim lesson?",
            "I want to learn to swim as an adult",
            "Are there places left in the pool course?",
            "Enrol me in swimming lessons",
        ),
    ),
    (
        "sort household recycling",
        (
            "Which bin does glass go in?",
            "Can pizza boxes be recycled?",
            "What do I do with old batteries?",
            "How should I separate plastic and paper?",
        ),
    ),
    (
        "move a dentist appointment",
        (
            "I can't make my dentist visit on Monday",
            "Please change the time of my dental check-up",
            "Can I come to the dentist a day later?",
            "Reschedule my appointment at the dentist",
        ),
    ),
    (
        "tune a guitar",
        (
            "My guitar sounds out of tune",
            "How do I tune the low E string?",
            "What notes should the guitar strings be?",
            "Help me get my guitar in tune",
        ),
    ),
    (
        "find a bus stop",
        (
            "Where is the nearest bus stop?",
            "Which stop do I take the number 12 from?",
            "How far is the bus station from here?",
            "Is there a bus stop near the park?",
        ),
    ),
    (
        "start a vegetable garden",
        (
            "What vegetables are easy to grow?",
            "When should I plant carrots?",
            "How do I prepare soil for a veggie patch?",
            "I want to grow my own salad at home",
        ),
    ),
    (
        "pack for a beach holiday",
        (
            "What should I bring to the seaside?",
            "Make me a packing list for the beach",
            "Do I need a towel and sunscreen for the coast trip?",
            "Help me pack for a week by the sea",
        ),
    ),
)


def pick_row(rng: random.Random, *, held_out: bool = False, quote: bool = True) -> dict[str, Any]:
    """A row that picks a guide from a listing by its description: a system prompt lists 4-10
    guides under fresh names (snake_case, CamelCase or hyphenated, from the syllable inventory) in
    one of a few layouts, the user asks for one, and the assistant calls the guide loader with
    that guide's name. Only the listing says which name is meant, so the row teaches reading
    it: the step an agent takes when a harness renames its skills. The assistant first quotes the
    guide's line in a ``<think>`` note, so the name follows words it has just written (without the
    note, ``quote=False``, it was not learned: docs/studies/quote.md). ``held_out`` uses each
    guide's last request, which the corpus never does.

    >>> row = pick_row(random.Random(0))
    >>> call = row["messages"][-1]["tool_calls"][0]["function"]
    >>> call["arguments"]["name"] in row["messages"][0]["content"]
    True
    """
    listed = rng.sample(GUIDES, rng.randint(4, 10))
    names: list[str] = []
    taken: set[str] = set()
    for _ in listed:
        name = _guide_name(rng)
        while name.lower() in taken:
            name = _guide_name(rng)
        taken.add(name.lower())
        names.append(name)
    loader = rng.choice(("open_guide", "load_routine", "use_playbook", pronounceable_name(rng)))
    header = rng.choice(
        (
            "Guides (call {loader} with the guide name before answering):",
            "Routines you can load with {loader}:",
            "Pass one of these names to {loader} first:",
        )
    ).format(loader=loader)
    # Description first, as the harness's own catalog (``- description : name``) and the tiny
    # template's tool listing are written: the name follows the words that identify it.
    line = rng.choice(("- {d} : {n}", "- {d} -> {n}", "* {d} (name: {n})"))
    lines = [line.format(d=d, n=n) for (d, _requests), n in zip(listed, names, strict=True)]
    listing = "\n".join(lines)
    place = rng.choice(("the town help desk", "a travel service", "a home assistant", "the community centre"))
    asked = rng.randrange(len(listed))
    requests = listed[asked][1]
    request = requests[-1] if held_out else rng.choice(requests[:-1])
    tools = [tool_spec(loader, "open the steps of one guide", "name")]
    tools[0]["function"]["parameters"]["properties"]["name"]["enum"] = names
    messages = [
        {"role": "system", "content": f"You are the assistant of {place}.\n\n{header}\n{listing}"},
        {"role": "user", "content": request},
        {
            "role": "assistant",
            "content": f"<think>{lines[asked].lstrip('-* ')}</think>" if quote else "",
            "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": loader, "arguments": {"name": names[asked]}}}
            ],
        },
    ]
    return {"messages": messages, "tools": tools, "meta": {"kind": "copy", "copy": "pick", "answer": names[asked]}}


def _guide_name(rng: random.Random) -> str:
    name = pronounceable_name(rng)
    style = rng.random()
    if style < 0.3:
        return "".join(part.capitalize() for part in name.split("_"))
    if style < 0.5:
        return name.replace("_", "-")
    return name


def copy_corpus(
    n: int, *, seed: int = 0, share: float = 0.0, weights: tuple[float, ...] = COPY_WEIGHTS
) -> list[dict[str, Any]]:
    """``n`` rows of the stage-0 general corpus with ``share`` of them copy rows of ``weights``
    (:func:`parse_copy_mix`); ``share`` 0 is the general corpus itself, draw for draw."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"copy_share must be within [0, 1], got {share}")
    return general_rows(n, seed=seed, extra_share=share, extra_row=lambda rng: copy_row(rng, weights))


#: Seed of the probe's prompts (the corpus draws with the run's seed, 0 by default).
PROBE_SEED = 91_357
_LABELS = ("red", "blue", "green", "amber", "violet", "silver")


def copy_prompts(n: int, *, seed: int = PROBE_SEED) -> list[tuple[str, list[dict[str, Any]], Any, str]]:
    """``n`` prompts of each kind: (kind, messages, tools or None, the code the answer must hold).

    >>> [p[0] for p in copy_prompts(1)]
    ['echo', 'lookup', 'tool_argument', 'pick']
    """
    rng = random.Random(seed)
    # The pick prompts draw from a stream of their own, so the other kinds' prompts stay those
    # every earlier probe asked.
    pick_rng = random.Random(seed + 1)
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
        row = pick_row(pick_rng, held_out=True)
        out.append(("pick", row["messages"][:2], row["tools"], row["meta"]["answer"]))
    return out


def copy_probe(model: Any, tokenizer: Any = None, *, n: int = 30, max_new_tokens: int = 32) -> dict[str, Any]:
    """The share of ``n`` prompts per kind (echo, lookup, tool argument, pick) whose greedy answer
    holds the fresh code (the picked guide's fresh name) whole; ``model`` is a loaded causal LM (with ``tokenizer``) or a checkpoint folder."""
    import torch

    if isinstance(model, str):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model)
        model = AutoModelForCausalLM.from_pretrained(model)
    model.eval()
    prompts = copy_prompts(n)
    hits = dict.fromkeys((p[0] for p in prompts), 0)  # the kinds, in the order they are asked
    for kind, messages, tools, code in prompts:
        enc = tokenizer.apply_chat_template(
            messages, tools=tools, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        enc = {k: v.to(model.device) for k, v in enc.items()}
        with torch.no_grad():
            out = model.generate(
                **enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )
        answer = tokenizer.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        if kind == "pick":  # the call must name it: a quote of the listing before it does not count
            answer = answer.rpartition("</think>")[2]
        hits[kind] += code in answer
    return {**{k: round(v / n, 3) for k, v in hits.items()}, "n": n}


class CopyRows(BaseHook):
    """The stage-0 hook of ``copy_share``, ``copy_mix`` and ``copy_probe``: copy rows in the
    corpus, named in its label, and the copy probe on the saved model, recorded in the result and
    its ``train.json`` (whether the base reads a fresh code off the conversation, which no later
    stage teaches)."""

    def extra_rows(self, cfg: BaseStageConfig) -> ExtraRows | None:
        share = getattr(cfg, "copy_share", 0.0)
        if not share:
            return None
        weights = parse_copy_mix(cfg.copy_mix)
        return share, lambda rng: copy_row(rng, weights)

    def label(self, cfg: BaseStageConfig) -> str:
        if not getattr(cfg, "copy_share", 0.0):
            return ""
        return f", {cfg.copy_share:.0%} copying rows" + (f" ({cfg.copy_mix})" if cfg.copy_mix else "")

    def finish(self, cfg: BaseStageConfig, result: TrainResult) -> None:
        from accelerate import PartialState

        if not getattr(cfg, "copy_probe", 0) or result.interrupted or not PartialState().is_main_process:
            return
        result.extra["copy_probe"] = copy_probe(result.out, n=cfg.copy_probe)
        manifest = read_manifest(result.out) or {}
        write_manifest(result.out, {**manifest, "copy_probe": result.extra["copy_probe"]})
