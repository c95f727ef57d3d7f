"""What may be stored as a verdict: the one decision every path that stores one makes."""

from __future__ import annotations

import logging

import pytest

from langchain_tag.judging._admission import admitted_key, asked_model, foreign_reply
from langchain_tag.judging.chat import ChatJudge
from langchain_tag.judging.results import Reading
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.rules import Rule
from langchain_tag.testing import fake_judge


def test_a_reply_naming_no_model_or_a_request_asking_none_is_stored_as_it_comes() -> None:
    assert foreign_reply(None, "another") is None
    assert foreign_reply("m", None) is None and foreign_reply("m", "") is None
    assert foreign_reply("m", "M") is None and foreign_reply("m", "m-20250131") is None
    assert foreign_reply("m", "m-large") == "answered by 'm-large', not 'm': kept apart, not stored as its verdict"


def test_another_models_reply_is_kept_apart_and_warned_of_once(caplog: pytest.LogCaptureFixture) -> None:
    judge = ChatJudge(fake_judge(set()), cache=InMemoryVerdictCache())
    with caplog.at_level(logging.WARNING, logger="langchain_tag"):
        keys = {admitted_key(judge, "k", "other", asked="m") for _ in range(3)}
        assert admitted_key(judge, "k", "m-2024-07-18", asked="m") == "k"
        assert admitted_key(judge, "k2", "other", asked="m") not in keys | {"k2"}
    assert len(keys) == 1 and "k" not in keys
    assert [r.getMessage().count("'other'") for r in caplog.records] == [2]


def test_the_asked_model_of_a_chat_model_and_a_decision_model() -> None:
    from types import SimpleNamespace

    from langchain_tag.scale.batch_api import BatchResultsModel

    assert asked_model(BatchResultsModel(model_name="m").bind(stop=["x"])) == "m"
    assert asked_model(SimpleNamespace(model="luna")) == "luna"
    assert asked_model(fake_judge(set())) is None


def test_keep_stores_a_reading_under_its_key_or_apart() -> None:
    cache = InMemoryVerdictCache()
    judge = ChatJudge(fake_judge(set()), cache=cache)
    rule = Rule(rule_id="R1", rule_name="n", condition="c", action="a")
    request = judge.requests("x = 1", [rule])[0]
    reading = Reading(p_yes=0.9, word=True, reply="YES")
    assert judge.keep(request, reading, answered="m", asked="m") == reading
    assert cache.get(request.key) == reading
    apart = judge.keep(request, Reading(p_yes=0.1, word=False, reply="NO"), answered="other", asked="m")
    assert apart.error is not None and "answered by 'other'" in apart.error
    assert cache.get(request.key) == reading and len(cache) == 2
