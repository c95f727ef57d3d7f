"""A SQLite file shared by threads and processes: one connection per thread, WAL journal.

The extraction store and the verdict cache both keep small key-value rows
that must survive restarts and be written from several threads (batched
calls) and processes (parallel runs); this is the part they share.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

__all__ = ["SQLiteFile"]


class SQLiteFile:
    """A SQLite database file with a per-thread connection.

    Args:
        path: The database file; created with its directory if missing.
        schema: ``CREATE TABLE IF NOT EXISTS ...`` statement run once on open.
        timeout: Seconds to wait for a lock held by another process.
    """

    def __init__(self, path: str | Path, schema: str, *, timeout: float = 30.0) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._timeout = timeout
        self._local = threading.local()
        with self.connection() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(schema)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use).

        Use it as a context manager (``with file.connection() as conn:``) to
        commit the statements inside on exit.
        """
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self._timeout)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
