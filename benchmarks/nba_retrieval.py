"""Retrieval quality on RuleArena NBA against the gold ``relevant_rules``.

Each problem's scenario text (team situations, player situations,
operations) is the query; the 55-rule catalog is the rule set; the gold is the
problem's ``relevant_rules`` restricted to ids present in the catalog. No LLM
grades anything: retrieved rule ids are compared with gold ids directly.

Methods:

* ``similarity``: top-k rules by embedding similarity (all-MiniLM-L6-v2),
  one row per k.
* ``tag``: the pairwise judge with the applicability predicate (or
  ``--tag-predicate nba``), one judgment per (problem, rule) pair.
* ``relevance``: the same pairwise judge asked whether each rule is relevant.

Usage::

    python benchmarks/nba_retrieval.py --methods similarity
    python benchmarks/nba_retrieval.py --methods tag --limit 3 --out runs/nba

The judge methods start the local llama.cpp model (or use the endpoint the
``LANGCHAIN_TAG_*`` environment variables configure); they make 55 calls per
problem.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_tag.bench.metrics import OVERALL, RetrievalScore, RetrievalSummary, score_retrieval, summarize_by_group
from langchain_tag.bench.nba import (
    DEFAULT_KS,
    LEVELS,
    QUERY_MODES,
    RULE_TEXTS,
    JudgeRun,
    NbaDataError,
    NbaProblem,
    catalog_rules,
    gold_coverage,
    gold_in_catalog,
    judge_retrieval,
    load_problems,
    similarity_topk,
)
from langchain_tag.rules import Rule

METHODS = ("similarity", "tag", "relevance")
DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "rulearena-nba"


@dataclass
class MethodRun:
    """Retrieved ids of one method (or one similarity cut-off) for every problem."""

    name: str
    retrieved: list[tuple[str, ...]]
    judge_runs: list[JudgeRun] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _csv_ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _methods(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [n for n in names if n not in METHODS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"methods must be a comma-separated subset of {','.join(METHODS)}")
    return names


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Read the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA if DEFAULT_DATA.is_dir() else None,
        help=f"RuleArena NBA data directory (default: {DEFAULT_DATA}, if it exists)",
    )
    parser.add_argument(
        "--methods", type=_methods, default=("similarity",), help="comma-separated: similarity,tag,relevance"
    )
    parser.add_argument("--limit", type=int, default=None, help="at most N problems per level")
    parser.add_argument("--levels", type=_csv_ints, default=LEVELS, help="comma-separated levels (default 0,1,2)")
    parser.add_argument("--ks", type=_csv_ints, default=DEFAULT_KS, help="similarity cut-offs (default 5,10,15,20)")
    parser.add_argument(
        "--query",
        choices=QUERY_MODES,
        default="text",
        help="similarity query: the titled scenario (default), its lines without titles, or the operations only",
    )
    parser.add_argument(
        "--rule-text",
        choices=RULE_TEXTS,
        default="document",
        help="what similarity embeds per rule: the rule document (default) or the condition (the catalog description)",
    )
    parser.add_argument("--threshold", type=float, default=0.5, help="judge P(YES) threshold (default 0.5)")
    parser.add_argument(
        "--tag-predicate",
        choices=("applicability", "nba"),
        default="applicability",
        help="judge prompt of the tag method",
    )
    parser.add_argument("--max-concurrency", type=int, default=2, help="judgments in flight at once (default 2)")
    parser.add_argument(
        "--out", type=Path, default=None, help="directory for one JSONL file of per-item results per method"
    )
    args = parser.parse_args(argv)
    if args.data is None:
        parser.error(f"no NBA data directory: {DEFAULT_DATA} does not exist; pass one with --data PATH")
    return args


def _progress(method: str, total: int) -> Any:
    done = [0]

    def report(problem: NbaProblem, run: JudgeRun) -> None:
        done[0] += 1
        print(
            f"[{method}] {done[0]}/{total} {problem.key}: {len(run.matched)} matched, "
            f"{run.calls} calls, {run.seconds:.1f}s",
            file=sys.stderr,
            flush=True,
        )

    return report


def run_methods(args: argparse.Namespace, problems: list[NbaProblem], rules: list[Rule]) -> list[MethodRun]:
    """Run every requested method over the problems."""
    runs: list[MethodRun] = []
    if "similarity" in args.methods:
        from langchain_tag.models import get_embeddings

        start = time.perf_counter()
        ranked = similarity_topk(
            problems, rules, get_embeddings(), ks=args.ks, query=args.query, rule_text=args.rule_text
        )
        seconds = time.perf_counter() - start
        for k in sorted(set(args.ks)):
            runs.append(MethodRun(f"similarity@{k}", [r[k] for r in ranked], extra={"seconds_total": seconds}))
    judged = [m for m in args.methods if m in ("tag", "relevance")]
    if judged:
        from langchain_tag.models import get_chat_model

        llm = get_chat_model(role="judge")
        for method in judged:
            predicate = args.tag_predicate if method == "tag" else "relevance"
            name = method if predicate in ("applicability", "relevance") else f"{method}[{predicate}]"
            judge_runs = judge_retrieval(
                problems,
                rules,
                llm,
                predicate=predicate,
                threshold=args.threshold,
                max_concurrency=args.max_concurrency,
                on_result=_progress(name, len(problems)),
            )
            runs.append(MethodRun(name, [r.matched for r in judge_runs], judge_runs=judge_runs))
    return runs


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _level_name(group: Any) -> str:
    return "all" if group == OVERALL else f"L{group}"


def score_run(run: MethodRun, problems: list[NbaProblem], golds: list[tuple[str, ...]]) -> list[RetrievalScore]:
    """Item scores of one method."""
    return [score_retrieval(retrieved, gold) for retrieved, gold in zip(run.retrieved, golds, strict=True)]


def retrieval_table(runs: list[MethodRun], problems: list[NbaProblem], golds: list[tuple[str, ...]]) -> str:
    """The markdown table: one row per method and level, then the overall row."""
    lines = [
        "| method | level | n | recall | precision | F1 | mean #rules | mean #gold |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        scores = score_run(run, problems, golds)
        summaries: dict[Any, RetrievalSummary] = summarize_by_group(
            zip((p.level for p in problems), scores, strict=True)
        )
        for group, s in summaries.items():
            lines.append(
                f"| {run.name} | {_level_name(group)} | {s.n} | {_fmt(s.recall)} | {_fmt(s.precision)} | "
                f"{_fmt(s.f1)} | {s.mean_retrieved:.1f} | {s.mean_gold:.1f} |"
            )
    return "\n".join(lines)


def cost_table(runs: list[MethodRun]) -> str | None:
    """Per-problem cost of the judge methods, or ``None`` if none ran."""
    judged = [r for r in runs if r.judge_runs]
    if not judged:
        return None
    lines = [
        "| method | n | calls/problem | prompt tokens/problem | completion tokens/problem | seconds/problem "
        "| failed judgments |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in judged:
        jr = run.judge_runs or []
        n = len(jr)
        lines.append(
            f"| {run.name} | {n} | {sum(r.calls for r in jr) / n:.1f} | {sum(r.prompt_tokens for r in jr) / n:.0f} | "
            f"{sum(r.completion_tokens for r in jr) / n:.1f} | {sum(r.seconds for r in jr) / n:.1f} | "
            f"{sum(len(r.failed) for r in jr)} |"
        )
    return "\n".join(lines)


def write_jsonl(out_dir: Path, runs: list[MethodRun], problems: list[NbaProblem], golds: list[tuple[str, ...]]) -> None:
    """One ``<method>.jsonl`` per method with each item's ids and scores."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for run in runs:
        scores = score_run(run, problems, golds)
        safe = run.name.replace("@", "_at_").replace("[", "_").replace("]", "")
        with (out_dir / f"nba_{safe}.jsonl").open("w", encoding="utf-8") as handle:
            for i, (problem, gold, score) in enumerate(zip(problems, golds, scores, strict=True)):
                item: dict[str, Any] = {
                    "method": run.name,
                    "key": problem.key,
                    "level": problem.level,
                    "index": problem.index,
                    "gold": list(gold),
                    "gold_missing_from_catalog": [g for g in problem.gold if g not in gold],
                    "retrieved": list(run.retrieved[i]),
                    "recall": score.recall,
                    "precision": score.precision,
                    "f1": score.f1,
                }
                if run.judge_runs:
                    jr = run.judge_runs[i]
                    item.update(
                        calls=jr.calls,
                        prompt_tokens=jr.prompt_tokens,
                        completion_tokens=jr.completion_tokens,
                        seconds=round(jr.seconds, 3),
                        failed=list(jr.failed),
                        p_yes=jr.probabilities,
                    )
                handle.write(json.dumps(item) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its tables."""
    args = parse_args(argv)
    try:
        problems = load_problems(args.data, levels=args.levels, limit=args.limit)
        rules = catalog_rules(args.data)
    except (NbaDataError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    catalog_ids = {r.rule_id for r in rules}
    golds = [gold_in_catalog(p, catalog_ids) for p in problems]
    coverage = gold_coverage(problems, catalog_ids)
    counts = ", ".join(f"L{lv}={sum(p.level == lv for p in problems)}" for lv in args.levels)

    print(f"# RuleArena NBA retrieval ({args.data})\n")
    print(f"problems: {len(problems)} ({counts}; exact duplicates dropped); catalog rules: {len(rules)}")
    print(
        f"gold ids: {coverage.n_gold}, of which {coverage.n_missing} ({len(coverage.missing_ids)} distinct) are not in "
        f"the catalog, in {coverage.problems_affected} problems; scores use the gold restricted to the catalog"
    )
    if "similarity" in args.methods:
        print(f"similarity: query={args.query}, rule text={args.rule_text}, embeddings=all-MiniLM-L6-v2")
    if any(m in args.methods for m in ("tag", "relevance")):
        print(f"judge: tag predicate={args.tag_predicate}, threshold={args.threshold}")
    print()
    runs = run_methods(args, problems, rules)
    print(retrieval_table(runs, problems, golds))
    costs = cost_table(runs)
    if costs:
        print()
        print(costs)
    if args.out is not None:
        write_jsonl(args.out, runs, problems, golds)
        print(f"\nper-item results written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
