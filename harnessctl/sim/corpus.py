"""Oracle episodes as chat conversations: the ``oracle`` source of the tiny model's tokenizer
corpus (:mod:`harnessctl.models.tiny_corpus`), registered when the simulator is imported.

>>> from harnessctl.harness import load_harness
>>> conv = next(oracle_conversations(load_harness("harnesses/livecommerce"), n=1, seed=0))
>>> sorted(conv), conv["messages"][0]["role"]
(['messages', 'tools'], 'system')
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from harnessctl.harness.model import Harness
from harnessctl.models.tiny_corpus import Conversation, CorpusUnavailable, register_corpus_source, surface_variant
from harnessctl.runtime.loop import run_episode
from harnessctl.sim.generate import generate_cases
from harnessctl.sim.oracle import OracleModel


def oracle_conversations(harness: Harness, *, n: int, seed: int, faults: float = 0.2) -> Iterator[Conversation]:
    """Oracle episodes on generated cases (a share with injected tool faults, half with short
    ``<think>`` notes), each under the harness or a renamed copy. Raises
    :class:`~harnessctl.models.tiny_corpus.CorpusUnavailable` when the oracle cannot answer under
    the harness."""
    rng = random.Random(seed)
    try:
        cases = generate_cases(n, seed=seed, faults=faults, messages="train")  # suite messages are held out
    except Exception as e:  # noqa: BLE001 - any failure means: fall back to the harness source
        raise CorpusUnavailable(f"cannot generate cases: {e}") from None
    oracles = (OracleModel(), OracleModel(think=True))
    for case in cases:
        variant = surface_variant(harness, rng)
        record = run_episode(variant, case, oracles[rng.random() < 0.5])
        if record.termination.value == "model_error":
            # The oracle cannot act under this harness (e.g. its tools have no simulator backend).
            raise CorpusUnavailable(f"the oracle cannot answer case {case.id} under {harness.name}")
        yield {"messages": record.messages, "tools": record.tools}


register_corpus_source("oracle", oracle_conversations)
