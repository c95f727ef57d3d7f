"""The chat judge: its calls never stream, whatever the caller streams."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import pytest_socket
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_tag.graph import build_tag_graph
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import judged_rule_id
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
