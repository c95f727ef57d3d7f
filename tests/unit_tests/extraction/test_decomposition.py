from __future__ import annotations

import json

import pytest
from langchain_core.documents import Document

from langchain_tag.errors import ParseError
from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.extraction._decomposition import collect_units, may_need_split, parse_units
from langchain_tag.extraction._span_detection import Span
from langchain_tag.testing import fake_extractor

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


def _span(text: str) -> Span:
    return Span("S-001", "d", "d#1", text, "requirement", "", 0, len(text))


@pytest.mark.parametrize(
    ("text", "needed"),
    [
        ("Never write a bare `except:` clause.", False),
        ("Write `x not in y` rather than `not x in y`.", False),  # no coordinating word outside the code
        ("Use `a and b` only in tests.", False),
        ("Use spaces, not tabs, and limit lines to 79.", True),
        ("Prefer f-strings; avoid `%` formatting.", True),
        ("Return a value or raise an error.", True),
        ("Log errors. Do not print them.", True),  # two sentences
        ("Keep these:\n- one import per line", True),  # a list
    ],
)
def test_only_spans_that_may_hold_several_units_go_to_the_model(text: str, needed: bool) -> None:
    assert may_need_split(_span(text)) is needed


def test_short_keys_a_span_kept_whole_by_id_and_a_split_span() -> None:
    reply = json.dumps({"units": [{"span": "S-001"}, {"span": "S-002", "text": "A."}, {"span": "S-002", "t": "B."}]})
    raw = parse_units(reply, count=2)
    units = collect_units(SPANS, raw, notes=[])
    assert [(u.span_id, u.text, u.was_split) for u in units] == [
        ("S-001", SPANS[0].text, False),  # the program copied the text, verbatim
        ("S-002", "A.", True),
        ("S-002", "B.", True),
    ]


def test_a_reply_naming_no_span_of_the_batch_is_a_failed_call() -> None:
    with pytest.raises(ParseError, match="unknown span"):
        parse_units(json.dumps({"units": [{"span": "S-001"}, {"span": "S-404"}]}), count=2)
    with pytest.raises(ParseError, match="no unit for span"):
        parse_units(json.dumps({"units": [{"span": "S-001"}]}), count=2)


def test_the_transformer_sends_only_compound_spans_to_phase_two() -> None:
    llm = fake_extractor()
    policy = "Rules\n=====\n\nNever use eval.\n\nAlways close files and sockets you open.\n"
    RuleDocumentTransformer(llm).extract([Document(page_content=policy, id="p")])
    phase2 = [p for p in llm.prompts if 'Return {"units"' in p]
    assert len(phase2) == 1 and "sockets" in phase2[0] and "eval" not in phase2[0]
