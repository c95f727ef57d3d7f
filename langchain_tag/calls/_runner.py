"""The one call runner: every model call of extraction and judging goes through :class:`CallRunner`.

A :class:`Request` pairs a prompt with the parser of its reply. The runner

- looks each request up in a store first (the extraction store, the verdict
  cache: anything with ``get``/``put`` by request, :class:`RunnerStore`),
- sends the rest with bounded concurrency (worker threads, or tasks of the
  caller's event loop), each through the runnable with a config of its own
  (the caller's callbacks, run name, tags, metadata); or, when nothing but
  reply counters would see a call of a plain ``ChatOpenAI``, straight
  through its own client (:mod:`langchain_tag.calls._direct`), the same
  requests without LangChain's per-call run machinery; the choice is made
  once per run,
- reads each reply once, with the request's parser, in the thread or task
  it arrived on, and puts a readable one in the store there and then,
- retries what failed, once per attempt up to ``max_attempts``: a reply that
  did not parse always, a request that raised unless it was a transport fault
  the model's own client already retried (:mod:`langchain_tag.calls._faults`), after
  a backoff with jitter when it resends a request that raised,
- and records calls and tokens per request in the request's record (:class:`Record`: an
  :class:`Outcome` for a parsed value, a :class:`~langchain_tag.judging.results.Reading` for a verdict).

It never raises for a failed call: what still fails is reported in the
outcomes, and the caller decides what that means (the judge counts it as NO,
extraction skips the item, either raises
:class:`~langchain_tag.errors.ProviderError` when nothing could be called).
What it does raise is a store that cannot keep a reply it paid for
(:class:`~langchain_tag.judging.verdict_cache.VerdictCacheError`, at the end of
the run): judging on while the verdicts are lost would only cost more.

What a run hands between its calls and its loop belongs to that run; nothing is kept at module level.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import as_completed
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from langchain_core.callbacks import BaseCallbackHandler, Callbacks
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import ContextThreadPoolExecutor
from tqdm.auto import tqdm

from langchain_tag.calls._faults import backoff_delay, client_retries, describe_error, is_permanent, is_transient
from langchain_tag.calls._gate import Gate
from langchain_tag.calls._identity import describe_model
from langchain_tag.calls._limits import CallLimits
from langchain_tag.calls._replies import message_text
from langchain_tag.calls._secrets import secrets_of
from langchain_tag.errors import ParseError

__all__ = ["CallRunner", "ChatRunnable", "Outcome", "Record", "ReplyCounter", "Request", "RunnerStore"]

T = TypeVar("T")


class Record(Protocol):
    """What a request's record is to the runner: a dataclass with these fields, each next one a ``replace``.

    :class:`Outcome` (a parsed value) and :class:`~langchain_tag.judging.results.Reading` (a verdict) are records.
    """

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def attempts(self) -> int:
        """Calls made (0 when the store answered)."""
        ...

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens reported, over all attempts."""
        ...

    @property
    def completion_tokens(self) -> int:
        """Completion tokens reported, over all attempts."""
        ...

    @property
    def reply(self) -> str:
        """The last reply text."""
        ...

    @property
    def error(self) -> str | None:
        """Why the request failed after its last attempt, if it did."""
        ...

    @property
    def cached(self) -> bool:
        """Whether the store answered (no call made)."""
        ...


R = TypeVar("R", bound=Record)


@dataclass
class Request(Generic[R]):
    """One model call to make.

    Attributes:
        messages: The model's input: chat messages (LangChain messages or OpenAI-style dicts, sent as they
            are), or a decision model's request.
        parse: Reads the reply into this request's record; raises :class:`~langchain_tag.errors.ParseError`
            when it cannot.
        blank: The record of a request nothing was read for yet (the runner fills in calls, tokens and errors).
        key: The store key (``None``: not stored).
        key_of: The store key of a reply, when it can differ from ``key`` (a reply another model gave is kept
            under that model's key); ``None``: always ``key``.
        run_name: The call's run name in traces.
        tags: Tags of the call's run.
        metadata: Metadata of the call's run.
    """

    messages: Any
    parse: Callable[[Any], R]
    blank: R
    key: str | None = None
    key_of: Callable[[Any], str] | None = None
    run_name: str | None = None
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome(Generic[T]):
    """The record of a request whose reply is parsed into a value (an extraction call's).

    Attributes:
        value: The parsed reply (``None`` when the request failed).
        error: Why it failed after its last attempt, if it did.
        fault: The exception of the last attempt, when it raised.
        attempts: Calls made (0 when the store answered).
        prompt_tokens: Prompt tokens reported by the model, over all attempts.
        completion_tokens: Completion tokens, over all attempts.
        reply: The last reply text.
        cached: Whether the store answered (no call made).
    """

    value: T | None = None
    error: str | None = None
    fault: BaseException | None = None
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reply: str = ""
    cached: bool = False

    @property
    def ok(self) -> bool:
        """Whether the request gave a readable reply."""
        return self.error is None and (self.cached or self.attempts > 0)


