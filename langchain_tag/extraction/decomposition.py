"""Phase 2: atomic decomposition of spans into units with one subject, context and action.

Spans are sent in batches (one call per batch). ``original_text`` is always
set from the verified span, never taken from the model; a span the model
leaves out becomes one unsplit unit so nothing is lost.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_tag.errors import ParseError
from langchain_tag.extraction.calls import Call
from langchain_tag.extraction.span_detection import Span
from langchain_tag.parsing import local_ids, parse_json_items
from langchain_tag.prompts import decomposition_messages

__all__ = ["AtomicUnit", "collect_units", "decomposition_calls", "parse_units", "unsplit_unit"]


def parse_units(text: str, *, count: int) -> list[dict[str, Any]]:
    """Read phase 2's reply for a batch of ``count`` spans: at least one unit with text for each span.

    A reply that leaves a span without a unit, or gives a unit for a span not
    in the batch (fewer items than asked, wrong ids or fields, a cut-off
    item), is a failed call: retried, then reported, and the spans are kept
    whole.

    Raises:
        ParseError: When a unit names no span of the batch or has no text, or a span gets no unit.
    """
    items = parse_json_items(text, "units")
    ids = local_ids("S", count)
    covered: set[str] = set()
    for item in items:
        span_id = str(item.get("source_span_id") or "").strip()
        span_id = ids[0] if span_id not in ids and count == 1 else span_id
        if span_id not in ids or not str(item.get("text") or "").strip():
            raise ParseError(f"the reply gives a unit for unknown span {span_id!r} or without text")
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
    got: dict[str, list[AtomicUnit]] = {s.span_id: [] for s in batch}
    for raw in raw_units or []:
        span_id = str(raw.get("source_span_id") or "").strip()
        span_id = local.get(span_id, span_id)
        if span_id not in by_id and len(batch) == 1:
            span_id = batch[0].span_id
        text = str(raw.get("text") or "").strip()
        if span_id not in by_id or not text:
            notes.append(f"phase 2: unit for unknown span {span_id!r} or without text; dropped")
            continue
        got[span_id].append(
            AtomicUnit(
                atomic_id="",
                span_id=span_id,
                text=text,
                original_text=by_id[span_id].text,
                was_split=bool(raw.get("was_split")),
                split_rationale=str(raw.get("split_rationale") or ""),
            )
        )
    units: list[AtomicUnit] = []
    for span in batch:
        if not got[span.span_id]:
            if raw_units is not None:
                notes.append(f"phase 2: {span.span_id} got no unit; kept unsplit")
            got[span.span_id] = [unsplit_unit(span)]
        units.extend(got[span.span_id])
    return units
