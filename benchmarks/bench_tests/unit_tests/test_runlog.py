"""The run log: durable appends, reload, and a torn last line after a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_tag_bench.runlog import RunLog


def test_append_and_reload(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "items.jsonl"
    log = RunLog(path)
    log.append({"method": "tag", "key": "a", "scores": {"x": 1}})
    log.append({"method": "none", "key": "a"})
    log.append({"method": "tag", "key": "b", "text": "naïve ünïcode"})
    again = RunLog(path)
    assert again.done("tag", "a") and again.done("none", "a") and not again.done("none", "b")
    assert again.get("tag", "a") == {"method": "tag", "key": "a", "scores": {"x": 1}}
    assert [r["key"] for r in again.records("tag")] == ["a", "b"]
    assert again.methods() == ["tag", "none"] and len(again) == 3
    assert "naïve" in path.read_text(encoding="utf-8")


def test_torn_last_line_is_ignored_and_the_next_record_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"method": "tag", "key": "a"}) + "\n" + '{"method": "tag", "ke', encoding="utf-8")
    log = RunLog(path)
    assert log.skipped_lines == 1 and log.done("tag", "a") and not log.done("tag", "b")
    log.append({"method": "tag", "key": "b"})
    again = RunLog(path)
    assert again.done("tag", "b") and again.skipped_lines == 1


def test_record_needs_method_and_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs 'method' and 'key'"):
        RunLog(tmp_path / "x.jsonl").append({"key": "a"})
