"""The ``langchain-tag`` command line: extract, match, run, batch, demo, bench.

Models come from :mod:`langchain_tag.local.models`, configured by environment
variables (``LANGCHAIN_TAG_PROVIDER``, ``LANGCHAIN_TAG_BASE_URL``, ...): the
embedded local model by default, or any OpenAI-compatible endpoint.

Errors print one line and exit non-zero; ``--debug`` shows the traceback.
SIGTERM stops a command as Ctrl-C does (exit 143, Ctrl-C 130), and a closed
standard output (``| head``) ends it quietly with 141, as SIGPIPE would.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from typing_extensions import override

from langchain_tag.calls.identity import install_redaction, redact_urls
from langchain_tag.cli.cascade import CASCADE_EPILOG, add_cascade_options
from langchain_tag.cli.output import write_records
from langchain_tag.executors import EXECUTOR_PROMPTS
from langchain_tag.graph import MODES
from langchain_tag.judging.prompts import JUDGE_PROMPTS

__all__ = ["main"]

EXIT_JUDGMENTS_FAILED = 3
"""Exit status of ``match`` when some judgments failed (unreadable replies or provider errors counted as NO)."""

EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as a shell reports a Unix tool the signal ended."""

EXIT_TERMINATED = 143
"""Exit status after SIGTERM (128 + SIGTERM), which stops a command as Ctrl-C does."""

EXIT_STDOUT_CLOSED = 141
"""Exit status when the reader of standard output went away (128 + SIGPIPE, what ``yes | head -1`` gives ``yes``)."""

COMMANDS_GROUP = "langchain_tag.commands"
"""Entry-point group of extra subcommands: each is ``add_parser(subparsers)`` (e.g. the benchmark's ``bench``)."""


def _read_input(value: str) -> str:
    text = sys.stdin.read() if value == "-" else value
    if not text.strip():
        raise ValueError("the input is empty")
    return text


def _stdin_document() -> Any:
    from langchain_core.documents import Document

    return Document(page_content=_read_input("-"), id="stdin", metadata={"source": "stdin"})


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


