"""Pairwise matching: one LLM judgment per (input, rule) pair.

:class:`PairwiseJudge` composes the judging core: it renders each pair
(:func:`~langchain_tag.judging.pairs.render_pairs`), sends the requests through the
package's one call runner (:class:`~langchain_tag.calls.runner.CallRunner`: bounded
concurrency, retries, the verdict cache, token accounting), reads each reply
(:func:`~langchain_tag.judging.read.parse_verdict`), and hands the raw judgments to
the scorer (:class:`~langchain_tag.judging.calibration.scorer.Scorer`), which decides them.
A reply that still fails after its retry is counted as NO and reported in
the :class:`MatchResult`.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.callbacks import Callbacks
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from langchain_tag.calls.identity import describe_model, model_identity
from langchain_tag.calls.runner import CallRunner, Outcome, Request
from langchain_tag.calls.verdict_cache import VerdictCache, VerdictStore
from langchain_tag.errors import InputTooLongError, JudgmentsFailedError, ParseError, ProviderError
from langchain_tag.judging.calibration.scorer import (
    Calibration,
    ReferenceBook,
    Scorer,
    check_reference_inputs,
    resolve_default,
)
from langchain_tag.judging.context_window import (
    CONTEXT_TOKENS_ENV,
    check_context,
    context_tokens_from_env,
    estimate_tokens,
)
from langchain_tag.judging.pairs import (
    Judgment,
    MatchResult,
    PairRequest,
    combine_halves,
    contrast_judgment,
    read_reply,
    render_pairs,
    to_messages,
)
from langchain_tag.judging.prompts import JUDGE_PROMPTS, JudgePrompt, VerdictFormat
from langchain_tag.judging.read import Verdict, parse_verdict
from langchain_tag.rules import Rule

__all__ = [
    "CONTEXT_TOKENS_ENV",
    "JUDGE_TAGS",
    "ChatRunnable",
    "InputTooLongError",
    "JudgeState",
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
    """

    references: dict[str, float] = field(default_factory=dict)
    defaults: dict[tuple[str, str, tuple[str, ...] | None], Calibration | None] = field(default_factory=dict)
    identities: dict[int, tuple[Any, str]] = field(default_factory=dict)
    warned: set[str] = field(default_factory=set)

    def identity(self, llm: Any) -> str:
        """The identity of ``llm`` (:func:`~langchain_tag.calls.identity.model_identity`), worked out once per model."""
        known = self.identities.get(id(llm))
        if known is None or known[0] is not llm:
            known = self.identities[id(llm)] = (llm, model_identity(llm))
        return known[1]


def _check_settings(
    threshold: float | None, calibration: Calibration | str | None, reference_inputs: Sequence[str] | None
) -> None:
    """Refuse a threshold outside [0, 1], and reference inputs with a calibration of one's own."""
    if reference_inputs is not None and calibration != "default":
        raise ValueError(
            "reference_inputs= selects the shipped domain-reference calibration, so it needs "
            'calibration="default"; put your own references in Calibration(reference_inputs=...) instead'
        )
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be within [0, 1], got {threshold}")


def _as_judgment(rule_id: str, outcome: Outcome[Verdict]) -> Judgment:
    """A pair's raw judgment from the runner's outcome (not yet scored)."""
    verdict = outcome.value if outcome.ok else None
    return Judgment(
        rule_id=rule_id,
        p_yes=verdict.probability if verdict is not None else None,
        error=outcome.error,
        attempts=outcome.attempts,
        prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens,
        reply=outcome.reply,
        cached=outcome.stored,
        says_yes=verdict.applies if verdict is not None else False,
    )


def _note_missing_logprobs(llm: Any, judgments: Sequence[Judgment], warned: set[str]) -> None:
    """Warn once when replies carry no logprobs: no P(YES), so threshold and calibration do not apply."""
    answered = [j for j in judgments if j.attempts and j.error is None and not j.cached]
    if not answered or "no_logprobs" in warned or any(j.p_yes is not None for j in answered):
        return
    warned.add("no_logprobs")
    logger.warning(
        "%s gave no logprobs: verdicts are read from the reply text, so there is no P(YES) score and "
        "threshold and calibration do not apply; configure logprobs where the provider offers them "
        "(e.g. llm.bind(logprobs=True, top_logprobs=5, max_tokens=1))",
        describe_model(llm),
    )


def _unique(batches: Sequence[tuple[str, Sequence[Rule], list[PairRequest]]]) -> tuple[list[PairRequest], list[int]]:
    """The batches' requests with repeats dropped (a reference input equal to the query), and where each went."""
    if len(batches) == 1:
        return batches[0][2], list(range(len(batches[0][2])))
    requests = [r for _, _, part in batches for r in part]
    unique: list[PairRequest] = []
    seen: dict[str, int] = {}
    index = []
    for request in requests:
        if request.key not in seen:
            seen[request.key] = len(unique)
            unique.append(request)
        index.append(seen[request.key])
    return unique, index


_UNSET: Any = object()


