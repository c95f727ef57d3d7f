"""The bulk job: inputs files, input-major judging, resuming from the verdict cache; its output file (one writer
at a time, errors naming the file) and a progress bar counting whole judgments."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_tag.errors import TagError
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache, SQLiteVerdictCache, VerdictCacheError
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.bulk import (
    InputItem,
    InputsError,
    OutputFileError,
    amatch_corpus,
    awrite_results,
    match_corpus,
    read_inputs,
    write_results,
)
from langchain_tag.testing import FakeChatModel, judged_rule_id
from tests.helpers.judge_fakes import pair_of, prompt_input, scored_judge, scored_reply
from tests.helpers.threads import run_together

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


# --------------------------------------------------------------------------- inputs files, input-major order, resuming
def write_inputs(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"id": f"in-{i}", "text": t}) + "\n" for i, t in enumerate(texts, 1)))
    return path


def retriever_for(llm: Any, rules: list[Rule], cache: Any, **kwargs: Any) -> ApplicabilityRetriever:
    return ApplicabilityRetriever(llm=llm, rules=rules, cache=cache, **kwargs)


TEXTS = [f"def f{i}(x=[]):\n\treturn x  # input {i}" for i in range(1, 6)]


# --------------------------------------------------------------------------------------------- reading inputs


def test_read_inputs_keeps_ids_and_numbers_the_others_by_line(tmp_path: Path) -> None:
    path = tmp_path / "inputs.jsonl"
    path.write_text(
        '"a bare string"\n'
        '{"id": "doc-7", "text": "with an id", "source": "wiki"}\n'
        "\n"
        '{"text": "no id"}\n'
        '{"id": 42, "text": "an integer id"}\n'
    )
    items = read_inputs(path)
    assert [(i.id, i.text, i.line) for i in items] == [
        ("1", "a bare string", 1),
        ("doc-7", "with an id", 2),
        ("4", "no id", 4),
        ("42", "an integer id", 5),
    ]
    assert items[1].fields == {"source": "wiki"}


def test_read_inputs_of_an_empty_file_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "inputs.jsonl"
    path.write_text("\n  \n")
    assert read_inputs(path) == []


@pytest.mark.parametrize(
    ("content", "line", "expected"),
    [
        ('"ok"\n{"text": "x"\n', 2, "not JSON"),
        ('"ok"\n\n"   "\n', 3, "is empty"),
        ('{"id": "a", "text": ""}\n', 1, "is empty"),
        ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', 2, "duplicate id 'a' (first on line 1)"),
        ('"first"\n{"id": "1", "text": "y"}\n', 2, "duplicate id '1'"),  # a given id clashing with a generated one
        ('{"id": "a"}\n', 1, 'expected a "text" string, got no text'),
        ('{"text": 3}\n', 1, "a text that is a number"),
        ("[1, 2]\n", 1, "got an array"),
        ('{"id": true, "text": "x"}\n', 1, '"id" must be a non-empty string or an integer'),
    ],
)
def test_a_bad_line_is_refused_naming_file_and_line(tmp_path: Path, content: str, line: int, expected: str) -> None:
    path = tmp_path / "inputs.jsonl"
    path.write_text(content)
    with pytest.raises(InputsError) as exc:
        read_inputs(path)
    assert f"{path}:{line}: " in str(exc.value) and expected in str(exc.value)
    assert exc.value.line == line and exc.value.path == path
    assert isinstance(exc.value, ValueError)


def test_a_missing_file_is_an_inputs_error(tmp_path: Path) -> None:
    with pytest.raises(InputsError, match="cannot read inputs"):
        read_inputs(tmp_path / "missing.jsonl")


def test_a_utf8_bom_is_not_part_of_the_first_line(tmp_path: Path) -> None:
    path = tmp_path / "inputs.jsonl"
    path.write_bytes('\ufeff{"id": "a", "text": "café"}\n'.encode())
    assert read_inputs(path) == [InputItem(id="a", text="café", line=1)]


def test_a_byte_that_is_not_utf8_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "inputs.jsonl"
    path.write_bytes(b'"fine"\n"caf\xe9"\n')
    with pytest.raises(InputsError) as exc:
        read_inputs(path)
    assert str(exc.value).startswith(f"{path}:2: not UTF-8 text (0xe9") and exc.value.line == 2


def test_inputs_read_from_a_stream_as_from_a_file(tmp_path: Path) -> None:
    import io

    from langchain_tag.scale.inputs import read_inputs_from

    data = '\ufeff"a bare string"\n\n{"id": "é", "text": "café"}\n'.encode()
    path = tmp_path / "inputs.jsonl"
    path.write_bytes(data)
    assert read_inputs_from(io.BytesIO(data)) == read_inputs(path)
    assert read_inputs_from(data.decode("utf-8").splitlines(keepends=True)) == read_inputs(path)
    with pytest.raises(InputsError, match=r"^stdin:2: not JSON") as exc:
        read_inputs_from(io.BytesIO(b'"ok"\n{"text": \n'))
    assert exc.value.path is None and exc.value.line == 2
    with pytest.raises(InputsError, match=r"^pipe:1: not UTF-8"):
        read_inputs_from([b"\xff\n"], "pipe")


def test_an_unencodable_text_is_read_and_named_by_encoding_error(tmp_path: Path) -> None:
    from langchain_tag.scale.inputs import encoding_error

    path = tmp_path / "inputs.jsonl"
    path.write_text('"fine"\n{"id": "b", "text": "x \\ud800 y"}\n')
    fine, bad = read_inputs(path)
    assert bad.text == "x \ud800 y" and encoding_error(fine) is None
    error = encoding_error(bad)
    assert error is not None and error.startswith("input 'b' (line 2): its text holds \\ud800 at character 3")
    assert encoding_error(InputItem(id="c", text="\udcff")) == (
        "input 'c': its text holds \\udcff at character 1, which UTF-8 cannot encode (a lone surrogate)"
    )


def test_an_unencodable_id_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "inputs.jsonl"
    path.write_text('"fine"\n{"id": "\\ud800", "text": "x"}\n')
    with pytest.raises(InputsError, match=r'inputs\.jsonl:2: "id" holds \\ud800') as exc:
        read_inputs(path)
    assert exc.value.line == 2


# --------------------------------------------------------------------------------------------- matching


def test_results_come_in_input_order_with_matches_best_first(rules: list[Rule]) -> None:
    retriever = retriever_for(scored_judge(), rules, InMemoryVerdictCache())
    items = [InputItem(id=f"in-{i}", text=t) for i, t in enumerate(TEXTS, 1)]
    results = list(match_corpus(items, retriever, all_pairs=True))
    assert [r["id"] for r in results] == [i.id for i in items]
    for item, record in zip(items, results, strict=True):
        expected = retriever.match(item.text)
        assert record["matched"] == [
            {"rule_id": j.rule_id, "score": j.score, "p_yes": j.p_yes} for j in expected.matched
        ]
        assert record["failed"] == []
        assert [p["rule_id"] for p in record["pairs"]] == [r.rule_id for r in rules]
        assert all(p["p_yes"] is not None for p in record["pairs"])
        scores = [m["score"] for m in record["matched"]]
        assert scores == sorted(scores, reverse=True)
    assert json.loads(json.dumps(results)) == results  # JSON-ready


def test_bare_strings_get_their_position_as_id(rules: list[Rule]) -> None:
    retriever = retriever_for(scored_judge(), rules, InMemoryVerdictCache())
    results = list(match_corpus(["first", "second"], retriever))
    assert [r["id"] for r in results] == ["1", "2"] and "pairs" not in results[0]


def test_inputs_given_in_code_are_checked_too(rules: list[Rule]) -> None:
    retriever = retriever_for(scored_judge(), rules, InMemoryVerdictCache())
    with pytest.raises(InputsError, match="duplicate input id 'a'"):
        match_corpus([InputItem("a", "x"), InputItem("a", "y")], retriever)  # refused before the first result
    with pytest.raises(InputsError, match="is empty"):
        amatch_corpus(["x", " "], retriever)
    with pytest.raises(ValueError, match=re.escape("max_concurrency must be a whole number >= 1, got 0")):
        match_corpus(["x"], retriever, max_concurrency=0)
    with pytest.raises(ValueError, match=re.escape("max_concurrency must be a whole number >= 1, got 0")):
        amatch_corpus(["x"], retriever, max_concurrency=0)


def test_work_is_sent_input_major(rules: list[Rule]) -> None:
    llm = scored_judge()
    retriever = retriever_for(llm, rules, InMemoryVerdictCache(), max_concurrency=2)
    list(match_corpus(TEXTS, retriever, max_concurrency=1))
    seen = [prompt_input(p) for p in llm.prompts]
    assert seen == [t for t in TEXTS for _ in rules]  # every rule of one input before the next input


def test_several_inputs_at_once_give_the_same_results(rules: list[Rule]) -> None:
    one = list(match_corpus(TEXTS, retriever_for(scored_judge(), rules, InMemoryVerdictCache()), max_concurrency=1))
    llm = scored_judge(delay=0.01)
    many = list(match_corpus(TEXTS, retriever_for(llm, rules, InMemoryVerdictCache()), max_concurrency=3))
    assert many == one and llm.calls == len(TEXTS) * len(rules)


def test_failures_are_reported_per_pair_and_per_input_never_fatal(rules: list[Rule]) -> None:
    def respond(text: str) -> Any:
        if "explode" in prompt_input(text):
            return ConnectionError("provider down")
        if judged_rule_id(text) == "R-002":
            return "I would rather not say."
        return scored_reply(text)

    retriever = retriever_for(FakeChatModel(respond=respond, with_logprobs=True), rules, InMemoryVerdictCache())
    results = list(match_corpus(["x = 1", "explode now", "y = 2"], retriever, all_pairs=True))
    assert [r["id"] for r in results] == ["1", "2", "3"]
    for record in (results[0], results[2]):
        assert [f["rule_id"] for f in record["failed"]] == ["R-002"]
        assert "no YES/NO verdict" in record["failed"][0]["error"]
        assert "R-002" not in [m["rule_id"] for m in record["matched"]]
        assert next(p for p in record["pairs"] if p["rule_id"] == "R-002")["p_yes"] is None
        assert "error" not in record
    broken = results[1]
    assert broken["matched"] == [] and "provider down" in broken["error"]
    assert [f["rule_id"] for f in broken["failed"]] == [r.rule_id for r in rules]


def test_an_empty_corpus_writes_an_empty_file(tmp_path: Path, rules: list[Rule]) -> None:
    llm = scored_judge()
    out = tmp_path / "out.jsonl"
    assert write_results(match_corpus([], retriever_for(llm, rules, InMemoryVerdictCache())), out) == 0
    assert out.read_bytes() == b"" and llm.calls == 0


def test_progress_counts_judgments_with_rate(rules: list[Rule], capsys: pytest.CaptureFixture[str]) -> None:
    retriever = retriever_for(scored_judge(), rules, InMemoryVerdictCache())
    list(match_corpus(TEXTS[:2], retriever, show_progress=True))
    err = capsys.readouterr().err
    assert "judgments/s" in err and f"/{2 * len(rules)}" in err.replace(".0", "")


def test_a_resumed_jobs_bar_starts_past_the_cached_judgments(
    rules: list[Rule], capsys: pytest.CaptureFixture[str]
) -> None:
    """Judgments found in the verdict cache are counted from the start, so the rate and ETA are the new calls'."""
    judge = scored_judge()
    retriever = retriever_for(judge, rules, InMemoryVerdictCache())
    list(match_corpus(TEXTS[:2], retriever))
    capsys.readouterr()
    calls = judge.calls

    list(match_corpus(TEXTS[:3], retriever, show_progress=True))

    frames = capsys.readouterr().err.replace(".0", "").split("\r")
    first = next(f for f in frames if "judging" in f)
    assert f"{2 * len(rules)}/{3 * len(rules)}" in first  # the cached judgments, before any call
    assert judge.calls - calls == len(rules)


