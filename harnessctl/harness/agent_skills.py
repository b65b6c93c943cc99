"""Agent Skills folders (``SKILL.md`` + ``references/``, ``scripts/``, ...) <-> harness skills.

A ``SKILL.md`` is YAML front matter between ``---`` fences (``name``, ``description``, optional
``license``, ``compatibility``, ``allowed-tools``, ``metadata``) and a markdown body. The body's
list items and paragraphs become the skill's rules, in order, so HSA can paraphrase, mask and
reorder them and the scorer can name them; headings, blank lines and list markers are kept in
the skill's ``layout`` (one ``{{ rule }}`` slot per rule), so export writes the body back as it was.

The folder is data: every file is read, never run. A symbolic link anywhere in it is refused,
``scripts/`` (and any file that is not UTF-8 text) are recorded as inert files, never served,
and the other files (``references/``, ``examples/``, ...) are served by the skill loader on request.

>>> folder = read_skill_folder("skills/coupon-codes")        # doctest: +SKIP
>>> folder.name, [r[:20] for r in split_body(folder.body)[0]][:1]   # doctest: +SKIP
('coupon-codes', ['Quote the code exact'])
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import HarnessError, Issue
from .model import Harness, Rule, Skill
from .yamlio import MAX_FILE_BYTES, dump_yaml, parse_yaml

SKILL_FILE = "SKILL.md"
#: The format's limits on ``name`` and ``description``.
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
#: Largest SKILL.md read: it becomes one harness file, which the harness reader caps at this size.
MAX_SKILL_MD_BYTES = MAX_FILE_BYTES
#: Most files, and bytes in all, one skill folder may ship.
MAX_FOLDER_FILES = 500
MAX_FOLDER_BYTES = 16 * 1024 * 1024
#: Folder whose files are never run and never served.
SCRIPTS_DIR = "scripts"
#: Front matter fields the harness reads itself; the others are kept in ``Skill.extra``.
CORE_FIELDS = ("name", "description", "allowed-tools")
#: ``metadata`` entry export writes when a skill's key is not its name's (so re-import finds it).
KEY_METADATA = "harnessctl-key"
#: The slot of one rule in a skill's layout.
RULE_SLOT = "{{ rule }}"

_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_KEY_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_FILE_PART_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_FENCE_RE = re.compile(r"^ {0,3}(```+|~~~+)")
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}(\s|$)")
_ITEM_RE = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+)(\S.*)$")


@dataclass
class SkillFolder:
    """One Agent Skills folder, read and checked: what its SKILL.md says and what it ships."""

    path: str
    name: str
    description: str
    body: str
    allowed_tools: list[str] = field(default_factory=list)
    #: Front matter fields the harness does not read (license, compatibility, metadata, ...).
    extra: dict[str, Any] = field(default_factory=dict)
    #: The key export recorded in ``metadata`` (None when the folder names none).
    key: str | None = None
    #: Files served on request and inert files, relative to the folder -> their bytes.
    files: dict[str, bytes] = field(default_factory=dict)
    inert_files: dict[str, bytes] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


# -- reading a folder --------------------------------------------------------------------------


def read_skill_folder(path: str | Path) -> SkillFolder:
    """Read and check the Agent Skills folder at ``path``; raise :class:`HarnessError` naming the
    file (and line) for anything that cannot become a harness skill.

    >>> read_skill_folder("examples/interchange/skills/coupon-codes").name   # doctest: +SKIP
    'coupon-codes'
    """
    root = Path(path)
    if not root.is_dir():
        what = "no such folder" if not root.exists() else "is a file, not a skill folder"
        raise HarnessError(Issue(str(root), what, hint=f"pass the folder that holds {SKILL_FILE}"))
    listed = _folder_files(root)
    md = root / SKILL_FILE
    if SKILL_FILE not in listed:
        raise HarnessError(
            Issue(str(md), f"no {SKILL_FILE} in the folder", hint="an Agent Skills folder holds SKILL.md at its top")
        )
    text = _decode(listed.pop(SKILL_FILE), str(md))
    front, body, _ = split_front_matter(text, str(md))
    doc = _parse_front_matter(front, str(md))
    name = _checked_name(doc, str(md))
    description = _checked_description(doc, str(md))
    folder = SkillFolder(str(root), name, description, body)
    folder.allowed_tools = _allowed_tools(doc.get("allowed-tools"), str(md))
    folder.extra = {str(k): _plain(v) for k, v in doc.items() if k not in CORE_FIELDS}
    metadata = folder.extra.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise HarnessError(_field_issue(doc, str(md), "metadata", "metadata: expected a mapping of names to text"))
    if isinstance(metadata, dict) and KEY_METADATA in metadata:
        metadata = dict(metadata)
        key = str(metadata.pop(KEY_METADATA))
        folder.key = key if _KEY_RE.match(key) else None
        if metadata:
            folder.extra["metadata"] = metadata
        else:
            del folder.extra["metadata"]
    if root.name != name:
        folder.warnings.append(
            f"{md}: name {name!r} is not the folder's name {root.name!r} (the format wants them equal)"
        )
    scripts = []
    for rel, data in sorted(listed.items()):
        if rel.split("/", 1)[0] == SCRIPTS_DIR:
            folder.inert_files[rel] = data
            scripts.append(rel)
        elif b"\x00" in data or not _is_utf8(data):
            folder.inert_files[rel] = data
            folder.warnings.append(f"{root / rel}: not UTF-8 text; kept as an inert file, never served")
        else:
            folder.files[rel] = data
    if scripts:
        folder.warnings.append(f"{root}: ships {', '.join(scripts)} — scripts are never run; recorded as inert files")
    return folder


def split_front_matter(text: str, where: str) -> tuple[str, str, int]:
    """``(front matter, body, line where the body starts)`` of a SKILL.md's text.

    >>> split_front_matter("---\\nname: a\\n---\\nBody\\n", "SKILL.md")
    ('name: a\\n', 'Body\\n', 4)
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise HarnessError(
            Issue(
                where,
                "no YAML front matter: the first line is not ---",
                1,
                hint="start the file with ---, then name: and description: lines, then ---",
            )
        )
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "\n".join(lines[1:i]) + "\n", "\n".join(lines[i + 1 :]), i + 2
    raise HarnessError(
        Issue(where, "front matter is not closed", 1, hint="end the front matter with a line holding only ---")
    )


