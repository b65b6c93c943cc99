"""The trainer tests' session pieces (a small trajectory dataset, one short SFT run), for the wing's tests."""

from tests.trainer.conftest import sft_run, trajectories_dir  # noqa: F401
