"""Reading a judge's reply: P(YES) from first-token logprobs, else a strict YES/NO in the text."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langchain_tag.calls.replies import (
    JSON_FENCE,
    MAX_JSON_DEPTH,
    MAX_REPLY_CHARS,
    Verdict,
    json_shape,
    message_text,
    preview,
)
from langchain_tag.errors import ParseError

__all__ = ["logprobs_yes_probability", "parse_reply", "parse_verdict", "yes_probability"]


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

    The reply text must be a verdict, in one of these forms:

    * a JSON object whose ``verdict`` (or ``answer``) is the string ``"YES"``
      or ``"NO"``, or whose ``applicable`` (or ``relevant``) is a boolean;
    * a reply whose first word is YES or NO (or true/false), optionally after
      ``Answer:``, with no YES or NO of the other kind anywhere after it;
    * with logprobs, also a lone YES- or NO-like token (``"Y"``, ``"n"``,
      ``"Not"``, ...), as a one-token reply may be.

    Anything else ("Not sure.", "Yes, no.", ``{"verdict": ["YES"]}``, a
    sentence that merely contains "yes", an empty reply) is not a verdict,
    whatever its logprobs say. With logprobs (OpenAI-style
    ``response_metadata["logprobs"]``), P(YES) is the probability mass on
    YES-like first tokens divided by the mass on YES- and NO-like ones, and
    the verdict is ``P(YES) >= threshold``; without them (or when no first
    token is YES- or NO-like), the verdict is the text's.

    Raises:
        ParseError: When the text is not a verdict, or the logprobs are
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
    text = text.strip()
    decision = _json_decision(text) if text.startswith(("{", "```")) else _word_decision(text)
    if prob is not None:
        if decision is None and _token_decision(text) is None:
            raise ParseError(
                f"no YES/NO verdict in reply: {preview(text)} (its first-token logprobs give P(YES) = {prob:.3f}, "
                "but the text is not a verdict)"
            )
        return Verdict(prob >= threshold, prob, "logprobs")
    if decision is None:
        raise ParseError(f"no YES/NO verdict in reply: {preview(text)}")
    return Verdict(decision, None, "text")


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
        raise ParseError(f"malformed logprobs: a log-probability is {preview(repr(value), 40)}, not a number")
    number = float(value)
    if not math.isfinite(number) or number > _LOGPROB_SLACK:
        raise ParseError(f"malformed logprobs: log-probability {number!r} is not a finite number at most 0")
    return min(number, 0.0)


def _top_entries(content: Any) -> list[Mapping[str, Any]]:
    """The first token's candidate entries from ``logprobs["content"]``, checked for shape."""
    if not isinstance(content, list) or not isinstance(content[0], Mapping):
        raise ParseError(f"malformed logprobs: content is {preview(repr(content), 60)}, not a list of objects")
    first = content[0]
    top = first.get("top_logprobs")
    entries = [first] if top is None or top == [] else top
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise ParseError(f"malformed logprobs: top_logprobs is {preview(repr(top), 60)}, not a list of objects")
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
        raise ParseError(f"malformed logprobs: {preview(repr(logprobs), 60)} is not an object")
    content = logprobs.get("content")
    if content is None or content == []:
        return None
    yes = no = 0.0
    for entry in _top_entries(content):
        token = entry.get("token")
        if not isinstance(token, str):
            raise ParseError(f"malformed logprobs: a token is {preview(repr(token), 40)}, not a string")
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
