"""Prompt perturbations for the ``robustness`` suite: what real live-stream chat looks like.

Each perturbation rewrites how the viewer speaks, never what they ask: the case's expectations
(skill, tool calls, facts) stay valid. Tokens a correct answer depends on — anything with a
digit, codes and ids, every word of the expected arguments and facts, and the words in
``protected`` (e.g. product names) — are never touched. Seeded: same case and seed, same text.

>>> from harnessctl.sim.case import Case
>>> c = Case(id="c1", intent="price", query="how much is the glow serum today?")
>>> perturb(c, "typo", seed=3).query != c.query
True
>>> perturb(c, "typo", seed=3).query == perturb(c, "typo", seed=3).query
True
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Iterable

from harnessctl.sim.case import Case

KINDS = ("typo", "paraphrase", "noise", "distractor")

_KEYBOARD = {
    "a": "qsz",
    "b": "vn",
    "c": "xv",
    "d": "sf",
    "e": "wr",
    "f": "dg",
    "g": "fh",
    "h": "gj",
    "i": "uo",
    "j": "hk",
    "k": "jl",
    "l": "k",
    "m": "n",
    "n": "bm",
    "o": "ip",
    "p": "o",
    "q": "w",
    "r": "et",
    "s": "ad",
    "t": "ry",
    "u": "yi",
    "v": "cb",
    "w": "qe",
    "x": "zc",
    "y": "tu",
    "z": "x",
}

# Viewer-chat rewrites: (pattern, replacements). Meaning-preserving, informal.
_PARAPHRASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\bhow much is\b", ("what's the price of", "price on", "how much for")),
    (r"\bhow much\b", ("what's the damage", "what does it cost", "how pricey")),
    (r"\bdo you have\b", ("got any", "any", "is there any")),
    (r"\bcan you\b", ("could u", "can u pls", "would you")),
    (r"\bcan i\b", ("am i able to", "could i", "is it possible to")),
    (r"\bis it\b", ("is this", "would it be", "is that")),
    (r"\bwhat is\b", ("what's", "whats", "tell me")),
    (r"\bwhen will\b", ("when's", "how soon will", "when would")),
    (r"\bplease\b", ("pls", "plz", "please please")),
    (r"\byou\b", ("u", "you guys", "ya")),
    (r"\bthanks\b", ("thx", "ty", "thank u")),
    (r"\bthis one\b", ("the one on screen", "this thing", "the one you're holding")),
)
_PREFIXES = (
    "hey! ",
    "hi Mia, ",
    "quick q: ",
    "um ",
    "sorry if someone asked already, ",
    "ok so ",
    "omg ",
    "hello hello ",
)
_SUFFIXES = (" thanks!", " pls", " ??", " asking for my mom", " thx", " :)", "", " (first time here)")
_EMOJI = ("😍", "🔥", "🙏", "😂", "💖", "👀", "🛒", "✨")
_CHATTER = (
    "my cat just walked across my keyboard lol.",
    "the music on this stream is so good.",
    "greetings from the night shift!",
    "I missed yesterday's stream, was it fun?",
    "love your earrings btw.",
    "is anyone else watching from the bus?",
    "brb getting snacks.",
    "shoutout to the mods.",
)
_HISTORY = (
    ({"role": "user", "content": "hiii everyone"}, {"role": "assistant", "content": "Hi, welcome to the stream!"}),
    ({"role": "user", "content": "is this live?"}, {"role": "assistant", "content": "Yes, we're live right now!"}),
    (
        {"role": "user", "content": "what's the weather like there?"},
        {"role": "assistant", "content": "I'm here for the shop today, ask me anything about it!"},
    ),
    (
        {"role": "user", "content": "love the lighting"},
        {"role": "assistant", "content": "Thank you, glad you like it!"},
    ),
)

_WORD = re.compile(r"[A-Za-z][A-Za-z']*")


def protected_words(case: Case, extra: Iterable[str] = ()) -> set[str]:
    """Lower-cased words a perturbation must not alter (argument values, facts, ``extra``)."""
    words: set[str] = set()

    def add(value: object) -> None:
        if isinstance(value, str):
            words.update(w.lower() for w in _WORD.findall(value))
        elif isinstance(value, (list, tuple)):
            for v in value:
                add(v)
        elif isinstance(value, dict):
            for v in value.values():
                add(v)

    for call in case.expect.calls:
        add(call.args)
    add(case.expect.facts)
    add(case.expect.any_facts)
    add(case.expect.forbidden)
    # What the viewer's words pin down (product, region, order number, size...) and the names
    # on screen: a typo there would change the question, not how it is asked.
    add(getattr(case, "slots", {}) or {})
    add(getattr(case.context, "product_name", None))
    add(getattr(case.context, "lineup", {}) or {})
    add(list(extra))
    return words


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    op = rng.choice(("swap", "drop", "double", "key"))
    if op == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if op == "drop":
        return word[:i] + word[i + 1 :]
    if op == "double":
        return word[:i] + word[i] + word[i:]
    near = _KEYBOARD.get(word[i].lower())
    return word[:i] + (rng.choice(near) if near else word[i]) + word[i + 1 :]


def _editable_spans(text: str, protected: set[str]) -> list[tuple[int, int]]:
    spans = []
    for m in _WORD.finditer(text):
        w = m.group(0)
        # Codes and names (SKU-12, Glow) and protected words stay as they are.
        if (
            len(w) < 4
            or w.lower() in protected
            or any(ch.isupper() for ch in w[1:])
            or w[0].isupper()
            and m.start() > 0
        ):
            continue
        end = m.end()
        if end < len(text) and (text[end].isdigit() or text[end] in "-_"):
            continue
        spans.append((m.start(), m.end()))
    return spans


def add_typos(text: str, rng: random.Random, protected: set[str], n: int | None = None) -> str:
    spans = _editable_spans(text, protected)
    if not spans:
        return text
    n = n if n is not None else rng.randint(1, min(3, len(spans)))
    chosen = sorted(rng.sample(spans, min(n, len(spans))), reverse=True)
    for start, end in chosen:
        text = text[:start] + _typo(text[start:end], rng) + text[end:]
    return text


def paraphrase(text: str, rng: random.Random, protected: set[str]) -> str:
    out = text
    rules = list(_PARAPHRASES)
    rng.shuffle(rules)
    changed = 0
    for pattern, options in rules:
        m = re.search(pattern, out, flags=re.I)
        if not m or any(w.lower() in protected for w in _WORD.findall(m.group(0))):
            continue
        out = out[: m.start()] + rng.choice(options) + out[m.end() :]
        changed += 1
        if changed >= 2:
            break
    prefix = rng.choice(_PREFIXES) if rng.random() < 0.6 or not changed else ""
    suffix = rng.choice(_SUFFIXES) if rng.random() < 0.5 else ""
    if prefix and out[:1].isupper() and not out.split(" ", 1)[0].isupper():
        out = out[0].lower() + out[1:]
    return (prefix + out + suffix).strip()


def add_noise(text: str, rng: random.Random, protected: set[str]) -> str:
    out = text
    spans = _editable_spans(out, protected)
    if spans and rng.random() < 0.6:
        start, end = rng.choice(spans)
        word = out[start:end]
        # Elongate a vowel ("sooo") or shout the word.
        vowels = [i for i, ch in enumerate(word) if ch in "aeiou"]
        if vowels and rng.random() < 0.5:
            i = rng.choice(vowels)
            word = word[: i + 1] + word[i] * rng.randint(2, 4) + word[i + 1 :]
        else:
            word = word.upper()
        out = out[:start] + word + out[end:]
    out = out.rstrip("?!.") + rng.choice(("???", "!!", "?!", "??", "..."))
    out += " " + "".join(rng.sample(_EMOJI, rng.randint(1, 3)))
    if rng.random() < 0.4:
        out = "@Mia " + out
    return out


def add_distractor(case: Case, rng: random.Random) -> Case:
    chatter = rng.choice(_CHATTER)
    case.query = f"{chatter} anyway, {case.query}" if rng.random() < 0.5 else f"{case.query} ({chatter})"
    turns = list(rng.choice(_HISTORY))
    case.context.history = turns + list(case.context.history)
    return case


def perturb(case: Case, kind: str, seed: int, protected: Iterable[str] = ()) -> Case:
    """A copy of ``case`` whose viewer message is perturbed by ``kind`` (one of :data:`KINDS`),
    tagged ``perturb:<kind>``; the expectations are unchanged."""
    if kind not in KINDS:
        raise ValueError(f"unknown perturbation {kind!r}; use one of {', '.join(KINDS)}")
    rng = random.Random(f"{seed}:{kind}:{case.id}")
    out = copy.deepcopy(case)
    keep = protected_words(case, protected)
    if kind == "typo":
        out.query = add_typos(out.query, rng, keep)
    elif kind == "paraphrase":
        out.query = paraphrase(out.query, rng, keep)
    elif kind == "noise":
        out.query = add_noise(out.query, rng, keep)
    else:
        out = add_distractor(out, rng)
    out.tags = list(out.tags) + [f"perturb:{kind}"]
    return out
