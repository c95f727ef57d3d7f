"""Run a benchmark task over methods: select units, run the executor, score, record.

Every method runs through the library as a user runs it. The core modes
(``none``, ``all_rules``, ``similarity``, ``tag``, ``relevance``) get their
retriever from :func:`langchain_tag.graph.make_retriever`; the benchmark-only
rows (``rules_similarity@K``, ``chunks_applicability``, ``tag-no-pN`` over
another rule set) build their own. The executor is the LangGraph pipeline of
:func:`langchain_tag.graph.build_tag_graph`, given that retriever, so what is
measured is the retrieve -> execute graph a user invokes. For the judged
methods :meth:`~langchain_tag.retrievers.ApplicabilityRetriever.match` runs
first, to record every judgment with its P(YES) and tokens; the graph then
retrieves through the same retriever, whose verdict cache answers, so no pair
is judged twice.

Each record is appended to the run's JSONL
(:class:`~langchain_tag_bench.runlog.RunLog`). Items already recorded for a
method are skipped, so a crashed run resumes where it stopped. With
``retrieval_only`` the executor is not run: each record holds the selected
rule ids scored against the item's gold ids.

Record fields: ``method``, ``key``, ``group``, ``input``, ``units`` (ids
given to the executor), ``n_units``, ``retrieval`` (judge calls, tokens,
failed ids, P(YES) per rule, seconds), ``retrieval_scores`` (recall,
precision, F1 against gold, when the item has gold ids), ``output``,
``scores``, ``executor_tokens`` and ``seconds``.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import LLMResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from langchain_tag.executors import UnitKind
from langchain_tag.judging.results import MatchResult
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag_bench.methods import Method
from langchain_tag_bench.metrics import score_retrieval
from langchain_tag_bench.prompts import BENCH_JUDGE_PROMPTS
from langchain_tag_bench.runlog import RunLog
from langchain_tag_bench.task import BenchItem, BenchTask

__all__ = ["BenchRun", "chunk_rules", "run_benchmark"]

logger = logging.getLogger(__name__)

ITEMS_FILE = "items.jsonl"
"""Name of the per-item record file inside a run's output directory."""


def chunk_rules(chunks: Sequence[Document]) -> list[Rule]:
    """Chunks dressed as rules, so the pairwise judge can judge them (the chunks + applicability cell).

    The chunk text is the condition; the ``passage`` judge prompt shows it as
    a passage of guidance and asks whether the input is a case it governs.
    """
    return [
        Rule(
            rule_id=str(chunk.metadata["chunk_id"]),
            rule_name=f"passage {chunk.metadata['chunk_id']}",
            condition=chunk.page_content,
            action=chunk.page_content,
            source_text=chunk.page_content,
            document_id=str(chunk.metadata.get("source") or chunk.metadata.get("document_id") or ""),
        )
        for chunk in chunks
    ]


@dataclass
class BenchRun:
    """The outcome of :func:`run_benchmark`.

    Attributes:
        task: The task that ran.
        methods: The methods, in table order.
        log: Every record of the run directory (earlier runs' included).
        out_dir: Where the records were written.
        retrieval_only: Whether the executor was skipped.
        new_items: Records written by this call.
        seconds: Wall time of this call.
    """

    task: BenchTask
    methods: list[Method]
    log: RunLog
    out_dir: Path
    retrieval_only: bool
    new_items: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def records(self, method: Method) -> list[dict[str, Any]]:
        """Records of ``method`` for the task's current items, in item order."""
        keys = {item.key for item in self.task.items}
        return [r for r in self.log.records(method.name) if r["key"] in keys]


_GRAPH_MODES = {
    "none": "none",
    "all": "all_rules",
    "similarity": "similarity",
    "applicability": "tag",
    "relevance": "relevance",
}
"""The graph mode a method runs under (its retriever is passed to the graph for that mode)."""


class _SearchTextRetriever(BaseRetriever):
    """A similarity retriever that searches with an item's ``search_text`` (benchmark only).

    The graph retrieves with the item's text, which the judge and the
    executor see; a task may ask similarity search to use other text
    (NBA ``--query``), looked up here by the text.
    """

    inner: BaseRetriever
    queries: dict[str, str]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self.inner.invoke(self.queries.get(query, query), {"callbacks": run_manager.get_child()})


class _ChunkJudgeRetriever(BaseRetriever):
    """The chunks + applicability cell: chunks judged pairwise as passages, returned as chunks (benchmark only)."""

    judge: ApplicabilityRetriever
    chunks: dict[str, Document]

    def match(self, query: str) -> MatchResult:
        return self.judge.match(query)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        found = self.judge.invoke(query, {"callbacks": run_manager.get_child()})
        return [self.chunks[str(doc.metadata["rule_id"])] for doc in found]


