"""Custom ids of batch requests, the Batch API's limits, and the error every batch step raises.

A request's ``custom_id`` names its pair readably (``INPUT/RULE/PROMPT_VERSION``,
``/neg`` after a negated half) when it can, and by a hash when it cannot, and
ends with the digest of the request itself (:func:`request_digest`), so a
results line says which request it answers: a reply to another export's
request, or to an input or rule since edited, is told apart from a reply to
this one. The constants here are the limits and file names the export and
the import share.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from langchain_tag.errors import TagError

if TYPE_CHECKING:
    from langchain_tag.judging._pairs import PairRequest

__all__ = [
    "BATCH_URL",
    "CUSTOM_ID_MAX_CHARS",
    "DIGEST_CHARS",
    "MAPPING_FILE",
    "MAPPING_FORMAT",
    "MAPPING_VERSION",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "REFERENCE_PREFIX",
    "BatchError",
    "custom_id",
    "parse_custom_id",
    "request_digest",
    "split_custom_id",
]

BATCH_URL = "/v1/chat/completions"
"""The endpoint every exported request targets."""

MAX_REQUESTS = 50_000
"""Most requests in one OpenAI Batch API input file."""

MAX_BYTES = 200 * 1024 * 1024
"""Largest OpenAI Batch API input file, in bytes."""

CUSTOM_ID_MAX_CHARS = 64
"""Longest ``custom_id`` written: the tightest limit among OpenAI-compatible batch APIs."""

MAPPING_FILE = "mapping.jsonl"
"""The file, beside the batch input files, that ties each ``custom_id`` to its pair."""

REFERENCE_PREFIX = "@ref-"
"""The input id of a calibration reference input is this and its 1-based number (``@ref-1``, ...)."""

MAPPING_FORMAT = "langchain-tag/openai-batch-mapping"
"""The ``format`` named in a mapping file's header line."""

MAPPING_VERSION = 2
"""The ``version`` of the mapping file format written (2: custom_ids end with their request's digest)."""

DIGEST_CHARS = 12
"""Hex digits of the request digest that ends every ``custom_id``."""

_ID_PART = re.compile(r"[A-Za-z0-9._:@-]+")
_NEGATED = "neg"
_HASHED = "h-"
_WITH_DIGEST = re.compile(rf"(.+)[/-]([0-9a-f]{{{DIGEST_CHARS}}})")


class BatchError(TagError, ValueError):
    """A batch export or import cannot go on: the message says what is wrong and, for a file, where."""


def request_digest(key: str) -> str:
    """The digest of a request that ends its ``custom_id``: :data:`DIGEST_CHARS` hex digits of SHA-256.

    Args:
        key: The request's verdict-cache key (:attr:`PairRequest.key`), which
            hashes everything that determines the judgment: the judge model,
            prompt version and reply format, the input text and the rule as
            rendered.
    """
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def custom_id(input_id: str, request: PairRequest) -> str:
    """The ``custom_id`` of one request: ``INPUT/RULE/PROMPT_VERSION/DIGEST`` (``/neg`` before a negated half's digest).

    ``DIGEST`` is :func:`request_digest` of the request's verdict-cache key,
    so the same pair asked about another input text (another export's, or an
    input edited since) has another ``custom_id``. When the readable form
    would be longer than :data:`CUSTOM_ID_MAX_CHARS`, or a part holds a
    character outside ``A-Z a-z 0-9 . _ : @ -``, it is ``h-``, 40 hex digits
    of the SHA-256 of ``INPUT/RULE/PROMPT_VERSION``, ``-`` and the digest
    instead; the mapping
    (:class:`~langchain_tag.scale.batch_api.mapping.BatchMapping`) names the
    pair either way.
    """
    parts = [input_id, request.rule_id, request.prompt_version] + ([_NEGATED] if request.negated else [])
    pair = "/".join(parts)
    digest = request_digest(request.key)
    if len(pair) + 1 + DIGEST_CHARS <= CUSTOM_ID_MAX_CHARS and all(_ID_PART.fullmatch(p) for p in parts):
        return f"{pair}/{digest}"
    return f"{_HASHED}{hashlib.sha256(pair.encode('utf-8')).hexdigest()[:40]}-{digest}"


def split_custom_id(value: str) -> tuple[str, str | None]:
    """``(pair, digest)`` of a ``custom_id``: the part naming the pair, and the request digest (``None`` if none)."""
    found = _WITH_DIGEST.fullmatch(value)
    return (found.group(1), found.group(2)) if found else (value, None)


def parse_custom_id(value: str) -> tuple[str, str, str, bool] | None:
    """``(input_id, rule_id, prompt_version, negated)`` of a readable ``custom_id``; ``None`` for a hashed one."""
    parts = split_custom_id(value)[0].split("/")
    if len(parts) == 4 and parts[3] == _NEGATED:
        return parts[0], parts[1], parts[2], True
    if len(parts) == 3:
        return parts[0], parts[1], parts[2], False
    return None
