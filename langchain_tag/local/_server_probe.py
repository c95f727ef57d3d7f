"""Looking at a starting or running local server from the parent: its ready line, and its HTTP endpoints."""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
import urllib.error
import urllib.request

from langchain_tag.local._server_child import READY_PREFIX

__all__ = ["NO_PROXY_OPENER", "healthy", "read_ready_line"]

logger = logging.getLogger(__name__)

NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""An opener that never goes through a proxy (the server is on ``127.0.0.1``)."""


def read_ready_line(process: subprocess.Popen[str], deadline: float) -> str | None:
    """Wait for the child's ready line on stdout; return its address or ``None``.

    A daemon thread keeps draining stdout afterwards so the child can never
    block on a full pipe.
    """
    result: list[str] = []
    ready = threading.Event()

    def reader() -> None:
        assert process.stdout is not None
        try:
            for line in process.stdout:
                if not ready.is_set() and line.startswith(READY_PREFIX):
                    try:
                        result.append(json.loads(line[len(READY_PREFIX) :])["address"])
                    except (ValueError, KeyError, TypeError):
                        logger.warning("Unreadable ready line from server: %r", line)
                    ready.set()
        except (OSError, ValueError):  # stream closed by stop()
            pass
        finally:
            ready.set()

    threading.Thread(target=reader, name="langchain-tag-server-stdout", daemon=True).start()
    ready.wait(max(0.0, deadline - time.monotonic()))
    return result[0] if result else None


def healthy(url: str) -> bool:
    try:
        with NO_PROXY_OPENER.open(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False
