"""Whole episodes as RL rollouts: the project's runtime in the simulator, driven turn by turn by
the model being trained, token in and token out.

:class:`TokenPolicy` keeps one growing token sequence per episode. The first prompt is the chat
template's rendering of the system prompt, history and viewer message; after that the policy never
re-renders what it wrote: each turn's input is the previous input, plus the tokens it sampled, plus
the environment's new tokens (tool results, runtime notes, skill text: rendered by the template as
the next turns and cut off at the end of the last assistant turn). So the ids trained on are exactly
the ids sampled, and the mask marks which ones the model wrote.

:class:`EpisodeRollout` is TRL's ``rollout_func``: GRPO hands it the batch of prompts (each prompt is
a case id, repeated ``num_generations`` times in a row); it draws one harness variant per group of
repeats (HSA), runs each episode in a fresh simulator world with tool faults, scores it with the
simulator's rubric (the answer key stays on this side: the policy sees only the rendered episode),
and returns ``prompt_ids``, ``completion_ids``, ``logprobs``, ``env_mask`` and the score components
that the reward functions read.

>>> rollout = EpisodeRollout(harness, cases, cfg, tokenizer)          # doctest: +SKIP
>>> out = rollout(["case:price-0001"] * 4, trainer)                  # doctest: +SKIP
>>> sorted(out)                                                       # doctest: +SKIP
['completion_ids', 'components', 'env_mask', 'episode', 'logprobs', 'prompt_ids', 'think_over']
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harnessctl.augment.feasibility import feasible_floors
from harnessctl.augment.operators import derive_seed
from harnessctl.augment.variants import make_variant
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.local import _template_messages, stop_token_ids
from harnessctl.models.toolcall_text import parse_tool_calls, split_think
from harnessctl.models.types import ModelResponse
from harnessctl.runtime import Episode, EpisodeRecord
from harnessctl.sim.scorer import score_episode
from harnessctl.sim.world import World
from trainer.rewards import task_share, think_overrun

CASE_PREFIX = "case:"


class TokenPolicy:
    """One episode's sampler over a transformers model: ``generate(messages, tools, settings)``
    as the runtime calls it, with the token bookkeeping described in the module docstring.

    After the episode: :attr:`prompt_ids` (the first prompt), :attr:`completion_ids` (everything
    after it), :attr:`env_mask` (1 = sampled by the model), :attr:`logprobs` (0 for environment tokens)
    and :attr:`turns` (each turn's input ids and sampled ids).
    """

    name = "policy"

    def __init__(
        self, model: Any, tokenizer: Any, *, temperature: float, max_turn_tokens: int, max_completion_length: int
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = temperature
        self.max_turn_tokens = max_turn_tokens
        self.max_completion_length = max_completion_length
        self.stop_ids = stop_token_ids(tokenizer, model)
        self.eos_text = tokenizer.decode([self.stop_ids[0]], skip_special_tokens=False)
        self.prompt_ids: list[int] = []
        self.completion_ids: list[int] = []
        self.env_mask: list[int] = []
        self.logprobs: list[float] = []
        self.turns: list[dict[str, list[int]]] = []
        self.think_tokens: list[int] = []
        self.generate_s = 0.0
        self._stopped = True

    # The sequence --------------------------------------------------------------------------
    def _render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(
            _template_messages(messages), tools=tools or None, add_generation_prompt=prompt, tokenize=False
        )

    def _extend(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        """Append the environment's tokens since the last sampled turn (masked out)."""
        if not self.prompt_ids:
            text = self._render(messages, tools, prompt=True)
            self.prompt_ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            return
        last = max(i for i, m in enumerate(messages) if m.get("role") == "assistant")
        before = self._render(messages[: last + 1], tools, prompt=False)
        full = self._render(messages, tools, prompt=True)
        if not full.startswith(before):
            raise ModelError("the chat template is not prefix-preserving: token-in/token-out rollouts need one that is")
        # What follows the assistant's end-of-turn token in the template ("\n"), then the new turns.
        cut = before.rfind(self.eos_text)
        tail = before[cut + len(self.eos_text) :] if cut >= 0 else ""
        env = ([] if self._stopped else [self.stop_ids[0]]) + self.tokenizer(
            tail + full[len(before) :], add_special_tokens=False
        )["input_ids"]
        self.completion_ids += env
        self.env_mask += [0] * len(env)
        self.logprobs += [0.0] * len(env)

    # The seam the runtime calls ------------------------------------------------------------
    def sample(self, context: list[int], budget: int) -> tuple[list[int], list[float]]:
        """At most ``budget`` new token ids after ``context``, and their log-probabilities under the
        sampling distribution (temperature applied)."""
        import torch

        input_ids = torch.tensor([context], device=self.model.device)
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=budget,
                do_sample=True,
                temperature=self.temperature,
                top_p=1.0,
                top_k=0,
                eos_token_id=self.stop_ids,
                pad_token_id=self.tokenizer.pad_token_id
                if self.tokenizer.pad_token_id is not None
                else self.stop_ids[0],
                return_dict_in_generate=True,
                output_logits=True,
            )
        sampled = out.sequences[0, len(context) :].tolist()
        steps = torch.stack(out.logits, dim=1)[0].float() / self.temperature
        chosen = torch.tensor(sampled, device=steps.device)
        return sampled, steps.log_softmax(-1).gather(-1, chosen[:, None])[:, 0].tolist()

    def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        self._extend(messages, tools)
        room = self.max_completion_length - len(self.completion_ids)
        budget = min(self.max_turn_tokens, room)
        if budget <= 0:
            raise ModelError(f"the episode used its {self.max_completion_length} completion tokens")
        context = self.prompt_ids + self.completion_ids
        started = time.perf_counter()
        sampled, logprobs = self.sample(context, budget)
        self.generate_s += time.perf_counter() - started
        self.turns.append({"input_ids": list(context), "sampled_ids": list(sampled)})
        self.completion_ids += sampled
        self.env_mask += [1] * len(sampled)
        self.logprobs += logprobs
        self._stopped = bool(sampled) and sampled[-1] in self.stop_ids
        text = self.tokenizer.decode(sampled[:-1] if self._stopped else sampled, skip_special_tokens=False)
        for tok in getattr(self.tokenizer, "all_special_tokens", []):
            if tok and tok not in ("<tool_call>", "</tool_call>", "<think>", "</think>"):
                text = text.replace(tok, "")
        think, _ = split_think(text)
        self.think_tokens.append(len(self.tokenizer(think, add_special_tokens=False)["input_ids"]) if think else 0)
        content, calls, errors = parse_tool_calls(text)
        return ModelResponse(
            content=content,
            tool_calls=calls,
            parse_errors=errors,
            finish_reason=("tool_calls" if calls else "stop") if self._stopped else "length",
            prompt_tokens=len(context),
            completion_tokens=len(sampled),
            prompt_token_ids=list(context),
            completion_token_ids=list(sampled),
            logprobs=logprobs,
        )


