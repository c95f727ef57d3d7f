"""The LangGraph pipeline: (extract ->) retrieve -> execute (-> check -> execute ...).

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

Revise, then check (``check_rounds=N``, 1 by default, 0 off): after each execute
round a ``check`` node has the judge decide, for the revision, whether each
rule the executor was given still holds (or each rule, with
``check_all_rules=True``). The rules that still hold are ``remaining``; while
some remain and fewer than ``1 + N`` execute rounds ran, a conditional edge
sends the revision back to ``execute`` with just those rules, else to ``END``.
The check uses the ``tag`` mode's judge (the configured
:class:`~langchain_tag.retrievers.ApplicabilityRetriever`, its settings,
calibration and verdict cache; or one built from ``judge_llm``). It runs in the
``tag`` mode, and in the other modes only when the graph was given a judge
(``retriever=`` an ``ApplicabilityRetriever``, or ``judge_llm=``): a baseline is
never judged by the executor model standing in as a judge. ``relevance`` checks
with the applicability question too. Without ``check_all_rules`` only rule
units are checked, so ``similarity`` over source chunks and ``none`` check
nothing. ``checked`` in the state says which rules the check judged (empty: no
check ran).

To serve the pipeline (``langgraph dev``, LangGraph Platform) with per-run settings, a review interrupt and
progress events, see :mod:`langchain_tag.app`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict, override

from langchain_tag._mode_retrievers import MODES, Mode, check_mode, judged_retriever, make_retriever, unjudged
from langchain_tag._pipeline_steps import PipelineSteps
from langchain_tag.executors import ExecutorPrompt, UnitKind, executor_chain
from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.judging._check_loop import CheckLoop, RevisionJudge
from langchain_tag.judging.chat import ChatRunnable
from langchain_tag.judging.results import MatchResult
from langchain_tag.ranges import CHECK_ROUNDS
from langchain_tag.retrievers import (
    ApplicabilityRetriever,
    verdict_documents,
)
from langchain_tag.rules import Rule, rule_documents

__all__ = ["MODES", "Mode", "TagState", "build_tag_graph", "make_retriever"]


class TagState(TypedDict, total=False):
    """State of the TAG graph.

    Attributes:
        input: The task input (required).
        mode: Retrieval mode for this call (defaults to the graph's); cleared
            once used, so it does not carry over to the next call on a thread.
        rules: Rule documents for this call (defaults to the graph's, or those
            the extract node built).
        retrieved: The documents the retrieve node gave the executor (its first round).
        unit_kind: ``"rules"``, ``"chunks"`` or ``"none"``.
        output: The executor's reply: the revision of its last round.
        rounds: How many execute rounds ran in this call (1 without the check).
        checked: The rule documents the check judges each revision against: the rules of ``retrieved``, or
            every rule with ``check_all_rules``; empty when no check runs (``check_rounds=0``, a mode without
            a judge, or no rules).
        remaining: The rule documents of ``checked`` whose condition still holds for ``output`` (the last
            round's revision), highest score first, with the check's verdict metadata (``tag_score``, ...);
            empty when none does or no check ran.
    """

    input: str
    mode: Mode | None
    rules: list[Document]
    retrieved: list[Document]
    unit_kind: UnitKind
    output: str
    rounds: int
    checked: list[Document]
    remaining: list[Document]


def _check_input(state: TagState) -> None:
    text = state.get("input")
    if not isinstance(text, str) or not text.strip():
        got = "no input" if text is None else f"input {text!r}"
        raise ValueError(f"the TAG graph needs the task input as text: invoke it with {{'input': '...'}} (got {got})")


class _Pipeline(PipelineSteps[TagState]):
    """Holds the graph's models and lazily built stores; its methods (and its steps') are the nodes."""

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
        check_rounds: int = 1,
        check_all_rules: bool = False,
    ) -> None:
        self.llm = llm
        self.template = retriever if isinstance(retriever, ApplicabilityRetriever) else None
        self.retriever = retriever
        self.unit_kind = unit_kind
        self.judge_given = self.template is not None or judge_llm is not None
        self.judge_llm = judge_llm or (None if self.template is not None else llm)
        self.rules = list(rules) if rules is not None else None
        self.documents = list(documents or [])
        self.mode = mode
        self.extractor = extractor
        self.embeddings = embeddings
        self.k = k
        self.executor = executor_chain(llm, executor=executor)
        self.loop = CheckLoop(check_rounds)
        self.check_all_rules = check_all_rules
        self._similarity: tuple[BaseRetriever | None, UnitKind] | None = None
        self._built: dict[str, tuple[BaseRetriever | None, UnitKind]] = {}
        self._checker: ApplicabilityRetriever | None = None

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
        return judged_retriever(mode, rules, self.template, self.judge_llm), "rules"

    def _mode(self, state: TagState, config: RunnableConfig) -> str:
        mode = state.get("mode") or (config.get("configurable") or {}).get("mode") or self.mode
        check_mode(mode)
        return mode

    def _all_rules(self, state: TagState) -> list[Document]:
        given = state.get("rules")
        if given:
            return list(given)
        if self.rules:
            return list(self.rules)
        return rule_documents(self.template.rules) if self.template is not None else []

    def _retrieved(
        self, state: TagState, mode: str, retriever: BaseRetriever | None, kind: UnitKind, docs: list[Document]
    ) -> dict[str, Any]:
        """The retrieve node's update: what the executor gets, and what the check will judge (a new call's loop)."""
        checked: list[Document] = []
        if self.loop.rounds and (self.judge_given or (mode == "tag" and isinstance(retriever, ApplicabilityRetriever))):
            chosen = self._all_rules(state) if self.check_all_rules else (docs if kind == "rules" else [])
            checked = [unjudged(doc) for doc in chosen]
        return {"retrieved": docs, "unit_kind": kind, "mode": None, "rounds": 0, "checked": checked, "remaining": []}

    def retrieve(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        _check_input(state)
        mode = self._mode(state, config)
        retriever, kind = self._retriever(mode, state)
        docs = retriever.invoke(state["input"], config) if retriever is not None else []
        return self._retrieved(state, mode, retriever, kind, docs)

    async def aretrieve(self, state: TagState, config: RunnableConfig) -> dict[str, Any]:
        _check_input(state)
        mode = self._mode(state, config)
        retriever, kind = self._retriever(mode, state)
        docs = await retriever.ainvoke(state["input"], config) if retriever is not None else []
        return self._retrieved(state, mode, retriever, kind, docs)

    # -- the steps' hooks
    @override
    def _executor(self, state: TagState) -> Runnable[dict[str, Any], str]:
        return self.executor

    @override
    def _payload(self, state: TagState) -> dict[str, Any]:
        if state.get("rounds"):  # a later round: the last revision, with the rules it still breaks
            return {"input": state["output"], "documents": state.get("remaining") or [], "unit_kind": "rules"}
        return {"input": state["input"], "documents": state.get("retrieved") or [], "unit_kind": state["unit_kind"]}

    @override
    def _to_check(self, state: TagState) -> list[Rule]:
        return [Rule.from_document(doc) for doc in state.get("checked") or []]

    @override
    def _check_judge(self, state: TagState, rules: Sequence[Rule]) -> RevisionJudge:
        """The ``tag`` mode's judge: the configured retriever's, else that of the one built for the graph's rules."""
        if self.template is not None:
            return self.template.judge
        built = self._built.get("tag")
        if built is not None and isinstance(built[0], ApplicabilityRetriever):
            return built[0].judge
        if self._checker is None:
            self._checker = judged_retriever("tag", state.get("checked") or [], None, self.judge_llm)
        return self._checker.judge

    @override
    def _loop(self, state: TagState) -> CheckLoop:
        return self.loop

    @override
    def _checked(self, state: TagState, rules: Sequence[Rule], result: MatchResult) -> dict[str, Any]:
        by_id = {str(doc.metadata["rule_id"]): doc for doc in state.get("checked") or []}
        return {"remaining": verdict_documents(result, by_id)}


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
    check_rounds: int = 1,
    check_all_rules: bool = False,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the extract -> retrieve -> execute graph, with the revise-then-check loop when asked.

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
        check_rounds: Extra execute rounds the check may ask for: after each round the judge checks the
            revision, and while rules still hold the executor gets them and its revision again, at most this
            many times. ``1`` (the default) gives one more round; ``0`` adds no check node: the graph and its
            calls are then those of extract -> retrieve -> execute. See the module docstring for the modes
            that check.
        check_all_rules: Check each revision against every rule, not only the rules given to the executor.

    Returns:
        A compiled graph; ``graph.invoke({"input": ...})`` returns the state with ``output`` (the last
        revision), ``retrieved`` (what the executor saw in its first round), ``unit_kind``, ``rounds`` (execute
        rounds run), ``checked`` and ``remaining`` (the checked rules that still hold for ``output``).

    Raises:
        ValueError: On an unknown mode, a negative ``check_rounds``, or nothing to take rules from.
    """
    check_mode(mode)
    CHECK_ROUNDS.check(check_rounds)
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
        check_rounds=check_rounds,
        check_all_rules=check_all_rules,
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
    if check_rounds:
        graph.add_node("check", RunnableLambda(pipeline.check, afunc=pipeline.acheck, name="check"))
        graph.add_edge("execute", "check")
        graph.add_conditional_edges("check", pipeline.route, {"execute": "execute", END: END})
    else:
        graph.add_edge("execute", END)
    return graph.compile(checkpointer=checkpointer)
