"""The Ray Data LLM processor that posts judge requests to an OpenAI-compatible endpoint.

:func:`build_judge_processor` is Ray Data's own HTTP request processor
(``ray.data.llm.HttpRequestProcessorConfig``) with the pure steps of
:mod:`langchain_tag.scale.ray_data.requests` on each side, and a
:class:`ReplySession` that turns every response, failed or not, into a row.
"""

from __future__ import annotations

import base64
import functools
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from langchain_tag.calls.faults import describe_error
from langchain_tag.calls.identity import redact_url
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


def require_ray() -> None:
    """Check that the modules of the ``ray`` extra (Ray Data's LLM API and ``aiohttp``) can be imported.

    Raises:
        MissingExtraError: When the ``ray`` extra is not installed.
    """
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
    require_ray()
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
    num_cpus: float = 0.25,
    timeout: float = 120.0,
    qps: int | None = None,
) -> Processor:
    """The Ray Data LLM processor that judges request rows against an OpenAI-compatible endpoint.

    Input rows: ``order``, ``key`` and ``request`` (a
    :class:`~langchain_tag.judging.pairs.PairRequest` as JSON); output rows:
    :data:`OUTPUT_COLUMNS`.

    Args:
        base_url: The endpoint's base URL, ending in ``/v1`` (``/chat/completions`` is added; credentials
            and a query in it are handled as the in-process client does: :func:`chat_completions_request`).
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
        session_factory=functools.partial(ReplySession, timeout=timeout),
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
