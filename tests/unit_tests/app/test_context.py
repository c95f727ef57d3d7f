from __future__ import annotations

import pytest

from langchain_tag.app._context import ContextError, RunSettings, settings_from_context
from langchain_tag.errors import TagError


def test_no_context_gives_todays_defaults() -> None:
    settings = settings_from_context(None)
    assert settings == settings_from_context({}) == RunSettings()
    assert (settings.mode, settings.check_rounds, settings.review, settings.threshold) == ("tag", 1, False, None)
    assert settings.rule_set == "demo" and settings.judge_model is None and settings.executor == "generic"


def test_every_setting_is_read() -> None:
    context = {
        "judge_model": "gpt-4o-mini", "judge_base_url": "http://127.0.0.1:8000/v1", "threshold": 1,
        "rules_file": " rules.jsonl ", "mode": "similarity", "check_rounds": 3, "review": True,
        "executor": "code_review", "k": 2,
    }  # fmt: skip
    settings = settings_from_context(context)
    assert settings.threshold == 1.0 and settings.rules_file == "rules.jsonl" and settings.k == 2
    assert (settings.mode, settings.check_rounds, settings.review, settings.executor) == (
        "similarity", 3, True, "code_review",
    )  # fmt: skip
    assert RunSettings.from_dict(settings.as_dict()) == settings


def test_none_values_keep_the_defaults() -> None:
    assert settings_from_context({"mode": None, "threshold": None, "review": None}) == RunSettings()


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"threshold": True}, "'threshold': threshold must be a number within [0, 1], got True"),
        ({"threshold": float("nan")}, "'threshold'"),
        ({"check_rounds": 1.5}, "'check_rounds': check_rounds must be a whole number >= 0, got 1.5"),
        ({"k": 0}, "'k': k must be a whole number >= 1, got 0"),
        ({"executor": "poet"}, "'executor': 'poet' is not an executor prompt; choose one of: generic, code_review"),
        ({"judge_model": ""}, "'judge_model': expected a non-empty string"),
        ({"zzz": 1}, "unknown context key 'zzz'; the settings are: judge_model, "),
    ],
)
def test_bad_values_name_the_key_and_what_fits(context: dict[str, object], message: str) -> None:
    with pytest.raises(ContextError) as caught:
        settings_from_context(context)
    assert message in str(caught.value)
    assert isinstance(caught.value, TagError) and isinstance(caught.value, ValueError)


def test_a_context_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ContextError, match="must be an object of settings, got list"):
        settings_from_context(["tag"])  # type: ignore[arg-type]


def _retrievers_message(threshold: object) -> str:
    from pydantic import ValidationError

    from langchain_tag.retrievers import ApplicabilityRetriever
    from langchain_tag.rules import Rule
    from langchain_tag.testing import fake_judge

    rule = Rule(rule_id="R1", rule_name="n", condition="c", action="a")
    with pytest.raises(ValidationError) as raised:
        ApplicabilityRetriever(llm=fake_judge(set()), rules=[rule], threshold=threshold)
    return str(raised.value.errors()[0]["ctx"]["error"])


@pytest.mark.parametrize("threshold", [7, 1.5, -0.5, float("nan")])
def test_a_bad_threshold_gets_the_retrievers_message_named_as_a_context_key(threshold: object) -> None:
    with pytest.raises(ContextError) as raised:
        settings_from_context({"threshold": threshold})
    assert str(raised.value) == "context key 'threshold': " + _retrievers_message(threshold)
    assert str(raised.value).startswith("context key 'threshold': threshold must be a number within [0, 1], got ")


def test_a_bad_check_rounds_gets_the_graphs_message_named_as_a_context_key() -> None:
    from langchain_tag.graph import build_tag_graph
    from langchain_tag.testing import FakeChatModel

    with pytest.raises(ValueError) as graphs:
        build_tag_graph(FakeChatModel(respond=lambda p: ""), rules=[], check_rounds=-1)
    with pytest.raises(ContextError) as raised:
        settings_from_context({"check_rounds": -1})
    assert str(raised.value) == "context key 'check_rounds': " + str(graphs.value)


def test_the_schemas_bounds_are_the_ranges() -> None:
    from pydantic import TypeAdapter

    from langchain_tag.app._context import TagContext
    from langchain_tag.ranges import CHECK_ROUNDS, THRESHOLD

    schema = TypeAdapter(TagContext).json_schema()["properties"]

    def bounds(key: str) -> tuple[object, object]:
        (number,) = [s for s in schema[key]["anyOf"] if s.get("type") in ("number", "integer")]
        return number.get("minimum"), number.get("maximum")

    assert bounds("threshold") == (THRESHOLD.low, THRESHOLD.high)
    assert bounds("check_rounds") == (CHECK_ROUNDS.low, CHECK_ROUNDS.high)
