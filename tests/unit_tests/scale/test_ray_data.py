"""Judging through a Ray Data pipeline gives the verdicts of in-process judging.

The pipeline runs on a local Ray instance (started once for the module)
against a fake OpenAI-compatible endpoint on 127.0.0.1: it answers YES or NO
with first-token logprobs derived from the prompt text, as
:func:`fake_answer` does for the in-process fake chat model, and fails the
rules it is told to fail. Sockets are enabled for this module only, and
connections only to the loopback address.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_socket
from pydantic import SecretStr

from langchain_tag.errors import MissingExtraError
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.results import MatchResult
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache, SQLiteVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.ray_data import build_judge_processor, chat_request_body, judge_with_ray, read_chat_response
from langchain_tag.testing import FakeChatModel, asks_negation, judged_rule_id
from tests.helpers.loopback_server import LoopbackServer

pytestmark = pytest.mark.enable_socket

LOOPBACK = ["127.0.0.1", "::1"]
MODEL = "fake-judge"
CRASH = "# the endpoint fails every request about this input"

INPUTS = [
    "from os import *\nprint(getcwd())",
    "import os, sys\n\ndef f(x, acc=[]):\n    acc.append(x)\n    return acc",
    "try:\n\trun()\nexcept:\n\tpass",
]


# --------------------------------------------------------------------------- fakes
def fake_answer(prompt: str) -> tuple[str, float]:
    """The reply to a judge prompt: P(YES) from a hash of the prompt text, and the word it makes."""
    p = 0.03 + 0.94 * int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return ("YES" if p >= 0.5 else "NO"), p


def openai_logprobs(word: str, p: float) -> dict[str, Any]:
    """First-token logprobs as the in-process fake chat model gives them (FakeChatModel(with_logprobs=True))."""
    top = [{"token": "YES", "logprob": math.log(p)}, {"token": "NO", "logprob": math.log(1 - p)}]
    return {"content": [{"token": word, "logprob": math.log(p if word == "YES" else 1 - p), "top_logprobs": top}]}


class FakeEndpoint(LoopbackServer):
    """An OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1 in a thread.

    Attributes:
        failing: Rule id -> ``"500"`` (an HTTP 500 with a JSON error),
            ``"garbage"`` (a 200 whose body is not JSON) or ``"unreadable"``
            (a reply with no verdict and no logprobs). Every prompt holding
            :data:`CRASH` gets the 500.
        bodies: Every request body received.
        answered_by: The model every reply names.
    """

    def __init__(self) -> None:
        self.failing: dict[str, str] = {}
        self.delay = 0.0
        self.answered_by = MODEL
        self.in_flight = self.most_in_flight = 0
        self._counting = threading.Lock()
        super().__init__(self._answer)

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        with self._counting:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(self.delay)
        with self._counting:
            self.in_flight -= 1
        status, payload = self.reply(body)
        return status, "application/json" if payload.startswith("{") else "text/html", payload.encode()

    def reply(self, body: dict[str, Any]) -> tuple[int, str]:
        prompt = "\n\n".join(m["content"] for m in body["messages"])
        failure = "500" if CRASH in prompt else self.failing.get(judged_rule_id(prompt) or "")
        if failure == "500":
            return 500, json.dumps({"error": {"message": "the model crashed", "type": "server_error"}})
        if failure == "garbage":
            return 200, "<html>upstream proxy error</html>"
        word, p = fake_answer(prompt)
        content, logprobs = ("I am not sure.", None) if failure == "unreadable" else (word, openai_logprobs(word, p))
        choice = {"index": 0, "message": {"role": "assistant", "content": content}, "logprobs": logprobs}
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": 1, "total_tokens": len(prompt.split()) + 1}
        return 200, json.dumps(
            {"id": "x", "object": "chat.completion", "model": self.answered_by, "choices": [choice], "usage": usage}
        )


def in_process_judge(failing: dict[str, str] | None = None) -> FakeChatModel:
    """The in-process twin of the endpoint: the same answers, the same failures."""
    failing = failing or {}

    def respond(prompt: str) -> Any:
        failure = "500" if CRASH in prompt else failing.get(judged_rule_id(prompt) or "")
        if failure == "500":
            return RuntimeError("HTTP 500: the model crashed")
        if failure == "garbage":
            return "<html>upstream proxy error</html>"
        if failure == "unreadable":
            return "I am not sure."
        return fake_answer(prompt)

    return FakeChatModel(respond=respond, with_logprobs=True)


def verdicts(result: MatchResult) -> list[tuple[Any, ...]]:
    return [(j.rule_id, j.applies, j.p_yes, j.score, j.error is None) for j in result.judgments]


# --------------------------------------------------------------------------- fixtures
def _loopback_only() -> None:
    pytest_socket.socket_allow_hosts(LOOPBACK, allow_unix_socket=True)


@pytest.fixture(scope="module", autouse=True)
def _module_loopback_only() -> None:
    """Connections to the loopback address only while the module's Ray instance and endpoint start."""
    _loopback_only()


