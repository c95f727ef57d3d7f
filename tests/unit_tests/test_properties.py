"""Property tests: JSON repair never raises anything but ParseError; sentence and span offsets are exact."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_tag.calls._replies import parse_json_object
from langchain_tag.errors import ParseError
from langchain_tag.extraction._alignment import align
from langchain_tag.extraction._sections import Section, split_sentences
from langchain_tag.extraction._span_detection import parse_labels, spans_from_labels
from langchain_tag.extraction.prompts import SPAN_LABELS
from langchain_tag.judging._read import read_message

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_json_object_raises_only_parse_error(text: str) -> None:
    try:
        value = parse_json_object(text, expect_key="spans")
    except ParseError:
        return
    assert isinstance(value, dict) and "spans" in value


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_verdict_raises_only_parse_error(text: str) -> None:
    try:
        verdict = read_message(text)
    except ParseError:
        return
    assert verdict.word in (True, False)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=10), _JSON, max_size=5), st.sampled_from(["", "Here you go:\n", "```json\n"]))
def test_valid_objects_round_trip(obj: dict, prefix: str) -> None:
    text = json.dumps(obj, ensure_ascii=False)
    suffix = "\n```" if prefix.startswith("```") else ""
    assert parse_json_object(prefix + text + suffix) == obj


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["span_id", "text"]), st.text(max_size=20)), min_size=1, max_size=5))
def test_truncated_arrays_are_repaired_or_refused(items: list[dict]) -> None:
    text = json.dumps({"spans": items})
    for cut in range(len(text) // 2, len(text)):
        try:
            value = parse_json_object(text[:cut], expect_key="spans")
        except ParseError:
            continue
        assert isinstance(value["spans"], list | dict | str | int | float | type(None))


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1), st.data())
def test_any_substring_is_found_at_exact_offsets(document: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(document) - 1))
    end = data.draw(st.integers(start + 1, len(document)))
    span = document[start:end]
    found = align(span, document)
    if not span.strip():
        assert found is None
        return
    assert found is not None and found.score == 1.0
    assert document[found.start : found.end] == span.strip()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcdefgh .!?\n-#`'ABCDE()", min_size=1, max_size=300), st.data())
def test_sentences_and_spans_slice_the_document_exactly(body: str, data: st.DataObject) -> None:
    prefix = "Title\n=====\n\n"
    document = prefix + body
    section = Section("d#1", "d", "Title", body, len(prefix))
    sentences = split_sentences(section)
    previous_end = section.start
    for lo, hi in sentences:
        assert previous_end <= lo < hi <= section.end  # in order, inside the section, never overlapping
        assert document[lo:hi] == document[lo:hi].strip() and len(document[lo:hi]) >= 8
        previous_end = hi
    labels = data.draw(st.lists(st.sampled_from(SPAN_LABELS), min_size=len(sentences), max_size=len(sentences)))
    spans = spans_from_labels(section, sentences, labels, notes=[])
    starts = {lo for lo, _ in sentences}
    ends = {hi for _, hi in sentences}
    for lo, hi, kind, _ in spans:
        assert lo in starts and hi in ends and kind in SPAN_LABELS and kind not in ("continuation", "background")
    assert len(spans) == sum(1 for label in labels if label not in ("continuation", "background"))


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(1, 20))
def test_parse_labels_gives_every_label_or_raises_parse_error(text: str, count: int) -> None:
    try:
        labels = parse_labels(text, count=count)
    except ParseError:
        return
    assert len(labels) == count and all(isinstance(label, str) and label for label in labels)
