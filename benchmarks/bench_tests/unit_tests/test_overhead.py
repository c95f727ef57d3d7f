"""The overhead benchmark judges its synthetic job without failures and answers YES where it says."""

from __future__ import annotations

from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.testing import FakeChatModel
from langchain_tag_bench.overhead import _answers_yes, rules, time_judging


def test_synthetic_job_is_judged_in_full() -> None:
    rule_set = rules(12)
    llm = FakeChatModel(respond=lambda p: "YES" if _answers_yes(p) else "NO", with_logprobs=True)
    assert time_judging(llm, ["a = 1", "b = 2"], rule_set, max_concurrency=4) > 0
    assert llm.calls == 24
    matched = ApplicabilityRetriever(llm=llm, rules=rule_set, calibration=None).match("c = 3").matched
    assert [j.rule_id for j in matched] == ["R-007", "R-010"]


def test_the_decisions_endpoint_answers_yes_where_the_chat_judge_does() -> None:
    from langchain_tag.judging.decision_judge import instructions
    from langchain_tag.judging.prompts import JUDGE_PROMPTS
    from langchain_tag_bench.overhead import _question_says_yes

    said = [r.rule_id for r in rules(12) if _question_says_yes(instructions(JUDGE_PROMPTS["applicability"], r))]
    assert said == ["R-007", "R-010"]
