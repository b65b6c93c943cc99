"""The one base of the errors harnessctl raises on purpose.

Every error class of the project derives from :class:`HarnessctlError` (several also from
``ValueError``, where callers catch that): bad input, or a state a person can fix, with a message
that names what is wrong and what to do. The command line turns each into that message and an
exit code through one table (:data:`harnessctl.cli.output.EXIT_CODES`).

It imports nothing of the project, so that every layer can import it.

>>> from harnessctl.models.base import ModelError
>>> issubclass(ModelError, HarnessctlError)
True
"""

from __future__ import annotations


class HarnessctlError(Exception):
    """An error a person can act on: the message says what went wrong and what to do."""


__all__ = ["HarnessctlError"]
