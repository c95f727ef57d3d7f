"""Judging on Ray Data: the same judging core, distributed by a Ray Data LLM pipeline.

Needs the ``ray`` extra (``pip install "langchain-tag[ray]"``); the core
never imports this module. The pipeline is Ray Data's own LLM processor
(:mod:`ray.data.llm`), with the package's pure judging core on each side:

1. **preprocess** (:func:`chat_request_body`): a
   :class:`~langchain_tag.pairs.PairRequest` rendered by
   :func:`~langchain_tag.pairs.render_pairs` becomes an OpenAI chat-completions
   request body: ``temperature=0``, ``logprobs=True``, ``top_logprobs=5`` and,
   for one-word verdicts, ``max_tokens=1``, as the in-process judge sends;
2. **the model calls**: the HTTP request processor
   (``HttpRequestProcessorConfig``) posts each body to any OpenAI-compatible
   ``/chat/completions`` endpoint (vLLM, llama.cpp, SGLang, OpenAI), with
   ``concurrency`` Ray actors each sending one batch of ``batch_size`` rows;
3. **postprocess** (:func:`read_chat_response`): each response is read with
   :func:`~langchain_tag.pairs.read_reply` into the reply text, its
   first-token logprobs, P(YES) and token counts, or a per-request error.

:func:`judge_with_ray` drives a whole job: it collects every request needed
(each input against each rule, both halves for a contrast prompt, and the
calibration's reference judgments once), skips those already in the verdict
cache, sends the rest through the pipeline with rows grouped input-major (an
input's requests are consecutive, so a server's prefix cache keeps the input
hot), records each reply with :meth:`PairwiseJudge.record
<langchain_tag.matcher.PairwiseJudge.record>` and returns each input's
:class:`~langchain_tag.matcher.MatchResult` from
:meth:`ApplicabilityRetriever.match
<langchain_tag.retrievers.ApplicabilityRetriever.match>`, which then finds
every verdict in the cache and makes no call. Verdicts, scores and
calibration are therefore those of in-process judging, for the same
replies: a server that answers one prompt slightly differently from run to
run does so in process too (llama.cpp's prompt cache moves P(YES) in the
second or third decimal; send ``{"cache_prompt": False}`` for replies that
repeat exactly).

A request that fails (an HTTP error, a connection error, a response or a
reply that cannot be read) does not stop the job: it is sent again in a
later pass, up to ``max_attempts`` passes as in process, then reported in
:attr:`RayJudgeRun.failures` and counted as NO in its input's result, with
the error, as a failed in-process judgment is.

Example, on one machine against the embedded model::

    from langchain_tag import ApplicabilityRetriever
    from langchain_tag.local import get_chat_model
    from langchain_tag.ray_data import init_local_ray, judge_with_ray
    from langchain_tag.verdict_cache import SQLiteVerdictCache

    judge_llm = get_chat_model(role="judge")
    retriever = ApplicabilityRetriever(llm=judge_llm, rules=rules, cache=SQLiteVerdictCache("verdicts.sqlite"))
    init_local_ray(num_cpus=2)
    run = judge_with_ray(retriever, inputs)  # endpoint and model read from judge_llm
    for result in run.results:
        print(result.query[:40], [j.rule_id for j in result.matched])
    print(run.failures)

On a cluster, connect first (``ray.init(address="auto")``) and install
``langchain-tag[ray]`` on the workers (for example with
``runtime_env={"pip": ["langchain-tag[ray]"]}``): the pre- and postprocess
steps run there. Pass ``base_url=`` and ``model=`` for an endpoint other than
the judge model's; it must serve the same model, since verdicts are cached
under the judge model's identity.

**vLLM engine on GPU clusters.** Instead of an HTTP endpoint, Ray Data can
run vLLM itself in its actors (``pip install "ray[llm]"``, which brings
vLLM): build the processor from ``vLLMEngineProcessorConfig`` and pass it as
``processor=``. Its rows carry ``messages`` and ``sampling_params`` in, and
``generated_text`` and per-token ``logprobs`` (``{token_id: {"logprob",
"rank", "decoded_token"}}``) out, so its postprocess must turn those into the
columns :func:`read_chat_response` gives (``text``, ``logprobs`` as the
OpenAI object in JSON, ``error``). A sketch (not run here: no GPU)::

    import json
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    config = vLLMEngineProcessorConfig(
        model_source="Qwen/Qwen2.5-Coder-1.5B-Instruct",
        engine_kwargs={"enable_prefix_caching": True, "max_model_len": 8192},
        concurrency=4,  # engine replicas, one GPU each
        batch_size=64,
    )

    def preprocess(row):
        request = json.loads(row["request"])
        return {
            "messages": request["messages"],
            "sampling_params": {"temperature": 0, "max_tokens": 1, "logprobs": 5},
        }

    def postprocess(row):
        first = row["logprobs"][0]  # the first generated token's candidates
        top = sorted(first.values(), key=lambda c: c["rank"])[:5]
        logprobs = {"content": [{
            "token": row["generated_text"],
            "logprob": max(c["logprob"] for c in top),
            "top_logprobs": [{"token": c["decoded_token"], "logprob": c["logprob"]} for c in top],
        }]}
        return {
            **{k: row[k] for k in ("order", "key", "request")},
            "text": row["generated_text"], "logprobs": json.dumps(logprobs), "p_yes": None,
            "prompt_tokens": row["num_input_tokens"], "completion_tokens": row["num_generated_tokens"],
            "error": "",
        }

    run = judge_with_ray(retriever, inputs, processor=build_processor(config, preprocess, postprocess))

For identical verdicts the in-process judge must then be the same model
served by vLLM (``ChatOpenAI(base_url=<vllm serve>/v1, model=...)``), so the
cache keys name the same model.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult
from pydantic import Field
from typing_extensions import override

from langchain_tag.errors import ParseError, ProviderError, TagError, require_extra
from langchain_tag.faults import IDENTITY_METADATA_KEY, chat_model_of, describe_error, redact_url
from langchain_tag.matcher import resolve_judge_prompt
from langchain_tag.pairs import Judgment, MatchResult, PairRequest, read_reply
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule, rule_documents, rules_from_documents

if TYPE_CHECKING:
    from ray.data import Dataset
    from ray.data.llm import Processor

__all__ = [
    "OUTPUT_COLUMNS",
    "RayJudgeRun",
    "RayRequestError",
    "ReplySession",
    "RequestFailure",
    "build_judge_processor",
    "chat_request_body",
    "init_local_ray",
    "judge_with_ray",
    "read_chat_response",
]

logger = logging.getLogger(__name__)

EXTRA = "ray"
TOP_LOGPROBS = 5
"""``top_logprobs`` asked for, as the in-process judge asks."""

OUTPUT_COLUMNS = ("order", "key", "request", "text", "logprobs", "p_yes", "prompt_tokens", "completion_tokens", "error")
"""The columns of each pipeline output row (what :func:`read_chat_response` adds to ``order``, ``key``, ``request``)."""


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class RequestFailure:
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
        requested: Distinct requests the job needed (inputs, halves, references).
        cached: Of those, how many the verdict cache already held (not sent).
        sent: How many were sent through Ray (``requested - cached``).
        calls: HTTP requests made, resends included.
        passes: Ray Data passes run (1, plus one per round of resends).
        seconds: Wall time of the Ray passes.
    """

    results: list[MatchResult] = field(default_factory=list)
    failures: list[RequestFailure] = field(default_factory=list)
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


