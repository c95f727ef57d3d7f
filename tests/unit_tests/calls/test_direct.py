"""Calls sent straight through ChatOpenAI's own client: the same requests, verdicts and faults as through the runnable."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx2
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.globals import set_llm_cache
from langchain_core.outputs import LLMResult
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from langchain_tag.calls._direct import DirectChat
from langchain_tag.calls._runner import ReplyCounter
from langchain_tag.errors import ProviderError
from langchain_tag.judging.chat import ChatJudge, configure_judge
from langchain_tag.rules import Rule
from langchain_tag.scale.bulk import amatch_corpus, match_corpus
from langchain_tag.testing import judged_rule_id
from tests.unit_tests.faults import CountingEndpoint


def _verdicts(text: str) -> str | int:
    rule = judged_rule_id(text)
    return 500 if rule == "R-003" else "YES" if rule in {"R-001", "R-004"} else "NO"


class _Seen(BaseCallbackHandler):
    """A user's handler: it must see every call, so its calls go through the runnable."""

    def __init__(self) -> None:
        self.ends = 0

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        self.ends += 1


class _Counter(ReplyCounter):
    def __init__(self) -> None:
        self.ends = 0

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        self.ends += 1


def _azure() -> Any:
    from langchain_openai import AzureChatOpenAI

    return AzureChatOpenAI(
        azure_deployment="d", azure_endpoint="https://x.example.test", api_version="2024-10-21", api_key=SecretStr("k")
    )


def _model(handler: Any, ahandler: Any = None) -> ChatOpenAI:
    """A ChatOpenAI without client retries whose requests ``handler`` (``ahandler`` for async calls) answers."""
    return ChatOpenAI(
        model="m",
        base_url="http://llm.example.test/v1",
        api_key=SecretStr("k"),
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(ahandler or handler)),
    )


@pytest.fixture
def runnable_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call that went through ChatOpenAI's runnable path (its ``_generate``/``_agenerate``)."""
    calls: list[str] = []
    generate, agenerate = ChatOpenAI._generate, ChatOpenAI._agenerate

    def counted(self: ChatOpenAI, *args: Any, **kwargs: Any) -> Any:
        calls.append("sync")
        return generate(self, *args, **kwargs)

    async def acounted(self: ChatOpenAI, *args: Any, **kwargs: Any) -> Any:
        calls.append("async")
        return await agenerate(self, *args, **kwargs)

    monkeypatch.setattr(ChatOpenAI, "_generate", counted)
    monkeypatch.setattr(ChatOpenAI, "_agenerate", acounted)
    return calls


def _summary(judge: ChatJudge, rules: list[Rule], *, callbacks: Any = None, use_async: bool = False) -> list[Any]:
    found = (
        asyncio.run(judge.ajudge("q", rules, callbacks=callbacks))
        if use_async
        else judge.judge("q", rules, callbacks=callbacks)
    )
    return [
        (j.rule_id, j.applies, j.p_yes, j.error, j.attempts, j.prompt_tokens, j.completion_tokens, j.reply)
        for j in found.judgments
    ]


@pytest.mark.parametrize("use_async", [False, True])
def test_a_plain_chat_openai_is_called_directly_with_the_same_requests_verdicts_and_faults(
    use_async: bool, rules: list[Rule], runnable_calls: list[str]
) -> None:
    direct_endpoint, runnable_endpoint = CountingEndpoint(_verdicts), CountingEndpoint(_verdicts)
    direct = _summary(ChatJudge(direct_endpoint.model(max_retries=0), retry_backoff=0.0), rules, use_async=use_async)
    assert runnable_calls == []  # nothing went through the runnable
    seen = _Seen()
    judge = ChatJudge(runnable_endpoint.model(max_retries=0), retry_backoff=0.0)
    through_runnable = _summary(judge, rules, callbacks=[seen], use_async=use_async)
    assert len(runnable_calls) == len(rules) + 1 and seen.ends == len(rules) - 1  # R-003 sent twice, failing
    assert direct == through_runnable
    assert [j[0] for j in direct if j[1]] == ["R-001", "R-004"]
    assert [(j[0], j[4]) for j in direct if j[3]] == [("R-003", 2)] and "HTTP 500" in str(direct[2][3])
    key = lambda body: json.dumps(body, sort_keys=True)  # noqa: E731
    assert sorted(map(key, direct_endpoint.bodies)) == sorted(map(key, runnable_endpoint.bodies))
    assert {b.get("logprobs") for b in direct_endpoint.bodies} == {True}
    sent = {(h["authorization"], h["content-type"]) for h in direct_endpoint.headers + runnable_endpoint.headers}
    assert sent == {("Bearer k", "application/json")}


