"""LangChain's standard retriever tests, run against ApplicabilityRetriever with a fake judge."""

from __future__ import annotations

from typing import Any

from langchain_core.decisions import BaseDecisionModel, ClassifierResponse, Noul, NoulAnswer, Question, State
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_tag.judging.chat_decision_model import ChatDecisionModel
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import fake_judge


class TestApplicabilityRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[ApplicabilityRetriever]:
        return ApplicabilityRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        rules = [
            Rule(rule_id=f"R{i}", rule_name=f"rule {i}", condition=f"condition {i}", action=f"action {i}")
            for i in range(6)
        ]
        return {"llm": fake_judge({"R0", "R1", "R2", "R4"}), "rules": rules, "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return "an example input"


class _YesByRuleId(BaseDecisionModel):
    """A decision model answering yes to the questions whose instructions name one of ``yes`` (``(rule R0)``)."""

    model: str = "fake-decisions"
    yes: frozenset[str] = frozenset()

    @property
    def _provider(self) -> str:
        return "fake"

    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        answers: dict[str, Any] = {
            name: NoulAnswer(
                type="noul", noul=0.9 if any(f"(rule {r})" in str(q.instructions) for r in self.yes) else 0.1
            )
            for name, q in questions.items()
            if isinstance(q, Noul)
        }
        return ClassifierResponse(model="fake", answers=answers)


class TestApplicabilityRetrieverOverChatDecisionModel(TestApplicabilityRetrieverStandard):
    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        params = super().retriever_constructor_params
        return {**params, "llm": ChatDecisionModel(llm=fake_judge({"R0", "R1", "R2", "R4"}))}


class TestApplicabilityRetrieverOverADecisionModel(TestApplicabilityRetrieverStandard):
    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        params = super().retriever_constructor_params
        return {**params, "llm": _YesByRuleId(yes=frozenset({"R0", "R1", "R2", "R4"}))}
