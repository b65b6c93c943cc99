"""Shared, session-scoped pieces of the trainer tests: a small trajectory dataset, one SFT run
on the tiny model, and samplers that play scripted tokens through the real rollout bookkeeping."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="session")
def trajectories_dir(tmp_path_factory, livecommerce_path) -> Path:
    """40 oracle trajectories over 4 harness variants, as `augment --trajectories` writes them."""
    from harnessctl.augment.trajectories import TrajectorySpec, build_trajectories
    from harnessctl.harness import load_harness

    out = tmp_path_factory.mktemp("trajectories") / "data"
    build_trajectories(load_harness(livecommerce_path), out, TrajectorySpec(n=40, variants=4, seed=3), jobs=1)
    return out


@pytest.fixture(scope="session")
def sft_run(tmp_path_factory, tiny_model_path, trajectories_dir):
    """One short SFT run on the tiny model: ``(config, result)``."""
    from trainer.sft import train_sft
    from trainer.stage_configs import load_config

    out = tmp_path_factory.mktemp("sft") / "model"
    cfg = load_config(
        "sft",
        "tiny-cpu",
        {
            "model": str(tiny_model_path),
            "data": str(trajectories_dir),
            "out": str(out),
            "max_steps": 4,
            "per_device_batch_size": 2,
            "save_steps": 2,
            "logging_steps": 1,
            "learning_rate": 3e-3,
            "warmup_steps": 0,
        },
    )
    return cfg, train_sft(cfg, progress=False)


def weights_differ(a: Path, b: Path) -> float:
    """The largest absolute difference between two checkpoints' tensors."""
    from safetensors.torch import load_file

    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    assert wa.keys() == wb.keys()
    return max(float((wa[k].float() - wb[k].float()).abs().max()) for k in wa)


def oracle_sampler(rollout, *, bad_every: int = 0):
    """A policy factory whose "sampled" tokens are the oracle's answer, tokenized (and, for every
    ``bad_every``-th episode, an immediate empty-handed reply): the rollout's own bookkeeping runs
    on real multi-turn episodes with tool results, which an untrained model never reaches."""
    from harnessctl.models.toolcall_text import format_tool_call
    from harnessctl.sim import OracleModel
    from trainer.episodes import TokenPolicy

    count = {"n": 0}

    class Scripted(TokenPolicy):
        def __init__(self, model, tokenizer, oracle, bad, **kw):
            super().__init__(model, tokenizer, **kw)
            self.oracle, self.bad, self._script = oracle, bad, []

        def generate(self, messages, tools, settings):
            if self.bad:
                text = "Hello! Have a lovely day."
            else:
                resp = self.oracle.generate(messages, tools, settings)
                text = resp.content + "".join(format_tool_call(c) for c in resp.tool_calls)
            self._script = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.stop_ids[0]]
            return super().generate(messages, tools, settings)

        def sample(self, context, budget):
            ids = self._script[:budget]
            return ids, [0.0] * len(ids)

    def factory(model, case, harness):
        count["n"] += 1
        bad = bool(bad_every) and count["n"] % bad_every == 0
        cfg = rollout.cfg
        return Scripted(
            model,
            rollout.tokenizer,
            OracleModel().for_episode(case, harness),
            bad,
            temperature=cfg.temperature,
            max_turn_tokens=cfg.max_turn_tokens,
            max_completion_length=cfg.max_completion_length,
        )

    return factory
