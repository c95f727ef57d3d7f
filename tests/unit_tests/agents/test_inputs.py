from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_tag.agents._inputs import CHECK_MESSAGE_NAME, judged_input

CALL = AIMessage(content="", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])


def test_human_takes_the_latest_human_message_and_skips_the_checks_request() -> None:
    messages = [
        HumanMessage("first"),
        AIMessage("a"),
        HumanMessage("second"),
        CALL,
        ToolMessage("out", tool_call_id="c1"),
    ]
    assert judged_input("human", messages, {}) == "second"
    asked = [*messages, AIMessage("answer"), HumanMessage("revise", name=CHECK_MESSAGE_NAME)]
    assert judged_input("human", asked, {}) == "second"


def test_tool_takes_the_newest_of_the_latest_tool_result_and_human_message() -> None:
    turn = [HumanMessage("question"), CALL]
    assert judged_input("tool", turn, {}) == "question"
    assert judged_input("tool", [*turn, ToolMessage("result", tool_call_id="c1")], {}) == "result"


def test_a_function_of_the_state_and_empty_inputs() -> None:
    assert judged_input(lambda state: state["code"], [], {"code": "x = 1"}) == "x = 1"
    assert judged_input(lambda state: "  ", [], {}) is None
    assert judged_input("human", [AIMessage("only the model")], {}) is None


def test_an_unknown_source_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown judge input"):
        judged_input("system", [], {})  # type: ignore[arg-type]


def test_messages_langchain_marks_as_its_own_are_not_inputs() -> None:
    summary = HumanMessage("Here is a summary of the conversation to date: ...",
                           additional_kwargs={"lc_source": "summarization"})  # fmt: skip
    assert judged_input("human", [summary, CALL, ToolMessage("out", tool_call_id="c1")], {}) is None
    assert judged_input("tool", [summary, CALL, ToolMessage("out", tool_call_id="c1")], {}) == "out"
    assert judged_input("human", [HumanMessage("question"), summary], {}) == "question"
