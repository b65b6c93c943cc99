"""Write a :class:`~harnessctl.harness.model.Harness` to a harness folder.

Two modes:

- **fresh** (no ``base``): tidy YAML in a fixed layout — ``harness.yaml``, ``prompt.yaml``,
  ``hooks.yaml``, ``skills/<key>.yaml``, ``tools/<key>.yaml`` — the same bytes for the same
  harness, so variant folders written by augmentation are reproducible;
- **edit** (``base`` = the source folder, or its round-trip documents): the source documents
  are updated in place, so comments, key order and quoting survive and a one-field edit is a
  one-line git diff.

Nothing is written unless the new files parse back, validate, and load to a harness equal to
the one given. A new folder is written next to its final place and renamed into it; in an
existing folder only the files whose bytes change are replaced (each atomically), and skill
or tool files of elements that no longer exist are removed.

Skills and tools load in file-name order unless harness.yaml lists their keys under
``order:``. A skill or tool keeps its file (``skills/<key>.yaml`` when new); when the harness
holds them in an order the file names do not give — or the base already lists one — the order
is written to harness.yaml, so a reorder is a one-line change, never a renamed file.

>>> h = load_harness("harnesses/livecommerce")                       # doctest: +SKIP
>>> h.prompt.constraints["max_reply_chars"].value = 100              # doctest: +SKIP
>>> save_harness(h, "harnesses/livecommerce", base="harnesses/livecommerce")   # doctest: +SKIP
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.compat import ordereddict
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    FoldedScalarString,
    LiteralScalarString,
    SingleQuotedScalarString,
)

from .errors import HarnessError, Issue
from .fileio import atomic_write
from .loader import (
    HARNESS_FILE,
    HOOKS_FILE,
    PROMPT_FILE,
    SKILLS_DIR,
    TOOLS_DIR,
    build_harness,
    is_harness_dir,
    read_documents,
)
from .model import Guard, Harness
from .validate import validate_documents
from .yamlio import dump_yaml, folder_issues, parse_yaml, parse_yaml_data, safe_harness_path

#: Texts longer than this are written as folded blocks (``>-``) in fresh files.
FOLD_ABOVE = 100
#: Width of a folded text line, indentation not counted.
FOLD_WIDTH = 92


_TEMPLATE_SPAN = re.compile(r"\{\{.*?\}\}")


class _Default:
    """A field whose value is the model's default: left out of fresh files, updated if present."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def save_harness(
    harness: Harness,
    path: str | Path,
    *,
    base: str | Path | dict[str, Any] | None = None,
    validate: bool = True,
    backends: Iterable[str] | None = None,
) -> Path:
    """Write ``harness`` to the folder ``path`` and return it; raise :class:`HarnessError`, having
    written nothing, if the result would not be a valid harness equal to ``harness``.

    ``base`` is the folder the harness was loaded from (or its documents, as
    :func:`~harnessctl.harness.loader.read_documents` returns them): its comments, order and
    quoting are kept. ``validate=False`` skips the schema and cross-file checks (the round trip
    is still checked); ``backends`` is passed to :func:`validate_documents`.

    >>> save_harness(variant, "out/variants/v0007")                    # doctest: +SKIP
    PosixPath('out/variants/v0007')
    """
    target = Path(path)
    texts = render_harness_files(harness, base=base)
    _check_round_trip(harness, texts, validate=validate, backends=backends)
    _check_target(target)
    files: dict[str, str | bytes] = {**texts, **_skill_files_to_copy(harness, target)}
    if target.exists():
        _update_folder(target, files)
    else:
        _write_new_folder(target, files)
    return target


def _skill_files_to_copy(h: Harness, target: Path) -> dict[str, bytes]:
    """The files skills ship (``skills/<key>/...``), read from the folder ``h`` was loaded from,
    so that a variant written elsewhere still serves them. None when saving in place."""
    if h.root is None or not Path(h.root).is_dir():
        return {}
    if target.exists() and target.resolve() == Path(h.root).resolve():
        return {}

    out: dict[str, bytes] = {}
    for skill in h.skills:
        for name in [*skill.files, *skill.inert_files]:
            rel = f"{SKILLS_DIR}/{skill.key}/{name}"
            try:
                out[rel] = safe_harness_path(h.root, rel).read_bytes()
            except (HarnessError, OSError):
                continue  # validating the written folder names the missing file
    return out


