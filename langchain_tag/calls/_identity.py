"""A model's identity and description: what names it in cache keys, errors and logs, secrets masked.

Every URL printed is passed through :func:`redact_url` first: credentials in a
base URL (``user:pass@``, ``?api-key=...``) never reach an error message or a
log, :class:`RedactingFilter` masks them in every log record (the HTTP
clients' own request logs included) where it is installed.

What makes two endpoints the same judge (:func:`model_identity`, the verdict
and extraction caches' model key):

- An explicit identity wins: a chat model whose ``metadata`` holds
  :data:`IDENTITY_METADATA_KEY` has that value as its identity, whatever its
  endpoint. This is how a user sets the cache namespace explicitly
  (``ChatOpenAI(..., metadata={IDENTITY_METADATA_KEY: "my-judge-v2"})``),
  and how the embedded model is named by its GGUF file.
- A local endpoint (host ``localhost``, or a loopback, private, link-local or
  unspecified IP address) is named by the model behind it, not by its URL:
  the model name, plus what the server reports about the model it serves
  (``GET {base_url}/models``: the served model id, e.g. llama.cpp's model
  file or alias, vLLM's id and its ``root``), as ``name@served``. The server
  is asked once per endpoint per process, with a short timeout and no proxy
  (a server too busy to answer is asked again, up to three times); when it
  cannot tell (no server, sockets blocked, an error, a list that names
  several models but not this one) the identity is the model name alone. A
  server that never answered in time gets a warning: its verdicts are then
  cached under the name alone, where a later run that gets an answer will
  not look; pin the identity (below) for such a server. So the same model behind a server restarted on another port, or
  reached as ``localhost`` instead of ``127.0.0.1``, keeps its identity, and
  two different models served under one name do not share it.
- Any other endpoint (a remote provider) is named by its URL (credentials
  masked) and the model name, e.g. ``https://api.deepseek.com/v1/deepseek-chat``;
  a ``ChatOpenAI`` without a base URL by its client's (``https://api.openai.com/v1/gpt-4o-mini``).
  A remote provider therefore never shares an identity with a local server
  serving a model of the same name. Host names other than ``localhost`` are
  never resolved: a local server reached by another name counts as remote.
- Without an endpoint: the model name, else the class name.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
import re
import threading
import urllib.request
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

logger = logging.getLogger(__name__)

__all__ = [
    "IDENTITY_METADATA_KEY",
    "RedactingFilter",
    "api_key_of",
    "chat_model_of",
    "describe_model",
    "install_redaction",
    "is_local_endpoint",
    "model_identity",
    "model_name_and_endpoint",
    "redact_url",
    "redact_urls",
    "served_model",
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


def chat_model_of(llm: Any) -> Any:
    """The chat model inside a runnable built from it, else ``llm`` itself.

    Unwraps ``llm.bind(...)``, ``.with_retry()``, ``.with_config()`` and ``.with_fallbacks()`` (the primary model).
    """
    for _ in range(16):
        inner = getattr(llm, "bound", None)
        if inner is None:
            inner = getattr(llm, "runnable", None)
        if inner is None or inner is llm:
            return llm
        llm = inner
    return llm


def model_name_and_endpoint(llm: Any) -> tuple[str | None, str | None]:
    """A chat model's model name and base URL (credentials redacted), where exposed (``ChatOpenAI`` and alike)."""
    name, base_url = _name_and_raw_endpoint(chat_model_of(llm))
    return name, redact_url(base_url) if base_url else None


def _name_and_raw_endpoint(llm: Any) -> tuple[str | None, str | None]:
    name = next(
        (v for v in (getattr(llm, a, None) for a in ("model_name", "model")) if isinstance(v, str) and v),
        None,
    )
    base_url = getattr(llm, "openai_api_base", None) or getattr(llm, "base_url", None)
    return name, base_url if isinstance(base_url, str) and base_url else None


IDENTITY_METADATA_KEY = "langchain_tag_model_identity"
"""A chat model whose ``metadata`` holds this key has that value as its identity: the way to set it explicitly.

``ChatOpenAI(..., metadata={IDENTITY_METADATA_KEY: "my-judge"})`` keys its
cached verdicts under ``"my-judge"`` whatever its endpoint; the embedded
model is so named by its GGUF file.
"""

LOOKUP_TIMEOUT = 2.0
"""Seconds allowed to ask a local server which model it serves."""

LOOKUP_ATTEMPTS = 3
"""Times a local server that did not answer in time is asked (one that refused or answered an error, once)."""

_SERVED: dict[str, str | None] = {}
_SERVED_LOCK = threading.Lock()


def model_identity(llm: Any) -> str:
    """A chat model's identity for cache keys: the model it names, not the URL it is reached at.

    See the module docstring for the rule: an explicit identity
    (:data:`IDENTITY_METADATA_KEY`) wins; a local endpoint gives the model
    name plus what its server reports about the model it serves
    (:func:`served_model`); a remote one its URL (credentials masked) and the
    model name. Two models with the same identity are assumed to give the
    same replies at temperature 0 (the verdict and extraction caches rely on it).
    """
    model = chat_model_of(llm)
    marked = getattr(model, "metadata", None)
    if (
        isinstance(marked, dict)
        and isinstance(marked.get(IDENTITY_METADATA_KEY), str)
        and marked[IDENTITY_METADATA_KEY]
    ):
        return str(marked[IDENTITY_METADATA_KEY])
    found, base_url = _name_and_raw_endpoint(model)
    name = found or type(model).__name__
    if base_url is None:
        client_url = getattr(getattr(model, "root_client", None), "base_url", None)
        base_url = str(client_url) if client_url is not None and str(client_url) else None
    if base_url is None:
        return name
    if not is_local_endpoint(base_url):
        return f"{redact_url(base_url).rstrip('/')}/{name}"
    served = served_model(base_url, found, api_key=api_key_of(model))
    return f"{name}@{served}" if served and served != name else name


