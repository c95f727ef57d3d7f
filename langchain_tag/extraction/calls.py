"""Running a batch of extraction calls: store, concurrency, retries, progress, tokens.

A :class:`Call` pairs a prompt with the parser for its reply. The
:class:`CallRunner` first looks each call up in the extraction store (if it
has one), then sends the rest through ``batch_as_completed`` (or its async
twin) with bounded concurrency, writes each readable reply to the store as
soon as it arrives, retries a call whose reply fails to parse or whose
request raises (see :mod:`langchain_tag.faults` for which layer retries
which fault), and records what still fails instead of raising. When the
provider cannot be used at all (every call so far in the run raised) it
raises a :class:`~langchain_tag.errors.ProviderError` naming the provider and
the call, rather than return an empty result.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from langchain_core.callbacks import Callbacks
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from tqdm.auto import tqdm

from langchain_tag.errors import ProviderError
from langchain_tag.extraction.store import ExtractionStore, StoredReply, call_key
from langchain_tag.faults import (
    backoff_delay,
    client_retries,
    describe_error,
    describe_model,
    is_transient,
    model_identity,
)
from langchain_tag.parsing import ParseError, message_text

__all__ = ["PHASE_NAMES", "Call", "CallFailure", "CallRunner", "PhaseUsage"]

T = TypeVar("T")

PHASE_NAMES = {1: "span detection", 2: "atomic decomposition", 3: "operationalisation", 4: "deduplication"}
"""What each LLM phase does, for messages."""


@dataclass
class Call(Generic[T]):
    """One LLM call of an extraction phase.

    Attributes:
        phase: Phase number (1-4).
        key: What the call is about, e.g. a section id; used in reports.
        messages: The prompt.
        parse: Reads the reply text; raises :class:`ParseError` when it cannot.
    """

    phase: int
    key: str
    messages: list[BaseMessage]
    parse: Callable[[str], T]

    def describe(self) -> str:
        """E.g. ``"phase 1 (span detection) call 'policy#2'"``."""
        return f"phase {self.phase} ({PHASE_NAMES.get(self.phase, 'extraction')}) call {self.key!r}"


@dataclass(frozen=True)
class CallFailure:
    """A call that failed after every attempt; its work is skipped and reported."""

    phase: int
    key: str
    error: str
    attempts: int


@dataclass
class PhaseUsage:
    """Calls and tokens spent in one phase.

    Attributes:
        calls: LLM calls made (attempts included).
        prompt_tokens: Prompt tokens reported by the model.
        completion_tokens: Completion tokens reported by the model.
        reused: Calls answered from the extraction store (no LLM call made).
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused: int = 0


@dataclass
class _Outcome:
    """What one reply gave: a parsed value, or an error and whether it was a raised fault."""

    ok: bool
    value: Any = None
    error: str = ""
    fault: BaseException | None = None


@dataclass
class _Batch:
    """Book-keeping for one :meth:`CallRunner.run`."""

    calls: Sequence[Call[Any]]
    results: list[Any]
    errors: dict[int, _Outcome] = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)
    replied: bool = False


