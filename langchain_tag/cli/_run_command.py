"""``langchain-tag run``: retrieve the rules (or chunks) with a mode, and run the executor on the input."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from langchain_tag.cli.options import (
    add_cache_options,
    add_lazy_choice,
    non_negative_int,
    positive_int,
    read_input,
    verdict_cache,
)
from langchain_tag.ranges import MAX_CONCURRENCY

__all__ = ["add_run_command"]


def add_run_command(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``run`` to the subcommands ``sub`` (``common``: the options every subcommand takes)."""
    p = sub.add_parser("run", parents=[common], help="retrieve with a mode and run the executor")
    p.add_argument("input", help='the input text, or "-" to read it from stdin')
    p.add_argument("--rules", required=True, help="rule file (JSONL)")
    add_lazy_choice(p, "--mode", _modes, default="tag", about="how the rules are retrieved")
    p.add_argument("--source", nargs="*", help="source documents for the similarity mode's chunks")
    add_lazy_choice(p, "--domain", _domains, default="generic", about="the executor's prompt")
    p.add_argument("--k", type=positive_int, default=10, help="top-k of the similarity mode")
    p.add_argument(
        "--reference-inputs",
        metavar="FILE",
        help="tag mode: JSONL sample of your own unlabelled inputs for the calibration (as in match)",
    )
    add_cache_options(p)
    p.add_argument(
        "--max-concurrency",
        type=MAX_CONCURRENCY.argument(),
        default=4,
        metavar="N",
        help="most judgments (model calls) in flight at once (default: %(default)s)",
    )
    p.add_argument(
        "--check-rounds",
        type=non_negative_int,
        default=1,
        metavar="N",
        help="tag mode: check the revision against the matched rules and give the executor up to N more rounds "
        "with the ones it still breaks (default 1; 0: no check)",
    )
    p.add_argument("--json", action="store_true", help="print JSON: mode, what the executor was given, its output")
    p.set_defaults(func=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    from langchain_tag.graph import build_tag_graph
    from langchain_tag.integrations.loaders import load_document
    from langchain_tag.judging.calibration.defaults import load_reference_inputs
    from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
    from langchain_tag.local.models import get_chat_model, get_embeddings
    from langchain_tag.retrievers import ApplicabilityRetriever
    from langchain_tag.rules import load_rules

    rules = [rule.to_document() for rule in load_rules(args.rules)]
    sources = [load_document(p) for p in args.source or []]
    if args.reference_inputs and args.mode != "tag":
        raise ValueError("--reference-inputs applies to --mode tag only")
    judged = args.mode in ("tag", "relevance")
    judge = ApplicabilityRetriever(
        llm=get_chat_model(role="judge"),
        rules=rules,
        max_concurrency=args.max_concurrency,
        reference_inputs=load_reference_inputs(args.reference_inputs) if args.reference_inputs else None,
        cache=verdict_cache(args) if judged else InMemoryVerdictCache(),
    )
    graph = build_tag_graph(
        get_chat_model(role="executor"),
        retriever=judge if judged else None,
        rules=rules,
        documents=sources,
        mode=args.mode,
        executor=args.domain,
        embeddings=get_embeddings() if args.mode == "similarity" else None,
        k=args.k,
        check_rounds=args.check_rounds,
    )
    state = graph.invoke({"input": read_input(args.input)})
    units = [str(d.metadata.get("rule_id") or d.metadata.get("chunk_id") or d.id) for d in state["retrieved"]]
    print(
        f"mode {args.mode}: {len(units)} {state['unit_kind']} given to the executor: {', '.join(units) or '-'}",
        file=sys.stderr,
    )
    if args.json:
        given = [
            {"id": unit, "text": d.metadata.get("action") if state["unit_kind"] == "rules" else d.page_content}
            for unit, d in zip(units, state["retrieved"], strict=True)
        ]
        payload = {"mode": args.mode, "unit_kind": state["unit_kind"], "given": given, "output": state["output"]}
        print(json.dumps(payload, ensure_ascii=False))
    else:
        print(state["output"])
    return 0


def _modes() -> tuple[str, ...]:
    from langchain_tag.graph import MODES

    return MODES


def _domains() -> list[str]:
    from langchain_tag.executors import EXECUTOR_PROMPTS

    return sorted(EXECUTOR_PROMPTS)
