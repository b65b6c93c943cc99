"""The tiny model's tokenizer: byte-level BPE whose pieces keep tool and skill names stable.

A name must tokenise to the same pieces wherever it appears (in the tool list, in a call, in a
skill's rules) or a small model cannot learn to copy it. Two regex splits run before BPE, and BPE
never merges across their pieces:

1. *identifiers* (``snake_case``, ``kebab-case``, ``camelCase``, ``PascalCase``) are cut out on
   their own, never joined to the space or punctuation before or after them; other words keep
   their leading space (`` price``), digits stand alone (prices are copied digit by digit),
   punctuation runs stay together;
2. inside a piece without a leading space, ``_``/``-`` stand alone and letters are cut into syllables
   (before a consonant that starts the next syllable, before a capital), so ``get_product_details``
   is ``get _ pro duct _ de tails`` in every context, and a generated name such as ``tavo_rinek``
   is ``ta vo _ ri nek``. Every syllable of :mod:`harnessctl.models.syllables` is one token.

A one-word name (``search``) is a plain word: in running prose it keeps its leading space
(`` search``) like any word, so generated names always have two words or more.

Turn markers (``<|im_start|>``, ``<|im_end|>``, ``<|endoftext|>``) are special tokens; the tool-call
and think markers are added tokens that decoding keeps (vLLM's ``hermes`` parser looks them up).

>>> tok = train_tokenizer(["hello get_product_details"] * 50, vocab_size=300)   # doctest: +SKIP
>>> tok.tokenize('"get_product_details"')[1:8]                                 # doctest: +SKIP
['get', '_', 'pro', 'duct', '_', 'de', 'tails']
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from harnessctl.models.syllables import SYLLABLES
from harnessctl.models.tiny_template import (
    CHAT_TEMPLATE,
    END_OF_TEXT,
    IM_END,
    MARKER_TOKENS,
    RESPONSE_TEMPLATE,
    SPECIAL_TOKENS,
)

_CONS = "bcdfghjklmnpqrstvwxz"
_VOWELS = "aeiouy"

#: First split: identifiers alone; words with their leading space; single digits; punctuation; whitespace.
IDENTIFIER_SPLIT = (
    r"[A-Za-z][A-Za-z0-9]*(?:[_-]+[A-Za-z0-9]+)+_*"  # snake_case, kebab-case (tool and skill names)
    r"|_+[A-Za-z0-9]+(?:[_-]+[A-Za-z0-9]+)*_*"  # _private names
    r"|[a-z]+(?:[A-Z][a-z0-9]*)+"  # camelCase
    r"|[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+"  # PascalCase
    r"| ?[A-Za-z][a-z]*(?![A-Za-z0-9_-])"  # a plain word, with its leading space
    r"| ?[A-Z]+(?![A-Za-z0-9_-])"  # an acronym
    r"|[A-Za-z]+"  # anything else made of letters
    r"|\d"  # digits one by one
    r"| ?[^\sA-Za-z\d]+"  # punctuation runs
    r"|\s+(?!\S)|\s+"  # whitespace
)
#: Second split, within each first-split piece: spaced words stay whole; the rest by syllable.
SYLLABLE_SPLIT = (
    r"^ [A-Za-z]+$"
    r"|[_-]+"
    r"|\d"
    rf"|[{_CONS}{_CONS.upper()}]*[{_VOWELS}{_VOWELS.upper()}]+(?:[{_CONS}]+(?![{_VOWELS}]))?"
    r"|[A-Za-z]+"
)


def build_pre_tokenizer() -> Any:
    """The pre-tokenizer described above (``tokenizers`` objects, byte-level at the end)."""
    from tokenizers import Regex, pre_tokenizers

    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(IDENTIFIER_SPLIT), behavior="isolated"),
            pre_tokenizers.Split(Regex(SYLLABLE_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


def pre_tokenize(text: str) -> list[str]:
    """The pieces BPE sees for ``text`` (in readable form, spaces as spaces).

    >>> pre_tokenize('{"name": "get_product_details"}')
    ['{"', 'na', 'me', '":', ' "', 'get', '_', 'pro', 'duct', '_', 'de', 'tails', '"}']
    """
    from tokenizers import Regex, pre_tokenizers

    seq = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(IDENTIFIER_SPLIT), behavior="isolated"),
            pre_tokenizers.Split(Regex(SYLLABLE_SPLIT), behavior="isolated"),
        ]
    )
    return [piece for piece, _ in seq.pre_tokenize_str(text)]


def syllable_drill(repeats: int = 64) -> Iterator[str]:
    """Corpus lines that make every name syllable frequent enough to become one BPE token."""
    line = " ".join(f"{s}_{s}" for s in SYLLABLES)
    for _ in range(repeats):
        yield line


def train_tokenizer(texts: Iterable[str], *, vocab_size: int = 4096, model_max_length: int = 4096) -> Any:
    """Train the byte-level BPE tokenizer on ``texts``; return a ``PreTrainedTokenizerFast``
    with the chat template set (``save_pretrained`` it next to the model).

    Deterministic: the same texts give the same vocabulary and merges.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = build_pre_tokenizer()
    tok.decoder = decoders.ByteLevel()
    markers = [*SPECIAL_TOKENS, *MARKER_TOKENS]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in markers],  # ids 0..6
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # The trainer does not cut markers out of the text: do it here, so no merge is learnt
    # across a marker and its neighbours (``"}</`` would otherwise become a token).
    cut = re.compile("|".join(re.escape(m) for m in markers))
    tok.train_from_iterator((piece for text in texts for piece in cut.split(text) if piece), trainer=trainer)
    # The trainer registers every marker as special; tool-call and think markers must survive
    # decoding with skip_special_tokens (vLLM's tool parser reads them), so unflag them.
    data = json.loads(tok.to_str())
    for added in data["added_tokens"]:
        if added["content"] in MARKER_TOKENS:
            added["special"] = False
    tok = Tokenizer.from_str(json.dumps(data))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=END_OF_TEXT,
        model_max_length=model_max_length,
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.response_template = RESPONSE_TEMPLATE
    return fast
