"""Retrievers over rule documents: applicability, relevance and all rules.

:class:`ApplicabilityRetriever` is a drop-in replacement for a vector store
retriever inside any LangChain chain: ``invoke(query)`` returns the rule
``Document`` objects whose condition the query satisfies, each carrying its
verdict in metadata.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator
from typing_extensions import Self, override

from langchain_tag.calibration import Calibration, CalibrationError, fit_calibration
from langchain_tag.calibration import Method as CalibrationMethod
from langchain_tag.errors import JudgmentsFailedError
from langchain_tag.matcher import ChatRunnable, MatchResult, PairwiseJudge, scored_pairs
from langchain_tag.prompts import JudgePrompt, VerdictFormat
from langchain_tag.rules import Rule, rule_documents, rules_from_documents
from langchain_tag.verdict_cache import InMemoryVerdictCache, VerdictCache

__all__ = ["AllRulesRetriever", "ApplicabilityRetriever", "RelevanceRetriever"]

# Metadata keys the retriever adds to each returned document.
VERDICT_KEY = "tag_verdict"
SCORE_KEY = "tag_score"
RAW_SCORE_KEY = "tag_raw_score"
PREDICATE_KEY = "tag_predicate"
FAILED_KEY = "tag_failed_rule_ids"

# Custom callback event sent when some judgment of a retrieval failed.
FAILED_EVENT = "tag_judgments_failed"


def _failure_event(result: MatchResult) -> dict[str, Any]:
    """The data of the ``tag_judgments_failed`` event: failed rule ids and why each failed."""
    return {
        "query": result.query,
        "failed_rule_ids": [j.rule_id for j in result.failed],
        "errors": {j.rule_id: j.error for j in result.failed},
    }


def _refuse_unknown(cls: type[BaseRetriever], data: Any) -> None:
    """Raise a ``ValueError`` naming each unknown constructor option, with the closest known one."""
    if not isinstance(data, dict):
        return
    known = set(cls.model_fields)
    unknown = [key for key in data if key not in known]
    if not unknown:
        return
    hints = []
    for key in unknown:
        if key == "search_kwargs":
            hints.append("search_kwargs (pass k= and threshold= directly, or per call: invoke(query, k=...))")
        elif key == "top_k":
            hints.append("top_k (the cap is k=)")
        else:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hints.append(f"{key} (did you mean {close[0]}?)" if close else key)
    raise ValueError(f"{cls.__name__} got unknown option(s): {'; '.join(hints)}")


def _as_documents(value: Any) -> Any:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return rule_documents(value)
    return value


class ApplicabilityRetriever(BaseRetriever):
    """Retrieve the rules whose condition the query satisfies.

    One judgment per (query, rule) pair, sent through the model's
    ``batch``/``abatch`` with ``max_concurrency``. The judge sees each rule's
    id, name, condition and tags, never its action. A malformed reply is
    retried once, then counted as NO and reported (see ``strict``).

    Failed judgments are never silent. Without ``strict`` they are counted as
    NO, a warning naming their rule ids is logged (logger
    ``langchain_tag.matcher``), and they are reported
    (even when no rule matched) in :attr:`last_match` (``.failed``), in
    the returned documents' metadata (``tag_failed_rule_ids``), in
    :meth:`match`'s result, and to callbacks as the custom event
    ``tag_judgments_failed`` (``{"failed_rule_ids": [...], "errors": {...}}``,
    seen by ``astream_events``). With ``strict=True`` the call raises
    :class:`~langchain_tag.errors.JudgmentsFailedError` instead, carrying the
    failed rule ids and the whole match result.

    Example:
        .. code-block:: python

            retriever = ApplicabilityRetriever(llm=judge_llm, rules=rule_docs)
            chain = {"context": retriever, "question": RunnablePassthrough()} | prompt | llm

    Attributes:
        llm: The judge: a chat model or a runnable built from one
            (``llm.bind(logprobs=True, top_logprobs=5, max_tokens=1)``,
            ``.with_retry()``, ``.with_fallbacks([...])``); see
            :class:`~langchain_tag.matcher.PairwiseJudge` for what a bare
            model gets bound.
        rules: Rule documents (any ``Document`` carrying the rule metadata keys)
            or :class:`~langchain_tag.rules.Rule` objects.
        predicate: ``"applicability"`` (default), ``"relevance"``, ``"nba"`` or a
            :class:`~langchain_tag.prompts.JudgePrompt`.
        verdict_format: ``"token"`` (one-word YES/NO) or ``"json"``.
        threshold: Calibrated score needed for YES when the model returns
            logprobs; ``None`` (default) takes the calibration's threshold,
            chosen with it on development data, else 0.5.
        calibration: Maps raw P(YES) to the calibrated score
            (:mod:`langchain_tag.calibration`): ``"default"`` (the shipped
            calibration of the judge's model family, raw P(YES) for models
            without one), a :class:`~langchain_tag.calibration.Calibration`
            (for example from :func:`~langchain_tag.calibration.fit_calibration`
            or :meth:`Calibration.load`), or ``None`` for raw P(YES).
        k: Optional cap on the number of documents returned, highest P(YES) first.
        max_concurrency: Most judgments in flight at once.
        vectorstore: Optional store of rule documents to draw candidates from.
        candidates: With ``vectorstore``, judge only the top-N similar rules.
        cache: Verdict cache (:mod:`langchain_tag.verdict_cache`): a pair
            judged before costs no call. In memory per retriever by default;
            pass a :class:`~langchain_tag.verdict_cache.SQLiteVerdictCache` to
            keep verdicts across runs, or ``None`` to judge every time.
        context_tokens: The judge model's context window; a query whose
            prompt would not fit is refused with
            :class:`~langchain_tag.matcher.InputTooLongError` (never
            truncated). ``None`` (default) takes ``LANGCHAIN_TAG_CONTEXT_TOKENS``
            when it is set, else skips the check.
        strict: Raise :class:`~langchain_tag.errors.JudgmentsFailedError`
            when any judgment failed, instead of counting it as NO.
        reference_inputs: A sample of your own unlabelled inputs, 8 to 20
            typical ones: with ``calibration="default"``, the judge model
            family's domain-reference default scores each rule against what
            it sees on this sample (no labels needed; see
            :mod:`langchain_tag.calibration`). Costs one judgment per input
            and rule, once (cached).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    llm: ChatRunnable
    rules: Sequence[Document | Rule] = Field(default_factory=list)
    predicate: str | JudgePrompt = "applicability"
    verdict_format: VerdictFormat = "token"
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    k: int | None = Field(default=None, ge=0)
    max_concurrency: int = Field(default=8, ge=1)
    vectorstore: VectorStore | None = None
    candidates: int | None = Field(default=None, ge=1)
    cache: VerdictCache | None = Field(default_factory=InMemoryVerdictCache)
    context_tokens: int | None = Field(default=None, ge=1)
    calibration: Calibration | Literal["default"] | None = "default"
    strict: bool = False
    reference_inputs: Sequence[str] | None = None

    _rules: list[Rule] = PrivateAttr(default_factory=list)
    _documents: dict[str, Document] = PrivateAttr(default_factory=dict)
    _judge: PairwiseJudge = PrivateAttr()
    _last_match: MatchResult | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _check_options(cls, data: Any) -> Any:
        _refuse_unknown(cls, data)
        return data

    @field_validator("rules", mode="before")
    @classmethod
    def _coerce_rules(cls, value: Any) -> Any:
        return _as_documents(value)

    @model_validator(mode="after")
    def _setup(self) -> Self:
        documents = rule_documents(self.rules)  # already documents: the field's validator made them so
        self._rules = rules_from_documents(documents)
        self._documents = {rule.rule_id: doc for rule, doc in zip(self._rules, documents, strict=True)}
        if self.candidates is not None and self.vectorstore is None:
            raise ValueError("candidates= needs a vectorstore to draw candidates from")
        if not self._rules and self.candidates is None:
            raise ValueError(
                "ApplicabilityRetriever needs rules=, or a vectorstore with candidates=N "
                "(use from_vectorstore to judge every stored rule)"
            )
        self._judge = PairwiseJudge(
            self.llm,
            self.predicate,
            verdict_format=self.verdict_format,
            threshold=self.threshold,
            max_concurrency=self.max_concurrency,
            cache=self.cache,
            context_tokens=self.context_tokens,
            calibration=self.calibration,
            strict=self.strict,
            reference_inputs=self.reference_inputs,
        )
        return self

    @classmethod
    def from_vectorstore(
        cls,
        llm: ChatRunnable,
        vectorstore: VectorStore,
        *,
        candidates: int | None = None,
        **kwargs: Any,
    ) -> ApplicabilityRetriever:
        """Judge the rules stored in a vector store.

        Args:
            llm: The judge model.
            vectorstore: A store of rule documents (for example Chroma).
            candidates: If given, judge only the ``candidates`` rules most
                similar to each query (a cheap pre-filter for large rule sets);
                otherwise every stored rule is loaded once and judged.
            **kwargs: Other retriever fields (``k``, ``threshold``, ...).

        Raises:
            TypeError: When every rule must be loaded but the store cannot list
                its documents (it has no Chroma-style ``get``).
        """
        if candidates is not None:
            return cls(llm=llm, vectorstore=vectorstore, candidates=candidates, **kwargs)
        getter = getattr(vectorstore, "get", None)
        if getter is None:
            raise TypeError(
                f"{type(vectorstore).__name__} cannot list its documents; pass candidates=N to judge the top-N"
            )
        stored = getter(include=["documents", "metadatas"])
        docs = [
            Document(page_content=text or "", metadata=meta or {}, id=doc_id)
            for doc_id, text, meta in zip(stored["ids"], stored["documents"], stored["metadatas"], strict=True)
        ]
        return cls(llm=llm, rules=docs, **kwargs)

    # ------------------------------------------------------------------ matching
    def _candidates(self, query: str) -> list[Rule]:
        if self.vectorstore is not None and self.candidates is not None:
            found = self.vectorstore.similarity_search(query, k=self.candidates)
            return self._remember(found)
        return self._rules

    async def _acandidates(self, query: str) -> list[Rule]:
        if self.vectorstore is not None and self.candidates is not None:
            found = await self.vectorstore.asimilarity_search(query, k=self.candidates)
            return self._remember(found)
        return self._rules

    @property
    def last_match(self) -> MatchResult | None:
        """The full result of this retriever's most recent retrieval (``invoke``, ``ainvoke``, ``batch``).

        Read ``last_match.failed`` after ``invoke`` to see which judgments
        failed, also when nothing matched. Calls that run concurrently on one
        retriever overwrite each other's result here: there, use
        :meth:`match`/:meth:`amatch` (which return the result), the
        ``tag_judgments_failed`` callback event, or ``strict=True``.
        ``None`` before the first retrieval.
        """
        return self._last_match

    @property
    def judge(self) -> PairwiseJudge:
        """The pairwise judge: its ``calibration``, ``decision_threshold`` and ``reference_log_odds``."""
        return self._judge

    def _remember(self, found: list[Document]) -> list[Rule]:
        """The rules of documents drawn from the vector store; each document is kept to be returned as found."""
        rules = rules_from_documents(found)
        for rule, doc in zip(rules, found, strict=True):
            self._documents.setdefault(rule.rule_id, doc)
        return rules

    def match(self, query: str, *, callbacks: Any = None) -> MatchResult:
        """Judge every candidate rule and return all judgments, with token counts."""
        return self._judge.judge(query, self._candidates(query), callbacks=callbacks)

    async def amatch(self, query: str, *, callbacks: Any = None) -> MatchResult:
        """Async twin of :meth:`match`."""
        return await self._judge.ajudge(query, await self._acandidates(query), callbacks=callbacks)

    def calibrate(
        self,
        examples: Sequence[tuple[str, Iterable[str]]],
        *,
        method: CalibrationMethod = "platt",
        reference_inputs: Sequence[str] = (),
        standardise: bool = False,
        centre_per_input: bool = False,
    ) -> Calibration:
        """Fit a calibration from a few labelled inputs and use it from now on.

        Every example is judged against every candidate rule with raw P(YES)
        (through the verdict cache), then the labels are fitted with
        :func:`~langchain_tag.calibration.fit_calibration`. Save the result
        with :meth:`Calibration.save` and pass it back as ``calibration=``.

        Args:
            examples: ``(input, ids of the rules whose condition holds for it)`` pairs.
            method: ``"threshold"``, ``"platt"`` or ``"isotonic"``.
            reference_inputs: Inputs for the per-rule step (see
                :mod:`langchain_tag.calibration`); empty for none.
            standardise: Divide by the spread over the reference inputs too.
            centre_per_input: Centre each input's features on their median
                over the rules (:meth:`Calibration.input_centre`).

        Raises:
            CalibrationError: On an unknown rule id, no logprobs, or labels of one kind only.
        """
        probe, features, labels = self._start_calibration(reference_inputs, standardise, centre_per_input)
        try:
            for query, holds in examples:
                rules = self._candidates(query)
                wanted = self._check_ids(holds, rules)
                self._collect(rules, self._judge.judge(query, rules), wanted, features, labels)
        finally:
            self._judge.calibration = self.calibration
        return self._finish_calibration(features, labels, method, probe)

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
        probe, features, labels = self._start_calibration(reference_inputs, standardise, centre_per_input)
        try:
            for query, holds in examples:
                rules = await self._acandidates(query)
                wanted = self._check_ids(holds, rules)
                self._collect(rules, await self._judge.ajudge(query, rules), wanted, features, labels)
        finally:
            self._judge.calibration = self.calibration
        return self._finish_calibration(features, labels, method, probe)

    def _start_calibration(
        self, reference_inputs: Sequence[str], standardise: bool, centre_per_input: bool
    ) -> tuple[Calibration, list[float], list[bool]]:
        probe = Calibration(
            method="identity",
            reference_inputs=tuple(reference_inputs),
            standardise=standardise,
            centre_per_input=centre_per_input,
        )
        self._judge.calibration = probe
        return probe, [], []

    @staticmethod
    def _check_ids(holds: Iterable[str], rules: Sequence[Rule]) -> set[str]:
        wanted = set(holds)
        unknown = sorted(wanted - {r.rule_id for r in rules})
        if unknown:
            raise CalibrationError(f"calibration example names rule id(s) not among the rules: {', '.join(unknown)}")
        return wanted

    def _collect(
        self,
        rules: Sequence[Rule],
        result: MatchResult,
        holds: set[str],
        features: list[float],
        labels: list[bool],
    ) -> None:
        judged = scored_pairs(rules, result)
        features.extend(self._judge.features(judged))  # the judge calibrates with the probe meanwhile
        labels.extend(rule.rule_id in holds for rule, _ in judged)

    def _finish_calibration(
        self, features: list[float], labels: list[bool], method: CalibrationMethod, probe: Calibration
    ) -> Calibration:
        if not features:
            raise CalibrationError("no judgment gave a probability: calibration needs a judge that returns logprobs")
        fitted = fit_calibration(
            features,
            labels,
            method=method,
            reference_inputs=probe.reference_inputs,
            standardise=probe.standardise,
            centre_per_input=probe.centre_per_input,
            model=self._judge.model_identity,
            prompt_version=self._judge.prompt.scoring_version,
            note=f"fitted on {len(features)} labelled judgments ({sum(labels)} holding)",
        )
        self.calibration = fitted
        self._judge.calibration = fitted
        return fitted

    def documents(self, result: MatchResult, *, k: int | None = None) -> list[Document]:
        """The documents a retrieval returns for a match result: matched rules, highest P(YES) first, capped at ``k``.

        Each is a copy of the rule document given (``rules=`` or the vector
        store's), with its ``page_content``, ``id`` and metadata kept. Each
        carries its verdict in metadata (``tag_verdict``, ``tag_predicate``,
        ``tag_score`` (calibrated) and ``tag_raw_score`` (raw P(YES)) when
        known, ``tag_failed_rule_ids`` when some judgment failed). Use it to
        turn :meth:`match`'s result into what :meth:`invoke` would have
        returned.
        """
        if k is not None and k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        failed = ",".join(j.rule_id for j in result.failed)
        cap = self.k if k is None else k
        matched = result.matched if cap is None else result.matched[:cap]
        docs = []
        for judgment in matched:
            found = self._documents[judgment.rule_id]
            doc = Document(page_content=found.page_content, metadata=dict(found.metadata), id=found.id)
            doc.metadata[VERDICT_KEY] = "YES"
            doc.metadata[PREDICATE_KEY] = result.predicate
            if judgment.score is not None:
                doc.metadata[SCORE_KEY] = judgment.score
            if judgment.probability is not None:
                doc.metadata[RAW_SCORE_KEY] = judgment.probability
            if failed:
                doc.metadata[FAILED_KEY] = failed
            docs.append(doc)
        return docs

    def _per_call(self, threshold: float | None, max_concurrency: int | None) -> PairwiseJudge:
        """The judge, or a copy of it with this call's threshold and concurrency (sharing cache and calibration)."""
        if threshold is None and max_concurrency is None:
            return self._judge
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be within [0, 1], got {threshold}")
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        judge = copy.copy(self._judge)
        if threshold is not None:
            judge.threshold = threshold
        if max_concurrency is not None:
            judge.max_concurrency = max_concurrency
        return judge

    @staticmethod
    def _with_config_concurrency(config: RunnableConfig | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` with the config's ``max_concurrency`` unless the call gave its own."""
        limit = (config or {}).get("max_concurrency")
        if limit is not None and kwargs.get("max_concurrency") is None:
            return {**kwargs, "max_concurrency": limit}
        return kwargs

    @override
    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Retrieve the rules that apply to ``input``.

        Args:
            input: The query.
            config: A runnable config; its ``max_concurrency`` caps the
                judgments in flight for this call.
            **kwargs: Per-call options: ``k`` (cap), ``threshold`` (cut-off
                on the calibrated score), ``max_concurrency``.
        """
        return super().invoke(input, config, **self._with_config_concurrency(config, kwargs))

    @override
    async def ainvoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Async twin of :meth:`invoke`."""
        return await super().ainvoke(input, config, **self._with_config_concurrency(config, kwargs))

    @override
    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        threshold: float | None = None,
        max_concurrency: int | None = None,
    ) -> list[Document]:
        judge = self._per_call(threshold, max_concurrency)
        rules = self._candidates(query)
        try:
            result = judge.judge(query, rules, callbacks=run_manager.get_child())
        except JudgmentsFailedError as exc:
            self._last_match = exc.result
            raise
        self._last_match = result
        if result.failed:
            run_manager.get_child().on_custom_event(FAILED_EVENT, _failure_event(result))
        return self.documents(result, k=k)

    @override
    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        threshold: float | None = None,
        max_concurrency: int | None = None,
    ) -> list[Document]:
        judge = self._per_call(threshold, max_concurrency)
        rules = await self._acandidates(query)
        try:
            result = await judge.ajudge(query, rules, callbacks=run_manager.get_child())
        except JudgmentsFailedError as exc:
            self._last_match = exc.result
            raise
        self._last_match = result
        if result.failed:
            await run_manager.get_child().on_custom_event(FAILED_EVENT, _failure_event(result))
        return self.documents(result, k=k)


class RelevanceRetriever(ApplicabilityRetriever):
    """The relevance baseline of the method's ablation.

    Same pairwise setup and rules, but the judge sees the action and is asked
    whether the rule is relevant to the input, not whether its condition holds.
    """

    predicate: str | JudgePrompt = "relevance"


class AllRulesRetriever(BaseRetriever):
    """Return every rule (the all-rules baseline), optionally capped at ``k``."""

    model_config = ConfigDict(extra="forbid")

    rules: Sequence[Document | Rule] = Field(default_factory=list)
    k: int | None = Field(default=None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _check_options(cls, data: Any) -> Any:
        _refuse_unknown(cls, data)
        return data

    @field_validator("rules", mode="before")
    @classmethod
    def _coerce_rules(cls, value: Any) -> Any:
        return _as_documents(value)

    @override
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        cap = self.k if k is None else k
        docs = [
            Document(page_content=d.page_content, metadata=dict(d.metadata), id=d.id)
            for d in rule_documents(self.rules)
        ]
        return docs if cap is None else docs[:cap]