@pytest.fixture(autouse=True)
def _test_loopback_only() -> None:
    """The same for each test (pytest-socket lifts restrictions after every test)."""
    _loopback_only()


@pytest.fixture(scope="module")
def module_endpoint() -> Iterator[FakeEndpoint]:
    endpoint = FakeEndpoint()
    yield endpoint
    endpoint.close()


@pytest.fixture
def endpoint(module_endpoint: FakeEndpoint) -> FakeEndpoint:
    module_endpoint.failing = {}
    module_endpoint.bodies.clear()
    module_endpoint.delay = 0.0
    module_endpoint.answered_by = MODEL
    module_endpoint.most_in_flight = 0
    return module_endpoint


def twin_retrievers(rules: list[Rule], failing: dict[str, str] | None = None, **options: Any) -> tuple[Any, ...]:
    """A retriever judged in process, and one for Ray whose (identical) fake model must never be called."""
    in_process = ApplicabilityRetriever(
        llm=in_process_judge(failing), rules=rules, cache=InMemoryVerdictCache(), **options
    )
    never_called = in_process_judge(failing)
    for_ray = ApplicabilityRetriever(llm=never_called, rules=rules, cache=InMemoryVerdictCache(), **options)
    return in_process, for_ray, never_called


# --------------------------------------------------------------------------- through Ray
def test_ray_verdicts_equal_in_process_judging(local_ray: None, endpoint: FakeEndpoint, rules: list[Rule]) -> None:
    in_process, for_ray, never_called = twin_retrievers(rules)

    run = judge_with_ray(for_ray, INPUTS, base_url=endpoint.base_url, model=MODEL, batch_size=4)

    assert never_called.calls == 0
    assert run.failures == []
    assert (run.requested, run.cached, run.sent, run.calls, run.passes) == (15, 0, 15, 15, 1)
    assert [r.query for r in run.results] == INPUTS
    assert [verdicts(r) for r in run.results] == [verdicts(in_process.match(q)) for q in INPUTS]
    assert any(j.applies for r in run.results for j in r.judgments)
    assert all(r.calls == 0 and r.cache_hits == len(rules) for r in run.results)
    assert run.judgments_per_second > 0

    body = endpoint.bodies[0]
    assert body["model"] == MODEL
    assert (body["temperature"], body["logprobs"], body["top_logprobs"], body["max_tokens"]) == (0, True, 5, 1)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]

    again = judge_with_ray(for_ray, INPUTS, base_url=endpoint.base_url, model=MODEL)
    assert (again.requested, again.cached, again.sent, again.passes) == (15, 15, 0, 0)
    assert [verdicts(r) for r in again.results] == [verdicts(r) for r in run.results]
    assert len(endpoint.bodies) == 15


def test_replies_another_model_gave_are_not_stored_as_the_asked_models(
    local_ray: None, endpoint: FakeEndpoint, rules: list[Rule], caplog: pytest.LogCaptureFixture
) -> None:
    endpoint.answered_by = "another-model"
    _, for_ray, never_called = twin_retrievers(rules)
    with caplog.at_level("WARNING", logger="langchain_tag"):
        run = judge_with_ray(for_ray, INPUTS[:1], base_url=endpoint.base_url, model=MODEL, retry_backoff=0.0)
    assert never_called.calls == 0 and run.sent == len(rules) == run.calls  # not sent again: it answers alike
    assert len(run.failures) == len(rules)
    assert all("answered by 'another-model', not 'fake-judge'" in f.error for f in run.failures)
    assert [j.error is not None for j in run.results[0].judgments] == [True] * len(rules)
    assert len([r for r in caplog.records if "another-model" in r.getMessage()]) == 1
    again = judge_with_ray(for_ray, INPUTS[:1], base_url=endpoint.base_url, model=MODEL, retry_backoff=0.0)
    assert again.cached == 0 and again.sent == len(rules)  # none was stored as fake-judge's


