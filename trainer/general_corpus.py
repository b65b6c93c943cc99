"""The general corpus of stage 0: what a pretrained base model already knows, generated offline
for a model built from scratch.

Three kinds of chat rows, on general topics far from live commerce (disjoint from every eval
suite's prompts, tested):

- **instructions** of the IFEval kinds (lowercase, keywords, bullets, quotes, endings,
  JSON, no commas, a title, a sentence count), each written with the official instruction id
  and arguments so the IFEval checkers verify the answer (:func:`instruction_row` returns both);
- **plain chat**: sums, counting letters, sorting words, greetings, repeating a phrase;
- **generic tool use** with unrelated tool sets (weather, currency, time zones, a library...):
  the user asks, the assistant calls the right tool from a listing whose names are canonical or
  made of pronounceable syllables, reads the result and answers with it;

With ``extra_share`` of :func:`general_rows`, a share of rows comes from another maker: the
experimental wing's copy rows, for a model that must learn to copy from its context
(docs/studies/copying.md).

>>> rows = general_rows(30, seed=0)
>>> sorted({r["meta"]["kind"] for r in rows})
['chat', 'instruction', 'tool_use']
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from harnessctl.models.syllables import pronounceable_name

#: The row kinds ``general_rows`` draws; ``extra``: rows of another maker (``extra_row``).
KINDS = ("instruction", "chat", "tool_use", "extra")

#: General topics, each with a few plain sentences about it.
TOPICS: dict[str, list[str]] = {
    "ocean tides": [
        "Tides rise and fall about twice a day.",
        "The moon pulls the water toward it.",
        "Spring tides are the strongest ones.",
        "Sailors plan trips around the tide table.",
    ],
    "growing tomatoes": [
        "Tomatoes need six hours of sun.",
        "Water the roots and not the leaves.",
        "A stake keeps the plant upright.",
        "Pick the fruit when it turns deep red.",
    ],
    "learning chess": [
        "Each side starts with sixteen pieces.",
        "The knight moves in an L shape.",
        "Control of the centre matters early.",
        "Checkmate ends the game.",
    ],
    "baking bread": [
        "Yeast makes the dough rise.",
        "Kneading builds the gluten.",
        "A hot oven gives a crisp crust.",
        "Let the loaf cool before slicing.",
    ],
    "city cycling": [
        "A helmet protects your head.",
        "Lights help drivers see you at night.",
        "Signal before you turn.",
        "Keep the tyres firm for an easy ride.",
    ],
    "night sky watching": [
        "Dark places show more stars.",
        "Your eyes adapt in about twenty minutes.",
        "Planets shine without twinkling.",
        "A red light keeps your night vision.",
    ],
    "saving water at home": [
        "Short showers save many litres.",
        "Fix a dripping tap quickly.",
        "Run the washer only when it is full.",
        "Collect rain for the garden.",
    ],
    "learning a language": [
        "Practice a little every day.",
        "Speak out loud even when unsure.",
        "Listen to songs in the language.",
        "Review new words the next morning.",
    ],
    "keeping bees": [
        "A colony has one queen.",
        "Worker bees gather nectar and pollen.",
        "Bees need water near the hive.",
        "Honey is harvested late in summer.",
    ],
    "mountain hiking": [
        "Start early to avoid afternoon storms.",
        "Carry more water than you expect to need.",
        "Tell someone your route.",
        "Turn back if the weather changes.",
    ],
    "birdwatching": [
        "Mornings are the busiest time for birds.",
        "Binoculars help you see details.",
        "Learn a few common songs first.",
        "Keep a notebook of what you see.",
    ],
    "recycling paper": [
        "Paper fibres can be reused several times.",
        "Keep paper dry before recycling.",
        "Remove plastic windows from envelopes.",
        "Recycled paper saves trees and energy.",
    ],
}

_WRITE = (
    "Write a short note about {t}.",
    "Tell me a little about {t}.",
    "Give a brief explanation of {t}.",
    "Describe {t} in a few sentences.",
    "Share some basic tips on {t}.",
)
_KEYWORDS = ("simple", "patience", "routine", "careful", "season", "friendly", "steady")
_ENDINGS = ("Is there anything else I can help with?", "Hope this helps.", "Enjoy trying it.")


def instruction_row(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any]]:
    """One instruction-following row and its check, ``{"instruction_id_list": [...], "kwargs": [...]}``."""
    topic = rng.choice(sorted(TOPICS))
    sentences = rng.sample(TOPICS[topic], rng.randint(2, 4))
    kind = rng.choice(
        ("lowercase", "keywords", "bullets", "quotes", "ending", "json", "no_comma", "title", "sentences")
    )
    body = " ".join(sentences)
    if kind == "lowercase":
        text, iid, kw = "Your whole answer must be in lowercase letters.", "change_case:english_lowercase", {}
        reply = body.lower()
    elif kind == "keywords":
        words = rng.sample(_KEYWORDS, 2)
        text = f"Include the words {words[0]} and {words[1]} in your answer."
        iid, kw = "keywords:existence", {"keywords": words}
        reply = f"{body} It takes a {words[0]} approach and a {words[1]} habit."
    elif kind == "bullets":
        n = len(sentences)
        text = f"Answer with exactly {n} bullet points in markdown, each starting with * ."
        iid, kw = "detectable_format:number_bullet_lists", {"num_bullets": n}
        reply = "\n".join(f"* {s}" for s in sentences)
    elif kind == "quotes":
        text, iid, kw = "Wrap your entire answer in double quotation marks.", "startend:quotation", {}
        reply = f'"{body}"'
    elif kind == "ending":
        end = rng.choice(_ENDINGS)
        text = f"End your answer with the exact phrase: {end}"
        iid, kw = "startend:end_checker", {"end_phrase": end}
        reply = f"{body} {end}"
    elif kind == "json":
        text, iid, kw = "Give your whole answer as a JSON object.", "detectable_format:json_format", {}
        reply = json.dumps({"topic": topic, "tips": sentences})
    elif kind == "no_comma":
        text, iid, kw = "Do not use any commas in your answer.", "punctuation:no_comma", {}
        reply = body.replace(",", "")
    elif kind == "title":
        text = "Give your answer a title wrapped in double angle brackets, like <<my title>>."
        iid, kw = "detectable_format:title", {}
        reply = f"<<{topic.title()}>>\n{body}"
    else:
        n = len(sentences) + 1
        text = f"Use fewer than {n} sentences."
        iid, kw = "length_constraints:number_sentences", {"num_sentences": n, "relation": "less than"}
        reply = body
    prompt = f"{rng.choice(_WRITE).format(t=topic)} {text}"
    row = {
        "messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": reply}],
        "tools": [],
        "meta": {"kind": "instruction", "topic": topic},
    }
    return row, {"instruction_id_list": [iid], "kwargs": [kw]}


def chat_row(rng: random.Random) -> dict[str, Any]:
    """A plain exchange: arithmetic, counting, sorting, a greeting, an echo."""
    kind = rng.choice(("sum", "count", "sort", "greet", "echo"))
    if kind == "sum":
        a, b = rng.randint(2, 60), rng.randint(2, 60)
        q, a_ = f"What is {a} plus {b}?", f"{a} plus {b} is {a + b}."
    elif kind == "count":
        word = rng.choice(("banana", "letter", "committee", "balloon", "pepper", "coffee", "mississippi"))
        ch = rng.choice(sorted(set(word)))
        q, a_ = (
            f"How many times does the letter {ch} appear in {word}?",
            f"The letter {ch} appears {word.count(ch)} times in {word}.",
        )
    elif kind == "sort":
        words = rng.sample(("pear", "kite", "river", "stone", "lamp", "cloud", "maple", "owl"), 4)
        q, a_ = f"Sort these words alphabetically: {', '.join(words)}.", ", ".join(sorted(words)) + "."
    elif kind == "greet":
        name = rng.choice(("Ana", "Tom", "Priya", "Kenji", "Lea", "Omar"))
        q, a_ = f"Hi, I am {name}!", f"Hello {name}, nice to meet you. How can I help today?"
    else:
        phrase = rng.choice(("the sky is wide", "slow and steady", "one step at a time", "good morning friends"))
        q, a_ = f"Repeat after me: {phrase}", phrase
    return {
        "messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a_}],
        "tools": [],
        "meta": {"kind": "chat"},
    }


#: Generic tools: (canonical name, description, parameter, example values, result key, answer template).
TOOLS: tuple[tuple[str, str, str, tuple[str, ...], str, str], ...] = (
    (
        "get_weather",
        "current weather for a city",
        "city",
        ("Lisbon", "Oslo", "Nairobi", "Lima"),
        "forecast",
        "The weather in {arg} is {value}.",
    ),
    (
        "convert_currency",
        "euro amount in dollars",
        "amount",
        ("10", "25", "80", "120"),
        "dollars",
        "{arg} euros are about {value} dollars.",
    ),
    (
        "local_time",
        "the local time in a city",
        "city",
        ("Tokyo", "Denver", "Cairo", "Perth"),
        "time",
        "It is {value} in {arg} right now.",
    ),
    (
        "define_word",
        "the meaning of an English word",
        "word",
        ("brisk", "lucid", "ample", "frugal"),
        "meaning",
        "{arg} means {value}.",
    ),
    (
        "find_book",
        "the author of a book title",
        "title",
        ("Moby Dick", "Emma", "Dracula", "Ulysses"),
        "author",
        "{arg} was written by {value}.",
    ),
    (
        "flight_status",
        "whether a flight number is on time",
        "flight",
        ("AB12", "KL605", "QF9", "UA88"),
        "status",
        "Flight {arg} is {value}.",
    ),
)
_QUESTIONS = {
    "get_weather": "What's the weather like in {arg}?",
    "convert_currency": "How much is {arg} euros in dollars?",
    "local_time": "What time is it in {arg}?",
    "define_word": "What does the word {arg} mean?",
    "find_book": "Who wrote {arg}?",
    "flight_status": "Is flight {arg} on time?",
}
_RESULTS = {
    "get_weather": ("sunny and 21 C", "light rain and 14 C", "windy and 9 C"),
    "convert_currency": None,
    "local_time": ("08:15", "13:40", "19:05", "22:30"),
    "define_word": ("quick and energetic", "clear and easy to understand", "more than enough", "careful with money"),
    "find_book": None,
    "flight_status": ("on time", "delayed by 20 minutes", "boarding now"),
}
_AUTHORS = {"Moby Dick": "Herman Melville", "Emma": "Jane Austen", "Dracula": "Bram Stoker", "Ulysses": "James Joyce"}


def tool_spec(name: str, description: str, parameter: str) -> dict[str, Any]:
    """An OpenAI-style tool definition with one required string parameter.

    >>> tool_spec("get_weather", "current weather for a city", "city")["function"]["parameters"]["required"]
    ['city']
    """
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {parameter: {"type": "string"}}, "required": [parameter]},
        },
    }


def tool_use_row(rng: random.Random, *, canonical_share: float = 0.3) -> dict[str, Any]:
    """A user question, the right call among 2-4 listed tools, the tool's result, the answer."""
    listed = rng.sample(TOOLS, rng.randint(2, 4))
    canonical = rng.random() < canonical_share
    names = {t[0]: (t[0] if canonical else pronounceable_name(rng)) for t in listed}
    tools = [tool_spec(names[t[0]], t[1], t[2]) for t in listed]
    messages: list[dict[str, Any]] = []
    for turn, tool in enumerate(rng.sample(listed, min(len(listed), rng.randint(1, 2)))):
        key, _desc, param, values, result_key, answer = tool
        arg = rng.choice(values)
        if key == "convert_currency":
            value = f"{float(arg) * 1.08:.2f}"
        elif key == "find_book":
            value = _AUTHORS[arg]
        else:
            value = rng.choice(_RESULTS[key])  # type: ignore[arg-type]
        call_id = f"call_{turn}"
        messages += [
            {"role": "user", "content": _QUESTIONS[key].format(arg=arg)},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": names[key], "arguments": {param: arg}}}
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "name": names[key], "content": json.dumps({result_key: value})},
            {"role": "assistant", "content": answer.format(arg=arg, value=value)},
        ]
    return {"messages": messages, "tools": tools, "meta": {"kind": "tool_use", "canonical": canonical}}


