"""Judging with a LangChain decision model: every rule of an input one question of a single request.

The fakes answer from the text alone, never from call order: P(yes) of a rule
is high when its id (``R3``) is listed in the input, low otherwise, and a
little different for every rule so the returned order is fixed. The same
numbers come from three places: a fake ``BaseDecisionModel``, a chat model
whose first-token logprobs give them, and a loopback fake of OpenAI's
``/v1/decisions`` endpoint behind ``OpenAIDecisions``.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import pytest_socket
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.decisions import BaseDecisionModel, ClassifierResponse, Noul, NoulAnswer, Question, State
from langchain_core.documents import Document
from langchain_openai.decisions import OpenAIDecisions  # importing it lets the package recognise OpenAIDecisions
from pydantic import PrivateAttr

from langchain_tag.errors import ProviderError
from langchain_tag.judging import decision_interfaces
from langchain_tag.judging.chat import ChatJudge
from langchain_tag.judging.decision_judge import DecisionJudge, instructions
from langchain_tag.judging.prompts import JUDGE_PROMPTS
from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.bulk import amatch_corpus, match_corpus
from langchain_tag.testing import FakeChatModel, judged_rule_id
from tests.helpers.loopback_server import LoopbackServer, as_json

pytestmark = pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")

RULES = [
    Rule(
        rule_id=f"R{n}",
        rule_name=f"rule number {n}",
        condition=f"the input shows pattern number {n}",
        action=f"fix pattern {n}",
    )
    for n in range(1, 13)
]
RULE_IDS = [r.rule_id for r in RULES]

INPUTS = [
    "def f():\n    pass  # shows R3 and R7",
    "x = [1, 2]  # shows R1, R5 and R12",
    "a plain sentence that lists no rule at all",
    "R2 R4 R6 R8 R10",
]

_LISTED = re.compile(r"\bR\d+\b")
_RULE_LINE = re.compile(r"^\(rule (\S+)\)$", re.MULTILINE)
_CHAT_INPUT = re.compile(r"INPUT:\n<<<\n(.*?)\n>>>", re.DOTALL)


def p_yes(state: str, rule_id: str) -> float:
    """P(yes) of a rule for an input: above 0.5 when the input lists the rule's id, below otherwise."""
    n = int(rule_id[1:])
    return 0.55 + 0.03 * n if rule_id in _LISTED.findall(state) else 0.04 + 0.02 * n


def expected_ids(state: str) -> list[str]:
    """The rule ids an input matches at raw P(yes) >= 0.5, highest P(yes) first."""
    found = [r for r in RULE_IDS if p_yes(state, r) >= 0.5]
    return sorted(found, key=lambda r: -p_yes(state, r))


def rule_of(text: str) -> str:
    """The rule id a question's instructions name (``(rule R3)``)."""
    found = _RULE_LINE.search(text)
    assert found is not None, text
    return found.group(1)


# --------------------------------------------------------------------------- fakes
class FakeDecisions(BaseDecisionModel):
    """A decision model answering each ``Noul`` from the state and the question's instructions.

    Attributes:
        omit: Rule ids whose questions get no answer in the response.
    """

    model: str = "fake-decisions"
    omit: frozenset[str] = frozenset()

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _asked: list[tuple[str, dict[str, str]]] = PrivateAttr(default_factory=list)

    @property
    def _provider(self) -> str:
        return "fake"

    @property
    def requests(self) -> int:
        with self._lock:
            return len(self._asked)

    @property
    def asked(self) -> list[tuple[str, dict[str, str]]]:
        """Every request received: its state and its questions' instructions by name."""
        with self._lock:
            return list(self._asked)

    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        assert isinstance(state, str)
        texts: dict[str, str] = {}
        for name, question in questions.items():
            assert isinstance(question, Noul)
            assert isinstance(question.instructions, str)
            texts[name] = question.instructions
        with self._lock:
            self._asked.append((state, texts))
        answers: dict[str, Any] = {
            name: NoulAnswer(type="noul", noul=p_yes(state, rule_of(text)))
            for name, text in texts.items()
            if rule_of(text) not in self.omit
        }
        usage = {"input_tokens": len(state.split()) + sum(len(t.split()) for t in texts.values()), "output_tokens": 1}
        return ClassifierResponse(model=self.model, answers=answers, usage=usage)


