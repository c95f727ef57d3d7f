from __future__ import annotations

from langchain_tag.prompts import EXECUTOR_PROMPTS, JUDGE_PROMPTS
from langchain_tag.rules import Rule
from langchain_tag.testing import prompt_text


def _rule() -> Rule:
    return Rule(
        rule_id="R-7",
        rule_name="the name",
        condition="THE-CONDITION",
        action="THE-ACTION",
        category_tags=["t"],
    )


def test_applicability_prompt_hides_action_and_puts_input_before_rule() -> None:
    text = prompt_text(JUDGE_PROMPTS["applicability"].messages("THE-INPUT", _rule()))
    assert "THE-ACTION" not in text
    assert text.index("THE-INPUT") < text.index("THE-CONDITION") < text.index("R-7")
    assert "YES or NO" in text


def test_judgments_for_one_input_share_everything_up_to_the_rule() -> None:
    prompt = JUDGE_PROMPTS["applicability"]
    a = prompt_text(prompt.messages("same input", _rule()))
    other = _rule().model_copy(update={"rule_id": "R-8", "condition": "other"})
    b = prompt_text(prompt.messages("same input", other))
    shared = len(a) - len(a.split("RULE:\n", 1)[1])
    assert a[:shared] == b[:shared]


def test_relevance_prompt_shows_action() -> None:
    text = prompt_text(JUDGE_PROMPTS["relevance"].messages("x", _rule()))
    assert "THE-ACTION" in text and "relevant" in text


def test_executor_chunk_and_none_modes_differ_only_in_reference() -> None:
    p = EXECUTOR_PROMPTS["code_review"]
    chunks = p.messages("q", [("C1", "passage")], "chunks")
    none = p.messages("q", [], "none")
    assert chunks[0].content == none[0].content
    assert "[C1] passage" in str(chunks[1].content) and "No review rules" in str(none[1].content)


def test_executor_rule_mode_lists_only_ids_and_actions() -> None:
    text = prompt_text(EXECUTOR_PROMPTS["code_review"].messages("INPUT-S", [("R-1", "do X")], "rules"))
    assert "[R-1] do X" in text and "INPUT-S" in text
    assert "THE-CONDITION" not in text
