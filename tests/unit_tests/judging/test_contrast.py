"""The contrast judge: each pair asked as the rule's condition and as its negation."""

from __future__ import annotations

import math

import pytest

from langchain_tag.judging.calibration.defaults import default_calibration
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.chat import ChatJudge
from langchain_tag.judging.prompts import JUDGE_PROMPTS, negate_condition
from langchain_tag.judging.results import Reading, contrast
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, asks_negation, fake_judge, judged_rule_id

QUERY = "from os import *\nimport os, sys"


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


@pytest.mark.parametrize(
    ("condition", "negated"),
    [
        ("the input contains a bare `except:` clause", "the input does not contain a bare `except:` clause"),
        ("The input contains  a wildcard\nimport", "the input does not contain a wildcard import"),
        ("a line is indented with tabs", "it is not the case that a line is indented with tabs"),
        ("the input uses `print`", "it is not the case that the input uses `print`"),
    ],
)
def test_negate_condition(condition: str, negated: str) -> None:
    assert negate_condition(condition) == negated


def test_contrast_prompt_shares_its_statement_half_and_has_its_own_scoring_version() -> None:
    single, contrast = JUDGE_PROMPTS["applicability"], JUDGE_PROMPTS["applicability-contrast"]
    assert contrast.version == single.version and contrast.negation is not None
    assert contrast.scoring_version == f"{single.version}+{contrast.negation.version}"
    assert single.scoring_version == single.version
    rule = Rule(rule_id="R-9", rule_name="n", condition="the input contains a tab", action="a")
    assert "Statement: the input does not contain a tab\n(rule R-9)" in contrast.negation.render_rule(rule)


def test_contrast_combines_the_halves() -> None:
    yes = Reading(word=True, p_yes=0.8, attempts=1, prompt_tokens=10, completion_tokens=1)
    no = Reading(word=False, p_yes=0.2, attempts=2, prompt_tokens=12, completion_tokens=1)
    both = contrast(yes, no)
    assert both.p_yes == pytest.approx(1 / (1 + math.exp(-(_logit(0.8) - _logit(0.2)))))
    assert (both.statement_p_yes, both.negation_p_yes) == (0.8, 0.2)
    assert both.word and both.error is None
    assert (both.attempts, both.prompt_tokens, both.completion_tokens) == (3, 22, 2)
    # A judge that leans to YES on both halves says nothing: the contrast is even.
    assert contrast(yes, Reading(word=True, p_yes=0.8)).p_yes == pytest.approx(0.5)


def test_a_failed_half_fails_the_pair() -> None:
    ok = Reading(word=True, p_yes=0.9)
    broken = Reading(error="no YES/NO verdict in reply: 'hm'")
    failed = contrast(ok, broken)
    assert failed.error == "negation: no YES/NO verdict in reply: 'hm'"
    assert failed.p_yes is None and not failed.word
    assert contrast(broken, ok).error == "no YES/NO verdict in reply: 'hm'"


def test_without_logprobs_yes_needs_yes_to_the_condition_and_no_to_its_negation() -> None:
    assert contrast(Reading(word=True), Reading(word=False)).word
    assert not contrast(Reading(word=True), Reading(word=True)).word
    assert not contrast(Reading(word=False), Reading(word=False)).word


def _leaning_judge(holds: set[str], lean: float) -> FakeChatModel:
    """P(YES) ``0.6 + lean`` where the asked statement is true, ``0.3 + lean`` where it is false."""

    def respond(text: str) -> tuple[str, float]:
        true = (judged_rule_id(text) in holds) != asks_negation(text)
        p = (0.6 if true else 0.3) + lean
        return ("YES" if p >= 0.5 else "NO", p)

    return FakeChatModel(respond=respond, with_logprobs=True)


