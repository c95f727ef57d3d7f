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
import contextlib
import json
import math
import os
import sys
import threading
import uuid
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, Union

from langchain_core.outputs import LLMResult
from tqdm.auto import tqdm

from langchain_tag.calls.own_loop import iterate_on_own_loop, loop_is_free
from langchain_tag.calls.recorded import RecordedReplies
from langchain_tag.calls.runner import ReplyCounter
from langchain_tag.cascade_retriever import CascadeRetriever
from langchain_tag.errors import ProviderError, TagError
from langchain_tag.judging.cascade import CascadeResult
from langchain_tag.judging.results import JudgmentsFailedError
from langchain_tag.judging.verdict_cache import (
    Claims,
    ClaimWaitError,
    SQLiteVerdictCache,
    VerdictCacheError,
    VerdictStore,
)
from langchain_tag.rules import Rule, rule_documents, rules_from_documents
from langchain_tag.scale.inputs import InputItem, InputsError, as_input_items, encoding_error, read_inputs

if TYPE_CHECKING:
    from langchain_tag.judging.results import Judgment, MatchResult
    from langchain_tag.retrievers import ApplicabilityRetriever

Judged = Union["ApplicabilityRetriever", "CascadeRetriever"]
"""What the bulk job runs: a retriever (any judge behind it), or a cascade of two."""

J = TypeVar("J", bound="ApplicabilityRetriever | CascadeRetriever")
"""One of those, kept as its own type (:func:`capped_retriever`)."""

__all__ = [
    "InputItem",
    "InputsError",
    "OutputFileError",
    "amatch_corpus",
    "as_input_items",
    "awrite_results",
    "capped_retriever",
    "failure_record",
    "match_corpus",
    "read_inputs",
    "retriever_rules",
    "write_results",
]


def retriever_rules(retriever: Judged) -> list[Rule]:
    """The rules a retriever judges every input against (none when it draws candidates from a vector store)."""
    return rules_from_documents(rule_documents(retriever.rules))


# ---------------------------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------------------------


def _p_yes(judgment: Judgment) -> float | None:
    """A judgment's raw P(YES) (named ``probability`` before ``p_yes``)."""
    value = getattr(judgment, "p_yes", None)
    return value if value is not None else getattr(judgment, "probability", None)


def result_record(item: InputItem, result: MatchResult, *, all_pairs: bool = False) -> dict[str, Any]:
    """One input's JSON-ready result: its id, the matched rules (best score first) and the failed pairs.

    Only what the verdicts determine goes in (no call or token counts, no
    cache flags), so a resumed job writes the same bytes as a fresh one.

    Args:
        item: The input.
        result: Its match result.
        all_pairs: Also give every pair's decision, raw P(YES) and score, in rule order.
    """
    record: dict[str, Any] = {
        "id": item.id,
        "matched": [{"rule_id": j.rule_id, "score": j.score, "p_yes": _p_yes(j)} for j in result.matched],
        "failed": [{"rule_id": j.rule_id, "error": j.error} for j in result.failed],
    }
    if all_pairs:
        record["pairs"] = [
            {"rule_id": j.rule_id, "applies": j.applies, "p_yes": _p_yes(j), "score": j.score} for j in result.judgments
        ]
    return record


def failure_record(item: InputItem, rules: Sequence[Rule], error: str, *, all_pairs: bool) -> dict[str, Any]:
    """The result of an input none of whose pairs could be judged: every rule failed with ``error``."""
    record: dict[str, Any] = {
        "id": item.id,
        "matched": [],
        "failed": [{"rule_id": r.rule_id, "error": error} for r in rules],
        "error": error,
    }
    if all_pairs:
        record["pairs"] = [{"rule_id": r.rule_id, "applies": False, "p_yes": None, "score": None} for r in rules]
    return record


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# ---------------------------------------------------------------------------------------------------------------
# Recording each reply as it arrives, and counting it on the progress bar
# ---------------------------------------------------------------------------------------------------------------


class _Progress:
    """A thread-safe judgment counter over a tqdm bar (judgments/s, ETA)."""

    def __init__(self, total: int, show: bool | None, *, cached: int = 0) -> None:
        self._bar = tqdm(
            total=total,
            initial=cached,  # counted, but not in the rate or the ETA
            desc="judging",
            unit=" judgments",
            unit_scale=False,  # whole judgments: "5/480", not "5.00/480"
            dynamic_ncols=True,
            smoothing=0.05,
            leave=False,
            disable=not show or total == 0,
        )
        self._lock = threading.Lock()

    def advance(self, n: int = 1) -> None:
        if n > 0:
            with self._lock:
                self._bar.update(n)

    def input_done(self, done: int, total: int) -> None:
        with self._lock:
            self._bar.set_postfix_str(f"{done}/{total} inputs", refresh=False)

    def close(self) -> None:
        self._bar.close()


