"""A benchmark run's per-item results, one JSON object per line, appended as they finish.

The file is the run's only state: a run that crashes or is killed starts
again from it and skips every ``(method, key)`` pair already recorded. Each
record is written with a single ``write`` followed by ``flush`` and ``fsync``,
so at most the line being written when the process died is lost; a torn last
line is ignored on reading (with a warning) and that item is redone.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["RunLog"]

logger = logging.getLogger(__name__)


class RunLog:
    """Append-only JSONL of per-item benchmark records keyed by ``(method, key)``.

    Args:
        path: The JSONL file; created (with its directory) on the first
            append. Existing records are loaded.

    Example:
        .. code-block:: python

            log = RunLog("runs/nba/items.jsonl")
            if not log.done("tag", "L0-3"):
                log.append({"method": "tag", "key": "L0-3", "scores": {"correct": True}})
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._records: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.skipped_lines = 0
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        with self.path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    key = (str(record["method"]), str(record["key"]))
                except (json.JSONDecodeError, KeyError, TypeError):
                    self.skipped_lines += 1
                    logger.warning("%s line %d is not a complete record; that item will be redone", self.path, number)
                    continue
                self._records[key] = record

    def done(self, method: str, key: str) -> bool:
        """Whether the item ``key`` already has a record for ``method``."""
        return (method, key) in self._records

    def get(self, method: str, key: str) -> dict[str, Any] | None:
        """The record of ``(method, key)``, or ``None``."""
        return self._records.get((method, key))

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record (needs ``method`` and ``key``) and make it durable before returning.

        Raises:
            ValueError: When the record lacks ``method`` or ``key``.
            TypeError: When it holds a value JSON cannot encode.
        """
        if "method" not in record or "key" not in record:
            raise ValueError("a run record needs 'method' and 'key'")
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists() and self.path.stat().st_size:
                # A torn last line from a crash must not swallow the next record.
                with self.path.open("rb") as handle:
                    handle.seek(-1, os.SEEK_END)
                    if handle.read(1) != b"\n":
                        line = "\n" + line
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            self._records[(str(record["method"]), str(record["key"]))] = dict(record)

    def records(self, method: str | None = None) -> list[dict[str, Any]]:
        """Records in the order first written, optionally for one method."""
        return [r for (m, _), r in self._records.items() if method is None or m == method]

    def methods(self) -> list[str]:
        """Methods with at least one record, in first-seen order."""
        return list(dict.fromkeys(m for m, _ in self._records))

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records())
