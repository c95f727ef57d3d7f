"""Benchmark tasks: NBA, HumanEval x PEP 8, NPOV, and the mechanical PEP 8 retrieval set.

Each builder reads data from paths it is given and returns a
:class:`~langchain_tag_bench.task.BenchTask`. Rule sets that must be
extracted (PEP 8 for ``code``, the user's policy for ``npov``, every
phase-ablation set) go through :func:`cached_extraction`: the rules are
written to a cache directory keyed by the source text, the extraction
model, the prompt version and the settings, so a second run reuses them.
Extracted rules are never written into the repository.

=========  ==============================  ===========================  ==========================
task       items                           rule set                     scored by
=========  ==============================  ===========================  ==========================
``nba``    RuleArena NBA problems          the 55-rule catalog, or      strict accuracy (answer,
                                           ``rules`` (a JSONL file)     operation, team)
``code``   HumanEval prompts               extracted from PEP 8         Pass@1, pylint, radon,
                                                                        bandit
``npov``   the user's cases file           extracted from the user's    VFR and four 1-5 scores
                                           policy document              from an LLM grader
``pep8``   HumanEval code and broken       one rule per pycodestyle     recall / precision against
           variants                        check                        pycodestyle's output
=========  ==============================  ===========================  ==========================
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel

from langchain_tag.calls._identity import model_identity
from langchain_tag.judging.prompts import JudgePrompt
from langchain_tag.rules import Rule, load_rules, save_rules
from langchain_tag_bench.prompts import BENCH_EXECUTOR_PROMPTS, BENCH_JUDGE_PROMPTS, NBA_FIELDS
from langchain_tag_bench.task import BenchItem, BenchTask, Metric

__all__ = [
    "TASKS",
    "cached_extraction",
    "code_task",
    "judge_prompt",
    "nba_task",
    "npov_task",
    "pep8_task",
]

logger = logging.getLogger(__name__)

TASKS: tuple[str, ...] = ("nba", "code", "npov", "pep8")
"""Benchmark task names."""

CODE_DOMAIN = "PEP 8 (Python code style)"
CODE_TASK_INPUT = "a snippet of Python code"
NPOV_DOMAIN = "neutral point of view (encyclopedic writing)"
NPOV_TASK_INPUT = "one sentence of an encyclopedia article"

ExtractorFactory = Callable[[], BaseChatModel]


def judge_prompt(predicate: str | JudgePrompt) -> str | JudgePrompt:
    """The judge prompt to pass the library for a predicate name.

    The benchmark's own judges (``nba``, ``passage``) are returned as their
    :class:`~langchain_tag.judging.prompts.JudgePrompt` objects from
    :data:`~langchain_tag_bench.prompts.BENCH_JUDGE_PROMPTS`; core names
    (``applicability``, ``relevance``, ...) and prompt objects pass through.
    """
    if isinstance(predicate, str) and predicate in BENCH_JUDGE_PROMPTS:
        return BENCH_JUDGE_PROMPTS[predicate]
    return predicate


def cached_extraction(
    name: str,
    documents: Sequence[Document],
    extractor: ExtractorFactory,
    *,
    domain: str,
    task_input: str,
    skip_phase: int | None = None,
    cache_dir: str | Path | None = None,
    extra_fields: Mapping[str, str] | None = None,
    max_concurrency: int = 1,
) -> list[Rule]:
    """Rules extracted from ``documents``, read from the cache when the same extraction ran before.

    Args:
        name: Short name used in the cache file name (e.g. ``"pep8"``).
        documents: Source documents.
        extractor: Returns the extraction model (called only on a cache miss).
        domain: Domain named in the extraction prompts.
        task_input: What the rules will be applied to.
        skip_phase: Extraction phase left out (the phase ablation).
        cache_dir: Cache directory; ``None`` disables the cache.
        extra_fields: Extra rule fields phase 3 asks for, name to meaning
            (e.g. :data:`~langchain_tag_bench.prompts.NBA_FIELDS`); part of the
            cache key.
        max_concurrency: Extraction calls in flight.

    Returns:
        The rules.

    Raises:
        ValueError: When the extraction gives no rules.
    """
    from langchain_tag.extraction import RuleDocumentTransformer
    from langchain_tag.extraction.prompts import EXTRACTION_PROMPT_VERSION

    llm = extractor()
    key_source = json.dumps(
        {
            "texts": [d.page_content for d in documents],
            "prompts": EXTRACTION_PROMPT_VERSION,
            "model": model_identity(llm),
            "domain": domain,
            "task_input": task_input,
            "skip": skip_phase,
            "extra_fields": dict(extra_fields) if extra_fields else None,
        },
        sort_keys=True,
    )
    key = hashlib.sha256(key_source.encode("utf-8")).hexdigest()[:16]
    suffix = "" if skip_phase is None else f"-no-p{skip_phase}"
    path = Path(cache_dir) / "bench-rules" / f"{name}{suffix}-{key}.jsonl" if cache_dir is not None else None
    if path is not None and path.exists():
        logger.info("using rules extracted earlier: %s", path)
        return load_rules(path)
    transformer = RuleDocumentTransformer(
        llm,
        domain=domain,
        task_input=task_input,
        skip_phases={skip_phase} if skip_phase else (),
        extra_fields=extra_fields,
        max_concurrency=max_concurrency,
        units_per_call=1,
    )
    result = transformer.extract(list(documents))
    if not result.rules:
        raise ValueError(f"extraction of {name} gave no rules: {result.report.summary()}")
    if path is not None:
        save_rules(result.rules, path)
        path.with_suffix(".report.json").write_text(
            json.dumps(result.report.to_dict(), indent=1, default=str), encoding="utf-8"
        )
    return result.rules


def _rule_loader(
    name: str,
    sources: Sequence[Document],
    *,
    rules_file: str | Path | None,
    extractor: ExtractorFactory | None,
    domain: str,
    task_input: str,
    cache_dir: str | Path | None,
    base: Callable[[], list[Rule]] | None = None,
    extra_fields: Mapping[str, str] | None = None,
) -> Callable[[int | None], list[Rule]]:
    def load(skip_phase: int | None) -> list[Rule]:
        if skip_phase is None and rules_file is not None:
            return load_rules(rules_file)
        if skip_phase is None and base is not None:
            return base()
        if extractor is None:
            raise ValueError(f"{name}: extracting rules needs an extraction model")
        return cached_extraction(
            name,
            sources,
            extractor,
            domain=domain,
            task_input=task_input,
            skip_phase=skip_phase,
            cache_dir=cache_dir,
            extra_fields=extra_fields,
        )

    return load


# --------------------------------------------------------------------------
# RuleArena NBA.
# --------------------------------------------------------------------------
def nba_task(
    data_dir: str | Path,
    *,
    limit: int | None = None,
    levels: Sequence[int] = (0, 1, 2),
    rules_file: str | Path | None = None,
    extractor: ExtractorFactory | None = None,
    cache_dir: str | Path | None = None,
    judge_predicate: str | JudgePrompt = "applicability",
    query: str = "text",
    rule_text: Literal["document", "condition"] = "document",
) -> BenchTask:
    """RuleArena NBA: is some operation illegal, which one, and which team is at fault.

    The rule set is the 55-rule catalog unless ``rules_file`` is given. With
    the catalog each item's gold rule ids are its ``relevant_rules`` present
    in the catalog, so retrieval is scored too; with another rule set the ids
    do not correspond and retrieval is not scored. Standard RAG chunks the
    CBA excerpts (``reference_rules.txt``); the phase ablation extracts from
    them too.

    Args:
        data_dir: The RuleArena NBA directory.
        limit: At most this many problems in all, spread evenly over the
            levels (earlier levels take the remainder).
        levels: Levels to load.
        rules_file: A rule file (JSONL) to use instead of the catalog.
        extractor: Extraction model factory, for the phase ablation.
        cache_dir: Extraction cache directory.
        judge_predicate: Judge prompt of the TAG rows: ``applicability``, ``nba``
            (the benchmark's NBA judge, which reads the NBA rule fields) or a
            :class:`~langchain_tag.judging.prompts.JudgePrompt`. With the NBA judge,
            rules extracted for the phase ablation are asked for
            :data:`~langchain_tag_bench.prompts.NBA_FIELDS`.
        query: What similarity search uses as the query: ``"text"`` (the
            titled scenario), ``"lines"`` (its lines without titles) or
            ``"operations"`` (the operations alone); see
            :func:`~langchain_tag_bench.nba.query_text`.
        rule_text: What the rules + similarity rows embed per rule:
            ``"document"`` or ``"condition"`` (the catalog description).
    """
    from langchain_tag_bench.data import BenchDataError
    from langchain_tag_bench.metrics import parse_nba_verdict, strict_correct
    from langchain_tag_bench.nba import catalog_rules, gold_in_catalog, load_problems, query_text

    data = Path(data_dir)
    predicate = judge_prompt(judge_predicate)
    levels = list(dict.fromkeys(levels))
    if limit is None:
        problems = load_problems(data, levels=levels)
    else:
        # Spread the limit over the levels: 10 over three levels loads 4 + 3 + 3.
        share = {lv: limit // len(levels) + (1 if i < limit % len(levels) else 0) for i, lv in enumerate(levels)}
        loaded = load_problems(data, levels=levels, limit=max(share.values()))
        taken = dict.fromkeys(levels, 0)
        problems = []
        for problem in loaded:
            if taken[problem.level] < share[problem.level]:
                problems.append(problem)
                taken[problem.level] += 1
    catalog = catalog_rules(data)
    catalog_ids = {r.rule_id for r in catalog}
    items = [
        BenchItem(
            key=p.key,
            text=p.text,
            group=f"L{p.level}",
            gold_rules=gold_in_catalog(p, catalog_ids) if rules_file is None else None,
            payload=p,
            search_text=None if query == "text" else query_text(p, query),
        )
        for p in problems
    ]
    reference = data / "reference_rules.txt"
    if not reference.is_file():
        raise BenchDataError(f"{reference} not found: standard RAG chunks the CBA excerpts in that file")
    sources = [Document(page_content=reference.read_text(encoding="utf-8"), metadata={"source": str(reference)})]

    def score(item: BenchItem, output: str) -> dict[str, Any]:
        verdict = parse_nba_verdict(output)
        gold = item.payload.verdict
        return {
            "strict": strict_correct(verdict, gold),
            "answer": verdict.answer is not None and verdict.answer == gold.answer,
            "parsed": verdict.answer is not None,
        }

    return BenchTask(
        name="nba",
        items=items,
        load_rules=_rule_loader(
            "nba",
            sources,
            rules_file=rules_file,
            extractor=extractor,
            domain="NBA collective bargaining agreement (salary cap)",
            task_input="an NBA salary-cap scenario: team and player situations and proposed operations",
            cache_dir=cache_dir,
            base=lambda: catalog,
            extra_fields=NBA_FIELDS if predicate is BENCH_JUDGE_PROMPTS["nba"] else None,
        ),
        sources=sources,
        executor_domain=BENCH_EXECUTOR_PROMPTS["nba"],
        score=score,
        metrics=(
            Metric("strict", "strict %", percent=True),
            Metric("answer", "answer %", percent=True),
            Metric("parsed", "parsed %", percent=True),
        ),
        groups=tuple(f"L{level}" for level in sorted(set(levels))),
        judge_predicate=predicate,
        rule_set=str(rules_file) if rules_file else f"RuleArena catalog ({len(catalog)} rules)",
        rule_text=rule_text,
    )


# --------------------------------------------------------------------------
# HumanEval x PEP 8.
# --------------------------------------------------------------------------
def code_task(
    humaneval: str | Path,
    pep8: str | Path,
    *,
    limit: int | None = None,
    rules_file: str | Path | None = None,
    extractor: ExtractorFactory | None = None,
    cache_dir: str | Path | None = None,
    timeout: float = 10.0,
) -> BenchTask:
    """HumanEval x PEP 8: complete each function correctly and in PEP 8 style.

    Args:
        humaneval: ``HumanEval.jsonl.gz`` (or its directory).
        pep8: PEP 8 as a text/reST file: the rule source and the RAG corpus.
        limit: At most this many problems.
        rules_file: A rule file (JSONL) instead of extracting from ``pep8``.
        extractor: Extraction model factory.
        cache_dir: Extraction cache directory.
        timeout: Seconds allowed for each solution's tests.
    """
    from langchain_tag.integrations.loaders import load_document
    from langchain_tag_bench.code import load_humaneval, score_completion

    problems = load_humaneval(humaneval, limit=limit)
    sources = [load_document(pep8)]
    items = [BenchItem(key=p.task_id, text=p.prompt, payload=p) for p in problems]

    def score(item: BenchItem, output: str) -> dict[str, Any]:
        return score_completion(item.payload, output, timeout=timeout).to_dict()

    return BenchTask(
        name="code",
        items=items,
        load_rules=_rule_loader(
            "pep8",
            sources,
            rules_file=rules_file,
            extractor=extractor,
            domain=CODE_DOMAIN,
            task_input=CODE_TASK_INPUT,
            cache_dir=cache_dir,
        ),
        sources=sources,
        executor_domain=BENCH_EXECUTOR_PROMPTS["code"],
        score=score,
        metrics=(
            Metric("pylint", "pylint"),
            Metric("passed", "Pass@1 %", percent=True),
            Metric("complexity", "radon CC"),
            Metric("bandit", "bandit issues"),
        ),
        rule_set=str(rules_file) if rules_file else f"extracted from {Path(pep8).name}",
    )


# --------------------------------------------------------------------------
# NPOV.
# --------------------------------------------------------------------------
def npov_task(
    cases: str | Path,
    policy: str | Path,
    grader: BaseChatModel,
    *,
    limit: int | None = None,
    rules_file: str | Path | None = None,
    extractor: ExtractorFactory | None = None,
    cache_dir: str | Path | None = None,
) -> BenchTask:
    """NPOV: rewrite a biased sentence so that the described violation is fixed.

    Args:
        cases: The cases file (JSONL or CSV with ``sentence`` and ``violation``).
        policy: The policy document rules are extracted from (and chunked).
        grader: The LLM that grades each rewrite (VFR and four 1-5 scores).
        limit: At most this many cases.
        rules_file: A rule file (JSONL) instead of extracting from ``policy``.
        extractor: Extraction model factory.
        cache_dir: Extraction cache directory.
    """
    from langchain_tag.integrations.loaders import load_document
    from langchain_tag_bench.npov import judge_rewrite, load_cases, parse_rewrite

    loaded = load_cases(cases, limit=limit)
    sources = [load_document(policy)]
    items = [BenchItem(key=c.case_id, text=c.sentence, payload=c) for c in loaded]

    def score(item: BenchItem, output: str) -> dict[str, Any]:
        rewrite = parse_rewrite(output, item.payload.sentence)
        scores = judge_rewrite(grader, item.payload, rewrite.rewrite).to_dict()
        scores["rewrite"] = rewrite.rewrite
        scores["parsed"] = rewrite.parsed
        return scores

    return BenchTask(
        name="npov",
        items=items,
        load_rules=_rule_loader(
            "npov",
            sources,
            rules_file=rules_file,
            extractor=extractor,
            domain=NPOV_DOMAIN,
            task_input=NPOV_TASK_INPUT,
            cache_dir=cache_dir,
        ),
        sources=sources,
        executor_domain=BENCH_EXECUTOR_PROMPTS["npov"],
        score=score,
        metrics=(
            Metric("vfr", "VFR %", percent=True),
            Metric("remediation", "remediation"),
            Metric("preservation", "preservation"),
            Metric("tone", "tone"),
            Metric("fluency", "fluency"),
            Metric("auto_failed", "auto-fail %", percent=True),
        ),
        rule_set=str(rules_file) if rules_file else f"extracted from {Path(policy).name}",
    )


# --------------------------------------------------------------------------
# PEP 8, mechanical gold.
# --------------------------------------------------------------------------
def pep8_task(humaneval: str | Path, *, limit: int | None = None, variants: int = 2, seed: int = 0) -> BenchTask:
    """Retrieval only: which pycodestyle checks does a snippet break? Gold is pycodestyle's own output.

    Args:
        humaneval: ``HumanEval.jsonl.gz`` (or its directory): canonical
            solutions are the clean snippets.
        limit: At most this many HumanEval problems (each gives 1 + ``variants`` items).
        variants: Style-broken variants per problem.
        seed: Seed of the variant generator.
    """
    from langchain_tag_bench.pep8 import load_pep8_items, pep8_rules

    loaded = load_pep8_items(humaneval, limit=limit, variants=variants, seed=seed)
    rules = pep8_rules()
    items = [BenchItem(key=i.key, text=i.code, group=i.group, gold_rules=tuple(i.gold), payload=i) for i in loaded]
    return BenchTask(
        name="pep8",
        items=items,
        load_rules=lambda skip: rules if skip is None else _no_ablation("pep8"),
        groups=("canonical", "variant"),
        rule_set=f"one rule per pycodestyle check ({len(rules)} rules)",
    )


def _no_ablation(name: str) -> list[Rule]:
    raise ValueError(f"{name}: the rule set is written from the checks, not extracted, so it has no phase ablation")