class RunnerStore(Protocol):
    """Where finished calls are kept: a record by its request's key, and a new readable one put back.

    A store may hold writes back (``holds_back``) until its ``flush``, which the runner calls after every run.
    """

    def get(self, key: str) -> Any:
        """The finished record under ``key`` (the runner marks it ``cached``), or ``None``."""
        ...

    def put(self, key: str, record: Any) -> None:
        """Keep a readable record just received (its one attempt and tokens)."""
        ...


ChatRunnable = Runnable[LanguageModelInput, BaseMessage]
"""A chat model or any runnable built from one (``llm.bind(...)``, ``.with_retry()``, ``.with_fallbacks()``)."""


class DirectSender(Protocol):
    """How a run sends straight through a model's own client (:class:`~langchain_tag.calls._direct.DirectChat`)."""

    @property
    def may_run_on_own_loop(self) -> bool:
        """Whether a sync job may send from an event loop of its own."""
        ...

    def sendable(self, messages: Any) -> bool:
        """Whether ``messages`` go out as a plain chat completion."""
        ...

    def counters(self, callbacks: Callbacks, counter_type: type[BaseCallbackHandler]) -> list[Any] | None:
        """The handlers a call would have when all are ``counter_type``; ``None`` when another would see it."""
        ...

    def send(self, messages: Any) -> AIMessage:
        """Send one request and read its reply."""
        ...

    async def asend(self, messages: Any) -> AIMessage:
        """Async twin of :meth:`send`."""
        ...


class ReplyCounter(BaseCallbackHandler):
    """A handler that only counts replies (a progress bar): a call only such handlers see may be sent directly.

    It is told of each reply with :meth:`on_llm_end`, whichever way the call went.
    """

    run_inline = True


@dataclass
class _Run:
    """What one run hands between its calls and its loop: how it sends, its cap, the store's failures, the faults.

    Attributes:
        send: Sends one request and returns the reply (in a worker thread).
        asend: Async twin of ``send``.
        slot: The place a call holds in the shared gate while it runs (in threads).
        counters: The reply counters to tell of each reply sent straight through the model's client.
        failed_put: What the store raised while keeping a reply (the run raises the first when it ends).
        faults: The exception of each request whose last call raised (its resending waits a backoff).
    """

    send: Callable[[Request[Any]], Any]
    asend: Callable[[Request[Any]], Awaitable[Any]]
    slot: AbstractContextManager[Any]
    counters: Sequence[ReplyCounter] = ()
    failed_put: list[BaseException] = field(default_factory=list)
    faults: dict[int, BaseException] = field(default_factory=dict)