def _parse_front_matter(front: str, where: str) -> dict[str, Any]:
    if not front.strip():
        raise HarnessError(Issue(where, "front matter is empty", 2, hint="it needs at least name: and description:"))
    try:
        return parse_yaml(front, where)
    except HarnessError as e:  # lines counted from the file's first line, the opening ---
        raise HarnessError(
            [Issue(i.file, i.message, i.line + 1 if i.line else None, i.col, i.path, i.hint) for i in e.issues]
        ) from None


def _checked_name(doc: dict[str, Any], where: str) -> str:
    name = doc.get("name")
    if name is None:
        raise HarnessError(_field_issue(doc, where, None, "missing required field 'name'", "add `name: my-skill`"))
    if not isinstance(name, str):
        raise HarnessError(_field_issue(doc, where, "name", "name: expected text"))
    rule = "lowercase letters, digits and hyphens (no hyphen first, last or twice in a row)"
    if len(name) > MAX_NAME_CHARS:
        raise HarnessError(
            _field_issue(
                doc,
                where,
                "name",
                f"name is {len(name)} characters; the limit is {MAX_NAME_CHARS}",
                "shorten it, and rename the folder to match",
            )
        )
    if not _NAME_RE.match(name):
        raise HarnessError(
            _field_issue(doc, where, "name", f"name {name!r} is not a valid skill name", f"a skill name is {rule}")
        )
    if not name[0].isalpha():
        raise HarnessError(
            _field_issue(
                doc, where, "name", f"name {name!r} starts with a digit", "harness names start with a letter; rename it"
            )
        )
    return name


