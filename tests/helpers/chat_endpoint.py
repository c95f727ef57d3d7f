"""An OpenAI-compatible ``POST /v1/chat/completions`` on 127.0.0.1, in a thread, answering with a function.

The function gets the request body and returns a chat completion; a request with ``"stream": true`` gets the
same completion as server-sent events (one content chunk, then the end), or, from an endpoint made with
``streams=False``, HTTP 400 as a server without streaming answers it. Every body is kept.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Completion = dict[str, Any]


class ChatEndpoint:
    """The endpoint; ``close()`` stops it.

    Args:
        reply: Request body -> chat completion.
        streams: Whether a request asking to stream is answered (else HTTP 400).
    """

    def __init__(self, reply: Callable[[dict[str, Any]], Completion], *, streams: bool = True) -> None:
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with endpoint._lock:
                    endpoint.bodies.append(body)
                if body.get("stream") and not streams:
                    refusal = {"error": {"message": "streaming is not supported", "type": "invalid_request_error"}}
                    self._send(400, "application/json", json.dumps(refusal).encode())
                    return
                completion = reply(body)
                if body.get("stream"):
                    self._events(completion)
                else:
                    self._send(200, "application/json", json.dumps(completion).encode())

            def _send(self, status: int, kind: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _events(self, completion: Completion) -> None:
                delta = {"role": "assistant", "content": completion["choices"][0]["message"]["content"]}
                chunk = {**completion, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
                end = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                events = "".join(f"data: {json.dumps(part)}\n\n" for part in (chunk, end)) + "data: [DONE]\n\n"
                self._send(200, "text/event-stream", events.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def requests(self) -> int:
        return len(self.bodies)

    @property
    def streamed(self) -> int:
        """How many requests asked to stream."""
        return sum(1 for body in self.bodies if body.get("stream"))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def completion(text: str, *, model: str = "m") -> Completion:
    """A chat completion whose message is ``text``."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model, "choices": [choice], "usage": usage}
