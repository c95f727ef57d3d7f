from __future__ import annotations

import contextlib
import math
import time

import pytest
from langchain_core.messages import AIMessage

from langchain_tag.calls._replies import parse_json_items, parse_json_object
from langchain_tag.errors import ParseError
from langchain_tag.judging._read import read_message, read_reply
from tests.unit_tests.faults import MALFORMED_LOGPROBS


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
    reading = read_message(AIMessage(content=text))
    assert reading.word is expected
    assert reading.p_yes is None


@pytest.mark.parametrize("text", ["", "maybe", "It depends on the context"])
def test_parse_verdict_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        read_message(AIMessage(content=text))


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
    assert read_message(msg).p_yes == pytest.approx(0.6)


def test_logprobs_give_p_yes_beside_the_word_of_the_text() -> None:
    msg = _with_logprobs("NO", {"YES": 0.55, "NO": 0.45})
    reading = read_message(msg)
    assert reading.p_yes == pytest.approx(0.55) and reading.word is False  # the threshold is the scorer's


def test_logprobs_without_yes_or_no_fall_back_to_text() -> None:
    msg = _with_logprobs("Maybe", {"Maybe": 0.9, "Perhaps": 0.1})
    msg.content = "NO"
    reading = read_message(msg)
    assert reading.word is False and reading.p_yes is None


# Replies a lenient reader took for verdicts: each must be refused, never read as YES or NO.
NOT_VERDICTS = [
    "It applies only to other inputs; here it does not.",
    "Yes, no.",
    '{"verdict": ["YES"]}',
    "Not sure.",
    '{"verdict": "YES", "applicable": false}',
    '{"applicable": "yes"}',
    "The answer is yes.",
    "Sure! YES",
    "n",
]


@pytest.mark.parametrize("text", NOT_VERDICTS)
def test_a_reply_that_is_not_one_clear_answer_is_refused(text: str) -> None:
    with pytest.raises(ParseError, match="no YES/NO verdict"):
        read_message(AIMessage(content=text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Answer: YES (45 days is more than 30)", True),
        ("**No**", False),
        ("NO. The statement is not true of the input.", False),
        ('```json\n{"verdict": "yes"}\n```', True),
        ('{"relevant": false}', False),
    ],
)
def test_a_first_word_or_typed_json_field_is_read(text: str, expected: bool) -> None:
    assert read_message(AIMessage(content=text)).word is expected


def _logprobs(content: object) -> AIMessage:
    return AIMessage(content="YES", response_metadata={"logprobs": {"content": content}})


@pytest.mark.parametrize("kind", sorted(MALFORMED_LOGPROBS))
def test_malformed_logprobs_are_a_parse_error_never_a_crash_or_a_verdict(kind: str) -> None:
    with pytest.raises(ParseError, match="malformed logprobs"):
        read_message(_logprobs(MALFORMED_LOGPROBS[kind]))


def test_logprobs_absent_or_empty_fall_back_to_the_text() -> None:
    for metadata in ({}, {"logprobs": None}, {"logprobs": {"content": None}}, {"logprobs": {"content": []}}):
        assert read_message(AIMessage(content="NO", response_metadata=metadata)).p_yes is None


@pytest.mark.parametrize(
    "text",
    [
        "{" * 100_000,
        "[" * 60_000 + "]" * 60_000,
        '{"x": ' + "[" * 20_000 + "]" * 20_000 + "}",
        "x" * 70_000 + '{"spans": []}',
    ],
)
def test_huge_or_deep_replies_are_refused_fast(text: str) -> None:
    start = time.perf_counter()
    with pytest.raises(ParseError):
        parse_json_object(text, expect_key="spans")
    assert time.perf_counter() - start < 1.0


def test_repair_is_given_bounded_text_only() -> None:
    start = time.perf_counter()
    with contextlib.suppress(ParseError):
        parse_json_object('{"spans": "' + '"' * 31_000, expect_key="spans")  # the costliest shape found for repair
    with pytest.raises(ParseError):
        parse_json_object('{"spans": "' + '"' * 40_000, expect_key="spans")
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize(
    "text",
    [
        '{"spans": [{"text": "a"}, {"text": "b',  # inside a string
        '{"spans": [{"text": "a"}, {"text":',  # after a colon
        '{"spans": [{"text": "a"},',  # after a comma
    ],
)
def test_a_list_cut_inside_an_item_is_refused(text: str) -> None:
    with pytest.raises(ParseError, match="cut off inside an item"):
        parse_json_items(text, "spans")


def test_a_list_cut_after_a_complete_item_is_closed() -> None:
    assert parse_json_items('{"spans": [{"text": "a"}, {"text": "b"}', "spans") == [{"text": "a"}, {"text": "b"}]


def test_with_aliases_reads_short_and_long_keys_alike() -> None:
    from langchain_tag.calls._replies import with_aliases

    aliases = {"name": "rule_name", "tags": "category_tags"}
    assert with_aliases({"name": "n", "tags": ["t"]}, aliases) == {
        "name": "n",
        "tags": ["t"],
        "rule_name": "n",
        "category_tags": ["t"],
    }
    assert with_aliases({"name": "short", "rule_name": "long"}, aliases)["rule_name"] == "long"  # the full name wins


# Replies that are not verdicts though their first token's logprobs favour YES: the text must still be a verdict.
NOT_VERDICTS_WITH_LOGPROBS = [
    "Yes, no.",
    "Not sure.",
    "It applies only to other inputs; here it does not.",
    "The answer is yes.",
    "Sure! YES",
    '{"verdict": ["YES"]}',
    '{"verdict": "YES", "applicable": false}',
    "maybe",
    "",
]


@pytest.mark.parametrize("text", NOT_VERDICTS_WITH_LOGPROBS)
def test_a_reply_that_is_not_a_verdict_is_refused_even_with_logprobs(text: str) -> None:
    with pytest.raises(ParseError, match="no YES/NO verdict"):
        read_message(_with_logprobs(text, {"Yes": 0.9, "NO": 0.1}))
    logprobs = _with_logprobs(text, {"YES": 0.8, "No": 0.2}).response_metadata["logprobs"]
    with pytest.raises(ParseError, match="no YES/NO verdict"):
        read_reply(text, logprobs)


@pytest.mark.parametrize("token", ["YES", "NO", "Yes", " yes", "No", "no.", "true", "Y", "n", "Not", "Applicable"])
def test_a_one_token_reply_with_logprobs_is_read_from_the_logprobs(token: str) -> None:
    reading = read_message(_with_logprobs(token, {token: 0.7, "NO" if token != "NO" else "YES": 0.3}))
    assert reading.p_yes is not None and reading.word is not None
    assert reading.word is (reading.p_yes >= 0.5)  # the token's own word agrees with its mass here


@pytest.mark.parametrize(
    ("text", "expected"),
    [("YES. The input has tabs.", 0.3), ('{"verdict": "NO"}', 0.8), ("Answer: no", 0.55), ("**Yes**", 0.4)],
)
def test_a_text_verdict_with_logprobs_takes_their_probability(text: str, expected: float) -> None:
    reading = read_message(_with_logprobs(text, {"YES": expected, "NO": 1 - expected}))
    assert reading.p_yes == pytest.approx(expected)  # the score comes from the logprobs, not the text's word
