"""Provider faults and malformed replies at query time; retry layering; rate limiter; context policy."""

from __future__ import annotations

import json
import random

import httpx2
import openai
import pytest
from langchain_core.messages import AIMessage
from langchain_core.rate_limiters import InMemoryRateLimiter
from langchain_openai import ChatOpenAI

import langchain_tag.calls._runner as matcher_module
from langchain_tag.calls._faults import backoff_delay, client_retries, is_transient
from langchain_tag.calls._identity import describe_model, redact_url, redact_urls
from langchain_tag.errors import InputTooLongError, ProviderError
from langchain_tag.judging.chat import ChatJudge
from langchain_tag.local.models import ModelConfig, get_chat_model
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, judged_rule_id
from tests.unit_tests.faults import FAULTS, MALFORMED_LOGPROBS, CountingEndpoint, completion, injecting, named


def _verdicts(text: str) -> str:
    return "YES" if judged_rule_id(text) in {"R-001", "R-004"} else "NO"


MALFORMED = {
    "not json": "Let me think about this carefully.",
    "truncated json": '{"verdict": ',
    "empty": "",
    "wrong field": '{"answer": "maybe"}',
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
@pytest.mark.parametrize("verdict_format", ["token", "json"])
def test_malformed_verdict_is_retried_once_then_counted_no_and_reported(
    kind: str, verdict_format: str, rules: list[Rule]
) -> None:
    respond = injecting(_verdicts, when=lambda t: judged_rule_id(t) == "R-004", fault=lambda t, g: MALFORMED[kind])
    llm = FakeChatModel(respond=respond)
    result = ChatJudge(llm, verdict_format=verdict_format).judge("q", rules)  # type: ignore[arg-type]
    assert [j.rule_id for j in result.matched] == ["R-001"]
    assert [(j.rule_id, j.attempts, j.applies) for j in result.failed] == [("R-004", 2, False)]
    assert llm.calls == len(rules) + 1


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_flaky_provider_recovers_after_backoff(fault: str, rules: list[Rule], monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[int] = []
    monkeypatch.setattr(matcher_module, "backoff_delay", lambda attempt, **kw: waits.append(attempt) or 0.0)
    respond = injecting(_verdicts, when=lambda t: True, fault=lambda t, g: FAULTS[fault](), times=1)
    result = ChatJudge(FakeChatModel(respond=respond)).judge("q", rules)
    assert [j.rule_id for j in result.matched] == ["R-001", "R-004"] and not result.failed
    assert waits == [1]


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_persistent_fault_names_provider_and_rule(fault: str, rules: list[Rule]) -> None:
    respond = injecting(_verdicts, when=lambda t: judged_rule_id(t) == "R-002", fault=lambda t, g: FAULTS[fault]())
    judge = ChatJudge(FakeChatModel(respond=respond), retry_backoff=0.0)
    for result in (judge.judge("q", rules), await judge.ajudge("q", rules)):
        (failed,) = result.failed
        assert failed.rule_id == "R-002" and failed.attempts == 2
        assert named(FAULTS[fault]()) in (failed.error or "") and "FakeChatModel" in (failed.error or "")
        assert [j.rule_id for j in result.matched] == ["R-001", "R-004"]


def test_all_judgments_failing_is_an_error_naming_provider_and_rule(rules: list[Rule]) -> None:
    with pytest.raises(
        ProviderError, match=r"all 5 judgments failed calling FakeChatModel; last: judgment of rule R-00"
    ):
        ChatJudge(FakeChatModel(respond=lambda t: FAULTS["429"]()), retry_backoff=0.0).judge("q", rules)


def _openai_judge(handler: object, max_retries: int = 2) -> ChatOpenAI:
    return ChatOpenAI(
        model="judge-test",
        base_url="http://llm.example.test/v1",
        api_key="k",
        max_retries=max_retries,
        max_tokens=1,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),  # type: ignore[arg-type]
    )


def test_openai_client_retries_429_and_the_matcher_does_not_multiply_it(rules: list[Rule]) -> None:
    requests: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(str(request.url))
        return httpx2.Response(429, headers={"retry-after-ms": "1"}, json={"error": {"message": "Rate limit reached"}})

    with pytest.raises(ProviderError) as caught:
        ChatJudge(_openai_judge(handler)).judge("q", rules[:1])
    assert len(requests) == 3  # the client's 1 + 2 retries, and no second round from the matcher
    message = str(caught.value)
    assert "ChatOpenAI model 'judge-test' at http://llm.example.test/v1" in message
    assert "judgment of rule R-001" in message and "429" in message


def test_openai_client_recovers_from_503(rules: list[Rule]) -> None:
    count = {"n": 0}

    def handler(request: httpx2.Request) -> httpx2.Response:
        count["n"] += 1
        if count["n"] == 1:
            return httpx2.Response(503, headers={"retry-after-ms": "1"}, json={"error": {"message": "overloaded"}})
        return completion("YES")

    result = ChatJudge(_openai_judge(handler)).judge("q", rules[:1])
    assert [j.rule_id for j in result.matched] == ["R-001"] and count["n"] == 2


def test_is_transient_and_client_retries() -> None:
    assert all(is_transient(make()) for make in FAULTS.values())
    assert not is_transient(ValueError("bad")) and not is_transient(KeyError("x"))
    assert client_retries(_openai_judge(lambda r: None)) == 2 and client_retries(FakeChatModel(respond=str)) == 0
    assert (
        describe_model(ChatOpenAI(model="gpt-x", api_key="k"))
        == "ChatOpenAI model 'gpt-x' at https://api.openai.com/v1"
    )


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    rng = random.Random(0)
    delays = [[backoff_delay(a, base=1.0, cap=8.0, rng=rng) for a in (1, 2, 3, 4, 5)] for _ in range(50)]
    for row in delays:
        for attempt, delay in enumerate(row, start=1):
            ceiling = min(8.0, 2 ** (attempt - 1))
            assert ceiling / 2 <= delay <= ceiling
    assert len({round(row[2], 6) for row in delays}) > 40  # jittered
    assert backoff_delay(3, base=0.0) == 0.0


def test_rate_limiter_and_retries_are_configurable() -> None:
    env = {
        "LANGCHAIN_TAG_PROVIDER": "openai",
        "LANGCHAIN_TAG_BASE_URL": "http://llm.example.test/v1",
        "LANGCHAIN_TAG_MODEL": "m",
        "LANGCHAIN_TAG_REQUESTS_PER_SECOND": "4",
        "LANGCHAIN_TAG_MAX_RETRIES": "5",
        "LANGCHAIN_TAG_TIMEOUT": "12.5",
        "LANGCHAIN_TAG_CONTEXT_TOKENS": "32000",
    }
    cfg = ModelConfig.from_env(env)
    assert (cfg.requests_per_second, cfg.max_retries, cfg.timeout, cfg.context_window()) == (4.0, 5, 12.5, 32000)
    judge, executor = get_chat_model(cfg, role="judge"), get_chat_model(cfg, role="executor")
    assert isinstance(judge.rate_limiter, InMemoryRateLimiter) and judge.rate_limiter is executor.rate_limiter
    assert judge.rate_limiter.requests_per_second == 4.0 and judge.max_retries == 5  # type: ignore[attr-defined]
    assert get_chat_model(ModelConfig.from_env({**env, "LANGCHAIN_TAG_REQUESTS_PER_SECOND": ""})).rate_limiter is None
    for bad in ({"LANGCHAIN_TAG_REQUESTS_PER_SECOND": "fast"}, {"LANGCHAIN_TAG_REQUESTS_PER_SECOND": "-1"}):
        with pytest.raises(ValueError, match=r"REQUESTS_PER_SECOND|requests_per_second"):
            ModelConfig.from_env({**env, **bad})


def test_over_long_input_is_refused_before_any_call(rules: list[Rule]) -> None:
    llm = FakeChatModel(respond=_verdicts)
    judge = ChatJudge(llm, context_tokens=2000)
    assert judge.judge("x = 1", rules).matched
    with pytest.raises(InputTooLongError, match=r"about \d+ tokens .*context of 2000 tokens"):
        judge.judge("word " * 3000, rules)
    assert llm.calls == len(rules)
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, context_tokens=2000, cache=None)
    with pytest.raises(InputTooLongError):
        retriever.invoke("word " * 3000)