class _NodeUsage(BaseCallbackHandler):
    """Token usage and calls of the chat models the graph ran, per graph node."""

    def __init__(self) -> None:
        self._node: dict[UUID, str] = {}
        self.calls: dict[str, int] = {}
        self.tokens: dict[str, dict[str, int]] = {}

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: Any,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **_: Any,
    ) -> None:
        node = str((metadata or {}).get("langgraph_node") or "")
        self._node[run_id] = node
        self.calls[node] = self.calls.get(node, 0) + 1

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **_: Any) -> None:
        node = self._node.pop(run_id, "")
        tokens = self.tokens.setdefault(node, {"prompt_tokens": 0, "completion_tokens": 0})
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
                tokens["prompt_tokens"] += int(usage.get("input_tokens", 0))
                tokens["completion_tokens"] += int(usage.get("output_tokens", 0))

    def node_tokens(self, node: str) -> dict[str, int]:
        return dict(self.tokens.get(node) or {"prompt_tokens": 0, "completion_tokens": 0})


class _Selector:
    """Builds each method's retriever and graph once; selects and executes per item."""

    def __init__(
        self,
        task: BenchTask,
        *,
        judge_llm: BaseChatModel | None,
        embeddings: Embeddings | Callable[[], Embeddings] | None,
        threshold: float | None,
        max_concurrency: int,
        depth: int = 1,
    ) -> None:
        self.task = task
        self.depth = depth
        self.judge_llm = judge_llm
        self._embeddings = embeddings
        self.threshold = threshold
        self.max_concurrency = max_concurrency
        self._rules: dict[int | None, list[Rule]] = {}
        self._stores: dict[str, tuple[VectorStore, int]] = {}
        self._chunks: list[Document] | None = None
        self._retrievers: dict[str, tuple[BaseRetriever | None, UnitKind]] = {}
        self._graphs: dict[str, Any] = {}

    def embeddings(self) -> Embeddings:
        if self._embeddings is None:
            from langchain_tag.local.models import get_embeddings

            self._embeddings = get_embeddings()
        elif not isinstance(self._embeddings, Embeddings):
            self._embeddings = self._embeddings()
        return self._embeddings

    def rules(self, skip_phase: int | None = None) -> list[Rule]:
        if skip_phase not in self._rules:
            rules = list(self.task.load_rules(skip_phase))
            if not rules:
                what = "the rule set" if skip_phase is None else f"the rule set without phase {skip_phase}"
                raise ValueError(f"{self.task.name}: {what} is empty")
            self._rules[skip_phase] = rules
        return self._rules[skip_phase]

    def rule_documents(self, skip_phase: int | None = None) -> list[Document]:
        return [rule.to_document() for rule in self.rules(skip_phase)]

    def chunks(self) -> list[Document]:
        if self._chunks is None:
            from langchain_tag.integrations.similarity import chunk_documents

            if not self.task.sources:
                raise ValueError(f"{self.task.name}: chunk methods need source documents, and the task has none")
            self._chunks = chunk_documents(self.task.sources)
        return self._chunks

    def _store(self, units: str) -> tuple[VectorStore, int]:
        """The similarity store of a unit kind, built once for every k, and the number of units in it."""
        if units not in self._stores:
            from langchain_tag.graph import make_retriever
            from langchain_tag.integrations.similarity import in_memory_chroma

            if units == "chunks":
                # The core's similarity mode: 500/100-character chunks of the sources.
                n = len(self.chunks())
                built, _ = make_retriever(
                    "similarity", documents=self.task.sources, embeddings=self.embeddings(), k=self.depth
                )
                store = built.vectorstore  # type: ignore[union-attr]
            else:
                # Benchmark only: top-k over the rule set (the text embedded per rule is the task's choice).
                docs = self.rule_documents()
                if self.task.rule_text == "condition":
                    docs = [
                        Document(page_content=r.condition, metadata=d.metadata)
                        for r, d in zip(self.rules(), docs, strict=True)
                    ]
                n = len(docs)
                store = in_memory_chroma(docs, self.embeddings())
            self._stores[units] = (store, n)
        return self._stores[units]

    def _build(self, method: Method) -> tuple[BaseRetriever | None, UnitKind]:
        from langchain_tag.graph import make_retriever

        if method.selection == "none":
            return make_retriever("none")
        if method.selection == "all":
            return make_retriever("all_rules", rules=self.rule_documents(method.skip_phase))
        if method.selection == "similarity":
            store, n = self._store(method.units)
            retriever: BaseRetriever = store.as_retriever(search_kwargs={"k": min(method.k or 1, n)})
            queries = {i.text: i.search_text for i in self.task.items if i.search_text and i.search_text != i.text}
            if queries:
                retriever = _SearchTextRetriever(inner=retriever, queries=queries)
            return retriever, method.units
        judge_llm = self.judge_llm
        if judge_llm is None:
            raise ValueError(f"method {method.name} needs a judge model")
        if method.units == "chunks":
            chunks = self.chunks()
            judge = ApplicabilityRetriever(
                llm=judge_llm,
                rules=[r.to_document() for r in chunk_rules(chunks)],
                predicate=BENCH_JUDGE_PROMPTS["passage"],
                threshold=self.threshold,
                max_concurrency=self.max_concurrency,
            )
            by_id = {str(c.metadata["chunk_id"]): c for c in chunks}
            return _ChunkJudgeRetriever(judge=judge, chunks=by_id), "chunks"
        # TAG, the relevance reranker and TAG over a phase-ablated rule set: the core's judged modes.
        mode = "relevance" if method.selection == "relevance" else "tag"
        rules = self.rule_documents(method.skip_phase)
        if not rules:
            return make_retriever(mode, judge_llm=judge_llm)
        configured = ApplicabilityRetriever(
            llm=judge_llm,
            rules=rules,
            predicate=self.task.judge_predicate,
            threshold=self.threshold,
            max_concurrency=self.max_concurrency,
        )
        return make_retriever(mode, retriever=configured)

    def retriever(self, method: Method) -> tuple[BaseRetriever | None, UnitKind]:
        if method.name not in self._retrievers:
            self._retrievers[method.name] = self._build(method)
        return self._retrievers[method.name]

    def graph(self, method: Method, llm: BaseChatModel) -> Any:
        if method.name not in self._graphs:
            from langchain_tag.graph import build_tag_graph

            retriever, unit_kind = self.retriever(method)
            assert self.task.executor_domain is not None
            self._graphs[method.name] = build_tag_graph(
                llm,
                rules=[],
                retriever=retriever,
                unit_kind=unit_kind,
                mode=_GRAPH_MODES[method.selection],  # type: ignore[arg-type]
                executor=self.task.executor_domain,
                check_rounds=0,  # the paper's extract -> retrieve -> execute, as every recorded run measured it
            )
        return self._graphs[method.name]

    def judge(self, method: Method, item: BenchItem) -> dict[str, Any]:
        """Record every judgment of a judged method; the graph's retrieval then reads them from the verdict cache."""
        retriever, _ = self.retriever(method)
        start = time.perf_counter()
        result = retriever.match(item.text)  # type: ignore[union-attr]
        return {
            "calls": result.calls,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "failed": [j.rule_id for j in result.failed],
            "p_yes": {j.rule_id: j.p_yes for j in result.judgments},
            "matched": [j.rule_id for j in result.matched],
            "seconds": round(time.perf_counter() - start, 3),
        }

    def retrieve(self, method: Method, item: BenchItem) -> tuple[list[str], dict[str, Any]]:
        """Retrieval only: the unit ids a method selects and what selecting them cost."""
        if method.judged:
            info = self.judge(method, item)
            return info.pop("matched"), info
        retriever, _ = self.retriever(method)
        start = time.perf_counter()
        docs = retriever.invoke(item.text) if retriever is not None else []
        return [_unit_id(d) for d in docs], {"seconds": round(time.perf_counter() - start, 3)}

    def run(
        self, method: Method, item: BenchItem, llm: BaseChatModel
    ) -> tuple[list[str], dict[str, Any], str, dict[str, int]]:
        """Judge (judged methods), then run the graph: units given to the executor, retrieval info, output, tokens."""
        info = self.judge(method, item) if method.judged else {}
        info.pop("matched", None)
        usage = _NodeUsage()
        state: dict[str, Any] = {}
        finished: dict[str, float] = {}
        start = time.perf_counter()
        for update in self.graph(method, llm).stream(
            {"input": item.text}, {"callbacks": [usage]}, stream_mode="updates"
        ):
            for node, values in update.items():
                finished[node] = time.perf_counter()
                state.update(values or {})
        if not method.judged:
            info["seconds"] = round(finished.get("retrieve", start) - start, 3)
        elif usage.calls.get("retrieve"):
            # Pairs the verdict cache could not answer (failed judgments are not cached) were judged again.
            info["graph_judge_calls"] = usage.calls["retrieve"]
        units = [_unit_id(d) for d in state.get("retrieved") or []]
        return units, info, str(state.get("output", "")), usage.node_tokens("execute")


