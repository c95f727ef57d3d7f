"""An OpenAI-compatible ``POST /v1/chat/completions`` on 127.0.0.1, in a thread, answering with a function.

The function gets the request body and returns a chat completion; a request with ``"stream": true`` gets the
same completion as server-sent events (one content chunk, then the end), or, from an endpoint made with
``streams=False``, HTTP 400 as a server without streaming answers it. Every body is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.helpers.loopback_server import LoopbackServer, as_json

Completion = dict[str, Any]


class ChatEndpoint(LoopbackServer):
    """The endpoint; ``close()`` stops it.

    Args:
        reply: Request body -> chat completion.
        streams: Whether a request asking to stream is answered (else HTTP 400).
    """

    def __init__(self, reply: Callable[[dict[str, Any]], Completion], *, streams: bool = True) -> None:
        def answer(path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
            if body.get("stream") and not streams:
                return as_json(
                    400, {"error": {"message": "streaming is not supported", "type": "invalid_request_error"}}
                )
            completion = reply(body)
            return _events(completion) if body.get("stream") else as_json(200, completion)

        super().__init__(answer)

    @property
    def requests(self) -> int:
        return len(self.bodies)

    @property
    def streamed(self) -> int:
        """How many requests asked to stream."""
        return sum(1 for body in self.bodies if body.get("stream"))


def _events(completion: Completion) -> tuple[int, str, bytes]:
    """The completion as server-sent events: one content chunk, then the end."""
    delta = {"role": "assistant", "content": completion["choices"][0]["message"]["content"]}
    chunk = {**completion, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    end = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    events = "".join(f"data: {json.dumps(part)}\n\n" for part in (chunk, end)) + "data: [DONE]\n\n"
    return 200, "text/event-stream", events.encode()


def completion(text: str, *, model: str = "m") -> Completion:
    """A chat completion whose message is ``text``."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model, "choices": [choice], "usage": usage}
