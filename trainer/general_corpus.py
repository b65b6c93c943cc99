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
- **copying** (only when asked: ``copy_share`` of :func:`general_rows`): rows whose answer holds a
  string drawn fresh for the row (a code, a number, a name), so the only way to predict it is to
  copy it from the conversation: echo a code, look a code up in a list, call a tool with the code
  the user gave and answer with the numbers it returned. The other kinds draw their arguments from
  a few values a model learns by heart; an agent has to copy what is on screen (a product id, an
  order id, a skill's name in a renamed listing), and a base that never had to copy did not learn
  to (the long study's agents named the on-screen product in 0 to 4 of about 30 episodes).

>>> rows = general_rows(30, seed=0)
>>> sorted({r["meta"]["kind"] for r in rows})
['chat', 'instruction', 'tool_use']
"""

from __future__ import annotations

import json
import random
from typing import Any

from harnessctl.models.syllables import pronounceable_name

KINDS = ("instruction", "chat", "tool_use", "copy")

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


_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"
_COPY_LABELS = ("red", "blue", "green", "amber", "violet", "silver", "north", "south", "east", "west", "gate", "desk")
#: Generic lookup tools of the copy rows: (canonical name, description, parameter, what the code names).
_CODE_TOOLS = (
    ("track_parcel", "where a parcel is, by its tracking code", "code", "parcel"),
    ("check_ticket", "the state of a support ticket", "ticket_id", "ticket"),
    ("find_locker", "which floor a storage locker is on", "locker", "locker"),
    ("lookup_booking", "the details of a table booking", "booking_ref", "booking"),
)


#: The copy rows' kinds and their shares. Echo is the plainest copy, and the one copying first forms
#: on: the tiny model, trained on echo rows alone at a steady 3e-3, went from none to half of its
#: answers copied whole between steps 500 and 700; on the four kinds in equal shares it had not
#: started by step 1,200. ``pick`` (a guide chosen from a listing by its description, see
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
#: each is held out of the corpus for the pick probe (:func:`trainer.probes.copy_prompts`).
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
    note, ``quote=False``, the tiny model's choice stayed at chance). ``held_out`` uses each
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


def general_rows(
    n: int,
    *,
    seed: int = 0,
    mix: tuple[float, float, float] = (0.4, 0.2, 0.4),
    copy_share: float = 0.0,
    copy_weights: tuple[float, ...] = COPY_WEIGHTS,
) -> list[dict[str, Any]]:
    """``n`` rows of the general corpus, ``mix`` = shares of instruction / chat / tool-use rows,
    and ``copy_share`` of the rows copying ones (the others keep ``mix`` among themselves), their
    kinds drawn with ``copy_weights`` (see :func:`parse_copy_mix`).

    >>> rows = general_rows(200, seed=0, copy_share=0.5)
    >>> 70 < sum(r["meta"]["kind"] == "copy" for r in rows) < 130
    True
    """
    if not 0.0 <= copy_share <= 1.0:
        raise ValueError(f"copy_share must be within [0, 1], got {copy_share}")
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        if copy_share:
            weights = [w * (1.0 - copy_share) for w in mix] + [copy_share]
            kind = rng.choices(KINDS, weights=weights)[0]
        else:  # the corpus every checkpoint before copy rows was trained on, draw for draw
            kind = rng.choices(KINDS[:3], weights=mix)[0]
        if kind == "instruction":
            row, check = instruction_row(rng)
            row["meta"]["check"] = check
        elif kind == "chat":
            row = chat_row(rng)
        elif kind == "copy":
            row = copy_row(rng, copy_weights)
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