# --------------------------------------------------------------------------------------------- resuming


class Interrupting:
    """A judge that is killed (KeyboardInterrupt) when it is asked about one (input, rule) pair, once."""

    def __init__(self, text: str, rule_id: str) -> None:
        self.text, self.rule_id = text, rule_id
        self.armed = True
        self.answered: set[tuple[str, str | None, bool]] = set()
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> Any:
        pair = pair_of(prompt)
        if self.armed and pair[:2] == (self.text, self.rule_id):
            self.armed = False
            return KeyboardInterrupt()
        with self._lock:
            self.answered.add(pair)
        return scored_reply(prompt)


@pytest.mark.parametrize(("predicate", "inputs_at_once"), [("applicability", 1), ("applicability-contrast", 3)])
def test_a_killed_job_resumes_without_judging_anything_twice_and_writes_the_same_bytes(
    tmp_path: Path, rules: list[Rule], predicate: str, inputs_at_once: int
) -> None:
    items = read_inputs(write_inputs(tmp_path / "inputs.jsonl", TEXTS))
    halves = 2 if predicate == "applicability-contrast" else 1
    total = len(items) * len(rules) * halves

    fresh = tmp_path / "fresh.jsonl"
    reference = retriever_for(scored_judge(), rules, SQLiteVerdictCache(tmp_path / "fresh.sqlite"), predicate=predicate)
    write_results(match_corpus(items, reference, all_pairs=True, max_concurrency=inputs_at_once), fresh)

    out = tmp_path / "out.jsonl"
    verdicts = tmp_path / "verdicts.sqlite"
    killer = Interrupting(TEXTS[2], "R-004")
    first = FakeChatModel(respond=killer, with_logprobs=True)
    retriever = retriever_for(first, rules, SQLiteVerdictCache(verdicts), predicate=predicate, max_concurrency=1)
    with pytest.raises(KeyboardInterrupt):
        write_results(match_corpus(items, retriever, all_pairs=True, max_concurrency=inputs_at_once), out)
    assert not out.exists() and list(tmp_path.glob(".*partial")) == []
    assert 0 < len(killer.answered) < total

    second = scored_judge()
    retriever = retriever_for(second, rules, SQLiteVerdictCache(verdicts), predicate=predicate, max_concurrency=1)
    write_results(match_corpus(items, retriever, all_pairs=True, max_concurrency=inputs_at_once), out)
    asked = {pair_of(p) for p in second.prompts}
    assert second.calls == total - len(killer.answered)  # only the pairs not answered before the kill
    assert asked.isdisjoint(killer.answered)
    assert out.read_bytes() == fresh.read_bytes()


