"""Bulk matching: every input of a JSONL file judged against every rule, one JSON result per input.

:func:`~langchain_tag.scale.inputs.read_inputs` reads the inputs (a JSON string or
``{"id", "text", ...}`` per line; it and the other names of
:mod:`langchain_tag.scale.inputs` are importable from here too),
:func:`match_corpus` (and its async twin :func:`amatch_corpus`) judges them
input-major through an
:class:`~langchain_tag.retrievers.ApplicabilityRetriever` and yields one
JSON-ready result per input, in input order, and :func:`write_results` writes
them to a JSONL file that appears whole or not at all.

Resuming comes from the retriever's verdict cache: with a
:class:`~langchain_tag.judging.verdict_cache.SQLiteVerdictCache`, each judgment is
stored as soon as its reply arrives (not only when its input is finished), so
a job that is killed and run again makes no finished judgment again, and its
output is byte-identical to an uninterrupted run's.

Example:
    .. code-block:: python

        retriever = ApplicabilityRetriever(llm=judge, rules=rules, cache=SQLiteVerdictCache("verdicts.sqlite"))
        write_results(match_corpus(read_inputs("inputs.jsonl"), retriever), "verdicts.jsonl")
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_tag.calls._own_loop import iterate_on_own_loop, loop_is_free
from langchain_tag.cascade_retriever import CascadeRetriever
from langchain_tag.ranges import MAX_CONCURRENCY
from langchain_tag.scale._bulk_job import Job, Judged, failure_record, judged_rules, result_record, retriever_rules
from langchain_tag.scale._results_file import OutputFileError, awrite_results, check_output_path, write_results
from langchain_tag.scale.inputs import InputItem, InputsError, as_input_items, read_inputs

if TYPE_CHECKING:
    from langchain_tag.retrievers import ApplicabilityRetriever

J = TypeVar("J", bound="ApplicabilityRetriever | CascadeRetriever")
"""A retriever or a cascade, kept as its own type (:func:`capped_retriever`)."""

__all__ = [
    "InputItem",
    "InputsError",
    "OutputFileError",
    "amatch_corpus",
    "as_input_items",
    "awrite_results",
    "capped_retriever",
    "check_output_path",
    "failure_record",
    "judged_rules",
    "match_corpus",
    "read_inputs",
    "result_record",
    "retriever_rules",
    "write_results",
]


def _inputs_at_once(max_concurrency: int | None, retriever: Judged, per_input: int) -> int:
    # per_input: requests per input (a decision model asks many rules in one)
    """Inputs judged at the same time: enough to keep the cap's requests busy (the cap holds whatever it is).

    One more than the cap holds at once when an input's requests do not fill the cap's places evenly: as its
    last requests finish, the next input's fill the places they leave (20 rules with 8 in flight would otherwise
    send 8, 8, then 4 and wait: a sixth of the pace). With one request at a time (a local server, whose prompt
    cache wants each input's prompts together) the work stays input-major.
    """
    MAX_CONCURRENCY.check_optional(max_concurrency)
    limit = retriever.max_concurrency if max_concurrency is None else max_concurrency
    per_input = max(per_input, 1)
    return math.ceil(limit / per_input) + (1 if limit > 1 and per_input % limit else 0)


def capped_retriever(retriever: J, max_concurrency: int | None) -> J:
    """The retriever with ``max_concurrency`` as its cap on requests in flight (sharing its judging state)."""
    if max_concurrency is None:
        return retriever
    if isinstance(retriever, CascadeRetriever):
        cheap, strong = (capped_retriever(r, max_concurrency) for r in (retriever.cheap, retriever.strong))
        return retriever.model_copy(update={"cheap": cheap, "strong": strong})
    return retriever.model_copy(update={"max_concurrency": max_concurrency})


def match_corpus(
    inputs: Iterable[InputItem | str | Mapping[str, Any]],
    retriever: Judged,
    *,
    all_pairs: bool = False,
    show_progress: bool | None = None,
    max_concurrency: int | None = None,
) -> Iterator[dict[str, Any]]:
    """Judge every input against the retriever's rules; yield one JSON-ready result per input, in input order.

    Work goes input-major: all of one input's judgments are sent together, and
    as many inputs are judged at a time as keep ``max_concurrency`` requests
    busy; that many requests in flight is a hard cap over all inputs together.
    The first input is judged alone, so a calibration's reference judgments
    are made once, before the others start.

    Each result is ``{"id", "matched": [{"rule_id", "score", "p_yes"}],
    "failed": [{"rule_id", "error"}]}`` (plus ``"pairs"`` with ``all_pairs``).
    Failures are reported, never fatal: a pair whose reply could not be read
    is listed under ``"failed"`` (and counted as NO), and an input none of
    whose pairs could be judged (every call failed, or too long for the
    model) gets an ``"error"`` and every rule under ``"failed"``.

    With a :class:`~langchain_tag.judging.verdict_cache.SQLiteVerdictCache` on the
    retriever the job resumes: each reply is stored as it arrives, so a rerun
    after a kill judges only what had not been judged, and yields the same
    results.

    Args:
        inputs: The inputs (:func:`read_inputs`); a bare string gets its 1-based position as its id, a mapping is
            read as a line of an inputs file (``{"id": ..., "text": ...}``).
        retriever: The retriever whose judge, rules, calibration and verdict cache are used (or a
            :class:`~langchain_tag.cascade_retriever.CascadeRetriever`: its cheap judge on every pair, its strong
            judge on the band's).
        all_pairs: Also give every pair's decision, raw P(YES) and score.
        show_progress: Show a progress bar of judgments (rate and ETA) on stderr; ``None`` when stderr is a terminal.
        max_concurrency: Most requests in flight at once, over all inputs together; ``None``: the
            retriever's ``max_concurrency``.

    Yields:
        One result per input, in input order.

    Raises:
        InputsError: On an empty input or an id given twice.
        ProviderError: When every request of the first input (judged alone) failed the same way (an endpoint
            that is down, a wrong model or key): the job stops there rather than failing every input alike.
    """
    items = as_input_items(inputs)  # checked now, before the first result is asked for
    _inputs_at_once(max_concurrency, retriever, 1)
    return _match_items(items, capped_retriever(retriever, max_concurrency), all_pairs, show_progress, max_concurrency)


def _match_items(
    items: list[InputItem],
    retriever: Judged,
    all_pairs: bool,
    show_progress: bool | None,
    max_concurrency: int | None,
) -> Iterator[dict[str, Any]]:
    if _on_own_loop(retriever):  # one event loop keeps the requests in flight at less cost than threads
        yield from iterate_on_own_loop(_amatch_items(items, retriever, all_pairs, show_progress, max_concurrency))
        return
    job = Job.start(retriever, items, all_pairs=all_pairs, show=show_progress)
    width = _inputs_at_once(max_concurrency, retriever, job.requests_per_input)
    with job.running():
        for done, record in enumerate(_run_in_order(items, job.run, width), start=1):
            job.progress.input_done(done, len(items))
            yield record


def _on_own_loop(retriever: Judged) -> bool:
    """Whether the sync job runs as the async one, on a loop of its own.

    So it does for a judge called straight through a ``ChatOpenAI``'s client (:mod:`langchain_tag.calls._direct`)
    that has no HTTP client of its own, from a thread with no running event loop.
    """
    runner = getattr(getattr(retriever, "judge", None), "runner", None)
    direct = getattr(runner, "direct", None)
    return direct is not None and direct.may_run_on_own_loop and loop_is_free()


def _run_in_order(
    items: Sequence[InputItem], run: Callable[[InputItem], dict[str, Any]], width: int
) -> Iterator[dict[str, Any]]:
    """``run`` over the items, the first alone, then up to ``width`` at a time; results in item order."""
    if not items:
        return
    yield run(items[0])
    rest = iter(items[1:])
    if width == 1:
        yield from map(run, rest)
        return
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="tag-bulk") as pool:
        window: deque[Future[dict[str, Any]]] = deque()
        try:
            for item in rest:
                window.append(pool.submit(run, item))
                if len(window) >= width:
                    yield window.popleft().result()
            while window:
                yield window.popleft().result()
        finally:
            for future in window:
                future.cancel()


def amatch_corpus(
    inputs: Iterable[InputItem | str | Mapping[str, Any]],
    retriever: Judged,
    *,
    all_pairs: bool = False,
    show_progress: bool | None = None,
    max_concurrency: int | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """Async twin of :func:`match_corpus`."""
    items = as_input_items(inputs)
    _inputs_at_once(max_concurrency, retriever, 1)
    return _amatch_items(items, capped_retriever(retriever, max_concurrency), all_pairs, show_progress, max_concurrency)


async def _amatch_items(
    items: list[InputItem],
    retriever: Judged,
    all_pairs: bool,
    show_progress: bool | None,
    max_concurrency: int | None,
) -> AsyncIterator[dict[str, Any]]:
    job = Job.start(retriever, items, all_pairs=all_pairs, show=show_progress)
    width = _inputs_at_once(max_concurrency, retriever, job.requests_per_input)
    with job.running():
        done = 0
        async for record in _arun_in_order(items, job.arun, width):
            done += 1
            job.progress.input_done(done, len(items))
            yield record


async def _arun_in_order(items: Sequence[InputItem], run: Any, width: int) -> AsyncIterator[dict[str, Any]]:
    """Async twin of :func:`_run_in_order`."""
    if not items:
        return
    yield await run(items[0])
    window: deque[asyncio.Task[dict[str, Any]]] = deque()
    try:
        for item in items[1:]:
            window.append(asyncio.ensure_future(run(item)))
            if len(window) >= width:
                yield await window.popleft()
        while window:
            yield await window.popleft()
    finally:
        for task in window:
            task.cancel()
