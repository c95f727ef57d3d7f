from __future__ import annotations

import logging
from typing import Any

import pytest

from langchain_tag.errors import ProviderError
from langchain_tag.judging.chat import ChatJudge, configure_judge
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, fake_judge, judged_rule_id


def test_one_call_per_pair_and_verdicts_follow_the_prompt(rules: list[Rule]) -> None:
    llm = fake_judge({"R-002", "R-004"})
    result = ChatJudge(llm).judge("import os, sys", rules)
    assert llm.calls == len(rules)
    assert [j.rule_id for j in result.matched] == ["R-002", "R-004"]
    assert result.calls == 5 and not result.failed


def test_action_never_reaches_the_judge(rules: list[Rule]) -> None:
    llm = fake_judge({"R-001"})
    ChatJudge(llm).judge("anything", rules)
    assert llm.prompts and not any("ACTION<" in p for p in llm.prompts)


def test_relevance_judge_does_see_the_action(rules: list[Rule]) -> None:
    llm = fake_judge(set())
    ChatJudge(llm, "relevance").judge("anything", rules)
    assert all("ACTION<" in p for p in llm.prompts)


def test_concurrency_is_bounded(rules: list[Rule]) -> None:
    many = [r.model_copy(update={"rule_id": f"X{i}"}) for i in range(24) for r in rules[:1]]
    llm = fake_judge({"X1"}, delay=0.02)
    ChatJudge(llm, max_concurrency=3).judge("q", many)
    assert llm.calls == 24
    assert 1 < llm.max_in_flight <= 3


async def test_async_concurrency_is_bounded(rules: list[Rule]) -> None:
    many = [rules[0].model_copy(update={"rule_id": f"X{i}"}) for i in range(20)]
    llm = fake_judge({"X3", "X7"}, delay=0.02)
    result = await ChatJudge(llm, max_concurrency=4).ajudge("q", many)
    assert 1 < llm.max_in_flight <= 4
    assert {j.rule_id for j in result.matched} == {"X3", "X7"}


def test_garbage_reply_is_retried_once_then_counted_no(rules: list[Rule]) -> None:
    def respond(text: str) -> str:
        if judged_rule_id(text) == "R-003":
            return "Well, it is hard to say."
        return "YES" if judged_rule_id(text) == "R-001" else "NO"

    llm = FakeChatModel(respond=respond)
    result = ChatJudge(llm).judge("q", rules)
    failed = {j.rule_id: j for j in result.failed}
    assert set(failed) == {"R-003"}
    assert failed["R-003"].attempts == 2 and failed["R-003"].applies is False
    assert "no YES/NO verdict" in (failed["R-003"].error or "")
    assert [j.rule_id for j in result.matched] == ["R-001"]
    assert llm.calls == len(rules) + 1


def test_flaky_reply_recovers_on_retry(rules: list[Rule]) -> None:
    seen: set[str] = set()

    def respond(text: str) -> str:
        if judged_rule_id(text) == "R-002" and "R-002" not in seen:
            seen.add("R-002")
            return "{garbage"
        return "YES" if judged_rule_id(text) == "R-002" else "NO"

    result = ChatJudge(FakeChatModel(respond=respond)).judge("q", rules)
    assert [j.rule_id for j in result.matched] == ["R-002"] and not result.failed


def test_exception_from_provider_is_retried_then_reported(rules: list[Rule]) -> None:
    def respond(text: str) -> object:
        if judged_rule_id(text) == "R-005":
            return TimeoutError("read timed out")
        return "NO"

    result = ChatJudge(FakeChatModel(respond=respond)).judge("q", rules)
    assert [j.rule_id for j in result.failed] == ["R-005"]
    assert "TimeoutError" in (result.failed[0].error or "")


def test_all_calls_raising_is_a_clear_error(rules: list[Rule]) -> None:
    llm = FakeChatModel(respond=lambda text: ConnectionError("connection refused"))
    with pytest.raises(ProviderError, match=r"all 5 judgments failed.*connection refused"):
        ChatJudge(llm).judge("q", rules)


