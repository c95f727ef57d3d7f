"""The bulk job's progress bar: judgments counted as their replies arrive (judgments/s, ETA)."""

from __future__ import annotations

import threading
from typing import Any

from langchain_core.outputs import LLMResult
from tqdm.auto import tqdm

from langchain_tag.calls._runner import ReplyCounter

__all__ = ["PairRecorder", "Progress"]


class Progress:
    """A thread-safe judgment counter over a tqdm bar (judgments/s, ETA)."""

    def __init__(self, total: int, show: bool | None, *, cached: int = 0) -> None:
        self._bar = tqdm(
            total=total,
            initial=cached,  # counted, but not in the rate or the ETA
            desc="judging",
            unit=" judgments",
            unit_scale=False,  # whole judgments: "5/480", not "5.00/480"
            dynamic_ncols=True,
            smoothing=0.05,
            leave=False,
            disable=not show or total == 0,
        )
        self._lock = threading.Lock()

    def advance(self, n: int = 1) -> None:
        if n > 0:
            with self._lock:
                self._bar.update(n)

    def input_done(self, done: int, total: int) -> None:
        with self._lock:
            self._bar.set_postfix_str(f"{done}/{total} inputs", refresh=False)

    def close(self) -> None:
        self._bar.close()


class PairRecorder(ReplyCounter):
    """Counts one input's judgments on the progress bar as their replies arrive.

    Keeping the replies is the call runner's job: it stores each readable reply in the verdict cache in the
    thread it arrives on, so a job killed in the middle of an input loses no finished judgment.
    """

    def __init__(self, expected: int, progress: Progress) -> None:
        self._progress = progress
        self._lock = threading.Lock()
        self._expected = expected
        self.counted = 0

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        with self._lock:
            count = self.counted < self._expected
            self.counted += int(count)
        if count:
            self._progress.advance()

    def settle(self) -> None:
        """Count the judgments of this input that made no call (cached, or failed without a reply)."""
        with self._lock:
            rest = max(0, self._expected - self.counted)
            self.counted = self._expected
        self._progress.advance(rest)
