from __future__ import annotations

import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langchain_tag.app._progress import PROGRESS_EVENT, JudgingProgress
from langchain_tag.errors import ParseError
from langchain_tag.judging._read import read_message, read_reply


class _State(TypedDict, total=False):
    n: int


def _reply(text: str) -> LLMResult:
    return LLMResult(generations=[[ChatGeneration(message=AIMessage(content=text))]])


def _graph(replies: list[str]) -> Any:
    """A node that counts ``replies`` arriving on threads of their own, as a judge's client may send them."""

    def judge(state: _State) -> _State:
        progress = JudgingProgress(get_stream_writer(), stage="match", total=len(replies) - 1)
        progress.start()
        threads = [threading.Thread(target=progress.on_llm_end, args=(_reply(text),)) for text in replies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        progress.finish(matched=1)
        return {"n": progress.judged}

    graph = StateGraph(_State)
    graph.add_node("judge", judge)
    graph.add_edge(START, "judge")
    graph.add_edge("judge", END)
    return graph.compile()


def test_replies_on_other_threads_are_written_to_the_custom_stream() -> None:
    events = list(_graph(["YES", "NO", "YES", "NO"]).stream({}, stream_mode="custom"))
    assert all(e["event"] == PROGRESS_EVENT and e["stage"] == "match" and e["total"] == 3 for e in events)
    assert [e["judged"] for e in events] == [0, 1, 2, 3, 3]  # a fourth reply (a retry) is not counted
    assert events[-1]["done"] and events[-1]["matched"] == 1 and not any(e["done"] for e in events[:-1])
    assert all(e["matched"] <= e["judged"] for e in events)


async def test_and_so_in_an_async_run() -> None:
    events = [e async for e in _graph(["YES", "YES"]).astream({}, stream_mode="custom")]
    assert [(e["judged"], e["matched"]) for e in events] == [(0, 0), (1, 1), (1, 1)]


REPLIES = ["YES", "NO", "Answer: YES", '{"verdict": "YES"}', "**YES**", "true", "YES, no.", "Yesterday"]
"""Replies the judge's reader and a reader of its own would read apart."""


def _judges_word(text: str) -> bool:
    try:
        return read_reply(text).word is True
    except ParseError:
        return False


@pytest.mark.parametrize("text", REPLIES)
def test_progress_counts_a_reply_as_a_match_exactly_when_the_judges_reader_reads_yes(text: str) -> None:
    progress = JudgingProgress(lambda event: None, stage="match", total=1)
    progress.on_llm_end(_reply(text))
    assert progress.yes == int(_judges_word(text))


def test_each_reply_is_read_once_by_the_one_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain_tag.app._progress as module

    read: list[str] = []

    def counting(message: Any) -> Any:
        read.append(message.text)
        return read_message(message)

    monkeypatch.setattr(module, "read_message", counting)
    progress = JudgingProgress(lambda event: None, stage="match", total=len(REPLIES))
    for text in REPLIES:
        progress.on_llm_end(_reply(text))
    assert read == REPLIES and progress.yes == 5
