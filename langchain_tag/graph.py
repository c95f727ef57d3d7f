"""The LangGraph pipeline: (extract ->) retrieve -> execute.

``build_tag_graph`` compiles a ``StateGraph`` whose retrieve node runs one of
five modes, so the method and its baselines run through the same graph:

- ``tag``: pairwise applicability judgments over the rules (the method);
- ``relevance``: the same pairs, asking whether the rule is relevant (ablation);
- ``all_rules``: every rule;
- ``similarity``: Chroma top-k over 500/100-character chunks of the source
  documents (standard RAG), or over the rule documents if no source is given;
- ``none``: no reference material.

The mode is fixed at build time and can be overridden per call with
``{"mode": ...}`` in the input state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from langchain_tag.executors import UnitKind, executor_chain
from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.prompts import ExecutorPrompt
from langchain_tag.retrievers import AllRulesRetriever, ApplicabilityRetriever, RelevanceRetriever
from langchain_tag.similarity import similarity_retriever

__all__ = ["MODES", "Mode", "TagState", "build_tag_graph"]

Mode = Literal["tag", "relevance", "all_rules", "similarity", "none"]
MODES: tuple[str, ...] = get_args(Mode)


class TagState(TypedDict, total=False):
    """State of the TAG graph.

    Attributes:
        input: The task input (required).
        mode: Retrieval mode for this call (defaults to the graph's).
        rules: Rule documents for this call (defaults to the graph's, or those
            the extract node built).
        retrieved: The documents given to the executor.
        unit_kind: ``"rules"``, ``"chunks"`` or ``"none"``.
        output: The executor's reply.
    """

    input: str
    mode: Mode
    rules: list[Document]
    retrieved: list[Document]
    unit_kind: UnitKind
    output: str


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")


class _Pipeline:
    """Holds the graph's models and lazily built stores; its methods are the nodes."""

    def __init__(
        self,
        llm: BaseChatModel,
        *,
        judge_llm: BaseChatModel | None,
        rules: Sequence[Document] | None,
        documents: Sequence[Document] | None,
        mode: str,
        domain: str | ExecutorPrompt,
        extractor: RuleDocumentTransformer | None,
        embeddings: Embeddings | None,
        k: int,
        judge_predicate: str,
        threshold: float,
        max_concurrency: int,
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
        self.executor = executor_chain(llm, domain=domain)
        self._similarity: Any = None

    # -- extract
    def _extractor(self) -> RuleDocumentTransformer:
        if not self.documents:
            raise ValueError("the graph has no rules and no documents to extract them from")
        return self.extractor or RuleDocumentTransformer(self.llm, max_concurrency=self.max_concurrency)

    def extract(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        if state.get("rules") is None and self.rules is None:
            self.rules = list(self._extractor().transform_documents(self.documents))
        return {"rules": state.get("rules") or self.rules or []}

    async def aextract(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        if state.get("rules") is None and self.rules is None:
            self.rules = list(await self._extractor().atransform_documents(self.documents))
        return {"rules": state.get("rules") or self.rules or []}

    # -- retrieve
    def _retriever(self, mode: str, rules: list[Document]) -> tuple[Any, UnitKind]:
        _check_mode(mode)
        if mode in ("tag", "relevance"):
            cls = ApplicabilityRetriever if mode == "tag" else RelevanceRetriever
            kwargs: dict[str, Any] = {"threshold": self.threshold, "max_concurrency": self.max_concurrency}
            if mode == "tag":
                kwargs["predicate"] = self.judge_predicate
            return (cls(llm=self.judge_llm, rules=rules, **kwargs) if rules else None), "rules"
        if mode == "all_rules":
            return AllRulesRetriever(rules=rules), "rules"
        if mode == "similarity":
            if self._similarity is None:
                embeddings = self.embeddings
                if embeddings is None:
                    from langchain_tag.local.models import get_embeddings

                    embeddings = get_embeddings()
                source = self.documents or rules
                self._similarity = (
                    similarity_retriever(source, embeddings, k=self.k, chunk=bool(self.documents)),
                    "chunks" if self.documents else "rules",
                )
            return self._similarity
        return None, "none"

    def _rules(self, state: TagState) -> list[Document]:
        return list(state.get("rules") or self.rules or [])

    def retrieve(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        retriever, kind = self._retriever(state.get("mode") or self.mode, self._rules(state))
        docs = retriever.invoke(state["input"], config) if retriever is not None else []
        return {"retrieved": docs, "unit_kind": kind}

    async def aretrieve(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        retriever, kind = self._retriever(state.get("mode") or self.mode, self._rules(state))
        docs = await retriever.ainvoke(state["input"], config) if retriever is not None else []
        return {"retrieved": docs, "unit_kind": kind}

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
    judge_llm: BaseChatModel | None = None,
    rules: Sequence[Document] | None = None,
    documents: Sequence[Document] | None = None,
    mode: Mode = "tag",
    domain: str | ExecutorPrompt = "generic",
    extractor: RuleDocumentTransformer | None = None,
    embeddings: Embeddings | None = None,
    k: int = 10,
    judge_predicate: str = "applicability",
    threshold: float = 0.5,
    max_concurrency: int = 8,
    checkpointer: Any = None,
) -> CompiledStateGraph:
    """Compile the extract -> retrieve -> execute graph.

    Args:
        llm: Executor model (and extraction model unless ``extractor`` is given).
        judge_llm: Model for the pairwise judgments; defaults to ``llm``.
        rules: Rule documents. When omitted, the extract node builds them once
            from ``documents``.
        documents: Source documents: input to extraction and to the
            similarity mode's chunks.
        mode: Default retrieval mode (see module docstring).
        domain: Executor prompt: ``generic``, ``npov``, ``code``, ``nba`` or an
            :class:`~langchain_tag.prompts.ExecutorPrompt`.
        extractor: A configured :class:`RuleDocumentTransformer`.
        embeddings: Embeddings for the similarity mode (default: the packaged
            local MiniLM).
        k: Top-k of the similarity mode.
        judge_predicate: Judge prompt for the ``tag`` mode (``applicability`` or ``nba``).
        threshold: P(YES) threshold when the judge returns logprobs.
        max_concurrency: Most judgments in flight.
        checkpointer: Optional LangGraph checkpointer.

    Returns:
        A compiled graph; ``graph.invoke({"input": ...})`` returns the state with
        ``output``, ``retrieved`` (what the executor saw) and ``unit_kind``.
    """
    _check_mode(mode)
    if rules is None and not documents:
        raise ValueError("build_tag_graph needs rules= or documents= to extract rules from")
    pipeline = _Pipeline(
        llm,
        judge_llm=judge_llm,
        rules=rules,
        documents=documents,
        mode=mode,
        domain=domain,
        extractor=extractor,
        embeddings=embeddings,
        k=k,
        judge_predicate=judge_predicate,
        threshold=threshold,
        max_concurrency=max_concurrency,
    )
    graph = StateGraph(TagState)
    graph.add_node("retrieve", RunnableLambda(pipeline.retrieve, afunc=pipeline.aretrieve, name="retrieve"))
    graph.add_node("execute", RunnableLambda(pipeline.execute, afunc=pipeline.aexecute, name="execute"))
    if rules is None:
        graph.add_node("extract", RunnableLambda(pipeline.extract, afunc=pipeline.aextract, name="extract"))
        graph.add_edge(START, "extract")
        graph.add_edge("extract", "retrieve")
    else:
        graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "execute")
    graph.add_edge("execute", END)
    return graph.compile(checkpointer=checkpointer)
