"""Parsing of model replies, with fallbacks: JSON objects and YES/NO verdicts.

Parsers never raise on arbitrary text except :class:`ParseError`, which the
callers turn into a retry and then a reported skip.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import json_repair
from langchain_core.messages import AIMessage, BaseMessage

from langchain_tag.errors import ParseError

__all__ = [
    "ParseError",
    "Verdict",
    "json_shape",
    "local_ids",
    "logprobs_yes_probability",
    "message_text",
    "parse_json_items",
    "parse_json_object",
    "parse_reply",
    "parse_verdict",
    "with_aliases",
]

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)

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
    fence = _FENCE.search(text)
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
    raise ParseError(f"no JSON object{want} in reply: {_preview(text)}")


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
        raise ParseError(f"the reply is cut off inside an item (unclosed JSON): {_preview(text[-160:])}")
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


def _preview(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


@dataclass(frozen=True)
class Verdict:
    """A parsed judgment.

    Attributes:
        applies: The YES/NO decision.
        probability: P(YES) from first-token logprobs, when the model gave them.
        source: ``"logprobs"`` or ``"text"``: where the decision was read.
    """

    applies: bool
    probability: float | None
    source: str


# Tokens whose logprobs count as YES or NO mass (a tokeniser may split "YES" or prefix a space).
_YES_TOKENS = frozenset({"yes", "true", "y", "applicable", "applies"})
_NO_TOKENS = frozenset({"no", "false", "n", "not", "inapplicable"})
# Words a text reply may answer with; anything else is not a verdict.
_ANSWERS = {"yes": True, "true": True, "no": False, "false": False}
_LABEL = re.compile(r"^\s*(?:answer|verdict)\s*:\s*", re.IGNORECASE)
_LEADING_WORD = re.compile(r"^[\s*_`\"'(\[]*([A-Za-z]+)\b")
_YES_NO_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
# JSON fields a verdict may come in, with the type each must have.
_JSON_FIELDS: dict[str, type] = {"verdict": str, "answer": str, "applicable": bool, "relevant": bool}
_LOGPROB_SLACK = 1e-3  # servers round; a log-probability a hair above 0 is read as 0


def parse_verdict(message: BaseMessage | str, *, threshold: float = 0.5) -> Verdict:
    """Read a YES/NO verdict strictly, preferring first-token logprobs.

    With logprobs (OpenAI-style ``response_metadata["logprobs"]``), P(YES) is
    the probability mass on YES-like first tokens divided by the mass on YES-
    and NO-like ones; the verdict is ``P(YES) >= threshold``. Without them, the
    reply text is read, and only in three forms:

    * a JSON object whose ``verdict`` (or ``answer``) is the string ``"YES"``
      or ``"NO"``, or whose ``applicable`` (or ``relevant``) is a boolean;
    * a reply whose first word is YES or NO (or true/false), optionally after
      ``Answer:``, with no YES or NO of the other kind anywhere after it.

    Anything else ("Not sure.", "Yes, no.", ``{"verdict": ["YES"]}``, a
    sentence that merely contains "yes") is not a verdict.

    Raises:
        ParseError: When neither source gives a verdict, or the logprobs are
            malformed (not the documented shape, or a log-probability that is
            not a finite number at most 0).
    """
    logprobs = None
    if isinstance(message, AIMessage) and message.response_metadata:
        logprobs = message.response_metadata.get("logprobs")
    return parse_reply(message_text(message), logprobs, threshold=threshold)


def parse_reply(text: str, logprobs: Any = None, *, threshold: float = 0.5) -> Verdict:
    """Read a reply given as plain data: its text and its OpenAI-style ``logprobs`` object (or ``None``).

    The pure form of :func:`parse_verdict`, for replies that come from
    outside a LangChain chat model (a batch API results file, a Ray job).

    Raises:
        ParseError: As :func:`parse_verdict`.
    """
    prob = logprobs_yes_probability(logprobs)
    if prob is not None:
        return Verdict(prob >= threshold, prob, "logprobs")
    text = text.strip()
    decision = _json_decision(text) if text.startswith(("{", "```")) else _word_decision(text)
    if decision is None:
        raise ParseError(f"no YES/NO verdict in reply: {_preview(text)}")
    return Verdict(decision, None, "text")


def _json_decision(text: str) -> bool | None:
    """The verdict of a JSON reply: one field of the right type, no conflicting second one."""
    fence = _FENCE.search(text)
    body = fence.group(1).strip() if fence else text
    if len(body) > MAX_REPLY_CHARS or json_shape(body).max_depth > MAX_JSON_DEPTH:
        return None
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    found: set[bool] = set()
    for key, kind in _JSON_FIELDS.items():
        if key not in obj:
            continue
        value = obj[key]
        if kind is bool and isinstance(value, bool):
            found.add(value)
        elif kind is str and isinstance(value, str) and value.strip().lower() in ("yes", "no"):
            found.add(value.strip().lower() == "yes")
        else:
            return None  # the field is there with a value of the wrong type
    return found.pop() if len(found) == 1 else None


def _word_decision(text: str) -> bool | None:
    """The verdict of a text reply: its first word, when nothing after it says the opposite."""
    text = _LABEL.sub("", text, count=1)
    first = _LEADING_WORD.match(text)
    if first is None:
        return None
    decision = _ANSWERS.get(first.group(1).lower())
    if decision is None:
        return None
    rest = text[first.end() :]
    if any((word.lower() == "yes") is not decision for word in _YES_NO_WORD.findall(rest)):
        return None
    return decision


def _token_decision(token: str) -> bool | None:
    word = token.strip().strip("\"'.").lower()
    if word in _YES_TOKENS:
        return True
    if word in _NO_TOKENS:
        return False
    return None


def _log_probability(value: Any) -> float:
    """A log-probability as a float, or :class:`ParseError` for anything that is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(f"malformed logprobs: a log-probability is {_preview(repr(value), 40)}, not a number")
    number = float(value)
    if not math.isfinite(number) or number > _LOGPROB_SLACK:
        raise ParseError(f"malformed logprobs: log-probability {number!r} is not a finite number at most 0")
    return min(number, 0.0)


