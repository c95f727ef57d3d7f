"""The one verdict reader: a judge's reply (its text, and first-token logprobs where given) into a :class:`Reading`.

Every front reads replies here, whatever brought them: the chat judge's calls
(through the runnable or straight through the client), a Ray Data job's
responses, a provider batch's results file. :data:`READER_VERSION` is part of
every verdict-cache key, so verdicts an older reader accepted are never served
by a newer one: bump it whenever what this module accepts or returns changes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langchain_tag.calls._replies import JSON_FENCE, MAX_JSON_DEPTH, MAX_REPLY_CHARS, json_shape, message_text, preview
from langchain_tag.errors import ParseError
from langchain_tag.judging.results import Reading

__all__ = ["READER_VERSION", "read_message", "read_reply"]

READER_VERSION = "reader-2"
"""The version of this reader and of the :class:`Reading` it makes (part of every verdict-cache key)."""

# Tokens whose logprobs count as YES or NO mass (a tokeniser may split "YES" or prefix a space).
_TOKEN_WORDS = MappingProxyType(
    {
        **dict.fromkeys(("yes", "true", "y", "applicable", "applies"), True),
        **dict.fromkeys(("no", "false", "n", "not", "inapplicable"), False),
    }
)
# Words a text reply may answer with; anything else is not a verdict.
_ANSWERS = MappingProxyType({"yes": True, "true": True, "no": False, "false": False})
_LABEL = re.compile(r"^\s*(?:answer|verdict)\s*:\s*", re.IGNORECASE)
_LEADING_WORD = re.compile(r"^[\s*_`\"'(\[]*([A-Za-z]+)\b")
_YES_NO_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
# JSON fields a verdict may come in, with the type each must have.
_JSON_FIELDS: Mapping[str, type] = MappingProxyType(
    {"verdict": str, "answer": str, "applicable": bool, "relevant": bool}
)
_LOGPROB_SLACK = 1e-3  # servers round; a log-probability a hair above 0 is read as 0


def read_message(message: BaseMessage | str) -> Reading:
    """Read a chat model's reply: its text, and the OpenAI-style ``response_metadata["logprobs"]`` where given.

    Raises:
        ParseError: As :func:`read_reply`.
    """
    if isinstance(message, str):
        return read_reply(message)
    logprobs = message.response_metadata.get("logprobs") if isinstance(message, AIMessage) else None
    content = message.content
    return read_reply(content if isinstance(content, str) else message_text(message), logprobs)


def read_reply(text: str, logprobs: Any = None) -> Reading:
    """Read one reply strictly: P(YES) from the first token's logprobs where given, and the YES/NO of its text.

    The reply text must be a verdict, in one of these forms:

    * a JSON object whose ``verdict`` (or ``answer``) is the string ``"YES"``
      or ``"NO"``, or whose ``applicable`` (or ``relevant``) is a boolean;
    * a reply whose first word is YES or NO (or true/false), optionally after
      ``Answer:``, with no YES or NO of the other kind anywhere after it;
    * with logprobs, also a lone YES- or NO-like token (``"Y"``, ``"n"``,
      ``"Not"``, ...), as a one-token reply may be.

    Anything else ("Not sure.", "Yes, no.", ``{"verdict": ["YES"]}``, a
    sentence that merely contains "yes", an empty reply) is not a verdict,
    whatever its logprobs say. With logprobs (the OpenAI chat-completions
    ``logprobs`` object), P(YES) is the probability mass on YES-like first
    tokens divided by the mass on YES- and NO-like ones.

    >>> reading = read_reply("NO - the input has no tabs")
    >>> reading.word, reading.p_yes
    (False, None)

    Raises:
        ParseError: When the text is not a verdict, or the logprobs are
            malformed (not the documented shape, or a log-probability that is
            not a finite number at most 0).
    """
    p_yes = _p_yes(logprobs)
    stripped = text.strip()
    word = _json_decision(stripped) if stripped.startswith(("{", "```")) else _word_decision(stripped)
    if p_yes is not None and word is None:
        word = _TOKEN_WORDS.get(stripped.strip("\"'.").lower())
        if word is None:
            raise ParseError(
                f"no YES/NO verdict in reply: {preview(stripped)} (its first-token logprobs give P(YES) = "
                f"{p_yes:.3f}, but the text is not a verdict)"
            )
    if word is None:
        raise ParseError(f"no YES/NO verdict in reply: {preview(stripped)}")
    return Reading(p_yes=p_yes, word=word, reply=text)


def _json_decision(text: str) -> bool | None:
    """The verdict of a JSON reply: one field of the right type, no conflicting second one."""
    fence = JSON_FENCE.search(text)
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


def _p_yes(logprobs: Any) -> float | None:
    """P(YES) from an OpenAI chat-completions ``logprobs`` object, or ``None`` (no logprobs, or no YES/NO token).

    The first entry of ``logprobs["content"]`` is read: its ``top_logprobs`` list (or the entry itself) is searched
    for YES-like and NO-like tokens.

    Raises:
        ParseError: When the logprobs are there but malformed: not the documented shape, a token that is not a
            string, or a log-probability that is not a finite number at most 0 (NaN, ``"abc"``, 1000).
    """
    if logprobs is None:
        return None
    if not isinstance(logprobs, Mapping):
        raise ParseError(f"malformed logprobs: {preview(repr(logprobs), 60)} is not an object")
    content = logprobs.get("content")
    if content is None or content == []:
        return None
    if not isinstance(content, list) or not isinstance(content[0], Mapping):
        raise ParseError(f"malformed logprobs: content is {preview(repr(content), 60)}, not a list of objects")
    top = content[0].get("top_logprobs")
    entries = [content[0]] if top is None or top == [] else top
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise ParseError(f"malformed logprobs: top_logprobs is {preview(repr(top), 60)}, not a list of objects")
    mass = {True: 0.0, False: 0.0}
    for entry in entries:
        token, value = entry.get("token"), entry.get("logprob")
        if not isinstance(token, str):
            raise ParseError(f"malformed logprobs: a token is {preview(repr(token), 40)}, not a string")
        word = _TOKEN_WORDS.get(token.strip().strip("\"'.").lower())
        if word is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ParseError(f"malformed logprobs: a log-probability is {preview(repr(value), 40)}, not a number")
        if not math.isfinite(value) or value > _LOGPROB_SLACK:
            raise ParseError(f"malformed logprobs: log-probability {float(value)!r} is not a finite number at most 0")
        mass[word] += math.exp(min(float(value), 0.0))
    total = mass[True] + mass[False]
    return mass[True] / total if total else None
