"""``langchain-tag review``: the rules over their source, and how they matched, as one HTML page."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from langchain_tag.cli.options import positive_int
from langchain_tag.ranges import THRESHOLD

__all__ = ["add_review_command"]

REVIEW_EPILOG = """\
The page needs no network and reads without JavaScript; open it from disk. Give the verdicts of
`langchain-tag match --inputs inputs.jsonl --rules rules.jsonl --all-pairs -o verdicts.jsonl` (without
--all-pairs only the matched pairs' scores are known), the same --inputs to show the inputs' text, and the
--threshold the job ran with. A gold file holds {"id": input id, "rule_ids": [...]} per line.
"""


def add_review_command(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``review``: write the review page of a rule file."""
    p = sub.add_parser(
        "review",
        parents=[common],
        help="write an HTML page showing the rules over their source document, and how they matched",
        description="Write one self-contained HTML page: the source document with each rule's span highlighted "
        "and linked to its card; with --verdicts, per rule its matches, score distribution and the inputs nearest "
        "the threshold; with --gold, precision, recall and F1 and the threshold that would maximise F1.",
        epilog=REVIEW_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("rules", help="rule file (JSONL)")
    p.add_argument("--source", required=True, help="the document the rules were extracted from")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML page to write")
    p.add_argument("--report", metavar="FILE", help="the extraction report (extract --report): uncovered sentences")
    p.add_argument("--verdicts", metavar="FILE", help="the verdicts of match --inputs (JSONL)")
    p.add_argument("--inputs", metavar="FILE", help="the inputs file the verdicts were made on, to show its texts")
    p.add_argument("--gold", metavar="FILE", help='gold rule ids per input: {"id": ..., "rule_ids": [...]} per line')
    p.add_argument(
        "--threshold",
        type=THRESHOLD.argument(),
        help="the threshold the verdicts were made at (default: the lowest matched score, said so on the page)",
    )
    p.add_argument("--title", help="the page's title")
    p.add_argument(
        "--cut-at",
        type=positive_int,
        default=2000,
        metavar="N",
        help="inputs longer than N characters are cut in the page, their full text written beside it "
        "(default: %(default)s)",
    )
    p.set_defaults(func=cmd_review, usage_error=p.error)


def cmd_review(args: argparse.Namespace) -> int:
    """Write the page; print where it went."""
    from langchain_tag.review import render_review

    if args.gold and not args.verdicts:
        args.usage_error("--gold needs --verdicts (the gold is scored against them)")
    path = render_review(
        args.rules,
        args.source,
        args.output,
        report=args.report,
        verdicts=args.verdicts,
        inputs=args.inputs,
        gold=args.gold,
        threshold=args.threshold,
        title=args.title,
        cut_at=args.cut_at,
    )
    print(f"wrote {path}", file=sys.stderr)
    return 0
