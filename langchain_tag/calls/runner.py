"""The one call runner: every model call of extraction and judging goes through :class:`CallRunner`.

A :class:`Request` pairs a prompt with the parser of its reply. The runner

- looks each request up in a store first (the extraction store, the verdict
  cache: anything with ``get``/``put`` by request, :class:`RunnerStore`),
- sends the rest through ``batch_as_completed`` (or its async twin) with
  bounded concurrency, one config per request (run name, tags, metadata);
  or, when nothing but reply counters would see a call of a plain
  ``ChatOpenAI``, straight through its own client
  (:mod:`langchain_tag.calls.direct`), the same requests without LangChain's
  per-call run machinery,
- reads each reply with the request's parser and puts a readable one in the
  store as soon as it arrives,
- retries what failed, once per attempt up to ``max_attempts``: a reply that
  did not parse always, a request that raised unless it was a transport fault
  the model's own client already retried (:mod:`langchain_tag.calls.faults`), after
  a backoff with jitter when it resends a request that raised,
- and records calls and tokens per request (:class:`Outcome`).

It never raises for a failed call: what still fails is reported in the
outcomes, and the caller decides what that means (the judge counts it as NO,
extraction skips the item, either raises
:class:`~langchain_tag.errors.ProviderError` when nothing could be called).
What it does raise is a store that cannot keep a reply it paid for
(:class:`~langchain_tag.calls.verdict_cache.VerdictCacheError`, at the end of
the run): judging on while the verdicts are lost would only cost more.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager, Callbacks
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import Runnable, RunnableConfig
from tqdm.auto import tqdm

from langchain_tag.calls.direct import DirectChat, ReplyCounter, reply_result
from langchain_tag.calls.faults import backoff_delay, client_retries, describe_error, is_permanent, is_transient
from langchain_tag.calls.gate import Gate
from langchain_tag.calls.identity import describe_model
from langchain_tag.calls.replies import message_text
from langchain_tag.errors import ParseError

__all__ = ["CallRunner", "ChatRunnable", "Outcome", "Request", "RunnerStore"]

T = TypeVar("T")


@dataclass
class Request(Generic[T]):
    """One model call to make.

    Attributes:
        messages: The model's input: chat messages (LangChain messages or OpenAI-style dicts, sent as they
            are), or a decision model's request.
        parse: Reads the reply; raises :class:`~langchain_tag.errors.ParseError` when it cannot.
        key: The store key (``None``: not stored).
        run_name: The call's run name in traces.
        tags: Tags of the call's run.
        metadata: Metadata of the call's run.
    """

    messages: Any
    parse: Callable[[Any], T]
    key: str | None = None
    run_name: str | None = None
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome(Generic[T]):
    """What one request gave.

    Attributes:
        value: The parsed reply (``None`` when the request failed).
        error: Why it failed after its last attempt, if it did.
        fault: The exception of the last attempt, when it raised.
        attempts: Calls made (0 when the store answered).
        prompt_tokens: Prompt tokens reported by the model, over all attempts.
        completion_tokens: Completion tokens, over all attempts.
        reply: The last reply text.
        stored: Whether the store answered (no call made).
    """

    value: T | None = None
    error: str | None = None
    fault: BaseException | None = None
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reply: str = ""
    stored: bool = False

    @property
    def ok(self) -> bool:
        """Whether the request gave a readable reply."""
        return self.error is None and (self.stored or self.attempts > 0)


class RunnerStore(Protocol):
    """Where finished calls are kept: an outcome by request, and a new readable one put back."""

    def get(self, request: Request[Any]) -> Outcome[Any] | None:
        """A finished outcome for ``request`` (``stored=True``), or ``None``."""
        ...

    def put(self, request: Request[Any], outcome: Outcome[Any]) -> None:
        """Keep a readable outcome just received."""
        ...


ChatRunnable = Runnable[LanguageModelInput, BaseMessage]
"""A chat model or any runnable built from one (``llm.bind(...)``, ``.with_retry()``, ``.with_fallbacks()``)."""


@dataclass
class CallRunner:
    """Send requests with bounded concurrency and bounded retries, reusing stored outcomes.

    Attributes:
        llm: What is called: a chat model or a runnable built from one.
        model: The model whose client retries and description count (default: ``llm``), e.g. the
            bare model when ``llm`` is a ``bind``-configured copy of it.
        max_concurrency: Most calls in flight.
        max_attempts: Attempts per request before it is recorded as failed.
        retry_backoff: Base delay in seconds (exponential, with jitter) before resending requests that raised,
            when the model's client does not retry them itself.
        store: Finished calls; readable new replies are added.
        show_progress: A progress bar: ``True``/``False``, or ``None`` for "only on a terminal".
        gate: A cap on calls in flight shared with other runners (and other calls of this one), beside
            ``max_concurrency``'s cap on one run.
    """

    llm: ChatRunnable
    model: Any = None
    max_concurrency: int = 8
    max_attempts: int = 2
    retry_backoff: float = 0.5
    store: RunnerStore | None = None
    show_progress: bool | None = False
    gate: Gate | None = None

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.model is None:
            self.model = self.llm
        self._sent: Runnable[Any, Any] = self.gate.wrap(self.llm) if self.gate is not None else self.llm
        self._direct = DirectChat.of(self.llm)
        # A store that holds verdicts back (a SQLite cache's pending writes) is settled after every run.
        self._settles = self.store is not None and getattr(self.store, "holds_back", True)

    def run(self, requests: Sequence[Request[T]], *, callbacks: Callbacks = None, desc: str = "") -> list[Outcome[T]]:
        """Run ``requests``; return one outcome per request, in request order."""
        outcomes, pending = self._start(requests)
        counters = self._counters(requests, pending, callbacks)
        with self._bar(len(requests), len(requests) - len(pending), desc) as bar:
            for attempt in range(1, self.max_attempts + 1):
                if not pending:
                    break
                stream = self._stream([requests[i] for i in pending], counters, callbacks)
                retry = []
                for i, reply in stream:
                    if self._take(requests[pending[i]], outcomes[pending[i]], reply, bar):
                        retry.append(pending[i])
                pending, delay = self._next_round(outcomes, retry, attempt)
                time.sleep(delay)
        if self._settles or id(self.store) in _FAILED_PUTS:
            _settle(self.store)
        return outcomes

    async def arun(
        self, requests: Sequence[Request[T]], *, callbacks: Callbacks = None, desc: str = ""
    ) -> list[Outcome[T]]:
        """Async twin of :meth:`run`."""
        outcomes, pending = self._start(requests)
        counters = self._counters(requests, pending, callbacks)
        with self._bar(len(requests), len(requests) - len(pending), desc) as bar:
            for attempt in range(1, self.max_attempts + 1):
                if not pending:
                    break
                stream = self._astream([requests[i] for i in pending], counters, callbacks)
                retry = []
                async for i, reply in stream:
                    if self._take(requests[pending[i]], outcomes[pending[i]], reply, bar):
                        retry.append(pending[i])
                pending, delay = self._next_round(outcomes, retry, attempt)
                await asyncio.sleep(delay)
        if self._settles or id(self.store) in _FAILED_PUTS:
            _settle(self.store)
        return outcomes

    def _start(self, requests: Sequence[Request[T]]) -> tuple[list[Outcome[T]], list[int]]:
        """Stored outcomes filled in; the indices still to send."""
        outcomes: list[Outcome[T]] = []
        pending: list[int] = []
        for index, request in enumerate(requests):
            found = self.store.get(request) if self.store is not None and request.key is not None else None
            if found is None:
                pending.append(index)
                outcomes.append(Outcome())
            else:
                outcomes.append(found)
        return outcomes, pending

    @property
    def direct(self) -> DirectChat | None:
        """The model called straight through its client when nothing observes a call (``None``: never)."""
        return self._direct

    def _counters(
        self, requests: Sequence[Request[Any]], pending: Sequence[int], callbacks: Callbacks
    ) -> list[ReplyCounter] | None:
        """The reply counters to tell when this run's calls go straight through the model's client, else ``None``.

        Direct when the model is a plain ``ChatOpenAI`` (:class:`~langchain_tag.calls.direct.DirectChat`), its
        requests plain chat completions, and nothing but reply counters would see a call; the calls are then the
        same requests through the same client, without LangChain's per-call run machinery.
        """
        if self._direct is None or not pending or not self._direct.sendable(requests[pending[0]].messages):
            return None
        return self._direct.counters(callbacks)

    def _stream(
        self, requests: Sequence[Request[Any]], counters: list[ReplyCounter] | None, callbacks: Callbacks
    ) -> Iterator[tuple[int, Any]]:
        """``(index, reply or exception)`` as each call ends: straight through the client, or through the runnable."""
        if counters is not None:
            return self._direct_stream(requests, counters)
        configs = self._configs(requests, callbacks)
        return self._sent.batch_as_completed([r.messages for r in requests], config=configs, return_exceptions=True)

    def _astream(
        self, requests: Sequence[Request[Any]], counters: list[ReplyCounter] | None, callbacks: Callbacks
    ) -> AsyncIterator[tuple[int, Any]]:
        """Async twin of :meth:`_stream`."""
        if counters is not None:
            return self._adirect_stream(requests, counters)
        configs = self._configs(requests, callbacks)
        return self._sent.abatch_as_completed([r.messages for r in requests], config=configs, return_exceptions=True)

    def _direct_call(self, request: Request[Any], counters: Sequence[ReplyCounter]) -> Any:
        """One direct call in a worker thread: the reply (kept and counted as it arrives) or the exception."""
        assert self._direct is not None
        try:
            with self.gate.place() if self.gate is not None else nullcontext():
                reply = self._direct.send(request.messages)
        except Exception as exc:
            return exc
        self._arrived(request, reply, counters)
        return reply

    async def _adirect_call(
        self, request: Request[Any], counters: Sequence[ReplyCounter], cap: asyncio.Semaphore
    ) -> Any:
        assert self._direct is not None
        try:
            async with cap, self.gate.aplace() if self.gate is not None else nullcontext():
                reply = await self._direct.asend(request.messages)
        except Exception as exc:
            return exc
        self._arrived(request, reply, counters)
        return reply

    def _arrived(self, request: Request[Any], reply: AIMessage, counters: Sequence[ReplyCounter]) -> None:
        """What the keeper and the counters do for a reply of the runnable path, for a direct one."""
        if self.store is not None and request.key is not None:
            _keep(self.store, request, reply)
        if counters:
            result = reply_result(reply)
            for counter in counters:
                counter.on_llm_end(result, run_id=uuid.uuid4())

    def _direct_stream(
        self, requests: Sequence[Request[Any]], counters: Sequence[ReplyCounter]
    ) -> Iterator[tuple[int, Any]]:
        """``(index, reply or exception)`` as each direct call ends, ``max_concurrency`` threads at once."""
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            futures = {pool.submit(self._direct_call, r, counters): i for i, r in enumerate(requests)}
            try:
                for future in as_completed(futures):
                    yield futures[future], future.result()
            finally:
                for future in futures:
                    future.cancel()

    async def _adirect_stream(
        self, requests: Sequence[Request[Any]], counters: Sequence[ReplyCounter]
    ) -> AsyncIterator[tuple[int, Any]]:
        """Async twin of :meth:`_direct_stream`: ``max_concurrency`` calls in flight."""
        cap = asyncio.Semaphore(self.max_concurrency)

        async def call(index: int, request: Request[Any]) -> tuple[int, Any]:
            return index, await self._adirect_call(request, counters, cap)

        tasks = [asyncio.ensure_future(call(i, r)) for i, r in enumerate(requests)]
        try:
            for next_done in asyncio.as_completed(tasks):
                yield await next_done
        finally:
            for task in tasks:
                task.cancel()

    def _configs(self, requests: Sequence[Request[Any]], callbacks: Callbacks) -> list[RunnableConfig]:
        return [
            RunnableConfig(
                max_concurrency=self.max_concurrency,
                callbacks=_with_keeper(callbacks, self.store, r),
                run_name=r.run_name,  # type: ignore[typeddict-item]
                tags=list(r.tags),
                metadata=dict(r.metadata),
            )
            for r in requests
        ]

    def _bar(self, total: int, done: int, desc: str) -> Any:
        disable = (not sys.stderr.isatty()) if self.show_progress is None else not self.show_progress
        return tqdm(total=total, initial=done, desc=desc, disable=disable or total == 0, leave=False)

    def _take(self, request: Request[T], outcome: Outcome[T], reply: Any, bar: Any) -> bool:
        """Record one reply in ``outcome``; return whether the request should be sent again."""
        outcome.attempts += 1
        if isinstance(reply, BaseException):
            outcome.error = f"{describe_error(reply)} (from {describe_model(self.model)})"
            outcome.fault, outcome.reply = reply, ""
            # A permanent fault (400, 401, 403, 404, 413, 422) is never sent again, nor a transport fault the
            # model's client already retried; the client's retries are counted in the error's request count.
            retried = client_retries(self.model) if is_transient(reply) else 0
            if retried:
                outcome.error += f" ({outcome.attempts + retried} requests sent, {retried} of them by its client)"
            return not (is_permanent(reply) or retried)
        outcome.fault = None
        usage: Any = reply.usage_metadata if isinstance(reply, AIMessage) else getattr(reply, "usage", None)
        if usage and not isinstance(usage, Mapping):  # a decision model's usage object
            usage = {
                "input_tokens": getattr(usage, "input_tokens", 0),
                "output_tokens": getattr(usage, "output_tokens", 0),
            }
        outcome.prompt_tokens += int((usage or {}).get("input_tokens") or 0)
        outcome.completion_tokens += int((usage or {}).get("output_tokens") or 0)
        outcome.reply = reply.text if isinstance(reply, BaseMessage) else reply if isinstance(reply, str) else ""
        kept = _READ.pop(id(reply), None)  # the keeper's reading of this very reply, made as it arrived
        try:
            outcome.value = kept[1] if kept is not None and kept[0] is reply else request.parse(reply)
        except ParseError as exc:
            outcome.error = str(exc)
            return True
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            outcome.error = f"unexpected reply structure: {type(exc).__name__}: {exc}"
            return True
        outcome.error = None  # the store already has it: _Keeper put it there as it arrived
        bar.update(1)
        return False

    def _next_round(self, outcomes: Sequence[Outcome[Any]], retry: list[int], attempt: int) -> tuple[list[int], float]:
        """The requests to send in the next round, and the backoff before it (when it resends one that raised)."""
        pending = sorted(retry) if attempt < self.max_attempts else []
        if any(outcomes[i].fault is not None for i in pending):
            return pending, backoff_delay(attempt, base=self.retry_backoff)
        return pending, 0.0


_READ: dict[int, tuple[Any, Any]] = {}
"""Replies a keeper has read as they arrived, by the reply object's id (with the reply, so the id stays its own)."""


