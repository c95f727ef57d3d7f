from __future__ import annotations

from langchain_tag.agents._check import DEFAULT_CHECK_NOTE, check_rules, reading, revision_request
from langchain_tag.agents._inputs import CHECK_MESSAGE_NAME
from langchain_tag.agents._state import RuleMatch
from langchain_tag.judging.results import Judgment, MatchResult

from .fakes import RULES

MATCHES = [RuleMatch(rule_id="R3", score=0.8, action=RULES[2].action), RuleMatch(rule_id="R1", score=0.7, action="x")]


def test_the_checked_rules_are_the_matched_ones_in_match_order() -> None:
    assert [r.rule_id for r in check_rules(RULES, MATCHES)] == ["R3", "R1"]
    assert [r.rule_id for r in check_rules([r.to_document() for r in RULES], MATCHES[:1])] == ["R3"]


def test_the_reading_keeps_the_rules_the_judge_reads_as_holding_with_their_scores() -> None:
    result = MatchResult(
        "answer", "applicability", [Judgment(rule_id="R3", applies=True, score=0.64), Judgment(rule_id="R1")]
    )
    found = reading("digest", result, revision_asked=False, note="n")
    assert found == {"input": "digest", "holding": [{"rule_id": "R3", "score": 0.64}], "revision_asked": False,
                     "note": "n"}  # fmt: skip


def test_the_revision_request_is_worded_as_the_judges_reading_with_its_reliability() -> None:
    message = revision_request([{"rule_id": "R3", "score": 0.64}, {"rule_id": "R1", "score": None}], MATCHES,
                               DEFAULT_CHECK_NOTE)  # fmt: skip
    text = str(message.content)
    assert message.name == CHECK_MESSAGE_NAME
    assert f"- R3: {RULES[2].action} (judge's score 0.64)" in text and "- R1: x\n" in text
    assert "not a certainty" in text and "about chance" in text and "Where the judge is right" in text
    assert "still breaks" not in text and "violat" not in text  # no claim stated as a fact
