"""Property tests: JSON repair never raises anything but ParseError; span offsets are exact."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_tag.extraction.alignment import align
from langchain_tag.extraction.sections import Section
from langchain_tag.extraction.span_detection import locate_spans
from langchain_tag.parsing import ParseError, parse_json_object, parse_verdict

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
        verdict = parse_verdict(text)
    except ParseError:
        return
    assert verdict.applies in (True, False)


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


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefgh ", min_size=30, max_size=200), st.data())
def test_located_spans_slice_the_document_exactly(body: str, data: st.DataObject) -> None:
    prefix = "Title\n=====\n\n"
    document = prefix + body
    section = Section("d#1", "d", "Title", body, len(prefix))
    start = data.draw(st.integers(0, len(body) - 1))
    end = data.draw(st.integers(start + 1, len(body)))
    span = body[start:end]
    found = locate_spans(section, [{"span_id": "S-001", "text": span}], notes=[])
    if len(span.strip()) >= 8:
        ((lo, hi, _, _),) = found
        assert document[lo:hi] == span.strip() and section.start <= lo < hi <= section.end
    else:
        assert found == []


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abc ", min_size=20, max_size=80), st.text(alphabet="xyz", min_size=12, max_size=30))
def test_non_substrings_are_rejected(document: str, foreign: str) -> None:
    assert align(foreign, document) is None
    notes: list[str] = []
    section = Section("d#1", "d", "", document, 0)
    assert locate_spans(section, [{"span_id": "S-001", "text": foreign}], notes=notes) == []
    assert notes and "not in the section" in notes[0]
