"""Retrievers over rule documents: applicability, relevance and all rules.

:class:`ApplicabilityRetriever` is a drop-in replacement for a vector store
retriever inside any LangChain chain: ``invoke(query)`` returns the rule
``Document`` objects whose condition the query satisfies, each carrying its
verdict in metadata.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator
from typing_extensions import Self, override

from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.calibration.model import Method as CalibrationMethod
from langchain_tag.judging.calibration.scorer import LabelledFit
from langchain_tag.judging.chat import ChatJudge, ChatRunnable
from langchain_tag.judging.chat_decision_model import ChatDecisionModel
from langchain_tag.judging.context_window import CONTEXT_TOKENS_ENV
from langchain_tag.judging.decision_interfaces import BaseDecisionModel, is_decision_model
from langchain_tag.judging.decision_judge import DecisionJudge
from langchain_tag.judging.judge import Judge, JudgeState
from langchain_tag.judging.prompts import JudgePrompt, VerdictFormat
from langchain_tag.judging.results import JudgmentsFailedError, MatchResult
from langchain_tag.judging.settings import JudgeSettings
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache, VerdictCache
from langchain_tag.rules import Rule, rule_documents, rules_from_documents

__all__ = ["AllRulesRetriever", "ApplicabilityRetriever", "RelevanceRetriever", "verdict_documents"]

# Metadata keys the retriever adds to each returned document.
VERDICT_KEY = "tag_verdict"
SCORE_KEY = "tag_score"
P_YES_KEY = "tag_p_yes"
PREDICATE_KEY = "tag_predicate"
FAILED_KEY = "tag_failed_rule_ids"

# Custom callback event sent when some judgment of a retrieval failed.
FAILED_EVENT = "tag_judgments_failed"


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


def _stored_documents(vectorstore: VectorStore) -> list[Document]:
    """Every document a vector store holds (Chroma-style ``get``).

    Raises:
        TypeError: When the store cannot list its documents.
    """
    getter = getattr(vectorstore, "get", None)
    if getter is None:
        raise TypeError(f"{type(vectorstore).__name__} cannot list its documents; pass candidates=N to judge the top-N")
    stored = getter(include=["documents", "metadatas"])
    return [
        Document(page_content=text or "", metadata=meta or {}, id=doc_id)
        for doc_id, text, meta in zip(stored["ids"], stored["documents"], stored["metadatas"], strict=True)
    ]


def verdict_documents(
    result: MatchResult, documents: Mapping[str, Document], *, k: int | None = None
) -> list[Document]:
    """The documents a retrieval returns for a match result: matched rules, highest score first, capped at ``k``.

    Each is a copy of the rule document given, with its ``page_content``, ``id``
    and metadata kept and the verdict keys added: ``tag_verdict``,
    ``tag_predicate``, ``tag_score`` (calibrated) and ``tag_p_yes`` (raw P(YES))
    when known, and
    ``tag_failed_rule_ids`` when some judgment failed.
    """
    failed = ",".join(j.rule_id for j in result.failed)
    matched = result.matched if k is None else result.matched[:k]
    docs = []
    for judgment in matched:
        found = documents[judgment.rule_id]
        doc = Document(page_content=found.page_content, metadata=dict(found.metadata), id=found.id)
        doc.metadata[VERDICT_KEY] = "YES"
        doc.metadata[PREDICATE_KEY] = result.predicate
        if judgment.score is not None:
            doc.metadata[SCORE_KEY] = judgment.score
        if judgment.p_yes is not None:
            doc.metadata[P_YES_KEY] = judgment.p_yes
        if failed:
            doc.metadata[FAILED_KEY] = failed
        docs.append(doc)
    return docs


class _CalibratesFromExamples:
    """``calibrate``/``acalibrate``: fit the retriever's calibration from a few labelled inputs."""

    calibration: Calibration | Literal["default"] | None

    def _judge(self, **overrides: Any) -> Judge:
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
        judge = self._judge(calibration=probe.calibration, reference_inputs=None)
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
        judge = self._judge(calibration=probe.calibration, reference_inputs=None)
        for query, holds in examples:
            rules = await self.arules_for(query)
            probe.add(judge, rules, await judge.ajudge(query, rules), holds)
        self.calibration = probe.fit(judge, method)
        return self.calibration


