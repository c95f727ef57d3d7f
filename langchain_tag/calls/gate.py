"""A hard cap on model calls in flight, shared by every call that holds the same gate.

LangChain's ``max_concurrency`` bounds one ``batch``; calls made by several
batches at once (a retriever's ``batch`` of inputs, the bulk job's inputs in
parallel) each get that many. A :class:`Gate` is one cap for all of them: the
call runner sends every request through :meth:`Gate.wrap`, which holds a place
for the whole call, in threads and in event loops alike.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from typing_extensions import override

__all__ = ["Gate"]


class Gate:
    """At most ``limit`` calls in flight among all the calls sent through it.

    Args:
        limit: The cap, at least 1.

    Raises:
        ValueError: When ``limit`` is below 1.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a gate's limit must be >= 1, got {limit}")
        self.limit = limit
        self._threads = threading.BoundedSemaphore(limit)
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

    def place(self) -> threading.BoundedSemaphore:
        """A place for one call made in a thread (``with gate.place(): ...``)."""
        return self._threads

    def aplace(self) -> asyncio.Semaphore:
        """A place for one call made in this event loop (``async with gate.aplace(): ...``)."""
        return self._loop_semaphore()

    def wrap(self, runnable: Runnable[Any, Any]) -> Runnable[Any, Any]:
        """``runnable`` with each ``invoke``/``ainvoke`` holding a place of this gate for the whole call."""
        return _Gated(runnable, self)


class _Gated(Runnable[Any, Any]):
    """A runnable whose calls wait for a place in a :class:`Gate`; config and callbacks pass through unchanged."""

    def __init__(self, inner: Runnable[Any, Any], gate: Gate) -> None:
        self.inner = inner
        self.gate = gate

    @override
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        with self.gate.place():
            return self.inner.invoke(input, config, **kwargs)

    @override
    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        async with self.gate.aplace():
            return await self.inner.ainvoke(input, config, **kwargs)