def test_a_finished_job_reruns_with_no_call(tmp_path: Path, rules: list[Rule]) -> None:
    verdicts = tmp_path / "verdicts.sqlite"
    out_a, out_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_results(match_corpus(TEXTS, retriever_for(scored_judge(), rules, SQLiteVerdictCache(verdicts))), out_a)
    llm = scored_judge()
    write_results(match_corpus(TEXTS, retriever_for(llm, rules, SQLiteVerdictCache(verdicts))), out_b)
    assert llm.calls == 0 and out_a.read_bytes() == out_b.read_bytes()


def test_an_interrupted_write_leaves_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")

    def results() -> Any:
        yield {"id": "1"}
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_results(results(), out)
    assert out.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


@pytest.mark.parametrize("where", ["directory", "under a file", "named pipe"])
def test_an_output_path_that_cannot_take_the_file_is_refused_before_any_result(tmp_path: Path, where: str) -> None:
    from langchain_tag.scale.bulk import check_output_path

    (tmp_path / "file").write_text("x\n")
    os.mkfifo(tmp_path / "fifo")  # not a regular file, as a device is (never rename over one)
    path, error, expected = {
        "directory": (tmp_path, IsADirectoryError, "it is a directory"),
        "under a file": (tmp_path / "file" / "sub" / "out.jsonl", NotADirectoryError, f"{tmp_path / 'file'} is a file"),
        "named pipe": (tmp_path / "fifo", OSError, "not a regular file"),
    }[where]
    asked: list[int] = []

    def results() -> Any:
        asked.append(1)
        yield {"id": "1", "matched": [], "failed": []}

    with pytest.raises(error, match=re.escape(f"cannot write {path}: ")) as exc:
        write_results(results(), path)
    assert expected in str(exc.value) and asked == []
    with pytest.raises(error):
        check_output_path(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "file"]
    assert not (tmp_path / "fifo").is_file()
    assert check_output_path(tmp_path / "new" / "out.jsonl") == tmp_path / "new" / "out.jsonl"
    assert not (tmp_path / "new").exists()  # checking creates nothing


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_an_output_directory_without_write_permission_is_refused(tmp_path: Path) -> None:
    from langchain_tag.scale.bulk import check_output_path

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(PermissionError, match=f"no permission to create files in {re.escape(str(locked))}"):
            check_output_path(locked / "out.jsonl")
    finally:
        locked.chmod(0o700)


