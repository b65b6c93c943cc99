"""The files a skill ships beside its rules (an imported Agent Skills folder's ``references/``,
``examples/``, ...), kept in the harness folder under ``skills/<key>/`` and served by the skill
loader on request — never from outside the harness folder, never a link, never a script.

>>> h = load_harness("shop")                                            # doctest: +SKIP
>>> read_skill_file(h, h.skill("coupon_codes"), "references/codes.md")[:12]   # doctest: +SKIP
'# Coupon cod'
"""

from __future__ import annotations

import os
import stat

from .errors import HarnessError, Issue
from .model import Harness, Skill
from .yamlio import safe_harness_path

#: Largest skill file the loader serves (the model reads it whole).
MAX_SERVED_BYTES = 256 * 1024
SKILLS_DIR = "skills"


def skill_file_path(skill: Skill, name: str) -> str:
    """Where a skill's file lives, relative to the harness folder.

    >>> skill_file_path(Skill("coupon_codes", "coupon-codes", "d"), "references/codes.md")
    'skills/coupon_codes/references/codes.md'
    """
    return f"{SKILLS_DIR}/{skill.key}/{name}"


def read_skill_file(h: Harness, skill: Skill, name: str) -> str:
    """The text of ``name``, one of ``skill.files``, read from the harness folder.

    Raises :class:`HarnessError` when the skill does not list ``name`` (inert files and
    anything else are never served), when the harness has no folder, or when the file is a
    link, leaves the folder, is too large or is not UTF-8 text.
    """
    if name not in skill.files:
        listed = ", ".join(skill.files) or "none"
        hint = "scripts are never served" if name in skill.inert_files else f"the skill's files: {listed}"
        raise HarnessError(
            Issue(skill_file_path(skill, name), f"skill {skill.name!r} serves no file {name!r}", hint=hint)
        )
    if h.root is None:
        raise HarnessError(Issue(skill_file_path(skill, name), "the harness has no folder to read the file from"))
    rel = skill_file_path(skill, name)
    path = safe_harness_path(h.root, rel)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise HarnessError(Issue(rel, "not a regular file"))
        if info.st_size > MAX_SERVED_BYTES:
            raise HarnessError(
                Issue(rel, f"is {info.st_size:,} bytes; the skill loader serves at most {MAX_SERVED_BYTES:,}")
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_SERVED_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise HarnessError(Issue(rel, "is not UTF-8 text", hint="list binary files under inert_files")) from None
