"""Pairwise matching: one LLM judgment per (input, rule) pair.

:class:`PairwiseJudge` builds the prompt for each pair, sends them through the
chat model's ``batch``/``abatch`` with bounded concurrency, reads each verdict
(first-token logprobs where offered, the reply text otherwise), retries a
malformed or failed reply once, and counts what still fails as NO, reporting
it in the :class:`MatchResult`. With a verdict cache
(:mod:`langchain_tag.verdict_cache`) a pair judged before costs no call.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.callbacks import Callbacks
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig

from langchain_tag.calibration import Calibration, check_reference_inputs, default_calibration, logit, sigmoid
from langchain_tag.errors import InputTooLongError, JudgmentsFailedError, ProviderError
from langchain_tag.faults import (
    backoff_delay,
    client_retries,
    describe_error,
    describe_model,
    is_transient,
    model_identity,
)
from langchain_tag.parsing import ParseError, message_text, parse_verdict
from langchain_tag.prompts import JUDGE_PROMPTS, JudgePrompt, VerdictFormat
from langchain_tag.rules import Rule
from langchain_tag.pairs import PairRequest, read_reply, render_pairs
from langchain_tag.verdict_cache import CachedVerdict, VerdictCache, verdict_key

__all__ = [
    "CONTEXT_TOKENS_ENV",
    "JUDGE_TAGS",
    "ChatRunnable",
    "InputTooLongError",
    "Judgment",
    "MatchResult",
    "PairwiseJudge",
    "configure_judge",
    "context_tokens_from_env",
    "contrast_judgment",
    "estimate_tokens",
    "resolve_judge_prompt",
    "scored_pairs",
]

logger = logging.getLogger(__name__)


ChatRunnable = Runnable[LanguageModelInput, BaseMessage]
"""A chat model or any runnable built from one (``llm.bind(...)``, ``.with_retry()``, ``.with_fallbacks()``)."""

JUDGE_TAGS = ("tag_judge", "nostream")
"""Tags of every judge run: ``nostream`` keeps its tokens out of LangGraph's ``stream_mode="messages"``."""

TOP_LOGPROBS = 5
"""``top_logprobs`` requested from a judge that takes it and was given without logprobs configured."""