def test_context_tokens_come_from_the_environment_on_the_python_api(
    rules: list[Rule], monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = FakeChatModel(respond=_verdicts)
    monkeypatch.setenv("LANGCHAIN_TAG_CONTEXT_TOKENS", "2000")
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, cache=None)
    with pytest.raises(InputTooLongError, match=r"the input is too long: .*context of 2000 tokens"):
        retriever.invoke("word " * 3000)
    with pytest.raises(InputTooLongError):
        ChatJudge(llm).judge("word " * 3000, rules)
    assert llm.calls == 0  # refused before any request
    assert ChatJudge(llm, context_tokens=100_000).context_tokens == 100_000  # an explicit value wins
    monkeypatch.setenv("LANGCHAIN_TAG_CONTEXT_TOKENS", "many")
    with pytest.raises(ValueError, match="LANGCHAIN_TAG_CONTEXT_TOKENS must be an integer"):
        ChatJudge(llm)
    monkeypatch.setenv("LANGCHAIN_TAG_CONTEXT_TOKENS", "")
    assert ChatJudge(llm).context_tokens is None


def test_refusal_names_the_rule_when_the_rule_is_too_long(rules: list[Rule]) -> None:
    long_rule = rules[1].model_copy(update={"condition": "the code " * 2000})
    mixed = [rules[0], long_rule, *rules[2:]]
    llm = FakeChatModel(respond=_verdicts)
    judge = ChatJudge(llm, context_tokens=2000)
    with pytest.raises(InputTooLongError, match=r"^rule R-002 is too long: .*shorten the rule") as caught:
        judge.judge("x = 1", mixed)
    assert "input" not in str(caught.value)
    medium = rules[1].model_copy(update={"condition": "the code " * 300})
    with pytest.raises(InputTooLongError, match=r"together with rule R-002 is too long.*other rules fit"):
        judge.judge("word " * 900, [rules[0], medium, *rules[2:]])
    with pytest.raises(InputTooLongError, match=r"^the input is too long"):
        judge.judge("word " * 3000, rules)
    assert llm.calls == 0


