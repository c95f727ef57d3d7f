"""The pipeline's pure steps: a judge request as a chat-completions body, and a response read back.

No Ray here: :func:`chat_request_body` is the preprocess and
:func:`read_chat_response` the postprocess of the Ray Data pipeline that
:mod:`langchain_tag.scale.ray_data.processor` builds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from langchain_tag.calls._faults import http_error, server_message
from langchain_tag.calls._replies import read_completion
from langchain_tag.errors import ParseError
from langchain_tag.judging._read import read_reply
from langchain_tag.judging.results import Reading

__all__ = ["OUTPUT_COLUMNS", "TOP_LOGPROBS", "chat_request_body", "read_chat_response", "row_reading"]

TOP_LOGPROBS = 5
"""``top_logprobs`` asked for, as the in-process judge asks."""

OUTPUT_COLUMNS = (
    "order",
    "key",
    "request",
    "text",
    "logprobs",
    "p_yes",
    "word",
    "prompt_tokens",
    "completion_tokens",
    "model",
    "error",
)
"""The columns of each pipeline output row (what :func:`read_chat_response` adds to ``order``, ``key``, ``request``).

A processor of one's own may leave ``p_yes`` and ``word`` ``None``: the job then reads the reply itself; and
``model`` empty (or leave it out): the reply is then taken as the asked model's."""


def chat_request_body(
    request: Mapping[str, Any],
    *,
    model: str,
    max_tokens: int | None = 1,
    top_logprobs: int = TOP_LOGPROBS,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The OpenAI chat-completions body for one request (the pipeline's preprocess).

    Args:
        request: A :class:`~langchain_tag.judging._pairs.PairRequest` as :meth:`~PairRequest.to_dict` gives it.
        model: The model name the endpoint serves.
        max_tokens: The reply cap: 1 for one-word verdicts, ``None`` for none (JSON verdicts).
        top_logprobs: How many first-token candidates to ask for.
        extra_body: More fields for the body (for example ``{"cache_prompt": True}`` for llama.cpp).
    """
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": str(m["role"]), "content": str(m["content"])} for m in request["messages"]],
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": top_logprobs,
    }
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    body.update(extra_body or {})
    return body


def read_chat_response(status: int, body: str, transport_error: str = "") -> dict[str, Any]:
    """Read one chat-completions response (the pipeline's postprocess): the only read of its reply.

    Args:
        status: The HTTP status (0 when no response came).
        body: The response body.
        transport_error: Why no response came, if none did.

    Returns:
        ``text`` (the reply), ``logprobs`` (the first choice's logprobs
        object as JSON, ``""`` without), ``p_yes`` and ``word`` (the
        reading :func:`~langchain_tag.judging._read.read_reply` makes of it:
        ``p_yes`` is ``None`` for a text verdict, ``word`` the YES (``True``)
        or NO (``False``) read, ``None`` when none was), ``prompt_tokens``,
        ``completion_tokens``, ``model`` (the model the body says answered, ``""`` when it names none) and
        ``error`` (``""`` when the reply was read).
        :func:`row_reading` gives that reading back to the job.
    """
    row: dict[str, Any] = {
        "text": "",
        "logprobs": "",
        "p_yes": None,
        "word": None,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "model": "",
        "error": "",
    }
    if transport_error:
        row["error"] = transport_error
        return row
    if not 200 <= status < 300:
        row["error"] = http_error(status, server_message(body))
        return row
    try:
        completion = read_completion(json.loads(body))
    except ValueError as exc:  # not JSON, or no completion in it (a ParseError)
        reason = f" ({exc})" if isinstance(exc, ParseError) else ""
        row["error"] = f"unreadable response: {_preview(body)}{reason}"
        return row
    row["text"] = completion.text
    row["logprobs"] = json.dumps(completion.logprobs) if completion.logprobs is not None else ""
    row["prompt_tokens"] = completion.prompt_tokens
    row["completion_tokens"] = completion.completion_tokens
    row["model"] = completion.model
    try:
        reading = read_reply(completion.text, completion.logprobs)
    except ParseError as exc:
        row["error"] = str(exc)
        return row
    row["p_yes"], row["word"] = reading.p_yes, reading.word
    return row


def row_reading(row: Mapping[str, Any]) -> Reading | None:
    """The reading the postprocess made of an output row's reply (:func:`read_chat_response`), as the judge keeps it.

    ``None`` when the row carries none: an error row, or a processor of one's own that left ``word`` empty (its
    reply is then still to be read).
    """
    word = row.get("word")
    if row.get("error") or word is None or _missing(word):
        return None
    p_yes = row.get("p_yes")
    return Reading(
        p_yes=None if p_yes is None or _missing(p_yes) else float(p_yes),
        word=bool(word),
        reply=str(row.get("text") or ""),
        attempts=1,
        prompt_tokens=int(row.get("prompt_tokens") or 0),
        completion_tokens=int(row.get("completion_tokens") or 0),
    )


def _missing(value: Any) -> bool:
    """Whether a column value is a null a pandas block made of ``None`` (NaN)."""
    return isinstance(value, float) and math.isnan(value)


def _preview(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


def preprocess_row(
    row: dict[str, Any], *, model: str, max_tokens: int | None, extra_body: dict[str, Any]
) -> dict[str, Any]:
    return {
        "payload": chat_request_body(
            json.loads(row["request"]), model=model, max_tokens=max_tokens, extra_body=extra_body
        )
    }


def postprocess_row(row: dict[str, Any]) -> dict[str, Any]:
    response = row["http_response"]
    read = read_chat_response(int(response["status"]), str(response["body"]), str(response["error"]))
    return {"order": row["order"], "key": row["key"], "request": row["request"], **read}
