from __future__ import annotations

import math

import pytest
from langchain_core.messages import AIMessage

from langchain_tag.parsing import ParseError, parse_json_object, parse_verdict, yes_probability


@pytest.mark.parametrize(
    "text",
    [
        '{"spans": [{"text": "a"}]}',
        'Here you go:\n```json\n{"spans": [{"text": "a"}]}\n```',
        'Sure! {"spans": [{"text": "a"}]} Hope it helps.',
        '{"spans": [{"text": "a"},]}',  # trailing comma
        '{"spans": [{"text": "a"}',  # cut off by the token limit
        '[{"text": "a"}]',  # bare array
    ],
)
def test_parse_json_object_recovers(text: str) -> None:
    assert parse_json_object(text, expect_key="spans")["spans"][0]["text"] == "a"


@pytest.mark.parametrize("text", ["", "no json here", '{"other": 1}', "42"])
def test_parse_json_object_refuses(text: str) -> None:
    with pytest.raises(ParseError):
        parse_json_object(text, expect_key="spans")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("YES", True),
        ("no", False),
        ("Yes.", True),
        ('{"verdict": "NO"}', False),
        ('{"applicable": true, "reason": "trade"}', True),
        ('{"applicable": false, "reason": "x"}', False),
        ("NO - the input has no tabs", False),
    ],
)
def test_parse_verdict_text(text: str, expected: bool) -> None:
    verdict = parse_verdict(AIMessage(content=text))
    assert verdict.applies is expected
    assert verdict.probability is None and verdict.source == "text"


@pytest.mark.parametrize("text", ["", "maybe", "It depends on the context"])
def test_parse_verdict_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        parse_verdict(AIMessage(content=text))


def _with_logprobs(first: str, top: dict[str, float]) -> AIMessage:
    entries = [{"token": t, "logprob": math.log(p)} for t, p in top.items()]
    return AIMessage(
        content=first,
        response_metadata={
            "logprobs": {"content": [{"token": first, "logprob": entries[0]["logprob"], "top_logprobs": entries}]}
        },
    )


def test_probability_from_logprobs_sums_variants() -> None:
    msg = _with_logprobs("YES", {"YES": 0.5, "Yes": 0.1, "NO": 0.3, "No": 0.1})
    assert yes_probability(msg) == pytest.approx(0.6)


def test_threshold_decides_logprob_verdict() -> None:
    msg = _with_logprobs("YES", {"YES": 0.55, "NO": 0.45})
    assert parse_verdict(msg, threshold=0.5).applies is True
    assert parse_verdict(msg, threshold=0.6).applies is False
    assert parse_verdict(msg).source == "logprobs"


def test_logprobs_without_yes_or_no_fall_back_to_text() -> None:
    msg = _with_logprobs("Maybe", {"Maybe": 0.9, "Perhaps": 0.1})
    msg.content = "NO"
    verdict = parse_verdict(msg)
    assert verdict.applies is False and verdict.source == "text"
