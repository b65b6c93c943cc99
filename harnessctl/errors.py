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


class Interrupted(HarnessctlError):
    """Stopped by Ctrl-C with the work so far kept: the message says what was kept, ``then`` what
    to do to go on (the command line prints both after "interrupted:" and exits 130).

    >>> e = Interrupted("arm base: checkpoint step 40", then="run the same command again to continue")
    >>> str(e), e.then
    ('arm base: checkpoint step 40', 'run the same command again to continue')
    """

    def __init__(self, message: str, then: str = ""):
        super().__init__(message)
        self.then = then


__all__ = ["HarnessctlError", "Interrupted"]
