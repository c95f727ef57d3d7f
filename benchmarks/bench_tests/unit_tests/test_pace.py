"""The pace benchmark runs tiny end to end: every row judges the whole job within the concurrency cap."""

from __future__ import annotations

import pytest
import pytest_socket

from langchain_tag_bench import pace


def test_pace_prints_every_row_within_the_cap(capsys: pytest.CaptureFixture[str]) -> None:
    pytest_socket.enable_socket()  # loopback only, for the endpoint the benchmark starts
    pytest_socket.socket_allow_hosts(["127.0.0.1"], allow_unix_socket=True)
    assert pace.main(["--inputs", "3", "--rules", "4", "--max-concurrency", "3"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| way")]
    names = [line.strip("|").split("|")[0].strip() for line in rows]
    assert names == [
        "bare client (httpx.AsyncClient)",
        "match_corpus, SQLite cache",
        "amatch_corpus, SQLite cache",
        "match_corpus, no cache",
        "amatch_corpus, no cache",
    ]
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1] == "12"  # judgments
        assert 1 <= int(cells[5].split()[0]) <= 3  # most in flight, within the cap
        assert int(cells[6]) >= 12  # every judgment at least one request (a failed one is sent again)
