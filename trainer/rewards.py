"""GRPO rewards from the simulator's rubric: one TRL reward function per scorer component
(correctness, efficiency, tool rationality, skill selection), weighted through GRPO's
``reward_weights`` so each is logged on its own, plus a penalty for ``<think>`` tokens beyond the
harness's ``max_think_tokens``, counted in tokenizer tokens on what the model actually sampled.

The rollout scores each episode (it holds the case and its answer key) and passes the components
as the ``components`` column; these functions only read them. Like the rubric's total, efficiency
counts in proportion to how much of the task was done (``task`` in the column): an empty reply is
short and cheap, and must not earn a reward for that.

>>> funcs, weights = reward_functions({"correctness": 0.5, "skill_selection": 0.5}, think_penalty=0.01)
>>> [f.__name__ for f in funcs], weights
(['correctness', 'skill_selection', 'think_length'], [0.5, 0.5, 1.0])
>>> funcs[0](prompts=["case:a"], completions=["..."], components=[{"correctness": 0.75}])
[0.75]
>>> funcs[-1](prompts=["case:a"], completions=["..."], think_over=[30])
[-0.3]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harnessctl.sim.scorer import TASK_COMPONENTS, WEIGHTS

RewardFn = Callable[..., list[float]]
#: Components that say how well the task was conducted: rewarded in proportion to the task done.
CONDUCT = ("efficiency",)


def task_share(components: dict[str, float]) -> float:
    """The rubric's task achievement: the weighted mean of its task components (0..1).

    >>> task_share({"correctness": 1.0, "tool_rationality": 1.0, "skill_selection": 0.0})
    0.8333
    """
    total = sum(WEIGHTS[k] for k in TASK_COMPONENTS)
    return round(sum(WEIGHTS[k] * float(components.get(k, 0.0)) for k in TASK_COMPONENTS) / total, 4)


def component_reward(name: str) -> RewardFn:
    """The reward function that returns the episode's ``name`` component (0..1)."""

    def reward(
        prompts: list[Any], completions: list[Any], components: list[dict[str, float]] | None = None, **_: Any
    ) -> list[float]:
        if components is None:
            raise ValueError("the rollout passed no 'components': use EpisodeRollout as rollout_func")
        if name in CONDUCT:
            return [float(c.get(name, 0.0)) * float(c.get("task", 1.0)) for c in components]
        return [float(c.get(name, 0.0)) for c in components]

    reward.__name__ = name
    return reward


def think_length_reward(penalty: float) -> RewardFn:
    """``-penalty`` per sampled ``<think>`` token beyond the harness's budget (per turn, summed)."""

    def think_length(
        prompts: list[Any], completions: list[Any], think_over: list[int] | None = None, **_: Any
    ) -> list[float]:
        return [round(-penalty * float(n), 6) for n in (think_over or [0] * len(completions))]

    return think_length


def think_overrun(turn_think_tokens: list[int], budget: float | None) -> int:
    """Think tokens beyond ``budget`` summed over turns (no budget: no limit).

    >>> think_overrun([10, 50, 0], 32)
    18
    """
    if budget is None:
        return 0
    return int(sum(max(0, n - int(budget)) for n in turn_think_tokens))


def reward_functions(weights: dict[str, float], *, think_penalty: float) -> tuple[list[RewardFn], list[float]]:
    """``(reward_funcs, reward_weights)`` for ``GRPOTrainer``/``GRPOConfig``."""
    names = [n for n in weights if weights[n]]
    funcs = [component_reward(n) for n in names]
    out_weights = [float(weights[n]) for n in names]
    funcs.append(think_length_reward(think_penalty))
    out_weights.append(1.0)
    return funcs, out_weights