def chat_judge() -> FakeChatModel:
    """A chat judge whose first-token logprobs give the same P(YES) per (input, rule) as the decision fakes."""

    def respond(prompt: str) -> tuple[str, float]:
        found = _CHAT_INPUT.search(prompt)
        rule_id = judged_rule_id(prompt)
        assert found is not None and rule_id is not None, prompt
        p = p_yes(found.group(1), rule_id)
        return ("YES" if p >= 0.5 else "NO"), p

    return FakeChatModel(respond=respond, with_logprobs=True)


def view(docs: Sequence[Document]) -> list[tuple[Any, ...]]:
    """What a retrieval returned: each document's id, rule id, verdict, raw P(YES) and score (rounded)."""
    return [
        (
            d.id,
            d.metadata["rule_id"],
            d.metadata["tag_verdict"],
            round(d.metadata["tag_p_yes"], 9),
            round(d.metadata["tag_score"], 9),
            d.metadata.get("tag_failed_rule_ids"),
        )
        for d in docs
    ]


def decision_retriever(llm: Any, **options: Any) -> ApplicabilityRetriever:
    return ApplicabilityRetriever(llm=llm, rules=RULES, **options)


def chat_retriever() -> ApplicabilityRetriever:
    return ApplicabilityRetriever(llm=chat_judge(), rules=RULES, calibration=None)


# --------------------------------------------------------------------------- the decision judge
def test_the_retriever_picks_the_decision_judge() -> None:
    assert isinstance(decision_retriever(FakeDecisions()).judge, DecisionJudge)
    assert isinstance(chat_retriever().judge, ChatJudge)


@pytest.mark.parametrize(
    ("model", "calibration"),
    [
        ("fake-decisions", None),
        ("fake-decisions", "default"),
        # A family with a shipped chat calibration: a decision judge's scores are not the chat judge's.
        ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "default"),
    ],
)
def test_invoke_one_request_the_chat_judges_documents(model: str, calibration: Any) -> None:
    fake = FakeDecisions(model=model)
    retriever = decision_retriever(fake, calibration=calibration)
    assert retriever.judge.calibration is None
    assert retriever.judge.decision_threshold == 0.5

    docs = retriever.invoke(INPUTS[0])

    assert fake.requests == 1
    assert [d.id for d in docs] == [d.metadata["rule_id"] for d in docs] == expected_ids(INPUTS[0]) == ["R7", "R3"]
    assert view(docs) == view(chat_retriever().invoke(INPUTS[0]))
    assert all(d.metadata["tag_score"] == d.metadata["tag_p_yes"] for d in docs)  # raw P(YES) decides

    state, questions = fake.asked[0]
    assert state == INPUTS[0]
    assert list(questions) == RULE_IDS  # one question per rule, named by its id
    assert questions == {r.rule_id: instructions(JUDGE_PROMPTS["applicability"], r) for r in RULES}


async def test_ainvoke_one_request_the_chat_judges_documents() -> None:
    fake = FakeDecisions()
    docs = await decision_retriever(fake, calibration=None).ainvoke(INPUTS[1])
    assert fake.requests == 1
    assert [d.id for d in docs] == expected_ids(INPUTS[1]) == ["R12", "R5", "R1"]
    assert view(docs) == view(await chat_retriever().ainvoke(INPUTS[1]))


def test_batch_one_request_per_input() -> None:
    fake = FakeDecisions()
    found = decision_retriever(fake).batch(INPUTS[:3])
    assert fake.requests == 3
    assert sorted(state for state, _ in fake.asked) == sorted(INPUTS[:3])
    assert [[d.id for d in docs] for docs in found] == [expected_ids(q) for q in INPUTS[:3]]
    assert [view(docs) for docs in found] == [view(docs) for docs in chat_retriever().batch(INPUTS[:3])]


def test_the_same_input_again_is_answered_by_the_verdict_cache() -> None:
    fake = FakeDecisions()
    retriever = decision_retriever(fake)
    first = retriever.invoke(INPUTS[1])
    again = retriever.invoke(INPUTS[1])
    assert fake.requests == 1
    assert view(again) == view(first)
    assert retriever.last_match is not None and retriever.last_match.cache_hits == len(RULES)
    assert retriever.last_match.calls == 0


