"""``langchain-tag match --inputs FILE``: every input against every rule, one JSON line per input."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from langchain_tag.cli.exits import EXIT_JUDGMENTS_FAILED
from langchain_tag.cli.options import judging_retriever, verdicts_path
from langchain_tag.cli.output import write_records

__all__ = ["MATCH_EPILOG", "bulk_match_asked", "cmd_match_inputs", "decisions_model", "what_was_kept", "write_corpus"]

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
  -o FILE appears whole or not at all: it is written beside FILE and renamed over it;
  a second job given the same -o FILE while the first writes it is refused. An -o FILE
  that cannot be locked (a file system without locks: NFS without a lock daemon) is
  refused, as a second job would go unseen; --unlocked-output writes it after a warning.
  Jobs sharing a verdict cache (--verdicts) never judge one pair twice: a job waits
  for the pairs another is judging, says which job it waits for, and gives up (exit 1)
  after 600 s; a claim older than an hour is taken over.
  An inputs file holding no input (empty, or blank lines only) gives an empty result
  and exit status 0, as sort and jq do (-o FILE is then an empty file).

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


def bulk_match_asked(args: argparse.Namespace) -> bool:
    """Whether ``match`` was given ``--inputs FILE`` (many inputs) rather than one input; usage errors for a mix."""
    if args.embeddings is not None and not args.cascade:
        args.usage_error("--embeddings goes with --cascade (the embeddings of its proxy)")
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


def cmd_match_inputs(args: argparse.Namespace) -> int:
    """``match --inputs FILE``: every input against every rule, one JSON line per input.

    The records and exit statuses are those the ``match --help`` epilog lists
    (:data:`MATCH_EPILOG`); the records are :func:`~langchain_tag.scale.bulk.match_corpus`'s.
    """
    from langchain_tag.local.models import ModelConfig, get_chat_model
    from langchain_tag.rules import load_rules
    from langchain_tag.scale.bulk import check_output_path

    items = _bulk_inputs(args.inputs)  # a bad line is refused before any model starts
    if args.output not in (None, "-"):
        check_output_path(args.output)  # and so is a place the results could not be written to
    rules = load_rules(args.rules)
    if not items:  # nothing to judge: an empty result, as sort and jq give for an empty input
        where = write_records([], args.output, unlocked=args.unlocked_output)
        print(f"0 inputs: {_inputs_name(args.inputs)} holds none; wrote an empty result to {where}", file=sys.stderr)
        return 0
    judge = decisions_model() if args.decisions else get_chat_model(role="judge")
    retriever = judging_retriever(args, judge, rules, context_tokens=ModelConfig.from_env().context_window())
    if args.cascade:
        from langchain_tag.cli.cascade import run_cascade

        return run_cascade(args, items, retriever)
    return write_corpus(args, items, retriever)


def decisions_model() -> Any:
    """An ``OpenAIDecisions`` judge at the configured endpoint, with the configured judge model, key and deadline.

    Its requests get the chat judge's timeout and retries (:func:`~langchain_tag.local.models.openai_client_options`).
    """
    from langchain_tag.errors import require_extra
    from langchain_tag.local.models import ModelConfig, openai_client_options

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
    return OpenAIDecisions(model=model, base_url=cfg.base_url, api_key=key, **openai_client_options(cfg))


def _bulk_inputs(value: str) -> list[Any]:
    """The inputs of ``--inputs FILE`` ("-": standard input, read as UTF-8); none for a file without any."""
    from langchain_tag.scale.inputs import read_inputs, read_inputs_from

    if value == "-":
        return read_inputs_from(getattr(sys.stdin, "buffer", sys.stdin), "stdin")
    return read_inputs(value)


def _inputs_name(value: str) -> str:
    return "stdin" if value == "-" else value


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
    from langchain_tag.scale.bulk import failure_record, judged_rules, retriever_rules
    from langchain_tag.scale.inputs import encoding_error

    errors = {item.id: error for item in items if (error := encoding_error(item)) is not None}
    if not errors:
        yield from judge(items)
        return
    sendable = [item for item in items if item.id not in errors]
    records = iter(judge(sendable) if sendable else ())
    rules = retriever_rules(retriever)
    judged = judged_rules(retriever, rules)
    for item in items:
        if item.id in errors:
            yield failure_record(item, rules, errors[item.id], all_pairs=args.all_pairs, judged=judged)
        else:
            yield next(records)


def write_corpus(args: argparse.Namespace, items: list[Any], retriever: Any) -> int:
    """Match every input, write one JSON line each to ``args.output`` (stdout for "-"), and sum up on stderr."""
    from langchain_tag.scale.bulk import match_corpus

    tally = {"matched": 0, "failed": 0, "inputs_failed": 0}

    def counted(results: Any) -> Any:
        for record in results:
            tally["matched"] += len(record["matched"])
            tally["failed"] += len(record["failed"])
            tally["inputs_failed"] += bool(record["failed"])
            yield record

    ray = getattr(args, "engine", "process") == "ray"

    def judge(sendable: list[Any]) -> Iterable[dict[str, Any]]:
        if ray:
            return _ray_records(args, sendable, retriever)
        return match_corpus(sendable, retriever, all_pairs=args.all_pairs)

    results = counted(_with_unsendable(args, items, retriever, judge) if ray else judge(items))
    where = write_records(results, args.output, unlocked=getattr(args, "unlocked_output", False))
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
    from langchain_tag.scale.bulk import failure_record, judged_rules, result_record, retriever_rules
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
    judged = judged_rules(retriever, rules)
    return [
        failure_record(item, rules, run.input_errors[i], all_pairs=args.all_pairs, judged=judged)
        if i in run.input_errors
        else result_record(item, result, all_pairs=args.all_pairs, judged=judged)
        for i, (item, result) in enumerate(zip(items, run.results, strict=True))
    ]


def what_was_kept(args: argparse.Namespace) -> str:
    """What an interrupted ``match --inputs`` leaves behind, for the message: the output file and the verdicts."""
    if getattr(args, "command", None) != "match" or getattr(args, "inputs", None) is None:
        return ""
    output = "" if args.output in (None, "-") else f"; {args.output} is left as it was"
    if args.no_cache:
        return f"{output}; no judgment is kept (--no-cache)"
    kept = f"the judgments made so far are kept in {verdicts_path(args)}"
    return f"{output}; {kept}: run the same command again to resume"
