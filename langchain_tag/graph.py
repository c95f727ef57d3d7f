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

from langchain_tag.executors import ExecutorPrompt, UnitKind, executor_chain
from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.judging.chat import ChatRunnable
from langchain_tag.retrievers import AllRulesRetriever, ApplicabilityRetriever, RelevanceRetriever
from langchain_tag.rules import Rule, rule_documents

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


def _judged(
    mode: str,
    rules: Sequence[Document],
    template: ApplicabilityRetriever | None,
    judge_llm: ChatRunnable | None,
) -> ApplicabilityRetriever:
    """The ``tag`` or ``relevance`` retriever over ``rules``, with the settings of ``template`` when given."""
    settings: dict[str, Any] = {}
    if template is not None:
        settings = {name: getattr(template, name) for name in type(template).model_fields if name != "rules"}
    elif judge_llm is None:
        raise ValueError(f"mode {mode!r} needs a judge model: pass retriever= or judge_llm=")
    else:
        settings["llm"] = judge_llm
    if mode == "relevance":
        settings.pop("reference_inputs", None)
        settings["predicate"] = "relevance"
        return RelevanceRetriever(rules=list(rules), **settings)
    return ApplicabilityRetriever(rules=list(rules), **settings)


def make_retriever(
    mode: str,
    *,
    rules: Sequence[Document | Rule] = (),
    retriever: ApplicabilityRetriever | None = None,
    judge_llm: ChatRunnable | None = None,
    documents: Sequence[Document] = (),
    embeddings: Embeddings | None = None,
    k: int = 10,
) -> tuple[BaseRetriever | None, UnitKind]:
    """The retriever of one mode and the kind of unit it returns: the single place modes are built.

    Args:
        mode: One of :data:`MODES`.
        rules: Rule documents (``tag``, ``relevance``, ``all_rules``; and ``similarity`` when there are no source
            documents, which then embeds each rule's name, condition and action).
        retriever: A configured :class:`ApplicabilityRetriever`: the judged modes take its settings (judge
            model, prompt, calibration, threshold, cache, ...) over ``rules``; ``relevance`` asks its
            relevance question instead.
        judge_llm: The judge, when no ``retriever`` is given (the judged modes then use the defaults).
        documents: Source documents, chunked for ``similarity``.
        embeddings: Embeddings for ``similarity``.
        k: Top-k of ``similarity``.

    Returns:
        ``(retriever, unit_kind)``; the retriever is ``None`` for ``none`` and for a judged mode with no rules.

    Raises:
        ValueError: On an unknown mode, or a mode missing what it needs.
        MissingExtraError: ``similarity`` without the ``chroma`` extra.
    """
    _check_mode(mode)
    docs = rule_documents(rules) if rules else (rule_documents(retriever.rules) if retriever is not None else [])
    if mode in ("tag", "relevance"):
        if not docs:
            if retriever is None and judge_llm is None:
                raise ValueError(f"mode {mode!r} needs a judge model: pass retriever= or judge_llm=")
            return None, "rules"
        return _judged(mode, docs, retriever, judge_llm), "rules"
    if mode == "all_rules":
        return AllRulesRetriever(rules=list(docs)), "rules"
    if mode == "similarity":
        if embeddings is None:
            raise ValueError(
                "the similarity mode needs embeddings=: any LangChain Embeddings "
                "(e.g. langchain_tag.local.get_embeddings() with the local extra, or OpenAIEmbeddings())"
            )

        from langchain_tag.integrations.similarity import similarity_retriever

        source = list(documents) or [_searchable(doc) for doc in docs]
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
        retriever: BaseRetriever | None,
        unit_kind: UnitKind,
        judge_llm: ChatRunnable | None,
        rules: Sequence[Document] | None,
        documents: Sequence[Document] | None,
        mode: str,
        executor: str | ExecutorPrompt,
        extractor: RuleDocumentTransformer | None,
        embeddings: Embeddings | None,
        k: int,
    ) -> None:
        self.llm = llm
        self.template = retriever if isinstance(retriever, ApplicabilityRetriever) else None
        self.retriever = retriever
        self.unit_kind = unit_kind
        self.judge_llm = judge_llm or (None if self.template is not None else llm)
        self.rules = list(rules) if rules is not None else None
        self.documents = list(documents or [])
        self.mode = mode
        self.extractor = extractor
        self.embeddings = embeddings
        self.k = k
        self.executor = executor_chain(llm, executor=executor)
        self._similarity: tuple[BaseRetriever | None, UnitKind] | None = None
        self._built: dict[str, tuple[BaseRetriever | None, UnitKind]] = {}

    # -- extract
    def _extractor(self) -> RuleDocumentTransformer:
        if not self.documents:
            raise ValueError("the graph has no rules and no documents to extract them from")
        return self.extractor or RuleDocumentTransformer(self.llm)

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
        given = state.get("rules")
        own = given is None or given is self.rules or given == self.rules
        if self.retriever is not None and mode == self.mode and (own or self.template is None):
            return self.retriever, self.unit_kind
        rules = list(self.rules or []) if own else list(given or [])
        if mode == "similarity":
            if self._similarity is None:
                self._similarity = make_retriever(
                    mode, rules=rules, documents=self.documents, embeddings=self.embeddings, k=self.k
                )
            return self._similarity
        if own and mode in self._built:
            return self._built[mode]
        built = self._make(mode, rules)
        if own:
            self._built[mode] = built
        return built

    def _make(self, mode: str, rules: Sequence[Document]) -> tuple[BaseRetriever | None, UnitKind]:
        if mode not in ("tag", "relevance"):
            return make_retriever(mode, rules=rules)
        if not rules:
            return None, "rules"
        return _judged(mode, rules, self.template, self.judge_llm), "rules"

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
    retriever: BaseRetriever | None = None,
    judge_llm: ChatRunnable | None = None,
    rules: Sequence[Document | Rule] | None = None,
    documents: Sequence[Document] | None = None,
    mode: Mode = "tag",
    executor: str | ExecutorPrompt = "generic",
    extractor: RuleDocumentTransformer | None = None,
    embeddings: Embeddings | None = None,
    k: int = 10,
    checkpointer: Any = None,
    unit_kind: UnitKind = "rules",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the extract -> retrieve -> execute graph.

    Args:
        llm: Executor model (and extraction model unless ``extractor`` is given).
        retriever: A configured retriever. An :class:`ApplicabilityRetriever` is the judge of the ``tag`` mode
            and gives its settings to ``relevance`` (its rules are the graph's when ``rules`` is not given); any
            other retriever serves the graph's own ``mode`` (say what it returns with ``unit_kind``).
        judge_llm: The judge when no ``ApplicabilityRetriever`` is given (defaults to ``llm``).
        rules: Rule documents or :class:`~langchain_tag.rules.Rule` objects. When neither they nor a retriever
            are given, the extract node builds them once from ``documents``.
        documents: Source documents: input to extraction and to the similarity mode's chunks.
        mode: Default retrieval mode (see module docstring).
        executor: Executor prompt: a key of :data:`~langchain_tag.executors.EXECUTOR_PROMPTS` (``"generic"``,
            ``"code_review"``) or an :class:`~langchain_tag.executors.ExecutorPrompt`.
        extractor: A configured :class:`RuleDocumentTransformer`.
        embeddings: Embeddings for the similarity mode (needed only by it).
        k: Top-k of the similarity mode.
        checkpointer: Optional LangGraph checkpointer.
        unit_kind: What a retriever other than an ``ApplicabilityRetriever`` returns: ``"rules"`` or ``"chunks"``.

    Returns:
        A compiled graph; ``graph.invoke({"input": ...})`` returns the state with ``output``, ``retrieved`` (what
        the executor saw) and ``unit_kind``.
    """
    _check_mode(mode)
    if rules is None and isinstance(retriever, ApplicabilityRetriever):
        rules = rule_documents(retriever.rules)
    if rules is None and not documents and retriever is None:
        raise ValueError("build_tag_graph needs rules= or documents= to extract rules from")
    pipeline = _Pipeline(
        llm,
        retriever=retriever,
        unit_kind="rules" if isinstance(retriever, ApplicabilityRetriever) else unit_kind,
        judge_llm=judge_llm,
        rules=None if rules is None else rule_documents(rules),
        documents=documents,
        mode=mode,
        executor=executor,
        extractor=extractor,
        embeddings=embeddings,
        k=k,
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
