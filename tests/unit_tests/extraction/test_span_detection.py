from __future__ import annotations

from langchain_tag.extraction.sections import Section
from langchain_tag.extraction.span_detection import locate_spans, paragraph_spans

DOC = "Preamble.\nLimit all lines to a maximum of 79 characters. Use four spaces per indentation level."
SECTION = Section("d#1", "d", "Layout", DOC[10:], 10)


def test_exact_span_gets_document_offsets() -> None:
    notes: list[str] = []
    ((start, end, kind, _),) = locate_spans(
        SECTION,
        [{"span_id": "S-1", "text": "Use four spaces per indentation level.", "normative_type": "requirement"}],
        notes=notes,
    )
    assert DOC[start:end] == "Use four spaces per indentation level." and kind == "requirement"
    assert notes == []


def test_near_verbatim_span_is_snapped_to_the_source() -> None:
    notes: list[str] = []
    found = locate_spans(
        SECTION,
        [{"span_id": "S-1", "text": "Limit all lines to a maximum of 79 chars.", "normative_type": "rule"}],
        notes=notes,
    )
    assert len(found) == 1
    start, end, kind, _ = found[0]
    assert DOC[start:end].startswith("Limit all lines to a maximum of 79")
    assert kind == "unspecified" and "snapped" in notes[0]


def test_invented_span_is_dropped_and_noted() -> None:
    notes: list[str] = []
    found = locate_spans(
        SECTION,
        [{"span_id": "S-9", "text": "Functions must have type hints on every argument."}, {"text": ""}],
        notes=notes,
    )
    assert found == [] and len(notes) == 2 and "not in the section" in notes[0]


def test_repeated_spans_are_kept_once() -> None:
    span = {"text": "Use four spaces per indentation level."}
    assert len(locate_spans(SECTION, [span, span], notes=[])) == 1


def test_paragraph_spans_when_phase_one_is_off() -> None:
    text = "First paragraph has rules in it.\n\nSecond paragraph also has rules."
    spans = paragraph_spans(Section("d#1", "d", "", text, 100))
    assert [(s - 100, e - 100) for s, e, _, _ in spans] == [(0, 32), (34, 66)]
