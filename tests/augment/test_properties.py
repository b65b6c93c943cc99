"""Properties every HSA variant has, whatever its seed, strength, split and operator families."""

from __future__ import annotations

import json
import random
import re
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnessctl.augment import FAMILIES, SPLITS, apply_operator, make_variant, vocabulary
from harnessctl.augment.manifest import manifest_json
from harnessctl.augment.operators import OpContext
from harnessctl.augment.vocab import NAME_KINDS, NAME_STYLES, NameMaker, name_tokens, split_of
from harnessctl.harness.check import validate_harness_dir
from harnessctl.harness.render import render_harness, render_skill
from harnessctl.harness.save import render_harness_files, save_harness

variant_args = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**31 - 1),
        "strength": st.floats(0.05, 1.0),
        "split": st.sampled_from(SPLITS),
        "ops": st.lists(st.sampled_from(sorted(FAMILIES)), min_size=1, max_size=5, unique=True),
    }
)
FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _variant(source, floors, args):
    return make_variant(source, constraint_floors=floors, **args)


def _everything_the_model_reads(h) -> str:
    r = render_harness(h)
    parts = [r.system_prompt, json.dumps(r.tools)]
    parts += [render_skill(h, s) for s in h.skills]
    parts += [h.hooks.retry.feedback_template, h.hooks.message.tool_result_prefix, h.hooks.message.skill_header]
    return "\n".join(parts)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=variant_args)
def test_every_variant_is_a_valid_harness_folder(source, floors, args):
    variant = _variant(source, floors, args)
    with tempfile.TemporaryDirectory() as tmp:
        folder = save_harness(variant.harness, f"{tmp}/v")  # refuses to write an invalid harness
        assert validate_harness_dir(folder) == []


@FAST
@given(args=variant_args)
def test_the_oracle_solves_every_case_under_every_variant(source, floors, sample_cases, canonical_scores, args):
    """The task is preserved: per case, never worse than under the source; on average >= 0.99."""
    from harnessctl.runtime.loop import run_episode
    from harnessctl.sim.oracle import OracleModel
    from harnessctl.sim.scorer import score_episode

    variant = _variant(source, floors, args)
    oracle = OracleModel()
    scores = []
    for case in sample_cases:
        # Hiding skills needs the case: the skill it needs is protected.
        ctx = OpContext(
            split=args["split"], strength=args["strength"], protected_skill_keys=frozenset({case.expect.skill} - {None})
        )
        harness, _ = apply_operator(variant.harness, "hide_skills", seed=args["seed"], ctx=ctx)
        total = score_episode(run_episode(harness, case, oracle), case).total
        assert total >= canonical_scores[case.id] - 1e-9, (case.id, variant.manifest.operators)
        scores.append(total)
    assert sum(scores) / len(scores) >= 0.99


@FAST
@given(args=variant_args)
def test_a_renamed_element_leaves_no_trace_of_its_old_name(source, floors, args):
    variant = _variant(source, floors, args)
    current = set(variant.manifest.surface["keys_by_name"])
    old_names = {c.before for op in variant.manifest.operators for c in op.changes if c.field == "name"}
    text = _everything_the_model_reads(variant.harness)
    for old in old_names - current:
        assert not re.search(rf"(?<![\w-]){re.escape(old)}(?![\w-])", text), old
    # And every template still resolves: nothing of the form {{ tool.x }} is left unrendered.
    assert "{{" not in render_harness(variant.harness).system_prompt
    assert all("{{" not in render_skill(variant.harness, s) for s in variant.harness.skills)


@FAST
@given(args=variant_args)
def test_constraints_stay_in_range_and_above_what_the_task_needs(source, floors, args):
    variant = _variant(source, floors, args)
    for key, c in variant.harness.prompt.constraints.items():
        src = source.prompt.constraints[key]
        assert (c.min, c.max) == (src.min, src.max)
        assert c.min <= c.value <= c.max
        assert c.value >= min(floors.get(key, c.min), src.value)
        assert type(c.value) is type(src.value)
    assert variant.harness.hooks.retry.max_attempts >= source.hooks.retry.max_attempts