def render_harness_files(harness: Harness, *, base: str | Path | dict[str, Any] | None = None) -> dict[str, str]:
    """The text of every file of ``harness``, by path relative to the harness folder (load order).

    >>> render_harness_files(h)["tools/stock_check.yaml"].splitlines()[0]   # doctest: +SKIP
    'key: stock_check'
    """
    base_docs = _base_documents(base)
    plain = _plain_documents(harness)
    names, order = _file_names(harness, base_docs)
    if order:
        _put_order(plain[HARNESS_FILE], order)
    texts: dict[str, str] = {}
    for rel in (HARNESS_FILE, PROMPT_FILE, HOOKS_FILE):
        texts[rel] = _render(rel, plain[rel], base_docs.get(rel))
    for skill in harness.skills:
        rel = names[f"skill:{skill.key}"]
        texts[rel] = _render(rel, plain[f"skill:{skill.key}"], _find(base_docs, SKILLS_DIR, skill.key))
    for tool in harness.tools:
        rel = names[f"tool:{tool.key}"]
        texts[rel] = _render(rel, plain[f"tool:{tool.key}"], _find(base_docs, TOOLS_DIR, tool.key))
    return texts


# -- the documents of a harness ----------------------------------------------------------------


def _plain_documents(h: Harness) -> dict[str, dict[str, Any]]:
    """Plain documents in the canonical field order; :class:`_Default` marks fields at their default."""
    top: dict[str, Any] = {"name": h.name}
    if h.version is not None:
        top["version"] = h.version
    top["schema_version"] = h.schema_version
    top["description"] = h.description if h.description else _Default(h.description)
    top["variables"] = dict(h.variables) if h.variables else _Default({})
    top["skill_loader"] = {"name": h.skill_loader.name, "description": h.skill_loader.description}
    prompt = {
        "blocks": [{"key": b.key, "text": b.text} for b in h.prompt.blocks],
        "constraints": {
            key: {
                "value": c.value,
                "min": c.min,
                "max": c.max,
                "description": c.description if c.description else _Default(""),
            }
            for key, c in h.prompt.constraints.items()
        },
    }
    r, m = h.hooks.retry, h.hooks.message
    hooks = {
        "retry": {
            "max_attempts": r.max_attempts,
            "on": list(r.on),
            "backoff_s": r.backoff_s,
            "feedback_template": r.feedback_template,
        },
        "message": {
            "tool_result_format": m.tool_result_format,
            "tool_result_prefix": m.tool_result_prefix,
            "skill_header": m.skill_header,
        },
        "guards": [_guard_document(g) for g in h.hooks.guards],
    }
    docs: dict[str, dict[str, Any]] = {HARNESS_FILE: top, PROMPT_FILE: prompt, HOOKS_FILE: hooks}
    for s in h.skills:
        docs[f"skill:{s.key}"] = {
            "key": s.key,
            "name": s.name,
            "description": s.description,
            "rules": [{"key": rule.key, "text": rule.text} for rule in s.rules],
            "tools": list(s.tools),
            "layout": s.layout if s.layout else _Default(""),
            "files": list(s.files) if s.files else _Default([]),
            "inert_files": list(s.inert_files) if s.inert_files else _Default([]),
            "extra": copy.deepcopy(s.extra) if s.extra else _Default({}),
        }
    for t in h.tools:
        timeout = int(t.timeout_s) if isinstance(t.timeout_s, float) and t.timeout_s.is_integer() else t.timeout_s
        docs[f"tool:{t.key}"] = {
            "key": t.key,
            "name": t.name,
            "description": t.description,
            "backend": t.backend if t.backend else _Default(""),  # unbound: no backend line until one is chosen
            "timeout_s": timeout,
            "parameters": copy.deepcopy(t.parameters),
            "extra": copy.deepcopy(t.extra) if t.extra else _Default({}),
        }
    return docs


def _guard_document(g: Guard) -> dict[str, Any]:
    doc: dict[str, Any] = {"type": g.type}
    if g.constraint is not None:
        doc["constraint"] = g.constraint
    if g.limit is not None:
        doc["limit"] = g.limit
    doc["phrases"] = list(g.phrases) if g.phrases else _Default([])
    doc["action"] = g.action
    doc["replacement"] = g.replacement if g.replacement else _Default("")
    return doc