# --------------------------------------------------------------------------------------------- async twin


def test_async_twin_gives_the_same_results_and_file(tmp_path: Path, rules: list[Rule]) -> None:
    sync_out, async_out = tmp_path / "sync.jsonl", tmp_path / "async.jsonl"
    write_results(match_corpus(TEXTS, retriever_for(scored_judge(), rules, InMemoryVerdictCache())), sync_out)
    llm = scored_judge(delay=0.005)
    retriever = retriever_for(llm, rules, InMemoryVerdictCache())
    count = asyncio.run(awrite_results(amatch_corpus(TEXTS, retriever, max_concurrency=3), async_out))
    assert count == len(TEXTS) and async_out.read_bytes() == sync_out.read_bytes()
    assert llm.calls == len(TEXTS) * len(rules)


def test_async_twin_resumes_from_the_cache(tmp_path: Path, rules: list[Rule]) -> None:
    verdicts = tmp_path / "verdicts.sqlite"
    killer = Interrupting(TEXTS[1], "R-002")

    async def run(llm: Any) -> list[dict[str, Any]]:
        retriever = retriever_for(llm, rules, SQLiteVerdictCache(verdicts), max_concurrency=1)
        return [r async for r in amatch_corpus(TEXTS, retriever, max_concurrency=1)]

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(run(FakeChatModel(respond=killer, with_logprobs=True)))
    llm = scored_judge()
    resumed = asyncio.run(run(llm))
    assert llm.calls == len(TEXTS) * len(rules) - len(killer.answered)
    assert resumed == list(match_corpus(TEXTS, retriever_for(scored_judge(), rules, InMemoryVerdictCache())))