class PairwiseJudge:
    """Judge every (input, rule) pair independently with one chat model.

    Its settings mean what the :class:`~langchain_tag.retrievers.ApplicabilityRetriever` fields of the same
    names mean (see their docstrings); the retriever builds one of these per call from its fields.

    Args:
        llm: A chat model or a runnable built from one; a bare OpenAI-compatible model gets logprobs and a
            one-token cap bound (:func:`configure_judge`).
        predicate: A :class:`JudgePrompt` or its registry name (``prompt=`` is its deprecated alias).
        verdict_format: ``"token"`` (a bare YES/NO) or ``"json"``.
        threshold: Calibrated score for YES; ``None``: the calibration's, else 0.5.
        max_concurrency: Most judgments in flight at once.
        max_attempts: Calls per pair before a failure is counted as NO.
        cache: A verdict cache; pairs found there cost no call.
        retry_backoff: Base delay in seconds before resending requests that raised, when the client does not.
        context_tokens: The model's context window (``None``: ``LANGCHAIN_TAG_CONTEXT_TOKENS`` when set).
        calibration: ``"default"``, a :class:`~langchain_tag.judging.calibration.Calibration`, or ``None`` (raw P(YES)).
        strict: Raise :class:`~langchain_tag.errors.JudgmentsFailedError` when any judgment failed.
        reference_inputs: Your own unlabelled sample for the shipped domain-reference default.
        state: What is kept between calls (reference judgments, warnings given), shared by a retriever's judges.

    Raises:
        ValueError: On a bad threshold, concurrency or attempt count, or ``reference_inputs`` with a
            calibration other than ``"default"``.
        CalibrationError: When ``reference_inputs`` holds too few inputs.
    """

    def __init__(
        self,
        llm: ChatRunnable,
        predicate: str | JudgePrompt = "applicability",
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
        state: JudgeState | None = None,
        prompt: str | JudgePrompt = _UNSET,
    ) -> None:
        if prompt is not _UNSET:
            warnings.warn("PairwiseJudge(prompt=...) is deprecated; use predicate=", DeprecationWarning, stacklevel=2)
            predicate = prompt
        _check_settings(threshold, calibration, reference_inputs)
        self.llm = llm
        self.predicate = predicate
        self.prompt = resolve_judge_prompt(predicate)
        self.verdict_format: VerdictFormat = verdict_format
        self.threshold = threshold
        self.cache = cache
        self.context_tokens = context_tokens if context_tokens is not None else context_tokens_from_env()
        self.strict = strict
        self.reference_inputs = check_reference_inputs(reference_inputs) if reference_inputs is not None else None
        self.calibration = calibration
        self.state = state if state is not None else JudgeState()
        self.runner = CallRunner(
            configure_judge(llm, verdict_format),
            model=llm,
            max_concurrency=max_concurrency,
            max_attempts=max_attempts,
            retry_backoff=retry_backoff,
            store=VerdictStore(cache) if cache is not None else None,
        )

    # ------------------------------------------------------------ settings
    @property
    def model_identity(self) -> str:
        """The judge model's identity (cache keys, default calibrations)."""
        return self.state.identity(self.llm)

    @property
    def calibration(self) -> Calibration | None:
        """The calibration in use (``"default"`` resolved for this judge's model and prompt)."""
        if self._calibration != "default":
            return self._calibration
        version, memo = self.prompt.scoring_version, self.state.defaults
        return resolve_default(self.model_identity, version, self.reference_inputs, memo)

    @calibration.setter
    def calibration(self, value: Calibration | Literal["default"] | None) -> None:
        self._calibration = value

    @property
    def decision_threshold(self) -> float:
        """The threshold applied: this judge's own, else the calibration's, else 0.5."""
        if self.threshold is not None:
            return self.threshold
        calibration = self.calibration
        return calibration.threshold if calibration is not None and calibration.threshold is not None else 0.5

    @property
    def scorer(self) -> Scorer:
        """The scorer of this judge's verdicts (its reference judgments kept in :attr:`state`)."""
        book = ReferenceBook(self._reference_key, self.state.references)
        return Scorer(self.calibration, self.decision_threshold, book)

    def _reference_key(self, reference: str, rule: Rule) -> str:
        parts = (self.model_identity, self.prompt.scoring_version, self.verdict_format, reference)
        return "\x00".join((*parts, self.prompt.render_rule(rule)))

    def reference_log_odds(self, rule: Rule) -> tuple[float | None, float | None]:
        """The rule's mean log-odds of YES on the calibration's reference inputs, and their spread, if judged."""
        return self.scorer.reference_log_odds(rule)

    # ------------------------------------------------------------ the pure steps, for any engine
    def messages(self, query: str, rule: Rule) -> list[BaseMessage]:
        """The prompt for one pair."""
        return self.prompt.messages(query, rule, self.verdict_format)

    def requests(self, query: str, rules: Sequence[Rule]) -> list[PairRequest]:
        """The requests that judge ``query`` against ``rules`` (:func:`~langchain_tag.judging.pairs.render_pairs`).

        Plain data for another engine (a Ray Data pipeline, a provider batch
        API); feed each reply back with :meth:`record`.
        """
        return render_pairs(self.prompt, query, rules, model=self.model_identity, verdict_format=self.verdict_format)

    def reference_requests(self, rules: Sequence[Rule]) -> list[PairRequest]:
        """The requests the calibration's reference judgments need for ``rules`` (none without references)."""
        return [r for ref, missing in self.scorer.needed_references(rules) for r in self.requests(ref, missing)]

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

        Returns the raw judgment of that request (one half of the pair, for a
        contrast prompt); a reply that cannot be read gives a judgment with
        ``error`` set and is not cached. A later :meth:`judge` of the same
        pair then makes no call.
        """
        outcome: Outcome[Verdict] = Outcome(
            attempts=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, reply=text
        )
        try:
            outcome.value = read_reply(text, logprobs)
        except ParseError as exc:
            outcome.error = str(exc)
        else:
            if self.cache is not None:
                VerdictStore(self.cache).put(self._request(request), outcome)
        return _as_judgment(request.rule_id, outcome)

    # ------------------------------------------------------------ judging
    def judge(self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None) -> MatchResult:
        """Judge ``query`` against every rule (and, once per rule, the calibration's reference inputs).

        Raises:
            ProviderError: When every call raised (nothing could be judged).
            InputTooLongError: When a prompt would not fit the context window.
            JudgmentsFailedError: With ``strict``, when any judgment failed.
        """
        scorer, batches = self._plan(query, rules)
        unique, index = _unique(batches)
        outcomes = self.runner.run([self._request(r) for r in unique], callbacks=callbacks)
        return self._conclude(scorer, batches, [outcomes[i] for i in index])

    async def ajudge(self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None) -> MatchResult:
        """Async twin of :meth:`judge`."""
        scorer, batches = self._plan(query, rules)
        unique, index = _unique(batches)
        outcomes = await self.runner.arun([self._request(r) for r in unique], callbacks=callbacks)
        return self._conclude(scorer, batches, [outcomes[i] for i in index])

    def _plan(
        self, query: str, rules: Sequence[Rule]
    ) -> tuple[Scorer, list[tuple[str, Sequence[Rule], list[PairRequest]]]]:
        """The scorer, and what to send: the query's requests first, then the reference judgments it needs."""
        check_context(self.prompt, self.verdict_format, query, rules, self.context_tokens)
        scorer = self.scorer
        batches: list[tuple[str, Sequence[Rule], list[PairRequest]]] = [(query, rules, self.requests(query, rules))]
        batches += [(ref, missing, self.requests(ref, missing)) for ref, missing in scorer.needed_references(rules)]
        return scorer, batches

    def _request(self, pair: PairRequest) -> Request[Verdict]:
        return Request(
            messages=to_messages(pair),
            parse=parse_verdict,
            key=pair.key if self.cache is not None else None,
            run_name=f"tag_judge {pair.rule_id}",
            tags=list(JUDGE_TAGS),
            metadata={"tag_rule_id": pair.rule_id, "tag_predicate": self.prompt.name},
        )

    def _conclude(
        self,
        scorer: Scorer,
        batches: Sequence[tuple[str, Sequence[Rule], list[PairRequest]]],
        outcomes: Sequence[Outcome[Verdict]],
    ) -> MatchResult:
        """Combine halves, keep reference judgments, decide with the scorer, and report failures."""
        results = []
        start = 0
        for text, rules, requests in batches:
            part = outcomes[start : start + len(requests)]
            start += len(requests)
            raw = [_as_judgment(r.rule_id, o) for r, o in zip(requests, part, strict=True)]
            judgments = combine_halves(requests, raw)
            results.append((text, rules, judgments))
        (query, rules, judgments), references = results[0], results[1:]
        for reference, missing, found in references:
            scorer.references.add(reference, missing, found)
        result = MatchResult(query=query, predicate=self.prompt.name, judgments=judgments)
        _note_missing_logprobs(self.llm, judgments, self.state.warned)
        scorer.decide(rules, judgments)
        return self._settle(result)

    def _settle(self, result: MatchResult) -> MatchResult:
        """Return the result, logging its failures; raise when the provider answered nothing, or with ``strict``."""
        failed = result.failed
        if not failed:
            return result
        if len(failed) == len(result.judgments) and all(not j.reply for j in failed):
            raise ProviderError(
                f"all {len(result.judgments)} judgments failed calling {describe_model(self.llm)}; "
                f"last: judgment of rule {failed[-1].rule_id} after {failed[-1].attempts} attempt(s): "
                f"{failed[-1].error}"
            )
        ids = [j.rule_id for j in failed]
        if self.strict:
            raise JudgmentsFailedError(
                f"{len(failed)} of {len(result.judgments)} judgments by {describe_model(self.llm)} failed "
                f"after {self.runner.max_attempts} attempt(s): {', '.join(ids)}; first: {failed[0].error}",
                failed_rule_ids=ids,
                result=result,
            )
        logger.warning(
            "%d of %d judgments by %s failed after %d attempts and were counted as NO: %s; first: %s",
            len(failed),
            len(result.judgments),
            describe_model(self.llm),
            self.runner.max_attempts,
            ", ".join(ids),
            "; ".join(f"{j.rule_id} ({j.error})" for j in failed[:3]),
        )
        return result
