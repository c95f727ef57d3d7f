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
- Permanent faults (:func:`is_permanent`: HTTP 400 such as a context length
  exceeded, 401, 403, 404, 413, 422) are never sent again by anyone: the same
  request would fail the same way (and a huge input would be uploaded again).
- Malformed replies are always retried by the runner and the matcher, within
  ``max_attempts`` (a second request at once: there is nothing to wait for).

After the last attempt the error names the provider (class, model, endpoint)
and the call (extraction phase and item, or the rule being judged), URLs
redacted (:mod:`langchain_tag.calls._identity`). A fault with an HTTP status
is described by the status and the server's own message
(:func:`http_error`), whichever client got it, so the in-process job and the
Ray engine write the same words for the same fault.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_tag.calls._identity import chat_model_of, redact_urls
from langchain_tag.calls._secrets import mask_secrets
from langchain_tag.errors import TagError

__all__ = [
    "ReportedFault",
    "backoff_delay",
    "client_retries",
    "describe_error",
    "http_error",
    "is_permanent",
    "is_transient",
    "server_message",
]


class ReportedFault(TagError, RuntimeError):
    """A fault met elsewhere (a Ray worker, a provider batch) and replayed: its message already describes it.

    Attributes:
        status_code: The HTTP status its message starts with (``HTTP 500: ...``), if any, so
            :func:`is_transient` and :func:`is_permanent` judge it as they judge the original.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        found = re.match(r"HTTP (\d{3}):", message)
        self.status_code: int | None = int(found.group(1)) if found else None


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


_PERMANENT_STATUS = frozenset({400, 401, 403, 404, 413, 422})
_PERMANENT_NAMES = frozenset(
    {
        "BadRequestError",
        "AuthenticationError",
        "PermissionDeniedError",
        "NotFoundError",
        "UnprocessableEntityError",
    }
)


def is_permanent(exc: BaseException) -> bool:
    """Whether a call that raised ``exc`` would fail the same way if sent again: never resend it.

    True for HTTP 400 (a bad request, a context length exceeded), 401, 403,
    404, 413 and 422 from OpenAI-compatible clients (the status, or the
    OpenAI client's error class), and for an error whose response carries
    such a status.
    """
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        return status in _PERMANENT_STATUS
    return any(cls.__name__ in _PERMANENT_NAMES for cls in type(exc).__mro__)


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


def describe_error(exc: BaseException, limit: int = 300, *, secrets: Iterable[str] = ()) -> str:
    """One line, URLs redacted, secrets masked, cut to ``limit`` characters: what went wrong, naming no client.

    A fault with an HTTP status is ``"HTTP 500: <the server's message>"``
    (:func:`http_error`); a :class:`ReportedFault` is its message; anything
    else is ``"ErrorClass: message"``. ``secrets`` (the called model's key:
    :func:`~langchain_tag.calls._secrets.secrets_of`) and the environment's keys are masked before the text is
    cut, wherever the provider repeated them (:func:`~langchain_tag.calls._secrets.mask_secrets`).
    """
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool) and not isinstance(exc, ReportedFault):
        return http_error(status, server_message(exc), limit=limit, secrets=secrets)
    message = _cut(mask_secrets(redact_urls(" ".join(str(exc).split())), secrets), limit)
    if isinstance(exc, ReportedFault):
        return message or type(exc).__name__
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def http_error(status: int, message: str, *, limit: int = 300, secrets: Iterable[str] = ()) -> str:
    """``"HTTP <status>: <message>"`` on one line, URLs redacted, secrets masked, cut to ``limit`` characters."""
    text = _cut(mask_secrets(redact_urls(" ".join(message.split())), secrets), limit)
    return f"HTTP {status}: {text}" if text else f"HTTP {status}"


def server_message(source: BaseException | str) -> str:
    """What the server said in an error response: ``error.message`` of an OpenAI-style body, else its text.

    ``source`` is a response body, or an exception carrying one (``body``, as
    the OpenAI client's errors do).
    """
    if isinstance(source, BaseException):
        body = getattr(source, "body", None)
        found = _error_message(body)
        if found:
            return found
        text = str(getattr(source, "message", None) or source)
        return re.sub(r"^Error code: \d{3}(?: - )?", "", text)
    try:
        found = _error_message(json.loads(source))
    except ValueError:
        found = None
    return found or source


def _error_message(body: Any) -> str | None:
    """``body["error"]["message"]`` (or ``body["message"]``) of a parsed error body, if a non-empty string."""
    if not isinstance(body, Mapping):
        return None
    inner = body.get("error", body)
    message = inner.get("message") if isinstance(inner, Mapping) else inner if isinstance(inner, str) else None
    return message if isinstance(message, str) and message.strip() else None


def _cut(text: str, limit: int) -> str:
    return text[:limit] + "..." if len(text) > limit else text


def backoff_delay(attempt: int, *, base: float, cap: float = 30.0, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (1, 2, ...): exponential, with jitter.

    The delay is drawn uniformly from the upper half of ``min(cap, base * 2 ** (attempt - 1))``,
    so concurrent clients that failed together do not retry in lockstep.
    """
    if base <= 0:
        return 0.0
    ceiling: float = min(cap, base * 2 ** max(0, attempt - 1))
    jitter: float = (rng or random).uniform(0, ceiling / 2)
    return ceiling / 2 + jitter