def configure_judge(llm: ChatRunnable, verdict_format: VerdictFormat = "token") -> ChatRunnable:
    """The judge as it is called: a bare model that takes logprobs gets them bound, and a one-token cap.

    A chat model with ``logprobs``, ``top_logprobs`` and ``max_tokens``
    fields (``ChatOpenAI`` and other OpenAI-compatible clients), none of them
    set, is bound with ``logprobs=True, top_logprobs=5`` and, for one-word
    verdicts, ``max_tokens=1``. Anything else (a model configured by you, a
    ``bind``/``with_retry``/``with_fallbacks`` runnable, a provider without
    logprobs) is called as given.
    """
    fields = getattr(type(llm), "model_fields", {})
    if not {"logprobs", "top_logprobs", "max_tokens"} <= set(fields):
        return llm
    if any(getattr(llm, name, None) is not None for name in ("logprobs", "top_logprobs", "max_tokens")):
        return llm  # configured by its owner (e.g. logprobs left off for a server that refuses them)
    options: dict[str, Any] = {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
    if verdict_format == "token":
        options["max_tokens"] = 1
    return llm.bind(**options)


CONTEXT_TOKENS_ENV = "LANGCHAIN_TAG_CONTEXT_TOKENS"
"""Environment variable giving the judge model's context window when a judge is built without ``context_tokens``."""


def context_tokens_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    """The context window set in ``LANGCHAIN_TAG_CONTEXT_TOKENS``, or ``None`` when it is unset or empty.

    Args:
        environ: Mapping to read instead of ``os.environ``.

    Raises:
        ValueError: When it is set to anything but a positive integer.
    """
    raw = (os.environ if environ is None else environ).get(CONTEXT_TOKENS_ENV, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{CONTEXT_TOKENS_ENV} must be an integer, got {raw!r}.") from None
    if value < 1:
        raise ValueError(f"{CONTEXT_TOKENS_ENV} must be positive, got {value}.")
    return value


def estimate_tokens(text: str) -> int:
    """A deliberately high token estimate: one token per three characters.

    Real tokenisers give about four characters per token for English prose and
    fewer for code; erring high refuses a borderline input rather than letting
    the provider cut it.
    """
    return len(text) // 3 + 1


@dataclass
class Judgment:
    """The verdict for one (input, rule) pair.

    Attributes:
        rule_id: The rule judged.
        applies: Final decision (``False`` when the judgment failed).
        probability: Raw P(YES) from logprobs, when available. With a judge
            prompt that has a negation (:attr:`JudgePrompt.negation`), the
            contrast of its two answers: ``sigmoid(logit(statement_probability)
            - logit(negation_probability))``.
        score: The calibrated score the threshold was applied to (equal to
            ``probability`` without a calibration), when available.
        error: Why the judgment failed, if it did (then counted as NO).
        attempts: How many calls were made for this pair.
        prompt_tokens: Prompt tokens reported by the model, summed over attempts.
        completion_tokens: Completion tokens, summed over attempts.
        reply: The last reply text.
        cached: Whether the verdict came from the verdict cache (no call made).
        statement_probability: With a negation prompt: P(YES) that the rule's condition holds.
        negation_probability: With a negation prompt: P(YES) that its negation holds.
    """

    rule_id: str
    applies: bool = False
    probability: float | None = None
    score: float | None = None
    error: str | None = None
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reply: str = ""
    cached: bool = False
    statement_probability: float | None = None
    negation_probability: float | None = None


def contrast_judgment(statement: Judgment, negation: Judgment) -> Judgment:
    """One pair's judgment from its two halves: the condition asked, and its negation asked.

    The probability is ``sigmoid(logit(p) - logit(q))`` for P(YES) ``p`` on
    the condition and ``q`` on its negation, so a judge that leans to YES on
    both halves, or an input that lifts both, moves it little. Without
    logprobs the verdict is YES when the condition got YES and its negation
    NO. A failed half fails the pair; calls and tokens are summed.
    """
    error = statement.error or (f"negation: {negation.error}" if negation.error else None)
    p, q = statement.probability, negation.probability
    probability = sigmoid(logit(p) - logit(q)) if error is None and p is not None and q is not None else None
    return Judgment(
        rule_id=statement.rule_id,
        applies=error is None and statement.applies and not negation.applies,
        probability=probability,
        error=error,
        attempts=statement.attempts + negation.attempts,
        prompt_tokens=statement.prompt_tokens + negation.prompt_tokens,
        completion_tokens=statement.completion_tokens + negation.completion_tokens,
        reply=f"{statement.reply} | negation: {negation.reply}",
        cached=statement.cached and negation.cached,
        statement_probability=p,
        negation_probability=q,
    )


@dataclass
class MatchResult:
    """All judgments for one input, in rule order."""

    query: str
    predicate: str
    judgments: list[Judgment] = field(default_factory=list)

    @property
    def matched(self) -> list[Judgment]:
        """Judgments that said YES, highest (calibrated) score first, then rule order."""
        yes = [j for j in self.judgments if j.applies]
        order = {id(j): i for i, j in enumerate(yes)}
        return sorted(yes, key=lambda j: (-(j.score if j.score is not None else 1.0), order[id(j)]))

    @property
    def failed(self) -> list[Judgment]:
        """Judgments that failed after the retry and were counted as NO."""
        return [j for j in self.judgments if j.error is not None]

    @property
    def calls(self) -> int:
        """LLM calls made."""
        return sum(j.attempts for j in self.judgments)

    @property
    def cache_hits(self) -> int:
        """Judgments answered from the verdict cache."""
        return sum(1 for j in self.judgments if j.cached)

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens over all calls."""
        return sum(j.prompt_tokens for j in self.judgments)

    @property
    def completion_tokens(self) -> int:
        """Completion tokens over all calls."""
        return sum(j.completion_tokens for j in self.judgments)


def _usable(hit: CachedVerdict) -> bool:
    """Whether a cached verdict can be served: a probability, if stored, is a number within [0, 1]."""
    p = hit.probability
    return p is None or (isinstance(p, int | float) and not isinstance(p, bool) and 0.0 <= p <= 1.0)


def scored_pairs(rules: Sequence[Rule], result: MatchResult) -> list[tuple[Rule, Judgment]]:
    """The ``(rule, judgment)`` pairs of a result whose judgment gave a probability without error."""
    pairs = zip(rules, result.judgments, strict=True)
    return [(r, j) for r, j in pairs if j.probability is not None and j.error is None]


def resolve_judge_prompt(predicate: str | JudgePrompt) -> JudgePrompt:
    """Return the judge prompt for a registry name or pass one through.

    Raises:
        ValueError: For an unknown name, listing the known ones.
    """
    if isinstance(predicate, JudgePrompt):
        return predicate
    try:
        return JUDGE_PROMPTS[predicate]
    except KeyError:
        known = ", ".join(sorted(JUDGE_PROMPTS))
        raise ValueError(f"unknown judge predicate {predicate!r}; choose one of: {known}") from None


class PairwiseJudge:
    """Judge every (input, rule) pair independently with one chat model.

    Args:
        llm: Any chat model, or a runnable built from one
            (``llm.bind(logprobs=True, top_logprobs=5, max_tokens=1)``,
            ``.with_retry()``, ``.with_fallbacks([...])``). A bare
            OpenAI-compatible model with no logprobs configured gets
            ``logprobs=True, top_logprobs=5`` and, for ``"token"`` verdicts,
            ``max_tokens=1`` bound (:func:`configure_judge`). When no reply
            carries logprobs, one warning says that verdicts are read from
            the text, so no score is given and threshold and calibration do
            not apply.
        prompt: A :class:`JudgePrompt` or its registry name.
        verdict_format: ``"token"`` (a bare YES/NO) or ``"json"``.
        threshold: Calibrated score at or above which a logprob verdict is
            YES; ``None`` takes the calibration's threshold, else 0.5.
        max_concurrency: Most judgments in flight at once.
        max_attempts: Calls per pair before a failure is counted as NO.
        cache: A verdict cache; pairs found there cost no call, and new
            verdicts are stored (failed judgments are not).
        retry_backoff: Base delay in seconds (exponential, with jitter)
            before resending requests that raised, when the model's own
            client does not retry them (see :mod:`langchain_tag.faults`).
        calibration: Maps raw P(YES) to the calibrated score the threshold
            applies to (:mod:`langchain_tag.calibration`); ``"default"``
            takes the shipped calibration for the judge's model family and
            prompt version when there is one (raw P(YES) otherwise); ``None``
            uses raw P(YES).
        context_tokens: The judge model's context window. When set, a query
            whose prompt (estimated by :func:`estimate_tokens`) would not fit
            is refused with :class:`InputTooLongError` before any call; the
            input is never truncated, since a cut input could change verdicts
            silently. ``None`` takes ``LANGCHAIN_TAG_CONTEXT_TOKENS`` when it
            is set (:func:`context_tokens_from_env`), else skips the check.
        strict: Raise :class:`~langchain_tag.errors.JudgmentsFailedError`
            when any judgment failed after its last attempt, instead of
            counting it as NO with a logged warning.
        reference_inputs: A sample of your own unlabelled inputs (8 to 20
            typical ones): with ``calibration="default"`` the judge takes the
            model family's domain-reference default, which centres and scales
            each rule's log-odds on this sample
            (:func:`~langchain_tag.calibration.default_calibration`). Each
            input is judged once per rule (through the cache).

    Raises:
        ValueError: On a bad threshold, concurrency or attempt count, or
            ``reference_inputs`` with a calibration other than ``"default"``.
        CalibrationError: When ``reference_inputs`` holds too few inputs.
    """

    def __init__(
        self,
        llm: ChatRunnable,
        prompt: str | JudgePrompt = "applicability",
        *,
        verdict_format: VerdictFormat = "token",
        threshold: float | None = None,
        max_concurrency: int = 8,
        max_attempts: int = 2,
        cache: VerdictCache | None = None,
        retry_backoff: float = 0.5,
        context_tokens: int | None = None,
        calibration: Calibration | Literal["default"] | None = "default",
        strict: bool = False,
        reference_inputs: Sequence[str] | None = None,
    ) -> None:
        if reference_inputs is not None and calibration != "default":
            raise ValueError(
                "reference_inputs= selects the shipped domain-reference calibration, so it needs "
                'calibration="default"; put your own references in Calibration(reference_inputs=...) instead'
            )
        sample = check_reference_inputs(reference_inputs) if reference_inputs is not None else None
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be within [0, 1], got {threshold}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self.llm = llm
        self.prompt = resolve_judge_prompt(prompt)
        self.verdict_format: VerdictFormat = verdict_format
        self._caller = configure_judge(llm, verdict_format)
        # Shared with per-call copies of this judge, so the missing-logprobs warning is given once.
        self._notes: dict[str, bool] = {}
        self.threshold = threshold
        self.max_concurrency = max_concurrency
        self.max_attempts = max_attempts
        self.cache = cache
        self.retry_backoff = retry_backoff
        self.context_tokens = context_tokens if context_tokens is not None else context_tokens_from_env()
        self.strict = strict
        self._model: str | None = None
        self._calibration = calibration
        self.reference_inputs: tuple[str, ...] | None = sample
        self._references: dict[str, float] = {}
        self._negation: PairwiseJudge | None = None

    def messages(self, query: str, rule: Rule) -> list[BaseMessage]:
        """The prompt for one pair."""
        return self.prompt.messages(query, rule, self.verdict_format)

    def requests(self, query: str, rules: Sequence[Rule]) -> list[PairRequest]:
        """The requests that judge ``query`` against ``rules`` (:func:`~langchain_tag.pairs.render_pairs`).

        Plain data for another engine (a Ray Data pipeline, a provider batch
        API); feed each reply back with :meth:`record`.
        """
        return render_pairs(self.prompt, query, rules, model=self.model_identity, verdict_format=self.verdict_format)

    def reference_requests(self, rules: Sequence[Rule]) -> list[PairRequest]:
        """The requests the calibration's reference judgments need for ``rules`` (none without references)."""
        calibration = self.calibration
        if calibration is None or not calibration.uses_reference:
            return []
        return [r for reference in calibration.reference_inputs for r in self.requests(reference, rules)]

    def record(
        self,
        request: PairRequest,
        text: str,
        logprobs: Mapping[str, Any] | None = None,
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> Judgment:
        """Read a reply another engine got for ``request`` and keep it in the verdict cache.

        Returns the pair's raw judgment (one half of it, for a contrast
        prompt); a reply that cannot be read gives a judgment with ``error``
        set and is not cached. A later :meth:`judge` of the same pair then
        makes no call.
        """
        judgment = Judgment(
            rule_id=request.rule_id, attempts=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
        judgment.reply = text
        try:
            verdict = read_reply(text, logprobs)
        except ParseError as exc:
            judgment.error = str(exc)
            return judgment
        judgment.applies = judgment.says_yes = verdict.applies
        judgment.p_yes = verdict.probability
        if self.cache is not None:
            self.cache.put(request.key, CachedVerdict(verdict.applies, verdict.probability, text))
        return judgment

    def _configs(self, callbacks: Callbacks, rules: Sequence[Rule]) -> list[RunnableConfig]:
        """One config per judgment: named after its rule, rule id in metadata, tagged to stay out of message streams."""
        return [
            RunnableConfig(
                max_concurrency=self.max_concurrency,
                callbacks=callbacks,
                run_name=f"tag_judge {rule.rule_id}",
                tags=list(JUDGE_TAGS),
                metadata={"tag_rule_id": rule.rule_id, "tag_predicate": self.prompt.name},
            )
            for rule in rules
        ]

    def judge(self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None) -> MatchResult:
        """Judge ``query`` against every rule.

        Raises:
            ProviderError: When every call raised (nothing could be judged).
            InputTooLongError: When ``context_tokens`` is set and a prompt
                would not fit in it.
            JudgmentsFailedError: With ``strict``, when any judgment failed.
        """
        result = self._judge_pairs(query, rules, callbacks)
        calibration = self.calibration
        if calibration is not None and calibration.uses_reference:
            for reference in calibration.reference_inputs:
                missing = self._missing_references(reference, rules)
                if missing:
                    self._store_references(reference, missing, self._raw(reference).judge(reference, missing))
        return self._settle(self._calibrate(result, rules))

    def _judge_pairs(self, query: str, rules: Sequence[Rule], callbacks: Callbacks) -> MatchResult:
        """Every pair's raw judgment: one call, or with a negation prompt the contrast of two."""
        result = self._judge_once(query, rules, callbacks)
        negation = self._negation_judge()
        if negation is None:
            return result
        negated = negation._judge_once(query, rules, callbacks)
        return self._contrast(result, negated)

    def _contrast(self, result: MatchResult, negated: MatchResult) -> MatchResult:
        """One result from the statement halves and the negated halves of the same pairs."""
        judgments = [contrast_judgment(a, b) for a, b in zip(result.judgments, negated.judgments, strict=True)]
        return MatchResult(query=result.query, predicate=self.prompt.name, judgments=judgments)

    def _judge_once(self, query: str, rules: Sequence[Rule], callbacks: Callbacks) -> MatchResult:
        """One call per pair with this judge's prompt (its negation aside), retried; cached pairs cost none."""
        judgments, pending, keys = self._start(query, rules)
        for attempt in range(1, self.max_attempts + 1):
            if not pending:
                break
            replies = self._caller.batch(
                [self.messages(query, rules[i]) for i in pending],
                config=self._configs(callbacks, [rules[i] for i in pending]),
                return_exceptions=True,
            )
            pending, faulted = self._absorb(judgments, pending, replies)
            if pending and attempt < self.max_attempts and faulted:
                time.sleep(backoff_delay(attempt, base=self.retry_backoff))
        return self._finish(query, judgments, keys)

    async def ajudge(self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None) -> MatchResult:
        """Async twin of :meth:`judge`."""
        result = await self._ajudge_pairs(query, rules, callbacks)
        calibration = self.calibration
        if calibration is not None and calibration.uses_reference:
            for reference in calibration.reference_inputs:
                missing = self._missing_references(reference, rules)
                if missing:
                    found = await self._raw(reference).ajudge(reference, missing)
                    self._store_references(reference, missing, found)
        return self._settle(self._calibrate(result, rules))

    async def _ajudge_pairs(self, query: str, rules: Sequence[Rule], callbacks: Callbacks) -> MatchResult:
        """Async twin of :meth:`_judge_pairs`."""
        result = await self._ajudge_once(query, rules, callbacks)
        negation = self._negation_judge()
        if negation is None:
            return result
        negated = await negation._ajudge_once(query, rules, callbacks)
        return self._contrast(result, negated)

    async def _ajudge_once(self, query: str, rules: Sequence[Rule], callbacks: Callbacks) -> MatchResult:
        """Async twin of :meth:`_judge_once`."""
        judgments, pending, keys = self._start(query, rules)
        for attempt in range(1, self.max_attempts + 1):
            if not pending:
                break
            replies = await self._caller.abatch(
                [self.messages(query, rules[i]) for i in pending],
                config=self._configs(callbacks, [rules[i] for i in pending]),
                return_exceptions=True,
            )
            pending, faulted = self._absorb(judgments, pending, replies)
            if pending and attempt < self.max_attempts and faulted:
                await asyncio.sleep(backoff_delay(attempt, base=self.retry_backoff))
        return self._finish(query, judgments, keys)

    @property
    def calibration(self) -> Calibration | None:
        """The calibration in use (``"default"`` resolved for this judge's model and prompt)."""
        if self._calibration == "default":
            self._calibration = default_calibration(
                self.model_identity, self.prompt.scoring_version, self.reference_inputs
            )
            if self._calibration is None and self.reference_inputs:
                logger.warning(
                    "no domain-reference calibration is shipped for %s with prompt %s: reference_inputs are not "
                    "used and raw P(YES) is thresholded; fit a calibration with retriever.calibrate(...)",
                    self.model_identity,
                    self.prompt.scoring_version,
                )
        return self._calibration if isinstance(self._calibration, Calibration) else None

    @calibration.setter
    def calibration(self, value: Calibration | Literal["default"] | None) -> None:
        self._calibration = value

    @property
    def decision_threshold(self) -> float:
        """The threshold applied: this judge's own, else the calibration's, else 0.5."""
        if self.threshold is not None:
            return self.threshold
        calibration = self.calibration
        if calibration is not None and calibration.threshold is not None:
            return calibration.threshold
        return 0.5

    @property
    def model_identity(self) -> str:
        """The judge model's identity (cache keys, default calibrations)."""
        if self._model is None:
            self._model = model_identity(self.llm)
        return self._model

    def _twin(self, prompt: JudgePrompt) -> PairwiseJudge:
        """A judge like this one (model, cache, limits, warnings given) with ``prompt`` and no calibration."""
        twin = PairwiseJudge(
            self.llm,
            prompt,
            verdict_format=self.verdict_format,
            max_concurrency=self.max_concurrency,
            max_attempts=self.max_attempts,
            cache=self.cache,
            retry_backoff=self.retry_backoff,
            context_tokens=self.context_tokens,
            calibration=None,
        )
        twin._model, twin._notes = self._model, self._notes
        return twin

    def _raw(self, reference: str) -> PairwiseJudge:
        """A judge like this one without calibration, for the reference judgments."""
        return self._twin(self.prompt)

    def _negation_judge(self) -> PairwiseJudge | None:
        """The judge of the negated halves, if this judge's prompt has a negation."""
        if self.prompt.negation is None:
            return None
        if self._negation is None:
            self._negation = self._twin(self.prompt.negation)
        return self._negation

    def _reference_key(self, reference: str, rule: Rule) -> str:
        return f"{reference}\x00{self.prompt.render_rule(rule)}"

    def _missing_references(self, reference: str, rules: Sequence[Rule]) -> list[Rule]:
        return [r for r in rules if self._reference_key(reference, r) not in self._references]

    def _store_references(self, reference: str, rules: Sequence[Rule], result: MatchResult) -> None:
        for rule, judgment in zip(rules, result.judgments, strict=True):
            if judgment.probability is not None and judgment.error is None:
                self._references[self._reference_key(reference, rule)] = logit(judgment.probability)

    def reference_log_odds(self, rule: Rule) -> tuple[float | None, float | None]:
        """The rule's mean log-odds of YES on the calibration's reference inputs, and their spread, if judged."""
        calibration = self.calibration
        if calibration is None or not calibration.uses_reference:
            return None, None
        found = [self._references.get(self._reference_key(ref, rule)) for ref in calibration.reference_inputs]
        known = [v for v in found if v is not None]
        if not known:
            return None, None
        mean = sum(known) / len(known)
        spread = (sum((v - mean) ** 2 for v in known) / (len(known) - 1)) ** 0.5 if len(known) > 1 else None
        return mean, spread

    def _settle(self, result: MatchResult) -> MatchResult:
        """Return a finished result, or with ``strict`` raise when some judgment failed."""
        failed = result.failed
        if self.strict and failed:
            ids = [j.rule_id for j in failed]
            raise JudgmentsFailedError(
                f"{len(failed)} of {len(result.judgments)} judgments by {describe_model(self.llm)} failed "
                f"after {self.max_attempts} attempt(s): {', '.join(ids)}; first: {failed[0].error}",
                failed_rule_ids=ids,
                result=result,
            )
        return result

    def _calibrate(self, result: MatchResult, rules: Sequence[Rule]) -> MatchResult:
        """Score each judgment and decide it against the threshold."""
        calibration = self.calibration
        judged = scored_pairs(rules, result)
        if calibration is None:
            for _, judgment in judged:
                judgment.score = judgment.probability
        else:
            for (_, judgment), x in zip(judged, self.features(judged), strict=True):
                judgment.score = calibration.map_feature(x)
        for _, judgment in judged:
            judgment.applies = judgment.score is not None and judgment.score >= self.decision_threshold
        return result

    def features(self, judged: Sequence[tuple[Rule, Judgment]]) -> list[float]:
        """What the calibration's global step sees for one input's judged rules.

        Each pair's log-odds with the rule's reference step (:meth:`Calibration.feature`), then, with
        ``centre_per_input``, minus the input's median over these rules (:meth:`Calibration.input_centre`).

        Args:
            judged: All of one input's ``(rule, judgment)`` pairs that gave a probability (:func:`scored_pairs`).
        """
        calibration = self.calibration or Calibration()
        row = [
            calibration.feature(j.probability, *self.reference_log_odds(r))  # type: ignore[arg-type]
            for r, j in judged
        ]
        centre = calibration.input_centre(row)
        return [x - centre for x in row]

    def _start(self, query: str, rules: Sequence[Rule]) -> tuple[list[Judgment], list[int], list[str | None]]:
        """Fresh judgments, cached ones filled in; the indices still to judge; each pair's cache key."""
        self._check_length(query, rules)
        judgments = [Judgment(rule_id=r.rule_id) for r in rules]
        if self.cache is None:
            return judgments, list(range(len(rules))), [None] * len(rules)
        keys: list[str | None] = []
        pending: list[int] = []
        for index, rule in enumerate(rules):
            key = verdict_key(
                model=self.model_identity,
                prompt_version=self.prompt.version,
                verdict_format=self.verdict_format,
                query=query,
                rule_text=self.prompt.render_rule(rule),
            )
            keys.append(key)
            hit = self.cache.get(key)
            if hit is None or not _usable(hit):
                pending.append(index)
                continue
            judgment = judgments[index]
            judgment.applies = hit.decision(self.decision_threshold)
            judgment.probability, judgment.reply, judgment.cached = hit.probability, hit.reply, True
        return judgments, pending, keys

    def _needed_tokens(self, query: str, rule: Rule) -> int:
        """The estimated size of one judge prompt, with a margin for the reply and message framing."""
        return estimate_tokens("\n\n".join(str(m.content) for m in self.messages(query, rule))) + 16

    def _check_length(self, query: str, rules: Sequence[Rule]) -> None:
        """Refuse a query whose prompts would not fit, naming what is too long: the input or a rule."""
        context = self.context_tokens
        if context is None or not rules:
            return
        longest = max(rules, key=lambda r: len(self.prompt.render_rule(r)))
        if self._needed_tokens(query, longest) <= context:
            return
        needed = {r.rule_id: self._needed_tokens(query, r) for r in rules}
        over = [r for r in rules if needed[r.rule_id] > context]
        alone = [r for r in over if self._needed_tokens("", r) > context]
        limit = f"the judge model's context of {context} tokens"
        if alone:
            first = alone[0]
            raise InputTooLongError(
                f"rule {', '.join(r.rule_id for r in alone)} is too long: rule {first.rule_id} is about "
                f"{estimate_tokens(self.prompt.render_rule(first))} tokens and with the judge prompt alone needs "
                f"about {self._needed_tokens('', first)} tokens, more than {limit}: shorten the rule"
            )
        if len(over) == len(rules):
            raise InputTooLongError(
                f"the input is too long: about {estimate_tokens(query)} tokens ({len(query)} characters); with the "
                f"judge prompt and the shortest rule it needs about {min(needed.values())} tokens, more than "
                f"{limit}: shorten or split the input"
            )
        first = over[0]
        raise InputTooLongError(
            f"the input (about {estimate_tokens(query)} tokens) together with rule "
            f"{', '.join(r.rule_id for r in over)} is too long: with rule {first.rule_id} (about "
            f"{estimate_tokens(self.prompt.render_rule(first))} tokens) it needs about {needed[first.rule_id]} "
            f"tokens, more than {limit}; the other rules fit: shorten the input or these rules"
        )

    def _absorb(self, judgments: list[Judgment], pending: list[int], replies: Sequence[Any]) -> tuple[list[int], bool]:
        """Record replies; return the indices that need another attempt, and whether a request raised."""
        retry: list[int] = []
        faulted = False
        for index, reply in zip(pending, replies, strict=True):
            judgment = judgments[index]
            judgment.attempts += 1
            if isinstance(reply, BaseException):
                judgment.error = f"{describe_error(reply)} (from {describe_model(self.llm)})"
                judgment.reply = ""
                # A transport fault the model's client already retried is not sent again.
                if not (is_transient(reply) and client_retries(self.llm)):
                    retry.append(index)
                    faulted = True
                continue
            if isinstance(reply, AIMessage) and reply.usage_metadata:
                judgment.prompt_tokens += reply.usage_metadata.get("input_tokens", 0)
                judgment.completion_tokens += reply.usage_metadata.get("output_tokens", 0)
            judgment.reply = message_text(reply)
            try:
                verdict = parse_verdict(reply, threshold=self.decision_threshold)
            except ParseError as exc:
                judgment.error = str(exc)
                retry.append(index)
                continue
            judgment.applies = verdict.applies
            judgment.probability = verdict.probability
            judgment.error = None
        return retry, faulted

    def _note_missing_logprobs(self, judgments: Sequence[Judgment]) -> None:
        """Warn once when judges' replies carry no logprobs: no P(YES), so threshold and calibration do not apply."""
        answered = [j for j in judgments if j.attempts and j.error is None and not j.cached]
        if not answered or self._notes.get("no_logprobs") or any(j.probability is not None for j in answered):
            return
        self._notes["no_logprobs"] = True
        logger.warning(
            "%s gave no logprobs: verdicts are read from the reply text, so there is no P(YES) score and "
            "threshold and calibration do not apply; configure logprobs where the provider offers them "
            "(e.g. llm.bind(logprobs=True, top_logprobs=5, max_tokens=1))",
            describe_model(self.llm),
        )

    def _finish(self, query: str, judgments: list[Judgment], keys: Sequence[str | None]) -> MatchResult:
        if self.cache is not None:
            for judgment, key in zip(judgments, keys, strict=True):
                if key is not None and not judgment.cached and judgment.error is None and judgment.attempts:
                    self.cache.put(key, CachedVerdict(judgment.applies, judgment.probability, judgment.reply))
        result = MatchResult(query=query, predicate=self.prompt.name, judgments=judgments)
        self._note_missing_logprobs(judgments)
        failed = result.failed
        if failed:
            for judgment in failed:
                judgment.applies = False
            if len(failed) == len(judgments) and all(not j.reply for j in failed):
                last = failed[-1]
                raise ProviderError(
                    f"all {len(judgments)} judgments failed calling {describe_model(self.llm)}; "
                    f"last: judgment of rule {last.rule_id} after {last.attempts} attempt(s): {last.error}"
                )
            if not self.strict:
                logger.warning(
                    "%d of %d judgments by %s failed after %d attempts and were counted as NO: %s; first: %s",
                    len(failed),
                    len(judgments),
                    describe_model(self.llm),
                    self.max_attempts,
                    ", ".join(j.rule_id for j in failed),
                    "; ".join(f"{j.rule_id} ({j.error})" for j in failed[:3]),
                )
        return result