def _unit_id(doc: Document) -> str:
    return str(doc.metadata.get("rule_id") or doc.metadata.get("chunk_id") or "")


def _progress(total: int, done: int, desc: str, show: bool | None) -> Any:
    from tqdm.auto import tqdm

    disable = (not sys.stderr.isatty()) if show is None else not show
    return tqdm(total=total, initial=done, desc=desc, unit="item", disable=disable, leave=True)


def run_benchmark(
    task: BenchTask,
    methods: Sequence[Method],
    out_dir: str | Path,
    *,
    llm: BaseChatModel | None = None,
    judge_llm: BaseChatModel | None = None,
    embeddings: Embeddings | Callable[[], Embeddings] | None = None,
    retrieval_only: bool = False,
    threshold: float | None = None,
    max_concurrency: int = 2,
    show_progress: bool | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> BenchRun:
    """Run ``methods`` over the task's items, appending one record per (method, item).

    Args:
        task: The benchmark domain (see :mod:`langchain_tag_bench.tasks`).
        methods: Rows to run (see :func:`~langchain_tag_bench.methods.parse_methods`).
        out_dir: Run directory; records go to ``items.jsonl`` there, and an
            existing file is resumed.
        llm: The executor (not needed with ``retrieval_only``).
        judge_llm: The pairwise judge (needed by judged methods).
        embeddings: Embeddings (or a factory) for the similarity methods;
            default: the packaged local embeddings.
        retrieval_only: Skip the executor and score selected rule ids
            against the items' gold ids; methods that cannot be scored that
            way are mapped (``similarity@K`` to ``rules_similarity@K``) or
            left out (``none``, ``chunks_applicability``).
        threshold: Calibrated score needed for a YES (None: the calibration's threshold, else 0.5).
        max_concurrency: Judgments in flight at once.
        show_progress: Progress bars (default: when stderr is a terminal).
        on_record: Called with each new record.

    Returns:
        The run, with every record of ``out_dir`` for the table.

    Raises:
        ValueError: When a needed model or rule set is missing, or a
            retrieval-only run is asked of a task without gold rule ids.
    """
    start = time.perf_counter()
    notes: list[str] = []
    if retrieval_only:
        if not task.has_gold_rules:
            raise ValueError(f"{task.name} has no gold rule ids, so retrieval cannot be scored on its own")
        mapped: dict[str, Method] = {}
        renamed: list[str] = []
        for method in methods:
            scored = method.for_retrieval_only()
            if scored is None:
                notes.append(f"{method.name}: left out of the retrieval-only run (no rule ids to score)")
            else:
                if scored is not method:
                    renamed.append(method.name)
                mapped.setdefault(scored.name, scored)
        if renamed:
            notes.append(f"{', '.join(renamed)}: scored as rules + similarity (top-k over the rule set, not chunks)")
        methods = list(mapped.values())
    else:
        if task.executor_domain is None or task.score is None:
            raise ValueError(f"{task.name} is a retrieval-only benchmark; pass retrieval_only=True (--retrieval-only)")
        if llm is None:
            raise ValueError("an executor model is needed unless the run is retrieval-only")
    if any(m.judged for m in methods) and judge_llm is None:
        raise ValueError(
            "a judge model is needed for the judged methods: " + ", ".join(m.name for m in methods if m.judged)
        )

    out = Path(out_dir)
    log = RunLog(out / ITEMS_FILE)
    selector = _Selector(
        task,
        judge_llm=judge_llm,
        embeddings=embeddings,
        threshold=threshold,
        max_concurrency=max_concurrency,
        depth=max((m.k or 1 for m in methods if m.selection == "similarity"), default=1),
    )
    new = 0
    for method in methods:
        todo = [item for item in task.items if not log.done(method.name, item.key)]
        with _progress(
            len(task.items), len(task.items) - len(todo), f"{task.name} {method.name}", show_progress
        ) as bar:
            for item in todo:
                item_start = time.perf_counter()
                if retrieval_only:
                    units, retrieval = selector.retrieve(method, item)
                else:
                    assert llm is not None
                    units, retrieval, output, tokens = selector.run(method, item, llm)
                record: dict[str, Any] = {
                    "method": method.name,
                    "key": item.key,
                    "group": item.group,
                    "input": item.text,
                    "units": units,
                    "n_units": len(units),
                    "retrieval": retrieval,
                }
                if item.gold_rules is not None and method.units == "rules":
                    record["gold_rules"] = list(item.gold_rules)
                    record["retrieval_scores"] = asdict(score_retrieval(units, item.gold_rules))
                if not retrieval_only:
                    assert task.score is not None
                    record["output"] = output
                    record["executor_tokens"] = tokens
                    record["scores"] = dict(task.score(item, output))
                record["seconds"] = round(time.perf_counter() - item_start, 3)
                log.append(record)
                new += 1
                if on_record is not None:
                    on_record(record)
                bar.update(1)
    return BenchRun(
        task=task,
        methods=list(methods),
        log=log,
        out_dir=out,
        retrieval_only=retrieval_only,
        new_items=new,
        seconds=time.perf_counter() - start,
        notes=notes,
    )
