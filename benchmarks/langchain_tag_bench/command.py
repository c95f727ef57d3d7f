"""``langchain-tag bench DOMAIN``: run a benchmark task over methods and print its table.

``langchain-tag bench quality --set demo|ruff|DIR`` runs the end-to-end quality
benchmark instead (:mod:`langchain_tag_bench.quality`): extracted rules judged
on labelled inputs, scored per policy statement.

The command builds the task (:mod:`langchain_tag_bench.tasks`), the models
(the embedded local model unless ``--llm``/``--judge-llm``/``--grader-llm``
or the ``LANGCHAIN_TAG_*`` variables name an endpoint model), runs
:func:`~langchain_tag_bench.runner.run_benchmark` into ``--out`` (resuming
what is there), writes the markdown table and PNG plot, and prints the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from langchain_tag.cli.options import LazyChoices
from langchain_tag.judging.prompts import JUDGE_PROMPTS
from langchain_tag_bench.methods import DEFAULT_KS

__all__ = ["add_bench_parser", "model_config_for", "run_fit_default_command", "run_quality_command"]

DEFAULT_METHODS = {
    "nba": "none,all_rules,similarity,tag",
    "code": "none,all_rules,similarity,tag",
    "npov": "none,all_rules,similarity,tag",
    "pep8": "similarity,tag",
}
DEFAULT_RETRIEVAL_METHODS = "similarity,tag,relevance"


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return values


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _domains() -> tuple[str, ...]:
    """The benchmark's tasks and its other commands (read when a DOMAIN is checked: the tasks import models)."""
    from langchain_tag_bench.tasks import TASKS

    return (*TASKS, "quality", "fit-default")


