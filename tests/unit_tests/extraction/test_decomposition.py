from __future__ import annotations

from langchain_tag.extraction.decomposition import collect_units
from langchain_tag.extraction.span_detection import Span

SPANS = [
    Span("S-001", "d", "d#1", "Use spaces, not tabs, and limit lines to 79.", "requirement", "", 0, 44),
    Span("S-002", "d", "d#1", "Avoid wildcard imports.", "prohibition", "", 50, 73),
]


def test_units_keep_verbatim_original_text_from_the_span() -> None:
    raw = [
        {
            "source_span_id": "S-001",
            "text": "Indent with spaces, not tabs.",
            "original_text": "PARAPHRASED",
            "was_split": True,
        },
        {"source_span_id": "S-001", "text": "Limit lines to 79 characters.", "was_split": True},
        {"source_span_id": "S-002", "text": "Avoid wildcard imports."},
    ]
    units = collect_units(SPANS, raw, notes=[])
    assert [u.span_id for u in units] == ["S-001", "S-001", "S-002"]
    assert units[0].original_text == SPANS[0].text and units[0].was_split


def test_skipped_span_becomes_one_unsplit_unit() -> None:
    notes: list[str] = []
    units = collect_units(
        SPANS, [{"source_span_id": "S-001", "text": "x"}, {"source_span_id": "S-404", "text": "y"}], notes=notes
    )
    assert [u.span_id for u in units] == ["S-001", "S-002"]
    assert units[1].text == SPANS[1].text
    assert any("S-404" in n for n in notes) and any("S-002 got no unit" in n for n in notes)


def test_failed_call_keeps_every_span() -> None:
    assert [u.text for u in collect_units(SPANS, None, notes=[])] == [s.text for s in SPANS]