class _PairRecorder(ReplyCounter):
    """Counts one input's judgments on the progress bar as their replies arrive.

    Keeping the replies is the call runner's job: it stores each readable reply in the verdict cache in the
    thread it arrives on, so a job killed in the middle of an input loses no finished judgment.
    """

    def __init__(self, expected: int, progress: _Progress) -> None:
        self._progress = progress
        self._lock = threading.Lock()
        self._expected = expected
        self.counted = 0

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        with self._lock:
            count = self.counted < self._expected
            self.counted += int(count)
        if count:
            self._progress.advance()

    def settle(self) -> None:
        """Count the judgments of this input that made no call (cached, or failed without a reply)."""
        with self._lock:
            rest = max(0, self._expected - self.counted)
            self.counted = self._expected
        self._progress.advance(rest)


# ---------------------------------------------------------------------------------------------------------------
# The job
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class _Job:
    """What every input of one bulk job shares."""

    retriever: Judged
    rules: list[Rule]
    per_input: int
    """Judgments per input (pairs, or halves of a contrast prompt's pairs)."""
    requests_per_input: int
    """Requests per input: one per judgment, or per question batch of a decision model."""
    all_pairs: bool
    progress: _Progress

    to_judge: dict[str, int]
    """Input id -> its judgments the verdict cache lacked when the job started (only with a progress bar)."""

    claims: Claims | None = None
    """With a SQLite verdict cache: the pairs this job judges, so another job on the same file waits for them."""

    inputs: int = 0
    """How many inputs the job judges."""

    finished: int = 0
    """How many inputs are judged so far."""

    @classmethod
    def start(cls, retriever: Judged, items: Sequence[InputItem], *, all_pairs: bool, show: bool | None) -> _Job:
        rules = retriever_rules(retriever)
        halves = 2 if retriever.judge.prompt.negation is not None else 1
        count = len(rules) if rules else (retriever.candidates or 0)
        per_input = count * halves
        show = sys.stderr.isatty() if show is None else show
        to_judge = _not_cached(retriever, items, rules) if show and rules else {}
        total = len(items) * per_input
        cached = total - sum(to_judge.values()) if to_judge else 0
        progress = _Progress(total, show, cached=cached)
        cache = retriever.judge.settings.cache
        claims = Claims(cache) if isinstance(cache, SQLiteVerdictCache) else None
        requests = retriever.judge.requests_for(per_input)
        return cls(retriever, rules, per_input, requests, all_pairs, progress, to_judge, claims, len(items))

    @contextmanager
    def running(self) -> Iterator[None]:
        """The job's lifetime: its claims count while it runs, and are dropped when it ends.

        However it ends (an interrupt too), the verdicts the cache holds back are committed.
        """
        cache = self.retriever.judge.settings.cache
        store = VerdictStore(cache) if cache is not None else None
        try:
            with self.claims if self.claims is not None else contextlib.nullcontext():
                yield
        except BaseException:
            if store is not None:
                with contextlib.suppress(Exception):  # the error on its way out says more
                    store.flush()
            raise
        else:
            if store is not None:
                store.flush()
        finally:
            self.progress.close()

    def recorder(self, item: InputItem) -> _PairRecorder:
        if item.id in self.to_judge:
            return _PairRecorder(self.to_judge[item.id], self.progress)
        requests = self.retriever.judge.requests(item.text, self.rules) if self.rules else []
        return _PairRecorder(len(requests), self.progress)

    def finish(self, item: InputItem, outcome: MatchResult | BaseException, recorder: _PairRecorder) -> dict[str, Any]:
        recorder.settle()
        self.finished += 1  # the first input is judged alone: nothing races this count for it
        if (
            self.finished == 1
            and self.inputs > 1
            and isinstance(outcome, ProviderError)
            and len(outcome.errors) == 1
            and not isinstance(getattr(self.retriever, "llm", None), RecordedReplies)  # no endpoint: every miss says
        ):
            raise ProviderError(
                f"the first input's requests all failed the same way, so the job stops before sending the other "
                f"{self.inputs - 1} inputs' (nothing was written): {outcome}",
                errors=outcome.errors,
            ) from outcome  # an endpoint that is down, or a wrong model or key, would fail every input alike
        if isinstance(outcome, JudgmentsFailedError):
            outcome = outcome.result
        if isinstance(outcome, BaseException):
            return failure_record(item, self.rules, _one_line(outcome), all_pairs=self.all_pairs)
        return result_record(item, outcome, all_pairs=self.all_pairs)

    def keys(self, item: InputItem) -> list[str]:
        """The verdict cache keys of ``item``'s pairs (none to claim without claims or rules)."""
        if self.claims is None or not self.rules:
            return []
        return [r.key for r in self.retriever.judge.requests(item.text, self.rules)]

    def unsendable(self, item: InputItem) -> dict[str, Any] | None:
        """The failure record of an input whose text cannot be sent (UTF-8 cannot encode it), else ``None``."""
        error = encoding_error(item)
        return None if error is None else self.finish(item, InputsError(error), _PairRecorder(0, self.progress))

    def run(self, item: InputItem) -> dict[str, Any]:
        if (failed := self.unsendable(item)) is not None:
            return failed
        recorder = self.recorder(item)
        keys = self.keys(item)
        try:
            if self.claims is not None:
                self.claims.wait(keys)  # pairs another job is judging are read from the cache once it stored them
            outcome: MatchResult | BaseException = _combined(self.retriever.match(item.text, callbacks=[recorder]))
        except (VerdictCacheError, ClaimWaitError):
            raise  # verdicts that cannot be kept, pairs another job holds too long: the job stops, output unwritten
        except TagError as exc:
            outcome = exc
        finally:
            if self.claims is not None:
                self.claims.release(keys)
        return self.finish(item, outcome, recorder)

    async def arun(self, item: InputItem) -> dict[str, Any]:
        if (failed := self.unsendable(item)) is not None:
            return failed
        recorder = self.recorder(item)
        keys = self.keys(item)
        try:
            if self.claims is not None:
                await self.claims.await_(keys)
            found = await self.retriever.amatch(item.text, callbacks=[recorder])
            outcome: MatchResult | BaseException = _combined(found)
        except (VerdictCacheError, ClaimWaitError):
            raise
        except TagError as exc:
            outcome = exc
        finally:
            if self.claims is not None:
                self.claims.release(keys)
        return self.finish(item, outcome, recorder)


