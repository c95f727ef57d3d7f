"""Custom ids of batch requests, the Batch API's limits, and the error every batch step raises.

A request's ``custom_id`` names its pair readably (``INPUT/RULE/PROMPT_VERSION``,
``/neg`` after a negated half) when it can, and by a hash when it cannot; the
constants here are the limits and file names the export and the import share.
"""

from __future__ import annotations

import hashlib
import re

from langchain_tag.errors import TagError
from langchain_tag.judging.pairs import PairRequest

__all__ = [
    "BATCH_URL",
    "CUSTOM_ID_MAX_CHARS",
    "MAPPING_FILE",
    "MAPPING_FORMAT",
    "MAPPING_VERSION",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "REFERENCE_PREFIX",
    "BatchError",
    "custom_id",
    "parse_custom_id",
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

MAPPING_VERSION = 1
"""The ``version`` of the mapping file format written."""

_ID_PART = re.compile(r"[A-Za-z0-9._:@-]+")
_NEGATED = "neg"
_HASHED = "h-"


class BatchError(TagError, ValueError):
    """A batch export or import cannot go on: the message says what is wrong and, for a file, where."""


def custom_id(input_id: str, request: PairRequest) -> str:
    """The ``custom_id`` of one request: ``INPUT/RULE/PROMPT_VERSION`` (``/neg`` after a negated half).

    When that would be longer than :data:`CUSTOM_ID_MAX_CHARS`, or a part
    holds a character outside ``A-Z a-z 0-9 . _ : @ -``, it is ``h-`` and 40
    hex digits of its SHA-256 instead; the mapping
    (:class:`~langchain_tag.scale.batch_api.mapping.BatchMapping`) names the pair
    either way.
    """
    parts = [input_id, request.rule_id, request.prompt_version] + ([_NEGATED] if request.negated else [])
    readable = "/".join(parts)
    if len(readable) <= CUSTOM_ID_MAX_CHARS and all(_ID_PART.fullmatch(p) for p in parts):
        return readable
    return _HASHED + hashlib.sha256(readable.encode("utf-8")).hexdigest()[:40]


def parse_custom_id(value: str) -> tuple[str, str, str, bool] | None:
    """``(input_id, rule_id, prompt_version, negated)`` of a readable ``custom_id``; ``None`` for a hashed one."""
    parts = value.split("/")
    if len(parts) == 4 and parts[3] == _NEGATED:
        return parts[0], parts[1], parts[2], True
    if len(parts) == 3:
        return parts[0], parts[1], parts[2], False
    return None