def general_rows(
    n: int,
    *,
    seed: int = 0,
    mix: tuple[float, float, float] = (0.4, 0.2, 0.4),
    extra_share: float = 0.0,
    extra_row: Callable[[random.Random], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """``n`` rows of the general corpus, ``mix`` = shares of instruction / chat / tool-use rows,
    and ``extra_share`` of the rows drawn by ``extra_row`` from the same random stream (the others
    keep ``mix`` among themselves): an extension's rows, such as the experimental wing's copy rows.

    >>> extra = lambda rng: {"messages": [], "meta": {"kind": "extra"}}
    >>> rows = general_rows(200, seed=0, extra_share=0.5, extra_row=extra)
    >>> 70 < sum(r["meta"]["kind"] == "extra" for r in rows) < 130
    True
    """
    if not 0.0 <= extra_share <= 1.0:
        raise ValueError(f"extra_share must be within [0, 1], got {extra_share}")
    if extra_share and extra_row is None:
        raise ValueError("extra_share needs extra_row, the function that draws those rows")
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        if extra_share:
            weights = [w * (1.0 - extra_share) for w in mix] + [extra_share]
            kind = rng.choices(KINDS, weights=weights)[0]
        else:  # the corpus every checkpoint was trained on, draw for draw
            kind = rng.choices(KINDS[:3], weights=mix)[0]
        if kind == "instruction":
            row, check = instruction_row(rng)
            row["meta"]["check"] = check
        elif kind == "chat":
            row = chat_row(rng)
        elif kind == "extra":
            row = extra_row(rng)  # type: ignore[misc]
        else:
            row = tool_use_row(rng)
        rows.append(row)
    return rows


def general_prompts(n: int, *, seed: int = 0) -> list[str]:
    """User prompts of the general corpus (stage 2's offline prompt set): instructions and chat."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        row = instruction_row(rng)[0] if rng.random() < 0.7 else chat_row(rng)
        out.append(row["messages"][0]["content"])
    return out
