"""Bad input: every kind of broken, hostile or odd harness file gets a clear error naming the
file (and line where there is one), exit code 2, no traceback, no hang, nothing executed and
nothing written. Explicit cases first, then at least 1,000 generated mutations of the real files."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harnessctl.harness import HarnessError, load_harness
from harnessctl.harness.loader import harness_files
from harnessctl.harness.validate import JSON_SCHEMA_KEYWORDS
from harnessctl.harness.yamlio import MAX_DEPTH, MAX_FILE_BYTES, dump_yaml, parse_yaml

from .harness_support import LIVECOMMERCE, copy_harness, edit, run_cli, sim_backends, snapshot  # noqa: F401


@contextlib.contextmanager
def hang_guard(seconds: int = 60):
    """Fail (instead of hanging the suite) if validation does not finish. Not a speed check:
    the limit is far above the milliseconds a file takes."""

    def on_alarm(signum, frame):
        raise AssertionError(f"validation did not finish within {seconds} s: it hangs")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def validate_cli(root: Path, *extra: str):
    with hang_guard():
        return run_cli("validate", str(root), *extra)


def assert_rejected(result, shown_file: str, *, message: str, line: int | None = None):
    """Exit 2, no traceback, and an issue naming ``shown_file`` (and ``line``) with ``message``."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    where = shown_file + (f":{line}:" if line is not None else "")
    hits = [ln for ln in result.output.splitlines() if ln.startswith(where) and message in ln]
    assert hits, f"no '{where} ... {message}' in:\n{result.output}"


# -- explicit cases, one per class of bad input ------------------------------------------------


def _write(rel: str, data: bytes | str):
    def setup(root: Path, outside: Path) -> None:
        path = root / rel
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)

    return setup


def _replace(rel: str, old: str, new: str):
    def setup(root: Path, outside: Path) -> None:
        edit(root, rel, old, new)

    return setup


def _append(rel: str, text: str):
    def setup(root: Path, outside: Path) -> None:
        with open(root / rel, "a", encoding="utf-8") as f:
            f.write(text)

    return setup


def _link_file_outside(root: Path, outside: Path) -> None:
    (outside / "secret.yaml").write_text("key: secret\nname: secret\ndescription: not yours\n")
    (root / "skills" / "greeting.yaml").unlink()
    (root / "skills" / "greeting.yaml").symlink_to(outside / "secret.yaml")


def _link_file_inside(root: Path, outside: Path) -> None:
    (root / "skills" / "greeting.yaml").unlink()
    (root / "skills" / "greeting.yaml").symlink_to(root / "skills" / "complaint.yaml")


def _link_folder_outside(root: Path, outside: Path) -> None:
    (outside / "tools").mkdir()
    for p in (root / "tools").iterdir():
        (outside / "tools" / p.name).write_bytes(p.read_bytes())
        p.unlink()
    (root / "tools").rmdir()
    (root / "tools").symlink_to(outside / "tools")


def _fifo(root: Path, outside: Path) -> None:
    os.mkfifo(root / "skills" / "pipe.yaml")


