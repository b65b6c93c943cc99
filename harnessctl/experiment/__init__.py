"""The HAT study in miniature: the paper's arms trained with the bundled trainer and evaluated on
the project's suites, resumable arm by arm.

- :mod:`~harnessctl.experiment.plan` — the arms and the sizes (``quick_plan``, ``full_plan``, ``--set``);
- :mod:`~harnessctl.experiment.runner` — ``run_study``: data, each arm's training and evaluation, resume;
- :mod:`~harnessctl.experiment.results` — each arm's numbers, the goals, the markdown table;
- :mod:`~harnessctl.experiment.report` — the HTML report with plots;
- :mod:`~harnessctl.experiment.estimate` — ``estimate_study``: a plan's time (training, held-out scoring, evaluation) projected on this machine.

>>> from harnessctl.experiment import quick_plan, run_study
>>> results = run_study(quick_plan(), "experiments/quick")   # doctest: +SKIP
"""

from .arms import StudyError, StudyInterrupted
from .plan import (
    ARMS,
    Arm,
    PlanError,
    StudyPlan,
    apply_overrides,
    full_plan,
    hat_study,
    quick_plan,
    smollm2_plan,
)
from .runner import run_study

__all__ = [
    "ARMS",
    "Arm",
    "PlanError",
    "StudyError",
    "StudyInterrupted",
    "StudyPlan",
    "apply_overrides",
    "full_plan",
    "hat_study",
    "quick_plan",
    "smollm2_plan",
    "run_study",
]
