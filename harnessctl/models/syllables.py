"""Pronounceable names built from a fixed syllable inventory, each syllable one token.

A small model learns to *copy* a tool name from the tool list into its call far more easily when
the name is made of pieces it has seen as whole tokens (see the tiny model's tokenizer in
:mod:`harnessctl.models.tiny_tokenizer`). Augmentation draws renamed tools and skills from here.

Every syllable is consonant + vowel, optionally + one closing consonant (``ta``, ``vor``), so a
name made by joining syllables splits back into exactly those syllables: the tokenizer's
pre-tokenizer cuts before a consonant that is followed by a vowel.

>>> import random
>>> name = pronounceable_name(random.Random(0))
>>> name.count("_") >= 1 and all(p in SYLLABLE_SET for p in name_syllables(name))
True
"""

from __future__ import annotations

import random
import re

ONSETS = "bdfgklmnprstvz"
VOWELS = "aeiou"
CODAS = "klmnrs"

#: Every syllable a generated name may use (490), in a fixed order.
SYLLABLES: tuple[str, ...] = tuple(o + v + c for o in ONSETS for v in VOWELS for c in ("", *CODAS))
SYLLABLE_SET = frozenset(SYLLABLES)

_SPLIT_RE = re.compile(rf"[{ONSETS}][{VOWELS}](?:[{CODAS}](?![{VOWELS}]))?")


def pronounceable_name(
    rng: random.Random,
    *,
    words: tuple[int, int] = (2, 2),
    syllables_per_word: tuple[int, int] = (1, 3),
    pool: tuple[str, ...] = SYLLABLES,
) -> str:
    """A snake_case name such as ``tavo_rinek``: ``words`` and ``syllables_per_word`` are
    inclusive ranges. ``pool`` restricts the syllables (e.g. a held-out half for evaluation).

    >>> pronounceable_name(random.Random(1), words=(1, 1), syllables_per_word=(2, 2))
    'gondon'
    """
    n_words = rng.randint(*words)
    parts = []
    for _ in range(n_words):
        k = rng.randint(*syllables_per_word)
        parts.append("".join(rng.choice(pool) for _ in range(k)))
    return "_".join(parts)


def name_syllables(name: str) -> list[str]:
    """The syllables of a generated name, in order (``_`` separators dropped).

    >>> name_syllables("tavo_rinek")
    ['ta', 'vo', 'ri', 'nek']
    """
    return [m.group(0) for word in name.split("_") for m in _SPLIT_RE.finditer(word)]


def split_pool(seed: int = 0, held_out: float = 0.25) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Disjoint ``(train, held_out)`` syllable pools, so evaluation names are truly unseen.

    >>> train, test = split_pool()
    >>> len(train) + len(test) == len(SYLLABLES) and not set(train) & set(test)
    True
    """
    order = list(SYLLABLES)
    random.Random(seed).shuffle(order)
    cut = int(len(order) * (1 - held_out))
    return tuple(sorted(order[:cut])), tuple(sorted(order[cut:]))
