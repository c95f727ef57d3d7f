"""A hard cap on model calls in flight, shared by every call that holds the same gate.

LangChain's ``max_concurrency`` bounds one ``batch``; calls made by several
batches at once (a retriever's ``batch`` of inputs, the bulk job's inputs in
parallel) each get that many. A :class:`Gate` is one cap for all of them: the
call runner holds one of its places for each whole call, in threads
(:attr:`Gate.threads`) and in event loops (:meth:`Gate.aplace`) alike.
"""

from __future__ import annotations

import asyncio
import threading

from langchain_tag.ranges import MAX_CONCURRENCY

__all__ = ["Gate"]


class Gate:
    """At most ``limit`` calls in flight among all the calls sent through it.

    Args:
        limit: The cap (a ``max_concurrency``), at least 1.

    Raises:
        ValueError: When ``limit`` is out of ``max_concurrency``'s range.
    """

    def __init__(self, limit: int) -> None:
        self.limit = MAX_CONCURRENCY.check(limit)
        self.threads = threading.BoundedSemaphore(limit)
        """The place a call made in a thread holds (``with gate.threads: ...``)."""
        self._loops: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]] = {}
        self._lock = threading.Lock()

    def _loop_semaphore(self) -> asyncio.Semaphore:
        """This event loop's semaphore (async calls of one loop share it; a semaphore serves one loop)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._loops.get(id(loop))
            if found is None or found[0] is not loop:
                found = self._loops[id(loop)] = (loop, asyncio.Semaphore(self.limit))
            return found[1]

    def aplace(self) -> asyncio.Semaphore:
        """A place for one call made in this event loop (``async with gate.aplace(): ...``)."""
        return self._loop_semaphore()