def _checked_description(doc: dict[str, Any], where: str) -> str:
    text = doc.get("description")
    if text is None:
        raise HarnessError(
            _field_issue(
                doc,
                where,
                None,
                "missing required field 'description'",
                "add `description:` (what it does, when to use it)",
            )
        )
    if not isinstance(text, str) or not text.strip():
        raise HarnessError(_field_issue(doc, where, "description", "description: expected non-empty text"))
    if len(text) > MAX_DESCRIPTION_CHARS:
        raise HarnessError(
            _field_issue(
                doc,
                where,
                "description",
                f"description is {len(text)} characters; the limit is {MAX_DESCRIPTION_CHARS}",
                "shorten it; put the detail in the body",
            )
        )
    if "{{" in text:
        raise HarnessError(
            _field_issue(doc, where, "description", "description: {{ }} templates are not filled in here")
        )
    return text


def _allowed_tools(value: Any, where: str) -> list[str]:
    """``allowed-tools``: space- (or comma-) separated text, as the format has it, or a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [t for t in re.split(r"[\s,]+", value) if t]
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return list(value)
    raise HarnessError(Issue(where, "allowed-tools: expected tool names separated by spaces"))


def _field_issue(doc: Any, where: str, fld: str | None, message: str, hint: str = "") -> Issue:
    line = None
    lc = getattr(doc, "lc", None)
    if fld is not None and lc is not None:
        try:
            line = lc.key(fld)[0] + 2  # +1: 1-based, +1: the opening --- line
        except (KeyError, TypeError):
            line = None
    return Issue(where, message, line if fld is not None else 1, None, f"$.{fld}" if fld else "", hint)


def _folder_files(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` by relative path; links and special files refused."""
    out: dict[str, bytes] = {}
    total = 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        for name in sorted(dirs + files):
            path = here / name
            rel = path.relative_to(root).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                raise HarnessError(_link_issue(root, path))
            if name.startswith("."):
                if name in dirs:
                    dirs.remove(name)
                continue  # hidden files (.DS_Store, .git): not part of the skill
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode):
                raise HarnessError(Issue(str(path), "not a regular file", hint="a skill folder holds plain files"))
            if not all(_FILE_PART_RE.match(p) for p in rel.split("/")):
                raise HarnessError(
                    Issue(str(path), "file name cannot be kept", hint="use letters, digits, _, . and - in file names")
                )
            limit = MAX_SKILL_MD_BYTES if rel == SKILL_FILE else MAX_FOLDER_BYTES
            if info.st_size > limit:
                hint = "move long material to references/ files" if rel == SKILL_FILE else "ship smaller files"
                raise HarnessError(
                    Issue(str(path), f"is {_size(info.st_size)}; the limit is {_size(limit)}", hint=hint)
                )
            total += info.st_size
            if len(out) >= MAX_FOLDER_FILES or total > MAX_FOLDER_BYTES:
                raise HarnessError(
                    Issue(
                        str(root),
                        f"skill folder holds more than {MAX_FOLDER_FILES} files or {_size(MAX_FOLDER_BYTES)}",
                        hint="ship fewer, smaller files",
                    )
                )
            out[rel] = _read_regular(path, limit)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
    return out


def _read_regular(path: Path, limit: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while we read it
        raise HarnessError(Issue(str(path), f"is larger than {_size(limit)}"))
    return data


def _link_issue(root: Path, path: Path) -> Issue:
    target = os.readlink(path)
    try:
        path.resolve().relative_to(root.resolve())
        where = ""
    except (ValueError, OSError, RuntimeError):
        where = " (outside the skill folder)"
    return Issue(
        str(path),
        f"is a symbolic link to {target}{where}; links are refused",
        hint="copy the file itself into the skill folder",
    )


def _decode(data: bytes, where: str) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise HarnessError(Issue(where, f"not UTF-8 text (byte {e.start})", hint="save the file as UTF-8")) from None
    if "\x00" in text:
        raise HarnessError(Issue(where, "holds NUL bytes: not a text file"))
    return text.replace("\r\n", "\n")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    return f"{n / 1024:.0f} KiB" if n >= 1024 else f"{n} bytes"


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, str):
        return str(v)
    return v


