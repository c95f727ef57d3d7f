"""Running a batch of extraction calls: concurrency, parse retries, progress, tokens.

A :class:`Call` pairs a prompt with the parser for its reply. The
:class:`CallRunner` sends calls through ``batch_as_completed`` (or its async
twin) with bounded concurrency, retries a call whose reply fails to parse or
whose request raises, and records what still fails instead of raising.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from langchain_core.callbacks import Callbacks
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from tqdm.auto import tqdm

from langchain_tag.parsing import ParseError, message_text

__all__ = ["Call", "CallFailure", "CallRunner", "PhaseUsage"]

T = TypeVar("T")


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


@dataclass(frozen=True)
class CallFailure:
    """A call that failed after every attempt; its work is skipped and reported."""

    phase: int
    key: str
    error: str
    attempts: int


@dataclass
class PhaseUsage:
    """Calls and tokens spent in one phase."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class CallRunner:
    """Send calls with bounded concurrency and bounded retries.

    Attributes:
        llm: The extraction model.
        max_concurrency: Most calls in flight.
        max_attempts: Attempts per call before it is recorded as failed.
        show_progress: ``True``/``False``, or ``None`` for "only on a TTY".
        callbacks: Passed to every call.
    """

    llm: BaseChatModel
    max_concurrency: int = 4
    max_attempts: int = 2
    show_progress: bool | None = None
    callbacks: Callbacks = None
    failures: list[CallFailure] = field(default_factory=list)
    usage: dict[int, PhaseUsage] = field(default_factory=lambda: defaultdict(PhaseUsage))

    def _config(self, phase: int) -> RunnableConfig:
        return RunnableConfig(
            max_concurrency=self.max_concurrency, callbacks=self.callbacks, run_name=f"tag_extract_phase{phase}"
        )

    def _bar(self, total: int, desc: str) -> Any:
        disable = (not sys.stderr.isatty()) if self.show_progress is None else not self.show_progress
        return tqdm(total=total, desc=desc, disable=disable or total == 0, leave=False)

    def _record(self, call: Call[Any], reply: Any) -> tuple[bool, Any]:
        usage = self.usage[call.phase]
        usage.calls += 1
        if isinstance(reply, BaseException):
            return False, f"{type(reply).__name__}: {reply}"
        if isinstance(reply, AIMessage) and reply.usage_metadata:
            usage.prompt_tokens += reply.usage_metadata.get("input_tokens", 0)
            usage.completion_tokens += reply.usage_metadata.get("output_tokens", 0)
        try:
            return True, call.parse(message_text(reply))
        except ParseError as exc:
            return False, str(exc)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return False, f"unexpected reply structure: {type(exc).__name__}: {exc}"

    def _take(
        self,
        calls: Sequence[Call[Any]],
        index: int,
        reply: Any,
        results: list[Any],
        errors: dict[int, str],
        retry: list[int],
        bar: Any,
    ) -> None:
        ok, value = self._record(calls[index], reply)
        if ok:
            results[index] = value
            errors.pop(index, None)
            bar.update(1)
        else:
            errors[index] = value
            retry.append(index)

    def _finish(self, calls: Sequence[Call[Any]], errors: dict[int, str]) -> None:
        for index, error in errors.items():
            call = calls[index]
            self.failures.append(CallFailure(call.phase, call.key, error, self.max_attempts))

    def run(self, calls: Sequence[Call[T]], desc: str = "extracting") -> list[T | None]:
        """Run calls; return parsed results in call order (``None`` where a call failed)."""
        results: list[Any] = [None] * len(calls)
        errors: dict[int, str] = {}
        pending = list(range(len(calls)))
        with self._bar(len(calls), desc) as bar:
            for _ in range(self.max_attempts):
                if not pending:
                    break
                phase = calls[pending[0]].phase
                retry: list[int] = []
                stream = self.llm.batch_as_completed(
                    [calls[i].messages for i in pending], config=self._config(phase), return_exceptions=True
                )
                for pos, reply in stream:
                    self._take(calls, pending[pos], reply, results, errors, retry, bar)
                pending = sorted(retry)
        self._finish(calls, errors)
        return results

    async def arun(self, calls: Sequence[Call[T]], desc: str = "extracting") -> list[T | None]:
        """Async twin of :meth:`run`."""
        results: list[Any] = [None] * len(calls)
        errors: dict[int, str] = {}
        pending = list(range(len(calls)))
        with self._bar(len(calls), desc) as bar:
            for _ in range(self.max_attempts):
                if not pending:
                    break
                phase = calls[pending[0]].phase
                retry: list[int] = []
                stream = self.llm.abatch_as_completed(
                    [calls[i].messages for i in pending], config=self._config(phase), return_exceptions=True
                )
                async for pos, reply in stream:
                    self._take(calls, pending[pos], reply, results, errors, retry, bar)
                pending = sorted(retry)
        self._finish(calls, errors)
        return results
