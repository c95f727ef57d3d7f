"""The package's decision model: Noul questions answered by a chat model, one token each."""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.decisions import BaseDecisionModel, Choice, ClassifierResponse, Noul, NoulCriteria, Score
from pydantic import ValidationError

from langchain_tag.errors import ProviderError
from langchain_tag.judging.chat_decision_model import ChatDecisionModel
from langchain_tag.judging.results import JudgmentsFailedError
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.ranges import MAX_ATTEMPTS, MAX_CONCURRENCY, Range
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, fake_judge, judged_rule_id


def _respond(prompt: str) -> str | tuple[str, float]:
    """P(YES) from the question and the input alone: 0.9 when the input holds the question's last word."""
    question = prompt.split("QUESTION: ", 1)[1]
    word = question.split("?")[0].split()[-1]
    state = prompt.split("<<<\n", 1)[1].split("\n>>>", 1)[0]
    return ("YES", 0.9) if word in state else ("NO", 0.2)


QUESTIONS = {
    "prints": Noul(instructions="Does the code call print?"),
    "loops": Noul(instructions="Does the code use while?"),
    "imports": Noul(instructions="Does the code use import?"),
}
STATE = "import os\nprint(os.sep)"


def test_one_noul_answer_per_question_one_chat_call_each() -> None:
    chat = FakeChatModel(respond=_respond, with_logprobs=True)
    decisions = ChatDecisionModel(llm=chat)
    assert isinstance(decisions, BaseDecisionModel)
    response = decisions.invoke({"state": STATE, "questions": QUESTIONS})
    assert isinstance(response, ClassifierResponse)
    assert set(response.nouls) == set(QUESTIONS) and chat.calls == len(QUESTIONS)
    assert response.model == decisions.model != ""


def test_the_yes_probabilities_and_the_cache() -> None:
    chat = FakeChatModel(respond=_respond, with_logprobs=True)
    decisions = ChatDecisionModel(llm=chat, cache=InMemoryVerdictCache())
    first = decisions.invoke({"state": STATE, "questions": QUESTIONS})
    assert {n: round(a.noul, 2) for n, a in first.nouls.items()} == {"prints": 0.9, "loops": 0.2, "imports": 0.9}
    again = decisions.invoke({"state": STATE, "questions": QUESTIONS})
    assert chat.calls == len(QUESTIONS)  # every question answered from the verdict cache
    assert again.nouls == first.nouls


async def test_async_twin_answers_the_same() -> None:
    chat = FakeChatModel(respond=_respond, with_logprobs=True)
    sync = ChatDecisionModel(llm=chat, cache=None).invoke({"state": STATE, "questions": QUESTIONS})
    async_ = await ChatDecisionModel(llm=chat, cache=None).ainvoke({"state": STATE, "questions": QUESTIONS})
    assert async_.nouls == sync.nouls


def test_a_text_verdict_without_logprobs_is_certain() -> None:
    chat = FakeChatModel(respond=lambda p: "YES" if "call print" in p else "NO")
    response = ChatDecisionModel(llm=chat).invoke({"state": STATE, "questions": QUESTIONS})
    assert {n: a.noul for n, a in response.nouls.items()} == {"prints": 1.0, "loops": 0.0, "imports": 0.0}


def test_criteria_reach_the_prompt_and_the_cache_key() -> None:
    chat = FakeChatModel(respond=lambda p: "YES" if "YES means: a call of print" in p else "NO")
    decisions = ChatDecisionModel(llm=chat)
    plain = Noul(instructions="Does it print?")
    explained = Noul(instructions="Does it print?", criteria=NoulCriteria(true="a call of print", false="no call"))
    response = decisions.invoke({"state": STATE, "questions": {"a": plain, "b": explained}})
    assert (response.nouls["a"].noul, response.nouls["b"].noul) == (0.0, 1.0)


def test_other_question_types_are_refused_by_name() -> None:
    decisions = ChatDecisionModel(llm=FakeChatModel(respond=lambda p: "YES"))
    questions = {
        "ok": Noul(instructions="Is it code?"),
        "team": Choice(instructions="Which team?", criteria={"a": "A", "b": "B"}),
        "level": Score(instructions="How bad?", criteria=["fine", "bad"]),
    }
    with pytest.raises(ValueError, match=r"Noul .*team \(Choice\), level \(Score\)"):
        decisions.invoke({"state": STATE, "questions": questions})


def test_a_question_without_a_verdict_fails_the_request_naming_it() -> None:
    chat = FakeChatModel(respond=lambda p: "maybe" if "while" in p else "YES")
    with pytest.raises(ProviderError, match="'loops'"):
        ChatDecisionModel(llm=chat).invoke({"state": STATE, "questions": QUESTIONS})


def test_structured_state_is_judged_as_json() -> None:
    chat = FakeChatModel(respond=lambda p: "YES" if '"code": "print(1)"' in p else "NO")
    response = ChatDecisionModel(llm=chat).invoke(
        {"state": {"code": "print(1)"}, "questions": {"q": QUESTIONS["prints"]}}
    )
    assert response.nouls["q"].noul == 1.0


# ---------------------------------------------------------------- the same judge as the chat judge


RULES = [
    Rule(rule_id=f"R{i}", rule_name=f"rule {i}", condition=f"the code shows mark {i}", action=f"a{i}") for i in range(8)
]


class _ChatRuns(BaseCallbackHandler):
    def __init__(self) -> None:
        self.chat_starts: list[UUID | None] = []
        self.chain_starts = 0

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self.chat_starts.append(parent_run_id)

    def on_llm_start(self, serialized: Any, prompts: Any, **kw: Any) -> None:
        self.chain_starts += 1