def test_a_context_overflow_is_raised_as_chat_openai_raises_it_and_not_sent_again(rules: list[Rule]) -> None:
    sent: list[httpx2.Request] = []

    def respond(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        body = {
            "error": {"message": "This model's maximum context length is 8 tokens", "code": "context_length_exceeded"}
        }
        return httpx2.Response(400, json=body)

    errors = []
    choices: list[list[BaseCallbackHandler] | None] = [None, [_Seen()]]
    for callbacks in choices:
        sent.clear()
        with pytest.raises(ProviderError) as raised:
            ChatJudge(_model(respond), retry_backoff=0.0).judge("q", rules[:1], callbacks=callbacks)
        errors.append(str(raised.value))
        assert len(sent) == 1
    assert errors[0] == errors[1] and "HTTP 400: This model's maximum context length" in errors[0]


def test_only_reply_counters_let_a_call_go_directly(rules: list[Rule], runnable_calls: list[str]) -> None:
    endpoint = CountingEndpoint(_verdicts)
    counter = _Counter()
    ChatJudge(endpoint.model(max_retries=0), retry_backoff=0.0).judge("q", rules, callbacks=[counter])
    assert runnable_calls == [] and counter.ends == len(rules) - 1  # counted as each reply arrived
    llm = configure_judge(endpoint.model())
    direct = DirectChat.of(llm)
    assert direct is not None and direct.counters([counter], ReplyCounter) == [counter]
    assert (
        direct.counters([_Seen()], ReplyCounter) is None and direct.counters([counter, _Seen()], ReplyCounter) is None
    )


@pytest.mark.parametrize(
    "model",
    [
        lambda m: m.with_retry(),
        lambda m: m.with_config(tags=["x"]),
        lambda m: m.bind(stop=["\n"]),
        lambda m: ChatOpenAI(model="m", api_key=SecretStr("k"), streaming=True),
        lambda m: type("Mine", (ChatOpenAI,), {})(model="m", api_key=SecretStr("k")),  # reads replies its own way
        lambda m: _azure(),  # its client builds its paths its own way
    ],
    ids=["with_retry", "with_config", "stop", "streaming", "subclass", "azure"],
)
def test_anything_but_a_plain_chat_openai_goes_through_the_runnable(model: Any) -> None:
    assert DirectChat.of(model(ChatOpenAI(model="m", api_key=SecretStr("k")))) is None
    assert DirectChat.of(configure_judge(ChatOpenAI(model="m", api_key=SecretStr("k")))) is not None


def test_a_global_llm_cache_sends_through_the_runnable(rules: list[Rule], runnable_calls: list[str]) -> None:
    from langchain_core.caches import InMemoryCache

    set_llm_cache(InMemoryCache())
    try:
        ChatJudge(CountingEndpoint(_verdicts).model(max_retries=0), retry_backoff=0.0).judge("q", rules[:2])
    finally:
        set_llm_cache(None)
    assert len(runnable_calls) == 2


@pytest.mark.parametrize("use_async", [False, True])
def test_direct_calls_keep_max_concurrency_as_a_cap_across_inputs(use_async: bool, rules: list[Rule]) -> None:
    import threading
    import time

    state = {"now": 0, "most": 0}
    lock = threading.Lock()
    endpoint = CountingEndpoint(_verdicts)

    def enter() -> None:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])

    def leave() -> None:
        with lock:
            state["now"] -= 1

    def handler(request: httpx2.Request) -> httpx2.Response:
        enter()
        time.sleep(0.01)
        leave()
        return endpoint(request)

    async def ahandler(request: httpx2.Request) -> httpx2.Response:
        enter()
        await asyncio.sleep(0.01)
        leave()
        return endpoint(request)

    model = _model(handler, ahandler)
    from langchain_tag.retrievers import ApplicabilityRetriever

    retriever = ApplicabilityRetriever(llm=model, rules=rules, calibration=None, max_concurrency=3)
    texts = [f"input {i}" for i in range(6)]
    if use_async:

        async def drain() -> list[Any]:
            return [r async for r in amatch_corpus(texts, retriever, show_progress=False)]

        records = asyncio.run(drain())
    else:
        records = list(match_corpus(texts, retriever, show_progress=False))
    assert len(records) == 6 and [[m["rule_id"] for m in r["matched"]] for r in records] == [["R-001", "R-004"]] * 6
    assert state["most"] == 3


