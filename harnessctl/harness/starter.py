"""A new, valid, commented starter harness for a team that starts from nothing.

Three skills, two tools bound to simulator backends, prompt blocks with constraints, and hooks
with a retry policy and two reply guards — each file explains its fields in comments, so the
starter doubles as the format's tutorial.

>>> files = write_starter("harnesses/myshop")          # doctest: +SKIP
>>> files[:2]                                          # doctest: +SKIP
['harness.yaml', 'prompt.yaml']
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from .errors import HarnessError, Issue
from .loader import HARNESS_FILE, HOOKS_FILE, PROMPT_FILE, SKILLS_DIR, TOOLS_DIR
from .yamlio import parse_yaml

DEFAULT_NAME = "my_harness"

_HARNESS = """\
# A harness is everything the model sees (prompt, skills, tools) and how the runtime behaves
# around it (hooks). Every element has a stable `key` — its identity for scoring, diffs and
# augmentation, never shown to the model — and a surface you edit freely: names, descriptions,
# wording and order. Field reference: the JSON Schemas in schemas/.
#
#   harnessctl validate          check every file (exit 0 when valid)
#   harnessctl diff v1 v2        review what changed between two versions
#   harnessctl tag v1 -m "..."   release the committed state as a version
name: {name}
schema_version: 1
description: >-
  Starter harness of a live shopping host; replace the wording with your own.
# Default template variables: prompt blocks and skill rules use them as {{{{ name }}}}.
variables:
  brand: My Shop
  avatar_name: Ava
# The tool the model calls to read a skill's rules before it answers (progressive disclosure).
skill_loader:
  name: load_skill
  description: read the rules of one skill before answering
"""

_PROMPT = """\
# The system prompt: blocks are shown in this order. Refer to other elements by key —
# {{ tool.<key> }}, {{ skill.<key> }}, {{ skill_loader }} — so that a rename never leaves a
# stale name behind; {{ <constraint key> }} inserts a constraint's value.
blocks:
  - key: persona
    text: >-
      You are {{ avatar_name }}, the host of the {{ brand }} live shopping room. Answer viewers'
      comments quickly and warmly.
  - key: grounding
    text: >-
      Every price, stock level and date you mention must come from a tool result. Never guess.
  - key: skills_first
    text: >-
      Before answering, call {{ skill_loader }} with the skill that fits the comment, then follow
      its rules.
  - key: reply_style
    text: >-
      Reply in at most {{ max_reply_chars }} characters, in plain words, without lists.
# Numeric constraints: `value` must stay inside [min, max]; augmentation varies it within them.
constraints:
  max_reply_chars:
    value: 150
    min: 60
    max: 300
    description: longest reply the stream overlay can show
  max_tool_calls:
    value: 3
    min: 1
    max: 8
    description: tool calls per reply, the skill loader included
  max_turns:
    value: 5
    min: 2
    max: 10
    description: model turns per reply before the runtime stops the loop
"""

_HOOKS = """\
# Declarative hooks: the runtime interprets them; nothing here runs code.
retry:
  max_attempts: 2  # attempts per tool call, the first included
  on: [tool_error, timeout, invalid_call]
  backoff_s: 0.0
  # What the model reads after a failed call: {{ tool }}, {{ error }}, {{ attempt }}, {{ max_attempts }}.
  feedback_template: >-
    The call to {{ tool }} failed ({{ error }}). Attempt {{ attempt }} of {{ max_attempts }}.
message:
  tool_result_format: json  # json | text
  tool_result_prefix: ""
  skill_header: Skill
# Reply guards, applied in order. max_chars: truncate | revise; banned_phrases: revise | replace.
guards:
  - type: max_chars
    constraint: max_reply_chars
    action: truncate
  - type: banned_phrases
    phrases: [miracle, guaranteed results]
    action: revise
"""

_SKILLS = {
    "greeting": """\
# A skill: the model sees `name` and `description` in the prompt and loads the rules on demand.
# The file name does not matter; `key` is the skill's identity.
key: greeting
name: greet_viewer
description: welcome a viewer or chat briefly
rules:
  - key: use_name
    text: Greet the viewer by their handle when the comment shows it.
  - key: no_facts
    text: Do not mention prices or stock while greeting.
tools: []  # tool keys this skill may use
""",
    "product_question": """\
key: product_question
name: answer_product_question
description: answer a question about a product's price, materials or size
rules:
  - key: fetch_card
    text: Call {{ tool.product_details }} for the product the viewer means; the one on screen by default.
  - key: two_facts
    text: Mention at most two facts from the card, with the live price.
tools: [product_details]
""",
    "order_help": """\
key: order_help
name: order_help
description: tell a viewer where their order is
rules:
  - key: need_number
    text: Call {{ tool.order_status }} with the order number from the comment.
  - key: ask_for_number
    text: If there is no order number, ask for it; never guess one.
tools: [order_status]
""",
}

_TOOLS = {
    "product_details": """\