# --------------------------------------------------------------------------------------------- the verdicts file


class FullDisk(InMemoryVerdictCache):
    """A verdict cache whose every write fails as SQLite's on a full disk."""

    path = Path("verdicts.sqlite")

    def put(self, key: str, verdict: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_verdict_cache_that_cannot_write_stops_the_job_and_writes_no_output(
    tmp_path: Path, rules: list[Rule], asynchronous: bool
) -> None:
    judge = scored_judge()
    retriever = retriever_for(judge, rules, FullDisk())
    out = tmp_path / "out.jsonl"
    with pytest.raises(VerdictCacheError, match=r"verdicts\.sqlite: database or disk is full"):
        if asynchronous:
            asyncio.run(awrite_results(amatch_corpus(TEXTS, retriever), out))
        else:
            write_results(match_corpus(TEXTS, retriever), out)
    assert not out.exists() and list(tmp_path.glob(".*partial")) == []
    assert judge.calls == len(rules)  # stopped after the first input, not after every judgment was paid for


@pytest.mark.parametrize("asynchronous", [False, True])
def test_two_jobs_on_one_verdicts_file_judge_each_pair_once(
    tmp_path: Path, rules: list[Rule], asynchronous: bool
) -> None:
    texts = [f"def g{i}(x=[]):\n\treturn x  # input {i}" for i in range(12)]
    verdicts = tmp_path / "verdicts.sqlite"
    judges = [scored_judge(delay=0.02), scored_judge(delay=0.02)]

    def job(n: int) -> None:
        retriever = retriever_for(judges[n], rules, SQLiteVerdictCache(verdicts), calibration=None)
        out = tmp_path / f"out{n}.jsonl"
        if asynchronous:
            asyncio.run(awrite_results(amatch_corpus(texts, retriever, max_concurrency=4), out))
        else:
            write_results(match_corpus(texts, retriever, max_concurrency=4), out)

    errors = run_together(job, 2)
    assert errors == []
    pairs = len(texts) * len(rules)
    calls = judges[0].calls + judges[1].calls
    assert pairs <= calls <= pairs + 2 * 4, f"{calls} calls for {pairs} pairs"
    assert (tmp_path / "out0.jsonl").read_bytes() == (tmp_path / "out1.jsonl").read_bytes()


def test_the_job_stops_at_the_first_input_when_all_its_requests_fail_the_same_way(rules: list[Rule]) -> None:
    from langchain_tag.errors import ProviderError

    down = FakeChatModel(respond=lambda text: ConnectionError("Connection refused"))
    retriever = ApplicabilityRetriever(llm=down, rules=rules, calibration=None, cache=None)
    inputs = ["a = 1", "b = 2", "c = 3", "d = 4"]
    with pytest.raises(ProviderError, match=r"first input's requests all failed the same way.*Connection refused"):
        list(match_corpus(inputs, retriever))
    assert down.calls == len(rules) * 2  # the first input's requests (sent twice), not every input's

    async def run() -> None:
        async for _ in amatch_corpus(inputs, retriever):
            pass

    with pytest.raises(ProviderError, match="stops before sending the other 3 inputs'"):
        asyncio.run(run())


def test_a_first_input_failing_in_several_ways_is_one_failed_record(rules: list[Rule]) -> None:
    def respond(text: str) -> Any:
        if "first" in prompt_input(text):
            return ConnectionError(f"refused for {judged_rule_id(text)}")  # a different error per rule
        return scored_reply(text)

    records = list(
        match_corpus(
            ["first = 1", "x = 2"], ApplicabilityRetriever(llm=FakeChatModel(respond=respond), rules=rules, cache=None)
        )
    )
    assert "error" in records[0] and "error" not in records[1]


@pytest.mark.parametrize("show_progress", [False, True])
def test_an_input_that_cannot_be_encoded_fails_alone_in_the_library_job(rules: list[Rule], show_progress: bool) -> None:
    items = [InputItem(id="ok-1", text="x = 1"), InputItem(id="bad", text="y = '\ud800'", line=2)]
    llm = scored_judge()
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, cache=InMemoryVerdictCache())
    records = list(match_corpus(items, retriever, show_progress=show_progress))
    assert [r["id"] for r in records] == ["ok-1", "bad"] and "error" not in records[0]
    assert "input 'bad' (line 2)" in records[1]["error"] and len(records[1]["failed"]) == len(rules)
    assert llm.calls == len(rules)  # the other input only


def test_the_next_input_fills_the_places_an_inputs_last_requests_leave(rules: list[Rule]) -> None:
    """5 rules with 4 in flight: the first input's fifth request runs beside the second input's, not alone."""
    import re
    import threading
    import time

    from langchain_tag.testing import FakeChatModel

    lock, running, mixed = threading.Lock(), [], []

    def respond(prompt: str) -> str:
        found = re.search(r"item (\d+)", prompt)
        with lock:
            running.append(found.group(1) if found else "?")
            mixed.append(len(set(running)) > 1)
        time.sleep(0.02)
        with lock:
            running.remove(found.group(1) if found else "?")
        return "NO"

    retriever = ApplicabilityRetriever(llm=FakeChatModel(respond=respond), rules=rules, calibration=None)
    items = [f"x = 1  # item {i}" for i in range(4)]
    records = list(match_corpus(items, retriever, max_concurrency=4, show_progress=False))
    assert len(records) == 4 and any(mixed)