def test_max_questions_splits_the_rules_into_several_requests() -> None:
    fake = FakeDecisions()
    result = DecisionJudge(fake, max_questions=5, calibration=None).judge(INPUTS[3], RULES)

    assert fake.requests == 3
    assert sorted(len(questions) for _, questions in fake.asked) == [2, 5, 5]
    assert sorted(name for _, questions in fake.asked for name in questions) == sorted(RULE_IDS)
    assert result.calls == 3
    assert result.prompt_tokens > 0 and result.completion_tokens == 3

    whole = DecisionJudge(FakeDecisions(), calibration=None).judge(INPUTS[3], RULES)
    assert [(j.rule_id, j.applies, j.p_yes) for j in result.judgments] == [
        (j.rule_id, j.applies, j.p_yes) for j in whole.judgments
    ]
    assert [j.rule_id for j in result.matched] == expected_ids(INPUTS[3])


def test_the_retriever_keeps_the_default_of_64_questions() -> None:
    judge = decision_retriever(FakeDecisions()).judge
    assert isinstance(judge, DecisionJudge) and judge.max_questions == 64
    with pytest.raises(ValueError, match="max_questions"):
        DecisionJudge(FakeDecisions(), max_questions=0)


def test_a_question_missing_from_the_response_is_one_failed_judgment() -> None:
    fake = FakeDecisions(omit=frozenset({"R4"}))
    retriever = decision_retriever(fake)

    result = retriever.match(INPUTS[3])  # lists R4: had it been answered, it would match

    assert [j.rule_id for j in result.failed] == ["R4"]
    missing = result.judgments[RULE_IDS.index("R4")]
    assert missing.error and not missing.applies and missing.p_yes is None
    assert [j.rule_id for j in result.matched] == [r for r in expected_ids(INPUTS[3]) if r != "R4"]
    docs = retriever.invoke(INPUTS[3])
    assert [d.id for d in docs] == ["R10", "R8", "R6", "R2"]
    assert {d.metadata["tag_failed_rule_ids"] for d in docs} == {"R4"}


def test_a_question_missing_from_one_of_several_requests_fails_that_judgment_only() -> None:
    fake = FakeDecisions(omit=frozenset({"R4"}))
    result = DecisionJudge(fake, max_questions=5, calibration=None).judge(INPUTS[3], RULES)
    assert [j.rule_id for j in result.failed] == ["R4"]
    assert [j.rule_id for j in result.matched] == [r for r in expected_ids(INPUTS[3]) if r != "R4"]


def test_the_adapter_refuses_a_response_of_the_wrong_type() -> None:
    with pytest.raises(TypeError, match="not a decision model response"):
        decision_interfaces.probabilities(object())


