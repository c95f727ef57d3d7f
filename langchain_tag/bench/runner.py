"""Run a benchmark task over methods: select units, run the executor, score, record.

For every method and item the runner selects the reference units (nothing,
all rules, similarity top-k, or the pairwise judge's YES set), runs the
executor on the item with those units, scores the output and appends one
record to the run's JSONL (:class:`~langchain_tag.bench.runlog.RunLog`).
Items already recorded for a method are skipped, so a crashed run resumes
where it stopped. With ``retrieval_only`` the executor is not run: each
record holds the selected rule ids scored against the item's gold ids.

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

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.vectorstores import VectorStore

from langchain_tag.bench.methods import Method
from langchain_tag.bench.metrics import score_retrieval
from langchain_tag.bench.runlog import RunLog
from langchain_tag.bench.task import BenchItem, BenchTask
from langchain_tag.rules import Rule

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


class _Selector:
    """Selects reference units per method; builds stores, retrievers and rule sets once."""

    def __init__(
        self,
        task: BenchTask,
        *,
        judge_llm: BaseChatModel | None,
        embeddings: Embeddings | Callable[[], Embeddings] | None,
        threshold: float,
        max_concurrency: int,
        depth: int = 1,
    ) -> None:
        self.task = task
        self.depth = depth
        self._rankings: dict[tuple[str, str], list[Document]] = {}
        self.judge_llm = judge_llm
        self._embeddings = embeddings
        self.threshold = threshold
        self.max_concurrency = max_concurrency
        self._rules: dict[int | None, list[Rule]] = {}
        self._stores: dict[tuple[str, int | None], tuple[VectorStore, dict[str, Document]]] = {}
        self._chunks: list[Document] | None = None
        self._retrievers: dict[str, Any] = {}

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

    def chunks(self) -> list[Document]:
        if self._chunks is None:
            from langchain_tag.similarity import chunk_documents

            if not self.task.sources:
                raise ValueError(f"{self.task.name}: chunk methods need source documents, and the task has none")
            self._chunks = chunk_documents(self.task.sources)
        return self._chunks

    def _store(self, units: str) -> tuple[VectorStore, dict[str, Document]]:
        if (units, None) not in self._stores:
            from langchain_tag.similarity import in_memory_chroma

            if units == "chunks":
                docs = self.chunks()
                by_id = {str(d.metadata["chunk_id"]): d for d in docs}
            else:
                docs = [rule.to_document() for rule in self.rules()]
                by_id = {str(d.metadata["rule_id"]): d for d in docs}
                if self.task.rule_text == "condition":
                    condition = {r.rule_id: r.condition for r in self.rules()}
                    docs = [Document(page_content=condition[i], metadata=d.metadata) for i, d in by_id.items()]
            self._stores[(units, None)] = (in_memory_chroma(docs, self.embeddings()), by_id)
        return self._stores[(units, None)]

    def _retriever(self, method: Method) -> Any:
        if method.name not in self._retrievers:
            from langchain_tag.retrievers import ApplicabilityRetriever

            if self.judge_llm is None:
                raise ValueError(f"method {method.name} needs a judge model")
            if method.units == "chunks":
                rules, predicate = chunk_rules(self.chunks()), "passage"
            else:
                rules = self.rules(method.skip_phase)
                predicate = "relevance" if method.selection == "relevance" else self.task.judge_predicate
            self._retrievers[method.name] = ApplicabilityRetriever(
                llm=self.judge_llm,
                rules=[r.to_document() for r in rules],
                predicate=predicate,
                threshold=self.threshold,
                max_concurrency=self.max_concurrency,
            )
        return self._retrievers[method.name]

    def select(self, method: Method, item: BenchItem) -> tuple[list[Document], dict[str, Any]]:
        """The units given to the executor and what selecting them cost."""
        start = time.perf_counter()
        info: dict[str, Any] = {}
        if method.selection == "none":
            docs: list[Document] = []
        elif method.selection == "all":
            docs = [rule.to_document() for rule in self.rules(method.skip_phase)]
        elif method.selection == "similarity":
            # One search per (unit kind, item) at the deepest k; each k's row is a prefix of it.
            if (method.units, item.key) not in self._rankings:
                store, by_id = self._store(method.units)
                id_key = "chunk_id" if method.units == "chunks" else "rule_id"
                found = store.similarity_search(
                    item.search_text or item.text, k=min(max(self.depth, method.k or 1), len(by_id))
                )
                self._rankings[(method.units, item.key)] = [by_id[str(d.metadata[id_key])] for d in found]
            docs = self._rankings[(method.units, item.key)][: method.k]
        else:
            retriever = self._retriever(method)
            result = retriever.match(item.text)
            matched_ids = [j.rule_id for j in result.matched]
            if method.units == "chunks":
                by_chunk = {str(c.metadata["chunk_id"]): c for c in self.chunks()}
                docs = [by_chunk[i] for i in matched_ids]
            else:
                by_rule = {r.rule_id: r for r in self.rules(method.skip_phase)}
                docs = [by_rule[i].to_document() for i in matched_ids]
            info = {
                "calls": result.calls,
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
                "failed": [j.rule_id for j in result.failed],
                "p_yes": {j.rule_id: j.probability for j in result.judgments},
            }
        info["seconds"] = round(time.perf_counter() - start, 3)
        return docs, info


def _unit_id(doc: Document) -> str:
    return str(doc.metadata.get("rule_id") or doc.metadata.get("chunk_id") or "")


def _execute(
    task: BenchTask, llm: BaseChatModel, item: BenchItem, method: Method, docs: list[Document]
) -> tuple[str, dict[str, int]]:
    from langchain_tag.executors import executor_messages

    assert task.executor_domain is not None
    messages = executor_messages(item.text, docs, domain=task.executor_domain, unit_kind=method.units)
    message = llm.invoke(messages)
    usage = getattr(message, "usage_metadata", None) or {}
    tokens = {
        "prompt_tokens": int(usage.get("input_tokens", 0)),
        "completion_tokens": int(usage.get("output_tokens", 0)),
    }
    return str(message.content), tokens


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
    threshold: float = 0.5,
    max_concurrency: int = 2,
    show_progress: bool | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> BenchRun:
    """Run ``methods`` over the task's items, appending one record per (method, item).

    Args:
        task: The benchmark domain (see :mod:`langchain_tag.bench.tasks`).
        methods: Rows to run (see :func:`~langchain_tag.bench.methods.parse_methods`).
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
        threshold: P(YES) needed for a YES when the judge gives logprobs.
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
                docs, retrieval = selector.select(method, item)
                units = [_unit_id(d) for d in docs]
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
                    assert llm is not None and task.score is not None
                    output, tokens = _execute(task, llm, item, method, docs)
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
