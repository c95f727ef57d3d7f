"""Stopping a CLI child process with SIGTERM once it has judged enough, for the signal tests."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def judged(verdicts: Path) -> int:
    """Verdicts in a SQLite verdict cache file (0 before it exists)."""
    try:
        with contextlib.closing(sqlite3.connect(verdicts)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])
    except sqlite3.Error:  # not created yet
        return 0


def terminate_when(child: subprocess.Popen[bytes], ready: Callable[[], bool], *, wait: float = 30) -> str:
    """SIGTERM ``child`` once ``ready()`` (or it ended, or ``wait`` seconds passed); its stderr once it ended."""
    try:
        deadline = time.monotonic() + wait
        while not ready() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        child.send_signal(signal.SIGTERM)
        _, err_bytes = child.communicate(timeout=wait)
    finally:
        child.kill()
    return err_bytes.decode()
