"""How many calls a run makes at once and how often it tries each: the call runner's settings, whole.

A judge's :class:`~langchain_tag.judging.settings.JudgeSettings` and an extraction's settings each hand the runner
one :class:`CallLimits` (``settings.limits``), checked against the one range of each value
(:mod:`langchain_tag.ranges`) when it is made.

Example:
    >>> CallLimits(max_concurrency=2).max_attempts
    2
    >>> CallLimits(max_concurrency=0)
    Traceback (most recent call last):
    ...
    ValueError: max_concurrency must be a whole number >= 1, got 0
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_tag.ranges import MAX_ATTEMPTS, MAX_CONCURRENCY, RETRY_BACKOFF

__all__ = ["CallLimits"]


@dataclass(frozen=True)
class CallLimits:
    """The call runner's settings.

    Attributes:
        max_concurrency: Most calls in flight at once (at least 1).
        max_attempts: Attempts per request before it is recorded as failed (at least 1).
        retry_backoff: Base delay in seconds (exponential, with jitter) before resending requests that raised,
            when the model's client does not retry them itself (at least 0).

    Raises:
        ValueError: On a value out of its range, with that range's one message.
    """

    max_concurrency: int = 8
    max_attempts: int = 2
    retry_backoff: float = 0.5

    def __post_init__(self) -> None:
        MAX_CONCURRENCY.check(self.max_concurrency)
        MAX_ATTEMPTS.check(self.max_attempts)
        RETRY_BACKOFF.check(self.retry_backoff)
