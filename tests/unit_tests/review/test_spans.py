"""Placing rule spans in a document and cutting it into highlighted pieces."""

from __future__ import annotations

from langchain_tag.review._spans import Placement, cut_document, place

DOC = "Intro. Never use eval. Always log errors, and never print.\nEnd."


def test_offsets_that_still_hold_are_kept_and_stale_ones_found_again() -> None:
    start = DOC.index("Never use eval.")
    assert place("a", "Never use eval.", DOC, start=start, end=start + 15).how == "offsets"
    moved = place("a", "Never use eval.", DOC, start=0, end=15)
    assert (moved.how, moved.start) == ("moved", start)
    fuzzy = place("a", "Always log the errors, and never print.", DOC)
    assert fuzzy.how == "fuzzy" and fuzzy.score is not None and fuzzy.score < 1
    assert DOC[fuzzy.start or 0 : fuzzy.end].startswith("Always log")
    assert place("a", "Use four spaces per indentation level.", DOC).how == "unaligned"
    assert place("a", "   ", DOC).how == "none"


def test_overlapping_spans_each_start_once_and_the_text_is_kept_whole() -> None:
    whole = DOC.index("Always")
    sentence = place("R1", "Always log errors, and never print.", DOC)
    part = place("R2", "never print.", DOC)
    same = place("R3", "Always log errors, and never print.", DOC)
    lost = Placement("R4", "unaligned")
    pieces = cut_document(DOC, [sentence, part, same, lost])
    assert "".join(p.text for p in pieces) == DOC
    starts = [key for p in pieces for key in p.starts]
    assert sorted(starts) == ["R1", "R2", "R3"]
    covered = [p for p in pieces if p.rules]
    assert covered[0].text.startswith("Always") and covered[0].rules == ["R1", "R3"]
    assert covered[-1].text == "never print." and covered[-1].rules == ["R1", "R2", "R3"]
    assert sentence.start == whole


def test_a_span_without_recorded_offsets_is_found_not_moved() -> None:
    assert place("R-1", "b c", "a b c d").how == "found"
    assert place("R-1", "b c", "a b c d", start=0, end=3).how == "moved"
