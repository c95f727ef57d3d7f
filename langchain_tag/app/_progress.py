"""Judging progress as LangGraph custom stream events (``stream_mode="custom"``).

While the judge works through a run's rules, the graph writes ``{"event": "tag_progress", ...}`` events: one
before the first reply, one per reply as it arrives, and a last one when the stage is done. Each says how many
rules of the total were judged and how many matched so far: the replies that said YES (as the judge's one
reader, :mod:`langchain_tag.judging._read`, reads them) until the last event,
which gives the calibrated count (the threshold applies to the calibrated score, known only once all
judgments are in) and names the rules whose judgment failed (counted as NO). Verdicts from the verdict
cache make no call; the last event counts them.

The judge's own tokens never stream: its runs are tagged ``nostream``.

Example:
    >>> events = []
    >>> progress = JudgingProgress(events.append, stage="match", total=2)
    >>> progress.start(); progress.finish(matched=1)
    >>> [(e["judged"], e["total"], e["matched"], e["done"]) for e in events]
    [(0, 2, 0, False), (2, 2, 1, True)]
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from langchain_tag.calls._runner import ReplyCounter
from langchain_tag.errors import ParseError
from langchain_tag.judging._read import read_message

__all__ = ["PROGRESS_EVENT", "JudgingProgress", "Stage"]

PROGRESS_EVENT = "tag_progress"
"""The ``event`` of every progress payload."""

Stage = Literal["match", "check"]


def _says_yes(response: LLMResult) -> bool:
    """Whether a reply says YES, as the judge reads it (:func:`~langchain_tag.judging._read.read_message`).

    A reply the judge cannot read is no YES (the judgment is retried or fails, and counts as NO).
    """
    generation = response.generations[0][0] if response.generations and response.generations[0] else None
    if generation is None:
        return False
    reply: BaseMessage | str = generation.message if isinstance(generation, ChatGeneration) else generation.text
    try:
        return read_message(reply).word is True
    except ParseError:
        return False


class JudgingProgress(ReplyCounter):
    """Counts a stage's judge replies as they arrive and writes each count to a stream writer.

    Replies may arrive on threads the judge's client made, outside the node's context; LangGraph's writer reads
    the run's configuration from that context, so every event is written in a copy of the context the
    counter was made in (one at a time: a context is entered by one thread at once).

    Args:
        write: The stream writer (``langgraph.config.get_stream_writer()``), taken in the node.
        stage: ``"match"`` (the rules judged against the input) or ``"check"`` (against the revision).
        total: The rules to judge.
        round: The execute round the stage follows (a check), else 0.
    """

    def __init__(self, write: Callable[[Any], None], *, stage: Stage, total: int, round: int = 0) -> None:
        self._write = write
        self._context = contextvars.copy_context()
        self._lock = threading.Lock()
        self.stage = stage
        self.total = total
        self.round = round
        self.judged = 0
        self.yes = 0

    def _event(self, judged: int, matched: int, done: bool) -> dict[str, Any]:
        return {
            "event": PROGRESS_EVENT,
            "stage": self.stage,
            "round": self.round,
            "judged": judged,
            "total": self.total,
            "matched": matched,
            "done": done,
        }

    def _emit(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._context.run(self._write, event)

    def start(self) -> None:
        """Write the stage's first event: nothing judged yet."""
        self._emit(self._event(0, 0, False))

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Count one reply (a retry of a pair counts once: the count stops at the total)."""
        with self._lock:
            if self.judged >= self.total:
                return
            self.judged += 1
            self.yes += int(_says_yes(response))
            event = self._event(self.judged, self.yes, False)
        self._emit(event)

    def finish(self, *, matched: int, failed: Sequence[str] = ()) -> None:
        """Write the stage's last event: every rule judged, ``matched`` of them matched after calibration.

        Args:
            matched: How many rules matched.
            failed: The rules whose judgment failed (counted as NO), named in the event's ``failed``.
        """
        with self._lock:
            self.judged = self.total
        self._emit({**self._event(self.total, matched, True), "failed": list(failed)})
