from __future__ import annotations

from pathlib import Path

import pytest

from langchain_tag.jsonl import JsonLineError, json_lines


def test_a_json_error_is_not_cut_and_says_where_on_the_line() -> None:
    (number, error), *_ = json_lines(['{"text": "a\tb"}'], "in.jsonl")
    assert number == 1 and isinstance(error, JsonLineError)
    message = str(error)
    assert not message.endswith(" at)")  # the decoder's message ends "... at" and wants its position after it
    assert message.startswith("in.jsonl:1: not JSON (Invalid control character at column 12")
    assert "\\t" in message  # and says how to write a tab inside a string


def test_every_json_error_gives_its_column() -> None:
    (_, error), *_ = json_lines(['{"text": }'], "in.jsonl")
    assert str(error) == "in.jsonl:1: not JSON (Expecting value at column 10)"


def test_a_line_nested_too_deeply_is_a_bad_line_naming_file_and_line(tmp_path: Path) -> None:
    from langchain_tag.errors import RuleFileError
    from langchain_tag.rules import load_rules

    deep = "[" * 200_000 + "]" * 200_000
    found = list(json_lines(['{"a": 1}', deep], "deep.jsonl"))
    assert isinstance(found[1][1], JsonLineError)
    assert str(found[1][1]).startswith("deep.jsonl:2: not JSON (nested too deeply")
    path = tmp_path / "rules.jsonl"
    path.write_text(deep + "\n", encoding="utf-8")
    with pytest.raises(RuleFileError, match=r"rules\.jsonl:1: not JSON \(nested too deeply"):
        load_rules(path)