SECRET_URL = "https://alice:hunter2@llm.example.test/v1?api-key=s3cr3t&key=k3y&token=t0k&region=eu"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (SECRET_URL, "https://***@llm.example.test/v1?api-key=***&key=***&token=***&region=eu"),
        ("http://u@h:8000/v1?access_token=a&sig=b", "http://***@h:8000/v1?access_token=***&sig=***"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
        ("http://127.0.0.1:8080/v1?model=m", "http://127.0.0.1:8080/v1?model=m"),
        ("not a url", "not a url"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected
    assert redact_urls(f"failed at {url}; giving up") == f"failed at {expected}; giving up"


def _leaks(text: str) -> list[str]:
    return [s for s in ("hunter2", "s3cr3t", "k3y", "t0k") if s in text]


def test_credentials_in_the_base_url_are_never_printed(rules: list[Rule], caplog: pytest.LogCaptureFixture) -> None:
    def respond(request: httpx2.Request) -> httpx2.Response:
        if "R-002" in request.content.decode():
            return httpx2.Response(400, json={"error": {"message": f"bad request to {SECRET_URL}"}})
        return completion(_verdicts(request.content.decode()))

    endpoint = ChatOpenAI(
        model="m",
        base_url=SECRET_URL,
        api_key="k",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(respond)),  # type: ignore[arg-type]
    )
    assert _leaks(describe_model(endpoint)) == [] and "llm.example.test/v1" in describe_model(endpoint)
    with caplog.at_level("WARNING"):
        result = ChatJudge(endpoint, cache=None, retry_backoff=0).judge("x = 1", rules)
    assert [j.rule_id for j in result.failed] == ["R-002"]
    assert _leaks(result.failed[0].error or "") == [] and "***" in (result.failed[0].error or "")
    assert _leaks(caplog.text) == [] and "R-002" in caplog.text
    down = ChatOpenAI(
        model="m",
        base_url=SECRET_URL,
        api_key="k",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(503))),  # type: ignore[arg-type]
    )
    with pytest.raises(ProviderError) as caught:
        ChatJudge(down, retry_backoff=0).judge("x = 1", rules)
    assert _leaks(str(caught.value)) == [] and "llm.example.test" in str(caught.value)
    with pytest.raises(ValueError) as missing:
        get_chat_model(ModelConfig.from_env({"LANGCHAIN_TAG_PROVIDER": "openai", "LANGCHAIN_TAG_BASE_URL": SECRET_URL}))
    assert "LANGCHAIN_TAG_MODEL must name" in str(missing.value) and _leaks(str(missing.value)) == []


@pytest.mark.parametrize("kind", sorted(MALFORMED_LOGPROBS))
async def test_malformed_logprobs_are_failed_judgments_counted_no_and_reported(kind: str, rules: list[Rule]) -> None:
    def respond(text: str) -> str | AIMessage:
        if judged_rule_id(text) != "R-001":
            return _verdicts(text)
        return AIMessage(content="YES", response_metadata={"logprobs": {"content": MALFORMED_LOGPROBS[kind]}})

    judge = ChatJudge(FakeChatModel(respond=respond), retry_backoff=0.0)
    for result in (judge.judge("q", rules), await judge.ajudge("q", rules)):
        assert [j.rule_id for j in result.matched] == ["R-004"]
        assert [(j.rule_id, j.attempts, j.applies) for j in result.failed] == [("R-001", 2, False)]
        assert "malformed logprobs" in (result.failed[0].error or "")