class _Keeper(BaseCallbackHandler):
    """Puts one request's readable reply in the store as soon as it arrives, in the thread it arrives on.

    Storing there, not when the runner's loop takes the reply, means an interrupted run (a kill, Ctrl-C)
    loses no reply that had arrived: neither one not yet taken by the loop nor a call in flight that
    finishes while the run shuts down.
    """

    run_inline = True
    raise_error = True  # a fault of the keeper itself is not to be logged and forgotten

    def __init__(self, store: RunnerStore, request: Request[Any]) -> None:
        self.store = store
        self.request = request

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        if isinstance(generation, ChatGeneration):
            _keep(self.store, self.request, generation.message)


def _keep(store: RunnerStore, request: Request[Any], reply: BaseMessage) -> None:
    """Put a readable reply in the store as it arrives; note the reading so the runner does not parse it again."""
    outcome: Outcome[Any] = Outcome(attempts=1, reply=message_text(reply))
    if isinstance(reply, AIMessage) and reply.usage_metadata:
        outcome.prompt_tokens = reply.usage_metadata.get("input_tokens", 0)
        outcome.completion_tokens = reply.usage_metadata.get("output_tokens", 0)
    try:
        outcome.value = request.parse(reply)
    except (ParseError, KeyError, TypeError, ValueError, AttributeError):
        return
    try:
        store.put(request, outcome)
    except Exception as exc:  # the reply stays good; the run raises this when it ends (_settle)
        _FAILED_PUTS.setdefault(id(store), (store, exc))
    _READ[id(reply)] = (reply, outcome.value)  # the runner takes this reading instead of parsing again


_FAILED_PUTS: dict[int, tuple[Any, BaseException]] = {}
"""The first failure of each store to keep a reply, by the store's id (with the store, so the id stays its own)."""


def _settle(store: RunnerStore | None) -> None:
    """At the end of a run: commit what the store holds back, and raise the first reply it failed to keep.

    A store that cannot keep what is paid for stops the work (a full disk, a lock
    held elsewhere) instead of letting it go on judging what will be lost.
    """
    if store is None:
        return
    flush = getattr(store, "flush", None)
    if callable(flush):
        flush()
    failed = _FAILED_PUTS.pop(id(store), None)
    if failed is not None and failed[0] is store:
        raise failed[1]


def _with_keeper(callbacks: Callbacks, store: RunnerStore | None, request: Request[Any]) -> Callbacks:
    """``callbacks`` plus a :class:`_Keeper` for ``request`` when it is to be stored."""
    if store is None or request.key is None:
        return callbacks
    keeper = _Keeper(store, request)
    if callbacks is None:
        return [keeper]
    if isinstance(callbacks, list):
        return [*callbacks, keeper]
    manager: BaseCallbackManager = callbacks.copy()
    manager.add_handler(keeper, inherit=True)
    return manager
