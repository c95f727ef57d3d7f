"""An OpenAI-compatible chat endpoint on 127.0.0.1 that answers from the prompt text and cannot stream.

A request with ``"stream": true`` gets HTTP 400, as a server without streaming answers it, so a client that
streams a call fails where one that does not succeeds.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest_socket

LOOPBACK = ["127.0.0.1"]


class LoopbackChat:
    """The endpoint; ``respond`` maps the prompt text (contents joined by blank lines) to the reply text.

    Attributes:
        bodies: Every request body received.
        streamed: How many requests asked to stream.
    """

    def __init__(self, respond: Callable[[str], str], *, model: str = "m") -> None:
        self.respond = respond
        self.model = model
        self.bodies: list[dict[str, Any]] = []
        self.streamed = 0
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = endpoint._answer(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.bodies.append(body)
            if body.get("stream"):
                self.streamed += 1
                return 400, {"error": {"message": "streaming is not supported", "type": "invalid_request_error"}}
        text = "\n\n".join(str(m["content"]) for m in body["messages"])
        reply = self.respond(text)
        choice = {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
        usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
        return 200, {"id": "x", "object": "chat.completion", "created": 0, "model": self.model,
                     "choices": [choice], "usage": usage}  # fmt: skip

    def chat_model(self, **kwargs: Any) -> Any:
        """A ``ChatOpenAI`` sending here, without client retries."""
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=self.model, base_url=self.base_url, api_key="k", max_retries=0, **kwargs)


@contextmanager
def loopback_chat(respond: Callable[[str], str], **kwargs: Any) -> Iterator[LoopbackChat]:
    """Serve :class:`LoopbackChat` for the block (connections allowed to the loopback address only)."""
    pytest_socket.socket_allow_hosts(LOOPBACK, allow_unix_socket=True)
    endpoint = LoopbackChat(respond, **kwargs)
    endpoint.thread.start()
    try:
        yield endpoint
    finally:
        endpoint.server.shutdown()
        endpoint.server.server_close()
        endpoint.thread.join(timeout=5)
