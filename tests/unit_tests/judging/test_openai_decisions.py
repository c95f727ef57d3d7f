"""OpenAIDecisions requests sent as its invoke sends them, the body read for questions answered twice."""

from __future__ import annotations

import httpx
import pytest
from langchain_openai.decisions import OpenAIDecisions

from langchain_tag.judging._openai_decisions import HOOKS, CheckedDecisions, _missing_hook, conflicts_in_body
from langchain_tag.testing import FakeChatModel

pytestmark = pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")


def _model() -> OpenAIDecisions:
    return OpenAIDecisions(model="m", api_key="sk-test", base_url="http://127.0.0.1:9/v1")


def test_every_hook_of_the_installed_langchain_openai_is_usable() -> None:
    assert _missing_hook(_model()) is None
    assert isinstance(CheckedDecisions.of(_model()), CheckedDecisions)
    assert len(HOOKS) == len(set(HOOKS)) == 10


def test_only_an_openai_decisions_is_checked() -> None:
    assert CheckedDecisions.of(FakeChatModel(respond=lambda prompt: "YES")) is None


def test_a_client_made_another_way_is_a_changed_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OpenAIDecisions, "_client", None)
    assert _missing_hook(_model()) == "OpenAIDecisions._client.post"


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ([{"name": "R1", "type": "predicate", "probability": 0.25}] * 3, {}),
        (
            [{"name": "R1", "type": "predicate", "probability": p} for p in (0.9, 0.9, 0.1)],
            {"R1": ("P(yes)=0.9", "P(yes)=0.9", "P(yes)=0.1")},
        ),
        (
            [{"name": "R1", "type": "predicate", "probability": 0.9}, {"name": "R1", "type": "refusal"}],
            {"R1": ("P(yes)=0.9", "refusal")},
        ),
        ([{"name": "R1", "type": "predicate", "probability": 0.9}, {"type": "predicate"}, "text", 3], {}),
    ],
)
def test_conflicts_in_body_are_the_questions_answered_differently(answers: list[object], expected: object) -> None:
    assert conflicts_in_body(httpx.Response(200, json={"model": "m", "answers": answers})) == expected


@pytest.mark.parametrize("content", [b"not json", b"[]", b'{"answers": 3}', b'{"model": "m"}'])
def test_a_body_that_is_no_decision_response_has_no_conflicts(content: bytes) -> None:
    assert conflicts_in_body(httpx.Response(200, content=content)) == {}
