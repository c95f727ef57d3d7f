"""The chat judge: one call a pair, verdicts from the prompt, faults counted and reported; its calls never stream."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import pytest_socket
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_tag.errors import ProviderError
from langchain_tag.graph import build_tag_graph
from langchain_tag.judging.chat import ChatJudge, configure_judge
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, fake_judge, judged_rule_id
from tests.helpers.chat_endpoint import ChatEndpoint, completion

YES = {"R-001", "R-004"}


def _verdict(text: str) -> str:
    return "YES" if judged_rule_id(text) in YES else "NO"


@contextmanager
def loopback_chat() -> Iterator[ChatEndpoint]:
    """A chat endpoint on 127.0.0.1 that answers from the prompt and cannot stream (connections to it only)."""
    pytest_socket.socket_allow_hosts(["127.0.0.1"], allow_unix_socket=True)
    endpoint = ChatEndpoint(
        lambda body: completion(_verdict("\n\n".join(str(m["content"]) for m in body["messages"]))), streams=False
    )
    try:
        yield endpoint
    finally:
        endpoint.close()


def _judge_at(endpoint: ChatEndpoint) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="m", base_url=endpoint.base_url, api_key="k", max_retries=0)


@pytest.mark.enable_socket
async def test_judge_calls_do_not_stream_under_astream_events_at_an_endpoint_that_cannot(rules: list[Rule]) -> None:
    with loopback_chat() as endpoint:
        retriever = ApplicabilityRetriever(llm=_judge_at(endpoint), rules=rules, calibration=None, strict=True)
        events = [e async for e in retriever.astream_events("import os, sys", version="v2")]
    assert endpoint.streamed == 0 and len(endpoint.bodies) == len(rules)
    assert not [e for e in events if e["event"] == "on_chat_model_stream"]
    assert sorted(d.id for d in events[-1]["data"]["output"]) == sorted(YES)


@pytest.mark.enable_socket
def test_judge_calls_do_not_stream_in_a_graph_streaming_messages_while_the_executor_does(rules: list[Rule]) -> None:
    executor = GenericFakeChatModel(messages=iter([AIMessage(content="revised code here")]))
    with loopback_chat() as endpoint:
        judge = ApplicabilityRetriever(llm=_judge_at(endpoint), rules=rules, calibration=None, strict=True)
        graph = build_tag_graph(executor, retriever=judge, check_rounds=0)
        chunks = [(m.content, meta) for m, meta in graph.stream({"input": "import os, sys"}, stream_mode="messages")]
    assert endpoint.streamed == 0 and len(endpoint.bodies) == len(rules)
    assert len(chunks) > 1 and "".join(str(c) for c, _ in chunks) == "revised code here"
    assert all(meta["langgraph_node"] == "execute" for _, meta in chunks)


def _answering(model: str) -> Any:
    """A ChatOpenAI asking for model ``m`` at an endpoint whose replies say ``model`` answered."""
    import httpx2
    from langchain_openai import ChatOpenAI

    def respond(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        text = "\n\n".join(str(m["content"]) for m in body["messages"])
        choice = {"index": 0, "message": {"role": "assistant", "content": _verdict(text)}, "finish_reason": "stop"}
        return httpx2.Response(200, json={"id": "x", "object": "chat.completion", "created": 0, "model": model,
                                          "choices": [choice], "usage": {"prompt_tokens": 5, "completion_tokens": 1}})  # fmt: skip

    client = httpx2.Client(transport=httpx2.MockTransport(respond))
    return ChatOpenAI(model="m", base_url="http://llm.example.test/v1", api_key="k", max_retries=0, http_client=client)


@pytest.mark.parametrize(("answered", "same"), [("m", True), ("m-2024-07-18", True), ("another-model", False)])
def test_a_reply_from_another_model_is_not_kept_as_the_asked_models_verdict(
    answered: str, same: bool, rules: list[Rule], caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    llm = _answering(answered)
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, calibration=None)
    with caplog.at_level(logging.WARNING, logger="langchain_tag"):
        first = retriever.match("import os, sys")
        again = retriever.match("import os, sys")
    assert sorted(j.rule_id for j in first.matched) == sorted(YES) == sorted(j.rule_id for j in again.matched)
    assert again.cache_hits == (len(rules) if same else 0)  # another model's verdict is not served as m's
    warned = [r.getMessage() for r in caplog.records if "another-model" in r.getMessage()]
    assert len(warned) == (0 if same else 1)


# --------------------------------------------------------------------------- one call a pair, faults, verdicts
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
