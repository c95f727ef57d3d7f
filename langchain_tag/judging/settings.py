"""A judge's settings, defined and checked in one place.

:class:`JudgeSettings` is what an :class:`~langchain_tag.retrievers.ApplicabilityRetriever`'s judge settings
fields build, what tells the retriever its judge is still current (two settings are equal when every value is),
and what a :class:`~langchain_tag.judging.judge.Judge` is made with. Each value is checked here, when the settings
are made.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from langchain_tag import ranges
from langchain_tag.calls._limits import CallLimits
from langchain_tag.judging.calibration.defaults import check_reference_inputs
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.prompts import JudgePrompt, VerdictFormat
from langchain_tag.judging.verdict_cache import VerdictCache

__all__ = ["JudgeSettings"]


@dataclass(frozen=True)
class JudgeSettings:
    """How a judge judges; every field means what the retriever field of the same name means.

    Attributes:
        predicate: A :class:`~langchain_tag.judging.prompts.JudgePrompt` or its registry name.
        verdict_format: ``"token"`` (a bare YES/NO) or ``"json"``.
        threshold: Calibrated score for YES, within [0, 1]; ``None``: the calibration's, else 0.5.
        calibration: ``"default"``, a :class:`~langchain_tag.judging.calibration.Calibration`, or ``None``.
        max_concurrency: Most requests in flight at once (at least 1).
        max_attempts: Calls per pair before a failure is counted as NO (at least 1).
        cache: A verdict cache; pairs found there cost no call.
        retry_backoff: Base delay in seconds before resending requests that raised, when the client does not.
        context_tokens: The model's context window (``None``: ``LANGCHAIN_TAG_CONTEXT_TOKENS`` when set).
        strict: Raise :class:`~langchain_tag.judging.results.JudgmentsFailedError` when any judgment failed.
        reference_inputs: Your own unlabelled sample for the shipped domain-reference default (any sequence;
            kept as a tuple, blanks and repeats dropped).

    Raises:
        ValueError: On a threshold outside [0, 1], a concurrency, attempt count or context below 1, a negative
            backoff, or ``reference_inputs`` with a calibration other than ``"default"``.
        CalibrationError: When ``reference_inputs`` holds too few inputs.
    """

    predicate: str | JudgePrompt = "applicability"
    verdict_format: VerdictFormat = "token"
    threshold: float | None = None
    calibration: Calibration | Literal["default"] | None = "default"
    max_concurrency: int = 8
    max_attempts: int = 2
    cache: VerdictCache | None = None
    retry_backoff: float = 0.5
    context_tokens: int | None = None
    strict: bool = False
    reference_inputs: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for name in _CHECKED:
            self.check(name, getattr(self, name))
        if self.reference_inputs is not None:
            if self.calibration != "default":
                raise ValueError(
                    "reference_inputs= selects the shipped domain-reference calibration, so it needs "
                    'calibration="default"; put your own references in Calibration(reference_inputs=...) instead'
                )
            object.__setattr__(self, "reference_inputs", check_reference_inputs(self.reference_inputs))

    @cached_property
    def limits(self) -> CallLimits:
        """What the call runner and the gate take: concurrency, attempts and backoff, whole."""
        return CallLimits(self.max_concurrency, self.max_attempts, self.retry_backoff)

    @staticmethod
    def check(name: str, value: Any) -> Any:
        """Check one setting's value against its one range (:mod:`langchain_tag.ranges`); return it.

        >>> JudgeSettings.check("threshold", 0.7)
        0.7

        Raises:
            ValueError: When the value is out of its range.
        """
        return ranges.check(name, value)


_CHECKED = ("threshold", "max_concurrency", "max_attempts", "context_tokens", "retry_backoff")
"""The settings with a range of their own (:meth:`JudgeSettings.check`)."""