def _int_at_least(minimum: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum``, named ``what`` in the usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value

    return parse


_positive_int = _int_at_least(1, "a positive integer")
_non_negative_int = _int_at_least(0, "a non-negative integer")


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


def _verdict_cache(args: argparse.Namespace) -> Any:
    """The judge's verdict cache: ``--verdicts FILE`` (default: ``verdicts.sqlite`` in the cache directory).

    Kept across runs, so a calibration's reference judgments and any pair
    judged before cost no call; ``--no-cache`` keeps verdicts for this run only.
    """
    from langchain_tag.calls.verdict_cache import InMemoryVerdictCache, SQLiteVerdictCache
    from langchain_tag.local.weights import default_cache_dir

    if args.no_cache:
        return InMemoryVerdictCache()
    return SQLiteVerdictCache(Path(args.verdicts) if args.verdicts else default_cache_dir() / "verdicts.sqlite")


def _cmd_match(args: argparse.Namespace) -> int:
    from langchain_tag.judging.calibration.defaults import load_reference_inputs
    from langchain_tag.judging.calibration.model import Calibration
    from langchain_tag.local.models import ModelConfig, get_chat_model
    from langchain_tag.retrievers import ApplicabilityRetriever
    from langchain_tag.rules import load_rules

    if _bulk_match_asked(args):
        return _cmd_match_inputs(args)
    rules = load_rules(args.rules)
    retriever = ApplicabilityRetriever(
        llm=get_chat_model(role="judge"),
        context_tokens=ModelConfig.from_env().context_window(),
        rules=rules,
        predicate=args.predicate,
        threshold=args.threshold,
        calibration=None if args.raw else (Calibration.load(args.calibration) if args.calibration else "default"),
        reference_inputs=load_reference_inputs(args.reference_inputs) if args.reference_inputs else None,
        max_concurrency=args.max_concurrency,
        cache=_verdict_cache(args),
    )
    result = retriever.match(_read_input(args.input))
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


def _bulk_match_asked(args: argparse.Namespace) -> bool:
    """Whether ``match`` was given ``--inputs FILE`` (many inputs) rather than one input; usage errors for a mix."""
    if args.inputs is None:
        if args.input is None:
            args.usage_error('give the input text (or "-" for stdin), or --inputs FILE for a JSONL file of inputs')
        if args.output is not None or args.all_pairs or args.engine != "process" or args.cascade:
            args.usage_error("-o/--output, --all-pairs, --engine and --cascade go with --inputs FILE")
        return False
    if args.input is not None:
        args.usage_error("give either one input or --inputs FILE, not both")
    if args.cascade and (args.engine != "process" or args.decisions):
        args.usage_error("--cascade runs in this process with a chat judge: not with --engine ray or --decisions")
    if args.k is not None:
        args.usage_error("--k applies to a single input; --inputs lists every matched rule")
    return True


def _judging_retriever(args: argparse.Namespace, llm: Any, rules: list[Any], context_tokens: int | None = None) -> Any:
    """An applicability retriever configured by the judging options (predicate, calibration, cache, ...)."""
    from langchain_tag.judging.calibration.defaults import load_reference_inputs
    from langchain_tag.judging.calibration.model import Calibration
    from langchain_tag.retrievers import ApplicabilityRetriever

    return ApplicabilityRetriever(
        llm=llm,
        context_tokens=context_tokens,
        rules=rules,
        predicate=args.predicate,
        threshold=args.threshold,
        calibration=None if args.raw else (Calibration.load(args.calibration) if args.calibration else "default"),
        reference_inputs=load_reference_inputs(args.reference_inputs) if args.reference_inputs else None,
        max_concurrency=args.max_concurrency,
        cache=_verdict_cache(args),
    )


def _cmd_match_inputs(args: argparse.Namespace) -> int:
    """``match --inputs FILE``: every input against every rule, one JSON line per input.

    The records and exit statuses are those the ``match --help`` epilog lists
    (:data:`MATCH_EPILOG`); the records are :func:`~langchain_tag.scale.bulk.match_corpus`'s.
    """
    from langchain_tag.local.models import ModelConfig, get_chat_model
    from langchain_tag.rules import load_rules
    from langchain_tag.scale.bulk import check_output_path

    items = _bulk_inputs(args.inputs)  # a bad line, or no input at all, is refused before any model starts
    if args.output not in (None, "-"):
        check_output_path(args.output)  # and so is a place the results could not be written to
    rules = load_rules(args.rules)
    judge = _decisions_model() if args.decisions else get_chat_model(role="judge")
    retriever = _judging_retriever(args, judge, rules, context_tokens=ModelConfig.from_env().context_window())
    if args.cascade:
        from langchain_tag.cli.cascade import run_cascade

        return run_cascade(args, items, retriever)
    return _write_corpus(args, items, retriever)


def _decisions_model() -> Any:
    """An ``OpenAIDecisions`` judge at the configured endpoint, with the configured judge model and key."""
    from langchain_tag.errors import require_extra
    from langchain_tag.local.models import ModelConfig

    require_extra("langchain_openai", "openai")
    from langchain_openai.decisions import OpenAIDecisions
    from pydantic import SecretStr

    cfg = ModelConfig.from_env()
    model = cfg.model_for("judge")
    if not model:
        raise ValueError(
            "--decisions needs the judge model's name: set LANGCHAIN_TAG_JUDGE_MODEL or LANGCHAIN_TAG_MODEL"
        )
    key = SecretStr(cfg.api_key) if cfg.api_key else None
    return OpenAIDecisions(model=model, base_url=cfg.base_url, api_key=key, max_retries=cfg.max_retries)


def _bulk_inputs(value: str) -> list[Any]:
    """The inputs of ``--inputs FILE`` ("-": standard input, read as UTF-8); refused when there are none."""
    from langchain_tag.scale.inputs import InputsError, read_inputs, read_inputs_from

    stdin = value == "-"
    items = read_inputs_from(getattr(sys.stdin, "buffer", sys.stdin), "stdin") if stdin else read_inputs(value)
    if not items:
        raise InputsError(
            f"{'stdin' if stdin else value}: no inputs (no line holds one); "
            'write one JSON string or {"id": ..., "text": ...} per line',
            path=None if stdin else Path(value),
        )
    return items


def _with_unsendable(
    args: argparse.Namespace, items: list[Any], retriever: Any, judge: Callable[[list[Any]], Iterable[dict[str, Any]]]
) -> Iterator[dict[str, Any]]:
    """``judge``'s records of the inputs it can be given, and a failure record for each it cannot, in input order.

    An input whose text UTF-8 cannot encode (a lone surrogate) fails alone,
    its error naming it and its line, as an input none of whose pairs could be
    judged; the other inputs are judged as usual. The in-process job does this
    itself (:func:`~langchain_tag.scale.bulk.match_corpus`); the Ray engine's
    inputs are set aside here, so both engines write the same record.
    """
    from langchain_tag.scale.bulk import failure_record, retriever_rules
    from langchain_tag.scale.inputs import encoding_error

    errors = {item.id: error for item in items if (error := encoding_error(item)) is not None}
    if not errors:
        yield from judge(items)
        return
    sendable = [item for item in items if item.id not in errors]
    judged = iter(judge(sendable) if sendable else ())
    rules = retriever_rules(retriever)
    for item in items:
        if item.id in errors:
            yield failure_record(item, rules, errors[item.id], all_pairs=args.all_pairs)
        else:
            yield next(judged)


def _write_corpus(args: argparse.Namespace, items: list[Any], retriever: Any) -> int:
    """Match every input, write one JSON line each to ``args.output`` (stdout for "-"), and sum up on stderr."""
    from langchain_tag.scale.bulk import match_corpus

    tally = {"matched": 0, "failed": 0, "inputs_failed": 0}

    def counted(results: Any) -> Any:
        for record in results:
            tally["matched"] += len(record["matched"])
            tally["failed"] += len(record["failed"])
            tally["inputs_failed"] += bool(record["failed"])
            yield record

    def judge(sendable: list[Any]) -> Iterable[dict[str, Any]]:
        if getattr(args, "engine", "process") == "ray":
            return _ray_records(args, sendable, retriever)
        return match_corpus(sendable, retriever, all_pairs=args.all_pairs)

    ray = getattr(args, "engine", "process") == "ray"
    results = counted(_with_unsendable(args, items, retriever, judge) if ray else judge(items))
    where = write_records(results, args.output)
    failed = f", {tally['failed']} failed judgments on {tally['inputs_failed']} inputs" if tally["failed"] else ""
    print(f"{len(items)} inputs, {tally['matched']} matched rules{failed}; wrote {where}", file=sys.stderr)
    if not items:
        print(f"langchain-tag: {args.inputs} holds no inputs", file=sys.stderr)
    return EXIT_JUDGMENTS_FAILED if tally["failed"] else 0


def _ray_records(args: argparse.Namespace, items: list[Any], retriever: Any) -> list[dict[str, Any]]:
    """``match --inputs FILE --engine ray``: judge every pair through Ray Data, then one record per input.

    The records are those the in-process job writes (``bulk.result_record``),
    so the two engines' output files can be compared byte for byte.
    """
    from langchain_tag.scale.bulk import failure_record, result_record, retriever_rules
    from langchain_tag.scale.ray_data import init_local_ray, judge_with_ray

    init_local_ray(verbose=args.debug, **({"address": args.ray_address} if args.ray_address else {}))
    run = judge_with_ray(
        retriever,
        [item.text for item in items],
        concurrency=args.ray_workers,
        batch_size=args.ray_batch_size,
        max_concurrency=args.max_concurrency,
    )
    print(
        f"ray: {run.requested} judgments needed, {run.cached} in the verdict cache, {run.sent} sent "
        f"in {run.passes} pass(es), {run.seconds:.1f} s ({run.judgments_per_second:.2f} judgments/s), "
        f"{len(run.failures)} failed",
        file=sys.stderr,
    )
    rules = retriever_rules(retriever)
    return [
        failure_record(item, rules, run.input_errors[i], all_pairs=args.all_pairs)
        if i in run.input_errors
        else result_record(item, result, all_pairs=args.all_pairs)
        for i, (item, result) in enumerate(zip(items, run.results, strict=True))
    ]


def _batch_retriever(args: argparse.Namespace) -> tuple[list[Any], Any]:
    """The inputs, and a retriever whose judge is named as the batch's model and never calls one."""
    from langchain_tag.rules import load_rules
    from langchain_tag.scale.batch_api import BatchResultsModel
    from langchain_tag.scale.bulk import read_inputs

    items = read_inputs(args.inputs)
    rules = load_rules(args.rules)
    return items, _judging_retriever(args, BatchResultsModel(model_name=args.model), rules)


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
    code = _write_corpus(args, items, retriever) if args.output else 0
    return EXIT_JUDGMENTS_FAILED if code or not summary.complete else 0


def _cmd_run(args: argparse.Namespace) -> int:
    from langchain_tag.calls.verdict_cache import InMemoryVerdictCache
    from langchain_tag.graph import build_tag_graph
    from langchain_tag.integrations.loaders import load_document
    from langchain_tag.judging.calibration.defaults import load_reference_inputs
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
        cache=_verdict_cache(args) if judged else InMemoryVerdictCache(),
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
    state = graph.invoke({"input": _read_input(args.input)})
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


MATCH_EPILOG = """\
with --inputs, one JSON line per input, in input order:
  {"id": ID, "matched": [{"rule_id": ..., "score": ..., "p_yes": ...}, ...],
   "failed": [{"rule_id": ..., "error": ...}, ...]}
  "matched" holds the rules that apply, best score first; "score" (calibrated) and
  "p_yes" (the model's P(YES)) are null when the model gives no logprobs. A pair
  whose judgment failed (an unreadable reply, a provider error) is listed under
  "failed" and counted NO. An input none of whose pairs could be judged (every call
  failed, too long for the model, a text UTF-8 cannot encode) also gets "error",
  with every rule under "failed". --all-pairs adds "pairs": [{"rule_id": ...,
  "applies": ..., "p_yes": ..., "score": ...}, ...], every rule in rule order.
  -o FILE appears whole or not at all: it is written beside FILE and renamed over it.

exit status:
  0    every judgment was made
  3    some judgments failed (see "failed"); the others are written
  1    an error: a file that cannot be read or written, the model unreachable, ...
  2    a usage error
  130  Ctrl-C, 143 SIGTERM: the judgments made so far stay in the verdict cache
       (rerun the same command to resume); -o FILE is left as it was
  141  standard output was closed early (e.g. "| head"), as a Unix tool SIGPIPE ends
"""
"""The ``match --help`` epilog: the records ``match --inputs`` writes and the exit statuses."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (exit status 2)."""

    @override
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _add_cache_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--verdicts",
        metavar="FILE",
        help="SQLite verdict cache kept across runs (default: verdicts.sqlite in the cache directory)",
    )
    p.add_argument("--no-cache", action="store_true", help="keep verdicts for this run only")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = _Parser(
        prog="langchain-tag",
        description="Task-Aligned Retrieval: extract rules, match them to inputs, run the executor.",
        epilog="Models: set LANGCHAIN_TAG_PROVIDER=openai with LANGCHAIN_TAG_BASE_URL / LANGCHAIN_TAG_API_KEY / "
        "LANGCHAIN_TAG_MODEL for any OpenAI-compatible endpoint; the default is the embedded local model.",
    )
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
        type=_positive_int,
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
        type=_positive_int,
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
        type=_positive_int,
        default=1,
        help="with --engine ray: HTTP workers (Ray actors), sharing --max-concurrency between them",
    )
    p.add_argument("--ray-batch-size", type=_positive_int, default=16, help="with --engine ray: rows per batch")
    p.add_argument("--rules", required=True, help="rule file (JSONL)")
    p.add_argument("--predicate", choices=sorted(JUDGE_PROMPTS), default="applicability")
    p.add_argument(
        "--threshold",
        type=float,
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
    p.add_argument("--k", type=_non_negative_int, help="return at most k rules, highest P(YES) first")
    _add_cache_options(p)
    p.add_argument(
        "--max-concurrency",
        type=_positive_int,
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
    p.add_argument("--mode", choices=MODES, default="tag")
    p.add_argument("--source", nargs="*", help="source documents for the similarity mode's chunks")
    p.add_argument("--domain", choices=sorted(EXECUTOR_PROMPTS), default="generic")
    p.add_argument("--k", type=_positive_int, default=10, help="top-k of the similarity mode")
    p.add_argument(
        "--reference-inputs",
        metavar="FILE",
        help="tag mode: JSONL sample of your own unlabelled inputs for the calibration (as in match)",
    )
    _add_cache_options(p)
    p.add_argument(
        "--max-concurrency",
        type=_positive_int,
        default=4,
        metavar="N",
        help="most judgments (model calls) in flight at once (default: %(default)s)",
    )
    p.add_argument(
        "--check-rounds",
        type=_non_negative_int,
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
    p.add_argument("--k", type=_positive_int, default=2, help="top-k of the similarity column")
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
        type=int,
        default=1,
        metavar="N",
        help="after a revision, check it against the matched rules and give the executor up to N more rounds "
        "with the ones it still breaks (default 1; 0: no check)",
    )
    p.set_defaults(func=_cmd_demo)

    _add_batch_commands(sub, common)
    _add_plugin_commands(sub)
    return parser


def _add_judge_options(p: argparse.ArgumentParser) -> None:
    """The options that decide which judgments are asked and how they are scored (as in ``match``)."""
    p.add_argument("--predicate", choices=sorted(JUDGE_PROMPTS), default="applicability")
    p.add_argument("--threshold", type=float, help="calibrated score needed (default: the calibration's, else 0.5)")
    p.add_argument("--calibration", help="a calibration JSON file (Calibration.save); default: the model family's")
    p.add_argument("--raw", action="store_true", help="no calibration: threshold raw P(YES)")
    p.add_argument(
        "--reference-inputs", metavar="FILE", help="JSONL sample of your own unlabelled inputs (as in match)"
    )
    _add_cache_options(p)


def _add_batch_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """``batch export`` and ``batch import``: judgments through the OpenAI Batch API."""
    from langchain_tag.scale.batch_api import MAX_BYTES, MAX_REQUESTS

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
    p.add_argument("--max-requests", type=_positive_int, default=MAX_REQUESTS, help="requests per file (%(default)s)")
    p.add_argument("--max-bytes", type=_positive_int, default=MAX_BYTES, help="bytes per file (%(default)s)")
    _add_judge_options(p)
    p.set_defaults(func=_cmd_batch_export, max_concurrency=4)

    p = steps.add_parser("import", parents=[common], help=f"record Batch API results in the verdict cache ({shared})")
    p.add_argument("results", nargs="+", metavar="RESULTS", help="downloaded Batch API output and error files")
    p.add_argument("--inputs", required=True, metavar="FILE", help="the inputs file of the export")
    p.add_argument("--rules", required=True, help="the rule file of the export")
    p.add_argument("--model", required=True, metavar="NAME", help="the batch's model, as at export")
    p.add_argument("--mapping", metavar="FILE", help="the export's mapping.jsonl (default: rebuilt from the inputs)")
    p.add_argument("-o", "--output", metavar="FILE", help='then write each input\'s matched rules here ("-": stdout)')
    p.add_argument("--all-pairs", action="store_true", help="with -o: also give every pair's raw P(YES)")
    _add_judge_options(p)
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


def _batch_client(args: argparse.Namespace) -> Any:
    """The OpenAI client of the batch steps: ``--base-url``, the key of ``LANGCHAIN_TAG_API_KEY`` or the environment."""
    import openai

    key = os.environ.get("LANGCHAIN_TAG_API_KEY") or os.environ.get("OPENAI_API_KEY") or None
    return openai.OpenAI(base_url=args.base_url, api_key=key)


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


def _one_line(exc: BaseException) -> str:
    """The error on one line, URLs redacted; a validation error as its field and message, without pydantic's links."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        parts = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error.get("loc", ()))
            message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            parts.append(f"{where}: {message}" if where else message)
        text = "; ".join(parts)
    else:
        text = str(exc)
    return redact_urls(" ".join(text.split())) or type(exc).__name__


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that a command stops as on Ctrl-C."""


def _on_sigterm(signum: int, frame: FrameType | None) -> NoReturn:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise _Terminated


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`_Terminated` (a ``KeyboardInterrupt``) in the main thread.

    So a ``kill`` (a job scheduler's, a container's stop) unwinds as Ctrl-C
    does: the partial results file is removed, the verdict cache is closed,
    and the command says what it kept. Outside the main thread nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _what_was_kept(args: argparse.Namespace) -> str:
    """What an interrupted ``match --inputs`` leaves behind, for the message: the output file and the verdicts."""
    if getattr(args, "command", None) != "match" or getattr(args, "inputs", None) is None:
        return ""
    output = "" if args.output in (None, "-") else f"; {args.output} is left as it was"
    if args.no_cache:
        return f"{output}; no judgment is kept (--no-cache)"
    verdicts = args.verdicts
    if not verdicts:
        from langchain_tag.local.weights import default_cache_dir

        verdicts = default_cache_dir() / "verdicts.sqlite"  # as _verdict_cache opened it
    return f"{output}; the judgments made so far are kept in {verdicts}: run the same command again to resume"


def _stdout_to_devnull() -> None:
    """Point standard output at the null device, so the last flush at exit finds no closed pipe to complain of."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)


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
        with _sigterm_as_interrupt():
            code: Any = args.func(args)
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, _Terminated)
        stopped = "terminated (SIGTERM)" if terminated else "interrupted"
        print(f"langchain-tag: {stopped}{_what_was_kept(args)}", file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (| head): stop quietly, as a Unix tool SIGPIPE ends.
        _stdout_to_devnull()
        return EXIT_STDOUT_CLOSED
    except Exception as exc:
        if args.debug:
            raise
        print(f"langchain-tag: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
