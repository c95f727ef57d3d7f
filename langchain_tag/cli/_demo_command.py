"""``langchain-tag demo``: TAG next to Chroma similarity on a short example policy, offline."""

from __future__ import annotations

import argparse
from typing import Any

from langchain_tag.cli.options import non_negative_int, positive_int

__all__ = ["add_demo_command"]


def add_demo_command(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``demo`` to the subcommands ``sub`` (``common``: the options every subcommand takes)."""
    p = sub.add_parser(
        "demo", parents=[common], help="TAG next to Chroma similarity on a short example policy, offline"
    )
    p.add_argument("--k", type=positive_int, default=2, help="top-k of the similarity column")
    p.add_argument(
        "--refresh",
        action="store_true",
        help="extract and judge afresh, ignoring the extraction store and verdict cache",
    )
    p.add_argument("--no-cache", action="store_true", help="same as --refresh (kept for old scripts)")
    p.add_argument(
        "--extract",
        action="store_true",
        help="extract the rules from the policy live (default: the rules shipped with the package, extracted "
        "from it beforehand by the same extraction)",
    )
    p.add_argument(
        "--check-rounds",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="after a revision, have the judge read it against the matched rules and give the executor up to N "
        "more rounds with the ones it reads as still broken, printing that reading with how often such readings "
        "agreed with ruff on the benchmark (default 0: on the check-loop benchmark no reading at all agreed with "
        "ruff more often, 14 of 15, than the embedded judge's, 7 of 15)",
    )
    p.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from langchain_tag.cli.demo import load_shipped_demo, run_demo
    from langchain_tag.local.models import get_chat_model, get_embeddings
    from langchain_tag.local.weights import default_cache_dir

    run_demo(
        shipped=None if args.extract else load_shipped_demo(),
        check_rounds=args.check_rounds,
        judge=get_chat_model(role="judge"),
        extractor=get_chat_model(role="extractor"),
        executor=get_chat_model(role="executor"),
        embeddings=get_embeddings(),
        k=args.k,
        store=None if args.no_cache or args.refresh else default_cache_dir() / "extraction-store.sqlite",
        verdicts=None if args.no_cache or args.refresh else default_cache_dir() / "demo-verdicts.sqlite",
    )
    return 0
