"""Load a harness folder into :class:`~harnessctl.harness.model.Harness`.

Files are read with ruamel.yaml in round-trip mode so that comments and key order survive a
programmatic edit (see :mod:`harnessctl.harness.save`). A harness file is data: it never runs
code and never reaches outside its folder. Skills and tools come in the order of their file
names, or in the order harness.yaml lists their keys under ``order: {skills: [...], tools: [...]}``.

>>> h = load_harness("harnesses/livecommerce")   # doctest: +SKIP
>>> [s.key for s in h.skills][:2]                 # doctest: +SKIP
['greeting', 'product_intro']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import HarnessError, Issue
from .model import (
    Constraint,
    Guard,
    Harness,
    Hooks,
    MessageHook,
    Prompt,
    PromptBlock,
    RetryHook,
    Rule,
    Skill,
    SkillLoader,
    Tool,
)
from .validate import validate_documents
from .yamlio import folder_issues, read_yaml_file

HARNESS_FILE = "harness.yaml"
PROMPT_FILE = "prompt.yaml"
HOOKS_FILE = "hooks.yaml"
SKILLS_DIR = "skills"
TOOLS_DIR = "tools"


def is_harness_dir(path: str | Path) -> bool:
    return (Path(path) / HARNESS_FILE).is_file()


def harness_files(root: str | Path) -> list[str]:
    """Relative paths of every file that belongs to the harness at ``root``, in load order."""
    root = Path(root)
    files = [HARNESS_FILE]
    for name in (PROMPT_FILE, HOOKS_FILE):
        if (root / name).exists() or (root / name).is_symlink():
            files.append(name)
    for sub in (SKILLS_DIR, TOOLS_DIR):
        d = root / sub
        if d.is_dir() and not d.is_symlink():  # a linked folder is refused by read_documents
            files += sorted(f"{sub}/{p.name}" for p in d.iterdir() if p.suffix in (".yaml", ".yml"))
    return files


def read_documents(root: str | Path, *, round_trip: bool = True) -> dict[str, Any]:
    """Read every harness file under ``root`` into round-trip YAML documents, by relative path.

    ``round_trip=False`` reads plain dicts and lists instead (faster; no comments, no line
    numbers — for reading a harness, not for editing it or pointing at a line).
    Raises :class:`HarnessError` listing every file that cannot be read safely.
    """
    root = Path(root)
    if not root.exists():
        raise HarnessError(Issue(str(root), "no such harness folder", hint="check the path or run `harnessctl init`"))
    if not is_harness_dir(root):
        raise HarnessError(
            Issue(
                str(root / HARNESS_FILE),
                "missing harness.yaml",
                hint="a harness folder needs a harness.yaml; run `harnessctl init PATH` to create one",
            )
        )
    docs: dict[str, Any] = {}
    issues: list[Issue] = folder_issues(root, (SKILLS_DIR, TOOLS_DIR))
    for rel in harness_files(root):
        try:
            docs[rel] = read_yaml_file(root, rel, round_trip=round_trip)
        except HarnessError as e:
            issues += e.issues
    if issues:
        raise HarnessError(issues)
    return docs


def build_harness(docs: dict[str, Any], root: str | None = None) -> Harness:
    """Build the model from already-validated documents (see :func:`validate_documents`)."""
    top = docs.get(HARNESS_FILE) or {}
    loader = top.get("skill_loader") or {}
    h = Harness(
        name=str(top.get("name", "")),
        description=str(top.get("description", "") or ""),
        version=(str(top["version"]) if top.get("version") is not None else None),
        schema_version=int(top.get("schema_version", 1)),
        variables=_plain(top.get("variables") or {}),
        skill_loader=SkillLoader(
            name=str(loader.get("name", SkillLoader.name)),
            description=str(loader.get("description", SkillLoader.description)),
        ),
        root=root,
    )
    prompt = docs.get(PROMPT_FILE) or {}
    h.prompt = Prompt(
        blocks=[PromptBlock(key=str(b["key"]), text=str(b["text"])) for b in prompt.get("blocks") or []],
        constraints={
            str(k): Constraint(
                key=str(k),
                value=_num(c["value"]),
                min=_num(c["min"]),
                max=_num(c["max"]),
                description=str(c.get("description", "") or ""),
            )
            for k, c in (prompt.get("constraints") or {}).items()
        },
    )
    for rel, doc in docs.items():
        if rel.startswith(SKILLS_DIR + "/"):
            skill = Skill(
                key=str(doc["key"]),
                name=str(doc["name"]),
                description=str(doc.get("description", "") or ""),
                rules=[Rule(key=str(r["key"]), text=str(r["text"])) for r in doc.get("rules") or []],
                tools=[str(t) for t in doc.get("tools") or []],
                layout=str(doc.get("layout", "") or ""),
                files=[str(f) for f in doc.get("files") or []],
                inert_files=[str(f) for f in doc.get("inert_files") or []],
                extra=_plain(doc.get("extra") or {}),
            )
            h.skills.append(skill)
            h.sources[f"skill:{skill.key}"] = rel
        elif rel.startswith(TOOLS_DIR + "/"):
            tool = Tool(
                key=str(doc["key"]),
                name=str(doc["name"]),
                description=str(doc.get("description", "") or ""),
                parameters=_plain(doc.get("parameters") or {"type": "object", "properties": {}}),
                backend=str(doc.get("backend", "") or ""),
                timeout_s=float(doc.get("timeout_s", 5.0)),
                extra=_plain(doc.get("extra") or {}),
            )
            h.tools.append(tool)
            h.sources[f"tool:{tool.key}"] = rel
    order = top.get("order") if isinstance(top.get("order"), dict) else {}
    h.skills = _in_order(h.skills, order.get("skills"))
    h.tools = _in_order(h.tools, order.get("tools"))
    hooks = docs.get(HOOKS_FILE) or {}
    retry = hooks.get("retry") or {}
    message = hooks.get("message") or {}
    h.hooks = Hooks(
        retry=RetryHook(**{k: _plain(v) for k, v in retry.items()}),
        message=MessageHook(**{k: _plain(v) for k, v in message.items()}),
        guards=[Guard(**{k: _plain(v) for k, v in g.items()}) for g in hooks.get("guards") or []],
    )
    return h


def load_harness(root: str | Path, *, validate: bool = True) -> Harness:
    """Load (and by default validate) the harness folder at ``root``.

    >>> h = load_harness("harnesses/livecommerce")        # doctest: +SKIP
    >>> h.constraint("max_reply_chars")                    # doctest: +SKIP
    120
    """
    docs = read_documents(root, round_trip=False)
    if validate:
        issues = validate_documents(docs, root=str(root))
        if issues:
            # Read again with positions, so that every issue names its line and column.
            raise HarnessError(validate_documents(read_documents(root), root=str(root)) or issues)
    return build_harness(docs, root=str(root))


def _in_order(items: list[Any], keys: Any) -> list[Any]:
    """``items`` in the order of ``keys`` (harness.yaml ``order:``); without it, file-name order.
    Keys it does not name keep their file order after the named ones (validation reports them)."""
    if not isinstance(keys, list):
        return items
    rank = {str(k): i for i, k in enumerate(keys)}
    return sorted(items, key=lambda x: rank.get(x.key, len(rank)))  # stable: ties keep file order


def _num(v: Any) -> int | float:
    return v if isinstance(v, int) else float(v)


def _plain(v: Any) -> Any:
    """Round-trip YAML containers -> plain dicts/lists (so models never hold ruamel types)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, str):
        return str(v)
    return v
