"""``langchain-tag extract``: rules from documents, into a JSONL rule file."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from langchain_tag.cli.options import positive_int, read_input
from langchain_tag.ranges import MAX_CONCURRENCY

__all__ = ["add_extract_command"]


def add_extract_command(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``extract`` to the subcommands ``sub`` (``common``: the options every subcommand takes)."""
    p = sub.add_parser("extract", parents=[common], help="extract rules from documents into a JSONL file")
    p.add_argument(
        "documents", nargs="+", help='text, Markdown, reStructuredText, HTML or PDF files; "-" reads text from stdin'
    )
    p.add_argument("-o", "--output", required=True, help='rule file to write (JSONL); "-" writes to stdout')
    p.add_argument(
        "--rule-id-prefix",
        default="R",
        help="rule ids are PREFIX-001, PREFIX-002, ...; give each source its own so rule files merge (default: R)",
    )
    p.add_argument("--domain", default="general policy", help='domain name given to the prompts, e.g. "PEP 8"')
    p.add_argument(
        "--task-input",
        help='what the rules will be applied to, named in every phase, e.g. "a Python function" '
        '(default: "whatever the rules are applied to")',
    )
    p.add_argument(
        "--units-per-call",
        type=positive_int,
        default=1,
        help="atomic statements per phase-3 call (default: 1, which suits small local models; "
        "larger batches save calls)",
    )
    p.add_argument("--skip-phases", type=_parse_phases, help="phases to switch off, e.g. 4,5")
    p.add_argument(
        "--field",
        action="append",
        type=_parse_field,
        metavar="NAME=DESCRIPTION",
        help="an extra rule field to ask for (a domain schema), e.g. severity='low, medium or high'; repeatable",
    )
    p.add_argument(
        "--max-concurrency",
        type=MAX_CONCURRENCY.argument(),
        default=2,
        metavar="N",
        help="most model calls in flight at once (default: %(default)s)",
    )
    p.add_argument("--report", help="also write the extraction report as JSON here")
    p.add_argument(
        "--store",
        help="SQLite file of finished LLM calls, so an interrupted run resumes "
        "(default: extraction-store.sqlite in the cache directory)",
    )
    p.add_argument("--no-store", action="store_true", help="keep no finished calls: every run starts afresh")
    p.set_defaults(func=_cmd_extract)


def _stdin_document() -> Any:
    from langchain_core.documents import Document

    return Document(page_content=read_input("-"), id="stdin", metadata={"source": "stdin"})


def _parse_phases(value: str) -> set[int]:
    try:
        phases = {int(p) for p in value.split(",") if p.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected phase numbers like 3 or 4,5, got {value!r}") from None
    if not phases <= {1, 2, 3, 4, 5}:
        raise argparse.ArgumentTypeError(f"phases are 1-5, got {value!r}")
    return phases


def _parse_field(value: str) -> tuple[str, str]:
    name, sep, description = value.partition("=")
    if not sep or not name.strip().isidentifier() or not description.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=DESCRIPTION with NAME an identifier, got {value!r}")
    return name.strip(), description.strip()


def _cmd_extract(args: argparse.Namespace) -> int:
    from langchain_tag.extraction import RuleDocumentTransformer
    from langchain_tag.integrations.loaders import load_document
    from langchain_tag.local.models import get_chat_model
    from langchain_tag.local.weights import default_cache_dir
    from langchain_tag.rules import rules_to_jsonl, save_rules

    if args.documents.count("-") > 1:
        raise ValueError("'-' (stdin) can be given once")
    documents = [_stdin_document() if p == "-" else load_document(p) for p in args.documents]
    store = None if args.no_store else (args.store or default_cache_dir() / "extraction-store.sqlite")
    transformer = RuleDocumentTransformer(
        get_chat_model(role="extractor"),
        domain=args.domain,
        task_input=args.task_input,
        units_per_call=args.units_per_call,
        max_concurrency=args.max_concurrency,
        skip_phases=args.skip_phases or (),
        extra_fields=dict(args.field or []),
        show_progress=True if sys.stderr.isatty() else None,
        store=store,
        rule_id_prefix=args.rule_id_prefix,
    )
    result = transformer.extract(documents)
    print(result.report.summary(), file=sys.stderr)
    if args.report:
        Path(args.report).write_text(json.dumps(result.report.to_dict(), indent=1, default=str), encoding="utf-8")
    if not result.rules:
        print(f"langchain-tag: error: no rules extracted from {', '.join(args.documents)}", file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(rules_to_jsonl(result.rules))
    else:
        save_rules(result.rules, args.output)
    print(f"wrote {len(result.rules)} rules to {'stdout' if args.output == '-' else args.output}", file=sys.stderr)
    return 0
