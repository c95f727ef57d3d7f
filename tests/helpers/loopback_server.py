"""An HTTP server on 127.0.0.1, in a thread, whose requests a function answers: the fakes of the tests' endpoints.

Each POST's path and JSON body is kept, then handed to ``answer(path, body)``, which returns the status, the
content type and the bytes to send back; with ``gets=True`` so is each GET (its body ``{}``), else a GET gets 501.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, dict[str, Any]], tuple[int, str, bytes]]


class LoopbackServer:
    """The server; ``close()`` stops it.

    Args:
        answer: Answers each request kept.
        gets: Whether GET requests are kept and answered too.

    Attributes:
        bodies: Every request body received.
        paths: Every request path received.
    """

    def __init__(self, answer: Answer, *, gets: bool = False) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self._answer(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))

            def do_GET(self) -> None:
                if not gets:  # as a server with no GET routes: not kept, not answered
                    self.send_error(501)
                    return
                self._answer({})

            def _answer(self, body: dict[str, Any]) -> None:
                with server._lock:
                    server.bodies.append(body)
                    server.paths.append(self.path)
                status, kind, data = answer(self.path, body)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def as_json(status: int, payload: Any) -> tuple[int, str, bytes]:
    """A JSON answer."""
    return status, "application/json", json.dumps(payload).encode()
