"""Import into a harness folder, and export from it: Agent Skills folders and tool lists.

Each import reads and checks every input first, builds the new harness in memory, validates
it, and only then writes — so a bad input writes nothing (all or nothing). It returns the
semantic diff it made. An imported tool has no ``backend`` until it is bound (``bind=``, or a
``backend:`` line added later); until then ``harnessctl validate`` names it and says how.

Re-importing what was exported is a no-op: skills and tools are matched to the harness's own by
name (a skill also by the key export records in its ``metadata``), unchanged rules keep their
keys, and a tool keeps its backend, timeout and the fields the other format carried.

>>> result = import_skills("shop", ["skills/coupon-codes"])      # doctest: +SKIP
>>> [c.kind for c in result.diff.changes]                         # doctest: +SKIP
['added']
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .agent_skills import SKILL_FILE, exported_name, key_for_name, read_skill_folder, skill_from_folder, skill_md_text
from .diff import HarnessDiff, diff_harnesses
from .errors import HarnessError, Issue
from .loader import SKILLS_DIR, build_harness, read_documents
from .model import Harness, Skill, Tool
from .save import render_harness_files, save_harness
from .tool_formats import FORMATS, MCP, merged_extra, read_tool_list, tool_key, tools_as
from .validate import is_unbound_issue, issue_under, validate_documents
from .yamlio import parse_yaml, parse_yaml_data, safe_harness_path

_BACKEND_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$"


@dataclass
class ImportResult:
    """What an import did: the semantic diff, the warnings, the files written, the unbound tools."""

    root: str
    diff: HarnessDiff
    warnings: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    unbound: list[str] = field(default_factory=list)  # names of the harness's tools without a backend
    format: str | None = None  # the tool list's format

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.root,
            "format": self.format,
            "diff": self.diff.to_dict(),
            "warnings": self.warnings,
            "written": self.written,
            "unbound": self.unbound,
        }


@dataclass
class ExportResult:
    """What an export wrote (folders or a file) and what the target format could not hold."""

    written: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# -- import ------------------------------------------------------------------------------------


def import_skills(root: str | Path, folders: list[str | Path], *, dry_run: bool = False) -> ImportResult:
    """Import the Agent Skills ``folders`` into the harness at ``root`` (all or nothing).

    A skill whose name (or recorded key) is the harness's replaces it; otherwise it is added
    with the key of its name (``coupon-codes`` -> ``coupon_codes``). Its files are copied to
    ``skills/<key>/``. ``dry_run`` checks and diffs without writing.

    >>> import_skills("shop", ["in/coupon-codes", "in/gift-wrap"]).diff.summary()   # doctest: +SKIP
    '+skill coupon_codes, +skill gift_wrap'
    """
    before = load_for_import(root)
    after = before.copy()
    read = [read_skill_folder(f) for f in folders]
    warnings = [w for f in read for w in f.warnings]
    seen: dict[str, str] = {}
    for f in read:
        if f.name in seen:
            raise HarnessError(
                Issue(
                    str(Path(f.path) / SKILL_FILE),
                    f"skill name {f.name!r} is also the name of {seen[f.name]}",
                    hint="every skill needs its own name; import one of the two",
                )
            )
        seen[f.name] = str(Path(f.path) / SKILL_FILE)
    assets: dict[str, bytes] = {}
    replaced: dict[str, Skill] = {}
    for f in read:
        old = _skill_to_replace(after, f.name, f.key)
        key = old.key if old else _free_key(key_for_name(f.name), {s.key for s in after.skills})
        skill, skill_warnings = skill_from_folder(f, after, key, old)
        warnings += skill_warnings
        if old:
            after.skills[after.skills.index(old)] = skill
            replaced[key] = old
        else:
            after.skills.append(skill)
        for rel, data in {**f.files, **f.inert_files}.items():
            assets[f"{SKILLS_DIR}/{key}/{rel}"] = data
    stale = [
        f"{SKILLS_DIR}/{key}/{name}"
        for key, old in replaced.items()
        for name in [*old.files, *old.inert_files]
        if f"{SKILLS_DIR}/{key}/{name}" not in assets
    ]
    return _write(before, after, root, assets, stale, warnings, dry_run=dry_run)


def import_tools(
    root: str | Path, path: str | Path, *, bind: dict[str, str] | None = None, dry_run: bool = False
) -> ImportResult:
    """Import the tools of an MCP ``tools/list`` result or OpenAI tools list into the harness at
    ``root`` (all or nothing). ``bind`` maps a tool name to its backend (``sim.get_promotions``);
    a tool the harness already has (same name) keeps its backend and timeout.

    >>> r = import_tools("shop", "mcp_tools.json", bind={"get_coupons": "sim.get_promotions"})   # doctest: +SKIP
    >>> r.format, r.unbound                                                                     # doctest: +SKIP
    ('mcp', [])
    """
    bind = dict(bind or {})
    fmt, specs = read_tool_list(path)
    names = {s.name for s in specs}
    for name, backend in bind.items():
        if name not in names:
            raise HarnessError(
                Issue(str(path), f"--bind names tool {name!r}, which the file does not define", hint=_listed(names))
            )
        if not re.match(_BACKEND_PATTERN, backend):
            raise HarnessError(
                Issue(
                    str(path),
                    f"--bind {name}={backend}: not a backend name",
                    hint="a backend is a dotted name such as sim.get_product",
                )
            )
    before = load_for_import(root)
    after = before.copy()
    for spec in specs:
        old = after.tool_by_name(spec.name)
        if old is not None:
            i = after.tools.index(old)
            after.tools[i] = dataclasses.replace(
                old,
                description=spec.description,
                parameters=spec.parameters,
                extra=merged_extra(fmt, old.extra, spec.extra),
                backend=bind.get(spec.name, old.backend),
            )
        else:
            key = _free_key(tool_key(spec.name), {t.key for t in after.tools})
            after.tools.append(
                Tool(key, spec.name, spec.description, spec.parameters, bind.get(spec.name, ""), extra=spec.extra)
            )
    result = _write(before, after, root, {}, [], [], dry_run=dry_run)
    result.format = fmt
    if result.unbound:
        result.warnings.append(
            f"{len(result.unbound)} tool(s) not bound to a backend: {', '.join(result.unbound)} — "
            "bind each with --bind NAME=BACKEND or a `backend:` line; `harnessctl validate` lists the backends"
        )
    return result


def load_for_import(root: str | Path) -> Harness:
    """The harness at ``root``, which must be valid except for tools not bound yet."""
    docs = read_documents(root, round_trip=False)
    issues = [i for i in validate_documents(docs, root=str(root)) if not is_unbound_issue(i)]
    if issues:
        positioned = validate_documents(read_documents(root), root=str(root))
        issues = [issue_under(root, i) for i in positioned if not is_unbound_issue(i)] or issues
        raise HarnessError(issues)
    return build_harness(docs, root=str(root))


def _skill_to_replace(h: Harness, name: str, key: str | None) -> Skill | None:
    if key is not None:
        for s in h.skills:
            if s.key == key:
                return s
    return h.skill_by_name(name)


def _free_key(key: str, taken: set[str]) -> str:
    out, n = key, 2
    while out in taken:
        out, n = f"{key}_{n}", n + 1
    return out


def _listed(names: set[str]) -> str:
    return f"its tools: {', '.join(sorted(names))}"


def _write(
    before: Harness,
    after: Harness,
    root: str | Path,
    assets: dict[str, bytes],
    stale: list[str],
    warnings: list[str],
    *,
    dry_run: bool,
) -> ImportResult:
    """Validate ``after`` (unbound tools allowed), then write its files and ``assets``."""
    texts = render_harness_files(after, base=root)
    docs = {rel: parse_yaml_data(text, rel) for rel, text in texts.items()}
    issues = [i for i in validate_documents(docs) if not is_unbound_issue(i)]
    if issues:
        positioned = {rel: parse_yaml(text, rel) for rel, text in texts.items()}
        issues = [i for i in validate_documents(positioned) if not is_unbound_issue(i)] or issues
        raise HarnessError([dataclasses.replace(issue_under(root, i), hint=_after_import(i.hint)) for i in issues])
    diff = diff_harnesses(before, after, from_label=f"{root} before", to_label="after import")
    unbound = [t.name for t in after.tools if not t.backend]
    result = ImportResult(str(root), diff, warnings, [], unbound)
    if dry_run:
        return result
    changed = [rel for rel, text in texts.items() if _file_text(Path(root) / rel) != text]
    written_assets = _put_assets(Path(root), assets)
    try:
        save_harness(after, root, base=root, validate=False)
    except BaseException:
        _undo_assets(Path(root), written_assets)
        raise
    for rel in stale:
        try:
            safe_harness_path(root, rel).unlink()
        except (HarnessError, OSError):
            pass
    result.written = sorted({*changed, *written_assets})
    return result


def _after_import(hint: str) -> str:
    return (hint + "; " if hint else "") + "nothing was written: fix the imported file and import again"


def _file_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path.is_file() and not path.is_symlink() else None
    except (OSError, UnicodeDecodeError):
        return None


def _put_assets(root: Path, assets: dict[str, bytes]) -> dict[str, bytes | None]:
    """Write each asset (replacing atomically); return what each path held before (None: nothing)."""
    previous: dict[str, bytes | None] = {}
    try:
        for rel, data in assets.items():
            dest = root / rel
            current = root
            for part in Path(rel).parent.parts:  # real folders only: a link would write elsewhere
                current = current / part
                if current.is_symlink():
                    raise HarnessError(Issue(str(current), "is a symbolic link", hint="replace it with a real folder"))
                current.mkdir(exist_ok=True)
            if dest.is_symlink():
                raise HarnessError(Issue(str(dest), "is a symbolic link", hint="remove it"))
            if dest.is_file() and dest.read_bytes() == data:
                continue  # the same file: not rewritten, not reported
            previous[rel] = dest.read_bytes() if dest.is_file() else None
            fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, dest)
    except BaseException:
        _undo_assets(root, previous)
        raise
    return previous


def _undo_assets(root: Path, previous: dict[str, bytes | None]) -> None:
    for rel, data in previous.items():
        dest = root / rel
        if data is None:
            dest.unlink(missing_ok=True)
        else:
            dest.write_bytes(data)


# -- export ------------------------------------------------------------------------------------


def export_skills(root: str | Path, out: str | Path, *, only: list[str] | None = None) -> ExportResult:
    """Write each skill of the harness at ``root`` as an Agent Skills folder ``out/<name>/``
    (SKILL.md and the skill's files). ``only`` picks skills by key or name. A folder that
    exists is refused; each folder is written next to its place and renamed into it.

    >>> export_skills("shop", "exported").written                   # doctest: +SKIP
    ['exported/coupon-codes', 'exported/gift-wrap']
    """
    h = load_for_import(root)
    skills = h.skills
    if only:
        wanted = set(only)
        unknown = wanted - {s.key for s in skills} - {s.name for s in skills}
        if unknown:
            raise HarnessError(
                Issue(
                    str(root), f"no skill {sorted(unknown)[0]!r}", hint=f"skills: {', '.join(s.name for s in skills)}"
                )
            )
        skills = [s for s in skills if s.key in wanted or s.name in wanted]
    result = ExportResult()
    planned: dict[Path, tuple[str, dict[str, bytes]]] = {}
    for skill in skills:
        text, warnings = skill_md_text(h, skill)
        result.warnings += warnings
        name = exported_name(skill)
        dest = Path(out) / name
        if dest in planned:
            raise HarnessError(Issue(str(dest), f"two skills export to the same folder {name!r}", hint="rename one"))
        if dest.exists() or dest.is_symlink():
            raise HarnessError(Issue(str(dest), "already exists", hint="choose another --out, or remove the folder"))
        files = {
            n: safe_harness_path(root, f"{SKILLS_DIR}/{skill.key}/{n}").read_bytes()
            for n in [*skill.files, *skill.inert_files]
        }
        planned[dest] = (text, files)
    Path(out).mkdir(parents=True, exist_ok=True)
    for dest, (text, files) in planned.items():
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
        try:
            (staging / SKILL_FILE).write_text(text, encoding="utf-8")
            for rel, data in files.items():
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                (staging / rel).write_bytes(data)
            os.chmod(staging, 0o755)
            os.rename(staging, dest)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        result.written.append(str(dest))
    return result


def export_tools(root: str | Path, fmt: str) -> tuple[Any, list[str]]:
    """The tools of the harness at ``root`` as an MCP ``tools/list`` result or an OpenAI list,
    and warnings (tools not bound yet; the skill loader is the runtime's, never exported).

    >>> export_tools("harnesses/livecommerce", "openai")[0][0]["function"]["name"]   # doctest: +SKIP
    'transfer_to_human'
    """
    if fmt not in FORMATS:
        raise HarnessError(Issue(str(root), f"unknown tool format {fmt!r}", hint=f"formats: {', '.join(FORMATS)}"))
    h = load_for_import(root)
    warnings = [f"tool {t.name!r} has no backend yet" for t in h.tools if not t.backend]
    return tools_as(fmt, h.tools), warnings


__all__ = ["MCP", "ExportResult", "ImportResult", "export_skills", "export_tools", "import_skills", "import_tools"]
