"""Reading model replies: their text, and JSON objects in it, with fallbacks.

Parsers never raise on arbitrary text except :class:`ParseError`, which the
callers turn into a retry and then a reported skip.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import json_repair
from langchain_core.messages import BaseMessage

from langchain_tag.errors import ParseError

__all__ = [
    "JSON_FENCE",
    "MAX_JSON_DEPTH",
    "MAX_REPLY_CHARS",
    "Completion",
    "ParseError",
    "json_shape",
    "local_ids",
    "message_text",
    "parse_json_items",
    "parse_json_object",
    "preview",
    "read_completion",
    "with_aliases",
]

JSON_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)

MAX_REPLY_CHARS = 64_000
"""Longest reply read as JSON: about three times the longest reply a 4096-token output limit allows."""

MAX_REPAIR_CHARS = 32_000
"""Longest reply handed to JSON repair, whose cost on pathological text grows faster than its length."""

MAX_JSON_DEPTH = 32
"""Deepest nesting of brackets read as JSON; the package's replies nest at most four deep."""


def message_text(message: BaseMessage | str) -> str:
    """Return a message's text, joining content blocks if needed."""
    if isinstance(message, str):
        return message
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def parse_json_object(text: str, *, expect_key: str | None = None) -> dict[str, Any]:
    """Read a JSON object from a model reply.

    Tries, in order: the whole text, the contents of a Markdown code fence, the
    span from the first ``{`` to the last ``}``, and finally a repair of
    truncated or slightly malformed JSON (unclosed arrays, trailing commas,
    single quotes). A bare JSON array is wrapped as ``{expect_key: array}``.

    Args:
        text: The reply.
        expect_key: A key the object must contain, e.g. ``"spans"``.

    A reply longer than :data:`MAX_REPLY_CHARS` or nesting deeper than
    :data:`MAX_JSON_DEPTH` is refused before any parsing or repair, so a
    hostile or broken reply costs linear time and cannot exhaust the stack.

    Raises:
        ParseError: When no object (with ``expect_key``, if given) can be read.
    """
    check_json_bounds(text)
    candidates: list[str] = [text.strip()]
    fence = JSON_FENCE.search(text)
    if fence:
        candidates.append(fence.group(1).strip())
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        obj = _as_object(value, expect_key)
        if obj is not None:
            return obj
    # Repair: the text from the first brace or bracket on, which also closes
    # a reply cut off by the token limit.
    first = min((i for i in (text.find("{"), text.find("[")) if i != -1), default=-1)
    if first != -1 and len(text) - first <= MAX_REPAIR_CHARS:
        try:
            value = json_repair.loads(text[first:])
        except (Exception, RecursionError):
            value = None
        obj = _as_object(value, expect_key)
        if obj is not None:
            return obj
    want = f" with key {expect_key!r}" if expect_key else ""
    raise ParseError(f"no JSON object{want} in reply: {preview(text)}")


def parse_json_items(text: str, key: str) -> list[dict[str, Any]]:
    """Read the list of objects under ``key`` from a reply such as ``{"spans": [...]}``.

    Items that are not objects are dropped. A reply cut off at the end is
    read only when the cut falls right after a complete value (the repair
    then just closes the brackets, and each phase checks its items' fields
    and count); a reply cut inside a string or after a ``,`` or ``:`` is
    refused, since repairing it would keep a partial item or lose it.

    Raises:
        ParseError: When no object with ``key`` can be read, ``key`` is not a
            list, or the reply is cut off inside an item.
    """
    shape = json_shape(text)
    if shape.open_at_end and not shape.ends_after_value:
        raise ParseError(f"the reply is cut off inside an item (unclosed JSON): {preview(text[-160:])}")
    items = parse_json_object(text, expect_key=key)[key]
    if not isinstance(items, list):
        raise ParseError(f"{key!r} is a {type(items).__name__}, not a list")
    return [item for item in items if isinstance(item, dict)]


@dataclass(frozen=True)
class JsonShape:
    """What a linear scan of a reply's brackets found (strings and escapes respected).

    Attributes:
        max_depth: Deepest bracket nesting.
        open_at_end: Whether brackets or a string are still open at the end (a cut-off reply).
        ends_after_value: Whether the text ends right after a complete value (a closed
            bracket or string, a number or literal), not inside a string or after ``,`` or ``:``.
    """

    max_depth: int
    open_at_end: bool
    ends_after_value: bool