def _top_entries(content: Any) -> list[Mapping[str, Any]]:
    """The first token's candidate entries from ``logprobs["content"]``, checked for shape."""
    if not isinstance(content, list) or not isinstance(content[0], Mapping):
        raise ParseError(f"malformed logprobs: content is {_preview(repr(content), 60)}, not a list of objects")
    first = content[0]
    top = first.get("top_logprobs")
    entries = [first] if top is None or top == [] else top
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise ParseError(f"malformed logprobs: top_logprobs is {_preview(repr(top), 60)}, not a list of objects")
    return entries


def yes_probability(message: AIMessage) -> float | None:
    """P(YES) from the first generated token's top logprobs, or ``None``.

    Reads the OpenAI chat-completions shape that langchain-openai puts in
    ``response_metadata["logprobs"]`` (:func:`logprobs_yes_probability`).

    Raises:
        ParseError: When the logprobs are there but malformed.
    """
    logprobs = message.response_metadata.get("logprobs") if message.response_metadata else None
    return logprobs_yes_probability(logprobs)


def logprobs_yes_probability(logprobs: Any) -> float | None:
    """P(YES) from an OpenAI chat-completions ``logprobs`` object, or ``None``.

    The first entry of ``logprobs["content"]`` is read: its ``top_logprobs``
    list is searched for YES-like and NO-like tokens. ``None`` when there are
    no logprobs or none of the first token's candidates is YES- or NO-like.

    Raises:
        ParseError: When the logprobs are there but malformed: not the
            documented shape, a token that is not a string, or a
            log-probability that is not a finite number at most 0 (NaN,
            ``"abc"``, 1000).
    """
    if logprobs is None:
        return None
    if not isinstance(logprobs, Mapping):
        raise ParseError(f"malformed logprobs: {_preview(repr(logprobs), 60)} is not an object")
    content = logprobs.get("content")
    if content is None or content == []:
        return None
    yes = no = 0.0
    for entry in _top_entries(content):
        token = entry.get("token")
        if not isinstance(token, str):
            raise ParseError(f"malformed logprobs: a token is {_preview(repr(token), 40)}, not a string")
        decision = _token_decision(token)
        if decision is None:
            continue
        mass = math.exp(_log_probability(entry.get("logprob")))
        if decision:
            yes += mass
        else:
            no += mass
    if yes + no == 0.0:
        return None
    return yes / (yes + no)
