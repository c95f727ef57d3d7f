"""What every chat model's HTTP client gets: a deadline on each whole request, and the process's rate limit."""

from __future__ import annotations

import asyncio
import functools
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.rate_limiters import BaseRateLimiter

__all__ = ["rate_limiter", "request_deadline_hooks"]

_DEADLINE = "langchain_tag_deadline"


def request_deadline_hooks(total: float, *, asynchronous: bool = False) -> dict[str, list[Callable[[Any], Any]]]:
    """HTTP client event hooks that give every request an overall deadline of ``total`` seconds.

    An HTTP client's timeout bounds each read, so a server that sends its
    reply a few bytes at a time can hold a request open far longer. These
    hooks stamp each request with a deadline and cut its reply when the
    deadline passes, raising the client library's ``ReadTimeout`` (which the
    OpenAI client treats as a timeout: retried within its ``max_retries``,
    then ``APITimeoutError``). The async hooks cut the reply at the deadline
    exactly; the sync ones at the first chunk that arrives after it, so a
    sync request can overrun by at most one read.

    Pass them to the OpenAI client's HTTP client, e.g.
    ``openai.DefaultHttpxClient(event_hooks=request_deadline_hooks(30))``;
    :func:`~langchain_tag.local.models.get_chat_model` does so with ``LANGCHAIN_TAG_TIMEOUT``.

    Args:
        total: Seconds from sending a request to the end of its reply.
        asynchronous: Hooks for an async client.

    Raises:
        ValueError: When ``total`` is not positive.
    """
    if total <= 0:
        raise ValueError(f"the request deadline must be positive, got {total}")

    def stamp(request: Any) -> None:
        request.extensions[_DEADLINE] = time.monotonic() + total

    def bound(response: Any) -> None:
        request = response.request
        deadline = request.extensions.get(_DEADLINE, time.monotonic() + total)
        sync_stream, async_stream = _deadline_streams(sys.modules[type(response).__module__.split(".")[0]])
        stream = async_stream if asynchronous else sync_stream
        response.stream = stream(response.stream, deadline, request, total)
        if time.monotonic() > deadline:
            raise response.stream.expired()

    if not asynchronous:
        return {"request": [stamp], "response": [bound]}

    async def astamp(request: Any) -> None:
        stamp(request)

    async def abound(response: Any) -> None:
        bound(response)

    return {"request": [astamp], "response": [abound]}


@functools.cache
def _deadline_streams(lib: Any) -> tuple[type, type]:
    """Reply streams of the HTTP library ``lib`` (``httpx`` or its successor) that stop at a deadline."""

    class _Deadline:
        def __init__(self, inner: Any, deadline: float, request: Any, total: float) -> None:
            self.inner, self.deadline, self.request, self.total = inner, deadline, request, total

        def expired(self) -> BaseException:
            error: BaseException = lib.ReadTimeout(
                f"the reply did not complete within {self.total:g} s", request=self.request
            )
            return error

    # The bases come from the library module found at run time, so mypy sees them as Any.
    class SyncDeadlineStream(_Deadline, lib.SyncByteStream):  # type: ignore[misc]
        def __iter__(self) -> Any:
            for chunk in self.inner:
                if time.monotonic() > self.deadline:
                    raise self.expired()
                yield chunk

        def close(self) -> None:
            self.inner.close()

    class AsyncDeadlineStream(_Deadline, lib.AsyncByteStream):  # type: ignore[misc]
        async def __aiter__(self) -> Any:
            chunks = self.inner.__aiter__()
            while True:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    raise self.expired()
                try:
                    chunk = await asyncio.wait_for(chunks.__anext__(), remaining)
                except StopAsyncIteration:
                    return
                except asyncio.TimeoutError:
                    raise self.expired() from None
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    return SyncDeadlineStream, AsyncDeadlineStream


@functools.cache
def rate_limiter(requests_per_second: float) -> BaseRateLimiter:
    """The process-wide ``InMemoryRateLimiter`` for a request rate (one per rate, shared by all roles).

    Bursts are capped at one second's worth of requests (at least one).
    """
    from langchain_core.rate_limiters import InMemoryRateLimiter

    return InMemoryRateLimiter(
        requests_per_second=requests_per_second,
        check_every_n_seconds=min(0.1, 1.0 / requests_per_second),
        max_bucket_size=max(1.0, requests_per_second),
    )
