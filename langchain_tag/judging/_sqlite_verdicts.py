"""The verdict cache in a SQLite file: survives restarts, shared by threads and processes, written in batches."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path

from langchain_tag.calls._sqlite_file import SQLiteFile
from langchain_tag.errors import TagError
from langchain_tag.judging._claim_owners import CLAIM_TTL, alive
from langchain_tag.judging.results import Reading

__all__ = ["SQLiteVerdictCache", "VerdictCacheError"]


class VerdictCacheError(TagError):
    """A verdict could not be kept in the verdict cache (a full disk, a lock another process holds too long, ...).

    It stops the job rather than letting it go on paying for judgments it cannot
    keep: the message names the cache file and SQLite's reason.

    Attributes:
        path: The cache file (or the cache's class name when it has no file).
    """

    def __init__(self, path: str | Path, error: BaseException) -> None:
        reason = str(error) or type(error).__name__
        prefix = f"{path}: "
        reason = reason.removeprefix(prefix)
        super().__init__(f"cannot keep verdicts in the verdict cache {path}: {reason}")
        self.path = path


_Row = tuple[int, float | None, str, float]
"""A reading as stored: its word, P(YES), reply, and when it was stored."""

_INSERT = "INSERT OR REPLACE INTO verdicts (key, applies, probability, reply, created) VALUES (?, ?, ?, ?, ?)"


class _Writes:
    """Verdicts put but not committed yet, committed together: per ``every`` verdicts or ``interval`` seconds.

    A background thread commits what waited ``interval`` seconds; a failure of its
    commit is raised by the next :meth:`put`. Puts come from any thread.
    """

    def __init__(self, file: SQLiteFile, every: int, interval: float) -> None:
        self.file = file
        self.every = every
        self.interval = interval
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.committing_lock = threading.Lock()
        self.pending: dict[str, _Row] = {}
        self.committing: dict[str, _Row] = {}
        self.since: float | None = None
        self.failure: VerdictCacheError | None = None
        self.stop = False
        self.thread: threading.Thread | None = None
        self.commits = 0

    def get(self, key: str) -> _Row | None:
        with self.lock:
            return self.pending.get(key) or self.committing.get(key)

    def put(self, key: str, row: _Row) -> None:
        with self.lock:
            self.pending[key] = row
            if self.since is None:
                self.since = time.monotonic()
            full = len(self.pending) >= self.every or self.interval <= 0
            if not full:
                self._start_thread()
                self.wake.notify()
            failure, self.failure = self.failure, None
        if failure is not None:
            raise failure
        if full:
            self.flush()

    def flush(self) -> None:
        """Commit every pending verdict in one transaction; raise :class:`VerdictCacheError` if it fails."""
        with self.committing_lock:
            with self.lock:
                if not self.pending:
                    self.failure = None  # whatever failed before is committed now
                    return
                batch, self.pending, self.since = self.pending, {}, None
                self.committing = batch
            try:
                with self.file.connection() as conn:
                    conn.executemany(_INSERT, [(key, *row) for key, row in batch.items()])
            except sqlite3.Error as exc:
                with self.lock:
                    self.pending = {**batch, **self.pending}  # kept (and readable) for the next attempt
                    self.since = self.since or time.monotonic()
                    self.committing = {}
                raise VerdictCacheError(self.file.path, exc) from exc
            with self.lock:
                self.committing = {}
                self.commits += 1
                if not self.pending:
                    self.failure = None

    def _start_thread(self) -> None:
        """Start the committing thread if it is not running (called holding ``lock``)."""
        if self.thread is None or not self.thread.is_alive():
            self.stop = False
            self.thread = threading.Thread(target=self._run, name="tag-verdict-writes", daemon=True)
            self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                with self.lock:
                    while not self.stop and self.since is None:
                        self.wake.wait()
                    if self.stop or self.since is None:
                        return
                    delay = self.since + self.interval - time.monotonic()
                    if delay > 0:
                        self.wake.wait(delay)
                        continue
                try:
                    self.flush()
                except VerdictCacheError as exc:
                    with self.lock:
                        self.failure = exc
        finally:
            self.file.close()  # this thread's connection

    def close(self) -> None:
        """Commit what is pending and stop the committing thread."""
        try:
            self.flush()
        finally:
            with self.lock:
                self.stop = True
                self.wake.notify_all()
                thread, self.thread = self.thread, None
            if thread is not None and thread is not threading.current_thread():
                thread.join(5)


def _close_quietly(writes: _Writes) -> None:
    """Commit what a cache left pending when it is collected or the interpreter exits."""
    with contextlib.suppress(Exception):
        writes.close()


class SQLiteVerdictCache:
    """A verdict cache in a SQLite file: survives restarts, shared by threads and processes.

    Verdicts are written in transactions of several (WAL journal): a put waits
    in memory until ``flush_every`` verdicts are pending or the oldest has
    waited ``flush_interval`` seconds, then all are committed at once. The call
    runner flushes at the end of every run (so whatever a finished ``match``
    returned is on disk), and :meth:`close` does too; a process killed in the
    middle of a job loses at most the verdicts not flushed yet. :meth:`get`
    sees pending verdicts (this object's) and reads the file afresh each time
    (other processes' verdicts, once committed).

    A write that fails raises :class:`VerdictCacheError` (from :meth:`put`,
    :meth:`flush` or :meth:`close`; a failed background commit from the next
    :meth:`put`), naming the file.

    Args:
        path: The database file; created with its directory if missing.
        timeout: Seconds to wait for a lock held by another process.
        flush_every: Most verdicts pending before they are committed (1: each put is committed at once).
        flush_interval: Most seconds a verdict stays pending before a background thread commits it
            (0: each put is committed at once).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        timeout: float = 30.0,
        flush_every: int = 64,
        flush_interval: float = 0.2,
    ) -> None:
        if flush_every < 1:
            raise ValueError(f"flush_every must be >= 1, got {flush_every}")
        if flush_interval < 0:
            raise ValueError(f"flush_interval must be >= 0, got {flush_interval}")
        self._file = SQLiteFile(
            path,
            "CREATE TABLE IF NOT EXISTS verdicts ("
            "key TEXT PRIMARY KEY, applies INTEGER NOT NULL, probability REAL, reply TEXT NOT NULL, "
            "created REAL NOT NULL)",
            timeout=timeout,
        )
        with self._file.connection() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, created REAL NOT NULL)"
            )
        self.path = self._file.path
        self.flush_every = flush_every
        self.flush_interval = flush_interval
        self._writes = _Writes(self._file, flush_every, flush_interval)
        weakref.finalize(self, _close_quietly, self._writes)
        self.hits = 0
        self.misses = 0

    @property
    def commits(self) -> int:
        """Transactions that committed verdicts so far."""
        return self._writes.commits

    def get(self, key: str) -> Reading | None:
        """The reading stored under ``key`` (pending or committed, by any process), or ``None``."""
        row = self._writes.get(key)
        if row is None:
            row = (
                self._file.connection()
                .execute("SELECT applies, probability, reply FROM verdicts WHERE key = ?", (key,))
                .fetchone()
            )
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return Reading(p_yes=row[1], word=bool(row[0]), reply=row[2])

    def put(self, key: str, reading: Reading) -> None:
        """Store ``reading`` under ``key`` (committed with others: see the class).

        Raises:
            VerdictCacheError: When a commit failed (this one's or an earlier background one).
        """
        self._writes.put(key, (int(bool(reading.word)), reading.p_yes, reading.reply, time.time()))

    def flush(self) -> None:
        """Commit every pending verdict now.

        Raises:
            VerdictCacheError: When the commit fails (the verdicts stay pending).
        """
        self._writes.flush()

    def claim(self, keys: Sequence[str], owner: str, *, ttl: float = CLAIM_TTL) -> list[str]:
        """Claim the keys no verdict is stored under for ``owner``; return those another running job claimed.

        Jobs sharing the file claim a pair before judging it, so none judges what
        another is judging; a claim of a job that ended (its process on this host
        is gone) or that is older than ``ttl`` seconds (on any host) is taken over.

        Args:
            keys: The pairs' keys.
            owner: The claiming job (:class:`Claims`).
            ttl: Seconds a claim is trusted.
        """
        if not keys:
            return []
        with self._writes.lock:
            pending = set(self._writes.pending) | set(self._writes.committing)
        wanted = sorted(set(keys) - pending)
        held: list[str] = []
        now = time.time()
        conn = self._file.connection()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                for start in range(0, len(wanted), 500):
                    chunk = wanted[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    stored = {k for (k,) in conn.execute(f"SELECT key FROM verdicts WHERE key IN ({marks})", chunk)}
                    claimed = {
                        k: (o, c)
                        for k, o, c in conn.execute(
                            f"SELECT key, owner, created FROM claims WHERE key IN ({marks})", chunk
                        )
                    }
                    free = []
                    for key in chunk:
                        if key in stored:
                            continue
                        other = claimed.get(key)
                        if other is not None and other[0] != owner and alive(other[0], other[1], now, ttl):
                            held.append(key)
                        elif other is None or other[0] != owner:
                            free.append((key, owner, now))
                    conn.executemany("INSERT OR REPLACE INTO claims (key, owner, created) VALUES (?, ?, ?)", free)
        except sqlite3.Error as exc:
            raise VerdictCacheError(self.path, exc) from exc
        return held

    def claimants(self, keys: Sequence[str]) -> dict[str, tuple[int, float]]:
        """Who claimed ``keys``: each owner's count of them and the time of its oldest claim (for messages)."""
        found: dict[str, tuple[int, float]] = {}
        conn = self._file.connection()
        wanted = sorted(set(keys))
        try:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(f"SELECT owner, created FROM claims WHERE key IN ({marks})", chunk)
                for owner, created in rows:
                    count, oldest = found.get(owner, (0, created))
                    found[owner] = (count + 1, min(oldest, created))
        except sqlite3.Error as exc:
            raise VerdictCacheError(self.path, exc) from exc
        return found

    def release(self, keys: Sequence[str], owner: str) -> None:
        """Drop ``owner``'s claims on ``keys`` (on every key when ``keys`` is empty)."""
        try:
            with self._file.connection() as conn:
                if keys:
                    conn.executemany("DELETE FROM claims WHERE key = ? AND owner = ?", [(k, owner) for k in keys])
                else:
                    conn.execute("DELETE FROM claims WHERE owner = ?", (owner,))
        except sqlite3.Error as exc:
            raise VerdictCacheError(self.path, exc) from exc

    def __len__(self) -> int:
        self.flush()
        return int(self._file.connection().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        """Commit the pending verdicts, stop the committing thread, and close this thread's connection.

        Raises:
            VerdictCacheError: When the pending verdicts cannot be committed.
        """
        try:
            self._writes.close()
        finally:
            self._file.close()