@dataclass
class CallRunner:
    """Send requests with bounded concurrency and bounded retries, reusing stored records.

    Attributes:
        llm: What is called: a chat model or a runnable built from one.
        model: The model whose client retries and description count (default: ``llm``), e.g. the
            bare model when ``llm`` is a ``bind``-configured copy of it.
        limits: How many calls in flight, how many attempts per request, the backoff before a resend
            (:class:`~langchain_tag.calls._limits.CallLimits`, checked when made).
        store: Finished calls; readable new replies are added.
        show_progress: A progress bar: ``True``/``False``, or ``None`` for "only on a terminal".
        gate: A cap on calls in flight shared with other runners (and other calls of this one), beside
            ``max_concurrency``'s cap on one run.
    """

    llm: ChatRunnable
    model: Any = None
    limits: CallLimits = field(default_factory=CallLimits)
    store: RunnerStore | None = None
    show_progress: bool | None = False
    gate: Gate | None = None

    def __post_init__(self) -> None:
        if self.model is None:
            self.model = self.llm

    @cached_property
    def secrets(self) -> tuple[str, ...]:
        """The keys masked in its calls' error texts (:func:`~langchain_tag.calls._secrets.secrets_of`)."""
        return secrets_of(self.model)

    @cached_property
    def direct(self) -> DirectSender | None:
        """The model called straight through its client when nothing observes a call (``None``: never).

        Worked out at the first run (the private hooks it needs checked then), once for the runner. The direct
        path wraps the ``openai`` extra: it is looked at only when ``langchain_openai`` is loaded (as it is when
        the model is a ``ChatOpenAI``).
        """
        if "langchain_openai" not in sys.modules:
            return None
        from langchain_tag.calls._direct import DirectChat

        return DirectChat.of(self.llm)

    def run(self, requests: Sequence[Request[R]], *, callbacks: Callbacks = None, desc: str = "") -> list[R]:
        """Run ``requests``; return one record per request, in request order."""
        records, pending = self._start(requests)
        run = self._run(requests, pending, callbacks)
        with self._bar(len(requests), len(requests) - len(pending), desc) as bar:
            for attempt in range(1, self.limits.max_attempts + 1):
                with ContextThreadPoolExecutor(max_workers=min(self.limits.max_concurrency, len(pending) or 1)) as pool:
                    futures = {pool.submit(self._call, run, requests[i]): i for i in pending}
                    retry = [futures[f] for f in as_completed(futures) if self._take(run, records, futures[f],
                                                                                     f.result(), bar)]  # fmt: skip
                if not retry:
                    break
                pending, delay = self._next_round(run, retry, attempt)
                time.sleep(delay)
        self._settle(run)
        return records

    async def arun(self, requests: Sequence[Request[R]], *, callbacks: Callbacks = None, desc: str = "") -> list[R]:
        """Async twin of :meth:`run`."""
        records, pending = self._start(requests)
        run = self._run(requests, pending, callbacks)
        cap = asyncio.Semaphore(self.limits.max_concurrency)
        slot = self.gate.aplace() if self.gate is not None else nullcontext()
        with self._bar(len(requests), len(requests) - len(pending), desc) as bar:
            for attempt in range(1, self.limits.max_attempts + 1):
                tasks = [asyncio.ensure_future(self._acall(run, i, requests[i], cap, slot)) for i in pending]
                retry = []
                try:
                    for done in asyncio.as_completed(tasks):
                        index, arrival = await done
                        if self._take(run, records, index, arrival, bar):
                            retry.append(index)
                finally:
                    for task in tasks:
                        task.cancel()
                if not retry:
                    break
                pending, delay = self._next_round(run, retry, attempt)
                await asyncio.sleep(delay)
        self._settle(run)
        return records

    def _start(self, requests: Sequence[Request[R]]) -> tuple[list[R], list[int]]:
        """Stored records filled in (marked cached, no call counted); the indices still to send."""
        records: list[R] = []
        pending: list[int] = []
        for index, request in enumerate(requests):
            found = self.store.get(request.key) if self.store is not None and request.key is not None else None
            if found is None:
                pending.append(index)
                records.append(request.blank)
            else:
                records.append(replace(found, cached=True, attempts=0, prompt_tokens=0, completion_tokens=0))
        return records, pending

    def _run(self, requests: Sequence[Request[Any]], pending: Sequence[int], callbacks: Callbacks) -> _Run:
        """How this run sends, chosen once: straight through the model's client, or through the runnable.

        Direct when the model is a plain ``ChatOpenAI`` (:class:`~langchain_tag.calls._direct.DirectChat`), its
        requests plain chat completions, and nothing but reply counters would see a call; the calls are then the
        same requests through the same client, without LangChain's per-call run machinery. Through the runnable,
        each call has a config of its own: the caller's callbacks, and the request's run name, tags and metadata.
        """
        slot = self.gate.threads if self.gate is not None else nullcontext()
        direct = self.direct
        if direct is not None and pending and direct.sendable(requests[pending[0]].messages):
            counters = direct.counters(callbacks, ReplyCounter)
            if counters is not None:
                return _Run(lambda r: direct.send(r.messages), lambda r: direct.asend(r.messages), slot, counters)
        llm = self.llm
        return _Run(
            lambda r: llm.invoke(r.messages, RunnableConfig(callbacks=callbacks, run_name=r.run_name,  # type: ignore[typeddict-item]
                                                            tags=list(r.tags), metadata=dict(r.metadata))),
            lambda r: llm.ainvoke(r.messages, RunnableConfig(callbacks=callbacks, run_name=r.run_name,  # type: ignore[typeddict-item]
                                                             tags=list(r.tags), metadata=dict(r.metadata))),
            slot,
        )  # fmt: skip

    def _call(self, run: _Run, request: Request[R]) -> R | BaseException:
        """One call in a worker thread, holding a place of the gate: its reply, read once and kept as it arrives."""
        try:
            with run.slot:
                reply = run.send(request)
        except Exception as exc:
            return exc
        return self._arrived(run, request, reply)

    async def _acall(
        self, run: _Run, index: int, request: Request[R], cap: asyncio.Semaphore, slot: AbstractAsyncContextManager[Any]
    ) -> tuple[int, R | BaseException]:
        """Async twin of :meth:`_call`, with the request's index for the loop that awaits it."""
        try:
            async with cap, slot:
                reply = await run.asend(request)
        except Exception as exc:
            return index, exc
        return index, self._arrived(run, request, reply)

    def _arrived(self, run: _Run, request: Request[R], reply: Any) -> R:
        """Read a reply once into the request's record, put a readable one in the store there and then.

        Storing as it arrives, not when the run's loop takes the reply, means an interrupted run (a kill,
        Ctrl-C) loses no reply that had arrived. The reply counters are told of it too.
        """
        for counter in run.counters:
            counter.on_llm_end(LLMResult(generations=[[ChatGeneration(message=reply)]]), run_id=uuid.uuid4())
        try:
            record = request.parse(reply)
        except ParseError as exc:
            record = replace(request.blank, error=str(exc))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            record = replace(request.blank, error=f"unexpected reply structure: {type(exc).__name__}: {exc}")
        usage: Any = reply.usage_metadata if isinstance(reply, AIMessage) else getattr(reply, "usage", None)
        if usage is not None and not isinstance(usage, Mapping):  # a decision model's usage object
            usage = {
                "input_tokens": getattr(usage, "input_tokens", 0),
                "output_tokens": getattr(usage, "output_tokens", 0),
            }
        usage = usage or {}
        record = replace(
            record,
            reply=record.reply or (message_text(reply) if isinstance(reply, BaseMessage | str) else ""),
            attempts=1,
            prompt_tokens=int(usage.get("input_tokens") or 0),
            completion_tokens=int(usage.get("output_tokens") or 0),
        )
        if record.error is None and self.store is not None and request.key is not None:
            try:
                self.store.put(request.key if request.key_of is None else request.key_of(reply), record)
            except Exception as exc:  # the reply stays good; the run raises this when it ends (_settle)
                run.failed_put.append(exc)
        return record

    def _bar(self, total: int, done: int, desc: str) -> Any:
        disable = (not sys.stderr.isatty()) if self.show_progress is None else not self.show_progress
        return tqdm(total=total, initial=done, desc=desc, disable=disable or total == 0, leave=False)

    def _take(self, run: _Run, records: list[R], index: int, arrival: R | BaseException, bar: Any) -> bool:
        """Count one call in ``records[index]``; return whether the request should be sent again."""
        before = records[index]
        attempts = before.attempts + 1
        if isinstance(arrival, BaseException):
            error = f"{describe_error(arrival, secrets=self.secrets)} (from {describe_model(self.model)})"
            # A permanent fault (400, 401, 403, 404, 413, 422) is never sent again, nor a transport fault the
            # model's client already retried; the client's retries are counted in the error's request count.
            retried = client_retries(self.model) if is_transient(arrival) else 0
            if retried:
                error += f" ({attempts + retried} requests sent, {retried} of them by its client)"
            fault = {"fault": arrival} if isinstance(before, Outcome) else {}
            records[index] = replace(before, attempts=attempts, error=error, reply="", **fault)
            run.faults[index] = arrival
            return not (is_permanent(arrival) or retried)
        run.faults.pop(index, None)
        records[index] = replace(
            arrival,
            attempts=attempts,
            prompt_tokens=before.prompt_tokens + arrival.prompt_tokens,
            completion_tokens=before.completion_tokens + arrival.completion_tokens,
        )
        if arrival.error is not None:
            return True
        bar.update(1)
        return False

    def _next_round(self, run: _Run, retry: list[int], attempt: int) -> tuple[list[int], float]:
        """The requests to send in the next round, and the backoff before it (when it resends one that raised)."""
        pending = sorted(retry) if attempt < self.limits.max_attempts else []
        if any(i in run.faults for i in pending):
            return pending, backoff_delay(attempt, base=self.limits.retry_backoff)
        return pending, 0.0

    def _settle(self, run: _Run) -> None:
        """At the end of a run: commit what the store holds back, and raise the first reply it failed to keep.

        A store that cannot keep what is paid for stops the work (a full disk, a lock
        held elsewhere) instead of letting it go on judging what will be lost.
        """
        if self.store is None:
            return
        flush = getattr(self.store, "flush", None)
        if callable(flush) and (run.failed_put or getattr(self.store, "holds_back", True)):
            flush()
        if run.failed_put:
            raise run.failed_put[0]