class ApplicabilityRetriever(_CalibratesFromExamples, BaseRetriever):
    """Retrieve the rules whose condition the query satisfies.

    One judgment per (query, rule) pair, sent with ``max_concurrency`` through
    a :class:`~langchain_tag.judging.judge.Judge`, which the retriever builds
    from its fields at every call: change a field after construction
    (``retriever.threshold = 0.9``) and the next call uses it. The judge sees
    each rule's condition, never its action.

    Failed judgments are never silent. Without ``strict`` they are counted as
    NO, a warning naming their rule ids is logged (logger
    ``langchain_tag.judging.chat``), and they are reported (even when no rule
    matched) in :attr:`last_match` (``.failed``), in the returned documents'
    metadata (``tag_failed_rule_ids``), in :meth:`match`'s result, and to
    callbacks as the custom event ``tag_judgments_failed``. With
    ``strict=True`` the call raises
    :class:`~langchain_tag.judging.results.JudgmentsFailedError` instead.

    Example:
        >>> from langchain_tag import ApplicabilityRetriever, Rule
        >>> from langchain_tag.testing import fake_judge
        >>> rule = Rule(rule_id="R1", rule_name="bare except", condition="an except clause names no class",
        ...             action="catch the specific exception class")
        >>> retriever = ApplicabilityRetriever(llm=fake_judge({"R1"}, with_logprobs=True), rules=[rule])
        >>> [d.metadata["rule_id"] for d in retriever.invoke("except: pass")]
        ['R1']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", validate_assignment=True)

    llm: ChatRunnable | BaseDecisionModel
    """The judge: a chat model or a runnable built from one (``llm.bind(logprobs=True, top_logprobs=5,
    max_tokens=1)``, ``.with_retry()``, ``.with_fallbacks([...])``; a bare OpenAI-compatible model gets
    logprobs and a one-token cap bound, :func:`~langchain_tag.judging.chat.configure_judge`), or a LangChain
    decision model (``BaseDecisionModel``, ``OpenAIDecisions``), which judges each input's rules in one request
    (:class:`~langchain_tag.judging.decision_judge.DecisionJudge`)."""
    rules: Sequence[Document | Rule] = Field(default_factory=list)
    """Rule documents (any ``Document`` carrying the rule metadata keys) or :class:`~langchain_tag.rules.Rule`
    objects."""
    predicate: str | JudgePrompt = "applicability"
    """The judge prompt: ``"applicability"`` (default), ``"applicability-contrast"``, ``"relevance"``, another
    name in :data:`~langchain_tag.judging.prompts.JUDGE_PROMPTS`, or a
    :class:`~langchain_tag.judging.prompts.JudgePrompt`."""
    verdict_format: VerdictFormat = "token"
    """``"token"`` (one-word YES/NO) or ``"json"``."""
    threshold: float | None = None
    """Calibrated score needed for YES; ``None`` takes the calibration's threshold, else 0.5."""
    calibration: Calibration | Literal["default"] | None = "default"
    """Raw P(YES) to calibrated score (:mod:`langchain_tag.judging.calibration.scorer`): ``"default"`` (the shipped
    calibration of the judge's model family and prompt; raw P(YES) without one), a ``Calibration``, or ``None``."""
    k: int | None = Field(default=None, ge=0)
    """Optional cap on the number of documents returned, highest score first."""
    max_concurrency: int = 8
    """Most judgments in flight at once."""
    vectorstore: VectorStore | None = None
    """Optional store of rule documents to draw candidates from."""
    candidates: int | None = Field(default=None, ge=1)
    """With ``vectorstore``, judge only the top-N similar rules."""
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

    _rules: list[Rule] = PrivateAttr(default_factory=list)
    _documents: dict[str, Document] = PrivateAttr(default_factory=dict)
    _state: JudgeState = PrivateAttr(default_factory=JudgeState)
    _built: tuple[str | None, Judge] | None = PrivateAttr(default=None)
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

    @field_validator("threshold", "max_concurrency", "context_tokens")
    @classmethod
    def _check_setting(cls, value: Any, info: ValidationInfo) -> Any:
        return JudgeSettings.check(str(info.field_name), value)

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
        self._built = None  # made anew at the next call, from the fields as they are now
        self._judge(strict=self.strict)  # refuses inconsistent settings now (an override: not kept for the calls)
        return self

    @classmethod
    def from_vectorstore(
        cls, llm: ChatRunnable, vectorstore: VectorStore, *, candidates: int | None = None, **kwargs: Any
    ) -> ApplicabilityRetriever:
        """Judge the rules stored in a vector store.

        Args:
            llm: The judge model.
            vectorstore: A store of rule documents (for example Chroma).
            candidates: If given, judge only the ``candidates`` rules most similar to each query (a cheap
                pre-filter for large rule sets); otherwise every stored rule is loaded once and judged.
            **kwargs: Other retriever fields (``k``, ``threshold``, ...).

        Raises:
            TypeError: When every rule must be loaded but the store cannot list its documents.
        """
        if candidates is not None:
            return cls(llm=llm, vectorstore=vectorstore, candidates=candidates, **kwargs)
        return cls(llm=llm, rules=_stored_documents(vectorstore), **kwargs)

    # ------------------------------------------------------------------ the judge, from the fields
    def _judge(self, **overrides: Any) -> Judge:
        """A judge with this retriever's current settings (and this call's overrides), sharing its state.

        The settings (:class:`~langchain_tag.judging.settings.JudgeSettings`, checked as they are made) come
        from the fields; without overrides the judge is kept until a field is set again (the model validator
        runs then, and drops it) or ``LANGCHAIN_TAG_CONTEXT_TOKENS`` changes.
        """
        environment = os.environ.get(CONTEXT_TOKENS_ENV)
        built = self._built
        if not overrides and built is not None and built[0] == environment:
            return built[1]
        settings = JudgeSettings(
            predicate=self.predicate,
            verdict_format=self.verdict_format,
            threshold=self.threshold,
            calibration=self.calibration,
            max_concurrency=self.max_concurrency,
            cache=self.cache,
            context_tokens=self.context_tokens,
            strict=self.strict,
            reference_inputs=tuple(self.reference_inputs) if self.reference_inputs is not None else None,
        )
        if overrides:
            settings = replace(settings, **overrides)
        judge: Judge
        if isinstance(self.llm, ChatDecisionModel):  # our chat judge behind the decision interface: the chat judge
            judge = ChatJudge(self.llm.llm, questions=True, settings=settings, state=self._state)
        elif is_decision_model(self.llm):
            judge = DecisionJudge(self.llm, settings=settings, state=self._state)
        else:
            judge = ChatJudge(cast(ChatRunnable, self.llm), settings=settings, state=self._state)
        if not overrides:
            self._built = (environment, judge)
        return judge

    @property
    def judge(self) -> Judge:
        """The judge as the next call will use it.

        Its ``calibration``, ``decision_threshold``, ``reference_log_odds``, and (a chat judge) the pure
        ``requests``/``record`` steps for other engines.
        """
        return self._judge()

    @property
    def last_match(self) -> MatchResult | None:
        """The full result of this retriever's most recent retrieval (``invoke``, ``ainvoke``, ``batch``).

        Calls that run concurrently on one retriever overwrite each other's result here: there, use
        :meth:`match`/:meth:`amatch`, the ``tag_judgments_failed`` callback event, or ``strict=True``.
        ``None`` before the first retrieval.
        """
        return self._last_match

    def rules_for(self, query: str) -> list[Rule]:
        """The rules judged for ``query``: every rule, or the vector store's ``candidates`` most similar ones."""
        if self.vectorstore is not None and self.candidates is not None:
            return self._remember(self.vectorstore.similarity_search(query, k=self.candidates))
        return self._rules

    async def arules_for(self, query: str) -> list[Rule]:
        """Async twin of :meth:`rules_for`."""
        if self.vectorstore is not None and self.candidates is not None:
            return self._remember(await self.vectorstore.asimilarity_search(query, k=self.candidates))
        return self._rules

    def _remember(self, found: list[Document]) -> list[Rule]:
        """The rules of documents drawn from the vector store; each document is kept to be returned as found."""
        rules = rules_from_documents(found)
        for rule, doc in zip(rules, found, strict=True):
            self._documents.setdefault(rule.rule_id, doc)
        return rules

    def match(self, query: str, *, callbacks: Callbacks = None) -> MatchResult:
        """Judge every candidate rule and return all judgments, with token counts."""
        return self._judge().judge(query, self.rules_for(query), callbacks=callbacks)

    async def amatch(self, query: str, *, callbacks: Callbacks = None) -> MatchResult:
        """Async twin of :meth:`match`."""
        return await self._judge().ajudge(query, await self.arules_for(query), callbacks=callbacks)

    def documents(self, result: MatchResult, *, k: int | None = None) -> list[Document]:
        """The documents :meth:`invoke` would return for :meth:`match`'s result (:func:`verdict_documents`)."""
        if k is not None and k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        return verdict_documents(result, self._documents, k=self.k if k is None else k)

    # ------------------------------------------------------------------ the retriever interface
    @override
    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Retrieve the rules that apply to ``input``.

        Args:
            input: The query.
            config: A runnable config; its ``max_concurrency`` caps the judgments in flight for this call.
            **kwargs: Per-call options: ``k`` (cap), ``threshold`` (cut-off on the calibrated score),
                ``max_concurrency``.
        """
        limit = (config or {}).get("max_concurrency")
        if limit is not None and kwargs.get("max_concurrency") is None:
            kwargs["max_concurrency"] = limit
        return super().invoke(input, config, **kwargs)

    @override
    async def ainvoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Async twin of :meth:`invoke`."""
        limit = (config or {}).get("max_concurrency")
        if limit is not None and kwargs.get("max_concurrency") is None:
            kwargs["max_concurrency"] = limit
        return await super().ainvoke(input, config, **kwargs)

    def _call_judge(self, k: int | None, threshold: float | None, max_concurrency: int | None) -> Judge:
        """The judge of one call: the fields' settings with this call's options (both sides of a call share it)."""
        if k is not None and k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        options = {"threshold": threshold, "max_concurrency": max_concurrency}
        return self._judge(**{key: value for key, value in options.items() if value is not None})

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
        judge = self._call_judge(k, threshold, max_concurrency)
        rules = self.rules_for(query)
        try:
            result = self._last_match = judge.judge(query, rules, callbacks=run_manager.get_child())
        except JudgmentsFailedError as exc:
            self._last_match = exc.result
            raise
        if result.failed:
            run_manager.get_child().on_custom_event(FAILED_EVENT, result.failure_event())
        return verdict_documents(result, self._documents, k=self.k if k is None else k)

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
        judge = self._call_judge(k, threshold, max_concurrency)
        rules = await self.arules_for(query)
        try:
            result = self._last_match = await judge.ajudge(query, rules, callbacks=run_manager.get_child())
        except JudgmentsFailedError as exc:
            self._last_match = exc.result
            raise
        if result.failed:
            await run_manager.get_child().on_custom_event(FAILED_EVENT, result.failure_event())
        return verdict_documents(result, self._documents, k=self.k if k is None else k)


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
