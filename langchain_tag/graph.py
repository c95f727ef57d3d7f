"""The LangGraph pipeline: (extract ->) retrieve -> execute.

``build_tag_graph`` compiles a ``StateGraph`` whose retrieve node runs one of
five modes, so the method and its baselines run through the same graph:

- ``tag``: pairwise applicability judgments over the rules (the method);
- ``relevance``: the same pairs, asking whether the rule is relevant (ablation);
- ``all_rules``: every rule;
- ``similarity``: Chroma top-k over 500/100-character chunks of the source
  documents (standard RAG), or over the rule documents if no source is given;
- ``none``: no reference material.

The mode is fixed at build time and can be overridden per call, with
``config={"configurable": {"mode": ...}}`` or ``{"mode": ...}`` in the input
state; either applies to that call only, also on a checkpointed thread.
Judge runs are tagged ``tag_judge`` and ``nostream``, so their YES/NO tokens
stay out of ``stream_mode="messages"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from langchain_tag.executors import UnitKind, executor_chain
from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.matcher import ChatRunnable
from langchain_tag.prompts import ExecutorPrompt, JudgePrompt
from langchain_tag.retrievers import AllRulesRetriever, ApplicabilityRetriever, RelevanceRetriever
from langchain_tag.rules import Rule, rule_documents
from langchain_tag.verdict_cache import VerdictCache

__all__ = ["MODES", "Mode", "TagState", "build_tag_graph", "make_retriever"]

Mode = Literal["tag", "relevance", "all_rules", "similarity", "none"]
MODES: tuple[str, ...] = get_args(Mode)


class TagState(TypedDict, total=False):
    """State of the TAG graph.

    Attributes:
        input: The task input (required).
        mode: Retrieval mode for this call (defaults to the graph's); cleared
            once used, so it does not carry over to the next call on a thread.
        rules: Rule documents for this call (defaults to the graph's, or those
            the extract node built).
        retrieved: The documents given to the executor.
        unit_kind: ``"rules"``, ``"chunks"`` or ``"none"``.
        output: The executor's reply.
    """

    input: str
    mode: Mode | None
    rules: list[Document]
    retrieved: list[Document]
    unit_kind: UnitKind
    output: str


def _check_input(state: TagState) -> None:
    text = state.get("input")
    if not isinstance(text, str) or not text.strip():
        got = "no input" if text is None else f"input {text!r}"
        raise ValueError(f"the TAG graph needs the task input as text: invoke it with {{'input': '...'}} (got {got})")


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")


def _searchable(doc: Document) -> Document:
    """A rule document whose ``page_content`` is the rule's name, condition and action, for a similarity index."""
    text = Rule.from_document(doc).search_text()
    return Document(page_content=text, metadata=dict(doc.metadata), id=doc.id)


def make_retriever(
    mode: str,
    *,
    rules: Sequence[Document | Rule] = (),
    judge_llm: ChatRunnable | None = None,
    documents: Sequence[Document] = (),
    embeddings: Embeddings | None = None,
    k: int = 10,
    predicate: str | JudgePrompt = "applicability",
    threshold: float | None = None,
    max_concurrency: int = 8,
    strict: bool = False,
    reference_inputs: Sequence[str] | None = None,
    cache: VerdictCache | Literal["default"] | None = "default",
) -> tuple[BaseRetriever | None, UnitKind]:
    """The retriever of one mode and the kind of unit it returns: the single place modes are built.

    Args:
        mode: One of :data:`MODES`.
        rules: Rule documents (``tag``, ``relevance``, ``all_rules``; and
            ``similarity`` when there are no source documents, which then
            embeds each rule's name, condition and action).
        judge_llm: The judge (``tag`` and ``relevance``).
        documents: Source documents, chunked for ``similarity``.
        embeddings: Embeddings for ``similarity``.
        k: Top-k of ``similarity``.
        predicate: Judge prompt of the ``tag`` mode.
        threshold: Calibrated-score threshold of the judged modes (None: the calibration's, else 0.5).
        max_concurrency: Most judgments in flight.
        strict: Judged modes raise :class:`~langchain_tag.errors.JudgmentsFailedError`
            when a judgment failed, instead of counting it as NO.
        reference_inputs: The ``tag`` mode's sample of your own unlabelled
            inputs (see :class:`ApplicabilityRetriever`).
        cache: The judged modes' verdict cache (for example a
            :class:`~langchain_tag.verdict_cache.SQLiteVerdictCache` kept across
            runs); ``"default"``: each retriever's own in-memory cache; ``None``: none.

    Returns:
        ``(retriever, unit_kind)``; the retriever is ``None`` for ``none`` and
        for a judged mode with no rules.

    Raises:
        ValueError: On an unknown mode, or a mode missing what it needs.
        MissingExtraError: ``similarity`` without the ``chroma`` extra.
    """
    _check_mode(mode)
    rules = rule_documents(rules)
    if mode in ("tag", "relevance"):
        if judge_llm is None:
            raise ValueError(f"mode {mode!r} needs a judge model")
        if not rules:
            return None, "rules"
        cls = ApplicabilityRetriever if mode == "tag" else RelevanceRetriever
        kwargs: dict[str, Any] = {"threshold": threshold, "max_concurrency": max_concurrency, "strict": strict}
        if cache != "default":
            kwargs["cache"] = cache
        if mode == "tag":
            kwargs["predicate"] = predicate
            kwargs["reference_inputs"] = reference_inputs
        return cls(llm=judge_llm, rules=list(rules), **kwargs), "rules"
    if mode == "all_rules":
        return AllRulesRetriever(rules=list(rules)), "rules"
    if mode == "similarity":
        if embeddings is None:
            raise ValueError(
                "the similarity mode needs embeddings=: any LangChain Embeddings "
                "(e.g. langchain_tag.local.get_embeddings() with the local extra, or OpenAIEmbeddings())"
            )

        from langchain_tag.similarity import similarity_retriever

        source = list(documents) or [_searchable(doc) for doc in rules]
        return similarity_retriever(source, embeddings, k=k, chunk=bool(documents)), (
            "chunks" if documents else "rules"
        )
    return None, "none"


class _Pipeline:
    """Holds the graph's models and lazily built stores; its methods are the nodes."""

    def __init__(
        self,
        llm: BaseChatModel,
        *,
        judge_llm: ChatRunnable | None,
        rules: Sequence[Document] | None,
        documents: Sequence[Document] | None,
        mode: str,
        domain: str | ExecutorPrompt,
        extractor: RuleDocumentTransformer | None,
        embeddings: Embeddings | None,
        k: int,
        judge_predicate: str | JudgePrompt,
        threshold: float | None,
        max_concurrency: int,
        retriever: BaseRetriever | None = None,
        unit_kind: UnitKind = "rules",
        strict: bool = False,
        reference_inputs: Sequence[str] | None = None,
        cache: VerdictCache | Literal["default"] | None = "default",
    ) -> None:
        self.llm = llm
        self.judge_llm = judge_llm or llm
        self.rules = list(rules) if rules is not None else None
        self.documents = list(documents or [])
        self.mode = mode
        self.extractor = extractor
        self.embeddings = embeddings
        self.k = k
        self.judge_predicate = judge_predicate
        self.threshold = threshold
        self.max_concurrency = max_concurrency
        self.retriever = retriever
        self.unit_kind = unit_kind
        self.strict = strict
        self.reference_inputs = reference_inputs
        self.cache = cache
        self.executor = executor_chain(llm, domain=domain)
        self._similarity: Any = None
        self._built: dict[str, tuple[BaseRetriever | None, UnitKind]] = {}

    # -- extract
    def _extractor(self) -> RuleDocumentTransformer:
        if not self.documents:
            raise ValueError("the graph has no rules and no documents to extract them from")
        return self.extractor or RuleDocumentTransformer(self.llm, max_concurrency=self.max_concurrency)

    def extract(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        _check_input(state)
        if state.get("rules") is None and self.rules is None:
            self.rules = list(self._extractor().transform_documents(self.documents))
        return {"rules": state.get("rules") or self.rules or []}

    async def aextract(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        _check_input(state)
        if state.get("rules") is None and self.rules is None:
            self.rules = list(await self._extractor().atransform_documents(self.documents))
        return {"rules": state.get("rules") or self.rules or []}

    # -- retrieve
    def _retriever(self, mode: str, state: TagState) -> tuple[BaseRetriever | None, UnitKind]:
        """The retriever of ``mode``: built once for the graph's rules (so its verdict cache serves every call)."""
        if self.retriever is not None and mode == self.mode:
            return self.retriever, self.unit_kind
        given = state.get("rules")
        own = given is None or given is self.rules or given == self.rules
        rules = list(self.rules or []) if own else list(given or [])
        if mode == "similarity":
            if self._similarity is None:
                self._similarity = make_retriever(
                    mode, rules=rules, documents=self.documents, embeddings=self.embeddings, k=self.k
                )
            return self._similarity
        if own and mode in self._built:
            return self._built[mode]
        built = make_retriever(
            mode,
            rules=rules,
            judge_llm=self.judge_llm,
            predicate=self.judge_predicate,
            threshold=self.threshold,
            max_concurrency=self.max_concurrency,
            strict=self.strict,
            reference_inputs=self.reference_inputs,
            cache=self.cache,
        )
        if own:
            self._built[mode] = built
        return built

    def _mode(self, state: TagState, config: RunnableConfig) -> str:
        mode = state.get("mode") or (config.get("configurable") or {}).get("mode") or self.mode
        _check_mode(mode)
        return mode

    def retrieve(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        _check_input(state)
        retriever, kind = self._retriever(self._mode(state, config), state)
        docs = retriever.invoke(state["input"], config) if retriever is not None else []
        return {"retrieved": docs, "unit_kind": kind, "mode": None}

    async def aretrieve(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        _check_input(state)
        retriever, kind = self._retriever(self._mode(state, config), state)
        docs = await retriever.ainvoke(state["input"], config) if retriever is not None else []
        return {"retrieved": docs, "unit_kind": kind, "mode": None}

    # -- execute
    def _payload(self, state: TagState) -> dict[str, Any]:
        return {"input": state["input"], "documents": state.get("retrieved") or [], "unit_kind": state["unit_kind"]}

    def execute(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        return {"output": self.executor.invoke(self._payload(state), config)}

    async def aexecute(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        return {"output": await self.executor.ainvoke(self._payload(state), config)}


def build_tag_graph(
    llm: BaseChatModel,
    *,
    judge_llm: ChatRunnable | None = None,
    rules: Sequence[Document | Rule] | None = None,
    documents: Sequence[Document] | None = None,
    mode: Mode = "tag",
    domain: str | ExecutorPrompt = "generic",
    extractor: RuleDocumentTransformer | None = None,
    embeddings: Embeddings | None = None,
    k: int = 10,
    judge_predicate: str | JudgePrompt = "applicability",
    threshold: float | None = None,
    max_concurrency: int = 8,
    checkpointer: Any = None,
    retriever: BaseRetriever | None = None,
    unit_kind: UnitKind = "rules",
    strict: bool = False,
    reference_inputs: Sequence[str] | None = None,
    cache: VerdictCache | Literal["default"] | None = "default",
) -> CompiledStateGraph:
    """Compile the extract -> retrieve -> execute graph.

    Args:
        llm: Executor model (and extraction model unless ``extractor`` is given).
        judge_llm: Model for the pairwise judgments; defaults to ``llm``.
        rules: Rule documents or :class:`~langchain_tag.rules.Rule` objects.
            When omitted, the extract node builds them once from ``documents``.
        documents: Source documents: input to extraction and to the
            similarity mode's chunks.
        mode: Default retrieval mode (see module docstring).
        domain: Executor prompt: ``generic``, ``npov``, ``code``, ``nba`` or an
            :class:`~langchain_tag.prompts.ExecutorPrompt`.
        extractor: A configured :class:`RuleDocumentTransformer`.
        embeddings: Embeddings for the similarity mode (needed only by it).
        k: Top-k of the similarity mode.
        judge_predicate: Judge prompt for the ``tag`` mode (``applicability`` or ``nba``).
        threshold: Calibrated-score threshold when the judge returns logprobs (None: the calibration's, else 0.5).
        max_concurrency: Most judgments in flight.
        checkpointer: Optional LangGraph checkpointer.
        retriever: A retriever to use for the graph's own ``mode`` instead of
            the one the mode builds (for example a configured
            :class:`ApplicabilityRetriever`, reused across calls so its
            verdict cache applies); other modes per call still work.
        unit_kind: What ``retriever`` returns: ``"rules"`` or ``"chunks"``.
        strict: The judged modes raise
            :class:`~langchain_tag.errors.JudgmentsFailedError` when a
            judgment failed (the graph run fails) instead of counting it as
            NO; does not apply to a ``retriever`` you pass (set it there).
        reference_inputs: A sample of your own unlabelled inputs for the
            ``tag`` mode's calibration (see :class:`ApplicabilityRetriever`);
            does not apply to a ``retriever`` you pass (set it there).
        cache: The judged modes' verdict cache (see :func:`make_retriever`);
            does not apply to a ``retriever`` you pass (set it there).

    Returns:
        A compiled graph; ``graph.invoke({"input": ...})`` returns the state with
        ``output``, ``retrieved`` (what the executor saw) and ``unit_kind``.
    """
    _check_mode(mode)
    if rules is None and not documents and retriever is None:
        raise ValueError("build_tag_graph needs rules= or documents= to extract rules from")
    pipeline = _Pipeline(
        llm,
        judge_llm=judge_llm,
        rules=None if rules is None else rule_documents(rules),
        documents=documents,
        mode=mode,
        domain=domain,
        extractor=extractor,
        embeddings=embeddings,
        k=k,
        judge_predicate=judge_predicate,
        threshold=threshold,
        max_concurrency=max_concurrency,
        retriever=retriever,
        unit_kind=unit_kind,
        strict=strict,
        reference_inputs=reference_inputs,
        cache=cache,
    )
    graph = StateGraph(TagState)
    graph.add_node("retrieve", RunnableLambda(pipeline.retrieve, afunc=pipeline.aretrieve, name="retrieve"))
    graph.add_node("execute", RunnableLambda(pipeline.execute, afunc=pipeline.aexecute, name="execute"))
    if rules is None and retriever is None:
        graph.add_node("extract", RunnableLambda(pipeline.extract, afunc=pipeline.aextract, name="extract"))
        graph.add_edge(START, "extract")
        graph.add_edge("extract", "retrieve")
    else:
        graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "execute")
    graph.add_edge("execute", END)
    return graph.compile(checkpointer=checkpointer)