def _without(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> None:
    """Remove ``owner.name`` as a release without it would: from every class of the MRO that defines it."""
    classes = owner.__mro__ if isinstance(owner, type) else (owner,)
    found = [c for c in classes if name in vars(c)]
    assert found, f"{name} is not defined on {owner}"
    for cls in found:
        monkeypatch.delattr(cls, name)


def _changed(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> None:
    """Replace ``owner.name`` with one of another shape (it takes no arguments)."""
    monkeypatch.setattr(owner, name, staticmethod(lambda: None) if isinstance(owner, type) else (lambda: None))


def _hooks() -> list[tuple[Any, str]]:
    import openai._base_client
    from langchain_openai.chat_models import base

    return [
        (ChatOpenAI, "_get_request_payload"),
        (ChatOpenAI, "_use_responses_api"),
        (base, "_handle_openai_bad_request"),
        (base, "_handle_openai_api_error"),
        (openai._base_client, "make_request_options"),
    ]


@pytest.mark.parametrize("change", [_without, _changed], ids=["missing", "changed"])
@pytest.mark.parametrize("hook", range(5), ids=[name for _, name in _hooks()])
def test_a_private_hook_missing_or_changed_sends_through_the_runnable(
    hook: int, change: Any, monkeypatch: pytest.MonkeyPatch, rules: list[Rule], caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from langchain_tag.retrievers import ApplicabilityRetriever
    from langchain_tag.testing import prompt_text

    endpoint = CountingEndpoint(_verdicts)
    model = endpoint.model(max_retries=0)
    public: list[str] = []

    def generate(self: ChatOpenAI, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        """ChatOpenAI's public path in a release whose private hooks moved: it still answers."""
        rule = judged_rule_id(prompt_text(messages))
        public.append(str(rule))
        reply = "YES" if rule in {"R-001", "R-004"} else "NO"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])

    monkeypatch.setattr(ChatOpenAI, "_generate", generate)
    owner, name = _hooks()[hook]
    change(monkeypatch, owner, name)
    with caplog.at_level(logging.DEBUG, logger="langchain_tag"):
        found = ApplicabilityRetriever(llm=model, rules=rules, calibration=None, strict=True).invoke("q")
    assert sorted(d.id for d in found) == ["R-001", "R-004"]
    assert len(public) == len(rules) and endpoint.bodies == []
    why = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and name in r.getMessage()]
    assert len(why) == 1, [r.getMessage() for r in caplog.records]


def test_the_installed_langchain_openai_is_within_the_tested_bound_and_has_every_hook() -> None:
    from importlib.metadata import requires, version

    from packaging.requirements import Requirement

    declared = [Requirement(r) for r in requires("langchain-tag") or [] if r.startswith("langchain-openai")]
    assert declared and all(req.specifier.filter([version("langchain-openai")]) for req in declared)
    assert all("<" in str(req.specifier) for req in declared)  # an upper bound
    assert DirectChat.of(ChatOpenAI(model="m", api_key=SecretStr("k"))) is not None  # every hook usable here


FALLBACK = re.compile(
    r"^(judge calls|decision requests) go through .+: the private hook \S+ is missing or has changed$"
)
"""How both fast paths (this one and the decision judge's) say they fell back: one wording, at warning level."""


def test_the_fallback_is_warned_as_the_decision_path_warns_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    model = ChatOpenAI(model="m", api_key=SecretStr("sk-test"), base_url="http://127.0.0.1:9/v1")
    monkeypatch.setattr(ChatOpenAI, "_use_responses_api", staticmethod(lambda: None))
    with caplog.at_level("DEBUG", logger="langchain_tag"):
        assert DirectChat.of(model) is None
    said = [(r.levelname, r.name, r.getMessage()) for r in caplog.records]
    assert len(said) == 1 and said[0][:2] == ("WARNING", "langchain_tag.calls._direct"), said
    assert FALLBACK.match(said[0][2]) and "the private hook ChatOpenAI._use_responses_api is" in said[0][2], said
