"""A sync job run on an event loop of its own: one thread, requests in flight as the async job keeps them.

Threads pay for every request in the interpreter's lock: against a fast endpoint a pool of worker threads
sends at about 0.85x the pace one event loop reaches on the same cores. :func:`iterate_on_own_loop` drives an
async job from sync code, step by step, on a private event loop in the calling thread. Its calls straight
through a model's client (:mod:`langchain_tag.calls._direct`) use a private HTTP client made for the job and
closed with it (:func:`job_async_client`), so no connection of the model's shared client is left bound to a
loop that is gone.
"""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["iterate_on_own_loop", "job_async_client", "loop_is_free", "may_remake", "remakeable"]

T = TypeVar("T")
C = TypeVar("C")

_JOB_CLIENTS: contextvars.ContextVar[dict[int, tuple[Any, Any]] | None] = contextvars.ContextVar(
    "langchain_tag_job_clients", default=None
)
"""Inside :func:`iterate_on_own_loop`: the job's private async clients, by the id of the model they stand for."""


_REMAKE: weakref.WeakKeyDictionary[Any, Callable[[], Any]] = weakref.WeakKeyDictionary()
"""HTTP clients the package made, each with how to make another like it (for a job's private client)."""


def remakeable(client: C, make: Callable[[], C]) -> C:
    """``client``, noted as made by ``make``: a job on its own loop makes its private client the same way."""
    _REMAKE[client] = make
    return client


def may_remake(model: Any) -> bool:
    """Whether a job may give ``model`` a private async HTTP client of its own making.

    So it may when the model has no HTTP client or proxy of its own (then a default one), or when its async
    client is one the package made (:func:`remakeable`); a client you gave is used only as you gave it.
    """
    http = model.http_async_client
    if http is not None:
        return http in _REMAKE
    return model.http_client is None and not model.openai_proxy


def loop_is_free() -> bool:
    """Whether this thread can run an event loop of its own (no loop is running in it, as in a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


def job_async_client(model: Any) -> Any:
    """The async OpenAI client for ``model`` inside :func:`iterate_on_own_loop` (made on first use); else ``None``.

    A copy of the model's own client (its key, base URL, headers, timeout, retries) over a fresh HTTP client:
    made as the model's was (:func:`remakeable`), else a default one; only where :func:`may_remake` (the caller
    checks).
    """
    clients = _JOB_CLIENTS.get()
    if clients is None:
        return None
    found = clients.get(id(model))
    if found is None:
        import openai

        base = model.root_async_client
        found = clients[id(model)] = (
            model,
            base.copy(http_client=openai.DefaultAsyncHttpxClient(timeout=base.timeout)),
        )
    return found[1]


def iterate_on_own_loop(job: AsyncIterator[T]) -> Iterator[T]:
    """Yield ``job``'s items, running it on a private event loop in this thread while each is asked for.

    However the iteration ends (exhausted, closed early, an interrupt), the job is closed or cancelled on the
    loop, so its own cleanup runs there (the bulk job commits the verdicts it holds), then the job's private
    clients are closed and the loop with them.
    """
    context = contextvars.copy_context()
    clients: dict[int, tuple[Any, Any]] = {}
    context.run(_JOB_CLIENTS.set, clients)
    loop = asyncio.new_event_loop()
    step: asyncio.Task[T] | None = None
    ended: BaseException | None = None
    try:
        while True:
            step = context.run(loop.create_task, _next(job))
            try:
                item: T = loop.run_until_complete(step)
            except StopAsyncIteration:
                step = None
                return
            step = None
            yield item
    except BaseException as exc:
        ended = exc
        raise
    finally:
        try:
            if step is not None and not step.done():  # interrupted mid-step: cancel it where it waits
                _complete(loop, _cancelled([step]), ended)
            else:
                context.run(_complete, loop, _closed(job), ended)
            _complete(loop, _cancelled(asyncio.all_tasks(loop)), ended)
            _complete(loop, _close_clients(clients), ended)
            _complete(loop, loop.shutdown_asyncgens(), ended)
        finally:
            loop.close()


def _complete(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, Any], ended: BaseException | None) -> None:
    """Run ``work`` (a step of the cleanup) on ``loop`` to its end, past what the interrupt ``ended`` left behind.

    - An interrupt that lands after a step has ended, before the loop ran the step's done-callback, leaves that
      callback queued: it stops the loop at the next run, whatever that run waits for ("Event loop stopped before
      Future completed"). The callback runs once, so the run is resumed.
    - An interrupt that lands in a task's own code ends that task with it, and a task that awaited it (the step)
      raises it again out of the loop while it is cancelled. The same interrupt again does not cut the cleanup
      short: the run is resumed, or, when ``work`` itself ended on it, the next step of the cleanup is taken.
    """
    task = loop.create_task(work)
    stops = 0
    while True:
        try:
            loop.run_until_complete(task)
            return
        except RuntimeError:
            stops += 1  # bounded, so that another RuntimeError cannot loop forever
            if task.done() or loop.is_running() or loop.is_closed() or stops > 8:
                raise
        except BaseException as exc:
            if exc is not ended:
                raise
            if task.done():
                return


async def _next(job: AsyncIterator[T]) -> T:
    return await job.__anext__()


async def _cancelled(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has ended."""
    waiting = list(tasks)
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)


async def _closed(job: AsyncIterator[Any]) -> None:
    close = getattr(job, "aclose", None)
    if close is not None:
        await close()


async def _close_clients(clients: dict[int, tuple[Any, Any]]) -> None:
    for _, client in clients.values():
        await client.close()
