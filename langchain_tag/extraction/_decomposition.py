"""Phase 2: atomic decomposition of spans into units with one subject, context and action.

Only spans that may hold several units are sent (:func:`may_need_split`: more
than one sentence, a list, or a coordinating word); a single plain sentence is
one unit without a call. Spans go in batches (one call per batch), and the
reply names a span kept whole by its id alone, so the program, not the model,
copies its text. ``original_text`` is always set from the verified span, never
taken from the model; a span the model leaves out becomes one unsplit unit so
nothing is lost.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_tag.calls._replies import local_ids, parse_json_items, with_aliases
from langchain_tag.errors import ParseError
from langchain_tag.extraction._calls import Call
from langchain_tag.extraction._sections import Section, split_sentences
from langchain_tag.extraction._span_detection import Span
from langchain_tag.extraction.prompts import decomposition_messages

__all__ = ["AtomicUnit", "collect_units", "decomposition_calls", "may_need_split", "parse_units", "unsplit_unit"]

_ALIASES = {"span": "source_span_id", "s": "source_span_id", "t": "text"}

# What can join several units in one sentence: a semicolon, a coordinating word, a list.
_COMPOUND = re.compile(r";|\b(?:and|or|nor|as well as|both|either|neither)\b|^\s*(?:[-*\u2022]|\d+[.)])\s", re.I | re.M)


def may_need_split(span: Span) -> bool:
    """Whether phase 2 should look at a span: more than one sentence, a list, or a coordinating word.

    A single sentence without any of them states one thing and is kept as one
    unit without a call. Code in backquotes is ignored (``a and b`` inside it
    joins nothing in the statement).
    """
    prose = re.sub(r"`[^`]*`", "x", span.text)
    whole = Section(section_id="", document_id="", title="", text=prose, start=0)
    return len(split_sentences(whole)) > 1 or bool(_COMPOUND.search(prose))


def parse_units(text: str, *, count: int) -> list[dict[str, Any]]:
    """Read phase 2's reply for a batch of ``count`` spans: at least one unit for each span.

    A unit is ``{"span": id}`` (the span kept whole) or ``{"span": id, "text": ...}`` (one unit of a split span);
    the long keys of earlier prompt versions (``source_span_id``) read the same. A reply that leaves a span without
    a unit, or gives a unit for a span not in the batch (fewer items than asked, wrong ids, a cut-off item), is a
    failed call: retried, then reported, and the spans are kept whole.

    Raises:
        ParseError: When a unit names no span of the batch, or a span gets no unit.
    """
    items = [with_aliases(item, _ALIASES) for item in parse_json_items(text, "units")]
    ids = local_ids("S", count)
    covered: set[str] = set()
    for item in items:
        span_id = str(item.get("source_span_id") or "").strip()
        span_id = ids[0] if span_id not in ids and count == 1 else span_id
        if span_id not in ids:
            raise ParseError(f"the reply gives a unit for unknown span {span_id!r}")
        covered.add(span_id)
    missing = [span_id for span_id in ids if span_id not in covered]
    if missing:
        raise ParseError(f"the reply gives no unit for span(s) {', '.join(missing[:8])}")
    return items


@dataclass(frozen=True)
class AtomicUnit:
    """One atomic unit.

    Attributes:
        atomic_id: Unique id (A-001, ...), assigned after collection.
        span_id: The span it came from.
        text: Self-contained statement.
        original_text: The span's verbatim text.
        was_split: Whether the span was split.
        split_rationale: Why, if it was.
    """

    atomic_id: str
    span_id: str
    text: str
    original_text: str
    was_split: bool = False
    split_rationale: str = ""


def decomposition_calls(batches: Sequence[Sequence[Span]], *, domain: str) -> list[Call[list[dict[str, Any]]]]:
    """One phase-2 call per batch of spans."""
    calls = []
    for batch in batches:
        # Ids local to the batch: the prompt does not depend on spans elsewhere in the document.
        payload = [
            {"span_id": local, "text": s.text, "normative_type": s.normative_type}
            for local, s in zip(local_ids("S", len(batch)), batch, strict=True)
        ]
        key = f"{batch[0].span_id}..{batch[-1].span_id}"
        parse = functools.partial(parse_units, count=len(batch))
        calls.append(Call(2, key, decomposition_messages(domain=domain, spans=payload), parse))
    return calls


def unsplit_unit(span: Span) -> AtomicUnit:
    """The span as a single unit (phase 2 off, or the model skipped the span)."""
    return AtomicUnit(atomic_id="", span_id=span.span_id, text=span.text, original_text=span.text)


def collect_units(
    batch: Sequence[Span], raw_units: Sequence[dict[str, Any]] | None, *, notes: list[str]
) -> list[AtomicUnit]:
    """Turn a batch's raw units into units, in span order.

    Units naming an unknown span are dropped and noted; spans that got no unit
    (or the whole batch, when its call failed) become one unsplit unit.
    """
    by_id = {s.span_id: s for s in batch}
    local = dict(zip(local_ids("S", len(batch)), (s.span_id for s in batch), strict=True))
    texts: dict[str, list[str]] = {s.span_id: [] for s in batch}
    for raw in (with_aliases(r, _ALIASES) for r in raw_units or []):
        span_id = str(raw.get("source_span_id") or "").strip()
        span_id = local.get(span_id, span_id)
        if span_id not in by_id and len(batch) == 1:
            span_id = batch[0].span_id
        if span_id not in by_id:
            notes.append(f"phase 2: unit for unknown span {span_id!r}; dropped")
            continue
        # No text: the span is kept whole, in its own words.
        texts[span_id].append(" ".join(str(raw.get("text") or "").split()) or by_id[span_id].text)
    units: list[AtomicUnit] = []
    for span in batch:
        found = list(dict.fromkeys(texts[span.span_id]))  # a unit repeated word for word counts once
        if not found:
            if raw_units is not None:
                notes.append(f"phase 2: {span.span_id} got no unit; kept unsplit")
            units.append(unsplit_unit(span))
            continue
        units.extend(
            AtomicUnit(atomic_id="", span_id=span.span_id, text=t, original_text=span.text, was_split=len(found) > 1)
            for t in found
        )
    return units