def test_logprobs_give_probabilities_and_order(rules: list[Rule]) -> None:
    probs = {"R-001": 0.7, "R-002": 0.95, "R-003": 0.2, "R-004": 0.55, "R-005": 0.4}

    def respond(text: str) -> tuple[str, float]:
        rid = judged_rule_id(text)
        return ("YES" if probs[rid] >= 0.5 else "NO", probs[rid])

    llm = FakeChatModel(respond=respond, with_logprobs=True)
    result = ChatJudge(llm, threshold=0.5).judge("q", rules)
    assert [j.rule_id for j in result.matched] == ["R-002", "R-001", "R-004"]
    assert result.matched[0].p_yes == pytest.approx(0.95)
    strict = ChatJudge(llm, threshold=0.8).judge("q", rules)
    assert [j.rule_id for j in strict.matched] == ["R-002"]


def test_token_accounting(rules: list[Rule]) -> None:
    result = ChatJudge(fake_judge({"R-001"})).judge("q", rules)
    assert result.prompt_tokens > 0 and result.completion_tokens == len(rules)


@pytest.mark.parametrize("kwargs", [{"threshold": 1.5}, {"max_concurrency": 0}, {"max_attempts": 0}])
def test_bad_settings_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        ChatJudge(fake_judge(set()), **kwargs)


def test_unknown_predicate_lists_known() -> None:
    with pytest.raises(ValueError, match="applicability"):
        ChatJudge(fake_judge(set()), "similarity")


# ---------------------------------------------------------------- judge configuration
def _scored(text: str) -> tuple[str, float]:
    return ("YES", 0.9) if judged_rule_id(text) == "R-002" else ("NO", 0.2)


@pytest.mark.parametrize(
    "wrap",
    [
        lambda llm: llm.bind(logprobs=True, max_tokens=1),
        lambda llm: llm.with_retry(stop_after_attempt=2),
        lambda llm: llm.with_fallbacks([fake_judge(set())]),
        lambda llm: llm.bind(max_tokens=1).with_retry(),
    ],
)
def test_any_runnable_judge_is_accepted_and_scored(rules: list[Rule], wrap: Any) -> None:
    from langchain_tag.retrievers import ApplicabilityRetriever

    llm = FakeChatModel(respond=_scored, with_logprobs=True)
    retriever = ApplicabilityRetriever(llm=wrap(llm), rules=rules)
    docs = retriever.invoke("q")
    assert [d.id for d in docs] == ["R-002"] and docs[0].metadata["tag_p_yes"] == pytest.approx(0.9)
    assert llm.calls == len(rules)
    assert retriever.judge.model_identity == ChatJudge(llm).model_identity  # same cache keys as the bare model


def test_bare_openai_compatible_judge_gets_logprobs_and_a_one_token_cap() -> None:
    openai = pytest.importorskip("langchain_openai")
    bare = openai.ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key="x")
    bound = configure_judge(bare)
    expected = {"logprobs": True, "top_logprobs": 5, "max_tokens": 1, "stream": False}  # a judge never streams
    assert bound is not bare and bound.kwargs == expected  # type: ignore[attr-defined]
    assert "max_tokens" not in configure_judge(bare, "json").kwargs  # type: ignore[attr-defined]
    configured = openai.ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key="x", logprobs=False)
    kept = configure_judge(configured)  # a choice made is kept: only streaming is turned off
    assert kept.bound is configured and kept.kwargs == {"stream": False}  # type: ignore[attr-defined]
    capped = openai.ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key="x", max_tokens=1)
    assert configure_judge(capped).bound is capped  # type: ignore[attr-defined]
    assert configure_judge(fake_judge(set())) is not None


def test_one_warning_when_the_judge_gives_no_logprobs(rules: list[Rule], caplog: pytest.LogCaptureFixture) -> None:
    judge = ChatJudge(fake_judge({"R-001"}), threshold=0.9)
    with caplog.at_level(logging.WARNING, logger="langchain_tag.judging.chat"):
        judge.judge("first", rules)
        judge.judge("second", rules)
    warnings = [r for r in caplog.records if "gave no logprobs" in r.getMessage()]
    assert len(warnings) == 1 and "threshold" in warnings[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="langchain_tag.judging.chat"):
        ChatJudge(FakeChatModel(respond=_scored, with_logprobs=True)).judge("q", rules)
    assert not [r for r in caplog.records if "gave no logprobs" in r.getMessage()]
