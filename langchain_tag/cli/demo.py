"""The demo: TAG next to vector-store similarity on a short code review policy.

It takes the rules of a one-page policy shipped with the package (extracted
from it beforehand by the package's own extraction on the embedded model, and
shipped with the reference judgments the default calibration needs, so a first
run pays for neither; ``langchain-tag demo --extract`` extracts them live), then
for a few code snippets prints the rules TAG matched (with P(YES) where the
model gives logprobs) beside the chunks Chroma similarity top-k would have
given, and the code the executor wrote from the matched rules.

The shipped rules are regenerated with ``python -m langchain_tag.cli.demo``
(the embedded model, about two minutes), whenever the extraction prompts, the
judge prompt or the embedded model change; a unit test fails until they are.
"""

from __future__ import annotations

import json
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

from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.extraction.prompts import PHASE_PROMPT_VERSIONS
from langchain_tag.graph import build_tag_graph
from langchain_tag.integrations.similarity import similarity_retriever
from langchain_tag.judging.results import Reading
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache, SQLiteVerdictCache, VerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule, load_rules, save_rules

__all__ = [
    "CHECK_AGREEMENT",
    "DEMO_INPUTS",
    "DemoRow",
    "ShippedDemo",
    "demo_policy",
    "demo_transformer",
    "describe_calibration",
    "load_shipped_demo",
    "render_row",
    "run_demo",
    "write_shipped_demo",
]

DEMO_DOMAIN = "Python code review policy"
DEMO_TASK_INPUT = "a snippet of Python code submitted for review"

DEMO_INPUTS: tuple[str, ...] = (
    'def add_tag(tag, tags=[]):\n    tags.append(tag)\n    print("added", tag)\n    return tags',
    'import os, sys\n\nAPI_KEY = "sk-live-4f9a2c"\n\ntry:\n    connect(API_KEY)\nexcept:\n    pass',
    'from helpers import *\n\ndef greet(name):\n    return "Hello, %s!" % name',
)


CHECK_AGREEMENT = (7, 15)
"""How often the embedded judge's reading of a revision agreed with ruff on the check-loop benchmark: 7 of 15
(input, matched rule with a ruff code) pairs of the demo set, with the demo's default of one extra round
(``benchmarks/results/first-run.md``, ``python -m langchain_tag_bench.check_loop``)."""


@dataclass
class DemoRow:
    """One demo input with what each retriever gave and what the executor wrote."""

    input: str
    matched: list[tuple[str, str, float | None, float | None]] = field(default_factory=list)
    near_misses: list[tuple[str, float]] = field(default_factory=list)
    similar: list[tuple[str, str]] = field(default_factory=list)
    output: str = ""
    remaining: list[tuple[str, float | None]] = field(default_factory=list)
    rounds: int = 1
    checked: int = 0
    judgments: int = 0
    failed: int = 0
    seconds_match: float = 0.0
    seconds_execute: float = 0.0


def demo_policy() -> Document:
    """The example policy shipped with the package."""
    text = resources.files("langchain_tag").joinpath("data/demo_policy.md").read_text(encoding="utf-8")
    return Document(page_content=text, id="demo_policy.md", metadata={"source": "demo_policy.md"})


SHIPPED_RULES = "demo_rules.jsonl"
"""The demo policy's rules, as the package's extraction wrote them (package data)."""
SHIPPED_PROVENANCE = "demo_rules.json"
"""What made the shipped rules (model, extraction prompt versions, judge prompt) and the reference verdicts."""


@dataclass
class ShippedDemo:
    """The demo's shipped rules and what came with them.

    Attributes:
        rules: The rules extracted from the demo policy.
        model: The identity of the model that extracted them and made the reference judgments.
        extraction_prompts: The extraction prompt version of each phase, as ``{"1": ..., ...}``.
        judge_prompt: The judge prompt's scoring version of the reference judgments.
        references: The default calibration's reference judgments of these rules, by verdict-cache key.
    """

    rules: list[Rule]
    model: str
    extraction_prompts: dict[str, str]
    judge_prompt: str
    references: dict[str, Reading]

    def preload(self, cache: VerdictCache) -> int:
        """Put the reference verdicts the cache lacks into it; return how many were put."""
        missing = [(key, verdict) for key, verdict in self.references.items() if cache.get(key) is None]
        for key, verdict in missing:
            cache.put(key, verdict)
        return len(missing)


def _data_dir() -> Path:
    return Path(str(resources.files("langchain_tag").joinpath("data")))


def load_shipped_demo(data_dir: Path | None = None) -> ShippedDemo:
    """The shipped demo rules, their provenance and reference verdicts (from the package's data)."""
    folder = data_dir or _data_dir()
    about = json.loads((folder / SHIPPED_PROVENANCE).read_text(encoding="utf-8"))
    return ShippedDemo(
        rules=load_rules(folder / SHIPPED_RULES),
        model=about["model"],
        extraction_prompts=dict(about["extraction_prompts"]),
        judge_prompt=about["judge_prompt"],
        references={key: Reading(**value) for key, value in about["references"].items()},
    )


