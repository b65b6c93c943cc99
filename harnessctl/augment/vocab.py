"""Surface vocabularies for augmentation, split into disjoint training and held-out pools.

Every surface token HSA can introduce — a name word, a syllable, a paraphrase phrase, a frame,
a feedback template, a result prefix, a skill header — belongs to exactly one split, decided by
a fixed rule on the token itself (:func:`split_of`: a salted SHA-256, one third held out). The
rule does not depend on the order of the data files, so adding a synonym never moves another
one across the split. Generated names keep their pieces delimited (``snake_case``,
``camelCase``, ``kebab-case``), so a name made of training tokens can never spell a name made
of held-out tokens: held-out variants cannot leak into training data.

>>> vocab = vocabulary("heldout")
>>> all(split_of(s) == "heldout" for s in vocab.syllables)
True
>>> style_name(["fetch", "item", "card"], "camel")
'fetchItemCard'
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from harnessctl.models.syllables import SYLLABLE_SET, SYLLABLES, name_syllables

SPLITS = ("train", "heldout")
#: Naming styles a renamed element may take. Each keeps word boundaries visible.
NAME_STYLES = ("snake", "camel", "pascal", "kebab")
#: A surface name must be usable as an OpenAI function name.
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_SPLIT_SALT = b"harnessctl-vocab:"
_WORD_RE = re.compile(r"[a-z]+$")


def split_of(token: str) -> str:
    """The split a surface token belongs to: ``"heldout"`` for one third of tokens, else ``"train"``.

    >>> split_of("fetch") in SPLITS
    True
    """
    digest = hashlib.sha256(_SPLIT_SALT + token.encode("utf-8")).digest()
    return "heldout" if int.from_bytes(digest[:4], "big") % 3 == 0 else "train"


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    return split


@dataclass(frozen=True)
class PhraseEntry:
    """A word-level substitution: ``match`` (whole words, any case) -> one of ``replacements``."""

    match: str
    replacements: tuple[str, ...]
    before_ref: bool = False  # only right before a tool/skill reference ("Call {{ tool.x }}")


@dataclass(frozen=True)
class Vocabulary:
    """The surfaces one split may introduce. Build it with :func:`vocabulary`."""

    split: str
    syllables: tuple[str, ...]
    name_stoplist: frozenset[str]  # English words a random identifier's word must not be
    synonyms: dict[str, tuple[str, ...]]  # name word -> replacement words of this split
    generic_verbs: tuple[str, ...]
    glue: frozenset[str]  # connector words kept as they are ("to", "and")
    phrases: tuple[PhraseEntry, ...]
    rule_frames: tuple[str, ...]
    description_frames: tuple[str, ...]
    description_verbs: frozenset[str]  # not surfaces: tells a verb-led description apart
    feedback_templates: tuple[str, ...]
    result_prefixes: tuple[str, ...]
    skill_headers: tuple[str, ...]
    llm_styles: tuple[str, ...]


def _read_data(name: str) -> str:
    return resources.files("harnessctl.augment").joinpath("data", name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _raw() -> dict[str, Any]:
    # The tiny model's tokenizer keeps each of these syllables as one token: names built from
    # them tokenise to stable pieces (see harnessctl.models.syllables).

    return {
        "syllables": list(SYLLABLES),
        "names": json.loads(_read_data("name_lexicon.json")),
        "paraphrase": json.loads(_read_data("paraphrase.json")),
    }


def _keep(items: Iterable[str], split: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for x in items if split_of(x) == split))


@cache
def vocabulary(split: str) -> Vocabulary:
    """The vocabulary of ``split`` (``"train"`` or ``"heldout"``), read from the shipped data.

    >>> v = vocabulary("train")
    >>> "fetch" in v.synonyms["get"] or "fetch" not in vocabulary("heldout").synonyms["get"]
    True
    """
    check_split(split)
    raw = _raw()
    names, para = raw["names"], raw["paraphrase"]
    synonyms = {}
    for word, repl in names["words"].items():
        synonyms[word] = _keep((r for r in repl if r != word and _WORD_RE.match(r)), split)
    phrases = []
    for entry in para["phrases"]:
        repl = _keep((r for r in entry["replacements"] if r.lower() != entry["match"].lower()), split)
        if repl:
            phrases.append(PhraseEntry(entry["match"], repl, entry.get("context") == "before_ref"))
    return Vocabulary(
        split=split,
        syllables=_keep(raw["syllables"], split),
        name_stoplist=frozenset(names.get("name_stoplist", ())),
        synonyms=synonyms,
        generic_verbs=_keep(names["generic_verbs"], split),
        glue=frozenset(names["glue"]),
        phrases=tuple(phrases),
        rule_frames=_keep(para["rule_frames"], split),
        description_frames=_keep(para["description_frames"], split),
        description_verbs=frozenset(para["description_verbs"]),
        feedback_templates=_keep(para["feedback_templates"], split),
        result_prefixes=_keep(para["result_prefixes"], split),
        skill_headers=_keep(para["skill_headers"], split),
        llm_styles=_keep(para["llm_styles"], split),
    )


def syllable_inventory(split: str | None = None) -> tuple[str, ...]:
    """The pronounceable syllables random identifiers are built from (both splits when ``None``).

    A tokenizer that keeps each of these as one token sees a random name as a few stable pieces.

    >>> len(syllable_inventory()) == len(syllable_inventory("train")) + len(syllable_inventory("heldout"))
    True
    """
    if split is None:
        return tuple(_raw()["syllables"])
    return vocabulary(split).syllables


# -- names ------------------------------------------------------------------------------------

_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def split_words(name: str) -> list[str]:
    """The lowercase words of an identifier in any style.

    >>> split_words("getProductDetails"), split_words("off_topic-and_safety")
    (['get', 'product', 'details'], ['off', 'topic', 'and', 'safety'])
    """
    words: list[str] = []
    for part in re.split(r"[_\-\s]+", name):
        words += [w.lower() for w in _CAMEL_RE.findall(part)]
    return [w for w in words if w]


def style_name(words: list[str], style: str) -> str:
    """Join lowercase words in a naming style (``snake``, ``camel``, ``pascal``, ``kebab``)."""
    if style == "snake":
        return "_".join(words)
    if style == "kebab":
        return "-".join(words)
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    raise ValueError(f"unknown naming style {style!r}: use one of {', '.join(NAME_STYLES)}")


class NameMaker:
    """Makes new surface names from one split's vocabulary.

    Three kinds, as in function-name masking: ``realistic`` (each word replaced by a synonym),
    ``verb_noun`` (a generic verb + the name's nouns as synonyms) and ``random`` (two words of
    1-3 pronounceable syllables, ``tavo_rinek``, always snake_case so that the tiny model's
    tokenizer cuts it into the same syllable tokens everywhere). A word of a random name is
    never a common English word nor a word in ``avoid`` (the harness's own prose).

    >>> m = NameMaker(vocabulary("train"))
    >>> import random; rng = random.Random(0)
    >>> all(NAME_RE.match(m.make("get_product_details", kind, "snake", rng)) for kind in NAME_KINDS)
    True
    """

    def __init__(self, vocab: Vocabulary, avoid: Iterable[str] = ()):
        self.vocab = vocab
        self.avoid = vocab.name_stoplist | {w.lower() for w in avoid}
        self._verbs = vocab.description_verbs | frozenset(_raw()["names"]["generic_verbs"]) | _NAME_VERBS

    def _syllable_word(self, rng: random.Random, lo: int = 1, hi: int = 3) -> str:
        for _ in range(20):
            word = "".join(rng.choice(self.vocab.syllables) for _ in range(rng.randint(lo, hi)))
            if word not in self.avoid:
                return word
        return word + rng.choice(self.vocab.syllables)

    def _word(self, word: str, rng: random.Random) -> list[str]:
        if word in self.vocab.glue:
            return [word]
        options = self.vocab.synonyms.get(word)
        if options:
            return [rng.choice(options)]
        return [self._syllable_word(rng, 2, 2)]  # a word the lexicon does not know

    def realistic(self, old_name: str, rng: random.Random) -> list[str]:
        words = split_words(old_name) or ["item"]
        out: list[str] = []
        for w in words:
            out += self._word(w, rng)
        if all(w in self.vocab.glue for w in out):
            out.append(self._syllable_word(rng, 2, 2))
        return out

    def verb_noun(self, old_name: str, rng: random.Random) -> list[str]:
        # The noun is a word that says what the element is about ("compliance" of
        # compliance_check), never its verb: "handle_query" for a compliance skill would be a
        # generic name that points at no skill in particular.
        words = [w for w in split_words(old_name) if w not in self.vocab.glue] or ["item"]
        nouns = [w for w in words if w not in self._verbs] or words[-1:]
        return [rng.choice(self.vocab.generic_verbs), *self._word(rng.choice(nouns), rng)]

    def random(self, rng: random.Random) -> list[str]:
        return [self._syllable_word(rng), self._syllable_word(rng)]

    def make(self, old_name: str, kind: str, style: str, rng: random.Random) -> str:
        """A new name of ``kind`` (see :data:`NAME_KINDS`) for ``old_name``, in ``style``
        (random names are always snake_case)."""
        if kind == "realistic":
            words = self.realistic(old_name, rng)
        elif kind == "verb_noun":
            words = self.verb_noun(old_name, rng)
        elif kind == "random":
            words, style = self.random(rng), "snake"
        else:
            raise ValueError(f"unknown name kind {kind!r}: use one of {', '.join(NAME_KINDS)}")
        return style_name(words, style)[:64]


NAME_KINDS = ("realistic", "verb_noun", "random")
#: Verbs that lead element names and are not in the description verbs.
_NAME_VERBS = frozenset(
    {"transfer", "compare", "track", "estimate", "introduce", "explain", "greet", "search", "check", "get"}
)


def name_tokens(name: str) -> list[str]:
    """The vocabulary tokens a generated name is made of: its words, each word of a random
    identifier cut into its syllables (the cut is unique for these syllables).

    >>> name_tokens("tavo_rinek"), name_tokens("fetchItemCard")
    (['ta', 'vo', 'ri', 'nek'], ['fetch', 'item', 'card'])
    """
    out: list[str] = []
    for word in split_words(name):
        pieces = name_syllables(word)
        if (
            word not in _all_lexicon_words()
            and pieces
            and "".join(pieces) == word
            and all(p in SYLLABLE_SET for p in pieces)
        ):
            out += pieces
        else:
            out.append(word)
    return out


@lru_cache(maxsize=1)
def _all_lexicon_words() -> frozenset[str]:
    names = _raw()["names"]
    words = set(names["glue"]) | set(names["generic_verbs"])
    for k, v in names["words"].items():
        words.add(k)
        words.update(v)
    return frozenset(words)
