"""Running a batch of extraction calls: store, concurrency, retries, progress, tokens.

A :class:`Call` pairs a prompt with the parser for its reply. The
:class:`PhaseCalls` hands the calls to the package's one call runner
(:class:`langchain_tag.calls._runner.CallRunner`), which looks each call up in the
extraction store (if it has one), sends the rest with bounded concurrency,
writes each readable reply to the store as soon as it arrives, and retries a
call whose reply fails to parse or whose request raises (see
:mod:`langchain_tag.calls._faults` for which layer retries which fault). Here the
usage is accounted per phase and what still fails is recorded instead of
raised. When the
provider cannot be used at all (every call so far in the run raised) it
raises a :class:`~langchain_tag.errors.ProviderError` naming the provider and
the call, rather than return an empty result.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from langchain_core.callbacks import Callbacks
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from langchain_tag.calls._faults import describe_error
from langchain_tag.calls._identity import describe_model, model_identity
from langchain_tag.calls._limits import CallLimits
from langchain_tag.calls._replies import message_text
from langchain_tag.calls._runner import CallRunner, Outcome, Request
from langchain_tag.calls._secrets import secrets_of
from langchain_tag.errors import ParseError, ProviderError
from langchain_tag.extraction.store import ExtractionStore, StoredReply, call_key

__all__ = ["PHASE_NAMES", "Call", "CallFailure", "PhaseCalls", "PhaseUsage"]

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


class _StoreAdapter:
    """The extraction store seen by the shared runner: a stored reply is parsed again on reading."""

    def __init__(self, runner: PhaseCalls, requests: Sequence[Request[Outcome[Any]]]) -> None:
        self._runner = runner
        self._requests = {request.key: request for request in requests if request.key is not None}

    def get(self, key: str) -> Outcome[Any] | None:
        store = self._runner.store
        stored = store.get(key) if store is not None else None
        request = self._requests.get(key)
        if stored is None or request is None:
            return None
        try:
            outcome: Outcome[Any] = request.parse(AIMessage(stored.text))
        except (ParseError, KeyError, TypeError, ValueError, AttributeError):
            return None
        return replace(outcome, reply=stored.text)

    def put(self, key: str, outcome: Outcome[Any]) -> None:
        store = self._runner.store
        if store is not None and key in self._requests:
            phase = int(self._requests[key].metadata["tag_phase"])
            store.put(key, phase, StoredReply(outcome.reply, outcome.prompt_tokens, outcome.completion_tokens))


@dataclass
class PhaseCalls:
    """Send extraction calls through the shared :class:`~langchain_tag.calls._runner.CallRunner`, reusing replies.

    Attributes:
        llm: The extraction model.
        limits: Calls in flight, attempts per call, the backoff before a resend
            (:class:`~langchain_tag.calls._limits.CallLimits`).
        show_progress: ``True``/``False``, or ``None`` for "only on a TTY".
        callbacks: Passed to every call.
        store: Finished calls from earlier runs; new readable replies are added.
    """

    llm: BaseChatModel
    limits: CallLimits = field(default_factory=CallLimits)
    show_progress: bool | None = None
    callbacks: Callbacks = None
    store: ExtractionStore | None = None
    failures: list[CallFailure] = field(default_factory=list)
    usage: dict[int, PhaseUsage] = field(default_factory=lambda: defaultdict(PhaseUsage))
    _model: str | None = field(default=None, init=False, repr=False)
    _replied: bool = field(default=False, init=False, repr=False)

    def _requests(self, calls: Sequence[Call[T]]) -> list[Request[Outcome[T]]]:
        if self._model is None:
            self._model = model_identity(self.llm)
        return [
            Request(
                messages=call.messages,
                parse=_text_parser(call.parse),
                blank=Outcome(),
                key=call_key(model=self._model, phase=call.phase, messages=call.messages),
                run_name=f"tag_extract_phase{call.phase}",
                metadata={"tag_phase": call.phase},
            )
            for call in calls
        ]

    def _shared(self, requests: Sequence[Request[Outcome[Any]]]) -> CallRunner:
        return CallRunner(
            self.llm,
            limits=self.limits,
            store=_StoreAdapter(self, requests),
            show_progress=self.show_progress,
        )

    def run(self, calls: Sequence[Call[T]], desc: str = "extracting") -> list[T | None]:
        """Run calls; return parsed results in call order (``None`` where a call failed).

        Raises:
            ProviderError: When every call made so far in the run raised.
        """
        requests = self._requests(calls)
        outcomes = self._shared(requests).run(requests, callbacks=self.callbacks, desc=desc)
        return self._finish(calls, outcomes)

    async def arun(self, calls: Sequence[Call[T]], desc: str = "extracting") -> list[T | None]:
        """Async twin of :meth:`run`."""
        requests = self._requests(calls)
        outcomes = await self._shared(requests).arun(requests, callbacks=self.callbacks, desc=desc)
        return self._finish(calls, outcomes)

    def _finish(self, calls: Sequence[Call[T]], outcomes: Sequence[Outcome[T]]) -> list[T | None]:
        """Account usage, record failures, and raise when the provider answered nothing at all."""
        replied = False
        for call, outcome in zip(calls, outcomes, strict=True):
            usage = self.usage[call.phase]
            usage.calls += outcome.attempts
            usage.prompt_tokens += outcome.prompt_tokens
            usage.completion_tokens += outcome.completion_tokens
            usage.reused += outcome.cached
            replied = replied or outcome.cached or bool(outcome.attempts and (outcome.ok or outcome.fault is None))
            if not outcome.ok:
                self.failures.append(CallFailure(call.phase, call.key, outcome.error or "", outcome.attempts))
        if replied:
            self._replied = True
        failed = [i for i, o in enumerate(outcomes) if not o.ok]
        if not self._replied and failed:
            index = failed[-1]
            call, outcome = calls[index], outcomes[index]
            raise ProviderError(
                f"every {PHASE_NAMES.get(call.phase, 'extraction')} call failed at {describe_model(self.llm)}; "
                f"last: {call.describe()} after {outcome.attempts} attempt(s): "
                f"{describe_error(outcome.fault or RuntimeError(outcome.error or ''), secrets=secrets_of(self.llm))}"
                + ("; finished calls are kept in the store, run again to resume" if self.store is not None else "")
            )
        return [o.value if o.ok else None for o in outcomes]


def _text_parser(parse: Callable[[str], T]) -> Callable[[BaseMessage], Outcome[T]]:
    """A call's text parser as a reply reader: the parsed value in the call's record."""

    def read(reply: BaseMessage) -> Outcome[T]:
        return Outcome(value=parse(message_text(reply)))

    return read
