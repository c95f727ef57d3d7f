"""The bulk job's output file: one writer at a time, errors naming the file, a progress bar counting whole judgments."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_tag.errors import TagError
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.bulk import OutputFileError, awrite_results, match_corpus, write_results
from tests.helpers.judge_fakes import scored_judge

REPO = Path(__file__).resolve().parents[3]


class Held:
    """Results that stop after their first record until released, as a job still judging."""

    def __init__(self, tag: str, count: int = 3) -> None:
        self.tag, self.count = tag, count
        self.started = threading.Event()
        self.go_on = threading.Event()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for n in range(self.count):
            yield {"id": f"{self.tag}-{n}", "text": "x" * 1000}
            self.started.set()
            assert self.go_on.wait(10)


def test_a_second_writer_of_the_same_output_is_refused_and_the_first_writes_it_whole(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    first = Held("first")
    done: list[int | BaseException] = []

    def run() -> None:
        try:
            done.append(write_results(first, out))
        except BaseException as exc:  # pragma: no cover - reported below
            done.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert first.started.wait(10)
    second = Held("second")
    second.go_on.set()
    asked: list[str] = []

    def second_results() -> Iterator[dict[str, Any]]:
        asked.append("asked")
        yield from second

    try:
        with pytest.raises(OutputFileError) as caught:
            write_results(second_results(), out)
    finally:
        first.go_on.set()
        thread.join(10)
    message = str(caught.value)
    assert isinstance(caught.value, TagError) and str(out) in message
    assert f"pid {os.getpid()}" in message and "another job is writing" in message
    assert asked == []  # refused before its first result was asked for: no judgment spent
    assert done == [3]
    lines = out.read_text().splitlines()
    assert [line[:20] for line in lines] == ['{"id": "first-0", "t', '{"id": "first-1", "t', '{"id": "first-2", "t']
    assert "\0" not in out.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]  # no partial or lock file left behind


async def test_the_async_writer_is_refused_too(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    first = Held("first")
    thread = threading.Thread(target=write_results, args=(first, out))
    thread.start()
    assert first.started.wait(10)

    async def results() -> Any:
        yield {"id": "x"}

    try:
        with pytest.raises(OutputFileError, match="another job is writing"):
            await awrite_results(results(), out)
    finally:
        first.go_on.set()
        thread.join(10)
    assert len(out.read_text().splitlines()) == 3


def test_writers_one_after_the_other_each_write_their_file(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    assert write_results([{"id": "a"}], out) == 1
    assert write_results([{"id": "b"}, {"id": "c"}], out) == 2
    assert out.read_text() == '{"id": "b"}\n{"id": "c"}\n'


FULL_DISK = """
import resource, signal, sys
sys.path.insert(0, sys.argv[2])
from langchain_tag.scale.bulk import write_results
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with an error, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    write_results(({"id": str(n), "text": "x" * 100} for n in range(1000)), sys.argv[1])
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_a_write_that_fails_for_lack_of_space_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(out), str(REPO)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OutputFileError ")
    assert f"cannot write {out}" in done.stdout and "File too large" in done.stdout
    assert out.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_the_progress_bar_counts_whole_judgments(rules: list[Rule], capsys: pytest.CaptureFixture[str]) -> None:
    retriever = ApplicabilityRetriever(llm=scored_judge(), rules=rules, cache=InMemoryVerdictCache())
    list(match_corpus([f"x = {n}" for n in range(3)], retriever, show_progress=True))
    err = capsys.readouterr().err
    assert re.search(rf"\b\d+/{3 * len(rules)}\b", err), err
    assert not re.search(r"\d\.\d\d/", err), err  # not "5.00/15"
