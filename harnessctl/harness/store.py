"""Harness versions in git: resolve, list, log and tag, over any plain git repository.

A harness folder lives somewhere inside a git work tree (the project's own repository or any
other). A *version* (``v4``, ``1.2.0``) names one commit of it, found from either

- a git tag — ``v4``, or ``<harness name>/v4`` when several harnesses share a repository —
  whose commit records that same ``version:`` in the harness's ``harness.yaml`` (or none); or
- the history of ``harness.yaml`` itself: the commit at which its ``version:`` field last
  became that name. ``harnessctl tag`` commits the field before it tags, so versions resolve
  on every full clone, also where git tags did not travel.

Reading a harness at a commit materializes its folder from that commit into a temporary folder
(regular files only: symbolic links, submodules and paths that would leave the folder are
refused) and loads it with the normal loader, so every check that applies to a working folder
applies to history too.

>>> store = HarnessStore("harnesses/livecommerce")            # doctest: +SKIP
>>> store.resolve("v1").harness.tool("order_status").name   # doctest: +SKIP
'check_order'
>>> [v.name for v in store.list_versions()]                   # doctest: +SKIP
['v1', 'v2', 'v3']
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from .diff import diff_harnesses
from .errors import HarnessError, Issue
from .fileio import atomic_write
from .loader import HARNESS_FILE, load_harness
from .model import Harness
from .validate import issue_under
from .yamlio import MAX_FILE_BYTES, dump_yaml, read_yaml_file

#: ``v<digits>`` or a semantic version, with or without a leading ``v``.
VERSION_RE = re.compile(r"^(?:v\d+|v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$")
#: Limits on what is materialized from one commit (a harness is a few dozen small files).
MAX_TREE_FILES = 2_000
MAX_TREE_BYTES = 32 * MAX_FILE_BYTES

_REGULAR_MODES = (0o100644, 0o100755)
_LINK_MODE = 0o120000


class StoreError(HarnessError):
    """A version, revision or repository problem (unknown version, not a git repository, ...)."""


@dataclass(frozen=True)
class Version:
    """One version of a harness: its name and the commit it marks.

    ``tag`` is the git tag that marks it, or None when it was found from the ``version:``
    history of ``harness.yaml`` (e.g. on a clone without tags).
    """

    name: str
    commit: str
    date: datetime
    message: str
    tag: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "commit": self.commit,
            "date": self.date.isoformat(),
            "message": self.message,
            "tag": self.tag,
        }


@dataclass
class ResolvedHarness:
    """A harness loaded from a reference, and where it came from.

    ``kind`` is ``folder`` (loaded from a folder on disk), ``version`` or ``revision`` (read
    from a commit). ``label`` is what a person reads: ``v3``, ``HEAD~1``, ``a1b2c3d``, a path.
    """

    harness: Harness
    kind: Literal["folder", "version", "revision"]
    label: str
    commit: str | None = None
    version: str | None = None
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "label": self.label,
            "commit": self.commit,
            "version": self.version,
            "path": self.path,
        }


@dataclass(frozen=True)
class LogEntry:
    """One commit in the history of a harness, newest first in :meth:`HarnessStore.log`.

    ``label`` is the version name, or the short commit for an unversioned change. ``summary``
    is the semantic diff in one line against ``since``: for a version, the previous version
    (what the release holds; the first version lists what it holds); for an unversioned
    commit, the entry before it.
    """

    label: str
    version: str | None
    commit: str
    date: datetime
    author: str
    message: str
    summary: str
    since: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "version": self.version,
            "commit": self.commit,
            "date": self.date.isoformat(),
            "author": self.author,
            "message": self.message,
            "summary": self.summary,
            "since": self.since,
        }


def is_version_name(name: str) -> bool:
    """Whether ``name`` looks like a version: ``v4``, ``v1.2.0`` or ``1.2.0``.

    >>> is_version_name("v12"), is_version_name("1.4.0-rc.1"), is_version_name("latest")
    (True, True, False)
    """
    return bool(VERSION_RE.match(name))


class HarnessStore:
    """The git history of one harness folder.

    ``harness_dir`` may be None when only folders will be resolved (``diff A_DIR B_DIR``).
    The repository is found lazily, searching the folder's parents.

    >>> store = HarnessStore("harnesses/livecommerce")    # doctest: +SKIP
    >>> store.log()[0].summary                            # doctest: +SKIP
    'max_reply_chars 160→120, 3 rules of compliance reworded, ...'
    """

    def __init__(self, harness_dir: str | Path | None):
        self.harness_dir = Path(harness_dir) if harness_dir is not None else None
        self._repo: Any = None
        self._rel: str | None = None
        self._loaded: dict[str, Harness] = {}  # tree sha -> harness (immutable history)
        self._recorded: dict[str, tuple[str | None, str | None]] = {}  # blob sha -> (name, version)
        self._versions: list[Version] | None = None

    # -- repository ----------------------------------------------------------------------
    @property
    def repo(self) -> Any:
        """The git repository holding the harness (a ``git.Repo``)."""
        if self._repo is None:
            self._open()
        return self._repo

    @property
    def rel(self) -> str:
        """The harness folder inside the repository, as a POSIX path (``""`` at the root)."""
        if self._rel is None:
            self._open()
        assert self._rel is not None
        return self._rel

    def _open(self) -> None:
        import git

        if self.harness_dir is None:
            raise StoreError(
                Issue(
                    "(harness)",
                    "no harness folder to look up versions for",
                    hint="pass -H PATH or run inside a harness folder",
                )
            )
        where = str(self.harness_dir)
        if not self.harness_dir.is_dir():
            raise StoreError(Issue(where, "no such harness folder"))
        try:
            repo = git.Repo(self.harness_dir, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise StoreError(
                Issue(
                    where,
                    "not inside a git repository",
                    hint="versions live in git: run `git init` and commit the harness, or compare folders instead",
                )
            ) from None
        if repo.bare or repo.working_tree_dir is None:
            raise StoreError(Issue(where, "the git repository has no work tree"))
        try:
            rel = self.harness_dir.resolve().relative_to(Path(repo.working_tree_dir).resolve())
        except ValueError:
            raise StoreError(
                Issue(where, f"the harness folder is outside the work tree of {repo.working_tree_dir}")
            ) from None
        self._repo, self._rel = repo, rel.as_posix() if str(rel) != "." else ""

    def _path(self, name: str) -> str:
        return f"{self.rel}/{name}" if self.rel else name

    def _pathspec(self, path: str) -> str:
        """``path`` for git's command line, taken literally (a folder called ``a*`` is not a glob)."""
        return f":(literal){path}" if path else "."

    def _has_head(self) -> bool:
        return bool(self.repo.head.is_valid())

    # -- reading a commit ----------------------------------------------------------------
    def _commit(self, rev: str) -> Any:
        """The commit a revision names, or None."""
        import git
        from gitdb.exc import BadName, BadObject

        if rev.startswith("-"):
            return None
        try:
            commit = self.repo.commit(rev)
        except (BadName, BadObject, ValueError, IndexError, TypeError, git.GitCommandError):
            return None
        return commit if commit.type == "commit" else None

    def _subtree(self, commit: Any) -> Any:
        if not self.rel:
            return commit.tree
        try:
            tree = commit.tree / self.rel
        except KeyError:
            return None
        return tree if tree.type == "tree" else None

    def load_at(self, rev: str) -> Harness:
        """The harness as committed at revision ``rev`` (validated like a working folder).

        >>> HarnessStore("harnesses/livecommerce").load_at("HEAD~1").name   # doctest: +SKIP
        'livecommerce'
        """
        commit = self._commit(rev)
        if commit is None:
            raise StoreError(Issue(self.rel or ".", f"unknown revision {rev!r}"))
        return self._load_commit(commit)

    def _load_commit(self, commit: Any) -> Harness:
        where = f"{commit.hexsha[:7]}:{self.rel}" if self.rel else f"{commit.hexsha[:7]}:"
        tree = self._subtree(commit)
        if tree is None:
            raise StoreError(Issue(self.rel or ".", f"the harness does not exist at commit {commit.hexsha[:7]}"))
        cached = self._loaded.get(tree.hexsha)
        if cached is None:
            with tempfile.TemporaryDirectory(prefix="harnessctl-") as tmp:
                _materialize(tree, Path(tmp), where)
                try:
                    cached = load_harness(tmp)
                except HarnessError as e:
                    raise HarnessError([_relocate(i, tmp, where) for i in e.issues]) from None
            cached.root = None  # the temporary folder is gone
            self._loaded[tree.hexsha] = cached
        return cached.copy()

    def _recorded_fields(self, commit: Any) -> tuple[str | None, str | None] | None:
        """``(name, version)`` from ``harness.yaml`` at ``commit``, None if the file is absent."""
        try:
            blob = commit.tree / self._path(HARNESS_FILE)
        except KeyError:
            return None
        if blob.type != "blob":
            return None
        if blob.hexsha not in self._recorded:
            self._recorded[blob.hexsha] = _parse_name_version(blob)
        return self._recorded[blob.hexsha]

    # -- versions ------------------------------------------------------------------------
    def list_versions(self) -> list[Version]:
        """Every version of the harness, oldest first.

        >>> [(v.name, v.commit[:7]) for v in HarnessStore("harnesses/livecommerce").list_versions()]   # doctest: +SKIP
        [('v1', 'ceaaa45'), ('v2', 'e8142c4'), ('v3', '6d0dc3f')]
        """
        if self._versions is not None:
            return list(self._versions)
        if not self._has_head():
            return []
        found: dict[str, Version] = {}
        for ref in self.repo.tags:
            name = self._tag_version(ref)
            if name is not None and name not in found:
                commit = ref.commit
                message = ref.tag.message.strip() if ref.tag is not None else commit.summary
                found[name] = Version(name, commit.hexsha, commit.committed_datetime, message, tag=ref.name)
        for name, commit in self._versions_from_history().items():
            if name not in found:
                found[name] = Version(name, commit.hexsha, commit.committed_datetime, str(commit.summary))
        self._versions = sorted(found.values(), key=lambda v: (v.date, _version_sort_key(v.name)))
        return list(self._versions)

    def find_version(self, name: str) -> Version | None:
        """The version called ``name``, or None."""
        for v in self.list_versions():
            if v.name == name:
                return v
        return None

    def _tag_version(self, ref: Any) -> str | None:
        """The version a tag marks for *this* harness, or None when it marks something else."""
        tag_name = str(ref.name)
        prefix, _, rest = tag_name.rpartition("/")
        version = rest if prefix else tag_name
        if not is_version_name(version):
            return None
        try:
            commit = ref.commit
        except ValueError:  # a tag on a tree or a blob
            return None
        recorded = self._recorded_fields(commit)
        if recorded is None:
            return None  # the harness does not exist there
        name, recorded_version = recorded
        if prefix and prefix != name:
            return None
        # A commit that records another version belongs to another harness sharing the tag name.
        if recorded_version is not None and recorded_version != version:
            return None
        return version

    def _versions_from_history(self) -> dict[str, Any]:
        """Version name -> the commit at which ``version:`` last became that name.

        The *last* transition, not the first: a harness whose early snapshot already carried a
        later version (an import, a squashed history) still resolves that version to the
        commit that ``harnessctl tag`` would have marked.
        """
        found: dict[str, Any] = {}
        previous: str | None = None
        for commit in reversed(list(self.repo.iter_commits("HEAD", paths=self._pathspec(self._path(HARNESS_FILE))))):
            recorded = self._recorded_fields(commit)
            version = recorded[1] if recorded else None
            if version is not None and version != previous and is_version_name(version):
                found[version] = commit
            previous = version
        return found

    # -- resolving references ------------------------------------------------------------
    def resolve(self, ref: str | None = None) -> ResolvedHarness:
        """Load the harness a reference names: a version, a git revision or a folder.

        ``None`` is the working folder (``-H``). A version wins over a folder of the same name,
        a folder over a revision. Raises :class:`StoreError` with the known versions when the
        reference names nothing.

        >>> store = HarnessStore("harnesses/livecommerce")      # doctest: +SKIP
        >>> store.resolve("v2").commit[:7], store.resolve("HEAD~2").kind   # doctest: +SKIP
        ('e8142c4', 'revision')
        """
        if ref is None:
            if self.harness_dir is None:
                raise StoreError(Issue("(harness)", "no harness folder given", hint="pass -H PATH"))
            return ResolvedHarness(
                _load_folder(self.harness_dir), "folder", str(self.harness_dir), path=str(self.harness_dir)
            )
        folder = Path(ref)
        if folder.is_dir():
            if is_version_name(ref) and self._repo_available():
                v = self.find_version(ref)
                if v is not None:
                    return self._from_version(v)
            return ResolvedHarness(_load_folder(folder), "folder", ref, path=str(folder))
        if is_version_name(ref) and self._has_head():
            v = self.find_version(ref)
            if v is not None:
                return self._from_version(v)
        commit = self._commit(ref) if self._has_head() else None
        if commit is None:
            known = [v.name for v in self.list_versions()]
            hint = (
                f"known versions: {', '.join(known)}" if known else "no versions yet: mark one with `harnessctl tag v1`"
            )
            raise StoreError(Issue(self.rel or ".", f"unknown version, revision or folder {ref!r}", hint=hint))
        label = commit.hexsha[:7] if re.fullmatch(r"[0-9a-fA-F]{7,40}", ref) else ref
        version = next((v.name for v in self.list_versions() if v.commit == commit.hexsha), None)
        return ResolvedHarness(self._load_commit(commit), "revision", label, commit=commit.hexsha, version=version)

    def _from_version(self, v: Version) -> ResolvedHarness:
        return ResolvedHarness(
            self._load_commit(self.repo.commit(v.commit)), "version", v.name, commit=v.commit, version=v.name
        )

    def _repo_available(self) -> bool:
        try:
            return self._has_head()
        except StoreError:
            return False

    # -- history -------------------------------------------------------------------------
    def log(self, limit: int | None = None) -> list[LogEntry]:
        """The commits that changed the harness (and every version reachable from HEAD), newest
        first, each summarized in one line (see :class:`LogEntry` for against what).

        >>> [e.label for e in HarnessStore("harnesses/livecommerce").log()]   # doctest: +SKIP
        ['v3', 'v2', 'v1', '95b40c0']
        """
        if not self._has_head():
            return []
        head = self.repo.head.commit
        commits = list(self.repo.iter_commits(head, paths=self._pathspec(self.rel) if self.rel else None))
        seen = {c.hexsha for c in commits}
        versions = {v.commit: v.name for v in self.list_versions()}
        for sha in versions:
            if sha not in seen and self.repo.is_ancestor(sha, head.hexsha):
                commits.append(self.repo.commit(sha))
                seen.add(sha)
        commits.sort(key=lambda c: c.committed_date, reverse=True)
        if limit is not None:
            # One more than shown, so the oldest shown entry is still summarized against its parent.
            commits = commits[: limit + 1]
        entries: list[LogEntry] = []
        previous: tuple[str, Harness] | None = None  # the entry before, any kind
        previous_version: tuple[str, Harness] | None = None
        for i, commit in enumerate(reversed(commits)):
            version = versions.get(commit.hexsha)
            label = version or commit.hexsha[:7]
            # A version is summarized against the previous version (what the release holds),
            # an unversioned commit against the entry before it (what that commit did).
            base = previous_version if version else previous
            summary, current = self._summarize(
                commit, base[1] if base else None, first="first version" if version else "harness created"
            )
            if current is not None:
                previous = (label, current)
                if version:
                    previous_version = (label, current)
            if limit is not None and len(commits) > limit and i == 0:
                continue  # only loaded to summarize the oldest entry shown
            entries.append(
                LogEntry(
                    label=label,
                    version=version,
                    commit=commit.hexsha,
                    date=commit.committed_datetime,
                    author=str(commit.author.name),
                    message=str(commit.summary),
                    summary=summary,
                    since=base[0] if base and current is not None else None,
                )
            )
        entries.reverse()
        return entries

    def _summarize(self, commit: Any, previous: Harness | None, first: str) -> tuple[str, Harness | None]:
        if self._subtree(commit) is None:
            return "harness removed", None
        try:
            current = self._load_commit(commit)
        except HarnessError as e:
            return f"invalid: {e.issues[0]}", None
        if previous is None:
            return f"{first}: " + _counts(current), current
        return diff_harnesses(previous, current).summary(), current

    # -- tagging -------------------------------------------------------------------------
    def tag(self, version: str, message: str = "") -> Version:
        """Mark the committed state of the harness as ``version``.

        Refuses (raising :class:`StoreError`, nothing written) a name that is not a version, a
        version that exists, uncommitted changes under the harness folder, or an invalid
        committed harness. Otherwise sets ``version:`` in ``harness.yaml`` (a one-line change),
        commits only that file as ``"<name> <version>: <message>"`` and creates an annotated
        tag. A failure on the way undoes the commit, the tag and the file edit.

        >>> HarnessStore("harnesses/livecommerce").tag("v4", "shorter replies").tag   # doctest: +SKIP
        'v4'
        """
        where = self.rel or "."
        if not is_version_name(version):
            raise StoreError(
                Issue(
                    where, f"{version!r} is not a version name", hint="use v<number> (v4) or a semantic version (1.4.0)"
                )
            )
        if not self._has_head():
            raise StoreError(Issue(where, "the repository has no commits yet", hint="commit the harness first"))
        existing = self.find_version(version)
        if existing is not None:
            raise StoreError(
                Issue(
                    where,
                    f"version {version} already exists (commit {existing.commit[:7]}, {existing.date:%Y-%m-%d})",
                    hint="choose a new version name",
                )
            )
        dirty = self._uncommitted()
        if dirty:
            shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
            raise StoreError(
                Issue(
                    where,
                    f"uncommitted changes under the harness folder: {shown}",
                    hint="commit (or discard) them, then tag the committed state",
                )
            )
        head = self.repo.head.commit
        try:
            harness = self._load_commit(head)
        except StoreError:
            raise
        except HarnessError as e:
            raise StoreError(
                [
                    Issue(
                        where,
                        f"refusing to tag {version}: the committed harness is invalid",
                        hint="fix these errors, commit, and tag again",
                    ),
                    *e.issues,
                ]
            ) from None
        tag_name = self._free_tag_name(version, harness.name)
        subject = f"{harness.name} {version}" + (f": {message.strip()}" if message.strip() else "")
        self._write_version_and_tag(version, tag_name, subject, head.hexsha)
        tag_ref = self.repo.tags[tag_name]
        commit = tag_ref.commit
        return Version(version, commit.hexsha, commit.committed_datetime, subject, tag=tag_name)

    def _uncommitted(self) -> list[str]:
        """Staged, unstaged and untracked paths under the harness folder."""
        out = self.repo.git.status("--porcelain", "--untracked-files=all", "--", self._pathspec(self.rel))
        return [line[3:] for line in out.splitlines() if line.strip()]

    def _free_tag_name(self, version: str, harness_name: str) -> str:
        names = {str(t.name) for t in self.repo.tags}
        for candidate in (version, f"{harness_name}/{version}"):
            if candidate not in names:
                return candidate
        raise StoreError(
            Issue(
                self.rel or ".",
                f"git tags {version} and {harness_name}/{version} both exist already",
                hint="choose a new version name",
            )
        )

    def _write_version_and_tag(self, version: str, tag_name: str, subject: str, head_before: str) -> None:
        import git

        root = Path(self.repo.working_tree_dir) / self.rel if self.rel else Path(self.repo.working_tree_dir)
        target = root / HARNESS_FILE
        original = target.read_bytes()
        doc = read_yaml_file(root, HARNESS_FILE)
        if "version" in doc:
            doc["version"] = version
        else:
            keys = list(doc.keys())
            doc.insert(keys.index("name") + 1 if "name" in keys else 0, "version", version)
        try:
            atomic_write(target, dump_yaml(doc).encode("utf-8"))
            self._versions = None  # the history is about to change
            self.repo.git.commit("-m", subject, "--only", "--", self._pathspec(self._path(HARNESS_FILE)))
            self.repo.create_tag(tag_name, ref=self.repo.head.commit.hexsha, message=subject)
        except BaseException as e:
            self._undo_tag(tag_name, head_before, target, original)
            if isinstance(e, git.GitCommandError):
                detail = (e.stderr or str(e)).strip().splitlines()
                raise StoreError(
                    Issue(
                        self._path(HARNESS_FILE),
                        f"git refused the version commit: {detail[-1] if detail else e}",
                        hint="nothing was changed; fix the git problem and tag again",
                    )
                ) from None
            raise

    def _undo_tag(self, tag_name: str, head_before: str, target: Path, original: bytes) -> None:
        """Put everything back as it was before :meth:`tag` started writing."""
        import git

        try:
            if tag_name in {str(t.name) for t in self.repo.tags}:
                self.repo.delete_tag(self.repo.tags[tag_name])
            if self.repo.head.commit.hexsha != head_before:
                self.repo.git.reset("--soft", head_before)
                self.repo.git.reset("-q", head_before, "--", self._pathspec(self._path(HARNESS_FILE)))
        except git.GitCommandError:
            pass
        atomic_write(target, original)


