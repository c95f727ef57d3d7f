"""OpenAIDecisions requests sent as its invoke sends them, the body read for questions answered twice."""

from __future__ import annotations

import re

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
    assert len(HOOKS) == len(set(HOOKS)) == 2


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


FALLBACK = re.compile(
    r"^(judge calls|decision requests) go through .+: the private hook \S+ is missing or has changed$"
)
"""How both fast paths (this one and the chat judge's direct one) say they fell back: one wording, at warning level."""


def test_the_fallback_is_warned_as_the_direct_path_warns_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(OpenAIDecisions, "_async_client", None)
    with caplog.at_level("DEBUG", logger="langchain_tag"):
        assert CheckedDecisions.of(_model()) is None
    said = [(r.levelname, r.name, r.getMessage()) for r in caplog.records]
    assert len(said) == 1 and said[0][:2] == ("WARNING", "langchain_tag.judging._openai_decisions"), said
    assert FALLBACK.match(said[0][2]) and "the private hook OpenAIDecisions._async_client.post is" in said[0][2], said


def test_the_hooks_are_langchain_openais_clients_only() -> None:
    assert HOOKS == ("OpenAIDecisions._client.post", "OpenAIDecisions._async_client.post")


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_request_invoke_sent_some_other_way_is_warned_of_once(
    asynchronous: bool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio

    from langchain_openai.decisions import base

    body = {"model": "m", "answers": [{"name": "R1", "type": "predicate", "probability": 0.9}] * 2}
    parsed = base._parse_response(httpx.Response(200, json=body))

    async def adecide(self: OpenAIDecisions, request: object) -> object:
        return parsed

    monkeypatch.setattr(OpenAIDecisions, "_decide", lambda self, request: parsed)  # not through its client
    monkeypatch.setattr(OpenAIDecisions, "_adecide", adecide)
    checked = CheckedDecisions.of(_model())
    assert checked is not None
    request = {"input": "x", "questions": {}}
    with caplog.at_level("DEBUG", logger="langchain_tag"):
        for _ in range(2):
            reply = asyncio.run(checked.ainvoke(request)) if asynchronous else checked.invoke(request)
            assert reply.response is parsed and reply.conflicts == {}
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    hook = HOOKS[1] if asynchronous else HOOKS[0]
    assert len(said) == 1 and said[0][0] == "WARNING" and FALLBACK.match(said[0][1]) and hook in said[0][1], said
