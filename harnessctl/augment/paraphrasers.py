"""Which paraphraser a spec names: the offline lexicon (``paraphrase``) or a model through litellm
(``llm_paraphrase``). A module of its own so that neither of the two imports the other's kind.

>>> make_paraphraser("lexicon").name
'lexicon'
"""

from __future__ import annotations

from .llm_paraphrase import LiteLLMParaphraser
from .paraphrase import LexiconParaphraser, Paraphraser


def make_paraphraser(
    spec: str | None = None, *, cache_dir: str | None = None, api_base: str | None = None
) -> Paraphraser:
    """The paraphraser a spec names: ``None``/``"lexicon"`` (offline) or ``"litellm:<model>"``.

    >>> make_paraphraser().name
    'lexicon'
    """
    if spec in (None, "", "lexicon"):
        return LexiconParaphraser()
    if spec.startswith("litellm:"):
        model = spec.split(":", 1)[1]
        if not model:
            raise ValueError("--paraphraser litellm:<model> needs a model, e.g. litellm:openai/gpt-4o-mini")
        return LiteLLMParaphraser(model, cache_dir=cache_dir, api_base=api_base)
    raise ValueError(f"unknown paraphraser {spec!r}: use 'lexicon' or 'litellm:<model>'")
