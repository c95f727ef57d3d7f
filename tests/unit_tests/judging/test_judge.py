"""The judge's failure messages count the attempts the failed requests had."""

from __future__ import annotations

import logging
import re

import httpx
import openai
import pytest
from langchain_core.decisions import BaseDecisionModel, ClassifierResponse, Question, State

from langchain_tag.errors import ProviderError
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule

RULES = [Rule(rule_id=f"R{n}", rule_name=f"rule {n}", condition=f"pattern {n} shows", action="fix") for n in range(3)]


class Unreachable(BaseDecisionModel):
    """A decision model whose endpoint never answers."""

    model: str = "unreachable"

    @property
    def _provider(self) -> str:
        return "fake"

    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        raise openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1:9/v1/decisions"))


def test_a_failed_decisions_request_is_not_said_to_have_had_0_attempts() -> None:
    retriever = ApplicabilityRetriever(llm=Unreachable(), rules=RULES, calibration=None)
    with pytest.raises(ProviderError) as caught:
        retriever.match("some input")
    message = str(caught.value)
    assert "after 0 attempt" not in message
    assert re.search(r"rule R2 after [1-9] attempt\(s\)", message), message  # the request's own attempts


def test_partly_failed_decisions_are_not_said_to_have_had_0_attempts(caplog: pytest.LogCaptureFixture) -> None:
    from tests.unit_tests.judging.test_decision_judge import FakeDecisions

    retriever = ApplicabilityRetriever(llm=FakeDecisions(omit=frozenset({"R1", "R2"})), rules=RULES, calibration=None)
    with caplog.at_level(logging.WARNING):
        result = retriever.match("shows R0")
    assert [j.rule_id for j in result.failed] == ["R1", "R2"]
    assert "failed after" in caplog.text and "after 0" not in caplog.text and "0-1 attempt" not in caplog.text