def is_local_endpoint(base_url: str) -> bool:
    """Whether ``base_url``'s host is this machine or a private network: ``localhost`` or a non-public IP address."""
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local or address.is_unspecified


def served_model(base_url: str, name: str | None = None, *, api_key: str | None = None) -> str | None:
    """What the server at ``base_url`` reports about the model it serves (``GET {base_url}/models``), or ``None``.

    The entry named ``name`` when the list has one, else the only entry: its
    ``id`` (a file path cut to its file name) and, when it differs, its
    ``root`` (vLLM). Asked once per endpoint (and name) per process, within
    :data:`LOOKUP_TIMEOUT` seconds and without a proxy; any failure gives
    ``None``, quietly, and is remembered too, so one process keeps one identity.
    """
    memo = f"{base_url}\x00{name or ''}"
    with _SERVED_LOCK:
        if memo in _SERVED:
            return _SERVED[memo]
    found = None
    for attempt in range(1, LOOKUP_ATTEMPTS + 1):
        try:
            found = _describe_served(_fetch_models(base_url, api_key), name)
            break
        except Exception as exc:  # no server, sockets blocked, a bad reply: the model name alone
            if not _timed_out(exc):
                break
            if attempt == LOOKUP_ATTEMPTS:
                logger.warning(
                    "%s/models did not answer within %.0f s (%d tries): verdicts are cached under the model "
                    "name %r alone, where a run that gets an answer will not look for them; pin the judge's "
                    "identity with metadata={%r: ...} to resume across such runs",
                    redact_url(base_url).rstrip("/"),
                    LOOKUP_TIMEOUT,
                    LOOKUP_ATTEMPTS,
                    name,
                    IDENTITY_METADATA_KEY,
                )
    with _SERVED_LOCK:
        return _SERVED.setdefault(memo, found)


def _timed_out(exc: BaseException) -> bool:
    """Whether a lookup failed because the server did not answer in time (it is there, but busy)."""
    reason = getattr(exc, "reason", None)
    return isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError)


def _fetch_models(base_url: str, api_key: str | None) -> Any:
    parts = urlsplit(base_url)
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        token = base64.b64encode(unquote(userinfo).encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    url = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/") + "/models", parts.query, ""))
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(urllib.request.Request(url, headers=headers), timeout=LOOKUP_TIMEOUT) as response:
        return json.loads(response.read(1 << 20))


def _describe_served(listing: Any, name: str | None) -> str | None:
    entries = [e for e in (listing.get("data") or []) if isinstance(e, dict) and isinstance(e.get("id"), str)]
    entry = next((e for e in entries if e["id"] == name), entries[0] if len(entries) == 1 else None)
    if entry is None:
        return None
    served = _file_name(entry["id"])
    root = entry.get("root")
    if isinstance(root, str) and root and _file_name(root) != served:
        served += f" ({_file_name(root)})"
    return served or None


def _file_name(value: str) -> str:
    """A path's file name (``/models/q.gguf`` -> ``q.gguf``); other values unchanged."""
    if value.startswith(("/", "~", ".")) or "\\" in value or re.match(r"^[A-Za-z]:[\\/]", value):
        return re.split(r"[\\/]", value.rstrip("/\\"))[-1]
    return value


def api_key_of(model: Any) -> str | None:
    """The key a model holds (``openai_api_key`` or ``api_key``, plain or a pydantic ``SecretStr``), if any."""
    for name in ("openai_api_key", "api_key"):
        secret = getattr(model, name, None)
        reveal = getattr(secret, "get_secret_value", None)
        value = reveal() if callable(reveal) else secret
        if isinstance(value, str) and value:
            return value
    return None


class RedactingFilter(logging.Filter):
    """A logging filter that masks credentials in URLs (:func:`redact_urls`) in every record's message and args.

    Attach it to a handler (:func:`install_redaction` does so for the root
    logger's handlers): the HTTP clients' INFO logs (``httpx``, ``openai``)
    print request URLs, credentials included, and records from every logger
    pass through the root handlers.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place; always keep it."""
        if isinstance(record.msg, str):
            record.msg = redact_urls(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redact_arg(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _redact_arg(v) for k, v in record.args.items()}
        return True


def _redact_arg(value: Any) -> Any:
    if isinstance(value, (int, float, bool)) or value is None:
        return value  # %d and %f need numbers
    text = value if isinstance(value, str) else str(value)
    redacted = redact_urls(text)
    return value if redacted == text else redacted


def install_redaction(logger: logging.Logger | None = None) -> None:
    """Add a :class:`RedactingFilter` to every handler of ``logger`` (the root logger by default), once each."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def describe_model(llm: Any) -> str:
    """The provider of a chat model, for error messages: class, model name and endpoint.

    A stand-in for a model (replies recorded elsewhere) gives the description of the model it stands in
    for, in its ``described_as``.
    """
    described = getattr(chat_model_of(llm), "described_as", None)
    if isinstance(described, str) and described:
        return described
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