def test_contrast_prompt_and_reference_calibration(local_ray: None, endpoint: FakeEndpoint, rules: list[Rule]) -> None:
    calibration = Calibration(
        method="platt",
        slope=1.3,
        intercept=-0.2,
        reference_inputs=("x = 1", "def f():\n    return 2", "print('hello')"),
        standardise=True,
        threshold=0.45,
    )
    options: dict[str, Any] = {"predicate": "applicability-contrast", "calibration": calibration}
    in_process, for_ray, never_called = twin_retrievers(rules, **options)

    run = judge_with_ray(for_ray, INPUTS[:2], base_url=endpoint.base_url, model=MODEL, concurrency=2, batch_size=8)

    assert never_called.calls == 0
    assert run.failures == []
    # Two halves per pair, for two inputs and three references.
    assert run.requested == run.sent == 2 * len(rules) * (2 + 3)
    assert any(asks_negation("\n\n".join(m["content"] for m in b["messages"])) for b in endpoint.bodies)
    expected = [in_process.match(q) for q in INPUTS[:2]]
    assert [verdicts(r) for r in run.results] == [verdicts(r) for r in expected]
    assert all(j.score is not None and j.score != j.p_yes for r in run.results for j in r.judgments)


def test_failed_requests_are_reported_and_counted_as_no(
    local_ray: None, endpoint: FakeEndpoint, rules: list[Rule]
) -> None:
    failing = {"R-002": "500", "R-004": "garbage", "R-005": "unreadable"}
    endpoint.failing = dict(failing)
    references = ("x = 1", "print('hello')")
    calibration = Calibration(method="platt", slope=1.1, intercept=0.1, reference_inputs=references)
    in_process, for_ray, never_called = twin_retrievers(rules, failing, calibration=calibration)
    crashing = f"{CRASH}\nx = 1"

    run = judge_with_ray(for_ray, [*INPUTS, crashing], base_url=endpoint.base_url, model=MODEL, retry_backoff=0.0)

    assert never_called.calls == 0
    # (4 inputs + 2 references) x 5 rules; 20 fail and are sent again.
    assert (run.requested, run.sent, run.passes, run.calls) == (30, 30, 2, 30 + 20)
    expected_failures = [(q, r) for q in [*INPUTS, *references] for r in failing] + [
        (crashing, r.rule_id) for r in rules
    ]
    assert sorted((f.query, f.rule_id) for f in run.failures) == sorted(expected_failures)
    assert sorted(f.query for f in run.failures if f.reference) == sorted(references * len(failing))
    errors = {f.rule_id: f.error for f in run.failures if f.query != crashing}
    assert errors["R-002"].startswith("HTTP 500: ") and "the model crashed" in errors["R-002"]
    assert errors["R-004"].startswith("unreadable response: ") and "upstream proxy error" in errors["R-004"]
    assert "no YES/NO verdict" in errors["R-005"]
    assert all(f.attempts == 2 and not f.negated for f in run.failures)

    # Failed pairs count as NO with their error; the rest are the in-process verdicts.
    for result, query in zip(run.results[:-1], INPUTS, strict=True):
        expected = in_process.match(query)
        assert [j.rule_id for j in result.failed] == [j.rule_id for j in expected.failed] == list(failing)
        assert all(not j.applies for j in result.failed)
        assert errors["R-002"] in (result.judgments[1].error or "")
        assert verdicts(result) == verdicts(expected)
    # An input whose every request failed still gets a result: every judgment failed, counted as NO.
    crashed = run.results[-1]
    assert [j.rule_id for j in crashed.failed] == [r.rule_id for r in rules]
    assert all("HTTP 500" in (j.error or "") and not j.applies for j in crashed.judgments)

    # Only answered pairs were cached: a second run sends the failed ones alone.
    endpoint.failing = {}
    again = judge_with_ray(for_ray, INPUTS, base_url=endpoint.base_url, model=MODEL)
    assert (again.requested, again.cached, again.sent, again.failures) == (25, 10, 15, [])
    assert all(r.failed == [] for r in again.results)


