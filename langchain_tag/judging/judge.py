"""The judge protocol: what every judge of (input, rule) pairs does, whatever model answers.

A :class:`Judge` holds the settings (prompt, threshold, calibration, cache,
concurrency) and does the steps every judge shares: it plans the query's
judgments and the reference judgments its calibration needs, asks its model
(:meth:`Judge._call`: the one step each kind of judge does its own way), scores
the raw judgments with the :class:`~langchain_tag.judging.calibration._scorer.Scorer`,
and reports failures. Two judges implement the call:

- :class:`~langchain_tag.judging.chat.ChatJudge`: one chat request per pair,
  a one-token verdict read from logprobs;
- :class:`~langchain_tag.judging.decision_judge.DecisionJudge`: a LangChain decision
  model, every rule of an input a yes/no question of one request.

An :class:`~langchain_tag.retrievers.ApplicabilityRetriever` picks the one for its model.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import Callbacks

from langchain_tag.calls._gate import Gate
from langchain_tag.calls._identity import describe_model, model_identity
from langchain_tag.calls._limits import CallLimits
from langchain_tag.errors import ProviderError
from langchain_tag.judging._context_window import check_context, context_tokens_from_env
from langchain_tag.judging._pairs import PairRequest
from langchain_tag.judging.calibration._scorer import ReferenceBook, Scorer
from langchain_tag.judging.calibration.defaults import resolve_default
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.prompts import JUDGE_PROMPTS, JudgePrompt
from langchain_tag.judging.results import Judgment, JudgmentsFailedError, MatchResult, Reading
from langchain_tag.judging.settings import JudgeSettings
from langchain_tag.registry import resolve
from langchain_tag.rules import Rule

__all__ = ["Batch", "Judge", "JudgeState", "resolve_judge_prompt", "scored_pairs"]

logger = logging.getLogger(__name__)

Batch = tuple[str, Sequence[Rule]]
"""One input and the rules to judge it against."""


def resolve_judge_prompt(predicate: str | JudgePrompt) -> JudgePrompt:
    """Return the judge prompt for a registry name or pass one through.

    Raises:
        ValueError: For an unknown name, listing the known ones.
    """
    return resolve(predicate, JUDGE_PROMPTS, JudgePrompt, "judge predicate")


def scored_pairs(rules: Sequence[Rule], result: MatchResult) -> list[tuple[Rule, Judgment]]:
    """The ``(rule, judgment)`` pairs of a result whose judgment gave a P(YES) without error."""
    pairs = zip(rules, result.judgments, strict=True)
    return [(r, j) for r, j in pairs if j.p_yes is not None and j.error is None]


@dataclass
class JudgeState:
    """What judging keeps between calls; the per-call judges of one retriever share it.

    Attributes:
        references: Reference judgments' log-odds, keyed by model, prompt, input and rule.
        defaults: Shipped calibrations resolved for (model, scoring version, reference inputs).
        identities: Model identities already worked out, by the model object's id.
        warned: Warnings given once (for example that replies carry no logprobs).
        gates: The caps on calls in flight, by limit: concurrent calls of one retriever share them, so its
            ``max_concurrency`` holds across a ``batch`` of inputs and the bulk job's inputs in parallel.
    """

    references: dict[str, float] = field(default_factory=dict)
    defaults: dict[tuple[str, str, tuple[str, ...] | None], Calibration | None] = field(default_factory=dict)
    identities: dict[int, tuple[Any, str]] = field(default_factory=dict)
    warned: set[str] = field(default_factory=set)
    gates: dict[int, Gate] = field(default_factory=dict)

    def gate(self, limits: CallLimits) -> Gate:
        """The cap of ``limits.max_concurrency`` calls in flight that every judge sharing this state with it holds."""
        limit = limits.max_concurrency
        found = self.gates.get(limit)
        if found is None:
            found = self.gates.setdefault(limit, Gate(limit))
        return found

    def identity(self, llm: Any) -> str:
        """The identity of ``llm`` (:func:`~langchain_tag.calls._identity.model_identity`), found once per model."""
        known = self.identities.get(id(llm))
        if known is None or known[0] is not llm:
            known = self.identities[id(llm)] = (llm, model_identity(llm))
        return known[1]


def _note_missing_logprobs(llm: Any, readings: Sequence[Reading], warned: set[str]) -> None:
    """Warn once when replies carry no logprobs: no P(YES), so threshold and calibration do not apply."""
    answered = [j for j in readings if j.attempts and j.error is None and not j.cached]
    if not answered or "no_logprobs" in warned or any(j.p_yes is not None for j in answered):
        return
    warned.add("no_logprobs")
    logger.warning(
        "%s gave no logprobs: verdicts are read from the reply text, so there is no P(YES) score and "
        "threshold and calibration do not apply; configure logprobs where the provider offers them "
        "(e.g. llm.bind(logprobs=True, top_logprobs=5, max_tokens=1))",
        describe_model(llm),
    )


class Judge(ABC):
    """Judge every (input, rule) pair of a query: plan, call the model, score, report failures.

    Its settings (:class:`~langchain_tag.judging.settings.JudgeSettings`, :attr:`settings`) mean what the
    :class:`~langchain_tag.retrievers.ApplicabilityRetriever` fields of the same names mean; the retriever
    makes them from its fields and keeps its judge while they stay the same.

    Args:
        llm: The model that answers (a chat model for :class:`~langchain_tag.judging.chat.ChatJudge`, a
            decision model for :class:`~langchain_tag.judging.decision_judge.DecisionJudge`).
        predicate: A :class:`~langchain_tag.judging.prompts.JudgePrompt` or its registry name (when ``settings``
            is not given).
        settings: The settings; by default made from ``predicate`` and ``values``.
        state: What is kept between calls (reference judgments, warnings given), shared by a retriever's judges.
        **values: The :class:`~langchain_tag.judging.settings.JudgeSettings` fields, when ``settings`` is not given.

    Raises:
        ValueError: On a bad setting (:class:`~langchain_tag.judging.settings.JudgeSettings`).
        CalibrationError: When ``reference_inputs`` holds too few inputs.
    """

    def __init__(
        self,
        llm: Any,
        predicate: str | JudgePrompt = "applicability",
        *,
        settings: JudgeSettings | None = None,
        state: JudgeState | None = None,
        **values: Any,
    ) -> None:
        self.settings = settings if settings is not None else JudgeSettings(predicate=predicate, **values)
        """How this judge judges."""
        self.llm = llm
        self.prompt = resolve_judge_prompt(self.settings.predicate)
        self.context_tokens = self.settings.context_tokens or context_tokens_from_env()
        """The context window checked (the setting, else ``LANGCHAIN_TAG_CONTEXT_TOKENS``)."""
        self._calibration = self.settings.calibration
        self._scorer: Scorer | None = None
        self.state = state if state is not None else JudgeState()
        self.model_identity = self.state.identity(llm)
        """The judge model's identity (cache keys, default calibrations)."""

    # ------------------------------------------------------------ settings
    @property
    def scoring_version(self) -> str:
        """What this judge's scores depend on besides the model: the prompt's scoring version."""
        return self.prompt.scoring_version

    @property
    def calibration(self) -> Calibration | None:
        """The calibration in use (``"default"`` resolved for this judge's model and prompt)."""
        if self._calibration != "default":
            return self._calibration
        version, memo = self.scoring_version, self.state.defaults
        return resolve_default(self.model_identity, version, self.settings.reference_inputs, memo)

    @property
    def decision_threshold(self) -> float:
        """The threshold applied: this judge's own, else the calibration's, else 0.5."""
        if self.settings.threshold is not None:
            return self.settings.threshold
        calibration = self.calibration
        return calibration.threshold if calibration is not None and calibration.threshold is not None else 0.5

    @property
    def scorer(self) -> Scorer:
        """The scorer of this judge's verdicts (its reference judgments kept in :attr:`state`), made once."""
        if self._scorer is None:
            book = ReferenceBook(self._reference_key, self.state.references)
            self._scorer = Scorer(self.calibration, self.decision_threshold, book)
        return self._scorer

    def _reference_key(self, reference: str, rule: Rule) -> str:
        parts = (self.model_identity, self.scoring_version, self.settings.verdict_format, reference)
        return "\x00".join((*parts, self.prompt.render_rule(rule)))

    def reference_log_odds(self, rule: Rule) -> tuple[float | None, float | None]:
        """The rule's mean log-odds of YES on the calibration's reference inputs, and their spread, if judged."""
        return self.scorer.reference_log_odds(rule)

    # ------------------------------------------------------------ judging
    def judge(self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None) -> MatchResult:
        """Judge ``query`` against every rule (and, once per rule, the calibration's reference inputs).

        Raises:
            ProviderError: When every call raised (nothing could be judged).
            InputTooLongError: When a prompt would not fit the context window.
            JudgmentsFailedError: With ``strict``, when any judgment failed.
        """
        scorer, batches = self._plan(query, rules)
        return self._conclude(scorer, batches, self._call(batches, callbacks))

    async def ajudge(self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None) -> MatchResult:
        """Async twin of :meth:`judge`."""
        scorer, batches = self._plan(query, rules)
        return self._conclude(scorer, batches, await self._acall(batches, callbacks))

    def _plan(self, query: str, rules: Sequence[Rule]) -> tuple[Scorer, list[Batch]]:
        """The scorer, and what to judge: the query first, then the reference judgments it needs."""
        if self.context_tokens is not None:
            check_context(self.prompt, self.settings.verdict_format, query, rules, self.context_tokens)
        scorer = self._scorer or self.scorer
        if scorer.calibration is None or not scorer.calibration.reference_inputs:
            return scorer, [(query, rules)]
        return scorer, [(query, rules), *scorer.needed_references(rules)]

    # ------------------------------------------------------------ what each kind of judge does its own way
    @abstractmethod
    def requests(self, query: str, rules: Sequence[Rule]) -> list[PairRequest]:
        """The judgments of ``query`` against ``rules`` as plain data: one per rule (and per negated half).

        Each carries the verdict-cache key of its judgment, so a job can tell which are cached.
        """

    def requests_for(self, judgments: int) -> int:
        """How many requests ``judgments`` judgments of one input take (one each, unless a judge batches them)."""
        return judgments

    def reference_requests(self, rules: Sequence[Rule]) -> list[PairRequest]:
        """The requests the calibration's reference judgments need for ``rules`` (none without references)."""
        return [r for ref, missing in self.scorer.needed_references(rules) for r in self.requests(ref, missing)]

    @abstractmethod
    def _call(self, batches: Sequence[Batch], callbacks: Callbacks) -> list[list[Reading]]:
        """Ask the model: one reading per rule of each batch, in order."""

    @abstractmethod
    async def _acall(self, batches: Sequence[Batch], callbacks: Callbacks) -> list[list[Reading]]:
        """Async twin of :meth:`_call`."""

    def _conclude(self, scorer: Scorer, batches: Sequence[Batch], raw: Sequence[list[Reading]]) -> MatchResult:
        """Keep the reference readings, score the query's with the scorer, and report failures."""
        (query, rules), readings = batches[0], raw[0]
        for (reference, missing), found in zip(batches[1:], raw[1:], strict=True):
            scorer.references.add(reference, missing, found)
        if all(r.p_yes is None for r in readings):
            _note_missing_logprobs(self.llm, readings, self.state.warned)
        result = MatchResult(query=query, predicate=self.prompt.name, judgments=scorer.decide(rules, readings))
        return self._settle(result) if result.failed else result

    def _settle(self, result: MatchResult) -> MatchResult:
        """Return the result, logging its failures; raise when the provider answered nothing, or with ``strict``."""
        failed = result.failed
        if not failed:
            return result
        # A request asking about several pairs (a decision model's) counts its attempts on its first pair only.
        counts = sorted({j.attempts for j in failed if j.attempts}) or [max(j.attempts for j in result.judgments)]
        if len(failed) == len(result.judgments) and all(not j.reply for j in failed):
            raise ProviderError(
                f"all {len(result.judgments)} judgments failed calling {describe_model(self.llm)}; "
                f"last: judgment of rule {failed[-1].rule_id} after {failed[-1].attempts or counts[-1]} attempt(s): "
                f"{failed[-1].error}",
                errors=tuple(dict.fromkeys(j.error or "" for j in failed)),
            )
        ids = [j.rule_id for j in failed]
        # The attempts each failed pair really had (a fault not to be resent fails on its first); the requests
        # the model's own client sent again are counted in each error ("3 requests sent, 2 of them by its client").
        attempts = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        if self.settings.strict:
            raise JudgmentsFailedError(
                f"{len(failed)} of {len(result.judgments)} judgments by {describe_model(self.llm)} failed "
                f"after {attempts} attempt(s): {', '.join(ids)}; first: {failed[0].error}",
                failed_rule_ids=ids,
                result=result,
            )
        logger.warning(
            "%d of %d judgments by %s failed after %s attempt(s) and were counted as NO: %s; first: %s",
            len(failed),
            len(result.judgments),
            describe_model(self.llm),
            attempts,
            ", ".join(ids),
            "; ".join(f"{j.rule_id} ({j.error})" for j in failed[:3]),
        )
        return result