def test_two_calls_per_pair_and_the_matches_follow_the_contrast(rules: list[Rule]) -> None:
    llm = _leaning_judge({"R-001", "R-002"}, lean=0.2)  # raw P(YES) 0.8 / 0.5: every rule at >= 0.5 alone
    single = ChatJudge(llm, calibration=None).judge(QUERY, rules)
    assert len(single.matched) == 5
    result = ChatJudge(llm, "applicability-contrast", calibration=None).judge(QUERY, rules)
    assert llm.calls == 5 + 10 and result.calls == 10
    assert [j.rule_id for j in result.matched] == ["R-001", "R-002"]
    first = result.judgments[0]
    assert first.statement_p_yes == pytest.approx(0.8) and first.negation_p_yes == pytest.approx(0.5)
    assert first.p_yes == pytest.approx(1 / (1 + math.exp(-_logit(0.8))))
    negated = [p for p in llm.prompts if asks_negation(p)]
    assert len(negated) == 5 and all("Statement: it is not the case that" in p for p in negated)


async def test_async_twin_gives_the_same_scores(rules: list[Rule]) -> None:
    llm = _leaning_judge({"R-004"}, lean=0.1)
    judge = ChatJudge(llm, "applicability-contrast", calibration=None, max_concurrency=3)
    sync = judge.judge(QUERY, rules)
    other = await ChatJudge(llm, "applicability-contrast", calibration=None).ajudge(QUERY, rules)
    assert [j.p_yes for j in other.judgments] == pytest.approx([j.p_yes for j in sync.judgments])
    assert [j.rule_id for j in other.matched] == ["R-004"]


def test_statement_half_is_served_from_the_single_prompts_cache(rules: list[Rule]) -> None:
    cache = InMemoryVerdictCache()
    llm = fake_judge({"R-003"})
    ChatJudge(llm, cache=cache).judge(QUERY, rules)
    assert llm.calls == 5
    result = ChatJudge(llm, "applicability-contrast", cache=cache).judge(QUERY, rules)
    assert llm.calls == 10  # only the negated halves were asked
    assert [j.rule_id for j in result.matched] == ["R-003"]
    again = ChatJudge(llm, "applicability-contrast", cache=cache).judge(QUERY, rules)
    assert llm.calls == 10 and again.cache_hits == 5


def test_default_calibration_is_matched_on_the_scoring_version(monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain_tag.judging.calibration.defaults as module

    contrast = JUDGE_PROMPTS["applicability-contrast"]
    shipped = Calibration(method="platt", slope=2.0, prompt_version=contrast.scoring_version)
    monkeypatch.setitem(module.DEFAULT_CALIBRATIONS, "tiny-judge#contrast", shipped)
    assert default_calibration("local/tiny-judge.gguf", contrast.scoring_version) is shipped
    assert default_calibration("local/tiny-judge.gguf", contrast.version) is None
    assert default_calibration("local/other.gguf", contrast.scoring_version) is None


def test_references_are_judged_with_both_halves(rules: list[Rule]) -> None:
    llm = _leaning_judge({"R-001"}, lean=0.0)
    calibration = Calibration(method="platt", reference_inputs=("x = 1", "print(2)"))
    judge = ChatJudge(llm, "applicability-contrast", calibration=calibration)
    judge.judge(QUERY, rules)
    assert llm.calls == 2 * 5 * 3  # the input and two references, each asked both ways
    mean, _ = judge.reference_log_odds(rules[1])
    assert mean == pytest.approx(_logit(0.3) - _logit(0.6))


def test_the_embedded_model_has_a_shipped_contrast_default() -> None:
    contrast = JUDGE_PROMPTS["applicability-contrast"]
    shipped = default_calibration("qwen2.5-coder-1.5b-instruct-q4_k_m", contrast.scoring_version)
    single = default_calibration("qwen2.5-coder-1.5b-instruct-q4_k_m", JUDGE_PROMPTS["applicability"].scoring_version)
    assert shipped is not None and single is not None and shipped is not single
    assert shipped.centre_per_input and shipped.uses_reference and shipped.threshold is not None