@dataclass
class CallRunner:
    """Send calls with bounded concurrency and bounded retries, reusing stored replies.

    Attributes:
        llm: The extraction model.
        max_concurrency: Most calls in flight.
        max_attempts: Attempts per call before it is recorded as failed.
        show_progress: ``True``/``False``, or ``None`` for "only on a TTY".
        callbacks: Passed to every call.
        store: Finished calls from earlier runs; new readable replies are added.
        retry_backoff: Base delay in seconds before sending failed requests
            again (exponential, with jitter), when the model's client does not
            retry them itself.
    """

    llm: BaseChatModel
    max_concurrency: int = 4
    max_attempts: int = 2
    show_progress: bool | None = None
    callbacks: Callbacks = None
    store: ExtractionStore | None = None
    retry_backoff: float = 1.0
    failures: list[CallFailure] = field(default_factory=list)
    usage: dict[int, PhaseUsage] = field(default_factory=lambda: defaultdict(PhaseUsage))
    _model: str | None = field(default=None, init=False, repr=False)
    _replied: bool = field(default=False, init=False, repr=False)

    def _config(self, phase: int) -> RunnableConfig:
        return RunnableConfig(
            max_concurrency=self.max_concurrency, callbacks=self.callbacks, run_name=f"tag_extract_phase{phase}"
        )

    def _bar(self, total: int, desc: str) -> Any:
        disable = (not sys.stderr.isatty()) if self.show_progress is None else not self.show_progress
        return tqdm(total=total, desc=desc, disable=disable or total == 0, leave=False)

    def _key(self, call: Call[Any]) -> str:
        if self._model is None:
            self._model = model_identity(self.llm)
        return call_key(model=self._model, phase=call.phase, messages=call.messages)

    def _reuse(self, batch: _Batch, bar: Any) -> list[int]:
        """Fill results from the store; return the indices still to send."""
        if self.store is None:
            return list(range(len(batch.calls)))
        pending = []
        for index, call in enumerate(batch.calls):
            stored = self.store.get(self._key(call))
            outcome = None if stored is None else self._parse(call, stored.text)
            if outcome is None or not outcome.ok:
                pending.append(index)
                continue
            batch.results[index] = outcome.value
            batch.replied = True
            self.usage[call.phase].reused += 1
            bar.update(1)
        return pending

    @staticmethod
    def _parse(call: Call[Any], text: str) -> _Outcome:
        try:
            return _Outcome(True, call.parse(text))
        except ParseError as exc:
            return _Outcome(False, error=str(exc))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return _Outcome(False, error=f"unexpected reply structure: {type(exc).__name__}: {exc}")

    def _take(self, batch: _Batch, index: int, reply: Any, bar: Any) -> bool:
        """Record one reply; return whether the call should be sent again."""
        call = batch.calls[index]
        usage = self.usage[call.phase]
        usage.calls += 1
        batch.attempts[index] = batch.attempts.get(index, 0) + 1
        if isinstance(reply, BaseException):
            error = f"{describe_error(reply)} (from {describe_model(self.llm)})"
            batch.errors[index] = _Outcome(False, error=error, fault=reply)
            # A transport fault the model's client already retried is not sent again.
            return not (is_transient(reply) and client_retries(self.llm))
        batch.replied = True
        tokens = (0, 0)
        if isinstance(reply, AIMessage) and reply.usage_metadata:
            tokens = (reply.usage_metadata.get("input_tokens", 0), reply.usage_metadata.get("output_tokens", 0))
            usage.prompt_tokens += tokens[0]
            usage.completion_tokens += tokens[1]
        text = message_text(reply)
        outcome = self._parse(call, text)
        if not outcome.ok:
            batch.errors[index] = outcome
            return True
        batch.results[index] = outcome.value
        batch.errors.pop(index, None)
        if self.store is not None:
            self.store.put(self._key(call), call.phase, StoredReply(text, *tokens))
        bar.update(1)
        return False

    def _next_round(self, batch: _Batch, retry: list[int], attempt: int) -> tuple[list[int], float]:
        """The calls to send in the next round, and the backoff before it (when it resends a request that raised)."""
        pending = sorted(retry) if attempt < self.max_attempts else []
        if any(batch.errors[i].fault is not None for i in pending):
            return pending, backoff_delay(attempt, base=self.retry_backoff)
        return pending, 0.0

    def _finish(self, batch: _Batch) -> None:
        for index, outcome in sorted(batch.errors.items()):
            call = batch.calls[index]
            self.failures.append(CallFailure(call.phase, call.key, outcome.error, batch.attempts.get(index, 0)))
        if batch.replied:
            self._replied = True
        elif not self._replied and batch.errors:
            index = max(batch.errors)
            call = batch.calls[index]
            raise ProviderError(
                f"every {PHASE_NAMES.get(call.phase, 'extraction')} call failed at {describe_model(self.llm)}; "
                f"last: {call.describe()} after {batch.attempts.get(index, 0)} attempt(s): "
                f"{describe_error(batch.errors[index].fault or RuntimeError(batch.errors[index].error))}"
                + ("; finished calls are kept in the store, run again to resume" if self.store is not None else "")
            )

    def run(self, calls: Sequence[Call[T]], desc: str = "extracting") -> list[T | None]:
        """Run calls; return parsed results in call order (``None`` where a call failed).

        Raises:
            ProviderError: When every call made so far in the run raised.
        """
        batch = _Batch(calls, [None] * len(calls))
        with self._bar(len(calls), desc) as bar:
            pending = self._reuse(batch, bar)
            for attempt in range(1, self.max_attempts + 1):
                if not pending:
                    break
                stream = self.llm.batch_as_completed(
                    [calls[i].messages for i in pending],
                    config=self._config(calls[pending[0]].phase),
                    return_exceptions=True,
                )
                retry = [pending[pos] for pos, reply in stream if self._take(batch, pending[pos], reply, bar)]
                pending, delay = self._next_round(batch, retry, attempt)
                time.sleep(delay)
        self._finish(batch)
        return batch.results

    async def arun(self, calls: Sequence[Call[T]], desc: str = "extracting") -> list[T | None]:
        """Async twin of :meth:`run`."""
        batch = _Batch(calls, [None] * len(calls))
        with self._bar(len(calls), desc) as bar:
            pending = self._reuse(batch, bar)
            for attempt in range(1, self.max_attempts + 1):
                if not pending:
                    break
                stream = self.llm.abatch_as_completed(
                    [calls[i].messages for i in pending],
                    config=self._config(calls[pending[0]].phase),
                    return_exceptions=True,
                )
                retry = [pending[pos] async for pos, reply in stream if self._take(batch, pending[pos], reply, bar)]
                pending, delay = self._next_round(batch, retry, attempt)
                await asyncio.sleep(delay)
        self._finish(batch)
        return batch.results