# --------------------------------------------------------------------------- bulk jobs resume from the verdict cache
def test_match_corpus_resumes_from_the_sqlite_cache(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    first_fake = FakeDecisions()
    first = list(
        match_corpus(INPUTS, decision_retriever(first_fake, cache=SQLiteVerdictCache(path)), show_progress=False)
    )
    assert first_fake.requests == len(INPUTS)
    assert [[m["rule_id"] for m in record["matched"]] for record in first] == [expected_ids(q) for q in INPUTS]
    assert all(record["failed"] == [] for record in first)

    again_fake = FakeDecisions()
    again = list(
        match_corpus(INPUTS, decision_retriever(again_fake, cache=SQLiteVerdictCache(path)), show_progress=False)
    )
    assert again_fake.requests == 0
    assert again == first


async def test_amatch_corpus_resumes_from_the_sqlite_cache(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    first_fake = FakeDecisions()
    retriever = decision_retriever(first_fake, cache=SQLiteVerdictCache(path))
    first = [record async for record in amatch_corpus(INPUTS, retriever, show_progress=False)]
    assert first_fake.requests == len(INPUTS)

    again_fake = FakeDecisions()
    retriever = decision_retriever(again_fake, cache=SQLiteVerdictCache(path))
    again = [record async for record in amatch_corpus(INPUTS, retriever, show_progress=False)]
    assert again_fake.requests == 0
    assert again == first
    assert first == list(match_corpus(INPUTS, decision_retriever(FakeDecisions()), show_progress=False))


# --------------------------------------------------------------------------- OpenAIDecisions against a loopback server
LOOPBACK = ["127.0.0.1", "::1"]


class FakeDecisionsServer(LoopbackServer):
    """OpenAI's ``POST /v1/decisions`` on 127.0.0.1, answering each predicate from its instructions and the input.

    Attributes:
        bodies: Every request body received.
        paths: Every request path received.
        twice: Rule ids whose question is answered a second time, after all the others, with this P(yes)
            (``None``: the same answer again).
        answered_by: The model every response names (``None``: the one asked for).
        stall: Seconds each request waits before it is answered.
    """

    def __init__(self) -> None:
        super().__init__(lambda path, body: as_json(*self.reply(path, body)))
        self.twice: dict[str, float | None] = {}
        self.answered_by: str | None = None
        self.stall = 0.0

    def reply(self, path: str, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        time.sleep(self.stall)
        if path != "/v1/decisions":
            return 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}}
        state = body["input"]
        answers = [
            {"name": q["name"], "type": "predicate", "probability": p_yes(state, rule_of(q["instructions"]))}
            for q in body["questions"]
        ]
        answers += [
            {**a, "probability": a["probability"] if self.twice[a["name"]] is None else self.twice[a["name"]]}
            for a in list(answers)
            if a["name"] in self.twice
        ]
        usage = {"input_tokens": len(state.split()), "output_tokens": len(answers)}
        return 200, {"model": self.answered_by or body["model"], "answers": answers, "usage": usage}


def use_decisions_server(server: FakeDecisionsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the package's OpenAI-compatible settings (the CLI's) at the fake Decisions API."""
    for name, value in {
        "LANGCHAIN_TAG_PROVIDER": "openai",
        "LANGCHAIN_TAG_BASE_URL": server.base_url,
        "LANGCHAIN_TAG_MODEL": "fake-luna",
        "LANGCHAIN_TAG_API_KEY": "sk-test",
        "LANGCHAIN_TAG_MAX_RETRIES": "0",
    }.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def decisions_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDecisionsServer]:
    """The fake endpoint, with connections allowed to the loopback address only (the test is ``enable_socket``)."""
    pytest_socket.socket_allow_hosts(LOOPBACK, allow_unix_socket=True)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = FakeDecisionsServer()
    yield server
    server.close()


def openai_decisions(server: FakeDecisionsServer, path: str = "") -> OpenAIDecisions:
    """An ``OpenAIDecisions`` on the fake (``path``: below its base URL), without client retries."""
    return OpenAIDecisions(model="fake-luna", api_key="sk-test", base_url=server.base_url + path, max_retries=0)


@pytest.mark.enable_socket
async def test_openai_decisions_end_to_end(decisions_server: FakeDecisionsServer) -> None:
    llm = openai_decisions(decisions_server)
    assert decision_interfaces.is_decision_model(llm)
    retriever = decision_retriever(llm)
    assert isinstance(retriever.judge, DecisionJudge)

    found = retriever.batch(INPUTS[:3])
    found.append(await retriever.ainvoke(INPUTS[3]))

    assert len(decisions_server.bodies) == len(INPUTS)  # one POST per input
    assert set(decisions_server.paths) == {"/v1/decisions"}
    assert sorted(body["input"] for body in decisions_server.bodies) == sorted(INPUTS)
    for body in decisions_server.bodies:
        assert body["model"] == "fake-luna"
        assert [q["type"] for q in body["questions"]] == ["predicate"] * len(RULES)
        assert [q["name"] for q in body["questions"]] == RULE_IDS
        assert [rule_of(q["instructions"]) for q in body["questions"]] == RULE_IDS
        assert {q["name"]: q["instructions"] for q in body["questions"]} == {
            r.rule_id: instructions(JUDGE_PROMPTS["applicability"], r) for r in RULES
        }

    assert [[d.id for d in docs] for docs in found] == [expected_ids(q) for q in INPUTS]
    reference = decision_retriever(FakeDecisions())
    assert [view(docs) for docs in found] == [view(reference.invoke(q)) for q in INPUTS]

    again = retriever.invoke(INPUTS[0])  # from the verdict cache: no POST
    assert len(decisions_server.bodies) == len(INPUTS)
    assert view(again) == view(found[0])


@pytest.mark.enable_socket
def test_match_inputs_with_decisions_resumes_from_the_verdict_cache(
    decisions_server: FakeDecisionsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_tag.cli.main import main
    from langchain_tag.rules import save_rules

    use_decisions_server(decisions_server, monkeypatch)
    rules, inputs = tmp_path / "rules.jsonl", tmp_path / "inputs.jsonl"
    save_rules(RULES, rules)
    inputs.write_text("".join(json.dumps({"id": f"in-{i}", "text": q}) + "\n" for i, q in enumerate(INPUTS)))
    command = ["match", "--inputs", str(inputs), "--rules", str(rules), "--raw", "--decisions"]
    verdicts = ["--verdicts", str(tmp_path / "v.sqlite")]
    assert main([*command, *verdicts, "-o", str(tmp_path / "first.jsonl")]) == 0
    assert len(decisions_server.bodies) == len(INPUTS)  # one request per input, every rule in it
    assert all(len(body["questions"]) == len(RULES) for body in decisions_server.bodies)
    assert main([*command, *verdicts, "-o", str(tmp_path / "again.jsonl")]) == 0
    assert len(decisions_server.bodies) == len(INPUTS)  # the rerun asked nothing: every verdict was cached
    first = (tmp_path / "first.jsonl").read_text()
    assert first == (tmp_path / "again.jsonl").read_text()
    records = [json.loads(line) for line in first.splitlines()]
    assert [[m["rule_id"] for m in r["matched"]] for r in records] == [expected_ids(q) for q in INPUTS]


@pytest.mark.enable_socket
@pytest.mark.parametrize(("answered", "same"), [("fake-luna-2025-01-31", True), ("another-luna", False)])
def test_answers_another_decision_model_gave_are_kept_apart_and_warned_of(
    answered: str, same: bool, decisions_server: FakeDecisionsServer, caplog: pytest.LogCaptureFixture
) -> None:
    decisions_server.answered_by = answered
    retriever = decision_retriever(openai_decisions(decisions_server))
    with caplog.at_level("WARNING", logger="langchain_tag"):
        first = retriever.invoke(INPUTS[0])
        again = retriever.invoke(INPUTS[0])
    assert view(first) == view(again) and [d.id for d in first] == expected_ids(INPUTS[0])
    assert len(decisions_server.bodies) == (1 if same else 2)  # another model's answers are not served as fake-luna's
    warned = [r.getMessage() for r in caplog.records if "another-luna" in r.getMessage()]
    assert len(warned) == (0 if same else 1)
    assert same or ("'fake-luna'" in warned[0] and "kept as 'another-luna'" in warned[0])


@pytest.mark.enable_socket
def test_match_inputs_with_decisions_does_not_store_another_models_answers(
    decisions_server: FakeDecisionsServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from langchain_tag.cli.main import main
    from langchain_tag.rules import save_rules

    use_decisions_server(decisions_server, monkeypatch)
    decisions_server.answered_by = "another-luna"
    rules, inputs = tmp_path / "rules.jsonl", tmp_path / "inputs.jsonl"
    save_rules(RULES, rules)
    inputs.write_text("".join(json.dumps({"id": f"in-{i}", "text": q}) + "\n" for i, q in enumerate(INPUTS)))
    command = ["match", "--inputs", str(inputs), "--rules", str(rules), "--raw", "--decisions"]
    verdicts = ["--verdicts", str(tmp_path / "v.sqlite")]
    with caplog.at_level("WARNING", logger="langchain_tag"):
        assert main([*command, *verdicts, "-o", str(tmp_path / "first.jsonl")]) == 0
        assert main([*command, *verdicts, "-o", str(tmp_path / "again.jsonl")]) == 0
    assert len(decisions_server.bodies) == 2 * len(INPUTS)  # the rerun found none stored as fake-luna's
    assert any("another-luna" in r.getMessage() for r in caplog.records)


@pytest.mark.enable_socket
def test_the_decisions_client_the_cli_builds_honours_the_chat_judges_timeout(
    decisions_server: FakeDecisionsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_tag.cli.bulk import decisions_model
    from langchain_tag.local.models import ModelConfig

    use_decisions_server(decisions_server, monkeypatch)
    monkeypatch.setenv("LANGCHAIN_TAG_TIMEOUT", "0.5")
    decisions_server.stall = 5.0
    model = decisions_model()
    assert model.timeout == ModelConfig.from_env().timeout == 0.5
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"timed out|Timeout"):
        decision_retriever(model, strict=True).invoke(INPUTS[0])
    assert time.monotonic() - started < 3.0  # the request's deadline, not the stalled endpoint's pace


def test_the_batch_api_export_refuses_a_decision_model_and_says_where_it_runs(tmp_path: Path) -> None:
    from langchain_tag.scale.batch_api import BatchError, export_openai_batch

    with pytest.raises(BatchError, match="a decision model judges each input in one request in process"):
        export_openai_batch((decision_retriever(FakeDecisions()), INPUTS), tmp_path / "b", model_name="x")


class _SlowDecisions(FakeDecisions):
    """A decision model whose requests take a while, counting how many are in flight at once."""

    _now: int = PrivateAttr(default=0)
    _most: int = PrivateAttr(default=0)

    @property
    def most_in_flight(self) -> int:
        return self._most

    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        import time

        with self._lock:
            self._now += 1
            self._most = max(self._most, self._now)
        try:
            time.sleep(0.05)
            return super()._classify(state, questions)
        finally:
            with self._lock:
                self._now -= 1


@pytest.mark.parametrize("cap", [4, 8])
def test_a_decision_job_caps_requests_in_flight_not_questions(cap: int) -> None:
    model = _SlowDecisions()
    inputs = [f"input {i} lists R{i % 12 + 1}" for i in range(16)]
    records = list(match_corpus(inputs, decision_retriever(model), max_concurrency=cap, show_progress=False))
    assert len(records) == 16 and model.requests == 16
    assert model.most_in_flight == cap


# --------------------------------------------------------------------------- a question the body answers twice
async def judge_once(judge: DecisionJudge, text: str, asynchronous: bool) -> Any:
    return await judge.ajudge(text, RULES) if asynchronous else judge.judge(text, RULES)


@pytest.mark.enable_socket
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_question_answered_twice_differently_is_a_conflict_not_the_later_answer(
    decisions_server: FakeDecisionsServer, asynchronous: bool
) -> None:
    decisions_server.twice = {"R4": 0.02}  # the input lists R4: its first answer is P(yes) 0.67, the second 0.02
    judge = DecisionJudge(openai_decisions(decisions_server), calibration=None, cache=SQLiteVerdictCache(":memory:"))

    result = await judge_once(judge, INPUTS[3], asynchronous)

    assert [j.rule_id for j in result.failed] == ["R4"]
    conflict = result.judgments[RULE_IDS.index("R4")]
    assert conflict.p_yes is None and not conflict.applies
    assert conflict.error is not None and "R4" in conflict.error and "twice" in conflict.error
    assert "0.67" in conflict.error and "0.02" in conflict.error
    assert [j.rule_id for j in result.matched] == [r for r in expected_ids(INPUTS[3]) if r != "R4"]

    decisions_server.twice = {}  # neither answer was kept: the pair is asked again, and only that pair
    again = await judge_once(judge, INPUTS[3], asynchronous)
    assert [q["name"] for q in decisions_server.bodies[-1]["questions"]] == ["R4"]
    assert [j.rule_id for j in again.matched] == expected_ids(INPUTS[3]) and not again.failed


@pytest.mark.enable_socket
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_question_answered_twice_alike_is_one_answer(
    decisions_server: FakeDecisionsServer, asynchronous: bool
) -> None:
    decisions_server.twice = {"R4": None, "R5": None}
    judge = DecisionJudge(openai_decisions(decisions_server), calibration=None)

    result = await judge_once(judge, INPUTS[3], asynchronous)

    assert not result.failed
    assert [j.rule_id for j in result.matched] == expected_ids(INPUTS[3])
    assert result.judgments[RULE_IDS.index("R4")].p_yes == pytest.approx(p_yes(INPUTS[3], "R4"))


@pytest.mark.enable_socket
def test_every_question_answered_twice_differently_fails_the_request_and_says_so(
    decisions_server: FakeDecisionsServer,
) -> None:
    decisions_server.twice = {r: 0.5 for r in RULE_IDS}
    judge = DecisionJudge(openai_decisions(decisions_server), calibration=None, max_attempts=2)
    with pytest.raises(ProviderError, match=r"answered R1 twice, differently \(P\(yes\)=0.06 and P\(yes\)=0.5\)"):
        judge.judge(INPUTS[0], RULES)
    assert len(decisions_server.bodies) == 2  # a response with no usable answer is asked again, like any other


class _Runs(BaseCallbackHandler):
    """A user's handler: what it is told of each decision request's run."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        metadata = kwargs.get("metadata") or {}
        self.seen.append(
            ("start", kwargs.get("name"), kwargs.get("run_type"), tuple(kwargs.get("tags") or ()),
             metadata.get("ls_model_name"), tuple(metadata.get("tag_rule_ids") or ()), sorted(inputs["questions"]))
        )  # fmt: skip

    def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        self.seen.append(("end", type(outputs).__name__, sorted(outputs.predicates)))


async def runs_seen(judge: DecisionJudge, asynchronous: bool) -> list[tuple[Any, ...]]:
    """What a handler passed to the judge is told while it judges ``INPUTS[1]``."""
    handler = _Runs()
    if asynchronous:
        await judge.ajudge(INPUTS[1], RULES, callbacks=[handler])
    else:
        judge.judge(INPUTS[1], RULES, callbacks=[handler])
    return sorted(handler.seen, key=repr)


@pytest.mark.enable_socket
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_the_callers_callbacks_see_each_request_as_invoke_shows_it(
    decisions_server: FakeDecisionsServer, asynchronous: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_tag.judging import _openai_decisions

    checked = DecisionJudge(openai_decisions(decisions_server), calibration=None, max_questions=5)
    assert isinstance(checked.runner.llm, _openai_decisions.CheckedDecisions)
    seen = await runs_seen(checked, asynchronous)

    monkeypatch.setattr(_openai_decisions, "_missing_hook", lambda model: "OpenAIDecisions._payload")
    through_invoke = DecisionJudge(openai_decisions(decisions_server), calibration=None, max_questions=5)
    assert isinstance(through_invoke.runner.llm, OpenAIDecisions)
    assert seen == await runs_seen(through_invoke, asynchronous)

    assert len(seen) == 2 * 3  # 12 rules, 5 questions a request: 3 runs, each started and ended
    starts = [event for event in seen if event[0] == "start"]
    assert {(e[1], e[2], e[4]) for e in starts} == {
        ("tag_judge 5 questions", "llm", "fake-luna"),
        ("tag_judge 2 questions", "llm", "fake-luna"),
    }
    assert all("tag_judge" in e[3] for e in starts)
    assert [e[1] for e in seen if e[0] == "end"] == ["DecisionResponse"] * 3


@pytest.mark.enable_socket
def test_a_changed_hook_sends_through_invoke_and_says_which(
    decisions_server: FakeDecisionsServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(OpenAIDecisions, "_client", None)  # the client no longer made lazily
    with caplog.at_level("WARNING", logger="langchain_tag.judging._openai_decisions"):
        judge = DecisionJudge(openai_decisions(decisions_server), calibration=None)
    assert isinstance(judge.runner.llm, OpenAIDecisions)
    assert "OpenAIDecisions._client.post is missing or has changed" in caplog.text


@pytest.mark.enable_socket
@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_fault_is_raised_as_invoke_raises_it_and_not_sent_again(
    decisions_server: FakeDecisionsServer, asynchronous: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_tag.judging import _openai_decisions

    def error_of_a_judge() -> str:
        judge = DecisionJudge(openai_decisions(decisions_server, "/gone"), calibration=None, max_attempts=3)
        with pytest.raises(ProviderError) as raised:
            asyncio.run(judge.ajudge(INPUTS[0], RULES)) if asynchronous else judge.judge(INPUTS[0], RULES)
        return str(raised.value)

    checked = error_of_a_judge()
    assert len(decisions_server.bodies) == 1  # a 404 is permanent: asked once
    monkeypatch.setattr(_openai_decisions, "_missing_hook", lambda model: "OpenAIDecisions._payload")
    assert checked == error_of_a_judge()
    assert "HTTP 404: no route /v1/gone/decisions" in checked
