"""A SQLite file shared by threads and processes: opened by several at once, each waits its turn."""

from __future__ import annotations

import threading
from pathlib import Path

from langchain_tag.calls.sqlite_file import SQLiteFile

SCHEMA = "CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, value TEXT)"


def test_two_openers_of_one_new_file_at_the_same_moment_both_open_it(tmp_path: Path) -> None:
    """Both set the WAL journal and the schema on a file neither has made yet: neither may fail as "locked".

    SQLite answers a lock that would deadlock at once, without waiting out the busy timeout; the race is lost
    about one time in twelve, so 150 rounds catch it.
    """
    failed: list[BaseException] = []
    for round_ in range(150):
        path = tmp_path / f"{round_}.sqlite"
        start = threading.Barrier(2, timeout=30)

        def open_it(path: Path = path, start: threading.Barrier = start) -> None:
            try:
                start.wait()
                file = SQLiteFile(path, SCHEMA)
                with file.connection() as conn:
                    conn.execute("INSERT OR REPLACE INTO rows VALUES (?, ?)", (str(threading.get_ident()), "x"))
                file.close()
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
    assert failed == []
