from __future__ import annotations

from langchain_core.messages import SystemMessage

from langchain_tag.agents._block import DEFAULT_HEADING, rules_block, with_block
from langchain_tag.agents._state import RuleMatch

MATCHES = [RuleMatch(rule_id="R1", score=0.9, action="do one"), RuleMatch(rule_id="R2", score=None, action="do two")]


def test_the_block_names_each_rule_by_id_and_action_under_the_heading() -> None:
    assert rules_block(MATCHES) == f"{DEFAULT_HEADING}\n- R1: do one\n- R2: do two"
    assert rules_block(MATCHES[:1], "Rules:") == "Rules:\n- R1: do one"


def test_a_string_system_message_keeps_its_text_and_id_and_gets_the_block_last() -> None:
    system = SystemMessage("Be brief.", id="sys-1")
    added = with_block(system, "BLOCK")
    assert added.content == "Be brief.\n\nBLOCK" and added.id == "sys-1"
    assert system.content == "Be brief."  # the original is not changed


def test_content_blocks_get_one_more_text_block_and_no_system_message_becomes_the_block() -> None:
    system = SystemMessage(content=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
    added = with_block(system, "BLOCK")
    assert added.content == [*system.content, {"type": "text", "text": "BLOCK"}]
    assert with_block(None, "BLOCK").content == "BLOCK"
    assert with_block(SystemMessage(""), "BLOCK").content == "BLOCK"