def add_bench_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``bench`` sub-command to a sub-parser collection."""
    p = sub.add_parser(
        "bench",
        help="run a benchmark (nba, code, npov, pep8, quality) over methods and print the table",
        description="Run a benchmark task over methods. Results are appended per item to OUT/items.jsonl "
        "(a rerun resumes), and the table is written to OUT/results.md (or retrieval.md) with a PNG plot.",
    )
    p.add_argument(
        "domain",
        choices=LazyChoices(_domains),
        metavar="DOMAIN",
        help="nba | code (HumanEval x PEP 8) | npov | pep8 (retrieval only) | "
        "quality (policy -> rules -> labelled inputs, P/R/F1 per statement) | "
        "fit-default (one calibration fitted on the pooled dev splits of quality runs: --runs)",
    )
    p.add_argument(
        "--methods",
        help="comma-separated: none, all_rules, similarity[@K], tag, relevance, rules_similarity[@K], "
        "chunks_applicability, tag-no-pN, phases, 2x2, all "
        f"(default: {DEFAULT_METHODS['nba']}; with --retrieval-only: {DEFAULT_RETRIEVAL_METHODS}); quality: "
        "tag-domain, tag, tag-raw, tag-calibrated:FILE, tag-fitted, all_rules, rules_similarity[@K], "
        "chunks_similarity[@K], llm_filter, listwise[@K] (LangChain's LLMChainFilter and LLMListwiseRerank on the "
        "judge's model), all (default: all, which leaves the LangChain rows out)",
    )
    p.add_argument(
        "--limit", type=_positive, help="at most N items (nba: spread evenly over the levels; quality: per split)"
    )
    p.add_argument(
        "--set",
        dest="quality_set",
        default="demo",
        help="quality: demo | ruff | pep8 | nba | wnc | DIR with a policy, *statements*.json and *cases*.jsonl "
        "(default: demo)",
    )
    p.add_argument(
        "--split", choices=("dev", "test", "both"), default="both", help="quality: the cases scored (default: both)"
    )
    p.add_argument("--levels", type=_ints, default=(0, 1, 2), help="nba levels, e.g. 0,1 (default: 0,1,2)")
    p.add_argument("--ks", type=_ints, default=DEFAULT_KS, help="similarity cut-offs (default: 5,10,15,20)")
    p.add_argument("--retrieval-only", action="store_true", help="score selected rule ids against gold; no executor")
    p.add_argument("--llm", help='executor model on the configured endpoint, or "local" / "local:0.5b"')
    p.add_argument("--judge-llm", help="pairwise judge model (default: as --llm)")
    p.add_argument("--grader-llm", help="npov grader model (default: as --llm)")
    p.add_argument("--rules", help="rule file (JSONL) to use instead of the default rule set")
    p.add_argument(
        "--data",
        help="nba (and quality --set nba): the RuleArena NBA directory; quality --set wnc: the WNC sample "
        "directory; code, pep8: HumanEval.jsonl.gz",
    )
    p.add_argument("--pep8", help="code: PEP 8 source document (default: the shared pep-0008.rst)")
    p.add_argument("--cases", help="npov: cases file (JSONL or CSV with sentence, violation); required")
    p.add_argument("--policy", help="npov: the policy document to extract rules from; required")
    p.add_argument("--predicate", choices=("applicability", "nba"), default="applicability", help="TAG judge prompt")
    p.add_argument(
        "--judge-prompt",
        choices=tuple(name for name in JUDGE_PROMPTS if name.startswith("applicability")),
        default="applicability",
        help="quality: the judge prompt of the tag rows (compare prompts on tag-fitted; default: applicability)",
    )
    p.add_argument(
        "--query",
        choices=("text", "lines", "operations"),
        default="text",
        help="nba: what similarity search queries with",
    )
    p.add_argument(
        "--rule-text",
        choices=("document", "condition"),
        default="document",
        help="what rule similarity embeds per rule",
    )
    p.add_argument(
        "--threshold",
        type=float,
        help="calibrated score needed for YES (default: the judge calibration's threshold, else 0.5)",
    )
    p.add_argument("--max-concurrency", type=_positive, default=1, help="judgments in flight (default 1)")
    p.add_argument("--variants", type=int, default=2, help="pep8: broken variants per snippet (default 2)")
    p.add_argument("--timeout", type=float, default=10.0, help="code: seconds allowed per solution's tests")
    p.add_argument("--out", help="run directory (default: runs/bench-DOMAIN[-retrieval])")
    p.add_argument("--cache-dir", help="extraction cache (default: the package cache directory)")
    p.add_argument(
        "--runs",
        help="fit-default: quality runs to pool, SET=RUN_DIR,... (e.g. demo=runs/q-demo,ruff=runs/q-ruff)",
    )
    p.add_argument(
        "--row",
        choices=("tag-domain", "tag-fitted"),
        default="tag-domain",
        help="fit-default: whose recorded features to fit (tag-domain: dev-sample references; tag-fitted: typical)",
    )
    p.add_argument(
        "--centre-inputs",
        action="store_true",
        help="fit-default: centre each case's features on their median over the rules first (centre_per_input)",
    )
    p.set_defaults(func=run_bench_command)
    return p


def model_config_for(name: str | None, base: Any = None) -> Any:
    """The model configuration for a ``--llm``-style value.

    ``None`` keeps the environment's configuration; ``"local"`` or
    ``"local:0.5b"`` selects the embedded model; any other value is a model
    name on the configured OpenAI-compatible endpoint.
    """
    from langchain_tag.local.models import ModelConfig

    cfg = base if base is not None else ModelConfig.from_env()
    if name is None:
        return cfg
    if name == "local" or name.startswith("local:"):
        size = name.partition(":")[2] or cfg.local_model
        return cfg.with_overrides(provider="local", local_model=size)
    if cfg.provider == "local":
        return cfg.with_overrides(provider="openai", model=name, judge_model=name)
    return cfg.with_overrides(model=name, judge_model=name)


def _data(value: str | None, name: str) -> Path:
    from langchain_tag_bench.data import default_data_path

    return Path(value).expanduser() if value else default_data_path(name)


def _task(args: argparse.Namespace, cache_dir: Path | None) -> Any:
    from langchain_tag.local.models import get_chat_model
    from langchain_tag_bench import tasks

    def extractor() -> Any:
        return get_chat_model(model_config_for(args.llm), role="extractor")

    if args.domain == "nba":
        return tasks.nba_task(
            _data(args.data, "rulearena-nba"),
            limit=args.limit,
            levels=args.levels,
            rules_file=args.rules,
            extractor=extractor,
            cache_dir=cache_dir,
            judge_predicate=args.predicate,
            query=args.query,
            rule_text=args.rule_text,
        )
    if args.domain == "code":
        return tasks.code_task(
            _data(args.data, "humaneval/HumanEval.jsonl.gz"),
            _data(args.pep8, "pep8/pep-0008.rst"),
            limit=args.limit,
            rules_file=args.rules,
            extractor=extractor,
            cache_dir=cache_dir,
            timeout=args.timeout,
        )
    if args.domain == "npov":
        if not args.cases or not args.policy:
            raise ValueError("npov needs --cases FILE and --policy FILE (no policy text ships with the package)")
        grader = get_chat_model(model_config_for(args.grader_llm or args.llm), role="extractor")
        return tasks.npov_task(
            args.cases,
            args.policy,
            grader,
            limit=args.limit,
            rules_file=args.rules,
            extractor=extractor,
            cache_dir=cache_dir,
        )
    return tasks.pep8_task(_data(args.data, "humaneval/HumanEval.jsonl.gz"), limit=args.limit, variants=args.variants)


def _log_record(record: dict[str, Any]) -> None:
    # Without a terminal (a log file, CI) progress is one line per finished item.
    parts = [f"{record['method']} {record['key']}", f"units={record['n_units']}"]
    if "retrieval_scores" in record and record["retrieval_scores"]["recall"] is not None:
        parts.append(f"recall={record['retrieval_scores']['recall']:.2f}")
    scores = record.get("scores") or {}
    parts += [f"{k}={v}" for k, v in scores.items() if isinstance(v, (bool, int, float)) and k != "seconds"][:4]
    parts.append(f"{record['seconds']:.1f}s")
    print("  ".join(parts), file=sys.stderr, flush=True)


def run_bench_command(args: argparse.Namespace) -> int:
    """Run the ``bench`` sub-command; prints the table to stdout and file paths to stderr."""
    from langchain_tag.local.models import get_chat_model
    from langchain_tag.local.weights import default_cache_dir
    from langchain_tag_bench.methods import parse_methods
    from langchain_tag_bench.report import write_report
    from langchain_tag_bench.runner import run_benchmark

    if args.domain == "quality":
        return run_quality_command(args)
    if args.domain == "fit-default":
        return run_fit_default_command(args)
    retrieval_only = args.retrieval_only or args.domain == "pep8"
    default = DEFAULT_RETRIEVAL_METHODS if retrieval_only else DEFAULT_METHODS[args.domain]
    methods = parse_methods(args.methods or default, ks=args.ks)
    cache_dir = Path(args.cache_dir).expanduser() if args.cache_dir else default_cache_dir()
    task = _task(args, cache_dir)
    out = Path(args.out or f"runs/bench-{args.domain}{'-retrieval' if retrieval_only else ''}")
    judge = None
    if any(m.judged for m in methods):
        judge = get_chat_model(model_config_for(args.judge_llm or args.llm), role="judge")
    llm = None if retrieval_only else get_chat_model(model_config_for(args.llm), role="executor")
    tty = sys.stderr.isatty()
    run = run_benchmark(
        task,
        methods,
        out,
        llm=llm,
        judge_llm=judge,
        retrieval_only=retrieval_only,
        threshold=args.threshold,
        max_concurrency=args.max_concurrency,
        show_progress=tty,
        on_record=None if tty else _log_record,
    )
    print(write_report(run))
    stem = "retrieval" if retrieval_only else "results"
    print(
        f"{run.new_items} new records in {run.seconds:.0f} s; records: {out / 'items.jsonl'}; "
        f"table: {out / (stem + '.md')}; plot: {out / (stem + '.png')}",
        file=sys.stderr,
    )
    return 0


def _log_quality_record(record: dict[str, Any]) -> None:
    parts = [f"{record['method']} {record['key']} ({record['split']})", f"units={len(record['units'])}"]
    if "calls" in record:
        parts.append(f"calls={record['calls']}")
    parts.append(f"{record['seconds']:.1f}s")
    print("  ".join(parts), file=sys.stderr, flush=True)


def run_fit_default_command(args: argparse.Namespace) -> int:
    """``bench fit-default``: pool the dev splits of quality runs into one calibration; print its report."""
    from langchain_tag.local.weights import default_cache_dir
    from langchain_tag_bench.fit_default import fit_report, load_run, parse_runs

    if not args.runs:
        print("bench fit-default: --runs SET=RUN_DIR,... is required", file=sys.stderr)
        return 2
    cache_dir = Path(args.cache_dir).expanduser() if args.cache_dir else default_cache_dir()
    runs = {
        name: load_run(
            name,
            path,
            args.row,
            cache_dir=cache_dir,
            pep8_path=args.pep8,
            data_path=args.data,
            centre_inputs=args.centre_inputs,
        )
        for name, path in parse_runs(args.runs).items()
    }
    label = f"{args.row}, centred per input" if args.centre_inputs else args.row
    print(fit_report(runs, label).markdown())
    return 0


def run_quality_command(args: argparse.Namespace) -> int:
    """``bench quality``: judge the set's cases, print the table and write it to ``OUT/quality.md``."""
    from langchain_tag.local.models import get_chat_model
    from langchain_tag.local.weights import default_cache_dir
    from langchain_tag_bench.quality import (
        DEFAULT_QUALITY_METHODS,
        SPLITS,
        load_quality_set,
        parse_quality_methods,
        quality_table,
        run_quality,
    )

    methods = parse_quality_methods(args.methods or DEFAULT_QUALITY_METHODS)
    cache_dir = Path(args.cache_dir).expanduser() if args.cache_dir else default_cache_dir()
    quality_set = load_quality_set(args.quality_set, cache_dir=cache_dir, pep8_path=args.pep8, data_path=args.data)
    out = Path(args.out or f"runs/bench-quality-{quality_set.name}")
    judge = peer_llm = None
    if any(m.judged for m in methods):
        judge = get_chat_model(model_config_for(args.judge_llm or args.llm), role="judge")
    if any(m.peer for m in methods):
        # LangChain's compressors on the judge's model, as an ordinary chat model (free reply, structured output).
        peer_llm = get_chat_model(model_config_for(args.judge_llm or args.llm), role="executor")

    def extractor() -> Any:
        return get_chat_model(model_config_for(args.llm), role="extractor")

    tty = sys.stderr.isatty()
    run = run_quality(
        quality_set,
        judge=judge,
        peer_llm=peer_llm,
        extractor=None if args.rules else extractor,
        rules=args.rules,
        splits=SPLITS if args.split == "both" else (args.split,),
        out_dir=out,
        methods=methods,
        limit=args.limit,
        cache_dir=cache_dir,
        threshold=args.threshold,
        judge_prompt=args.judge_prompt,
        max_concurrency=args.max_concurrency,
        show_progress=tty,
        on_record=None if tty else _log_quality_record,
    )
    table = quality_table(run)
    (out / "quality.md").write_text(table, encoding="utf-8")
    print(table)
    print(
        f"{run.new_records} new records, {run.judge_calls} judge calls in {run.seconds:.0f} s; "
        f"records: {out / 'records.jsonl'}; rules: {out / 'rules.jsonl'}; table: {out / 'quality.md'}",
        file=sys.stderr,
    )
    return 0
