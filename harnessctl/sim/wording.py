"""Varied viewer wording for training data: the same message, written another way.

The suites word their viewer messages from templates held out of training
(:mod:`harnessctl.sim.templates`), so a model that saw a handful of wordings per intent in its
training data learns those wordings, not the question. :func:`vary_template` rewrites a
training template with operators that know nothing about intents — chat shorthand and its
long forms, dropped function words, an inserted filler, casing, end punctuation — so it can
never write a held-out template's phrasing, and the case's expectations stay valid (they are
computed from the varied message). Placeholders (``{this}``, ``{name}``...) are never touched.

These are not the robustness suite's perturbations (:mod:`harnessctl.eval.perturb`: typos,
phrase paraphrases, shouting and emoji, distractor chatter): training on those would let that
suite measure its own training data.

>>> import random
>>> vary_template("can you tell me more about {this} please?", random.Random(8))
'can u tell me more abt rly {this} pls'
>>> vary_template("how much is {this}?", random.Random(3)).count("{this}")
1
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

# Long form -> chat shorthand; the reverse map writes the long form of a shorthand.
_SHORTHAND: dict[str, str] = {
    "you": "u",
    "your": "ur",
    "are": "r",
    "please": "pls",
    "about": "abt",
    "thanks": "thx",
    "really": "rly",
    "because": "bc",
    "with": "w/",
    "okay": "ok",
    "what": "wat",
    "tomorrow": "tmrw",
}
_LONGHAND: dict[str, str] = {short: long for long, short in _SHORTHAND.items()} | {"plz": "please", "hw": "how"}
# Words a reader does not need to follow the question; dropping them writes telegraphic chat.
# Never a negation, a pointer word ("this", "it", "one") or a question word.
_FUNCTION_WORDS = frozenset({"the", "a", "an", "is", "are", "me", "do", "does", "can", "just", "so", "very", "to"})
_FILLERS = ("just", "like", "actually", "rly", "so", "um")

_PLACEHOLDER = re.compile(r"(\{[a-z_]+\})")
_WORD = re.compile(r"[A-Za-z][A-Za-z'/]*")


def _segments(template: str) -> list[str]:
    """The template split into text and placeholder segments (placeholders at odd indexes)."""
    return _PLACEHOLDER.split(template)


def _map_text(template: str, fn: Callable[[str], str]) -> str:
    """Apply ``fn`` to the text between placeholders."""
    parts = _segments(template)
    return "".join(part if i % 2 else fn(part) for i, part in enumerate(parts))


def _word_spans(template: str) -> list[tuple[int, int]]:
    """Spans of the words outside placeholders."""
    spans = []
    offset = 0
    for i, part in enumerate(_segments(template)):
        if i % 2 == 0:
            spans += [(offset + m.start(), offset + m.end()) for m in _WORD.finditer(part)]
        offset += len(part)
    return spans


def _swap_words(template: str, table: dict[str, str], rng: random.Random) -> str:
    spans = [(s, e) for s, e in _word_spans(template) if template[s:e].lower() in table]
    if not spans:
        return template
    chosen = sorted(rng.sample(spans, rng.randint(1, len(spans))), reverse=True)
    for s, e in chosen:
        word = template[s:e]
        new = table[word.lower()]
        template = template[:s] + (new.capitalize() if word[0].isupper() else new) + template[e:]
    return template


def apply_shorthand(template: str, rng: random.Random) -> str:
    """Some long forms as chat shorthand: "please" -> "pls", "about" -> "abt"."""
    return _swap_words(template, _SHORTHAND, rng)


def apply_longhand(template: str, rng: random.Random) -> str:
    """Some chat shorthand written out: "u" -> "you", "pls" -> "please"."""
    return _swap_words(template, _LONGHAND, rng)


def drop_function_words(template: str, rng: random.Random) -> str:
    """One or two function words dropped ("what is {this} made of" -> "what {this} made of")."""
    spans = [(s, e) for s, e in _word_spans(template) if template[s:e].lower() in _FUNCTION_WORDS]
    words = len(_word_spans(template))
    if not spans or words < 3:  # a two-word message has nothing to spare
        return template
    for s, e in sorted(rng.sample(spans, min(len(spans), rng.randint(1, 2))), reverse=True):
        # Take the word and one space beside it, so no double space is left.
        if e < len(template) and template[e] == " ":
            e += 1
        elif s > 0 and template[s - 1] == " ":
            s -= 1
        template = template[:s] + template[e:]
    return template


def insert_filler(template: str, rng: random.Random) -> str:
    """A filler word before one of the words ("how much is {this}" -> "how much is like {this}")."""
    starts = [s for s, _ in _word_spans(template)] + [m.start() for m in _PLACEHOLDER.finditer(template)]
    if not starts:
        return template
    at = rng.choice(starts)
    return template[:at] + rng.choice(_FILLERS) + " " + template[at:]


def change_case(template: str, rng: random.Random) -> str:
    """All lower case, or the first letter capitalised."""
    if rng.random() < 0.5 or not template[:1].isalpha():
        return _map_text(template, str.lower)
    return template[0].upper() + template[1:]


def change_end_punctuation(template: str, rng: random.Random) -> str:
    """A question mark dropped, added or doubled at the end (emoji kept where they are)."""
    body = template.rstrip()
    if body.endswith("?"):
        return body.rstrip("?") if rng.random() < 0.6 else body + "?"
    if body.endswith("}") or body[-1:].isalnum():
        return body + "?"
    return template


#: The wording operators, by name, in the order :func:`vary_template` may draw them.
WORDING_OPERATORS: dict[str, Callable[[str, random.Random], str]] = {
    "shorthand": apply_shorthand,
    "longhand": apply_longhand,
    "drop_function_words": drop_function_words,
    "insert_filler": insert_filler,
    "case": change_case,
    "end_punctuation": change_end_punctuation,
}


def vary_template(template: str, rng: random.Random, max_ops: int = 3) -> str:
    """``template`` rewritten by one to ``max_ops`` wording operators, placeholders intact.

    Operators that find nothing to change are passed over, so the result differs from the
    input whenever any operator applies (punctuation and filler always can).

    >>> vary_template("price for {this} pls", random.Random(0)) != "price for {this} pls"
    True
    """
    names = list(WORDING_OPERATORS)
    rng.shuffle(names)
    want = rng.randint(1, max_ops)
    out = template
    applied = 0
    for name in names:
        new = WORDING_OPERATORS[name](out, rng)
        if new != out and new.strip():
            out = new
            applied += 1
            if applied >= want:
                break
    return out