class InProcessPipeline:
    """A processor that runs the pipeline's own pre- and postprocess in this process, the endpoint's answer between.

    What a Ray worker does to each row, here where a spy on the verdict reader sees every call.
    """

    def __init__(self, endpoint: FakeEndpoint) -> None:
        self.endpoint = endpoint

    def __call__(self, dataset: Any) -> Any:
        import ray.data

        from langchain_tag.scale.ray_data.requests import postprocess_row, preprocess_row

        rows = []
        for row in dataset.take_all():
            payload = preprocess_row(row, model=MODEL, max_tokens=1, extra_body={})["payload"]
            status, body = self.endpoint.reply(payload)
            response = {"status": status, "body": body, "error": ""}
            rows.append(postprocess_row({**row, "http_response": response}))
        return ray.data.from_items(rows)


def test_each_reply_is_read_once_by_the_one_reader(
    local_ray: None, endpoint: FakeEndpoint, rules: list[Rule], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline's postprocess reads a reply; the job keeps that reading and does not read the reply again."""
    import langchain_tag.judging.chat as chat
    import langchain_tag.scale.ray_data.requests as requests
    from langchain_tag.judging._read import read_reply

    reads: Counter[str] = Counter()

    def counting_reader(text: str, logprobs: Any = None) -> Any:
        reads[json.dumps([text, logprobs], sort_keys=True)] += 1
        return read_reply(text, logprobs)

    monkeypatch.setattr(requests, "read_reply", counting_reader)
    monkeypatch.setattr(chat, "read_reply", counting_reader)
    in_process, for_ray, never_called = twin_retrievers(rules)

    run = judge_with_ray(for_ray, INPUTS[:1], processor=InProcessPipeline(endpoint))

    assert never_called.calls == 0 and run.failures == [] and run.sent == len(rules)
    assert sum(reads.values()) == run.sent  # one read per reply
    assert set(reads.values()) == {1}
    assert verdicts(run.results[0]) == verdicts(in_process.match(INPUTS[0]))


def test_sqlite_cache_and_explicit_processor(
    local_ray: None, endpoint: FakeEndpoint, rules: list[Rule], tmp_path: Any
) -> None:
    path = tmp_path / "verdicts.sqlite"
    retriever = ApplicabilityRetriever(llm=in_process_judge(), rules=rules, cache=SQLiteVerdictCache(path))
    processor = build_judge_processor(base_url=endpoint.base_url, model=MODEL, extra_body={"cache_prompt": True})

    run = judge_with_ray(retriever, INPUTS[:1], processor=processor)

    assert run.failures == [] and run.sent == len(rules)
    assert endpoint.bodies[0]["cache_prompt"] is True
    reopened = ApplicabilityRetriever(llm=in_process_judge(), rules=rules, cache=SQLiteVerdictCache(path))
    assert reopened.match(INPUTS[0]).calls == 0


def test_chat_openai_judge_in_process_and_through_ray(
    local_ray: None, endpoint: FakeEndpoint, rules: list[Rule]
) -> None:
    """With a ChatOpenAI judge, Ray takes its endpoint, model and extra body, and matches it call for call."""
    from langchain_openai import ChatOpenAI

    def judge_llm() -> ChatOpenAI:
        return ChatOpenAI(
            base_url=endpoint.base_url,
            model=MODEL,
            api_key=SecretStr("sk-test"),
            temperature=0,
            max_retries=0,
            extra_body={"cache_prompt": True},
        )

    in_process = ApplicabilityRetriever(llm=judge_llm(), rules=rules, cache=InMemoryVerdictCache())
    for_ray = ApplicabilityRetriever(llm=judge_llm(), rules=rules, cache=InMemoryVerdictCache())
    expected = [verdicts(in_process.match(q)) for q in INPUTS[:2]]
    in_process_bodies = list(endpoint.bodies)
    endpoint.bodies.clear()

    run = judge_with_ray(for_ray, INPUTS[:2])

    assert [verdicts(r) for r in run.results] == expected
    assert len(endpoint.bodies) == len(in_process_bodies) == 2 * len(rules)
    key = lambda b: json.dumps(b["messages"])  # noqa: E731
    pairs = zip(sorted(endpoint.bodies, key=key), sorted(in_process_bodies, key=key), strict=True)
    for ray_body, in_process_body in pairs:
        for name in ("model", "messages", "temperature", "logprobs", "top_logprobs", "cache_prompt"):
            assert ray_body[name] == in_process_body[name], name
        # The same one-token cap: the OpenAI client names it max_completion_tokens, servers take max_tokens too.
        assert ray_body["max_tokens"] == in_process_body.get("max_completion_tokens", in_process_body.get("max_tokens"))


def test_cli_engine_ray_writes_the_in_process_file(
    local_ray: None,
    endpoint: FakeEndpoint,
    rules: list[Rule],
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``match --inputs F --engine ray`` writes, byte for byte, the file the in-process job writes."""
    from langchain_openai import ChatOpenAI

    import langchain_tag.local.models as models
    from langchain_tag.cli.main import main
    from langchain_tag.rules import save_rules

    def judge_llm(**kw: Any) -> ChatOpenAI:
        return ChatOpenAI(base_url=endpoint.base_url, model=MODEL, api_key=SecretStr("sk-test"), max_retries=0)

    monkeypatch.setattr(models, "get_chat_model", judge_llm)
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("".join(json.dumps({"id": f"in-{i}", "text": t}) + "\n" for i, t in enumerate(INPUTS)))
    argv = [
        "match",
        "--inputs",
        str(inputs),
        "--rules",
        str(save_rules(rules, tmp_path / "rules.jsonl")),
        "--all-pairs",
    ]

    assert main([*argv, "-o", str(tmp_path / "process.jsonl"), "--verdicts", str(tmp_path / "p.sqlite")]) == 0
    sent_in_process = len(endpoint.bodies)
    ray_argv = [*argv, "-o", str(tmp_path / "ray.jsonl"), "--verdicts", str(tmp_path / "r.sqlite"), "--engine", "ray"]
    assert main(ray_argv) == 0

    assert len(endpoint.bodies) == 2 * sent_in_process == 2 * len(INPUTS) * len(rules)
    written = (tmp_path / "ray.jsonl").read_bytes()
    assert written == (tmp_path / "process.jsonl").read_bytes()
    assert [json.loads(line)["id"] for line in written.decode().splitlines()] == ["in-0", "in-1", "in-2"]
    err = capsys.readouterr().err
    assert f"ray: {len(INPUTS) * len(rules)} judgments needed, 0 in the verdict cache" in err
    assert main(ray_argv) == 0 and len(endpoint.bodies) == 2 * sent_in_process  # all cached now: no request


def test_cli_engine_needs_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    from langchain_tag.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["match", "x", "--rules", "r.jsonl", "--engine", "ray"])
    assert exit_info.value.code == 2 and "go with --inputs" in capsys.readouterr().err


# --------------------------------------------------------------------------- pure parts, errors
def test_chat_request_body() -> None:
    request = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]}
    body = chat_request_body(request, model="m", extra_body={"cache_prompt": True})
    assert body == {
        "model": "m",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": 5,
        "max_tokens": 1,
        "cache_prompt": True,
    }
    assert "max_tokens" not in chat_request_body(request, model="m", max_tokens=None)


def test_read_chat_response() -> None:
    ok = json.dumps(
        {
            "choices": [{"message": {"content": "YES"}, "logprobs": openai_logprobs("YES", 0.8)}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 1},
        }
    )
    row = read_chat_response(200, ok)
    assert row["error"] == "" and row["text"] == "YES" and (row["prompt_tokens"], row["completion_tokens"]) == (12, 1)
    assert row["p_yes"] == pytest.approx(0.8) and row["word"] is True
    assert json.loads(row["logprobs"]) == openai_logprobs("YES", 0.8)

    text_only = read_chat_response(200, json.dumps({"choices": [{"message": {"content": "NO"}}]}))
    assert (text_only["error"], text_only["p_yes"], text_only["logprobs"]) == ("", None, "")

    assert read_chat_response(503, "busy")["error"] == "HTTP 503: busy"
    crashed = json.dumps({"error": {"message": "the model crashed", "type": "server_error"}})
    assert read_chat_response(500, crashed)["error"] == "HTTP 500: the model crashed"  # the server's own words
    assert read_chat_response(200, "<html>")["error"].startswith("unreadable response")
    assert read_chat_response(200, json.dumps({"choices": []}))["error"].startswith("unreadable response")
    assert (
        "no YES/NO verdict"
        in read_chat_response(200, json.dumps({"choices": [{"message": {"content": "hm"}}]}))["error"]
    )
    assert read_chat_response(0, "", "request failed: refused")["error"] == "request failed: refused"


def test_row_reading_gives_back_the_postprocess_reading() -> None:
    from langchain_tag.scale.ray_data.requests import row_reading

    ok = json.dumps(
        {
            "choices": [{"message": {"content": "NO"}, "logprobs": openai_logprobs("NO", 0.3)}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 1},
        }
    )
    reading = row_reading(read_chat_response(200, ok))
    assert reading is not None
    assert (reading.word, reading.reply, reading.attempts, reading.prompt_tokens) == (False, "NO", 1, 7)
    assert reading.p_yes == pytest.approx(0.3)
    # A pandas block's null (NaN) is no P(YES); a row left unread (a processor of one's own) or failed has none.
    text_only = row_reading({"text": "YES", "p_yes": math.nan, "word": True, "error": ""})
    assert text_only is not None and (text_only.p_yes, text_only.word) == (None, True)
    assert row_reading({"text": "YES", "p_yes": None, "word": None, "error": ""}) is None
    assert row_reading(read_chat_response(503, "busy")) is None


def test_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch, rules: list[Rule]) -> None:
    monkeypatch.setitem(sys.modules, "ray.data.llm", None)
    retriever = ApplicabilityRetriever(llm=in_process_judge(), rules=rules)
    with pytest.raises(MissingExtraError, match=r'pip install "langchain-tag\[ray\]"'):
        judge_with_ray(retriever, INPUTS, base_url="http://127.0.0.1:9/v1", model=MODEL)


def test_refuses_what_it_cannot_run(rules: list[Rule]) -> None:
    no_cache = ApplicabilityRetriever(llm=in_process_judge(), rules=rules, cache=None)
    with pytest.raises(ValueError, match="verdict cache"):
        judge_with_ray(no_cache, INPUTS, base_url="http://127.0.0.1:9/v1", model=MODEL)
    retriever = ApplicabilityRetriever(llm=in_process_judge(), rules=rules)
    with pytest.raises(ValueError, match="base_url= and model="):
        judge_with_ray(retriever, INPUTS)
    with pytest.raises(ValueError, match="not one string"):
        judge_with_ray(retriever, "one input", base_url="http://127.0.0.1:9/v1", model=MODEL)
    with pytest.raises(ValueError, match=re.escape("max_concurrency must be a whole number >= 1, got 0")):
        judge_with_ray(retriever, INPUTS, base_url="http://127.0.0.1:9/v1", model=MODEL, max_concurrency=0)
    with pytest.raises(ValueError, match=re.escape("max_attempts must be a whole number >= 1, got 0")):
        judge_with_ray(retriever, INPUTS, base_url="http://127.0.0.1:9/v1", model=MODEL, max_attempts=0)


def test_a_decision_model_is_refused_with_where_it_runs(rules: list[Rule]) -> None:
    from langchain_core.decisions import BaseDecisionModel, ClassifierResponse, NoulAnswer

    class Decisions(BaseDecisionModel):
        model: str = "fake-decisions"

        @property
        def _provider(self) -> str:
            return "fake"

        def _classify(self, state: Any, questions: dict[str, Any]) -> ClassifierResponse:
            return ClassifierResponse(
                model=self.model, answers={q: NoulAnswer(type="noul", noul=0.5) for q in questions}
            )

    retriever = ApplicabilityRetriever(llm=Decisions(), rules=rules)
    with pytest.raises(ValueError, match="decision model judges each input in one request in process"):
        judge_with_ray(retriever, INPUTS, base_url="http://127.0.0.1:9/v1", model=MODEL)


@pytest.mark.parametrize(("timeout", "expected"), [(2.0, 2.0), (None, None)])
def test_the_endpoint_keeps_the_judge_models_deadline(
    timeout: float | None, expected: float | None, rules: list[Rule]
) -> None:
    """``match --engine ray`` sends with the deadline the chat judge has (``LANGCHAIN_TAG_TIMEOUT``)."""
    from langchain_openai import ChatOpenAI

    from langchain_tag.scale.ray_data.job import judge_endpoint

    llm = ChatOpenAI(model=MODEL, base_url="http://127.0.0.1:9/v1", api_key="k", timeout=timeout)
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, cache=InMemoryVerdictCache())
    endpoint = judge_endpoint(retriever, base_url=None, model=None, api_key=None, extra_body=None)
    assert endpoint["timeout"] == expected


def test_a_base_url_with_credentials_or_a_query_is_sent_to_as_the_in_process_client_does() -> None:
    import base64

    from langchain_tag.scale.ray_data.processor import chat_completions_request

    url, headers = chat_completions_request("http://user:p%40ss@127.0.0.1:8080/v1/?api-key=s3", api_key="k")
    assert url == "http://127.0.0.1:8080/v1/chat/completions?api-key=s3"
    assert headers == {"Authorization": "Basic " + base64.b64encode(b"user:p@ss").decode()}
    assert chat_completions_request("http://127.0.0.1:8080/v1", api_key="k") == (
        "http://127.0.0.1:8080/v1/chat/completions",
        {"Authorization": "Bearer k"},
    )
    assert chat_completions_request("http://h/v1/")[1] == {}


def test_cli_engines_write_the_same_records_when_an_input_fails_completely(
    local_ray: None,
    endpoint: FakeEndpoint,
    rules: list[Rule],
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An input every request of which fails (the endpoint answers 500) gets the same record from both engines."""
    from langchain_openai import ChatOpenAI

    import langchain_tag.local.models as models
    from langchain_tag.cli.main import EXIT_JUDGMENTS_FAILED, main
    from langchain_tag.rules import save_rules

    def judge_llm(**kw: Any) -> ChatOpenAI:
        return ChatOpenAI(base_url=endpoint.base_url, model=MODEL, api_key=SecretStr("sk-test"), max_retries=0)

    monkeypatch.setattr(models, "get_chat_model", judge_llm)
    inputs = tmp_path / "inputs.jsonl"
    texts = [INPUTS[0], f"x = 1\n{CRASH}", INPUTS[1]]
    inputs.write_text("".join(json.dumps({"id": f"in-{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    argv = ["match", "--inputs", str(inputs), "--rules", str(save_rules(rules, tmp_path / "rules.jsonl")), "--raw"]

    process = [*argv, "-o", str(tmp_path / "process.jsonl"), "--verdicts", str(tmp_path / "p.sqlite")]
    ray = [*argv, "-o", str(tmp_path / "ray.jsonl"), "--verdicts", str(tmp_path / "r.sqlite"), "--engine", "ray"]
    assert main(process) == EXIT_JUDGMENTS_FAILED
    assert main(ray) == EXIT_JUDGMENTS_FAILED

    written = (tmp_path / "ray.jsonl").read_text()
    assert written == (tmp_path / "process.jsonl").read_text()
    failed = json.loads(written.splitlines()[1])
    assert failed["id"] == "in-1" and failed["matched"] == []
    assert {f["rule_id"] for f in failed["failed"]} == {r.rule_id for r in rules}
    assert "RayRequestError" not in written


def test_ray_keeps_max_concurrency_requests_in_flight_and_no_more(
    local_ray: None, endpoint: FakeEndpoint, rules: list[Rule], capfd: pytest.CaptureFixture[str]
) -> None:
    """A worker sends its batches' requests side by side, up to ``max_concurrency`` (a hard cap), quietly."""
    endpoint.delay = 0.3
    _, for_ray, _ = twin_retrievers(rules, calibration=None)
    texts = [f"{text}\n# {i}" for i, text in enumerate(INPUTS * 3)]  # 9 inputs x 5 rules: 45 requests
    capfd.readouterr()

    run = judge_with_ray(
        for_ray, texts, base_url=endpoint.base_url, model=MODEL, batch_size=4, max_concurrency=4, retry_backoff=0
    )

    assert run.sent == len(endpoint.bodies) == len(texts) * len(rules) and not run.failures
    assert endpoint.most_in_flight == 4  # side by side (one at a time before), never above the cap
    err = capfd.readouterr().err
    assert " INFO " not in err and "Starting execution" not in err  # Ray's INFO logging kept out of the terminal


def test_ray_workers_share_the_cap() -> None:
    """Each of the most workers gets an equal share of ``max_concurrency`` (at least one request)."""
    from langchain_tag.scale.ray_data.job import _blocks, _most_workers

    assert [_most_workers(c) for c in (1, 3, (1, 4))] == [1, 3, 4]
    assert _blocks(400, 16, 1) == 2 and _blocks(100, 16, 1) == 1  # 16 batches a block at most
    assert _blocks(20, 16, 4) == 2 and _blocks(100, 16, 4) == 4  # a block per worker, no more than the batches
