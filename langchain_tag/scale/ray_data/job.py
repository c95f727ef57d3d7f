"""A whole judging job on Ray Data: plan the requests the cache lacks, send them in passes, read the results.

:func:`judge_with_ray` is the entry point (see :mod:`langchain_tag.scale.ray_data`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from langchain_tag.calls._faults import ReportedFault, client_retries, is_permanent
from langchain_tag.calls._identity import IDENTITY_METADATA_KEY, api_key_of, chat_model_of, describe_model, redact_url
from langchain_tag.calls._recorded import RecordedReplies, prompt_key
from langchain_tag.errors import ProviderError
from langchain_tag.judging._admission import asked_model, foreign_reply
from langchain_tag.judging._pairs import PairRequest
from langchain_tag.judging.chat import chat_judge
from langchain_tag.judging.judge import resolve_judge_prompt
from langchain_tag.judging.results import Judgment, MatchResult, Reading
from langchain_tag.judging.verdict_cache import VerdictStore
from langchain_tag.ranges import MAX_ATTEMPTS, MAX_CONCURRENCY
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule, rule_documents, rules_from_documents
from langchain_tag.scale.ray_data.processor import build_judge_processor, require_ray
from langchain_tag.scale.ray_data.requests import row_reading

if TYPE_CHECKING:
    from ray.data import Dataset
    from ray.data.llm import Processor

__all__ = ["RayJudgeRun", "RayRequestError", "RayRequestFailure", "judge_endpoint", "judge_with_ray"]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 120.0
"""Seconds allowed per request when neither ``timeout=`` nor the judge model gives a deadline."""

BATCHES_PER_BLOCK = 16
"""Most batches in one block of the job's rows. A worker runs a block's batches side by side (Ray Data runs up
to 4 of an async stage at once; the session's gate caps the requests), but its requests in flight drain at
the end of each block, and a block's replies reach the verdict cache when it ends (what a kill loses):
16 batches of 16 rows keep 8 requests in flight 98 % of the time and lose at most 256 replies a worker."""


@dataclass(frozen=True)
class RayRequestFailure:
    """One request that failed after its last attempt.

    Attributes:
        query: The input judged (a calibration reference input for a reference request).
        rule_id: The rule judged.
        negated: Whether it was the negated half of a contrast prompt.
        key: Its verdict-cache key.
        error: What went wrong on the last attempt.
        attempts: How many times it was sent.
        reference: Whether it was one of the calibration's reference judgments.
    """

    query: str
    rule_id: str
    negated: bool
    key: str
    error: str
    attempts: int
    reference: bool = False


@dataclass
class RayJudgeRun:
    """What :func:`judge_with_ray` did.

    Attributes:
        results: One match result per input, in input order, as
            :meth:`ApplicabilityRetriever.match` gives them (failed judgments
            counted as NO, with their error).
        failures: The requests that failed after their last attempt.
        input_errors: The inputs none of whose judgments could be made (every request failed, or a
            reference judgment the calibration needs): input index -> the error, as the in-process
            job reports it (:class:`~langchain_tag.errors.ProviderError`).
        requested: Distinct requests the job needed (inputs, halves, references).
        cached: Of those, how many the verdict cache already held (not sent).
        sent: How many were sent through Ray (``requested - cached``).
        calls: HTTP requests made, resends included.
        passes: Ray Data passes run (1, plus one per round of resends).
        seconds: Wall time of the Ray passes.
    """

    results: list[MatchResult] = field(default_factory=list)
    failures: list[RayRequestFailure] = field(default_factory=list)
    input_errors: dict[int, str] = field(default_factory=dict)
    requested: int = 0
    cached: int = 0
    sent: int = 0
    calls: int = 0
    passes: int = 0
    seconds: float = 0.0

    @property
    def judgments_per_second(self) -> float:
        """Requests answered per second of Ray time (0.0 when nothing was sent)."""
        answered = self.sent - len({f.key for f in self.failures})
        return answered / self.seconds if self.seconds > 0 else 0.0


@dataclass
class _Pending:
    request: PairRequest
    queries: list[str]
    reference: bool
    attempts: int = 0
    error: str = ""
    reply: tuple[str, dict[str, Any] | None] | None = None  # a reply that is not a verdict
    foreign: bool = False  # answered by another model than the one asked for

    @property
    def final(self) -> bool:
        """Whether sending it again cannot help: it failed with a permanent HTTP status, or another model answered."""
        return self.foreign or is_permanent(ReportedFault(self.error))


def judge_with_ray(
    retriever: ApplicabilityRetriever,
    inputs: Sequence[str],
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    extra_body: Mapping[str, Any] | None = None,
    concurrency: int | tuple[int, int] = 1,
    batch_size: int = 16,
    max_concurrency: int | None = None,
    max_attempts: int | None = None,
    retry_backoff: float = 1.0,
    timeout: float | None = None,
    num_cpus: float = 0.25,
    processor: Processor | None = None,
) -> RayJudgeRun:
    """Judge every input against the retriever's rules through a Ray Data pipeline.

    Requests already in the verdict cache are not sent; the replies got are
    recorded there, and each input's result is then
    ``retriever.match(input)``, made from the cache without a call: the same
    verdicts, scores and calibration as in-process judging. Uses the running
    Ray instance, or starts one as ``ray.data`` does (see :func:`init_local_ray`).

    Args:
        retriever: The retriever whose rules, judge prompt, calibration and
            verdict cache are used (it must have a cache, and judge its
            ``rules``, not vector-store candidates).
        inputs: The inputs to judge.
        base_url: The OpenAI-compatible endpoint (``.../v1``); by default the
            judge model's own (``ChatOpenAI``'s ``base_url``).
        model: The model name it serves; by default the judge model's.
        api_key: The endpoint's key; by default the judge model's, if any.
        extra_body: More request body fields; by default the judge model's
            ``extra_body`` (``{"cache_prompt": True}`` for the embedded model).
        concurrency: HTTP workers (see :func:`build_judge_processor`).
        batch_size: Rows per batch a worker takes.
        max_concurrency: Most requests in flight at once over all workers
            together (each of the most workers gets an equal share, at least
            one); ``None``: the retriever's ``max_concurrency``.
        max_attempts: Passes a request may take before it is reported failed;
            ``None``: as many requests as the in-process job sends for a
            transient fault (one more than the judge model's client retries,
            else the judge's ``max_attempts``), so both write the same record.
            A permanent fault (HTTP 400, 401, 403, 404, 413, 422) is not sent again.
        retry_backoff: Seconds before the first resend pass, doubled for each further one.
        timeout: Seconds allowed per request; ``None``: the judge model's own timeout, as in-process requests
            have it (``LANGCHAIN_TAG_TIMEOUT`` for the CLI's), else :data:`DEFAULT_TIMEOUT`.
        num_cpus: CPUs reserved per HTTP worker.
        processor: A Ray Data LLM processor to use instead of the HTTP one
            built from the arguments above: it takes rows with ``order``,
            ``key`` and ``request`` and gives :data:`OUTPUT_COLUMNS` (see the
            vLLM sketch in :mod:`langchain_tag.scale.ray_data`).

    Returns:
        Each input's result, the failed requests and counts.

    Raises:
        MissingExtraError: When the ``ray`` extra is not installed.
        ValueError: On a retriever without a verdict cache or with vector-store
            candidates, an endpoint that cannot be found, or bad arguments.
    """
    require_ray()
    if isinstance(inputs, str):
        raise ValueError("inputs must be a sequence of inputs, not one string")
    if max_attempts is None:
        retried = client_retries(retriever.llm)
        max_attempts = 1 + retried if retried else retriever.judge.settings.max_attempts
    MAX_ATTEMPTS.check(max_attempts)
    if retriever.cache is None:
        raise ValueError("judge_with_ray needs a retriever with a verdict cache: replies are recorded there")
    if retriever.candidates is not None:
        raise ValueError("judge_with_ray judges the retriever's rules; vector-store candidates are not supported")
    judge = chat_judge(retriever.judge, "judge_with_ray")
    rules = rules_from_documents(rule_documents(retriever.rules))
    queries = list(inputs)
    cap = MAX_CONCURRENCY.check(retriever.max_concurrency if max_concurrency is None else max_concurrency)
    endpoint: dict[str, Any] | None = None
    if processor is None:
        endpoint = judge_endpoint(retriever, base_url=base_url, model=model, api_key=api_key, extra_body=extra_body)
        own_timeout = endpoint.pop("timeout")
        processor = build_judge_processor(
            **endpoint,
            max_tokens=1 if judge.settings.verdict_format == "token" else None,
            concurrency=concurrency,
            batch_size=batch_size,
            max_in_flight=max(1, cap // _most_workers(concurrency)),
            num_cpus=num_cpus,
            timeout=timeout if timeout is not None else own_timeout or DEFAULT_TIMEOUT,
        )

    run = RayJudgeRun()
    if not queries:
        return run
    pending = _plan(judge, queries, rules, run)
    failed = _send(
        judge,
        processor,
        pending,
        run,
        asked=model or (endpoint["model"] if endpoint is not None else asked_model(retriever.llm)),
        max_attempts=max_attempts,
        retry_backoff=retry_backoff,
        batch_size=batch_size,
        workers=_most_workers(concurrency),
    )
    run.failures = [
        RayRequestFailure(
            query=q,
            rule_id=p.request.rule_id,
            negated=p.request.negated,
            key=p.request.key,
            error=p.error,
            attempts=p.attempts,
            reference=p.reference,
        )
        for p in failed
        for q in p.queries
    ]
    run.results = _results(retriever, queries, rules, failed, run.input_errors)
    return run


def judge_endpoint(
    retriever: ApplicabilityRetriever,
    *,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    extra_body: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The endpoint to send to: the arguments given, else what the judge model (a ``ChatOpenAI``) names.

    Also the judge model's ``timeout`` (seconds a number, else ``None``), the deadline its in-process requests have.
    """
    llm = chat_model_of(retriever.llm)
    if base_url is None:
        found = getattr(llm, "openai_api_base", None) or getattr(llm, "base_url", None)
        base_url = found if isinstance(found, str) and found else None
    if model is None:
        found = getattr(llm, "model_name", None) or getattr(llm, "model", None)
        model = found if isinstance(found, str) and found else None
    if base_url is None or model is None:
        missing = " and ".join(n for n, v in (("base_url=", base_url), ("model=", model)) if v is None)
        raise ValueError(
            f"the judge model ({type(llm).__name__}) names no OpenAI-compatible endpoint: pass {missing} "
            "for the endpoint that serves it"
        )
    if api_key is None:
        api_key = api_key_of(llm)
    if extra_body is None:
        found = getattr(llm, "extra_body", None)
        extra_body = found if isinstance(found, Mapping) else None
    found = getattr(llm, "request_timeout", None)
    timeout = float(found) if isinstance(found, int | float) and not isinstance(found, bool) and found > 0 else None
    return {"base_url": base_url, "model": model, "api_key": api_key, "extra_body": extra_body, "timeout": timeout}


def _plan(judge: Any, queries: Sequence[str], rules: Sequence[Rule], run: RayJudgeRun) -> list[_Pending]:
    """Every distinct request the job needs that the cache lacks: the references first, then input-major."""
    wanted: dict[str, _Pending] = {}
    labels = _reference_labels(judge, rules)
    for request in judge.reference_requests(rules):
        wanted.setdefault(request.key, _Pending(request, [labels.get(request.key, "")], reference=True))
    for query in queries:
        for request in judge.requests(query, rules):
            entry = wanted.setdefault(request.key, _Pending(request, [], reference=False))
            if query not in entry.queries:
                entry.queries.append(query)
    run.requested = len(wanted)
    store = VerdictStore(judge.settings.cache)
    pending = [p for key, p in wanted.items() if store.get(key) is None]
    run.cached = run.requested - len(pending)
    run.sent = len(pending)
    return pending


def _reference_labels(judge: Any, rules: Sequence[Rule]) -> dict[str, str]:
    """The reference input of each reference request's key, for the failure report (empty if not known)."""
    references = getattr(judge.calibration, "reference_inputs", None) or ()
    return {r.key: ref for ref in references for r in judge.requests(ref, rules)}


def _send(
    judge: Any,
    processor: Processor,
    pending: list[_Pending],
    run: RayJudgeRun,
    *,
    asked: str | None,
    max_attempts: int,
    retry_backoff: float,
    batch_size: int,
    workers: int,
) -> list[_Pending]:
    """Run the pending requests through Ray in passes, recording replies; return those still failing.

    A reply another model than ``asked`` (``None``: none named) gave is kept apart, and its request
    fails for good (:meth:`~langchain_tag.judging.chat.ChatJudge.keep`).
    """
    import ray.data

    started = time.perf_counter()
    finished: list[_Pending] = []  # failed for good (a permanent fault): not sent again
    for attempt in range(1, max_attempts + 1):
        if not pending:
            break
        if attempt > 1 and retry_backoff > 0:
            time.sleep(retry_backoff * 2 ** (attempt - 2))
        rows = [
            {"order": i, "key": p.request.key, "request": json.dumps(p.request.to_dict())}
            for i, p in enumerate(pending)
        ]
        for p in pending:
            p.attempts += 1
            p.error, p.reply = "no output row for this request", None
        run.passes += 1
        run.calls += len(rows)
        # Blocks of consecutive rows keep each input's requests together (input-major) in few tasks.
        blocks = _blocks(len(rows), batch_size, workers)
        dataset: Dataset = processor(ray.data.from_items(rows, override_num_blocks=blocks))
        for row in _output_rows(dataset):
            entry = pending[int(row["order"])]
            error = str(row.get("__inference_error__") or row.get("error") or "")
            if not error:
                text, logprobs = str(row.get("text") or ""), _logprobs(row.get("logprobs"))
                answered = str(row.get("model") or "") or None
                error = _keep(judge, entry.request, row, text, logprobs, answered, asked).error or ""
                entry.foreign = foreign_reply(asked, answered) is not None
                entry.reply = (text, logprobs) if error and not entry.foreign else None
            elif row.get("text"):  # the pipeline read a reply that is not a verdict
                entry.reply = (str(row["text"]), _logprobs(row.get("logprobs")))
            entry.error = error
        failed = [p for p in pending if p.error]
        finished.extend(p for p in failed if p.final)
        pending = [p for p in failed if not p.final]
    run.seconds = time.perf_counter() - started
    return [*finished, *pending]


def _keep(
    judge: Any,
    request: PairRequest,
    row: Mapping[str, Any],
    text: str,
    logprobs: Any,
    answered: str | None,
    asked: str | None,
) -> Reading:
    """Keep an answered row's reading in the verdict cache, reading its reply only if the pipeline did not.

    The pipeline's postprocess read the reply (:func:`~langchain_tag.scale.ray_data.requests.read_chat_response`);
    a processor of one's own that left it unread has it read here, by the judge's
    :meth:`~langchain_tag.judging.chat.ChatJudge.record`. Either way the one reader reads each reply once, and
    the judge's :meth:`~langchain_tag.judging.chat.ChatJudge.keep` decides where it may be kept.
    """
    reading = row_reading(row)
    kept: Reading
    if reading is None:
        kept = judge.record(
            request,
            text,
            logprobs,
            prompt_tokens=int(row.get("prompt_tokens") or 0),
            completion_tokens=int(row.get("completion_tokens") or 0),
            answered=answered,
            asked=asked,
        )
    else:
        kept = judge.keep(request, reading, answered=answered, asked=asked)
    return kept


def _most_workers(concurrency: int | tuple[int, int]) -> int:
    """The most HTTP workers Ray may run for ``concurrency`` (``n`` or ``(m, n)``)."""
    return max(1, concurrency[1] if isinstance(concurrency, tuple) else concurrency)


def _blocks(rows: int, batch_size: int, workers: int) -> int:
    """Blocks for ``rows`` rows: one per worker (no more than there are batches), more past 16 batches a block."""
    batches = -(-rows // max(1, batch_size))
    return max(1, min(workers, batches), -(-batches // BATCHES_PER_BLOCK))


def _output_rows(dataset: Dataset) -> Iterator[dict[str, Any]]:
    for row in dataset.iter_rows():
        yield dict(row)


def _logprobs(value: Any) -> dict[str, Any] | None:
    """The logprobs object of an output row: JSON text (``""`` for none) or already an object."""
    if value is None or value == "":
        return None
    if isinstance(value, Mapping):
        return dict(value)
    parsed = json.loads(str(value))
    return parsed if isinstance(parsed, dict) else None


# --------------------------------------------------------------------------- results
class RayRequestError(ReportedFault):
    """A request that failed in the Ray job, replayed to the judge so its judgment reports the failure."""


class _RayReplies(RecordedReplies):
    """The judge model after a Ray job: the replies are in the cache; a failed request raises its recorded error."""

    error_type: ClassVar[type[Exception]] = RayRequestError

    @property
    def _llm_type(self) -> str:
        return "langchain-tag-ray-failures"

    def missing_message(self) -> str:
        return "no reply was recorded for this request in the Ray job"


def _results(
    retriever: ApplicabilityRetriever,
    queries: Sequence[str],
    rules: Sequence[Rule],
    failed: Sequence[_Pending],
    input_errors: dict[int, str],
) -> list[MatchResult]:
    """Each input's result: ``retriever.match`` when all its requests were answered, else a replay of the failures.

    An input none of whose judgments could be made gets its error in ``input_errors`` (by index).
    """
    failed_queries = {q for p in failed for q in p.queries}
    references_failed = any(p.reference for p in failed)
    stand_in: ApplicabilityRetriever | None = None
    results = []
    for index, query in enumerate(queries):
        if not references_failed and query not in failed_queries:
            result = retriever.match(query)
            if result.calls:
                logger.warning(
                    "judge_with_ray: %d judgment(s) of an input were not in the cache and were made in process",
                    result.calls,
                )
            results.append(result)
            continue
        if stand_in is None:
            stand_in = _stand_in(retriever, failed)
        try:
            results.append(stand_in.match(query))
        except ProviderError as exc:  # every judgment (or every reference judgment) of this input failed
            input_errors[index] = str(exc)
            predicate = resolve_judge_prompt(retriever.predicate).name
            judgments = [Judgment(rule_id=r.rule_id, error=str(exc), attempts=1) for r in rules]
            results.append(MatchResult(query=query, predicate=predicate, judgments=judgments))
    return results


def _stand_in(retriever: ApplicabilityRetriever, failed: Sequence[_Pending]) -> ApplicabilityRetriever:
    """The retriever with :class:`_RayReplies` as its judge model, the same cache, calibration and threshold."""
    llm = chat_model_of(retriever.llm)
    found = getattr(llm, "openai_api_base", None)
    replies = _RayReplies(
        errors={prompt_key(p.request.messages): p.error for p in failed if p.reply is None},
        replies={prompt_key(p.request.messages): p.reply for p in failed if p.reply is not None},
        described_as=describe_model(retriever.llm),
        max_retries=client_retries(retriever.llm),
        model_name=getattr(llm, "model_name", None) or "ray-data",
        base_url=redact_url(found) if isinstance(found, str) else None,
        metadata={IDENTITY_METADATA_KEY: retriever.judge.model_identity},
    )
    fields = {name: getattr(retriever, name) for name in type(retriever).model_fields}
    fields.update(llm=replies, strict=False, calibration=retriever.judge.calibration, reference_inputs=None)
    return ApplicabilityRetriever(**fields)
