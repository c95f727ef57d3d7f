"""The ``langchain-tag`` command line: extract, match, run, batch, review, demo, bench.

Models come from :mod:`langchain_tag.local.models`, configured by environment
variables (``LANGCHAIN_TAG_PROVIDER``, ``LANGCHAIN_TAG_BASE_URL``, ...): the
embedded local model by default, or any OpenAI-compatible endpoint.

Errors print one line and exit non-zero; ``--debug`` shows the traceback.
SIGTERM stops a command as Ctrl-C does (exit 143, Ctrl-C 130), and a closed
standard output (``| head``) ends it quietly with 141, as SIGPIPE would.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any, NoReturn

from typing_extensions import override

from langchain_tag import __version__
from langchain_tag.calls.identity import install_redaction
from langchain_tag.cli.batch import add_batch_commands
from langchain_tag.cli.bulk import MATCH_EPILOG, bulk_match_asked, cmd_match_inputs, decisions_model, what_was_kept
from langchain_tag.cli.cascade import CASCADE_EPILOG, add_cascade_options
from langchain_tag.cli.exits import (
    EXIT_INTERRUPTED,
    EXIT_JUDGMENTS_FAILED,
    EXIT_STATUS_HELP,
    EXIT_STDOUT_CLOSED,
    EXIT_TERMINATED,
    Terminated,
    one_line,
    sigterm_as_interrupt,
    stdout_to_devnull,
)
from langchain_tag.cli.options import (
    add_cache_options,
    add_lazy_choice,
    judging_retriever,
    non_negative_int,
    positive_int,
    read_input,
    unit_float,
    verdict_cache,
)
from langchain_tag.cli.review import add_review_command
from langchain_tag.judging.prompts import JUDGE_PROMPTS

__all__ = ["EXIT_JUDGMENTS_FAILED", "build_parser", "configure_logging", "main"]


COMMANDS_GROUP = "langchain_tag.commands"
"""Entry-point group of extra subcommands: each is ``add_parser(subparsers)`` (e.g. the benchmark's ``bench``)."""


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


def _cmd_match(args: argparse.Namespace) -> int:
    from langchain_tag.local.models import ModelConfig, get_chat_model
    from langchain_tag.rules import load_rules

    if bulk_match_asked(args):
        return cmd_match_inputs(args)
    rules = load_rules(args.rules)
    context_tokens = ModelConfig.from_env().context_window()
    judge = decisions_model() if args.decisions else get_chat_model(role="judge")
    retriever = judging_retriever(args, judge, rules, context_tokens=context_tokens)
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
            f"{result.prompt_tokens} prompt + {result.completion_tokens} completion tokens"
            f"{', ' + str(len(result.failed)) + ' unreadable replies counted NO' if result.failed else ''})",
            file=sys.stderr,
        )
    if result.failed:
        ids = ", ".join(j.rule_id for j in result.failed)
        failed = f"{len(result.failed)} of {len(result.judgments)} judgments failed"
        print(f"langchain-tag: {failed} and were counted NO: {ids}", file=sys.stderr)
        return EXIT_JUDGMENTS_FAILED
    return 0


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


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (exit status 2)."""

    @override
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _modes() -> tuple[str, ...]:
    from langchain_tag.graph import MODES

    return MODES


def _domains() -> list[str]:
    from langchain_tag.executors import EXECUTOR_PROMPTS

    return sorted(EXECUTOR_PROMPTS)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = _Parser(
        prog="langchain-tag",
        description="Task-Aligned Retrieval: extract rules, match them to inputs, run the executor.",
        epilog="models: set LANGCHAIN_TAG_PROVIDER=openai with LANGCHAIN_TAG_BASE_URL, LANGCHAIN_TAG_API_KEY and\n"
        "  LANGCHAIN_TAG_MODEL for any OpenAI-compatible endpoint; the default is the embedded local model.\n\n"
        + EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    # --debug after the subcommand too; SUPPRESS keeps a subcommand from resetting one given before it.
    common = _Parser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks and debug logs"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
        type=positive_int,
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
    p.add_argument("--k", type=non_negative_int, help="return at most k rules, highest P(YES) first")
    add_cache_options(p)
    p.add_argument(
        "--max-concurrency",
        type=positive_int,
        default=4,
        metavar="N",
        help="most judgments (model calls) in flight at once (default: %(default)s); with --inputs, enough "
        "inputs are judged side by side to keep that many busy",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    add_cascade_options(p)
    p.set_defaults(func=_cmd_match, usage_error=p.error)

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
        type=positive_int,
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

    add_batch_commands(sub, common)
    add_review_command(sub, common)
    _add_plugin_commands(sub)
    return parser


def _add_plugin_commands(sub: Any) -> None:
    """Add the subcommands other installed distributions register (``langchain-tag bench`` from the benchmark)."""
    from importlib.metadata import entry_points

    for entry in entry_points(group=COMMANDS_GROUP):
        try:
            add_parser = entry.load()
        except Exception as exc:  # a broken plugin must not take the CLI down
            logging.getLogger(__name__).warning("cannot load langchain-tag command %r: %s", entry.name, exc)
            continue
        add_parser(sub)


def configure_logging(debug: bool) -> None:
    """Log warnings (with ``--debug``, everything) to stderr, credentials in URLs masked in every record.

    ``--debug`` lets the HTTP clients' INFO logs through (``httpx``, ``openai``), which print each
    request's URL; :func:`~langchain_tag.calls.identity.install_redaction` masks a base URL's
    ``user:pass@`` and ``?api-key=...`` in them, and in every other record, at the root handlers.
    """
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    install_redaction()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``langchain-tag`` command.

    Returns:
        The exit status: 0, :data:`EXIT_JUDGMENTS_FAILED`, 1 on an error,
        :data:`EXIT_INTERRUPTED` (Ctrl-C), :data:`EXIT_TERMINATED` (SIGTERM) or
        :data:`EXIT_STDOUT_CLOSED` (the reader of standard output went away);
        usage errors exit with 2 (``SystemExit``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.debug)
    try:
        with sigterm_as_interrupt():
            code: Any = args.func(args)
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        stopped = "terminated (SIGTERM)" if terminated else "interrupted"
        print(f"langchain-tag: {stopped}{what_was_kept(args)}", file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (| head): stop quietly, as a Unix tool SIGPIPE ends.
        stdout_to_devnull()
        return EXIT_STDOUT_CLOSED
    except Exception as exc:
        if args.debug:
            raise
        print(f"langchain-tag: error: {one_line(exc)}", file=sys.stderr)
        return 1
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
