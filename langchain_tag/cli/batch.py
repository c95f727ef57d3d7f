"""``langchain-tag batch``: judgments through the OpenAI Batch API (export, submit, status, fetch, import)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from langchain_tag.cli.bulk import write_corpus
from langchain_tag.cli.exits import EXIT_JUDGMENTS_FAILED
from langchain_tag.cli.options import add_judge_options, judging_retriever, positive_int

__all__ = ["add_batch_commands"]


def add_batch_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """``batch export`` and ``batch import``: judgments through the OpenAI Batch API."""
    from langchain_tag.scale.batch_api.ids import MAX_BYTES, MAX_REQUESTS

    batch = sub.add_parser(
        "batch", parents=[common], help="judge through the OpenAI Batch API: export requests, import results"
    )
    steps = batch.add_subparsers(dest="step", required=True, metavar="STEP")
    shared = "the same --inputs, --rules, --model and judging options at export and import"

    p = steps.add_parser(
        "export", parents=[common], help="write Batch API input files for every (input, rule) pair not yet judged"
    )
    p.add_argument("--inputs", required=True, metavar="FILE", help="JSONL file of inputs (as in match --inputs)")
    p.add_argument("--rules", required=True, help="rule file (JSONL)")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for batch-0001.jsonl, ... and mapping.jsonl")
    p.add_argument("--model", required=True, metavar="NAME", help="the batch's model, e.g. gpt-4o-mini")
    p.add_argument("--max-requests", type=positive_int, default=MAX_REQUESTS, help="requests per file (%(default)s)")
    p.add_argument("--max-bytes", type=positive_int, default=MAX_BYTES, help="bytes per file (%(default)s)")
    add_judge_options(p)
    p.set_defaults(func=_cmd_batch_export, max_concurrency=4)

    p = steps.add_parser("import", parents=[common], help=f"record Batch API results in the verdict cache ({shared})")
    p.add_argument("results", nargs="+", metavar="RESULTS", help="downloaded Batch API output and error files")
    p.add_argument("--inputs", required=True, metavar="FILE", help="the inputs file of the export")
    p.add_argument("--rules", required=True, help="the rule file of the export")
    p.add_argument("--model", required=True, metavar="NAME", help="the batch's model, as at export")
    p.add_argument("--mapping", metavar="FILE", help="the export's mapping.jsonl (default: rebuilt from the inputs)")
    p.add_argument("-o", "--output", metavar="FILE", help='then write each input\'s matched rules here ("-": stdout)')
    p.add_argument("--all-pairs", action="store_true", help="with -o: also give every pair's raw P(YES)")
    p.add_argument(
        "--unlocked-output",
        action="store_true",
        help="with -o FILE: where FILE cannot be locked, write it after a warning rather than refuse it",
    )
    add_judge_options(p)
    p.set_defaults(func=_cmd_batch_import, max_concurrency=4)

    for step, func, text in (
        ("submit", _cmd_batch_submit, "upload an export's request files and create their batches (once each)"),
        ("status", _cmd_batch_status, "show the state of an export's batches"),
        ("fetch", _cmd_batch_fetch, "download the output and error files of an export's finished batches"),
    ):
        p = steps.add_parser(step, parents=[common], help=text)
        p.add_argument("export", metavar="DIR", help="the directory batch export wrote")
        p.add_argument(
            "--base-url",
            default=os.environ.get("LANGCHAIN_TAG_BASE_URL") or None,
            help="the OpenAI-compatible endpoint (default: LANGCHAIN_TAG_BASE_URL, else the OpenAI API)",
        )
        p.set_defaults(func=func)


def _batch_retriever(args: argparse.Namespace) -> tuple[list[Any], Any]:
    """The inputs, and a retriever whose judge is named as the batch's model and never calls one."""
    from langchain_tag.rules import load_rules
    from langchain_tag.scale.batch_api import BatchResultsModel
    from langchain_tag.scale.bulk import read_inputs

    items = read_inputs(args.inputs)
    rules = load_rules(args.rules)
    return items, judging_retriever(args, BatchResultsModel(model_name=args.model), rules)