def test_its_chat_calls_are_child_runs_a_handler_sees() -> None:
    handler = _ChatRuns()
    chat = FakeChatModel(respond=_respond, with_logprobs=True)
    ChatDecisionModel(llm=chat).invoke({"state": STATE, "questions": QUESTIONS}, config={"callbacks": [handler]})
    assert len(handler.chat_starts) == len(QUESTIONS) and all(p is not None for p in handler.chat_starts)
    retriever = ApplicabilityRetriever(llm=ChatDecisionModel(llm=fake_judge({"R1"})), rules=RULES)
    handler = _ChatRuns()
    retriever.invoke("mark 1", config={"callbacks": [handler]})
    assert len(handler.chat_starts) == len(RULES)


@pytest.mark.parametrize("through", ["decision model", "retriever"])
def test_it_honours_the_callers_max_concurrency(through: str) -> None:
    chat = FakeChatModel(respond=lambda p: "YES" if judged_rule_id(p) == "R1" else "NO", delay=0.05)
    model = ChatDecisionModel(llm=chat)
    if through == "retriever":
        ApplicabilityRetriever(llm=model, rules=RULES).invoke("q", config={"max_concurrency": 2})
    else:
        questions = {f"q{i}": Noul(instructions=f"Is mark {i} there?") for i in range(8)}
        model.invoke({"state": STATE, "questions": questions}, config={"max_concurrency": 2})
    assert chat.calls == 8 and chat.max_in_flight == 2


def test_it_uses_the_cache_it_is_given_and_none_of_its_own() -> None:
    chat = fake_judge({"R1"})
    retriever = ApplicabilityRetriever(llm=ChatDecisionModel(llm=chat), rules=RULES, cache=None)
    assert [d.id for d in retriever.invoke("q")] == ["R1"]
    assert [d.id for d in retriever.invoke("q")] == ["R1"]
    assert chat.calls == 2 * len(RULES)
    cached = ApplicabilityRetriever(llm=ChatDecisionModel(llm=chat), rules=RULES)
    cached.invoke("q")
    cached.invoke("q")
    assert chat.calls == 3 * len(RULES)


def _unreadable_for_r2(text: str) -> str:
    rule = judged_rule_id(text)
    return "I cannot tell." if rule == "R2" else "YES" if rule == "R1" else "NO"


def test_a_failed_question_is_counted_no_and_listed_or_raised_with_strict() -> None:
    chat = FakeChatModel(respond=_unreadable_for_r2)
    retriever = ApplicabilityRetriever(llm=ChatDecisionModel(llm=chat), rules=RULES[:3])
    assert [d.id for d in retriever.invoke("q")] == ["R1"]
    assert retriever.last_match is not None and [j.rule_id for j in retriever.last_match.failed] == ["R2"]
    strict = ApplicabilityRetriever(llm=ChatDecisionModel(llm=chat), rules=RULES[:3], strict=True, cache=None)
    with pytest.raises(JudgmentsFailedError) as raised:
        strict.invoke("q")
    assert raised.value.failed_rule_ids == ["R2"]


def test_fake_judge_drives_it() -> None:
    retriever = ApplicabilityRetriever(llm=ChatDecisionModel(llm=fake_judge({"R3", "R5"})), rules=RULES)
    assert sorted(d.id for d in retriever.invoke("anything")) == ["R3", "R5"]
    contrast = ApplicabilityRetriever(
        llm=ChatDecisionModel(llm=fake_judge({"R3"}, with_logprobs=True)),
        rules=RULES,
        predicate="applicability-contrast",
    )
    assert [d.id for d in contrast.invoke("anything")] == ["R3"]


@pytest.mark.parametrize("setting", [MAX_CONCURRENCY, MAX_ATTEMPTS])
@pytest.mark.parametrize("value", [0, -3])
def test_a_setting_out_of_range_gets_the_one_message(setting: Range, value: int) -> None:
    with pytest.raises(ValidationError, match=re.escape(setting.message(value))):
        ChatDecisionModel(llm=FakeChatModel(respond=lambda p: "YES"), **{setting.name: value})


def test_a_callers_max_concurrency_out_of_range_gets_the_one_message() -> None:
    decisions = ChatDecisionModel(llm=FakeChatModel(respond=lambda p: "YES"))
    with pytest.raises(ValueError, match=re.escape(MAX_CONCURRENCY.message(-1))):
        decisions.invoke({"state": STATE, "questions": QUESTIONS}, config={"max_concurrency": -1})


def test_a_call_follows_the_cache_and_the_limit_in_force_when_it_is_made() -> None:
    chat = FakeChatModel(respond=lambda p: "YES" if "mark 1 " in p else "NO", delay=0.05)
    first, second = InMemoryVerdictCache(), InMemoryVerdictCache()
    decisions = ChatDecisionModel(llm=chat, cache=first)
    questions = {f"q{i}": Noul(instructions=f"Is mark {i} there?") for i in range(6)}
    decisions.invoke({"state": "one", "questions": questions}, config={"max_concurrency": 2})
    assert chat.max_in_flight == 2
    decisions.cache = second
    decisions.invoke({"state": "one", "questions": questions}, config={"max_concurrency": 6})
    assert chat.calls == 12 and chat.max_in_flight == 6
    decisions.invoke({"state": "one", "questions": questions})
    assert chat.calls == 12  # answered from the second cache
