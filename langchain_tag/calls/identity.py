"""A model's identity and description: what names it in cache keys, errors and logs, secrets masked.

Every URL printed is passed through :func:`redact_url` first: credentials in a
base URL (``user:pass@``, ``?api-key=...``) never reach an error message or a log.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = [
    "IDENTITY_METADATA_KEY",
    "chat_model_of",
    "describe_model",
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
