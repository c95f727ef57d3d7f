"""A SQLite file shared by threads and processes: one connection per thread, WAL journal.

The extraction store and the verdict cache both keep small key-value rows
that must survive restarts and be written from several threads (batched
calls) and processes (parallel runs); this is the part they share.

Every SQLite error raised through it names the database file (``v.sqlite: file
is not a database``), keeping its class (:class:`sqlite3.DatabaseError`, ...).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["SQLiteFile"]


def _naming(error: sqlite3.Error, path: Path) -> sqlite3.Error:
    """``error`` again (same class, SQLite error code kept) with ``path`` in front of its message."""
    named = type(error)(f"{path}: {error}")
    for attribute in ("sqlite_errorcode", "sqlite_errorname"):
        if hasattr(error, attribute):
            setattr(named, attribute, getattr(error, attribute))
    return named


@contextmanager
def _named_errors(path: Path) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        if str(exc).startswith(f"{path}: "):
            raise
        raise _naming(exc, path) from exc


_BUSY_CODES = (5, 6)
"""SQLITE_BUSY and SQLITE_LOCKED (named in ``sqlite3`` from Python 3.11 on)."""


def _busy(error: sqlite3.OperationalError) -> bool:
    """Whether ``error`` is SQLite refusing a lock another connection holds (busy or locked)."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY_CODES  # an extended code keeps its primary code in the low byte
    return str(error).endswith(("database is locked", "database is busy"))


class _Connection(sqlite3.Connection):
    """A connection whose statement and commit errors name its database file."""

    database: Path

    def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        with _named_errors(self.database):
            return super().execute(*args, **kwargs)

    def executemany(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        with _named_errors(self.database):
            return super().executemany(*args, **kwargs)

    def commit(self) -> None:
        with _named_errors(self.database):
            super().commit()

    def __exit__(self, *args: Any) -> Any:
        with _named_errors(self.database):
            return super().__exit__(*args)


class SQLiteFile:
    """A SQLite database file with a per-thread connection.

    Args:
        path: The database file; created with its directory if missing.
        schema: ``CREATE TABLE IF NOT EXISTS ...`` statement run once on open.
        timeout: Seconds to wait for a lock held by another process.
    """

    def __init__(self, path: str | Path, schema: str, *, timeout: float = 30.0) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            file = next((p for p in self.path.parents if p.exists() and not p.is_dir()), None)
            why = f"{file} is a file, not a directory" if file else (exc.strerror or str(exc))
            raise type(exc)(f"{self.path}: cannot create the database's directory ({why})") from exc
        self._timeout = timeout
        self._local = threading.local()
        with self.connection() as conn:
            self._journal_in_wal(conn)
            conn.execute(schema)

    def _journal_in_wal(self, conn: sqlite3.Connection) -> None:
        """Switch the file to the WAL journal, waiting (up to the timeout) while another connection opens it too.

        Two openers of a new file each need it alone to switch its journal, and SQLite refuses the one that would
        deadlock at once, without its busy timeout: that one tries again shortly.
        """
        deadline = time.monotonic() + self._timeout
        pause = 0.005
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use).

        Use it as a context manager (``with file.connection() as conn:``) to
        commit the statements inside on exit.
        """
        conn = getattr(self._local, "conn", None)
        if conn is None:
            with _named_errors(self.path):
                conn = sqlite3.connect(self.path, timeout=self._timeout, factory=_Connection)
            conn.database = self.path
            # With a WAL journal, NORMAL syncs at checkpoints, not at every commit: a crash of the process loses
            # nothing committed, a power cut at most the last commits (a cache's, made again on the next run).
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