def _cmd_batch_export(args: argparse.Namespace) -> int:
    from langchain_tag.scale.batch_api import MAPPING_FILE, BatchMapping, export_openai_batch

    items, retriever = _batch_retriever(args)
    files = export_openai_batch(
        (retriever, items),
        args.out,
        model_name=args.model,
        max_requests=args.max_requests,
        max_bytes=args.max_bytes,
    )
    mapping = Path(args.out) / MAPPING_FILE
    requests = len(BatchMapping.load(mapping))
    if not files:
        print(f"nothing to export: every judgment of {len(items)} inputs is in the verdict cache", file=sys.stderr)
    else:
        print(
            f"wrote {requests} requests for {len(items)} inputs in {len(files)} file(s): "
            f"{', '.join(str(f) for f in files)}; keep {mapping} for batch import",
            file=sys.stderr,
        )
    return 0


def _cmd_batch_import(args: argparse.Namespace) -> int:
    from langchain_tag.scale.batch_api import BatchMapping, batch_mapping, import_openai_batch

    items, retriever = _batch_retriever(args)
    if args.mapping:  # the export's mapping: each reply must answer a request of the current inputs and rules
        summary = import_openai_batch(args.results, retriever, BatchMapping.load(args.mapping), inputs=items)
    else:  # rebuilt from the current inputs and rules, so it names their current requests
        summary = import_openai_batch(args.results, retriever, batch_mapping((retriever, items)))
    print(summary.summary(), file=sys.stderr)
    for kind, failures in (("failed", summary.failures), ("refused", summary.refused), ("conflict", summary.conflicts)):
        for failure in failures[:5]:
            pair = f" {failure.custom_id} (input {failure.input_id}, rule {failure.rule_id})" if failure.rule_id else ""
            pair = pair or (f" {failure.custom_id}" if failure.custom_id else "")
            print(f"  {failure.where}:{pair} {kind}: {failure.error}", file=sys.stderr)
        if len(failures) > 5:
            print(f"  ... and {len(failures) - 5} more {kind}", file=sys.stderr)
    code = write_corpus(args, items, retriever) if args.output else 0
    return EXIT_JUDGMENTS_FAILED if code or not summary.complete else 0


def _batch_client(args: argparse.Namespace) -> Any:
    """The OpenAI client of the batch steps: ``--base-url``, the key of ``LANGCHAIN_TAG_API_KEY`` or the environment.

    It keeps the chat judge's deadline and retries (``LANGCHAIN_TAG_TIMEOUT``, ``LANGCHAIN_TAG_MAX_RETRIES``).
    """
    import openai

    from langchain_tag.local.models import ModelConfig

    cfg = ModelConfig.from_env()
    key = os.environ.get("LANGCHAIN_TAG_API_KEY") or os.environ.get("OPENAI_API_KEY") or None
    return openai.OpenAI(base_url=args.base_url, api_key=key, timeout=cfg.timeout, max_retries=cfg.max_retries)


def _print_batches(batches: Iterable[Any]) -> None:
    for batch in batches:
        counts = batch.counts or {}
        done = f" {counts.get('completed', 0)}/{counts.get('total', 0)} done" if counts else ""
        failed = f", {counts['failed']} failed" if counts.get("failed") else ""
        print(f"{batch.file}\t{batch.batch_id}\t{batch.status}{done}{failed}")


def _cmd_batch_submit(args: argparse.Namespace) -> int:
    from langchain_tag.scale.batch_api.client import submit_openai_batch

    _print_batches(submit_openai_batch(args.export, client=_batch_client(args)))
    return 0


def _cmd_batch_status(args: argparse.Namespace) -> int:
    from langchain_tag.scale.batch_api.client import openai_batch_status

    _print_batches(openai_batch_status(args.export, client=_batch_client(args)))
    return 0


def _cmd_batch_fetch(args: argparse.Namespace) -> int:
    from langchain_tag.scale.batch_api.client import fetch_openai_batch

    for path in fetch_openai_batch(args.export, client=_batch_client(args)):
        print(path)
    return 0