def _billion_laughs(width: int = 10, levels: int = 6) -> str:
    lines = ["lol0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"lol{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n" + "\n".join(lines) + "\n"


SENTINEL = "EXECUTED"

EXPLICIT = [
    # (id, setup, shown file, line, message fragment)
    (
        "malformed YAML",
        _replace("tools/promotions.yaml", "required: [product_id]", "required: [product_id"),
        "tools/promotions.yaml",
        None,
        "invalid YAML",
    ),
    (
        "truncated file",
        _write("skills/greeting.yaml", 'key: greeting\nname: "greet_vi'),
        "skills/greeting.yaml",
        2,
        "invalid YAML",
    ),
    (
        "tab indentation",
        _replace("hooks.yaml", "  max_attempts: 2", "\tmax_attempts: 2"),
        "hooks.yaml",
        3,
        "tab used for indentation",
    ),
    (
        "wrong type",
        _replace("prompt.yaml", "value: 120", "value: lots"),
        "prompt.yaml",
        30,
        "value: expected a number, found the text 'lots'",
    ),
    (
        "unknown field",
        _replace("tools/stock_check.yaml", "timeout_s: 3", "timeout: 3"),
        "tools/stock_check.yaml",
        5,
        "unknown field 'timeout'",
    ),
    ("empty file", _write("hooks.yaml", ""), "hooks.yaml", None, "file is empty"),
    (
        "comments-only file",
        _write("skills/greeting.yaml", "# nothing yet\n"),
        "skills/greeting.yaml",
        None,
        "file is empty",
    ),
    (
        "a file that is a list",
        _write("prompt.yaml", "- key: persona\n  text: hi\n"),
        "prompt.yaml",
        1,
        "expected a mapping (key: value lines) at the top, found a list",
    ),
    (
        "a file that is one value",
        _write("harness.yaml", "livecommerce\n"),
        "harness.yaml",
        1,
        "found a single value ('livecommerce')",
    ),
    (
        "several documents",
        _append("tools/promotions.yaml", "---\nkey: again\n"),
        "tools/promotions.yaml",
        None,
        "expected a single document",
    ),
    (
        "duplicate keys",
        _replace("skills/greeting.yaml", "name: greet_viewer\n", "name: greet_viewer\nname: hello\n"),
        "skills/greeting.yaml",
        3,
        "duplicate key 'name' (first defined on line 2)",
    ),
    (
        "duplicate names across files",
        _replace("skills/greeting.yaml", "name: greet_viewer", "name: order_help"),
        "skills/order_help.yaml",
        2,
        "skill name 'order_help' is already used by skills/greeting.yaml",
    ),
    (
        "binary content",
        _write("tools/promotions.yaml", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
        "tools/promotions.yaml",
        3,
        "binary content",
    ),
    (
        "non-UTF-8 text",
        _write("skills/greeting.yaml", "key: greeting\nname: caf\xe9\n".encode("latin-1")),
        "skills/greeting.yaml",
        2,
        "not UTF-8 text (byte 0xe9)",
    ),
    (
        "UTF-16 text",
        _write("skills/greeting.yaml", "key: greeting\n".encode("utf-16")),
        "skills/greeting.yaml",
        1,
        "file is UTF-16/UTF-32 text",
    ),
    (
        "control character",
        _replace("skills/greeting.yaml", "greet_viewer", "greet\x07viewer"),
        "skills/greeting.yaml",
        2,
        "control character U+0007 is not allowed",
    ),
    (
        "alias bomb",
        _append("prompt.yaml", _billion_laughs()),
        "prompt.yaml",
        None,
        "document expands to more than 100,000 values",
    ),
    (
        "recursive alias",
        _append("hooks.yaml", "loop: &me [1, *me]\n"),
        "hooks.yaml",
        20,
        "alias *me refers to a value that contains it",
    ),
    (
        "deep flow nesting",
        _append("harness.yaml", "deep: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        "harness.yaml",
        16,
        f"nesting deeper than {MAX_DEPTH} levels",
    ),
    (
        "deep block nesting",
        _append("harness.yaml", "deep:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(200))),
        "harness.yaml",
        None,
        f"nesting deeper than {MAX_DEPTH} levels",
    ),
    (
        "python object tag",
        _replace(
            "tools/promotions.yaml",
            "backend: sim.get_promotions",
            f"backend: !!python/object/apply:os.system ['touch {SENTINEL}']",
        ),
        "tools/promotions.yaml",
        4,
        "YAML tag !!python/object/apply:os.system is not allowed",
    ),
    (
        "python name tag",
        _append("harness.yaml", "hook: !!python/name:os.system\n"),
        "harness.yaml",
        16,
        "YAML tag !!python/name:os.system is not allowed",
    ),
    (
        "include tag",
        _replace("prompt.yaml", "blocks:", "extra: !include ../../etc/passwd\nblocks:"),
        "prompt.yaml",
        3,
        "YAML tag !include is not allowed",
    ),
    (
        "custom tag",
        _replace("skills/greeting.yaml", "tools: []", "tools: !custom []"),
        "skills/greeting.yaml",
        11,
        "YAML tag !custom is not allowed",
    ),
    (
        "a harmless !!str tag is refused too",
        _replace("harness.yaml", "version: v3", "version: !!str 3"),
        "harness.yaml",
        4,
        "YAML tag !!str is not allowed",
    ),
    (
        "mapping key that is not text",
        _replace("harness.yaml", "  brand:", "  1:"),
        "harness.yaml",
        9,
        "mapping key 1 is not text",
    ),
    (
        "number that is not finite",
        _replace("prompt.yaml", "value: 120", "value: .inf"),
        "prompt.yaml",
        None,
        "inf is not a finite number",
    ),
    (
        "file too large",
        _append("skills/greeting.yaml", "# " + "x" * MAX_FILE_BYTES + "\n"),
        "skills/greeting.yaml",
        None,
        "file is larger than",
    ),
    ("symlinked file leaving the folder", _link_file_outside, "skills/greeting.yaml", None, "is a symbolic link to"),
    ("symlinked file inside the folder", _link_file_inside, "skills/greeting.yaml", None, "is a symbolic link to"),
    ("symlinked folder leaving the folder", _link_folder_outside, "tools/", None, "tools/ is a symbolic link to"),
    ("a FIFO where a file should be (never blocks)", _fifo, "skills/pipe.yaml", None, "not a regular file"),
]


@pytest.mark.parametrize("what,setup,rel,line,message", EXPLICIT, ids=[c[0] for c in EXPLICIT])
def test_bad_input_is_a_clear_error_exit_2_and_changes_nothing(
    tmp_path, monkeypatch, sim_backends, what, setup, rel, line, message
):
    monkeypatch.chdir(tmp_path)  # a tag that ran `touch EXECUTED` would leave the file here
    root = copy_harness(tmp_path / "lc")
    outside = tmp_path / "outside"
    outside.mkdir()
    setup(root, outside)
    before = snapshot(tmp_path)
    result = validate_cli(root)
    assert_rejected(result, f"{root}/{rel}", message=message, line=line)
    with hang_guard(), pytest.raises(HarnessError) as e:
        load_harness(root)
    assert any(i.file == rel and message in i.message for i in e.value.issues)
    assert snapshot(tmp_path) == before, "validation wrote something"
    assert not (tmp_path / SENTINEL).exists(), "a tag ran code"


def test_a_folder_without_harness_yaml_is_refused_with_what_to_do(tmp_path):
    root = copy_harness(tmp_path / "lc")
    (root / "harness.yaml").unlink()
    result = validate_cli(root)
    assert result.exit_code == 2
    assert "not a harness folder (no harness.yaml); run `harnessctl init" in result.stderr


def test_a_missing_tool_file_shows_as_unknown_tool_keys_in_the_skills_using_it(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    (root / "tools" / "order_status.yaml").unlink()
    result = validate_cli(root)
    assert_rejected(result, f"{root}/skills/complaint.yaml", message="unknown tool key 'order_status'", line=11)
    assert_rejected(result, f"{root}/skills/order_help.yaml", message="unknown tool key 'order_status'", line=11)


def test_a_file_the_user_cannot_read_is_an_error_not_a_traceback(tmp_path, sim_backends, monkeypatch):
    root = copy_harness(tmp_path / "lc")
    (root / "hooks.yaml").chmod(0)
    # chmod alone does not stop a superuser (CI may run as root): deny the open itself too.
    import harnessctl.harness.yamlio as yamlio

    real_open = yamlio.os.open

    def deny_hooks(path, flags, *args, **kwargs):
        if str(path).endswith("hooks.yaml"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(yamlio.os, "open", deny_hooks)
    assert_rejected(validate_cli(root), f"{root}/hooks.yaml", message="cannot read the file")


# -- 1,000+ generated bad documents ------------------------------------------------------------

FILES: dict[str, bytes] = {rel: (LIVECOMMERCE / rel).read_bytes() for rel in harness_files(LIVECOMMERCE)}
TEXTS: dict[str, str] = {rel: data.decode("utf-8") for rel, data in FILES.items()}
RELS = sorted(FILES)

# Keys that are field names somewhere in the format, or JSON Schema keywords: a generated
# "unknown" field must be none of them.
_VOCABULARY = (
    set(re.findall(r"^\s*-?\s*([a-z_]+):", "\n".join(TEXTS.values()), re.M))
    | {"limit", "phrases", "replacement", "on", "version", "schema_version", "variables", "skill_loader"}
    | JSON_SCHEMA_KEYWORDS
)


def _minimal_files(rel: str) -> set[str]:
    """The smallest valid harness around ``rel``: harness.yaml, ``rel`` and what it refers to."""
    need = {"harness.yaml", rel}
    todo = [rel]
    while todo:
        current = todo.pop()
        refs = {f"tools/{k}.yaml" for k in re.findall(r"\{\{\s*tool\.([a-z_]+)\s*\}\}", TEXTS[current])}
        if current.startswith("skills/"):
            refs |= {f"tools/{k}.yaml" for k in parse_yaml(FILES[current], current).get("tools", [])}
        if current == "hooks.yaml":
            refs.add("prompt.yaml")  # the max_chars guard names a constraint
        for r in sorted(refs - need):
            need.add(r)
            todo.append(r)
    return need


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory):
    """One minimal harness per real file, each proven valid before anything is mutated."""
    from harnessctl.harness.backends import backends_registered

    from .harness_support import SIM_BACKENDS, _unused_backend

    base = tmp_path_factory.mktemp("bad-docs")
    roots = {}
    with backends_registered({n: _unused_backend for n in SIM_BACKENDS}):
        for i, rel in enumerate(RELS):
            root = base / f"w{i:02d}"
            for f in _minimal_files(rel):
                (root / f).parent.mkdir(parents=True, exist_ok=True)
                (root / f).write_bytes(FILES[f])
            (root / "skills").mkdir(exist_ok=True)
            (root / "tools").mkdir(exist_ok=True)
            check = load_harness(root)  # raises if the unmutated workspace were not valid
            assert check.name == "livecommerce"
            roots[rel] = root
        yield base, roots


_PARSED = {rel: parse_yaml(FILES[rel], rel) for rel in RELS}


def _doc(rel: str):
    """A fresh round-trip document of a real file (positions included), safe to mutate."""
    return copy.deepcopy(_PARSED[rel])


def _walk(node, path=()):
    """Every (path, value) of a document; inside enum/const/default/examples only the container."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("enum", "const", "default", "examples"):
                yield (*path, k), v
            else:
                yield from _walk(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*path, i))


def _set(doc, path, value):
    if not path:
        return value
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = value
    return doc


@st.composite
def wrong_type(draw):
    rel = draw(st.sampled_from(RELS))
    doc = _doc(rel)
    path, value = draw(st.sampled_from(list(_walk(doc))))
    if isinstance(value, dict):
        bad = ["not", "a", "mapping"]
    elif isinstance(value, list):
        bad = {"not_a": "list"}
    elif isinstance(value, str):
        bad = draw(st.sampled_from([[1, 2], {"a": 1}]))
    else:
        bad = draw(st.sampled_from(["not a number", [1], {"n": 1}]))
    return "wrong type", rel, dump_yaml(_set(doc, path, bad)).encode()


def _typo(draw, word: str) -> str:
    i = draw(st.integers(0, len(word) - 1))
    kind = draw(st.sampled_from(["drop", "double", "swap", "add"]))
    if kind == "drop" and len(word) > 1:
        new = word[:i] + word[i + 1 :]
    elif kind == "swap" and i + 1 < len(word):
        new = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    elif kind == "double":
        new = word[:i] + word[i] + word[i:]
    else:
        new = word[:i] + draw(st.sampled_from("aeioxz")) + word[i:]
    return new


@st.composite
def unknown_field(draw):
    rel = draw(st.sampled_from(RELS))
    doc = _doc(rel)
    maps = [(p, v) for p, v in _walk(doc) if isinstance(v, dict) and v and p != ("variables",)]
    path, mapping = draw(st.sampled_from(maps))
    new = _typo(draw, draw(st.sampled_from(sorted(mapping))))
    while new in mapping or new in _VOCABULARY or not new:
        new += "x"
    mapping.insert(draw(st.integers(0, len(mapping))), new, "x")
    return "unknown field", rel, dump_yaml(doc).encode()


@st.composite
def tab_indent(draw):
    rel = draw(st.sampled_from(RELS))
    lines = TEXTS[rel].split("\n")
    candidates = [i for i, ln in enumerate(lines) if ln.startswith("  ")]
    i = draw(st.sampled_from(candidates))
    indent = len(lines[i]) - len(lines[i].lstrip(" "))
    j = draw(st.integers(0, indent - 1))
    lines[i] = lines[i][:j] + "\t" + lines[i][j + 1 :]
    return "tab", rel, "\n".join(lines).encode()


@st.composite
def truncated(draw):
    rel = draw(st.sampled_from(RELS))
    text = TEXTS[rel]
    k = draw(st.integers(0, len(text) - 1))
    opener = draw(st.sampled_from(["[", "{", '"', "'"]))
    return "truncated", rel, (text[:k] + "\n" + opener + "unclosed").encode()


@st.composite
def binary_junk(draw):
    rel = draw(st.sampled_from(RELS))
    data = FILES[rel]
    bad = draw(st.sampled_from([b"\x00", b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xfe\xff\x00"]))
    junk = draw(st.binary(max_size=16)) + bad + draw(st.binary(max_size=16))
    k = draw(st.integers(0, len(data)))
    return "binary", rel, data[:k] + junk + data[k:]


@st.composite
def alias_bomb(draw):
    rel = draw(st.sampled_from(RELS))
    width, levels = draw(st.integers(10, 14)), draw(st.integers(5, 7))
    return "alias bomb", rel, (TEXTS[rel] + _billion_laughs(width, levels)).encode()


@st.composite
def deep_nesting(draw):
    rel = draw(st.sampled_from(RELS))
    form = draw(st.sampled_from(["flow_seq", "flow_map", "block_map", "block_seq"]))
    depth = draw(st.integers(MAX_DEPTH + 1, 3000 if form.startswith("flow") else 200))
    if form == "flow_seq":
        deep = "deep: " + "[" * depth + "]" * depth + "\n"
    elif form == "flow_map":
        deep = "deep: " + "{a: " * depth + "x" + "}" * depth + "\n"
    elif form == "block_map":
        deep = "deep:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(depth))
    else:
        deep = "deep:\n  " + "- " * depth + "x\n"
    return "deep nesting", rel, (TEXTS[rel] + "\n" + deep).encode()


TAGS = [
    f"!!python/object/apply:os.system ['touch {SENTINEL}']",
    f"!!python/object/apply:subprocess.check_output [['touch', '{SENTINEL}']]",
    "!!python/name:os.system",
    "!!python/module:os",
    "!!python/object:harnessctl.harness.model.Harness {name: x}",
    "!include ../../../etc/passwd",
    "!custom value",
    "!env HOME",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "!!str plain",
    "! tagged",
]


@st.composite
def python_tag(draw):
    rel = draw(st.sampled_from(RELS))
    tag = draw(st.sampled_from(TAGS))
    doc = _doc(rel)
    # single-line scalar values: their position is exact, the tag replaces the value in place
    spots = []
    for path, value in _walk(doc):
        if (
            path
            and isinstance(value, (str, int, float))
            and type(value).__name__ not in ("FoldedScalarString", "LiteralScalarString")
        ):
            parent = doc
            for p in path[:-1]:
                parent = parent[p]
            line, col = parent.lc.value(path[-1]) if isinstance(parent, dict) else parent.lc.item(path[-1])
            if isinstance(parent, dict) and not TEXTS[rel].split("\n")[line][col:].startswith(("[", "{")):
                spots.append((line, col))
    lines = TEXTS[rel].split("\n")
    if spots and draw(st.booleans()):
        line, col = draw(st.sampled_from(spots))
        lines[line] = lines[line][:col] + tag
        return "python tag", rel, "\n".join(lines).encode()
    return "python tag", rel, (TEXTS[rel] + f"\nhook: {tag}\n").encode()


@st.composite
def duplicate_key(draw):
    rel = draw(st.sampled_from(RELS))
    doc = _doc(rel)
    lines = TEXTS[rel].split("\n")
    spots = []
    for _path, node in _walk(doc):
        if isinstance(node, dict):
            for k, v in node.items():
                kl, kc = node.lc.key(k)
                vl, _ = node.lc.value(k)
                single_line = vl == kl and not isinstance(v, (dict,)) and type(v).__name__ != "FoldedScalarString"
                if single_line and (not isinstance(v, list) or lines[vl].rstrip().endswith("]")):
                    spots.append((kl, kc))
    line, col = draw(st.sampled_from(spots))
    lines.insert(line + 1, " " * col + lines[line][col:])
    return "duplicate key", rel, "\n".join(lines).encode()


@st.composite
def wrong_top_level(draw):
    rel = draw(st.sampled_from(RELS))
    keys = list(_doc(rel))
    body = draw(
        st.sampled_from(
            [
                "\n".join(f"- {k}" for k in keys) + "\n",
                "[1, 2, 3]\n",
                "just some words\n",
                '"quoted"\n',
                "42\n",
                "- - nested\n",
            ]
        )
    )
    return "not a mapping", rel, body.encode()


@st.composite
def empty(draw):
    rel = draw(st.sampled_from(RELS))
    body = draw(st.sampled_from(["", "\n", "   \n\n", "# nothing here\n", "---\n", "~\n", "null\n", "---\n...\n"]))
    return "empty", rel, body.encode()


BAD_DOCUMENTS = st.one_of(
    wrong_type(),
    unknown_field(),
    tab_indent(),
    truncated(),
    binary_junk(),
    alias_bomb(),
    deep_nesting(),
    python_tag(),
    duplicate_key(),
    wrong_top_level(),
    empty(),
)
KINDS = {
    "wrong type",
    "unknown field",
    "tab",
    "truncated",
    "binary",
    "alias bomb",
    "deep nesting",
    "python tag",
    "duplicate key",
    "not a mapping",
    "empty",
}


def test_a_thousand_generated_bad_documents_are_each_rejected_cleanly(workspaces, monkeypatch, sim_backends):
    base, roots = workspaces
    monkeypatch.chdir(base)  # a tag that ran `touch EXECUTED` would leave the file here
    seen: list[str] = []
    before = {rel: snapshot(root) for rel, root in roots.items()}

    @settings(
        max_examples=1000,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the failing example is shown as found
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(case=BAD_DOCUMENTS)
    def check(case):
        kind, rel, data = case
        root = roots[rel]
        target = root / rel
        target.write_bytes(data)
        try:
            result = validate_cli(root, "--json")
            assert result.exit_code == 2, (kind, rel, result.output[-2000:])
            assert "Traceback" not in result.output
            report = json.loads(result.stdout)
            assert report["valid"] is False
            assert any(i["file"] == f"{root}/{rel}" and i["message"] for i in report["issues"]), (kind, rel, report)
            with hang_guard(), pytest.raises(HarnessError) as e:
                load_harness(root)
            assert any(i.file == rel for i in e.value.issues)
        finally:
            target.write_bytes(FILES[rel])
        after = snapshot(root)
        assert {k: v for k, v in after.items() if k != rel} == {k: v for k, v in before[rel].items() if k != rel}
        assert not (base / SENTINEL).exists()
        seen.append(kind)

    check()
    assert len(seen) >= 1000
    assert set(seen) == KINDS
    for rel, root in roots.items():
        assert sorted(snapshot(root)) == sorted(before[rel]), "a file appeared or vanished"
    assert sorted(p.name for p in base.iterdir()) == sorted(r.name for r in roots.values())


# -- the fast reading path refuses exactly what the round-trip reader refuses ------------------


def _outcome(parse, data: bytes, rel: str):
    try:
        return "ok", parse(data, rel)
    except HarnessError as e:
        return "refused", [str(i) for i in e.issues]


def test_the_plain_data_reader_reads_every_shipped_file_like_the_round_trip_reader():
    from harnessctl.harness.yamlio import parse_yaml_data

    for rel in RELS:
        fast = parse_yaml_data(FILES[rel], rel)
        assert type(fast) is dict and fast == _PARSED[rel], rel


def test_generated_bad_documents_get_the_same_verdict_and_message_from_both_readers():
    from harnessctl.harness.yamlio import parse_yaml_data

    seen: set[str] = set()

    @settings(
        max_examples=400,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(case=BAD_DOCUMENTS)
    def check(case):
        kind, rel, data = case
        with hang_guard():
            fast, slow = _outcome(parse_yaml_data, data, rel), _outcome(parse_yaml, data, rel)
        assert fast == slow, (kind, rel)
        seen.add(kind)

    check()
    assert seen == KINDS


@pytest.mark.parametrize(
    "text",
    [
        "a: !!python/object/apply:os.system ['true']\n",
        "a: !!str 3\n",
        "a: &x [1, *x]\n",
        "a: 1\na: 2\n",
        "\tb: 1\n",
        "1: x\n",
        "a: .nan\n",
        _billion_laughs(),
        "a: " + "[" * 200 + "]" * 200 + "\n",
    ],
)
def test_the_plain_data_reader_refuses_what_the_round_trip_reader_refuses(text):
    from harnessctl.harness.yamlio import parse_yaml_data

    fast, slow = _outcome(parse_yaml_data, text.encode(), "x.yaml"), _outcome(parse_yaml, text.encode(), "x.yaml")
    assert fast[0] == "refused" and fast == slow


def test_the_fast_readers_guard_refuses_on_its_own_before_any_fallback(monkeypatch):
    """The plain parser itself stops at tags, bombs and depth: the fallback only words the error."""
    from ruamel.yaml import YAML

    from harnessctl.harness import yamlio

    for text in (
        "a: !!python/name:os.system\n",
        _billion_laughs(),
        "a: " + "[" * 200 + "]" * 200 + "\n",
        "a: &x [1, *x]\n",
    ):
        y = YAML(typ="safe", pure=True)
        y.Parser = yamlio._GuardedDataParser
        with pytest.raises(yamlio._Refused):
            y.load(text)
