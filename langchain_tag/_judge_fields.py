"""The judge settings a retriever holds as fields, and the judge it builds from them at each call."""

from __future__ import annotations

import operator
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from langchain_tag.judging._context_window import CONTEXT_TOKENS_ENV
from langchain_tag.judging._model_judge import judge_for_model
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.chat import ChatRunnable
from langchain_tag.judging.decision_interfaces import BaseDecisionModel
from langchain_tag.judging.judge import Judge, JudgeState
from langchain_tag.judging.prompts import JudgePrompt, VerdictFormat
from langchain_tag.judging.settings import JudgeSettings
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache, VerdictCache

__all__ = ["JudgeFields"]


class JudgeFields(BaseModel):
    """The judge's model and settings as fields, each checked against its one range (:mod:`langchain_tag.ranges`).

    :meth:`judge_for` builds the judge of a call from the fields as they are then, so no copy, assignment or
    per-call option ever meets a judge built from other settings.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: ChatRunnable | BaseDecisionModel
    """The judge: a chat model or a runnable built from one (``llm.bind(logprobs=True, top_logprobs=5,
    max_tokens=1)``, ``.with_retry()``, ``.with_fallbacks([...])``; a bare OpenAI-compatible model gets
    logprobs and a one-token cap bound, :func:`~langchain_tag.judging.chat.configure_judge`), or a LangChain
    decision model (``BaseDecisionModel``, ``OpenAIDecisions``), which judges each input's rules in one request
    (:class:`~langchain_tag.judging.decision_judge.DecisionJudge`)."""
    predicate: str | JudgePrompt = "applicability"
    """The judge prompt: ``"applicability"`` (default), ``"applicability-contrast"``, ``"relevance"``, another
    name in :data:`~langchain_tag.judging.prompts.JUDGE_PROMPTS`, or a
    :class:`~langchain_tag.judging.prompts.JudgePrompt`."""
    verdict_format: VerdictFormat = "token"
    """``"token"`` (one-word YES/NO) or ``"json"``."""
    threshold: float | None = None
    """Calibrated score needed for YES; ``None`` takes the calibration's threshold, else 0.5."""
    calibration: Calibration | Literal["default"] | None = "default"
    """Raw P(YES) to calibrated score (:mod:`langchain_tag.judging.calibration._scorer`): ``"default"`` (the shipped
    calibration of the judge's model family and prompt; raw P(YES) without one), a ``Calibration``, or ``None``."""
    max_concurrency: int = 8
    """Most judgments in flight at once."""
    cache: VerdictCache | None = Field(default_factory=InMemoryVerdictCache)
    """Verdict cache: a pair judged before costs no call. In memory by default; a
    :class:`~langchain_tag.judging.verdict_cache.SQLiteVerdictCache` keeps verdicts across runs; ``None``: none."""
    context_tokens: int | None = None
    """The judge model's context window: a query whose prompt would not fit is refused with
    :class:`~langchain_tag.errors.InputTooLongError`, never cut. ``None``: ``LANGCHAIN_TAG_CONTEXT_TOKENS``."""
    strict: bool = False
    """Raise :class:`~langchain_tag.judging.results.JudgmentsFailedError` when any judgment failed."""
    reference_inputs: Sequence[str] | None = None
    """8 to 20 typical unlabelled inputs of your own: with ``calibration="default"``, the model family's
    domain-reference default scores each rule against what it sees on them (one judgment per input and
    rule, once)."""

    _state: JudgeState = PrivateAttr(default_factory=JudgeState)
    _built: tuple[tuple[Any, ...], Judge] | None = PrivateAttr(default=None)
    """The judge of the next call without overrides, and everything it was built from (compared by identity)."""

    @field_validator("threshold", "max_concurrency", "context_tokens")
    @classmethod
    def _check_setting(cls, value: Any, info: ValidationInfo) -> Any:
        return JudgeSettings.check(str(info.field_name), value)

    # ------------------------------------------------------------------ the judge, from the fields
    def judge_for(self, **overrides: Any) -> Judge:
        """The judge of a call: the retriever's settings as they are now, with ``overrides``, sharing its state.

        Without overrides the judge is kept for the next call while every field it was built from is the very
        same object (and ``LANGCHAIN_TAG_CONTEXT_TOKENS`` the same): an assignment, a ``model_copy(update=...)``
        or a changed environment gets a new judge. Overrides (any
        :class:`~langchain_tag.judging.settings.JudgeSettings` field) make a judge for that call alone.

        Raises:
            ValueError: On an override out of its range (:mod:`langchain_tag.ranges`).
        """
        values = {name: getattr(self, name) for name in _SETTINGS}
        made_from = (os.environ.get(CONTEXT_TOKENS_ENV), self.llm, *values.values())
        built = self._built
        kept = not overrides and built is not None and built[0][0] == made_from[0]
        if kept and built is not None and all(map(operator.is_, built[0][1:], made_from[1:])):
            return built[1]
        if values["reference_inputs"] is not None:
            values["reference_inputs"] = tuple(values["reference_inputs"])
        settings = JudgeSettings(**values)
        judge = judge_for_model(self.llm, replace(settings, **overrides) if overrides else settings, self._state)
        if not overrides:
            self._built = (made_from, judge)
        return judge

    @property
    def judge(self) -> Judge:
        """The judge as the next call will use it.

        Its ``calibration``, ``decision_threshold``, ``reference_log_odds``, and (a chat judge) the pure
        ``requests``/``record`` steps for other engines.
        """
        return self.judge_for()


_SETTINGS = (
    "predicate",
    "verdict_format",
    "threshold",
    "calibration",
    "max_concurrency",
    "cache",
    "context_tokens",
    "strict",
    "reference_inputs",
)
"""The fields a judge's :class:`~langchain_tag.judging.settings.JudgeSettings` is made of, named as there."""