# -- the body: rules and layout ----------------------------------------------------------------


def split_body(body: str) -> tuple[list[str], str]:
    """The rules of a markdown body (one per top-level list item, paragraph or fenced block, in
    order) and its layout: the body with each rule replaced by ``{{ rule }}``.

    >>> split_body("# Codes\\n\\n- Quote the code.\\n- Never invent one.\\n")
    (['Quote the code.', 'Never invent one.'], '# Codes\\n\\n- {{ rule }}\\n- {{ rule }}\\n')
    """
    lines = body.split("\n")
    rules: list[str] = []
    layout: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE_RE.match(line)
        item = _ITEM_RE.match(line)
        if not line.strip() or _HEADING_RE.match(line):
            layout.append(line)
            i += 1
        elif fence:
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(fence.group(1)):
                j += 1
            j = min(j + 1, len(lines))
            rules.append("\n".join(lines[i:j]))
            layout.append(RULE_SLOT)
            i = j
        elif item:
            indent = len(item.group(1))
            j = i + 1
            while j < len(lines):
                nxt = lines[j]
                if not nxt.strip():
                    # a blank line belongs to the item only when an indented continuation follows
                    k = j
                    while k < len(lines) and not lines[k].strip():
                        k += 1
                    if k < len(lines) and _indent(lines[k]) > indent + 1:
                        j = k
                        continue
                    break
                sub = _ITEM_RE.match(nxt)
                if (
                    (sub and len(sub.group(1)) <= indent)
                    or _HEADING_RE.match(nxt)
                    or _FENCE_RE.match(nxt)
                    and _indent(nxt) <= indent
                ):
                    break
                j += 1
            rules.append("\n".join([item.group(4), *lines[i + 1 : j]]))
            layout.append(item.group(1) + item.group(2) + item.group(3) + RULE_SLOT)
            i = j
        else:
            j = i + 1
            while (
                j < len(lines)
                and lines[j].strip()
                and not _HEADING_RE.match(lines[j])
                and not _FENCE_RE.match(lines[j])
                and not _ITEM_RE.match(lines[j])
            ):
                j += 1
            rules.append("\n".join(lines[i:j]))
            layout.append(RULE_SLOT)
            i = j
    return rules, "\n".join(layout)


def join_body(rules: list[str], layout: str) -> str:
    """The markdown body of ``rules`` in ``layout`` (slots filled in order). Rules beyond the
    slots are appended as list items; slots beyond the rules are dropped.

    >>> join_body(["Quote the code.", "Never invent one."], "# Codes\\n\\n- {{ rule }}\\n")
    '# Codes\\n\\n- Quote the code.\\n- Never invent one.\\n'
    """
    out: list[str] = []
    k = 0
    lines = layout.split("\n") if layout else []
    trailing = lines[-1] == "" if lines else True
    if trailing and lines:
        lines = lines[:-1]
    for line in lines:
        if RULE_SLOT in line:
            if k < len(rules):
                out.append(line.replace(RULE_SLOT, rules[k], 1))
                k += 1
        else:
            out.append(line)
    out += [f"- {text}" for text in rules[k:]]
    return "\n".join(out) + ("\n" if trailing and out else "")


def rule_keys(texts: list[str], reuse: dict[str, str] | None = None) -> list[str]:
    """A stable key for each rule: the key of the same text in ``reuse`` (the skill's rules
    before a re-import), else the first words of the text in lower_snake_case, made unique.

    >>> rule_keys(["Quote the code exactly.", "Quote the code exactly!"])
    ['quote_the_code_exactly', 'quote_the_code_exactly_2']
    """
    reuse = dict(reuse or {})
    taken = set()
    keys = []
    for text in texts:
        key = reuse.pop(text, None)
        if key is None or key in taken:
            words = re.findall(r"[a-z0-9]+", _ascii(text).lower())
            base = "_".join(words[:5])[:40].strip("_") or "rule"
            if not base[0].isalpha():
                base = f"rule_{base}"
            key, n = base, 2
            while key in taken or key in reuse.values():
                key, n = f"{base}_{n}", n + 1
        taken.add(key)
        keys.append(key)
    return keys


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


