"""Variant manifests: how a variant was made and what its surfaces are, by stable key.

A manifest is enough to regenerate its variant (source + operators + seed + strength + split)
and to read it without loading it: the surface <-> key maps of skills, tools and the skill
loader, the order of prompt blocks and rules, the constraint values and the hook surfaces.

>>> m = surface_map(h)                                   # doctest: +SKIP
>>> m["tools"]["order_status"]                           # doctest: +SKIP
'track_order'
>>> m["keys_by_name"]["track_order"]                     # doctest: +SKIP
'tool:order_status'
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from harnessctl.harness.model import Harness

from .records import OpRecord

MANIFEST_SCHEMA_VERSION = 1
MANIFEST_FILE = "manifest.json"


@dataclass
class SourceInfo:
    """The harness a variant was made from: name, version, folder and git commit when known."""

    name: str
    version: str | None = None
    path: str | None = None
    commit: str | None = None  # HEAD of the repository holding the folder
    dirty: bool | None = None  # the folder differs from that commit


@dataclass
class VariantManifest:
    """Everything about one variant except its files (see :func:`write_manifest`)."""

    variant_id: str
    split: str
    seed: int
    strength: float
    ops: list[str]
    paraphraser: str
    source: SourceInfo
    operators: list[OpRecord] = field(default_factory=list)
    surface: dict[str, Any] = field(default_factory=dict)
    schema_version: int = MANIFEST_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["operators"] = [op.to_dict() for op in self.operators]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VariantManifest:
        d = dict(d)
        d["source"] = SourceInfo(**d["source"])
        d["operators"] = [OpRecord.from_dict(o) for o in d.get("operators", [])]
        return cls(**d)


def surface_map(h: Harness, source: Harness | None = None) -> dict[str, Any]:
    """The surfaces of ``h`` by stable key, and the reverse map from surface name to element.

    With ``source``, also lists the skills ``h`` hides (present in the source, absent here).
    """
    skills = {s.key: s.name for s in h.skills}
    tools = {t.key: t.name for t in h.tools}
    keys_by_name = {name: f"skill:{key}" for key, name in skills.items()}
    keys_by_name.update({name: f"tool:{key}" for key, name in tools.items()})
    keys_by_name[h.skill_loader.name] = "skill_loader"
    out: dict[str, Any] = {
        "skills": skills,
        "tools": tools,
        "skill_loader": h.skill_loader.name,
        "keys_by_name": keys_by_name,
        "blocks": [b.key for b in h.prompt.blocks],
        "rules": {s.key: [r.key for r in s.rules] for s in h.skills},
        "constraints": {k: c.value for k, c in h.prompt.constraints.items()},
        "hooks": {
            "max_attempts": h.hooks.retry.max_attempts,
            "tool_result_format": h.hooks.message.tool_result_format,
            "tool_result_prefix": h.hooks.message.tool_result_prefix,
            "skill_header": h.hooks.message.skill_header,
        },
    }
    if source is not None:
        out["hidden_skills"] = [s.key for s in source.skills if s.key not in skills]
    return out


def manifest_json(manifest: VariantManifest) -> str:
    """The manifest as stable JSON text (sorted keys, fixed indentation, trailing newline)."""
    return json.dumps(manifest.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_manifest(manifest: VariantManifest, folder: str | Path) -> Path:
    """Write ``manifest.json`` into ``folder`` atomically (it marks the variant as finished)."""
    path = Path(folder) / MANIFEST_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(manifest_json(manifest), encoding="utf-8")
    tmp.replace(path)
    return path


def read_manifest(folder: str | Path) -> VariantManifest:
    """Read ``manifest.json`` from a variant folder."""
    return VariantManifest.from_dict(json.loads((Path(folder) / MANIFEST_FILE).read_text(encoding="utf-8")))


def source_info(h: Harness, path: str | Path | None = None) -> SourceInfo:
    """Name, version, folder and git commit of a source harness (commit ``None`` outside git)."""
    path = path if path is not None else h.root
    commit, dirty = _git_state(str(Path(path).resolve())) if path is not None else (None, None)
    return SourceInfo(
        name=h.name, version=h.version, path=str(path) if path is not None else None, commit=commit, dirty=dirty
    )


@lru_cache(maxsize=32)
def _git_state(path: str) -> tuple[str | None, bool | None]:
    """HEAD and whether ``path`` differs from it (asked once per folder and process)."""
    try:
        import git

        repo = git.Repo(Path(path).resolve(), search_parent_directories=True)
        commit = repo.head.commit.hexsha
        rel = str(Path(path).resolve().relative_to(Path(repo.working_tree_dir).resolve()))
        dirty = bool(repo.git.status("--porcelain", "--", rel).strip())
        return commit, dirty
    except Exception:  # not a repository, no commit yet, git missing: the manifest just says unknown
        return None, None
