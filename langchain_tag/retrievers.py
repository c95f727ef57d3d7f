"""Retrievers over rule documents: applicability, relevance and all rules.

:class:`ApplicabilityRetriever` is a drop-in replacement for a vector store
retriever inside any LangChain chain: ``invoke(query)`` returns the rule
``Document`` objects whose condition the query satisfies, each carrying its
verdict in metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator
from typing_extensions import Self, override

from langchain_tag._calibrates import CalibratesFromExamples
from langchain_tag._judge_fields import JudgeFields
from langchain_tag._retriever_options import as_documents, refuse_unknown, stored_documents
from langchain_tag.judging.chat import ChatRunnable
from langchain_tag.judging.prompts import JudgePrompt
from langchain_tag.judging.proxy_gate import ProxyGate, fit_gate
from langchain_tag.judging.results import JudgmentsFailedError, MatchResult
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


class ApplicabilityRetriever(JudgeFields, CalibratesFromExamples, BaseRetriever):
    """Retrieve the rules whose condition the query satisfies.

    One judgment per (query, rule) pair, sent with ``max_concurrency`` through
    a :class:`~langchain_tag.judging.judge.Judge` built from the retriever's
    fields as they are at the call: an assignment (``retriever.threshold = 0.9``),
    a ``model_copy(update=...)`` or a per-call option (``invoke(q, threshold=0.9)``)
    takes effect at the next call; the judge is kept between calls only while
    every field it was built from is the same. The judge sees each rule's
    condition, never its action.

    Failed judgments are never silent. Without ``strict`` they are counted as
    NO, a warning naming their rule ids is logged (by the judge's module,
    ``langchain_tag.judging.chat`` or ``langchain_tag.judging.decision_judge``),
    and they are reported (even when no rule matched) in :attr:`last_match` (``.failed``), in the returned documents'
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

    rules: Sequence[Document | Rule] = Field(default_factory=list)
    """Rule documents (any ``Document`` carrying the rule metadata keys) or :class:`~langchain_tag.rules.Rule`
    objects."""
    k: int | None = Field(default=None, ge=0)
    """Optional cap on the number of documents returned, highest score first."""
    vectorstore: VectorStore | None = None
    """Optional store of rule documents to draw candidates from."""
    candidates: int | None = Field(default=None, ge=1)
    """With ``vectorstore``, judge only the top-N similar rules."""
    prefilter: ProxyGate | None = None
    """A cosine threshold fitted on a sample of inputs (:meth:`fit_prefilter`): the rules below it are not judged.
    Its recall guarantee holds for inputs drawn like the sample (:mod:`langchain_tag.judging.proxy_gate`)."""
    _rules: list[Rule] = PrivateAttr(default_factory=list)
    _documents: dict[str, Document] = PrivateAttr(default_factory=dict)
    _rules_of: Any = PrivateAttr(default=None)
    """The ``rules`` value ``_rules`` and ``_documents`` were read from."""
    _last_match: MatchResult | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _check_options(cls, data: Any) -> Any:
        refuse_unknown(cls, data)
        return data

    @field_validator("rules", mode="before")
    @classmethod
    def _coerce_rules(cls, value: Any) -> Any:
        return as_documents(value)

    @model_validator(mode="after")
    def _setup(self) -> Self:
        self._read_rules()
        if self.candidates is not None and self.vectorstore is None:
            raise ValueError("candidates= needs a vectorstore to draw candidates from")
        if not self._rules and self.candidates is None:
            raise ValueError(
                "ApplicabilityRetriever needs rules=, or a vectorstore with candidates=N "
                "(use from_vectorstore to judge every stored rule)"
            )
        self.judge_for(strict=self.strict)  # refuses inconsistent settings now (an override: nothing kept)
        return self

    def _read_rules(self) -> None:
        documents = rule_documents(self.rules)  # already documents: the field's validator made them so
        self._rules = rules_from_documents(documents)
        self._documents = {rule.rule_id: doc for rule, doc in zip(self._rules, documents, strict=True)}
        self._rules_of = self.rules

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
        return cls(llm=llm, rules=stored_documents(vectorstore), **kwargs)

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
            found = self._remember(self.vectorstore.similarity_search(query, k=self.candidates))
            return found if self.prefilter is None else self.prefilter.keep(query, found)
        if self._rules_of is not self.rules:  # a model_copy(update={"rules": ...}) runs no validator
            self._read_rules()
        return self._rules if self.prefilter is None else self.prefilter.keep(query, self._rules)

    def fit_prefilter(
        self, sample: Iterable[str], embeddings: Embeddings, *, target_recall: float = 0.9, delta: float = 0.1
    ) -> ApplicabilityRetriever:
        """A copy that judges only the rules whose cosine with the query passes a threshold fitted on ``sample``.

        Every (input, rule) pair of the sample is judged once (cached in the verdict cache). The guarantee, with
        probability ``>= 1 - delta``: recall ``>= target_recall`` of the judge's YES, **for inputs drawn like the
        sample** (:mod:`langchain_tag.judging.proxy_gate`). Refit when the rules change: a gate fitted on other
        rules refuses to apply.
        """
        unfiltered = self.model_copy(update={"prefilter": None})
        gate = fit_gate(
            sample,
            unfiltered.rules_for(""),
            unfiltered.judge_for().judge,
            embeddings,
            target_recall=target_recall,
            delta=delta,
        )
        return self.model_copy(update={"prefilter": gate})

    async def arules_for(self, query: str) -> list[Rule]:
        """Async twin of :meth:`rules_for`."""
        if self.vectorstore is not None and self.candidates is not None:
            found = self._remember(await self.vectorstore.asimilarity_search(query, k=self.candidates))
            return found if self.prefilter is None else self.prefilter.keep(query, found)
        return self.rules_for(query)

    def _remember(self, found: list[Document]) -> list[Rule]:
        """The rules of documents drawn from the vector store; each document is kept to be returned as found."""
        rules = rules_from_documents(found)
        for rule, doc in zip(rules, found, strict=True):
            self._documents.setdefault(rule.rule_id, doc)
        return rules

    def match(self, query: str, *, callbacks: Callbacks = None) -> MatchResult:
        """Judge every candidate rule and return all judgments, with token counts."""
        return self.judge_for().judge(query, self.rules_for(query), callbacks=callbacks)

    async def amatch(self, query: str, *, callbacks: Callbacks = None) -> MatchResult:
        """Async twin of :meth:`match`."""
        return await self.judge_for().ajudge(query, await self.arules_for(query), callbacks=callbacks)

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
        if k is not None and k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        given = {"threshold": threshold, "max_concurrency": max_concurrency}  # this call's options, where given
        judge = self.judge_for(**{key: value for key, value in given.items() if value is not None})
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
        if k is not None and k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        given = {"threshold": threshold, "max_concurrency": max_concurrency}  # this call's options, where given
        judge = self.judge_for(**{key: value for key, value in given.items() if value is not None})
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
        refuse_unknown(cls, data)
        return data

    @field_validator("rules", mode="before")
    @classmethod
    def _coerce_rules(cls, value: Any) -> Any:
        return as_documents(value)

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
