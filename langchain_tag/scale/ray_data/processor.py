"""The Ray Data LLM processor that posts judge requests to an OpenAI-compatible endpoint.

:func:`build_judge_processor` is Ray Data's own HTTP request processor
(``ray.data.llm.HttpRequestProcessorConfig``) with the pure steps of
:mod:`langchain_tag.scale.ray_data.requests` on each side, and a
:class:`ReplySession` that turns every response, failed or not, into a row.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import os
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import unquote, urlsplit, urlunsplit

from langchain_tag.calls._faults import describe_error
from langchain_tag.calls._identity import redact_url
from langchain_tag.errors import require_extra
from langchain_tag.scale.ray_data.requests import postprocess_row, preprocess_row

if TYPE_CHECKING:
    from ray.data.llm import Processor

__all__ = [
    "EXTRA",
    "ReplySession",
    "build_judge_processor",
    "chat_completions_request",
    "init_local_ray",
    "quiet_ray_logging",
    "require_ray",
]

EXTRA = "ray"


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
    """An ``aiohttp`` session for Ray Data's HTTP request stage: requests in flight together, none failing a batch.

    Ray Data's stage awaits a batch's requests one after another, so an
    ``aiohttp`` session sends them one at a time. This session starts each
    request when the stage creates it, so a batch's requests are in flight
    together, at most ``max_in_flight`` at once in the worker's process (one
    gate shared by every batch the worker runs, so a hard cap). And where the
    stage raises (and Ray Data fails the whole job) on a body that is not JSON
    or on an error left after its retries, every request here yields
    ``{"status", "body", "error"}`` instead: the HTTP status and raw body, or
    why no response came. :func:`read_chat_response` turns that into a verdict
    or a per-request error, and :func:`judge_with_ray` sends failed requests
    again in a later pass.

    Args:
        timeout: Seconds allowed for each request.
        max_in_flight: Most requests in flight at once in this worker (``None``: no cap beyond the batch).
    """

    _gates: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, timeout: float = 120.0, max_in_flight: int | None = None) -> None:
        import aiohttp

        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self._aiohttp = aiohttp
        limit = max_in_flight or 0  # 0: aiohttp's "no limit"
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=timeout), connector=aiohttp.TCPConnector(limit=limit)
        )
        self._gate = self._shared_gate(max_in_flight) if max_in_flight else None
        self._started: list[asyncio.Task[_Response]] = []

    @classmethod
    def _shared_gate(cls, max_in_flight: int) -> asyncio.Semaphore:
        """The worker's one gate for ``max_in_flight`` on the running event loop (every batch's session shares it)."""
        loop = asyncio.get_running_loop()
        gates = cls._gates.setdefault(loop, {})
        return gates.setdefault(max_in_flight, asyncio.Semaphore(max_in_flight))

    async def __aenter__(self) -> ReplySession:
        await self._session.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        for task in self._started:
            task.cancel()  # only requests whose response the stage never read (it failed part-way)
        await asyncio.gather(*self._started, return_exceptions=True)
        await self._session.__aexit__(*exc)

    def post(self, url: str, **kwargs: Any) -> asyncio.Task[_Response]:
        """Start one request now; awaiting it gives a response whose ``json()`` is ``{"status", "body", "error"}``."""
        task = asyncio.ensure_future(self._post(url, kwargs))
        self._started.append(task)
        return task

    async def _post(self, url: str, kwargs: dict[str, Any]) -> _Response:
        if self._gate is None:
            return await self._send(url, kwargs)
        async with self._gate:
            return await self._send(url, kwargs)

    async def _send(self, url: str, kwargs: dict[str, Any]) -> _Response:
        try:
            async with self._session.post(url, **kwargs) as response:
                return _Response(response.status, await response.text(errors="replace"), "")
        except (self._aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            return _Response(0, "", f"request to {redact_url(url)} failed: {describe_error(exc)}")


def require_ray() -> None:
    """Check that the modules of the ``ray`` extra (Ray Data's LLM API and ``aiohttp``) can be imported.

    Raises:
        MissingExtraError: When the ``ray`` extra is not installed.
    """
    require_extra("ray.data.llm", EXTRA)
    require_extra("aiohttp", EXTRA)


def init_local_ray(num_cpus: int | None = None, *, verbose: bool = False, **kwargs: Any) -> None:
    """Start a Ray instance on this machine, unless one is running (or join one: ``address=``).

    No dashboard, no usage statistics (``RAY_USAGE_STATS_ENABLED=0`` unless
    set), workers' logs kept out of this process's output. Unless
    ``verbose``, Ray's and Ray Data's INFO messages and Ray Data's progress
    bars stay out of the terminal too (warnings and errors still show).
    Without it, the first Ray Data call starts a default local instance itself.

    Args:
        num_cpus: CPUs Ray may use (all by default).
        verbose: Keep Ray's INFO logging and Ray Data's progress bars.
        **kwargs: More ``ray.init`` arguments.

    Raises:
        MissingExtraError: When the ``ray`` extra is not installed.
    """
    require_ray()
    import ray
    from ray.data import DataContext

    if not verbose:
        quiet_ray_logging()
        DataContext.get_current().enable_progress_bars = False
    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    options: dict[str, Any] = {
        "num_cpus": num_cpus,
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.INFO if verbose else logging.WARNING,
    }
    options.update(kwargs)
    ray.init(**options)


RAY_LOGGERS = ("ray", "ray.data", "ray.llm", "ray._private")
"""The loggers :func:`quiet_ray_logging` sets to WARNING."""

RAY_NOTICES = ("ray.data._internal.progress", "ray._private.authentication.authentication_token_setup")
"""Loggers of two warnings every local run prints, that ask nothing of the user: "Progress bars disabled"
and "Token authentication is enabled"; :func:`quiet_ray_logging` sets them to ERROR."""


def quiet_ray_logging() -> None:
    """Keep Ray's and Ray Data's INFO messages out of this process's terminal (warnings and errors still show)."""
    for name in RAY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in RAY_NOTICES:
        logging.getLogger(name).setLevel(logging.ERROR)


def chat_completions_request(base_url: str, api_key: str | None = None) -> tuple[str, dict[str, str]]:
    """The chat-completions URL of ``base_url`` and the headers to send, as the in-process client sends them.

    ``/chat/completions`` is added to the path, before a query (``?api-key=...``,
    ``?api-version=...``), which is kept. Credentials in the URL (``user:pass@``)
    are moved to an ``Authorization: Basic`` header, as the in-process HTTP
    client does with them (it replaces the bearer token); else ``api_key`` is
    sent as ``Authorization: Bearer ...``.
    """
    parts = urlsplit(base_url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        user, _, password = userinfo.partition(":")
        token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    path = parts.path.rstrip("/") + "/chat/completions"
    return urlunsplit((parts.scheme, netloc, path, parts.query, "")), headers


def build_judge_processor(
    *,
    base_url: str,
    model: str,
    api_key: str | None = None,
    extra_body: Mapping[str, Any] | None = None,
    max_tokens: int | None = 1,
    concurrency: int | tuple[int, int] = 1,
    batch_size: int = 16,
    max_in_flight: int | None = 8,
    num_cpus: float = 0.25,
    timeout: float = 120.0,
    qps: int | None = None,
) -> Processor:
    """The Ray Data LLM processor that judges request rows against an OpenAI-compatible endpoint.

    Input rows: ``order``, ``key`` and ``request`` (a
    :class:`~langchain_tag.judging._pairs.PairRequest` as JSON); output rows:
    :data:`OUTPUT_COLUMNS`.

    Args:
        base_url: The endpoint's base URL, ending in ``/v1`` (``/chat/completions`` is added; credentials
            and a query in it are handled as the in-process client does: :func:`chat_completions_request`).
        model: The model name it serves.
        api_key: Sent as ``Authorization: Bearer ...`` when given.
        extra_body: More request body fields (``{"cache_prompt": True}`` for llama.cpp).
        max_tokens: The reply cap (1 for one-word verdicts, ``None`` for JSON ones).
        concurrency: HTTP workers (Ray actors): ``n`` scales between 1 and
            ``n``, ``(m, n)`` between ``m`` and ``n``.
        batch_size: Rows per batch a worker takes.
        max_in_flight: Most requests each worker has in flight at once, over
            all its batches (``None``: a whole batch at once). The job's cap is
            this times the workers.
        num_cpus: CPUs reserved per HTTP worker (it mostly waits on the endpoint).
        timeout: Seconds allowed per request.
        qps: Most requests per second per worker (no limit by default).

    Raises:
        MissingExtraError: When the ``ray`` extra is not installed.
    """
    require_ray()
    from ray.data.llm import HttpRequestProcessorConfig, build_processor

    url, headers = chat_completions_request(base_url, api_key)
    config = HttpRequestProcessorConfig(
        url=url,
        headers=headers or None,
        qps=qps,
        max_retries=0,  # resends are whole passes of failed rows (judge_with_ray's max_attempts)
        batch_size=batch_size,
        concurrency=concurrency,
        session_factory=functools.partial(ReplySession, timeout=timeout, max_in_flight=max_in_flight),
        http_request_stage={"num_cpus": num_cpus},
    )
    return build_processor(
        config,
        preprocess=functools.partial(
            preprocess_row, model=model, max_tokens=max_tokens, extra_body=dict(extra_body or {})
        ),
        postprocess=postprocess_row,
        preprocess_map_kwargs={"num_cpus": num_cpus},
        postprocess_map_kwargs={"num_cpus": num_cpus},
    )