def json_shape(text: str) -> JsonShape:
    """Scan ``text`` from its first bracket once, in linear time, without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    starts = [i for i in (text.find("{"), text.find("[")) if i != -1]
    for char in text[min(starts) :] if starts else "":
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            depth = max(0, depth - 1)
    tail = text.rstrip()[-1:]
    return JsonShape(deepest, depth > 0 or in_string, not in_string and tail not in ("", ",", ":", "{", "["))


def check_json_bounds(text: str) -> None:
    """Refuse a reply too long or too deeply nested to read as JSON.

    Raises:
        ParseError: Beyond :data:`MAX_REPLY_CHARS` characters or :data:`MAX_JSON_DEPTH` levels.
    """
    if len(text) > MAX_REPLY_CHARS:
        raise ParseError(f"the reply is {len(text)} characters, more than the {MAX_REPLY_CHARS} read as JSON")
    depth = json_shape(text).max_depth
    if depth > MAX_JSON_DEPTH:
        raise ParseError(f"the reply nests {depth} levels deep, more than the {MAX_JSON_DEPTH} read as JSON")


def with_aliases(item: Mapping[str, Any], aliases: Mapping[str, str]) -> dict[str, Any]:
    """A reply item with each short key also under its full name.

    Prompts ask for short keys (``"name"``, ``"tags"``) to keep replies
    short; the code reads the full names (``"rule_name"``,
    ``"category_tags"``). A full name the reply already gives wins, so
    replies in either form read the same.

    Args:
        item: One object of a reply.
        aliases: Short key -> full name.
    """
    out = dict(item)
    for short, full in aliases.items():
        if short in item and full not in item:
            out[full] = item[short]
    return out


def local_ids(prefix: str, count: int) -> list[str]:
    """Ids a prompt uses for a batch of ``count`` items: ``S-001``, ``S-002``, ... for prefix ``"S"``."""
    return [f"{prefix}-{i:03d}" for i in range(1, count + 1)]


def _as_object(value: Any, expect_key: str | None) -> dict[str, Any] | None:
    if isinstance(value, list) and expect_key is not None:
        return {expect_key: value}
    if isinstance(value, dict) and (expect_key is None or expect_key in value):
        return value
    return None


def preview(text: str, limit: int = 160) -> str:
    """A reply on one line, quoted and cut to ``limit`` characters, for error messages."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


@dataclass(frozen=True)
class Completion:
    """What the package reads of an OpenAI chat-completions body: its first choice and the usage.

    Attributes:
        text: The first choice's message text (empty when it has none).
        logprobs: The first choice's ``logprobs`` object, if any.
        prompt_tokens: Prompt tokens reported.
        completion_tokens: Completion tokens reported.
        model: The model the body says answered (empty when it does not say).
    """

    text: str
    logprobs: Mapping[str, Any] | None
    prompt_tokens: int
    completion_tokens: int
    model: str = ""

    def fingerprint(self) -> bytes:
        """What tells two replies apart: their text and logprobs (not ids or token counts)."""
        data = json.dumps([self.text, self.logprobs], sort_keys=True, ensure_ascii=False, default=repr)
        return hashlib.sha256(data.encode("utf-8")).digest()


def read_completion(body: Any) -> Completion:
    """The one reader of a chat-completions body, whoever fetched it (the direct path, Ray, a batch's results).

    >>> read_completion({"choices": [{"message": {"content": "YES"}}], "usage": {"prompt_tokens": 9}}).text
    'YES'

    Raises:
        ParseError: When the body is not an object with a first choice (an error object, an HTML page, ...).
    """
    if not isinstance(body, Mapping):
        raise ParseError(f"the response is not a JSON object: {preview(str(body))}")
    if body.get("error"):
        raise ParseError(f"the response is an error: {preview(json.dumps(body['error'], default=repr))}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ParseError("the response has no choices")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    logprobs = choices[0].get("logprobs")
    usage: Mapping[str, Any] = body["usage"] if isinstance(body.get("usage"), Mapping) else {}
    model = body.get("model")
    return Completion(
        text=content if isinstance(content, str) else "",
        logprobs=logprobs if isinstance(logprobs, Mapping) else None,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        model=model if isinstance(model, str) else "",
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
