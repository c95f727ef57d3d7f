"""Faults as real clients raise them, and a fake reply function that injects them."""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx
import httpx2
import openai

from langchain_tag.testing import Reply

_URL = "https://llm.example.test/v1/chat/completions"
_REQUEST = httpx2.Request("POST", _URL)  # the openai client's own HTTP library


def rate_limited() -> openai.RateLimitError:
    """HTTP 429 from an OpenAI-compatible endpoint."""
    response = httpx2.Response(429, request=_REQUEST, json={"error": {"message": "Rate limit reached"}})
    return openai.RateLimitError("Error code: 429 - Rate limit reached", response=response, body=None)


def server_error() -> openai.InternalServerError:
    """HTTP 503."""
    response = httpx2.Response(503, request=_REQUEST, text="overloaded")
    return openai.InternalServerError("Error code: 503 - overloaded", response=response, body=None)


def timed_out() -> openai.APITimeoutError:
    """The request timed out."""
    return openai.APITimeoutError(request=_REQUEST)


def connection_reset() -> ConnectionResetError:
    """The peer reset the connection."""
    return ConnectionResetError(104, "Connection reset by peer")


def connect_error() -> httpx.ConnectError:
    """The endpoint refused the connection."""
    return httpx.ConnectError("[Errno 111] Connection refused", request=httpx.Request("POST", _URL))


FAULTS: dict[str, Callable[[], BaseException]] = {
    "429": rate_limited,
    "503": server_error,
    "timeout": timed_out,
    "reset": connection_reset,
    "refused": connect_error,
}


MALFORMED_LOGPROBS: dict[str, object] = {
    "list of strings": ["YES"],
    "list of null": [None],
    "string content": "abc",
    "logprob a string": [{"token": "YES", "logprob": "abc"}],
    "logprob 1000": [{"token": "YES", "logprob": 1000}],
    "logprob NaN": [{"token": "YES", "logprob": float("nan")}],
    "logprob NaN in top": [
        {"token": "YES", "logprob": -0.1, "top_logprobs": [{"token": "NO", "logprob": float("nan")}]}
    ],
    "logprob missing": [{"token": "YES"}],
    "token not a string": [{"token": None, "logprob": -0.1}],
    "top not a list": [{"token": "YES", "logprob": -0.1, "top_logprobs": "YES"}],
}
"""``logprobs["content"]`` values a broken server sent: each must be a failed judgment, never a verdict or a crash."""


def injecting(
    base: Callable[[str], Reply],
    *,
    when: Callable[[str], bool],
    fault: Callable[[str, str], Reply],
    times: int | None = None,
) -> Callable[[str], Reply]:
    """A reply function that answers ``fault(prompt, good_reply)`` for matching prompts.

    Args:
        base: The well-behaved reply function.
        when: Which prompts get the fault.
        fault: The faulty reply (an exception is raised by the fake model).
        times: Fault only the first ``times`` calls of each matching prompt
            (a flaky provider); ``None`` faults every time.
    """
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def respond(text: str) -> Reply:
        good = base(text)
        if not when(text):
            return good
        with lock:
            seen[text] = seen.get(text, 0) + 1
            count = seen[text]
        if times is not None and count > times:
            return good
        return fault(text, good if isinstance(good, str) else "")

    return respond