# -- folder -> skill ---------------------------------------------------------------------------


def skill_from_folder(folder: SkillFolder, h: Harness, key: str, old: Skill | None = None) -> tuple[Skill, list[str]]:
    """The harness skill ``key`` of ``folder``, its ``allowed-tools`` matched to ``h``'s tools by
    name (or key); ``old`` is the skill it replaces, whose rule keys are kept for unchanged text.
    Returns the skill and warnings (each unknown tool named).
    """
    texts, layout = split_body(folder.body)
    reuse = {r.text: r.key for r in old.rules} if old else {}
    rules = [Rule(k, t) for k, t in zip(rule_keys(texts, reuse), texts)]
    tools: list[str] = []
    warnings: list[str] = []
    for name in folder.allowed_tools:
        tool = h.tool_by_name(name) or next((t for t in h.tools if t.key == name), None)
        if tool is None:
            warnings.append(
                f"{Path(folder.path) / SKILL_FILE}: allowed-tools names {name!r}, which is no tool of the harness; "
                "left out (import the tool first, or add its key to the skill's tools)"
            )
        elif tool.key not in tools:
            tools.append(tool.key)
    skill = Skill(
        key=key,
        name=folder.name,
        description=folder.description,
        rules=rules,
        tools=tools,
        # a body that is only a list needs no layout: export writes rules as list items anyway
        layout="" if layout == f"- {RULE_SLOT}\n" * len(rules) else layout,
        files=sorted(folder.files),
        inert_files=sorted(folder.inert_files),
        extra=folder.extra,
    )
    return skill, warnings


def key_for_name(name: str) -> str:
    """The key a skill named ``name`` gets: ``coupon-codes`` -> ``coupon_codes``."""
    return name.replace("-", "_")


# -- skill -> folder ---------------------------------------------------------------------------


def export_name(name: str) -> str:
    """``name`` as a valid Agent Skills name: ``explain_price`` -> ``explain-price``.

    >>> export_name("Explain_Price")
    'explain-price'
    """
    text = re.sub(r"[^a-z0-9]+", "-", _ascii(name).lower()).strip("-")
    return text[:MAX_NAME_CHARS].strip("-") or "skill"


def exported_name(skill: Skill) -> str:
    """The name ``skill`` has as an Agent Skill: its own when the format allows it."""
    if _NAME_RE.match(skill.name) and len(skill.name) <= MAX_NAME_CHARS:
        return skill.name
    return export_name(skill.name)


def skill_md_text(h: Harness, skill: Skill) -> tuple[str, list[str]]:
    """The SKILL.md of ``skill`` and warnings (a name or description the format cannot hold).

    >>> skill_md_text(h, h.skill("coupon_codes"))[0].splitlines()[1]   # doctest: +SKIP
    'name: coupon-codes'
    """
    warnings: list[str] = []
    name = exported_name(skill)
    if name != skill.name:
        warnings.append(
            f"skill {skill.key}: name {skill.name!r} is not a valid Agent Skills name; exported as {name!r}"
        )
    if len(skill.description) > MAX_DESCRIPTION_CHARS:
        warnings.append(
            f"skill {skill.key}: description is over {MAX_DESCRIPTION_CHARS} characters (the format's limit)"
        )
    front: dict[str, Any] = {"name": name, "description": skill.description}
    extra = dict(skill.extra)
    names = [h.tool(k).name for k in skill.tools if any(t.key == k for t in h.tools)]
    if names:
        front["allowed-tools"] = " ".join(names)
    metadata = dict(extra.pop("metadata", None) or {})
    if skill.key != key_for_name(name) or name != skill.name:
        metadata[KEY_METADATA] = skill.key  # re-import finds the skill it came from, under any name
    front.update(extra)
    if metadata:
        front["metadata"] = metadata
    body = join_body([r.text for r in skill.rules], skill.layout)
    return "---\n" + dump_yaml(front) + "---\n" + body, warnings
