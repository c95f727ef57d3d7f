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
    "local_ids",
    "message_text",
    "parse_json_items",
    "parse_json_object",
    "parse_verdict",
]

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


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

    Raises:
        ParseError: When no object (with ``expect_key``, if given) can be read.
    """
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
        except (json.JSONDecodeError, ValueError):
            continue
        obj = _as_object(value, expect_key)
        if obj is not None:
            return obj
    # Repair: the text from the first brace or bracket on, which also closes
    # a reply cut off by the token limit.
    first = min((i for i in (text.find("{"), text.find("[")) if i != -1), default=-1)
    if first != -1:
        try:
            value = json_repair.loads(text[first:])
        except Exception:
            value = None
        obj = _as_object(value, expect_key)
        if obj is not None:
            return obj
    want = f" with key {expect_key!r}" if expect_key else ""
    raise ParseError(f"no JSON object{want} in reply: {_preview(text)}")


def parse_json_items(text: str, key: str) -> list[dict[str, Any]]:
    """Read the list of objects under ``key`` from a reply such as ``{"spans": [...]}``.

    Items that are not objects are dropped.

    Raises:
        ParseError: When no object with ``key`` can be read, or ``key`` is not a list.
    """
    items = parse_json_object(text, expect_key=key)[key]
    if not isinstance(items, list):
        raise ParseError(f"{key!r} is a {type(items).__name__}, not a list")
    return [item for item in items if isinstance(item, dict)]


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


_YES = {"yes", "true", "y", "applicable", "applies"}
_NO = {"no", "false", "n", "not", "inapplicable"}
_WORD = re.compile(r"[A-Za-z]+")


def parse_verdict(message: BaseMessage | str, *, threshold: float = 0.5) -> Verdict:
    """Read a YES/NO verdict, preferring first-token logprobs.

    With logprobs (OpenAI-style ``response_metadata["logprobs"]``), P(YES) is
    the probability mass on YES-like first tokens divided by the mass on YES-
    and NO-like ones; the verdict is ``P(YES) >= threshold``. Without them, the
    reply text is read: a bare word, ``{"verdict": "YES"}`` or
    ``{"applicable": true}``.

    Raises:
        ParseError: When neither source gives a verdict.
    """
    if isinstance(message, AIMessage):
        prob = yes_probability(message)
        if prob is not None:
            return Verdict(prob >= threshold, prob, "logprobs")
    text = message_text(message).strip()
    if "{" in text:
        try:
            obj = parse_json_object(text)
        except ParseError:
            obj = {}
        for key in ("verdict", "applicable", "relevant", "answer"):
            if key in obj:
                decision = _word_decision(str(obj[key]))
                if decision is not None:
                    return Verdict(decision, None, "text")
    for word in _WORD.findall(text)[:3]:
        decision = _word_decision(word)
        if decision is not None:
            return Verdict(decision, None, "text")
    raise ParseError(f"no YES/NO verdict in reply: {_preview(text)}")


def _word_decision(word: str) -> bool | None:
    w = word.strip().strip("\"'.").lower()
    if w in _YES:
        return True
    if w in _NO:
        return False
    return None


def yes_probability(message: AIMessage) -> float | None:
    """P(YES) from the first generated token's top logprobs, or ``None``.

    Reads the OpenAI chat-completions shape that langchain-openai puts in
    ``response_metadata["logprobs"]["content"]``; the first entry's
    ``top_logprobs`` list is searched for YES-like and NO-like tokens.
    """
    logprobs = message.response_metadata.get("logprobs") if message.response_metadata else None
    if not isinstance(logprobs, Mapping):
        return None
    content = logprobs.get("content")
    if not content:
        return None
    first = content[0]
    entries = list(first.get("top_logprobs") or []) or [first]
    yes = no = 0.0
    for entry in entries:
        token = str(entry.get("token", ""))
        logprob = entry.get("logprob")
        if logprob is None:
            continue
        decision = _word_decision(token)
        if decision is True:
            yes += math.exp(float(logprob))
        elif decision is False:
            no += math.exp(float(logprob))
    if yes + no == 0.0:
        return None
    return yes / (yes + no)
