"""Provider faults: which errors are transient, who retries them, and how they are reported.

Retry layering (one layer per kind of fault, so retries never multiply):

- Transport faults (timeouts, HTTP 429 and 5xx, refused or reset
  connections) are retried by the model's own client when it has one:
  ``ChatOpenAI(max_retries=N)`` retries with exponential backoff and jitter
  and honours ``Retry-After`` (:func:`~langchain_tag.local.models.get_chat_model`
  sets ``N`` from ``LANGCHAIN_TAG_MAX_RETRIES``). The extraction runner and
  the matcher then do not send such a call again.
- A model without client retries (``max_retries`` absent or 0) gets them from
  the runner and the matcher instead: the failed calls are sent again after a
  backoff with jitter, within their ``max_attempts``.
- Malformed replies are always retried by the runner and the matcher, within
  ``max_attempts`` (a second request at once: there is nothing to wait for).

After the last attempt the error names the provider (class, model, endpoint)
and the call (extraction phase and item, or the rule being judged). Every URL
printed is passed through :func:`redact_url` first: credentials in a base URL
(``user:pass@``, ``?api-key=...``) never reach an error message or a log.
"""

from __future__ import annotations

import random
import re
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = [
    "IDENTITY_METADATA_KEY",
    "backoff_delay",
    "chat_model_of",
    "client_retries",
    "describe_error",
    "describe_model",
    "is_transient",
    "model_identity",
    "model_name_and_endpoint",
    "redact_url",
    "redact_urls",
]

REDACTED = "***"
_SECRET_PARAM = re.compile(r"key|token|secret|passw|pwd|auth|sig|credential|session", re.IGNORECASE)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*[^\s'\"<>.,;:!?)\]]")


def redact_url(url: str) -> str:
    """``url`` with its credentials masked: the user info (``user:pass@``) and secret-looking query values.

    A query parameter is secret when its name mentions a key, token, secret,
    password, auth, signature, credential or session (``api-key``, ``key``,
    ``access_token``, ``sig``, ...). Other parts are kept, so the endpoint
    stays recognisable. A string that is not a URL is returned unchanged.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(_redact_param(p) for p in parts.query.split("&")) if parts.query else ""
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _redact_param(param: str) -> str:
    name, sep, _ = param.partition("=")
    return f"{name}={REDACTED}" if sep and _SECRET_PARAM.search(unquote(name)) else param


def redact_urls(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    return _URL.sub(lambda m: redact_url(m.group(0)), text)


_TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
_TRANSIENT_NAMES = frozenset(
    {
        "APITimeoutError",
        "APIConnectionError",
        "RateLimitError",
        "InternalServerError",
        "TimeoutException",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "ReadError",
        "WriteError",
        "RemoteProtocolError",
        "TransportError",
        "NetworkError",
    }
)


def is_transient(exc: BaseException) -> bool:
    """Whether a call that raised ``exc`` may succeed if sent again later.

    True for timeouts, connection errors (refused, reset), HTTP 408/409/429 and
    5xx from OpenAI-compatible clients, and httpx transport errors.
    """
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in _TRANSIENT_STATUS or status >= 500
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def chat_model_of(llm: Any) -> Any:
    """The chat model inside a runnable built from it: ``llm.bind(...)``, ``.with_retry()``, ``.with_config()``
    or ``.with_fallbacks()`` (the primary model); ``llm`` itself otherwise."""
    for _ in range(16):
        inner = getattr(llm, "bound", None)
        if inner is None:
            inner = getattr(llm, "runnable", None)
        if inner is None or inner is llm:
            return llm
        llm = inner
    return llm


def client_retries(llm: Any) -> int:
    """How many times the model's own client retries a transport fault (0 if it does not).

    ``max_retries=None`` on ``ChatOpenAI`` does not mean "no retries": the
    OpenAI client it wraps then uses its own default (2), which is read from
    that client (``root_client.max_retries``) where the model exposes it.
    A ``.with_retry()`` wrapper counts as the client's retries.
    """
    attempts = getattr(llm, "max_attempt_number", None)
    if isinstance(attempts, int) and not isinstance(attempts, bool) and attempts > 1:
        return attempts - 1
    llm = chat_model_of(llm)
    value = getattr(llm, "max_retries", None)
    if isinstance(value, int) and not isinstance(value, bool):
        return max(value, 0)
    if value is None and hasattr(llm, "max_retries"):
        for client in (getattr(llm, "root_client", None), getattr(llm, "client", None)):
            inner = getattr(client, "max_retries", None)
            if isinstance(inner, int) and not isinstance(inner, bool):
                return max(inner, 0)
    return 0


def model_name_and_endpoint(llm: Any) -> tuple[str | None, str | None]:
    """A chat model's model name and base URL (credentials redacted), where exposed (``ChatOpenAI`` and alike)."""
    llm = chat_model_of(llm)
    name = next(
        (v for v in (getattr(llm, a, None) for a in ("model_name", "model")) if isinstance(v, str) and v),
        None,
    )
    base_url = getattr(llm, "openai_api_base", None) or getattr(llm, "base_url", None)
    return name, redact_url(base_url) if isinstance(base_url, str) and base_url else None


IDENTITY_METADATA_KEY = "langchain_tag_model_identity"
"""A chat model whose ``metadata`` holds this key has that value as its identity (the embedded model's file name)."""


def model_identity(llm: Any) -> str:
    """A chat model's identity for cache keys: the full endpoint (scheme, host, port, path) and model name.

    Without an endpoint, the model name, else the class name. A model whose
    ``metadata`` names its identity under :data:`IDENTITY_METADATA_KEY` has
    that identity: :func:`~langchain_tag.local.models.get_chat_model` marks
    the embedded model so, by its file name, as its server's port changes
    between runs. Two models with the same identity are assumed to give the
    same replies at temperature 0 (the verdict and extraction caches rely on
    it), so two servers on one host are told apart by their ports.
    """
    marked = getattr(chat_model_of(llm), "metadata", None)
    if (
        isinstance(marked, dict)
        and isinstance(marked.get(IDENTITY_METADATA_KEY), str)
        and marked[IDENTITY_METADATA_KEY]
    ):
        return str(marked[IDENTITY_METADATA_KEY])
    found, base_url = model_name_and_endpoint(llm)
    name = found or type(chat_model_of(llm)).__name__
    if base_url:
        return f"{base_url.rstrip('/')}/{name}"
    return name


def describe_model(llm: Any) -> str:
    """The provider of a chat model, for error messages: class, model name and endpoint."""
    name, base_url = model_name_and_endpoint(llm)
    llm = chat_model_of(llm)
    if type(llm).__name__ == "ChatOpenAI" and not base_url:
        base_url = "https://api.openai.com/v1"
    text = type(llm).__name__
    if name:
        text += f" model {name!r}"
    if isinstance(base_url, str) and base_url:
        text += f" at {base_url}"
    return text


def describe_error(exc: BaseException, limit: int = 300) -> str:
    """``"ErrorClass: message"`` on one line, URLs redacted, cut to ``limit`` characters."""
    message = redact_urls(" ".join(str(exc).split()))
    if len(message) > limit:
        message = message[:limit] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def backoff_delay(attempt: int, *, base: float, cap: float = 30.0, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (1, 2, ...): exponential, with jitter.

    The delay is drawn uniformly from the upper half of ``min(cap, base * 2 ** (attempt - 1))``,
    so concurrent clients that failed together do not retry in lockstep.
    """
    if base <= 0:
        return 0.0
    ceiling = min(cap, base * 2 ** max(0, attempt - 1))
    return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)