# A tool: `name`, `description` and `parameters` (a JSON Schema object) are what the model
# sees; `backend` binds the tool to a registered implementation, here the simulator's.
key: product_details
name: get_product_details
description: show the product card of one item with prices and attributes
backend: sim.get_product
timeout_s: 3
parameters:
  type: object
  properties:
    product_id:
      type: string
      description: catalog id; the product on screen is in the context
  required: [product_id]
""",
    "order_status": """\
key: order_status
name: track_order
description: look up where a viewer's order is
backend: sim.get_order_status
timeout_s: 3
parameters:
  type: object
  properties:
    order_id:
      type: string
      description: order number from the viewer's comment
  required: [order_id]
""",
}


def starter_files(name: str = DEFAULT_NAME) -> dict[str, str]:
    """The text of every file of the starter harness, by path relative to its folder."""
    files = {HARNESS_FILE: _HARNESS.format(name=name), PROMPT_FILE: _PROMPT, HOOKS_FILE: _HOOKS}
    files.update({f"{SKILLS_DIR}/{key}.yaml": text for key, text in _SKILLS.items()})
    files.update({f"{TOOLS_DIR}/{key}.yaml": text for key, text in _TOOLS.items()})
    return files


def harness_name_for(path: str | Path) -> str:
    """A valid harness name from a folder name (``My Shop`` -> ``My_Shop``)."""
    raw = Path(path).resolve().name
    name = re.sub(r"[^A-Za-z0-9_.\-]+", "_", raw).strip("_.-")[:64]
    return name if name and name[0].isalnum() else DEFAULT_NAME


def write_starter(path: str | Path, *, name: str | None = None) -> list[str]:
    """Create the starter harness in the folder ``path`` and return the files written.

    Refuses, writing nothing, when ``path`` already holds any harness file or folder
    (``harness.yaml``, ``prompt.yaml``, ``hooks.yaml``, ``skills/``, ``tools/``) or is a file.

    >>> write_starter("harnesses/myshop", name="myshop")[0]      # doctest: +SKIP
    'harness.yaml'
    """
    target = Path(path)
    name = name if name is not None else harness_name_for(target)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}", name):
        raise HarnessError(
            Issue(
                HARNESS_FILE,
                f"{name!r} is not a valid harness name",
                hint="use letters, digits, _, . or -, at most 64 characters",
            )
        )
    if target.exists() and not target.is_dir():
        raise HarnessError(Issue(str(target), "exists and is not a folder", hint="choose a new folder for the harness"))
    taken = [e for e in (HARNESS_FILE, PROMPT_FILE, HOOKS_FILE, SKILLS_DIR, TOOLS_DIR) if os.path.lexists(target / e)]
    if taken:
        raise HarnessError(
            Issue(
                str(target / taken[0]),
                f"{target} already holds a harness ({', '.join(taken)}); nothing was written",
                hint="choose another folder, or edit the existing harness",
            )
        )
    files = starter_files(name)
    for rel, text in files.items():  # the starter is data like any harness: prove it parses
        parse_yaml(text, rel)
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".harnessctl-init.", dir=target))
    try:
        for rel, text in files.items():
            dest = staging / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
        for entry in sorted(staging.iterdir()):
            os.rename(entry, target / entry.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return list(files)


def init_repository(path: str | Path, files: list[str]) -> dict[str, Any]:
    """Put a new harness under git, since versions (``tag``, ``diff v1 v2``) live there.

    Inside an existing work tree nothing is done (the project's repository holds the harness);
    otherwise ``git init`` runs in ``path`` and the starter ``files`` are committed. Returns
    ``{"repository", "created", "committed", "next"}``: ``next`` is the command still to run, or
    None. Never raises for git's own failures (no git, no commit identity): ``next`` says what to do.

    >>> init_repository("harnesses/myshop", ["harness.yaml"])["next"]     # doctest: +SKIP
    'git add harnesses/myshop && git commit -m "myshop: starter harness"'
    """
    target = Path(path)
    where = shlex.quote(str(target))
    fresh = f'git init {where} && git -C {where} add -A && git -C {where} commit -m "starter harness"'
    top = _git(target, "rev-parse", "--show-toplevel")
    if top is None:
        return {"repository": None, "created": False, "committed": False, "next": fresh}
    if top.returncode == 0:
        # the project's repository: whether to commit now is its owner's call, so say how
        commit = f'git add {where} && git commit -m "{target.resolve().name}: starter harness"'
        return {"repository": top.stdout.strip(), "created": False, "committed": False, "next": commit}
    made = _git(target, "init", "-q")
    if made is None or made.returncode != 0:
        return {"repository": None, "created": False, "committed": False, "next": fresh}
    added = _git(target, "add", "--", *files)
    done = _git(target, "commit", "-q", "-m", "starter harness") if added and added.returncode == 0 else None
    committed = bool(done and done.returncode == 0)
    # no commit identity, say: the repository stays, and the message names the commit to make
    commit = f'git -C {where} commit -m "starter harness"'
    return {"repository": str(target), "created": True, "committed": committed, "next": None if committed else commit}


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    """``git -C folder ARGS``, or None when git is not installed."""
    try:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
