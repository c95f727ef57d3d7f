"""LangChain's standard retriever tests, run against ApplicabilityRetriever with a fake judge."""

from __future__ import annotations

from typing import Any

from langchain_tests.integration_tests import RetrieversIntegrationTests

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
