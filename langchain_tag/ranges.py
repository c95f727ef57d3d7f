"""Each numeric setting's range, defined once: every front checks a value with it and says the same thing.

The retriever's fields, the judge's settings, the call runner, the bulk jobs, the command line's options, the
served app's context, the agent middleware and the review page all check ``threshold``, ``max_concurrency`` and
the other numeric settings through the :class:`Range` of that name here, so a bad value gets the same message
wherever it is given.

Example:
    >>> THRESHOLD.check(0.7)
    0.7
    >>> check("max_concurrency", 0)
    Traceback (most recent call last):
    ...
    ValueError: max_concurrency must be a whole number >= 1, got 0
    >>> THRESHOLD.parse("1.5")
    Traceback (most recent call last):
    ...
    ValueError: threshold must be a number within [0, 1], got '1.5'
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "CHECK_ROUNDS",
    "CONTEXT_TOKENS",
    "MAX_ATTEMPTS",
    "MAX_CONCURRENCY",
    "RANGES",
    "RETRY_BACKOFF",
    "SIMILARITY_K",
    "THRESHOLD",
    "Range",
    "check",
]

N = TypeVar("N", int, float)


@dataclass(frozen=True)
class Range:
    """The values one numeric setting accepts.

    Attributes:
        name: The setting's name, as every front spells it.
        low: The smallest value accepted (``None``: no bound).
        high: The largest value accepted (``None``: no bound).
        whole: Only whole numbers (an ``int``, never a ``bool``).
    """

    name: str
    low: float | None = None
    high: float | None = None
    whole: bool = False

    @property
    def accepts(self) -> str:
        """What the setting accepts, in words: ``a number within [0, 1]``, ``a whole number >= 1``."""
        kind = "a whole number" if self.whole else "a number"
        if self.low is not None and self.high is not None:
            return f"{kind} within [{_plain(self.low)}, {_plain(self.high)}]"
        if self.low is not None:
            return f"{kind} >= {_plain(self.low)}"
        if self.high is not None:
            return f"{kind} <= {_plain(self.high)}"
        return kind

    def message(self, value: Any) -> str:
        """The one message for a value out of this range."""
        return f"{self.name} must be {self.accepts}, got {value!r}"

    def holds(self, value: Any) -> bool:
        """Whether ``value`` is in range (of the right type, finite, within the bounds)."""
        if isinstance(value, bool) or not isinstance(value, int if self.whole else (int, float)):
            return False
        if not math.isfinite(value):
            return False
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def check(self, value: N) -> N:
        """Return ``value`` when it is in range.

        Raises:
            ValueError: Naming the setting, what it accepts and the value given.
        """
        if not self.holds(value):
            raise ValueError(self.message(value))
        return value

    def check_optional(self, value: N | None) -> N | None:
        """:meth:`check`, with ``None`` (the default) let through."""
        return None if value is None else self.check(value)

    def parse(self, text: str) -> Any:
        """A value given as text (a command-line option, an environment variable), checked.

        Raises:
            ValueError: With the one message, when the text is no number or out of range.
        """
        try:
            value: float = int(text) if self.whole else float(text)
        except ValueError:
            raise ValueError(self.message(text)) from None
        if not self.holds(value):
            raise ValueError(self.message(text))
        return value

    def argument(self) -> Callable[[str], Any]:
        """An ``argparse`` ``type=``: :meth:`parse`, its error an ``ArgumentTypeError`` with the one message."""

        def parse(text: str) -> Any:
            try:
                return self.parse(text)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        parse.__name__ = self.name  # argparse names the type in its own messages
        return parse

    def bounds(self) -> dict[str, float]:
        """The bounds as pydantic ``Field`` keywords (``ge``/``le``), for JSON schemas and forms."""
        found: dict[str, float] = {}
        if self.low is not None:
            found["ge"] = self.low
        if self.high is not None:
            found["le"] = self.high
        return found


def _plain(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


THRESHOLD = Range("threshold", 0.0, 1.0)
"""A calibrated score a rule needs to match."""
MAX_CONCURRENCY = Range("max_concurrency", 1, whole=True)
"""Most model calls in flight at once."""
MAX_ATTEMPTS = Range("max_attempts", 1, whole=True)
"""Calls per request before it is recorded as failed."""
CONTEXT_TOKENS = Range("context_tokens", 1, whole=True)
"""A model's context window, in tokens."""
RETRY_BACKOFF = Range("retry_backoff", 0.0)
"""Base delay in seconds before a request that raised is sent again."""
CHECK_ROUNDS = Range("check_rounds", 0, whole=True)
"""Extra execute rounds the check may ask for (0: no check)."""
SIMILARITY_K = Range("k", 1, whole=True)
"""The similarity mode's top-k."""

RANGES: dict[str, Range] = {
    r.name: r for r in (THRESHOLD, MAX_CONCURRENCY, MAX_ATTEMPTS, CONTEXT_TOKENS, RETRY_BACKOFF, CHECK_ROUNDS)
}
"""Every range, by setting name."""


def check(name: str, value: N | None) -> N | None:
    """Check ``value`` against the range of the setting ``name`` (``None`` passes: the default).

    Raises:
        KeyError: For a setting with no range here.
        ValueError: With the one message, when the value is out of range.
    """
    return RANGES[name].check_optional(value)