def _combined(found: MatchResult | CascadeResult) -> MatchResult:
    """A retriever's match result; a cascade's combined one."""
    return found.result if isinstance(found, CascadeResult) else found


def _not_cached(retriever: Judged, items: Sequence[InputItem], rules: Sequence[Rule]) -> dict[str, int]:
    """Per input id, how many of its judgments the verdict cache lacks (a resumed job's bar starts past the rest)."""
    judge = retriever.judge
    store = VerdictStore(judge.settings.cache) if judge.settings.cache is not None else None
    counts: dict[str, int] = {}
    for item in items:
        if encoding_error(item) is not None:  # judged by no request: it fails alone
            counts[item.id] = 0
            continue
        requests = judge.requests(item.text, rules)
        counts[item.id] = len(requests) if store is None else sum(store.get(r.key) is None for r in requests)
    return counts


def _inputs_at_once(max_concurrency: int | None, retriever: Judged, per_input: int) -> int:
    # per_input: requests per input (a decision model asks many rules in one)
    """Inputs judged at the same time: enough to keep the cap's requests busy (the cap holds whatever it is).

    One more than the cap holds at once when an input's requests do not fill the cap's places evenly: as its
    last requests finish, the next input's fill the places they leave (20 rules with 8 in flight would otherwise
    send 8, 8, then 4 and wait: a sixth of the pace). With one request at a time (a local server, whose prompt
    cache wants each input's prompts together) the work stays input-major.
    """
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
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
    inputs: Iterable[InputItem | str],
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
        inputs: The inputs (:func:`read_inputs`); a bare string gets its 1-based position as its id.
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
    job = _Job.start(retriever, items, all_pairs=all_pairs, show=show_progress)
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
    inputs: Iterable[InputItem | str],
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
    job = _Job.start(retriever, items, all_pairs=all_pairs, show=show_progress)
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


# ---------------------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------------------