# -- helpers -----------------------------------------------------------------------------


def _materialize(tree: Any, dest: Path, where: str) -> None:
    """Write the regular files of ``tree`` under ``dest``; refuse links and escaping paths."""
    base = dest.resolve()
    count = total = 0
    prefix = f"{tree.path}/" if tree.path else ""
    for item in tree.traverse():
        inner = item.path[len(prefix) :] if prefix and item.path.startswith(prefix) else item.path
        parts = PurePosixPath(inner).parts
        shown = f"{where}/{inner}" if where and not where.endswith(":") else f"{where}{inner}"
        if not parts or any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts) or inner.startswith("/"):
            raise StoreError(
                Issue(
                    shown,
                    "path would leave the harness folder",
                    hint="a harness folder holds only plain files inside it",
                )
            )
        target = dest.joinpath(*parts)
        if not target.resolve().is_relative_to(base):
            raise StoreError(Issue(shown, "path would leave the harness folder"))
        if item.type == "tree":
            target.mkdir(parents=True, exist_ok=True)
            continue
        if item.type != "blob" or item.mode == _LINK_MODE:
            what = "a symbolic link" if item.type == "blob" else "a submodule"
            raise StoreError(
                Issue(
                    shown,
                    f"is {what}; a harness folder in git holds regular files only",
                    hint="replace it with a plain file",
                )
            )
        if item.mode not in _REGULAR_MODES:
            raise StoreError(Issue(shown, "is not a regular file"))
        count += 1
        total += item.size
        if count > MAX_TREE_FILES or total > MAX_TREE_BYTES:
            raise StoreError(
                Issue(where, f"the harness folder is too large (over {MAX_TREE_FILES} files or {MAX_TREE_BYTES} bytes)")
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as f:  # "x": never overwrite or follow what is already there
            f.write(item.data_stream.read())


def _load_folder(folder: str | Path) -> Harness:
    """Load a working folder; its issues name files as the user reaches them (``shop/tools/x.yaml``)."""
    try:
        return load_harness(folder)
    except HarnessError as e:
        raise HarnessError([issue_under(folder, i) for i in e.issues]) from None


def _relocate(issue: Issue, tmp: str, where: str) -> Issue:
    """Point an issue found in a materialized folder at ``<commit>:<path>`` instead."""
    file = issue.file
    tmp_real = os.path.realpath(tmp)
    for root in (tmp, tmp_real):
        if file.startswith(root):
            file = file[len(root) :].lstrip("/")
            break
    joined = f"{where}/{file}" if file and not where.endswith(":") else f"{where}{file}"
    return replace(issue, file=joined.rstrip("/"))


def _parse_name_version(blob: Any) -> tuple[str | None, str | None]:
    """``(name, version)`` of a committed ``harness.yaml`` blob; ``(None, None)`` if unreadable.

    Safe loader only (no object construction), size-capped: history is data too.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    if blob.size > MAX_FILE_BYTES:
        return None, None
    try:
        doc = YAML(typ="safe", pure=True).load(blob.data_stream.read().decode("utf-8"))
    except (YAMLError, UnicodeDecodeError, RecursionError, ValueError):
        return None, None
    if not isinstance(doc, dict):
        return None, None
    name, version = doc.get("name"), doc.get("version")
    return (
        str(name) if isinstance(name, (str, int)) else None,
        str(version) if isinstance(version, (str, int, float)) and not isinstance(version, bool) else None,
    )


def _version_sort_key(name: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", name))


def _counts(h: Harness) -> str:
    return (
        f"{len(h.skills)} skills, {len(h.tools)} tools, {len(h.prompt.blocks)} prompt blocks, "
        f"{len(h.prompt.constraints)} constraints"
    )
