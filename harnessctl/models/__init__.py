"""Model backends behind one interface, the embedded OpenAI-compatible server, the tiny model.

- :mod:`~harnessctl.models.base` — the ``ModelBackend`` protocol, ``GenerationSettings``, ``ModelError``;
- :mod:`~harnessctl.models.registry` — ``resolve_model("local:<path>" | "shipped:<name>" | "openai/<name>" |
  a registered name such as "oracle", ...)``, the name -> factory registry and the default model;
- :mod:`~harnessctl.models.shipped` — checkpoints shipped in the package (``harnessctl model ship | list``);
- :mod:`~harnessctl.models.litellm_backend` — served models through litellm (retries, timeouts, keys);
- :mod:`~harnessctl.models.local` — a checkpoint in process, with token ids and log-probabilities;
- :mod:`~harnessctl.models.scripted` — a model that plays a fixed script (tests, demos);
- :mod:`~harnessctl.models.server` — ``harnessctl serve``: vLLM or the embedded server;
- :mod:`~harnessctl.models.tiny` (+ ``tiny_template``, ``tiny_tokenizer``, ``tiny_corpus``,
  ``syllables``) — ``harnessctl model init``.

Heavy libraries (litellm, torch, transformers) are imported only by the backends that need them.

>>> from harnessctl.models import resolve_model, GenerationSettings
>>> resolve_model("openai/tiny", api_base="http://127.0.0.1:8000/v1").name   # doctest: +SKIP
'openai/tiny'
"""

from .base import GenerationSettings, ModelBackend, ModelError, agenerate
from .registry import default_model_spec, resolve_model

__all__ = ["GenerationSettings", "ModelBackend", "ModelError", "agenerate", "default_model_spec", "resolve_model"]