@FAST
@given(args=variant_args)
def test_variants_never_touch_what_defines_the_task(source, floors, args):
    variant = _variant(source, floors, args).harness

    def task(h):
        tools = {
            t.key: (t.backend, t.timeout_s, json.dumps(_strip_descriptions(t.parameters), sort_keys=True))
            for t in h.tools
        }
        skills = {
            s.key: (tuple(s.tools), {r.key for r in s.rules} <= {r.key for r in source.skill(s.key).rules})
            for s in h.skills
        }
        return tools, skills, [vars(g) for g in h.hooks.guards], h.hooks.retry.on, h.variables, h.skill_loader.key

    assert task(variant) == task(source)


def _strip_descriptions(schema):
    if isinstance(schema, dict):
        return {k: _strip_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_strip_descriptions(x) for x in schema]
    return schema


@settings(max_examples=8, deadline=None)
@given(args=variant_args)
def test_the_same_seed_gives_the_same_variant_byte_for_byte(source, floors, args):
    a, b = _variant(source, floors, args), _variant(source, floors, args)
    assert manifest_json(a.manifest) == manifest_json(b.manifest)
    assert render_harness_files(a.harness) == render_harness_files(b.harness)


def test_training_and_held_out_names_never_overlap(source):
    """Names generated from many seeds of each split never intersect, nor do their pieces."""
    names = {split: set() for split in SPLITS}
    old_names = [t.name for t in source.tools] + [s.name for s in source.skills] + [source.skill_loader.name]
    for split in SPLITS:
        vocab = vocabulary(split)
        maker = NameMaker(vocab)
        for seed in range(150):
            rng = random.Random(seed)
            for old in old_names:
                kind, style = rng.choice(NAME_KINDS), rng.choice(NAME_STYLES)
                name = maker.make(old, kind, style, rng)
                names[split].add(name)
                for token in name_tokens(name):
                    assert token in vocab.glue or split_of(token) == split, (split, name, token)
    assert len(names["train"]) > 1000 and len(names["heldout"]) > 1000
    assert not names["train"] & names["heldout"]


def test_training_and_held_out_variants_share_no_generated_surface(source, floors):
    """Across many variants of each split: no shared new name, paraphrase or hook wording (the
    result format is a structural choice between json and text, not vocabulary)."""
    surfaces = {split: set() for split in SPLITS}
    for split in SPLITS:
        for seed in range(25):
            v = make_variant(source, seed=seed, strength=0.8, split=split, constraint_floors=floors)
            for op in v.manifest.operators:
                for c in op.changes:
                    if isinstance(c.after, str) and c.after != c.before and c.field != "tool_result_format":
                        surfaces[split].add(c.after)
    assert len(surfaces["train"]) > 200 and len(surfaces["heldout"]) > 200
    assert not surfaces["train"] & surfaces["heldout"]


def test_the_vocabulary_pools_are_disjoint_and_each_split_has_choices():
    train, held = vocabulary("train"), vocabulary("heldout")
    pools = (
        "syllables",
        "generic_verbs",
        "rule_frames",
        "description_frames",
        "feedback_templates",
        "result_prefixes",
        "skill_headers",
        "llm_styles",
    )
    for pool in pools:
        a, b = set(getattr(train, pool)), set(getattr(held, pool))
        assert a and b and not a & b, pool
    train_words = {w for ws in train.synonyms.values() for w in ws}
    held_words = {w for ws in held.synonyms.values() for w in ws}
    assert not train_words & held_words
    train_phrases = {r for e in train.phrases for r in e.replacements}
    held_phrases = {r for e in held.phrases for r in e.replacements}
    assert not train_phrases & held_phrases
