from __future__ import annotations

import json

import pytest

from langchain_tag.errors import ParseError
from langchain_tag.extraction._sections import Section, split_sentences
from langchain_tag.extraction._span_detection import paragraph_spans, parse_labels, span_calls, spans_from_labels
from langchain_tag.testing import prompt_text

DOC = (
    "Preamble.\n## Layout\n\nThe team wrote this guide in 2019. Limit all lines to a maximum of 79 characters. "
    "Use spaces, e.g. four per level. Tabs are not allowed; use spaces instead.\n\n- Never mix them.\n- Prefer four."
)
START = DOC.index("The team")
SECTION = Section("d#1", "d", "Layout", DOC[START:], START)


def _labels(*labels: str) -> str:
    return json.dumps({"labels": [{"n": i, "label": label} for i, label in enumerate(labels, start=1)]})


def test_sentences_are_exact_document_slices_and_respect_abbreviations_and_list_items() -> None:
    sentences = [DOC[a:b] for a, b in split_sentences(SECTION)]
    assert sentences == [
        "The team wrote this guide in 2019.",
        "Limit all lines to a maximum of 79 characters.",
        "Use spaces, e.g. four per level.",
        "Tabs are not allowed; use spaces instead.",
        "- Never mix them.",
        "- Prefer four.",
    ]


def test_headings_and_headings_only_sections_give_no_sentence() -> None:
    text = "# Title\n\n## Sub\n\n"
    assert split_sentences(Section("d#1", "d", "Title", text, 0)) == []


def test_prompt_numbers_sentences_and_names_the_task_input() -> None:
    sentences = split_sentences(SECTION)
    (call,) = span_calls([(SECTION, sentences)], domain="style", task_input="a Python file", texts={"d": DOC})
    text = prompt_text(call.messages)
    assert "[1] The team wrote this guide in 2019." in text and "[6] - Prefer four." in text
    assert "a Python file" in text and '"1" to "6"' in text
    assert call.parse(_labels(*["background"] * 6)) == ["background"] * 6


def test_labels_become_spans_with_continuations_joined() -> None:
    sentences = split_sentences(SECTION)
    labels = ["background", "requirement", "continuation", "prohibition", "prohibition", "recommendation"]
    notes: list[str] = []
    spans = spans_from_labels(SECTION, sentences, labels, notes=notes)
    assert [(DOC[s:e], kind) for s, e, kind, _ in spans] == [
        ("Limit all lines to a maximum of 79 characters. Use spaces, e.g. four per level.", "requirement"),
        ("Tabs are not allowed; use spaces instead.", "prohibition"),
        ("- Never mix them.", "prohibition"),
        ("- Prefer four.", "recommendation"),
    ]
    assert notes == []


def test_stray_continuation_and_unknown_labels_are_left_out_and_noted() -> None:
    sentences = split_sentences(SECTION)
    labels = ["continuation", "rule!", "background", "requirement", "background", "background"]
    notes: list[str] = []
    spans = spans_from_labels(SECTION, sentences, labels, notes=notes)
    assert [DOC[s:e] for s, e, _, _ in spans] == ["Tabs are not allowed; use spaces instead."]
    assert "continues no rule" in notes[0] and "unknown label 'rule!'" in notes[1]


def test_a_reply_missing_a_sentence_is_a_parse_error_not_a_silent_loss() -> None:
    reply = json.dumps({"labels": [{"n": 1, "label": "requirement"}, {"n": 3, "label": "background"}]})
    with pytest.raises(ParseError, match="labels 2 of 3 sentences; missing: 2"):
        parse_labels(reply, count=3)


def test_labels_in_order_without_numbers_are_read() -> None:
    reply = json.dumps({"labels": [{"label": "Prohibition"}, {"label": "background"}]})
    assert parse_labels(reply, count=2) == ["prohibition", "background"]
    assert parse_labels('{"labels": ["requirement", "Background"]}', count=2) == ["requirement", "background"]


def test_labels_as_a_map_from_sentence_number_are_read_in_number_order() -> None:
    reply = '{"labels": {"2": "background", "1": "prohibition", "3": "continuation"}}'
    assert parse_labels(reply, count=3) == ["prohibition", "background", "continuation"]
    with pytest.raises(ParseError, match="labels 2 of 3 sentences; missing: 3"):
        parse_labels('{"labels": {"1": "prohibition", "2": "background"}}', count=3)
    with pytest.raises(ParseError, match="cut off"):
        parse_labels('{"labels": {"1": "prohibition", "2": "backgr', count=2)
    with pytest.raises(ParseError, match="not a map or a list"):
        parse_labels('{"labels": "prohibition"}', count=1)


@pytest.mark.parametrize(
    "reply",
    [
        {"labels": [{"n": 1, "label": "prohibition"}, {"n": 2, "label": ""}]},  # empty
        {"labels": [{"n": 1, "kind": "prohibition"}, {"n": 2, "kind": "background"}]},  # wrong field
        {"labels": [{"n": 1, "label": "prohibition"}, {"n": 2, "label": "prohi"}]},  # cut inside the label
        {"labels": {"1": "prohibition", "2": "rule"}},  # unknown, in the map form
    ],
)
def test_a_label_that_is_empty_unknown_or_under_a_wrong_field_is_a_parse_error(reply: dict) -> None:
    with pytest.raises(ParseError, match="no known label"):
        parse_labels(json.dumps(reply), count=2)


def test_paragraph_spans_when_phase_one_is_off() -> None:
    text = "First paragraph has rules in it.\n\nSecond paragraph also has rules."
    spans = paragraph_spans(Section("d#1", "d", "", text, 100))
    assert [(s - 100, e - 100) for s, e, _, _ in spans] == [(0, 32), (34, 66)]
