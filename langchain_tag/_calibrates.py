"""Fitting a retriever's calibration from a few labelled inputs (``calibrate``/``acalibrate``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from langchain_tag.judging.calibration._scorer import LabelledFit
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.calibration.model import Method as CalibrationMethod
from langchain_tag.judging.judge import Judge
from langchain_tag.rules import Rule

__all__ = ["CalibratesFromExamples"]


class CalibratesFromExamples:
    """``calibrate``/``acalibrate``: fit the retriever's calibration from a few labelled inputs."""

    calibration: Calibration | Literal["default"] | None

    def judge_for(self, **overrides: Any) -> Judge:
        """The judge with these settings overridden (the retriever defines it)."""
        raise NotImplementedError

    def rules_for(self, query: str) -> list[Rule]:
        """The rules judged for ``query``."""
        raise NotImplementedError

    async def arules_for(self, query: str) -> list[Rule]:
        """Async twin of :meth:`rules_for`."""
        raise NotImplementedError

    def calibrate(
        self,
        examples: Sequence[tuple[str, Iterable[str]]],
        *,
        method: CalibrationMethod = "platt",
        reference_inputs: Sequence[str] = (),
        standardise: bool = False,
        centre_per_input: bool = False,
    ) -> Calibration:
        """Fit a calibration from a few labelled inputs and use it from now on (``self.calibration``).

        Every example is judged against every candidate rule (through the verdict cache), then the labels are
        fitted with :func:`~langchain_tag.judging.calibration.model.fit_calibration`. Save the result with
        :meth:`Calibration.save` and pass it back as ``calibration=``.

        Args:
            examples: ``(input, ids of the rules whose condition holds for it)`` pairs.
            method: ``"threshold"``, ``"platt"`` or ``"isotonic"``.
            reference_inputs: Inputs for the per-rule step; empty for none.
            standardise: Divide by the spread over the reference inputs too.
            centre_per_input: Centre each input's features on their median over the rules.

        Raises:
            CalibrationError: On an unknown rule id, no logprobs, or labels of one kind only.
        """
        probe = LabelledFit(reference_inputs, standardise, centre_per_input)
        judge = self.judge_for(calibration=probe.calibration, reference_inputs=None)
        for query, holds in examples:
            rules = self.rules_for(query)
            probe.add(judge, rules, judge.judge(query, rules), holds)
        self.calibration = probe.fit(judge, method)
        return self.calibration

    async def acalibrate(
        self,
        examples: Sequence[tuple[str, Iterable[str]]],
        *,
        method: CalibrationMethod = "platt",
        reference_inputs: Sequence[str] = (),
        standardise: bool = False,
        centre_per_input: bool = False,
    ) -> Calibration:
        """Async twin of :meth:`calibrate`."""
        probe = LabelledFit(reference_inputs, standardise, centre_per_input)
        judge = self.judge_for(calibration=probe.calibration, reference_inputs=None)
        for query, holds in examples:
            rules = await self.arules_for(query)
            probe.add(judge, rules, await judge.ajudge(query, rules), holds)
        self.calibration = probe.fit(judge, method)
        return self.calibration
