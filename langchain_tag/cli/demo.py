"""The demo: TAG next to vector-store similarity on a short code review policy.

It extracts rules from a one-page policy shipped with the package, then for a
few code snippets prints the rules TAG matched (with P(YES) where the model
gives logprobs) beside the chunks Chroma similarity top-k would have given,
and the code the executor wrote from the matched rules.
"""

from __future__ import annotations

import sys
import textwrap
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TextIO

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from langchain_tag.calls.verdict_cache import InMemoryVerdictCache, SQLiteVerdictCache
from langchain_tag.executors import executor_chain
from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.integrations.similarity import similarity_retriever
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule

__all__ = [
    "DEMO_INPUTS",
    "DemoRow",
    "demo_policy",
    "demo_transformer",
    "describe_calibration",
    "render_row",
    "run_demo",
]

DEMO_DOMAIN = "Python code review policy"
DEMO_TASK_INPUT = "a snippet of Python code submitted for review"

DEMO_INPUTS: tuple[str, ...] = (
    'def add_tag(tag, tags=[]):\n    tags.append(tag)\n    print("added", tag)\n    return tags',
    'import os, sys\n\nAPI_KEY = "sk-live-4f9a2c"\n\ntry:\n    connect(API_KEY)\nexcept:\n    pass',
    'from helpers import *\n\ndef greet(name):\n    return "Hello, %s!" % name',
)


@dataclass
class DemoRow:
    """One demo input with what each retriever gave and what the executor wrote."""

    input: str
    matched: list[tuple[str, str, float | None, float | None]] = field(default_factory=list)
    near_misses: list[tuple[str, float]] = field(default_factory=list)
    similar: list[tuple[str, str]] = field(default_factory=list)
    output: str = ""
    judgments: int = 0
    failed: int = 0
    seconds_match: float = 0.0
    seconds_execute: float = 0.0


def demo_policy() -> Document:
    """The example policy shipped with the package."""
    text = resources.files("langchain_tag").joinpath("data/demo_policy.md").read_text(encoding="utf-8")
    return Document(page_content=text, id="demo_policy.md", metadata={"source": "demo_policy.md"})


def demo_transformer(extractor: BaseChatModel, *, store: str | Path | None = None) -> RuleDocumentTransformer:
    """The extraction settings of the demo (one statement per phase-3 call suits small local models)."""
    return RuleDocumentTransformer(
        extractor,
        domain=DEMO_DOMAIN,
        task_input=DEMO_TASK_INPUT,
        max_concurrency=1,
        units_per_call=1,
        store=store,
    )


def _log(stream: TextIO, start: float, message: str) -> None:
    print(f"[{time.perf_counter() - start:6.1f}s] {message}", file=stream, flush=True)


def _rules(extractor: BaseChatModel, policy: Document, store: Path | None, log: TextIO, start: float) -> list[Rule]:
    where = f"; finished calls are kept in {store}" if store else ""
    _log(log, start, f"extracting rules from the demo policy (5 phases{where})")
    result = demo_transformer(extractor, store=store).extract([policy])
    _log(log, start, "extraction done: " + result.report.summary().replace("\n", "; "))
    return result.rules