# -- file names and order ----------------------------------------------------------------------


def _base_documents(base: str | Path | dict[str, Any] | None) -> dict[str, Any]:
    if base is None:
        return {}
    if isinstance(base, dict):
        return copy.deepcopy(base)  # the caller's documents stay as they were
    return read_documents(base)


def _find(base_docs: dict[str, Any], folder: str, key: str) -> Any:
    for rel, doc in base_docs.items():
        if rel.startswith(folder + "/") and isinstance(doc, dict) and doc.get("key") == key:
            return doc
    return None


def _file_names(h: Harness, base_docs: dict[str, Any]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The file of every skill and tool, and the ``order:`` lists harness.yaml needs."""
    names: dict[str, str] = {}
    order: dict[str, list[str]] = {}
    base_order = _mapping_of(_mapping_of(base_docs.get(HARNESS_FILE)).get("order"))
    for kind, folder, keys in (
        ("skill", SKILLS_DIR, [s.key for s in h.skills]),
        ("tool", TOOLS_DIR, [t.key for t in h.tools]),
    ):
        chosen: list[str] = []
        for key in keys:
            found = next(
                (
                    rel
                    for rel, d in base_docs.items()
                    if rel.startswith(folder + "/") and isinstance(d, dict) and d.get("key") == key
                ),
                None,
            )
            chosen.append(found or "")
        taken = set(chosen)
        for i, key in enumerate(keys):
            if not chosen[i]:  # a new element: <key>.yaml, unless an old file of another key has that name
                rel, n = f"{folder}/{key}.yaml", 2
                while rel in taken:
                    rel, n = f"{folder}/{key}-{n}.yaml", n + 1
                chosen[i] = rel
                taken.add(rel)
        if sorted(chosen) != chosen or isinstance(base_order.get(f"{kind}s"), list):
            order[f"{kind}s"] = list(keys)  # file names cannot give this order (or the author lists it)
        names.update({f"{kind}:{key}": rel for key, rel in zip(keys, chosen)})
    return names, order


def _put_order(top: dict[str, Any], order: dict[str, list[str]]) -> None:
    """Add ``order`` to the plain harness.yaml document, before ``skill_loader`` (schema order)."""
    items = list(top.items())
    top.clear()
    for k, v in items:
        if k == "skill_loader":
            top["order"] = order
        top[k] = v
    top.setdefault("order", order)


def _mapping_of(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# -- rendering: fresh or updating a base document ----------------------------------------------


def _render(rel: str, new: dict[str, Any], old: Any) -> str:
    try:
        if isinstance(old, CommentedMap):
            _update_map(old, new, data=False)
            return dump_yaml(old)
        return dump_yaml(_fresh(new))
    except YAMLError as e:  # a value YAML cannot hold, e.g. an arbitrary Python object
        raise HarnessError(
            Issue(
                rel,
                f"cannot write this file: {e}",
                hint="harness values are text, numbers, true/false, lists and mappings",
            )
        ) from None


def _fresh(value: Any) -> Any:
    if isinstance(value, dict):
        m = CommentedMap()
        for k, v in value.items():
            if not isinstance(v, _Default):
                m[k] = _fresh(v)
        return m
    if isinstance(value, list):
        seq = CommentedSeq(_fresh(v) for v in value)
        if all(_is_scalar(v) for v in value) and len(repr(value)) <= 80:
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, str):
        return _styled_text(value)
    return value


def _styled_text(text: str, like: Any = None) -> Any:
    """``text`` in the style of ``like`` (the scalar it replaces; None in a fresh file) where that
    style can hold it exactly, else the safest readable style."""
    if not all(ch.isprintable() or ch == "\n" for ch in text):
        return DoubleQuotedScalarString(text)  # escapes: the only style that keeps every character
    if isinstance(like, DoubleQuotedScalarString):
        return DoubleQuotedScalarString(text)
    if "\n" in text:
        return LiteralScalarString(text)
    if isinstance(like, LiteralScalarString):
        return LiteralScalarString(text)
    if isinstance(like, SingleQuotedScalarString):
        return SingleQuotedScalarString(text)
    if isinstance(like, FoldedScalarString) or (like is None and len(text) > FOLD_ABOVE):
        if _foldable(text):
            return _folded(text)
    return text  # plain where YAML allows it; the writer quotes it when needed


def _foldable(text: str) -> bool:
    return text == text.strip() and "  " not in text and len(text) > FOLD_WIDTH


def _folded(text: str) -> FoldedScalarString:
    """A folded block of ``text``, wrapped at spaces (never inside a ``{{ }}`` template)."""
    inside = set()
    for m in _TEMPLATE_SPAN.finditer(text):
        inside.update(range(m.start(), m.end()))
    spaces = [i for i, ch in enumerate(text) if ch == " " and i not in inside]
    positions, start = [], 0
    for i, cut in enumerate(spaces):
        following = spaces[i + 1] if i + 1 < len(spaces) else len(text)
        if following - start > FOLD_WIDTH and cut > start:
            positions.append(cut)
            start = cut + 1
    out = FoldedScalarString(text)
    out.fold_pos = positions  # type: ignore[attr-defined]
    return out


def _update_map(old: CommentedMap, new: dict[str, Any], *, data: bool) -> None:
    """Make ``old`` hold ``new``, touching only what differs. ``data`` maps (variables,
    constraints, tool parameters) also take ``new``'s key order; field maps keep the author's."""
    for k in [k for k in old if k not in new]:
        del old[k]
    previous = None
    for k, v in new.items():
        if isinstance(v, _Default):
            if k not in old:  # a default the author left out stays out
                continue
            v = v.value
        if k in old:
            _put(old, k, _updated(old[k], v, data=data or k in ("variables", "constraints", "parameters", "extra")))
        else:
            position = (list(old).index(previous) + 1) if previous in old else 0
            old.insert(position, k, _fresh(v))
        previous = k
    if data:
        order = [k for k in new if k in old]
        if list(old) != order:
            for k in order:
                old.move_to_end(k)


def _updated(old: Any, new: Any, *, data: bool) -> Any:
    if isinstance(new, dict):
        if isinstance(old, CommentedMap):
            _update_map(old, new, data=data)
            return old
        return _fresh(new)
    if isinstance(new, list):
        if isinstance(old, CommentedSeq):
            _update_seq(old, new, data=data)
            return old
        return _fresh(new)
    if _same_scalar(old, new):
        return old
    if isinstance(new, str):
        return _styled_text(new, like=old if isinstance(old, str) else "")
    return _fresh(new)


def _update_seq(old: CommentedSeq, new: list[Any], *, data: bool) -> None:
    keyed = (
        all(isinstance(x, dict) and isinstance(x.get("key"), str) for x in new)
        and all(isinstance(x, CommentedMap) and isinstance(x.get("key"), str) for x in old)
        and len({x["key"] for x in old}) == len(old)
    )
    if keyed:
        # Match items by key so that an edit stays in its item and a reorder moves whole items
        # (with the comments that belong to them).
        position = {item["key"]: i for i, item in enumerate(old)}
        items, comments = [], {}
        for j, x in enumerate(new):
            i = position.get(x["key"])
            if i is None:
                items.append(_fresh(x))
                continue
            item = old[i]
            _update_map(item, x, data=data)
            items.append(item)
            if i in old.ca.items:
                comments[j] = old.ca.items[i]
        if items != list(old) or [id(a) for a in items] != [id(b) for b in old]:
            old.ca.items.clear()
            old.ca.items.update(comments)
            old[:] = items
        return
    for i, x in enumerate(new):
        if i < len(old):
            _put(old, i, _updated(old[i], x, data=data))
        else:
            old.append(_fresh(x))
    del old[len(new) :]


def _put(container: Any, key: Any, value: Any) -> None:
    """Set a value as given: ruamel's own setters would force the old scalar's style on it."""
    if container[key] is value:
        return
    if isinstance(container, CommentedMap):
        ordereddict.__setitem__(container, key, value)
    else:
        list.__setitem__(container, key, value)


def _same_scalar(old: Any, new: Any) -> bool:
    if isinstance(old, bool) or isinstance(new, bool):
        return isinstance(old, bool) and isinstance(new, bool) and bool(old) == bool(new)
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return old == new
    if isinstance(old, str) and isinstance(new, str):
        return str(old) == str(new)
    return old is None and new is None


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


# -- checks before writing ---------------------------------------------------------------------


def _check_round_trip(h: Harness, texts: dict[str, str], *, validate: bool, backends: Iterable[str] | None) -> None:
    docs = {rel: parse_yaml_data(text, rel) for rel, text in texts.items()}
    if validate:
        issues = validate_documents(docs, backends=backends)
        if issues:  # parse again with positions, so that every issue names its line
            rt = {rel: parse_yaml(text, rel) for rel, text in texts.items()}
            raise HarnessError(validate_documents(rt, backends=backends) or issues)
    ordered = {rel: docs[rel] for rel in sorted(docs, key=_load_order)}
    loaded = build_harness(ordered)
    if _comparable(loaded) != _comparable(h):
        raise HarnessError(
            Issue(
                HARNESS_FILE,
                "the written files would not load back to the same harness",
                hint="the harness holds values its files cannot represent (check types: numbers, lists, text)",
            )
        )


def _load_order(rel: str) -> tuple[int, str]:
    rank = {HARNESS_FILE: 0, PROMPT_FILE: 1, HOOKS_FILE: 2}
    if rel in rank:
        return rank[rel], ""
    return (3, rel) if rel.startswith(SKILLS_DIR + "/") else (4, rel)


def _comparable(h: Harness) -> Harness:
    return dataclasses.replace(h, root=None, sources={})


def _check_target(target: Path) -> None:
    if target.is_symlink() and not target.exists():
        raise HarnessError(Issue(str(target), "is a broken symbolic link", hint="choose another folder"))
    if not target.exists():
        return
    if not target.is_dir():
        raise HarnessError(Issue(str(target), "exists and is not a folder", hint="choose another folder"))
    if not is_harness_dir(target) and any(target.iterdir()):
        raise HarnessError(
            Issue(
                str(target),
                "folder is not empty and holds no harness",
                hint="save into a new folder, an empty one, or a harness folder",
            )
        )
    issues = folder_issues(target, (SKILLS_DIR, TOOLS_DIR))
    for rel in (HARNESS_FILE, PROMPT_FILE, HOOKS_FILE):
        if (target / rel).is_symlink():
            issues.append(Issue(rel, f"{rel} is a symbolic link", hint="replace it with a real file"))
    if issues:
        raise HarnessError(issues)


# -- writing -----------------------------------------------------------------------------------


def _write_new_folder(target: Path, texts: dict[str, str | bytes]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for rel, text in texts.items():
            dest = staging / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        for sub in (SKILLS_DIR, TOOLS_DIR):
            (staging / sub).mkdir(exist_ok=True)
        os.chmod(staging, 0o755)  # mkdtemp makes it private; a harness folder is not
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _update_folder(target: Path, texts: dict[str, str | bytes]) -> None:
    for sub in (SKILLS_DIR, TOOLS_DIR):
        (target / sub).mkdir(exist_ok=True)
    for rel, text in texts.items():
        data = text.encode("utf-8") if isinstance(text, str) else text
        dest = target / rel
        if dest.parent != target / SKILLS_DIR and dest.parent != target / TOOLS_DIR and dest.parent != target:
            _make_real_folders(target, dest.parent)  # a skill's own folder: skills/<key>/references/
        if dest.is_file() and not dest.is_symlink() and dest.read_bytes() == data:
            continue
        atomic_write(dest, data)
    for sub in (SKILLS_DIR, TOOLS_DIR):
        folder = target / sub
        for p in sorted(folder.iterdir()) if folder.is_dir() else []:
            rel = f"{sub}/{p.name}"
            if p.suffix in (".yaml", ".yml") and rel not in texts and (p.is_file() or p.is_symlink()):
                p.unlink()


def _make_real_folders(target: Path, folder: Path) -> None:
    """Create ``folder`` under ``target``, refusing a link anywhere on the way (it would write elsewhere)."""
    current = target
    for part in folder.relative_to(target).parts:
        current = current / part
        if current.is_symlink():
            raise HarnessError(
                Issue(str(current.relative_to(target)), "is a symbolic link", hint="replace it with a real folder")
            )
        current.mkdir(exist_ok=True)