@pytest.mark.parametrize("fault", ["429", "garbage"])
def test_requests_per_pair_for_each_fault_class_with_a_default_chat_openai(fault: str, rules: list[Rule]) -> None:
    endpoint = CountingEndpoint(lambda text: 429 if fault == "429" else "Yes, no.")
    model = endpoint.model()  # max_retries=None: the OpenAI client's own default of 2 retries applies
    assert model.max_retries is None and client_retries(model) == 2
    if fault == "429":
        with pytest.raises(ProviderError):
            ChatJudge(model, retry_backoff=0.0).judge("q", rules)
    else:
        assert len(ChatJudge(model, retry_backoff=0.0).judge("q", rules).failed) == 5
    # A 429 is retried by the client only (1 + 2); garbage by the matcher only (1 + 1).
    assert set(endpoint.requests.values()) == {3 if fault == "429" else 2}


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
@pytest.mark.parametrize("max_retries", [None, 0])
def test_a_fault_no_retry_can_fix_is_sent_once(status: int, max_retries: int | None, rules: list[Rule]) -> None:
    # A context length exceeded (400) or a too-large body (413): sending a 50 MB input again fails the same way.
    endpoint = CountingEndpoint(lambda text: status if judged_rule_id(text) == "R-002" else _verdicts(text))
    model = endpoint.model() if max_retries is None else endpoint.model(max_retries=max_retries)
    result = ChatJudge(model, retry_backoff=0.0).judge("q", rules)
    assert [(j.rule_id, j.attempts) for j in result.failed] == [("R-002", 1)]
    assert endpoint.most_requests(lambda text: judged_rule_id(text) == "R-002") == 1


def test_is_permanent() -> None:
    from langchain_tag.calls._faults import is_permanent

    assert not any(is_permanent(make()) for make in FAULTS.values())
    assert not is_permanent(ValueError("bad"))
    assert all(is_permanent(type("E", (Exception,), {"status_code": s})()) for s in (400, 401, 403, 404, 413, 422))


def test_a_failure_names_the_requests_really_sent(rules: list[Rule], caplog: pytest.LogCaptureFixture) -> None:
    endpoint = CountingEndpoint(lambda text: 429 if judged_rule_id(text) == "R-002" else _verdicts(text))
    with caplog.at_level("WARNING"):
        result = ChatJudge(endpoint.model(), retry_backoff=0.0).judge("q", rules)  # the client's 2 retries
    assert endpoint.most_requests(lambda text: judged_rule_id(text) == "R-002") == 3
    assert "3 requests sent, 2 of them by its client" in (result.failed[0].error or "")
    assert "failed after 1 attempt(s)" in caplog.text and "3 requests sent" in caplog.text
    assert "after 2 attempts" not in caplog.text


def test_debug_logging_masks_credentials_in_the_http_clients_logs(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from langchain_tag.cli import main as cli

    root = logging.getLogger()
    handler = logging.StreamHandler()
    root.addHandler(handler)  # as basicConfig's own handler would be
    try:
        with caplog.at_level("INFO"):
            cli.configure_logging(debug=True)
            url = httpx2.URL("http://user:hunter2@llm.example.test/v1/chat/completions?api-key=s3cr3t")
            logging.getLogger("httpx").info('HTTP Request: %s %s "%s %d %s"', "POST", url, "HTTP/1.1", 200, "OK")
            logging.getLogger("openai").info(f"Sending to {url}")
    finally:
        root.removeHandler(handler)
    assert any(type(f).__name__ == "RedactingFilter" for f in handler.filters)
    assert _leaks(caplog.text) == [] and "200 OK" in caplog.text and "***@llm.example.test" in caplog.text


def test_an_http_fault_is_described_by_its_status_and_the_servers_words_whichever_client_got_it() -> None:
    """The in-process client's error and the Ray engine's replayed one read the same (no client class names)."""
    from langchain_tag.calls._faults import ReportedFault, describe_error, http_error, is_permanent, server_message

    request = httpx2.Request("POST", "http://127.0.0.1:1/v1/chat/completions")  # the openai client's HTTP library
    body = {"error": {"message": "the model crashed", "type": "server_error"}}
    response = httpx2.Response(500, request=request, json=body)
    in_process = openai.InternalServerError("Error code: 500 - ...", response=response, body=body["error"])
    replayed = ReportedFault(http_error(500, server_message(json.dumps(body))))
    assert describe_error(in_process) == describe_error(replayed) == "HTTP 500: the model crashed"
    assert is_transient(replayed) and not is_permanent(replayed)
    too_long = ReportedFault("HTTP 400: context length exceeded")
    assert is_permanent(too_long) and describe_error(too_long) == "HTTP 400: context length exceeded"
    bare = openai.BadRequestError("Error code: 400", response=httpx2.Response(400, request=request), body=None)
    assert describe_error(bare) == "HTTP 400"
