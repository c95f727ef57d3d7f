"""Faults as real clients raise them, and a fake reply function that injects them."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import httpx
import httpx2
import openai
from langchain_openai import ChatOpenAI

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


def named(fault: BaseException) -> str:
    """How a failure report names ``fault``: ``HTTP <status>`` for an HTTP error (whichever client got it),
    else its class name."""
    status = getattr(fault, "status_code", None)
    return f"HTTP {status}" if isinstance(status, int) else type(fault).__name__


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


def completion(reply: str) -> httpx2.Response:
    """A chat-completions response whose message is ``reply``."""
    choice = {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
    usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice], "usage": usage}
    return httpx2.Response(200, json=body)


class CountingEndpoint:
    """An OpenAI-compatible endpoint in memory that answers from the prompt text and counts requests per prompt.

    Args:
        respond: Maps the prompt text (message contents joined by blank lines,
            as :func:`~langchain_tag.testing.prompt_text` joins them) to a
            reply text, or to an HTTP status to fail with.
    """

    def __init__(self, respond: Callable[[str], str | int]) -> None:
        self.respond = respond
        self.requests: dict[str, int] = {}
        self.bodies: list[dict[str, object]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        text = "\n\n".join(str(m["content"]) for m in body["messages"])
        with self._lock:
            self.requests[text] = self.requests.get(text, 0) + 1
        reply = self.respond(text)
        if isinstance(reply, int):
            return httpx2.Response(reply, headers={"retry-after-ms": "1"}, json={"error": {"message": "failed"}})
        choice = {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
        usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
        return httpx2.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [choice],
                "usage": usage,
            },
        )

    def model(self, **kwargs: object) -> ChatOpenAI:
        """A ``ChatOpenAI`` sending to this endpoint; ``max_retries`` is left at its default unless given."""
        return ChatOpenAI(
            model="m",
            base_url="http://llm.example.test/v1",
            api_key="k",
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),  # type: ignore[arg-type]
            http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self)),  # type: ignore[arg-type]
            **kwargs,  # type: ignore[arg-type]
        )

    def most_requests(self, when: Callable[[str], bool]) -> int:
        """The most requests any one prompt matching ``when`` received."""
        return max((n for text, n in self.requests.items() if when(text)), default=0)
