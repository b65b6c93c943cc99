"""``harnessctl train STAGE`` with options missing: one message names every one of them and what
each accepts (``shipped:NAME`` among the models), in well under a second — torch is never loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from typer.testing import CliRunner
from harnessctl.cli.main import app
result = CliRunner().invoke(app, sys.argv[1:])
print(result.exit_code)
print(result.output)
print("torch loaded" if "torch" in sys.modules else "torch not loaded")
"""


def train(*args: str) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "60"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "train", *args], capture_output=True, text=True, env=env, timeout=120
    )
    code, _, output = done.stdout.partition("\n")
    return int(code), output


def test_rl_with_no_options_names_out_and_model_at_once_before_torch_loads():
    code, output = train("rl")
    assert code == 2
    text = " ".join(output.split())  # a narrow terminal folds the line; nothing is cut
    assert "train rl needs --out DIR and --model CHECKPOINT" in text
    assert "shipped:NAME (e.g. shipped:hat)" in text and "--set base=smollm2-135m)" in text
    assert "torch not loaded" in output and "Traceback" not in output


def test_sft_names_its_dataset_too_and_a_pretrained_base_stands_for_the_model():
    code, output = train("sft", "--set", "base=smollm2-135m")
    text = " ".join(output.split())
    assert code == 2
    assert "train sft needs --out DIR and --data DIR" in text and "--model" not in text.split("(")[0]
    assert "harnessctl augment --trajectories N --out DIR" in text