def write_shipped_demo(extractor: BaseChatModel, judge: BaseChatModel, data_dir: Path, *, log: TextIO) -> ShippedDemo:
    """Extract the demo policy's rules and make their reference judgments; write both into ``data_dir``.

    Args:
        extractor: The extraction model (the embedded model, as the demo's first run uses it).
        judge: The judge model of the demo.
        data_dir: Where the shipped files go (the package's ``data`` folder).
        log: Stream for progress lines.
    """
    start = time.perf_counter()
    rules = _rules(extractor, demo_policy(), None, log, start)
    cache = InMemoryVerdictCache(max_size=None)
    retriever = ApplicabilityRetriever(llm=judge, rules=rules, max_concurrency=1, cache=cache)
    wanted = {r.key for r in retriever.judge.reference_requests(rules)}
    _log(log, start, f"making the calibration's {len(wanted)} reference judgments")
    retriever.match(DEMO_INPUTS[0])
    references = {key: cache.get(key) for key in sorted(wanted)}
    shipped = ShippedDemo(
        rules=rules,
        model=retriever.judge.model_identity,
        extraction_prompts={str(phase): version for phase, version in PHASE_PROMPT_VERSIONS.items()},
        judge_prompt=retriever.judge.scoring_version,
        references={key: verdict for key, verdict in references.items() if verdict is not None},
    )
    save_rules(rules, data_dir / SHIPPED_RULES)
    about = {
        "about": "The demo policy's rules as the package's extraction wrote them, with the default calibration's "
        "reference judgments of them; regenerate with: python -m langchain_tag.cli.demo",
        "model": shipped.model,
        "extraction_prompts": shipped.extraction_prompts,
        "judge_prompt": shipped.judge_prompt,
        "references": {
            key: {"p_yes": v.p_yes, "word": v.word, "reply": v.reply} for key, v in shipped.references.items()
        },
    }
    (data_dir / SHIPPED_PROVENANCE).write_text(json.dumps(about, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    _log(log, start, f"wrote {len(rules)} rules and {len(shipped.references)} reference verdicts to {data_dir}")
    return shipped


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
    shipped: ShippedDemo | None = None,
    check_rounds: int = 0,
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
        shipped: The shipped rules and reference verdicts (:func:`load_shipped_demo`): used instead of
            extracting (``extractor`` is then not called); None extracts live.
        check_rounds: After the revision, the judge reads it against the matched rules; while it reads some as
            still broken, the executor gets up to this many more rounds with just those, and the demo prints
            the judge's reading with its benchmark record (:data:`CHECK_AGREEMENT`). Default 0: on the
            check-loop benchmark, no check agreed with ruff more often (14 of 15) than the embedded judge's
            reading (7 of 15).
        out: Stream for the comparison.
        log: Stream for progress lines.

    Returns:
        One :class:`DemoRow` per input.
    """
    start = time.perf_counter()
    policy = demo_policy()
    cache: VerdictCache = SQLiteVerdictCache(verdicts) if verdicts is not None else InMemoryVerdictCache()
    if shipped is not None:
        rules = shipped.rules
        shipped.preload(cache)
        _log(
            log,
            start,
            f"using the {len(rules)} rules shipped with the package (extracted from the demo policy by "
            f"{shipped.model}, prompts {shipped.extraction_prompts.get('1', '?')}; --extract extracts them live)",
        )
    else:
        rules = _rules(extractor, policy, store, log, start)
    if not rules:
        raise RuntimeError("no rules were extracted from the demo policy; run with --refresh or --debug to see why")
    retriever = ApplicabilityRetriever(llm=judge, rules=rules, max_concurrency=1, cache=cache)
    _log(log, start, describe_calibration(retriever))
    _log(log, start, f"indexing the policy in Chroma ({k} most similar 500-character chunks per input)")
    similar = similarity_retriever([policy], embeddings, k=k)
    graph = build_tag_graph(
        executor, retriever=retriever, rules=[r.to_document() for r in rules], executor="code_review",
        check_rounds=check_rounds,
    )  # fmt: skip
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
        checking = " and checking the revision" if check_rounds and row.matched else ""
        _log(
            log,
            start,
            f"input {number}/{len(inputs)}: revising the code with {len(row.matched)} matched rules{checking}",
        )
        t0 = time.perf_counter()
        state = graph.invoke({"input": code})  # the retrieval is answered from the verdict cache
        row.output = str(state["output"]).strip()
        row.rounds, row.checked = state.get("rounds", 1), len(state.get("checked", []))
        row.remaining = [(d.metadata["rule_id"], d.metadata.get("tag_score")) for d in state.get("remaining", [])]
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
    rounds = f", {row.rounds} rounds" if row.rounds > 1 else ""
    return (
        f"{bar}\nInput {number}:\n{code}\n{'-' * width}\n{body}\n{'-' * width}\n"
        f"Revised with the matched rules ({row.seconds_execute:.1f}s{rounds}):\n{output}\n{_check_lines(row, rules)}"
    )


def _check_lines(row: DemoRow, rules: dict[str, Rule]) -> str:
    """The judge's reading of the final revision against the matched rules, with how far such readings go.

    Its reading, never a finding: on the check-loop benchmark the embedded judge's reading of a revision agreed
    with ruff about as often as a coin would (:data:`CHECK_AGREEMENT`).
    """
    if not row.checked:
        return ""
    agreed, compared = CHECK_AGREEMENT
    record = (
        f"(a reading, not a check: on the check-loop benchmark such readings agreed with ruff on {agreed} of "
        f"{compared} rule checks, {agreed / compared:.0%}, about chance)".replace("%", " %")
    )
    if not row.remaining:
        return (
            textwrap.fill(f"The judge reads the revision as following all {row.checked} matched rules {record}.", 100)
            + "\n"
        )
    lines = [
        textwrap.fill(
            f"The judge reads the revision as going against {len(row.remaining)} of the {row.checked} matched "
            f"rules {record}:",
            100,
        )
    ]
    for rule_id, score in row.remaining:
        shown = f" (score {score:.2f})" if score is not None else ""
        lines.append(f"- {rule_id} {rules[rule_id].rule_name}{shown}")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Regenerate the shipped demo rules and reference verdicts with the embedded model (into this package)."""
    from langchain_tag.local.models import get_chat_model

    write_shipped_demo(get_chat_model(role="extractor"), get_chat_model(role="judge"), _data_dir(), log=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
