"""Viewer phrasings a team adds to its training data: checked as data, drawn beside the
built-in training templates, never into the suites."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessctl.harness.errors import HarnessError
from harnessctl.sim.generate import generate_cases
from harnessctl.sim.phrasings import check_phrasing, kind_placeholders, load_phrasings
from harnessctl.sim.templates import templates_for

PHRASINGS = {
    "price": ["hw much rn for {this}", "{name} cost?"],
    "stock_variant": ["still got {variant}??"],
    "shipping_region": ["{city} delivery time?"],
}


def test_a_phrasing_may_use_only_the_placeholders_its_kind_fills_and_must_name_what_the_case_needs():
    assert check_phrasing("price", "hw much rn for {this}") is None
    assert check_phrasing("stock_variant", "still got it?") == "needs {variant} (every stock_variant message names it)"
    assert "needs one of {region}, {city}" in check_phrasing("shipping_region", "delivery time to there?")
    assert "{order} is not a placeholder of price" in check_phrasing("price", "price of {order}?")
    assert kind_placeholders("order_status") == (frozenset({"order"}), frozenset({"order"}))


def test_a_phrasing_is_data_not_a_format_string_that_reaches_into_objects():
    assert "not a plain placeholder" in check_phrasing("price", "{this.__class__.__init__} price")
    assert "not a plain placeholder" in check_phrasing("price", "{this[0]} price")
    assert "not a plain placeholder" in check_phrasing("price", "{this!r:>99} price")
    assert "not a placeholder" in check_phrasing("price", "{} price")
    assert "unmatched" in check_phrasing("price", "price of {this")


def test_a_held_out_suite_message_is_refused_even_written_with_other_case_and_punctuation():
    held = templates_for("price", "eval")[0]
    assert "held-out price message" in check_phrasing("price", held.upper() + " !! 🙏")
    assert "already a built-in price training template" in check_phrasing("price", templates_for("price", "train")[0])


def test_cases_draw_from_added_phrasings_with_expectations_from_the_message_and_a_tag():
    plain = generate_cases(400, seed=3, messages="train")
    added = generate_cases(400, seed=3, messages="train", phrasings=PHRASINGS)
    tagged = [c for c in added if "added_phrasing" in c.tags]
    assert tagged and {c.intent for c in tagged} <= {"price", "stock", "shipping"}
    assert all("added_phrasing" not in c.tags for c in plain)
    for case in tagged:
        if case.intent == "stock":  # the variant the viewer names is the one the case expects
            assert case.slots["variant"].lower() in case.query.lower()
    # The phrasing's template id is its own: a later check can tell which messages came from it.
    assert {c.template for c in tagged}.isdisjoint({c.template for c in plain})


def test_added_phrasings_never_reach_the_suites_and_a_bad_one_is_refused():
    with pytest.raises(ValueError, match="held out"):
        generate_cases(10, seed=0, messages="eval", phrasings=PHRASINGS)
    with pytest.raises(ValueError, match=r"phrasings price\[0\] needs|is not a placeholder of price"):
        generate_cases(10, seed=0, messages="train", phrasings={"price": ["{order}?"]})


def test_a_phrasings_file_names_every_problem_with_its_line(tmp_path):
    path = tmp_path / "viewers.yaml"
    path.write_text(
        "phrasings:\n"
        "  price:\n"
        '    - "hw much rn for {this}"\n'
        '    - "HW MUCH RN FOR {this}!!"\n'
        "  prices:\n"
        '    - "how much?"\n'
        "  stock_variant:\n"
        '    - "still got it?"\n',
        encoding="utf-8",
    )
    with pytest.raises(HarnessError) as e:
        load_phrasings(path)
    text = [str(i) for i in e.value.issues]
    assert any(f"{path}:4:" in t and "repeats price[0]" in t for t in text)
    assert any(f"{path}:5:" in t and "unknown message kind 'prices'" in t and "did you mean 'price'" in t for t in text)
    assert any(f"{path}:8:" in t and "needs {variant}" in t for t in text)


def test_a_phrasings_file_must_be_the_documented_shape(tmp_path):
    path = tmp_path / "viewers.yaml"
    path.write_text("phrasing:\n  price: ['x {this}']\n", encoding="utf-8")
    with pytest.raises(HarnessError, match="unknown field 'phrasing'.*did you mean 'phrasings'"):
        load_phrasings(path)
    path.write_text("phrasings:\n  price: !!python/object:os.system 'ls'\n", encoding="utf-8")
    with pytest.raises(HarnessError, match="tag"):
        load_phrasings(path)
    with pytest.raises(HarnessError, match="no such file"):
        load_phrasings(tmp_path / "missing.yaml")
    path.write_text("phrasings:\n  price:\n    - 'what is {this} worth'\n", encoding="utf-8")
    assert load_phrasings(path) == {"price": ["what is {this} worth"]}


def test_a_near_copy_of_a_held_out_message_is_allowed_but_refused_when_strict(tmp_path):
    held = next(t for t in templates_for("price", "eval") if t.endswith("{this}"))  # "hw much for {this}"
    near = held + " rn today"
    assert check_phrasing("price", near) is None  # viewers do write alike: allowed...
    file = tmp_path / "viewers.yaml"
    file.write_text(f"phrasings:\n  price:\n    - '{near}'\n    - 'what does {{this}} go for'\n", encoding="utf-8")
    assert load_phrasings(file)["price"] == [near, "what does {this} go for"]
    with pytest.raises(HarnessError, match=r"price\[0\] shares half its words or more with a held-out price"):
        load_phrasings(file, strict=True)  # ...and refused for a measurement of unseen wording


def test_the_teachers_phrasings_shipped_for_the_experiment_still_pass_their_checks():
    folder = Path(__file__).resolve().parents[2] / "trainer" / "data" / "phrasings"
    every = load_phrasings(folder / "livecommerce-teacher.yaml")
    strict = load_phrasings(folder / "livecommerce-teacher-strict.yaml", strict=True)
    assert sum(map(len, every.values())) == 589 and sum(map(len, strict.values())) == 403
    assert all(set(texts) <= set(every[kind]) for kind, texts in strict.items())
