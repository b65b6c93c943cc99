"""The bundled trainer: the HAT stages on TRL, one module per stage.

- :mod:`trainer.base` — stage 0, a base model from scratch on the general corpus (:mod:`trainer.general_corpus`);
- :mod:`trainer.sft` — stage 1, HSA-SFT on ``augment --trajectories`` datasets (:mod:`trainer.data`);
- :mod:`trainer.distill` — stage 2, on-policy distillation (reverse KL) to the base model;
- :mod:`trainer.rl` — stage 3, HSA-RL: GRPO over whole simulator episodes (:mod:`trainer.episodes`,
  :mod:`trainer.rewards`);
- :mod:`trainer.config` — the fields every stage shares; each stage's own beside it
  (:mod:`trainer.sft_config`, ...), loaded by :mod:`trainer.stage_configs` (YAML configs in ``trainer/configs/``);
- :mod:`trainer.common` — devices, checkpoints, ``--resume``, Ctrl-C, progress, ``train.json``, final eval.

Each stage is a function taking its config (``train_sft(cfg)``), a module runnable with
``accelerate launch -m trainer.sft --config ...``, and ``harnessctl train sft``. Importing this
package loads neither torch nor TRL; the stage functions do.

>>> from trainer.stage_configs import load_config
>>> load_config("rl", "tiny-cpu", {"out": "out/rl"}).num_generations
4
"""
