"""Phase 1: normative span detection, one call per section.

The model lists the spans of a section that state a rule. Each span must be
an exact substring of the section; a span that is not is snapped to the
closest verbatim passage when the fuzzy similarity exceeds 0.85, and dropped
and reported otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_tag.extraction.alignment import align
from langchain_tag.extraction.calls import Call
from langchain_tag.extraction.sections import Section, split_paragraphs
from langchain_tag.parsing import parse_json_items
from langchain_tag.prompts import span_detection_messages

__all__ = ["NORMATIVE_TYPES", "Span", "locate_spans", "paragraph_spans", "span_calls"]

# The reply is {"spans": [...]}; items that are not objects are dropped.
_parse = functools.partial(parse_json_items, key="spans")

NORMATIVE_TYPES = frozenset({"requirement", "prohibition", "recommendation", "permission", "exception", "conditional"})
_SNAP_THRESHOLD = 0.85
_MIN_SPAN_CHARS = 8


@dataclass(frozen=True)
class Span:
    """A verified normative span.

    Attributes:
        span_id: Unique id (S-001, ...).
        document_id: Source document.
        section_id: Source section.
        text: Verbatim text; ``document[start:end] == text``.
        normative_type: One of :data:`NORMATIVE_TYPES`, or ``"unspecified"``.
        context_summary: One sentence from the model.
        start: Document offset.
        end: Document offset, exclusive.
    """

    span_id: str
    document_id: str
    section_id: str
    text: str
    normative_type: str
    context_summary: str
    start: int
    end: int


def span_calls(sections: Sequence[Section], *, domain: str) -> list[Call[list[dict[str, Any]]]]:
    """One phase-1 call per section."""
    return [
        Call(1, s.section_id, span_detection_messages(domain=domain, title=s.title, text=s.text), _parse)
        for s in sections
    ]


def locate_spans(
    section: Section, raw_spans: Sequence[dict[str, Any]], *, notes: list[str]
) -> list[tuple[int, int, str, str]]:
    """Verify raw spans against the section text.

    Returns:
        ``(start, end, normative_type, context_summary)`` per kept span, with
        document offsets, in document order, without repeats.
    """
    found: dict[tuple[int, int], tuple[int, int, str, str]] = {}
    for raw in raw_spans:
        text = str(raw.get("text") or "").strip()
        if len(text) < _MIN_SPAN_CHARS:
            notes.append(f"{section.section_id}: span {raw.get('span_id')!r} has no usable text; dropped")
            continue
        found_at = align(text, section.text, threshold=_SNAP_THRESHOLD)
        if found_at is None:
            notes.append(f"{section.section_id}: span {raw.get('span_id')!r} is not in the section text; dropped")
            continue
        lo, hi = found_at.start, found_at.end
        if found_at.score < 1.0:
            notes.append(
                f"{section.section_id}: span {raw.get('span_id')!r} snapped to the source text "
                f"(similarity {found_at.score:.2f})"
            )
        kind = str(raw.get("normative_type") or "").strip().lower()
        kind = kind if kind in NORMATIVE_TYPES else "unspecified"
        summary = str(raw.get("context_summary") or "").strip()
        found.setdefault((lo, hi), (section.start + lo, section.start + hi, kind, summary))
    return sorted(found.values())


def paragraph_spans(section: Section) -> list[tuple[int, int, str, str]]:
    """Phase 1 switched off: every paragraph of the section is a span."""
    return [(start, start + len(text), "unspecified", "") for start, text in split_paragraphs(section)]
