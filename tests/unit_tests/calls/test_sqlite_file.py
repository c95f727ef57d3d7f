"""A SQLite file shared by threads and processes: opened by several at once, each waits its turn."""

from __future__ import annotations

from pathlib import Path

from langchain_tag.calls._sqlite_file import SQLiteFile
from tests.helpers.threads import run_together

SCHEMA = "CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, value TEXT)"


def test_two_openers_of_one_new_file_at_the_same_moment_both_open_it(tmp_path: Path) -> None:
    """Both set the WAL journal and the schema on a file neither has made yet: neither may fail as "locked".

    SQLite answers a lock that would deadlock at once, without waiting out the busy timeout; the race is lost
    about one time in twelve, so 150 rounds catch it.
    """
    failed: list[BaseException] = []
    for round_ in range(150):
        path = tmp_path / f"{round_}.sqlite"

        def open_it(n: int, path: Path = path) -> None:
            file = SQLiteFile(path, SCHEMA)
            with file.connection() as conn:
                conn.execute("INSERT OR REPLACE INTO rows VALUES (?, ?)", (str(n), "x"))
            file.close()

        failed += run_together(open_it, 2)
    assert failed == []