def _dumps(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


class OutputFileError(TagError, OSError):
    """The results file cannot be written: another job is writing it, or a write failed (a full disk, ...).

    The message names the file; the file is left as it was.
    """


def _partial_path(path: Path) -> Path:
    """A partial file of this writer's own beside ``path`` (no other job's partial file is ever opened)."""
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial")


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


@contextmanager
def _writing_alone(path: Path) -> Iterator[None]:
    """Hold ``path``'s writer lock (a ``.NAME.lock`` file beside it) for the block; refuse when another job holds it.

    The lock is an advisory ``flock`` (none where the platform lacks it: each writer still writes its own partial
    file, so the file that ends up at ``path`` is one job's, whole). The lock file holds the writer's PID, for the
    message, and is removed when the block ends.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    lock = _lock_path(path)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip()
            os.close(fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise OutputFileError(
                f"cannot write {path}: another job is writing it{who}; wait for it to end, or give another -o FILE"
            ) from None
        except OSError:  # a file system without locks: the partial files alone keep each output whole
            os.close(fd)
            yield
            return
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the lock file was removed by the writer before us between our open and our lock: again
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)  # removed while still held, so a writer that opened it sees it is gone and opens anew
        os.close(fd)


class _Sink:
    """The partial file's handle: each write error raised as an :class:`OutputFileError` naming the results file."""

    def __init__(self, handle: TextIO, path: Path) -> None:
        self.handle = handle
        self.path = path
        self.written = 0

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        try:
            self.handle.write(text)
        except OSError as exc:
            raise _write_error(self.path, exc) from exc
        self.written += len(data)


def _write_error(path: Path, exc: OSError) -> OutputFileError:
    reason = exc.strerror or str(exc) or type(exc).__name__
    return OutputFileError(f"cannot write {path}: {reason}; {path} is left as it was")


def check_output_path(path: str | Path) -> Path:
    """Refuse an output path :func:`write_results` could not put its file at, before any judgment is made.

    The results file is written beside ``path`` and renamed over it at the
    end, so ``path`` must be a regular file or not exist yet, and its
    directory (or the nearest existing one above, where the missing ones will
    be made) must let files be created. Each message names the path at fault.

    Args:
        path: Where the results will go.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        IsADirectoryError: When ``path`` is a directory.
        NotADirectoryError: When a parent of ``path`` is a file.
        PermissionError: When files cannot be created in its directory.
        OSError: When ``path`` exists but is not a regular file (a device, a pipe).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"cannot write {path}: it is a directory; give a file path for the results")
    if path.exists() and not path.is_file():
        raise OSError(
            f"cannot write {path}: it is not a regular file (a device or a pipe); "
            'write to "-" (stdout) and redirect that instead'
        )
    directory = next((p for p in path.parents if p.exists()), Path("."))
    if not directory.is_dir():
        raise NotADirectoryError(f"cannot write {path}: {directory} is a file, not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write {path}: no permission to create files in {directory}")
    return path


@contextmanager
def _replacing(path: Path) -> Iterator[_Sink]:
    """A writer on a partial file of its own, renamed over ``path`` when the block ends; removed if it raises.

    A second job writing the same ``path`` meanwhile is refused (:func:`_writing_alone`), and the file is renamed
    over ``path`` only once every byte written is on disk: a job never reports success over a file it did not
    write whole.
    """
    check_output_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = _partial_path(path)
    with _writing_alone(path):
        try:
            try:
                handle = partial.open("x", encoding="utf-8", newline="\n")
            except OSError as exc:
                raise _write_error(path, exc) from exc
            try:
                sink = _Sink(handle, path)
                yield sink
                try:
                    handle.flush()
                    os.fsync(handle.fileno())
                    size = os.fstat(handle.fileno()).st_size
                    handle.close()
                except OSError as exc:
                    raise _write_error(path, exc) from exc
            finally:
                with contextlib.suppress(OSError):  # what could not be flushed is lost with the partial file
                    handle.close()
            if size != sink.written:
                raise OutputFileError(
                    f"cannot write {path}: its partial file {partial.name} holds {size} bytes where {sink.written} "
                    f"were written (something else wrote to it); {path} is left as it was"
                )
            try:
                os.replace(partial, path)
            except OSError as exc:
                raise _write_error(path, exc) from exc
        except BaseException:
            partial.unlink(missing_ok=True)
            raise


def write_results(results: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write results as JSONL, one per line; the file appears whole or not at all.

    Lines go to a hidden partial file of this writer's own beside ``path``
    (``.NAME.PID-TOKEN.partial``) as they come, which replaces ``path`` once
    the last one is written and on disk; when the results stop with an error
    (or an interrupt), the partial file is removed and ``path`` is left as it
    was. While it writes, the writer holds a lock (``.NAME.lock``, removed at
    the end): a second job writing the same ``path`` is refused with an
    :class:`OutputFileError` naming it and the first job's PID. ``path`` is
    checked (:func:`check_output_path`) and locked before the first result is
    asked for, so a path that cannot take the file costs no judgment.

    Args:
        results: JSON-ready results (:func:`match_corpus`).
        path: The JSONL file to write.

    Returns:
        How many results were written.

    Raises:
        OSError: When ``path`` cannot take the file (see :func:`check_output_path`).
        OutputFileError: When another job is writing ``path``, or a write fails (a full disk): the message
            names ``path``, which is left as it was.
    """
    count = 0
    with _replacing(Path(path)) as handle:
        for record in results:
            handle.write(_dumps(record))
            count += 1
    return count


async def awrite_results(results: AsyncIterable[Mapping[str, Any]], path: str | Path) -> int:
    """Async twin of :func:`write_results`."""
    count = 0
    with _replacing(Path(path)) as handle:
        async for record in results:
            handle.write(_dumps(record))
            count += 1
    return count