# --------------------------------------------------------------------------- pure steps
def chat_request_body(
    request: Mapping[str, Any],
    *,
    model: str,
    max_tokens: int | None = 1,
    top_logprobs: int = TOP_LOGPROBS,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The OpenAI chat-completions body for one request (the pipeline's preprocess).

    Args:
        request: A :class:`~langchain_tag.pairs.PairRequest` as :meth:`~PairRequest.to_dict` gives it.
        model: The model name the endpoint serves.
        max_tokens: The reply cap: 1 for one-word verdicts, ``None`` for none (JSON verdicts).
        top_logprobs: How many first-token candidates to ask for.
        extra_body: More fields for the body (for example ``{"cache_prompt": True}`` for llama.cpp).
    """
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": str(m["role"]), "content": str(m["content"])} for m in request["messages"]],
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": top_logprobs,
    }
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    body.update(extra_body or {})
    return body


def read_chat_response(status: int, body: str, transport_error: str = "") -> dict[str, Any]:
    """Read one chat-completions response (the pipeline's postprocess).

    Args:
        status: The HTTP status (0 when no response came).
        body: The response body.
        transport_error: Why no response came, if none did.

    Returns:
        ``text`` (the reply), ``logprobs`` (the first choice's logprobs
        object as JSON, ``""`` without), ``p_yes`` (from
        :func:`~langchain_tag.pairs.read_reply`, ``None`` for a text
        verdict), ``prompt_tokens``, ``completion_tokens`` and ``error``
        (``""`` when the reply was read).
    """
    row: dict[str, Any] = {
        "text": "",
        "logprobs": "",
        "p_yes": None,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "error": "",
    }
    if transport_error:
        row["error"] = transport_error
        return row
    if not 200 <= status < 300:
        row["error"] = f"HTTP {status}: {_preview(body)}"
        return row
    try:
        data = json.loads(body)
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
        logprobs = choice.get("logprobs")
        usage = data.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        row["error"] = f"unreadable response: {_preview(body)}"
        return row
    row["text"] = text
    row["logprobs"] = json.dumps(logprobs) if logprobs is not None else ""
    row["prompt_tokens"] = int(usage.get("prompt_tokens") or 0)
    row["completion_tokens"] = int(usage.get("completion_tokens") or 0)
    try:
        row["p_yes"] = read_reply(text, logprobs).probability
    except ParseError as exc:
        row["error"] = str(exc)
    return row


def _preview(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


def _preprocess(row: dict[str, Any], *, model: str, max_tokens: int | None, extra_body: dict[str, Any]) -> dict:
    return {
        "payload": chat_request_body(
            json.loads(row["request"]), model=model, max_tokens=max_tokens, extra_body=extra_body
        )
    }


def _postprocess(row: dict[str, Any]) -> dict[str, Any]:
    response = row["http_response"]
    read = read_chat_response(int(response["status"]), str(response["body"]), str(response["error"]))
    return {"order": row["order"], "key": row["key"], "request": row["request"], **read}


# --------------------------------------------------------------------------- HTTP session
class _Response:
    """What the HTTP stage reads from a response: always a 200 carrying the real status, body or error."""

    status = 200
    reason = "OK"

    def __init__(self, status: int, body: str, error: str) -> None:
        self._data = {"status": status, "body": body, "error": error}

    async def __aenter__(self) -> _Response:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def json(self) -> dict[str, Any]:
        return self._data


class ReplySession:
    """An ``aiohttp`` session for Ray Data's HTTP request stage that never fails a batch.

    The stage raises (and Ray Data fails the whole job) on a body that is
    not JSON or on an error left after its retries. Through this session
    every request yields ``{"status", "body", "error"}`` instead: the HTTP
    status and raw body, or why no response came. :func:`read_chat_response`
    turns that into a verdict or a per-request error, and
    :func:`judge_with_ray` sends failed requests again in a later pass.

    Args:
        timeout: Seconds allowed for each request.
    """

    def __init__(self, timeout: float = 120.0) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))

    async def __aenter__(self) -> ReplySession:
        await self._session.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._session.__aexit__(*exc)

    def post(self, url: str, **kwargs: Any) -> Any:
        """Send one request; awaiting it gives a response whose ``json()`` is ``{"status", "body", "error"}``."""
        return self._post(url, kwargs)

    async def _post(self, url: str, kwargs: dict[str, Any]) -> _Response:
        import asyncio

        try:
            async with self._session.post(url, **kwargs) as response:
                return _Response(response.status, await response.text(errors="replace"), "")
        except (self._aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            return _Response(0, "", f"request to {redact_url(url)} failed: {describe_error(exc)}")


# --------------------------------------------------------------------------- Ray
def _require_ray() -> None:
    require_extra("ray.data.llm", EXTRA)
    require_extra("aiohttp", EXTRA)


def init_local_ray(num_cpus: int | None = None, **kwargs: Any) -> None:
    """Start a Ray instance on this machine, unless one is running.

    No dashboard, no usage statistics (``RAY_USAGE_STATS_ENABLED=0`` unless
    set), workers' logs kept out of this process's output. Without it, the
    first Ray Data call starts a default local instance itself.

    Args:
        num_cpus: CPUs Ray may use (all by default).
        **kwargs: More ``ray.init`` arguments.

    Raises:
        MissingExtraError: When the ``ray`` extra is not installed.
    """
    _require_ray()
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    options: dict[str, Any] = {
        "num_cpus": num_cpus,
        "include_dashboard": False,
        "log_to_driver": False,
    }
    options.update(kwargs)
    ray.init(**options)


def build_judge_processor(
    *,
    base_url: str,
    model: str,
    api_key: str | None = None,
    extra_body: Mapping[str, Any] | None = None,
    max_tokens: int | None = 1,
    concurrency: int | tuple[int, int] = 1,
    batch_size: int = 16,
    num_cpus: float = 0.25,
    timeout: float = 120.0,
    qps: int | None = None,
) -> Processor:
    """The Ray Data LLM processor that judges request rows against an OpenAI-compatible endpoint.

    Input rows: ``order``, ``key`` and ``request`` (a
    :class:`~langchain_tag.pairs.PairRequest` as JSON); output rows:
    :data:`OUTPUT_COLUMNS`.

    Args:
        base_url: The endpoint's base URL, ending in ``/v1`` (``/chat/completions`` is added).
        model: The model name it serves.
        api_key: Sent as ``Authorization: Bearer ...`` when given.
        extra_body: More request body fields (``{"cache_prompt": True}`` for llama.cpp).
        max_tokens: The reply cap (1 for one-word verdicts, ``None`` for JSON ones).
        concurrency: HTTP workers (Ray actors): ``n`` scales between 1 and
            ``n``, ``(m, n)`` between ``m`` and ``n``. Each sends its batch's
            requests one after another.
        batch_size: Rows per batch a worker takes.
        num_cpus: CPUs reserved per HTTP worker (it mostly waits on the endpoint).
        timeout: Seconds allowed per request.
        qps: Most requests per second per worker (no limit by default).

    Raises:
        MissingExtraError: When the ``ray`` extra is not installed.
    """
    _require_ray()
    from ray.data.llm import HttpRequestProcessorConfig, build_processor

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    config = HttpRequestProcessorConfig(
        url=base_url.rstrip("/") + "/chat/completions",
        headers=headers,
        qps=qps,
        max_retries=0,  # resends are whole passes of failed rows (judge_with_ray's max_attempts)
        batch_size=batch_size,
        concurrency=concurrency,
        session_factory=functools.partial(ReplySession, timeout=timeout),
        http_request_stage={"num_cpus": num_cpus},
    )
    return build_processor(
        config,
        preprocess=functools.partial(
            _preprocess, model=model, max_tokens=max_tokens, extra_body=dict(extra_body or {})
        ),
        postprocess=_postprocess,
        preprocess_map_kwargs={"num_cpus": num_cpus},
        postprocess_map_kwargs={"num_cpus": num_cpus},
    )


# --------------------------------------------------------------------------- the job
@dataclass
class _Pending:
    request: PairRequest
    queries: list[str]
    reference: bool
    attempts: int = 0
    error: str = ""


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
    max_attempts: int = 2,
    retry_backoff: float = 1.0,
    timeout: float = 120.0,
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
        max_attempts: Passes a request may take before it is reported failed.
        retry_backoff: Seconds before the first resend pass, doubled for each further one.
        timeout: Seconds allowed per request.
        num_cpus: CPUs reserved per HTTP worker.
        processor: A Ray Data LLM processor to use instead of the HTTP one
            built from the arguments above: it takes rows with ``order``,
            ``key`` and ``request`` and gives :data:`OUTPUT_COLUMNS` (see the
            vLLM sketch in this module's docstring).

    Returns:
        Each input's result, the failed requests and counts.

    Raises:
        MissingExtraError: When the ``ray`` extra is not installed.
        ValueError: On a retriever without a verdict cache or with vector-store
            candidates, an endpoint that cannot be found, or bad arguments.
    """
    _require_ray()
    if isinstance(inputs, str):
        raise ValueError("inputs must be a sequence of inputs, not one string")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    if retriever.cache is None:
        raise ValueError("judge_with_ray needs a retriever with a verdict cache: replies are recorded there")
    if retriever.candidates is not None:
        raise ValueError("judge_with_ray judges the retriever's rules; vector-store candidates are not supported")
    judge = retriever.judge
    rules = rules_from_documents(rule_documents(retriever.rules))
    queries = list(inputs)
    if processor is None:
        endpoint = _endpoint(retriever, base_url=base_url, model=model, api_key=api_key, extra_body=extra_body)
        processor = build_judge_processor(
            **endpoint,
            max_tokens=1 if judge.verdict_format == "token" else None,
            concurrency=concurrency,
            batch_size=batch_size,
            num_cpus=num_cpus,
            timeout=timeout,
        )

    run = RayJudgeRun()
    if not queries:
        return run
    pending = _plan(judge, queries, rules, run)
    failed = _send(
        judge, processor, pending, run, max_attempts=max_attempts, retry_backoff=retry_backoff, block_rows=batch_size
    )
    run.failures = [
        RequestFailure(
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
    run.results = _results(retriever, queries, rules, failed)
    return run


def _endpoint(
    retriever: ApplicabilityRetriever,
    *,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    extra_body: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The endpoint to send to: the arguments given, else what the judge model (a ``ChatOpenAI``) names."""
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
        secret = getattr(llm, "openai_api_key", None)
        value = getattr(secret, "get_secret_value", lambda: secret)()
        api_key = value if isinstance(value, str) and value else None
    if extra_body is None:
        found = getattr(llm, "extra_body", None)
        extra_body = found if isinstance(found, Mapping) else None
    return {"base_url": base_url, "model": model, "api_key": api_key, "extra_body": extra_body}


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
    pending = [p for key, p in wanted.items() if not _cached(judge.cache, key)]
    run.cached = run.requested - len(pending)
    run.sent = len(pending)
    return pending


def _reference_labels(judge: Any, rules: Sequence[Rule]) -> dict[str, str]:
    """The reference input of each reference request's key, for the failure report (empty if not known)."""
    references = getattr(judge.calibration, "reference_inputs", None) or ()
    return {r.key: ref for ref in references for r in judge.requests(ref, rules)}


def _cached(cache: Any, key: str) -> bool:
    """Whether the judge would serve ``key`` from the cache (a stored P(YES), if any, within [0, 1])."""
    hit = cache.get(key)
    if hit is None:
        return False
    p = hit.probability
    return p is None or (isinstance(p, int | float) and not isinstance(p, bool) and 0.0 <= p <= 1.0)


def _send(
    judge: Any,
    processor: Processor,
    pending: list[_Pending],
    run: RayJudgeRun,
    *,
    max_attempts: int,
    retry_backoff: float,
    block_rows: int,
) -> list[_Pending]:
    """Run the pending requests through Ray in passes, recording replies; return those still failing."""
    import ray.data

    started = time.perf_counter()
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
            p.error = "no output row for this request"
        run.passes += 1
        run.calls += len(rows)
        # Blocks of consecutive rows keep each input's requests together (input-major) in few tasks.
        dataset: Dataset = processor(ray.data.from_items(rows, override_num_blocks=_blocks(len(rows), block_rows)))
        for row in _output_rows(dataset):
            entry = pending[int(row["order"])]
            error = str(row.get("__inference_error__") or row.get("error") or "")
            if not error:
                judgment = judge.record(
                    entry.request,
                    str(row.get("text") or ""),
                    _logprobs(row.get("logprobs")),
                    prompt_tokens=int(row.get("prompt_tokens") or 0),
                    completion_tokens=int(row.get("completion_tokens") or 0),
                )
                error = judgment.error or ""
            entry.error = error
        pending = [p for p in pending if p.error]
    run.seconds = time.perf_counter() - started
    return pending


def _blocks(rows: int, block_rows: int) -> int:
    """How many blocks hold ``rows`` rows, ``block_rows`` (a batch) each."""
    return max(1, -(-rows // max(1, block_rows)))


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
class RayRequestError(TagError, RuntimeError):
    """A request that failed in the Ray job, replayed to the judge so its judgment reports the failure."""


class _FailedRequests(BaseChatModel):
    """Stands in for the judge model after a Ray job: raises the recorded error of each failed request.

    Its identity is the judge model's, so every other pair comes from the
    verdict cache; a prompt it has no failure for raises too, so no call is
    ever made.
    """

    errors: dict[str, str] = Field(default_factory=dict)
    model_name: str = "ray-data"
    base_url: str | None = None

    @property
    def _llm_type(self) -> str:
        return "langchain-tag-ray-failures"

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        error = self.errors.get(_prompt_key(messages))
        raise RayRequestError(error or "no reply was recorded for this request in the Ray job")


def _prompt_key(messages: Sequence[Any]) -> str:
    """One string for a prompt's messages (roles and text), from LangChain messages or request dicts."""
    parts = []
    for m in messages:
        if isinstance(m, Mapping):
            parts.append(f"{m['role']}\x00{m['content']}")
        else:
            parts.append(f"{'system' if isinstance(m, SystemMessage) else 'user'}\x00{m.content}")
    return "\x01".join(parts)


def _results(
    retriever: ApplicabilityRetriever, queries: Sequence[str], rules: Sequence[Rule], failed: Sequence[_Pending]
) -> list[MatchResult]:
    """Each input's result: ``retriever.match`` when all its requests were answered, else a replay of the failures."""
    failed_queries = {q for p in failed for q in p.queries}
    references_failed = any(p.reference for p in failed)
    stand_in: ApplicabilityRetriever | None = None
    results = []
    for query in queries:
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
            predicate = resolve_judge_prompt(retriever.predicate).name
            judgments = [Judgment(rule_id=r.rule_id, error=str(exc), attempts=1) for r in rules]
            results.append(MatchResult(query=query, predicate=predicate, judgments=judgments))
    return results


def _stand_in(retriever: ApplicabilityRetriever, failed: Sequence[_Pending]) -> ApplicabilityRetriever:
    """The retriever with :class:`_FailedRequests` as its judge model, the same cache, calibration and threshold."""
    llm = chat_model_of(retriever.llm)
    found = getattr(llm, "openai_api_base", None)
    replies = _FailedRequests(
        errors={_prompt_key(p.request.messages): p.error for p in failed},
        model_name=getattr(llm, "model_name", None) or "ray-data",
        base_url=redact_url(found) if isinstance(found, str) else None,
        metadata={IDENTITY_METADATA_KEY: retriever.judge.model_identity},
    )
    fields = {name: getattr(retriever, name) for name in type(retriever).model_fields}
    fields.update(llm=replies, strict=False, calibration=retriever.judge.calibration, reference_inputs=None)
    return ApplicabilityRetriever(**fields)