@dataclass
class EpisodeSample:
    """One rollout: the token record for GRPO and the episode's score for the rewards."""

    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float]
    components: dict[str, float]
    think_over: int
    episode: dict[str, Any] = field(default_factory=dict)


def run_rollout_episode(policy: TokenPolicy, harness: Any, case: Any, env: Any) -> tuple[Any, TokenPolicy]:
    """Runs one episode with ``policy`` (the runtime's loop, stepped here); returns the record."""
    episode = Episode(harness, case, env=env, model_name="policy")
    out = episode.reset()
    while not isinstance(out, EpisodeRecord):
        started = time.perf_counter()
        try:
            response: Any = policy.generate(out.messages, out.tools, out.settings)
        except Exception as e:  # noqa: BLE001 - a failed turn ends the episode as data
            response = e
        out = episode.step(response, latency_s=time.perf_counter() - started)
    return out, policy


class EpisodeRollout:
    """TRL ``rollout_func``: whole episodes under a fresh harness variant per prompt group."""

    def __init__(self, harness: Any, cases: dict[str, Any], cfg: Any, tokenizer: Any):
        self.source = harness
        self.cases = cases
        self.cfg = cfg
        self.tokenizer = tokenizer
        self.calls = 0
        self.timing = {"generate_s": 0.0, "rollout_s": 0.0, "episodes": 0}
        self._floors: dict[str, float] | None = None
        self.last: list[EpisodeSample] = []
        #: Makes each episode's sampler: ``factory(model, case, harness) -> TokenPolicy``. The case and
        #: harness are there for scripted samplers in tests; the default policy never reads them.
        self.policy_factory = self.default_policy
        #: Told ``(done, total)`` as the episodes of one rollout call start (0) and end, with the
        #: training step they are for: ``on_episode(done, total, step)`` (the progress display).
        self.on_episode: Callable[[int, int, int], None] | None = None

    def default_policy(self, model: Any, case: Any, harness: Any) -> TokenPolicy:
        return TokenPolicy(
            model,
            self.tokenizer,
            temperature=self.cfg.temperature,
            max_turn_tokens=self.cfg.max_turn_tokens,
            max_completion_length=self.cfg.max_completion_length,
        )

    def variant_for(self, group_seed: int) -> Any:
        """A fresh HSA variant (or the harness itself when ``hsa`` is off)."""
        if not self.cfg.hsa:
            return self.source
        if self._floors is None:
            self._floors = feasible_floors(self.source)
        ops = [o.strip() for o in self.cfg.hsa_ops.split(",") if o.strip()] or None
        return make_variant(
            self.source,
            seed=group_seed,
            ops=ops,
            strength=self.cfg.hsa_strength,
            split="train",
            variant_id=f"rl-{group_seed}",
            constraint_floors=self._floors,
        ).harness

    def case_for(self, prompt: Any) -> Any:
        key = prompt if isinstance(prompt, str) else str(prompt)
        case = self.cases.get(key.removeprefix(CASE_PREFIX))
        if case is None:
            raise ValueError(f"rollout prompt {key!r} names no training case")
        return case

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        return self.rollout(prompts, model, step=int(trainer.state.global_step))

    def rollout(self, prompts: list[Any], model: Any, *, step: int = 0) -> dict[str, list[Any]]:
        """Episodes for ``prompts`` (repeats of one prompt in a row form a group)."""
        started = time.perf_counter()
        was_training = model.training
        model.eval()
        samples: list[EpisodeSample] = []
        group, previous, harness = -1, None, None
        if self.on_episode:
            self.on_episode(0, len(prompts), step)
        try:
            for i, prompt in enumerate(prompts):
                if prompt != previous or (i and i % self.cfg.num_generations == 0):
                    group += 1
                    harness = self.variant_for(_seed(self.cfg.seed, self.calls, group))
                previous = prompt
                case = self.case_for(prompt)
                policy = self.policy_factory(model, case, harness)
                env = World(case=case, fault_rates=self.cfg.fault_rate, seed=_seed(self.cfg.seed, self.calls, i))
                record, policy = run_rollout_episode(policy, harness, case, env)
                breakdown = score_episode(record, case)
                budget = record.constraints.get("max_think_tokens")
                samples.append(
                    EpisodeSample(
                        prompt_ids=policy.prompt_ids,
                        completion_ids=policy.completion_ids or [self.tokenizer.eos_token_id],
                        env_mask=policy.env_mask or [0],
                        logprobs=policy.logprobs or [0.0],
                        components={**breakdown.components, "task": task_share(breakdown.components)},
                        think_over=think_overrun(policy.think_tokens, budget),
                        episode={
                            "case_id": case.id,
                            "variant": getattr(harness, "version", None),
                            "total": breakdown.total,
                            "termination": record.termination.value,
                            "turns": len(policy.turns),
                        },
                    )
                )
                self.timing["generate_s"] += policy.generate_s
                if self.on_episode:
                    self.on_episode(len(samples), len(prompts), step)
        finally:
            if was_training:
                model.train()
        self.calls += 1
        self.timing["rollout_s"] += time.perf_counter() - started
        self.timing["episodes"] += len(samples)
        self.last = samples
        return {
            "prompt_ids": [s.prompt_ids for s in samples],
            "completion_ids": [s.completion_ids for s in samples],
            "logprobs": [s.logprobs for s in samples],
            "env_mask": [s.env_mask for s in samples],
            "components": [s.components for s in samples],
            "think_over": [s.think_over for s in samples],
            "episode": [s.episode for s in samples],
        }


def _seed(*parts: int) -> int:
    return derive_seed("rl", *parts) % (2**31)
