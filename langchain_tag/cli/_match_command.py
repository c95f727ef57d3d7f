"""``langchain-tag match``: the rules whose condition an input satisfies (with ``--inputs``, every input's)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from typing_extensions import override

from langchain_tag.cli.bulk import MATCH_EPILOG, bulk_match_asked, cmd_match_inputs, decisions_model
from langchain_tag.cli.cascade import CASCADE_EPILOG, add_cascade_options
from langchain_tag.cli.exits import EXIT_JUDGMENTS_FAILED
from langchain_tag.cli.options import (
    add_cache_options,
    judging_retriever,
    positive_int,
    read_input,
    unit_float,
)
from langchain_tag.judging.prompts import JUDGE_PROMPTS
from langchain_tag.ranges import MAX_CONCURRENCY

__all__ = ["add_match_command"]


def add_match_command(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``match`` to the subcommands ``sub`` (``common``: the options every subcommand takes)."""
    p = sub.add_parser(
        "match",
        parents=[common],
        help="list the rules whose condition the input satisfies",
        description="List the rules whose condition the input satisfies; with --inputs, those of every input.",
        epilog=MATCH_EPILOG + "\n" + CASCADE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", nargs="?", help='the input text, or "-" to read it from stdin (or give --inputs)')
    p.add_argument(
        "--inputs",
        metavar="FILE",
        help='JSONL file of inputs (a JSON string or {"id": ..., "text": ...} per line; "-": stdin): match each, '
        "one JSON line per input (see below); rerun to resume from the verdict cache",
    )
    p.add_argument("-o", "--output", metavar="FILE", help='with --inputs: results file (JSONL; default "-": stdout)')
    p.add_argument("--all-pairs", action="store_true", help="with --inputs: also give every pair's raw P(YES)")
    p.add_argument(
        "--unlocked-output",
        action="store_true",
        help="with -o FILE: where FILE cannot be locked (a file system without locks), write it after a warning "
        "rather than refuse it (a second job writing it would go unseen)",
    )
    p.add_argument(
        "--engine",
        choices=("process", "ray"),
        default="process",
        help="with --inputs: judge in this process, or through Ray Data (the ray extra) against the judge "
        "model's OpenAI-compatible endpoint; both write the same records",
    )
    p.add_argument(
        "--decisions",
        action="store_true",
        help="judge through OpenAI's Decisions API (every rule of an input one question of a single request) at "
        "the configured endpoint and judge model (LANGCHAIN_TAG_BASE_URL, LANGCHAIN_TAG_JUDGE_MODEL or "
        "LANGCHAIN_TAG_MODEL, LANGCHAIN_TAG_API_KEY or OPENAI_API_KEY)",
    )
    p.add_argument("--ray-address", metavar="ADDR", help='with --engine ray: a Ray cluster to join (e.g. "auto")')
    p.add_argument(
        "--ray-workers",
        type=positive_int,
        default=1,
        help="with --engine ray: HTTP workers (Ray actors), sharing --max-concurrency between them",
    )
    p.add_argument("--ray-batch-size", type=positive_int, default=16, help="with --engine ray: rows per batch")
    p.add_argument("--rules", required=True, help="rule file (JSONL)")
    p.add_argument("--predicate", choices=sorted(JUDGE_PROMPTS), default="applicability")
    p.add_argument(
        "--threshold",
        type=unit_float,
        help="calibrated score needed when the model gives logprobs (default: the calibration's, else 0.5)",
    )
    p.add_argument("--calibration", help="a calibration JSON file (Calibration.save); default: the model family's")
    p.add_argument("--raw", action="store_true", help="no calibration: threshold raw P(YES)")
    p.add_argument(
        "--reference-inputs",
        metavar="FILE",
        help='JSONL sample of your own unlabelled inputs (8-20; a JSON string or {"text": ...} per line): '
        "score each rule against what it sees on them (the model family's domain-reference default)",
    )
    p.add_argument("--k", type=positive_int, help="return at most k rules, highest P(YES) first")
    add_cache_options(p)
    p.add_argument(
        "--max-concurrency",
        type=MAX_CONCURRENCY.argument(),
        default=4,
        metavar="N",
        help="most judgments (model calls) in flight at once (default: %(default)s); with --inputs, enough "
        "inputs are judged side by side to keep that many busy",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    add_cascade_options(p)
    p.set_defaults(func=_cmd_match, usage_error=p.error)


def _cmd_match(args: argparse.Namespace) -> int:
    from langchain_tag.local.models import ModelConfig, get_chat_model
    from langchain_tag.rules import load_rules

    if bulk_match_asked(args):
        return cmd_match_inputs(args)
    rules = load_rules(args.rules)
    context_tokens = ModelConfig.from_env().context_window()
    judge = decisions_model() if args.decisions else get_chat_model(role="judge")
    retriever = judging_retriever(args, judge, rules, context_tokens=context_tokens)
    with _failures_told_once():
        result = retriever.match(read_input(args.input))
    by_id = {r.rule_id: r for r in rules}
    matched = result.matched if args.k is None else result.matched[: args.k]
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "rule_id": j.rule_id,
                        "rule_name": by_id[j.rule_id].rule_name,
                        "score": j.score,
                        "p_yes": j.p_yes,
                        "action": by_id[j.rule_id].action,
                    }
                    for j in matched
                ],
                ensure_ascii=False,
            )
        )
    else:
        for j in matched:
            score = "" if j.score is None else f"  score={j.score:.2f} P(YES)={j.p_yes:.2f}"
            print(f"{j.rule_id}  {by_id[j.rule_id].rule_name}{score}")
        print(
            f"{len(matched)} of {len(rules)} rules apply ({result.calls} calls, "
            f"{result.prompt_tokens} prompt + {result.completion_tokens} completion tokens)",
            file=sys.stderr,
        )
    if result.failed:
        ids = ", ".join(j.rule_id for j in result.failed)
        failed = f"{len(result.failed)} of {len(result.judgments)} judgments failed"
        first = result.failed[0]
        print(
            f"langchain-tag: {failed} and were counted NO: {ids}; first: {first.rule_id} ({first.error})",
            file=sys.stderr,
        )
        return EXIT_JUDGMENTS_FAILED
    return 0


class _JudgeFailureSummary(logging.Filter):
    """Drops the judge's own summary of failed judgments: the command prints it once, as its last line."""

    @override
    def filter(self, record: logging.LogRecord) -> bool:
        return "were counted as NO" not in record.getMessage()


@contextmanager
def _failures_told_once() -> Iterator[None]:
    """While the command judges, the judge's failure summary is left to the command's own last line."""
    judge_logger = logging.getLogger("langchain_tag.judging.judge")
    quiet = _JudgeFailureSummary()
    judge_logger.addFilter(quiet)
    try:
        yield
    finally:
        judge_logger.removeFilter(quiet)