def run_demo(
    *,
    judge: BaseChatModel,
    extractor: BaseChatModel,
    executor: BaseChatModel,
    embeddings: Embeddings,
    inputs: tuple[str, ...] | list[str] = DEMO_INPUTS,
    k: int = 2,
    store: Path | None = None,
    verdicts: Path | None = None,
    out: TextIO = sys.stdout,
    log: TextIO = sys.stderr,
) -> list[DemoRow]:
    """Run the demo and print the comparison.

    Args:
        judge: Model for the pairwise judgments (one-token verdicts).
        extractor: Model for rule extraction.
        executor: Model that revises the code.
        embeddings: Embeddings for the Chroma similarity baseline.
        inputs: Code snippets to review.
        k: Top-k of the similarity baseline.
        store: The extraction store (SQLite) that keeps finished extraction
            calls, so a later run reuses them and gives the same rules
            (None: extract afresh and keep nothing).
        verdicts: A SQLite verdict cache, so a later run makes no judgment
            it made before, the calibration's reference judgments included
            (None: judgments are kept in memory for this run only).
        out: Stream for the comparison.
        log: Stream for progress lines.

    Returns:
        One :class:`DemoRow` per input.
    """
    start = time.perf_counter()
    policy = demo_policy()
    rules = _rules(extractor, policy, store, log, start)
    if not rules:
        raise RuntimeError("no rules were extracted from the demo policy; run with --refresh or --debug to see why")
    cache = SQLiteVerdictCache(verdicts) if verdicts is not None else InMemoryVerdictCache()
    retriever = ApplicabilityRetriever(llm=judge, rules=rules, max_concurrency=1, cache=cache)
    _log(log, start, describe_calibration(retriever))
    _log(log, start, f"indexing the policy in Chroma ({k} most similar 500-character chunks per input)")
    similar = similarity_retriever([policy], embeddings, k=k)
    chain = executor_chain(executor, executor="code_review")
    rows: list[DemoRow] = []
    for number, code in enumerate(inputs, start=1):
        _log(log, start, f"input {number}/{len(inputs)}: judging {len(rules)} rules")
        row = DemoRow(input=code)
        t0 = time.perf_counter()
        result = retriever.match(code)
        row.seconds_match = time.perf_counter() - t0
        by_id = {r.rule_id: r for r in rules}
        row.matched = [(j.rule_id, by_id[j.rule_id].rule_name, j.score, j.p_yes) for j in result.matched]
        row.judgments, row.failed = len(result.judgments), len(result.failed)
        rejected = [j for j in result.judgments if not j.applies and j.score is not None]
        row.near_misses = [(j.rule_id, j.score or 0.0) for j in sorted(rejected, key=lambda j: -(j.score or 0))[:2]]
        row.similar = [(d.metadata.get("chunk_id", "?"), d.page_content) for d in similar.invoke(code)]
        _log(log, start, f"input {number}/{len(inputs)}: revising the code with {len(row.matched)} matched rules")
        t0 = time.perf_counter()
        matched_docs = retriever.documents(result)
        row.output = chain.invoke({"input": code, "documents": matched_docs, "unit_kind": "rules"}).strip()
        row.seconds_execute = time.perf_counter() - t0
        print(render_row(number, row, {r.rule_id: r for r in rules}), file=out, flush=True)
        rows.append(row)
    _log(log, start, f"demo finished: {len(inputs)} inputs, {len(rules)} rules")
    return rows


def describe_calibration(retriever: ApplicabilityRetriever) -> str:
    """One line on how the retriever decides: threshold and calibration."""
    judge = retriever.judge
    calibration = judge.calibration
    how = (
        f"calibrated: {calibration.note or calibration.method}"
        if calibration is not None
        else f"raw P(YES): no calibration for {judge.model_identity}"
    )
    return f"a rule matches at score >= {judge.decision_threshold:.2f} ({how})"


def _column(lines: list[str], width: int) -> list[str]:
    out: list[str] = []
    for line in lines:
        out.extend(textwrap.wrap(line, width, subsequent_indent="    ") or [""])
    return out


def render_row(number: int, row: DemoRow, rules: dict[str, Rule], width: int = 100) -> str:
    """Format one input: matched rules beside similarity chunks, then the output."""
    half = (width - 3) // 2
    left = [f"TAG matched {len(row.matched)} of {row.judgments} rules ({row.seconds_match:.1f}s)"]
    for rule_id, name, score, raw in row.matched:
        shown = f"score={score:.2f}, P(YES)={raw:.2f}" if score is not None and raw is not None else "YES"
        left.append(f"- {rule_id} {name} [{shown}]")
        left.append(f"    do: {rules[rule_id].action}")
    if not row.matched:
        left.append("- (no rule applies)")
    if row.near_misses:
        left.append("closest below the line:")
        left.extend(f"  {rid} {rules[rid].rule_name} (score {p:.2f})" for rid, p in row.near_misses)
    if row.failed:
        left.append(f"({row.failed} judgments unreadable, counted NO)")
    right = [f"Chroma similarity top-{len(row.similar)} chunks"]
    for chunk_id, text in row.similar:
        right.append(f"- {chunk_id}: {' '.join(text.split())[:150]}")
    lcol, rcol = _column(left, half), _column(right, half)
    height = max(len(lcol), len(rcol))
    lcol += [""] * (height - len(lcol))
    rcol += [""] * (height - len(rcol))
    bar = "=" * width
    body = "\n".join(f"{a:<{half}} | {b}" for a, b in zip(lcol, rcol, strict=True))
    code = textwrap.indent(row.input, "    ")
    output = textwrap.indent(row.output or "(empty)", "    ")
    return (
        f"{bar}\nInput {number}:\n{code}\n{'-' * width}\n{body}\n{'-' * width}\n"
        f"Revised with the matched rules ({row.seconds_execute:.1f}s):\n{output}\n"
    )
