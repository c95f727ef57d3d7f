"""Secrets kept out of every error text: the one masker each text passes through before it is kept or shown.

A provider's error message may repeat the key it was sent (``Incorrect API key provided: sk-...``), or a header
(``Authorization: Bearer ...``). Every error text the package stores (a failed judgment, an output file), prints,
logs, renders or raises is made by :func:`~langchain_tag.calls._faults.describe_error`, which passes it through
:func:`mask_secrets` with the keys of the model called (:func:`secrets_of`) and of the environment.

Example:
    >>> mask_secrets("bad key sk-abcdefgh12345678 sent as Authorization: Bearer xyz123456789")
    'bad key *** sent as Authorization: Bearer ***'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["KEY_VARIABLES", "MASK", "mask_secrets", "secrets_of"]

MASK = "***"
"""What stands in a text where a secret stood."""

KEY_VARIABLES = ("LANGCHAIN_TAG_API_KEY", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY")
"""Environment variables whose values are keys: masked wherever they appear."""

_SHORTEST = 6
"""A secret shorter than this is not searched for (it would mask ordinary words)."""

_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization|\bx?-?api[-_]?key|\baccess[-_]?token)"  # the name
    r"([\"']?\s*[:=]\s*[\"']?)"  # its separator, with any quotes
    r"((?:bearer|basic|token)\s+)?"  # a scheme
    r"([^\s\"',;&)}\]]+)"  # the value
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{6,})")
_KEY_SHAPED = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_-]{8,}")
"""Keys in the OpenAI style (``sk-...``, ``sk-proj-...``)."""


def secrets_of(model: Any = None) -> tuple[str, ...]:
    """The keys to mask: the environment's (:data:`KEY_VARIABLES`) and ``model``'s own, if it holds one.

    ``model`` is a chat model or a runnable built from one (its ``openai_api_key`` / ``api_key``, plain or a
    pydantic ``SecretStr``).
    """
    from langchain_tag.calls._identity import api_key_of, chat_model_of

    found = [os.environ.get(name) for name in KEY_VARIABLES]
    if model is not None:
        found.append(api_key_of(chat_model_of(model)))
    return tuple(dict.fromkeys(s for s in found if isinstance(s, str) and len(s) >= _SHORTEST))


def mask_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret replaced by :data:`MASK`.

    Masked: each of ``secrets`` and the environment's keys, any ``Authorization``/``api-key`` value, and anything
    shaped like an OpenAI key.
    """
    for secret in sorted({*secrets, *secrets_of()}, key=len, reverse=True):
        if len(secret) >= _SHORTEST:
            text = text.replace(secret, MASK)
    text = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3) or ''}{_masked(m.group(4))}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{_masked(m.group(2))}", text)
    return _KEY_SHAPED.sub(MASK, text)


def _masked(value: str) -> str:
    return value if value == MASK else MASK
