"""Phase 5: programmatic verification (no LLM): faithfulness, coverage, independence.

- Faithfulness: a rule's ``source_text`` must occur in its document, exactly
  or with a fuzzy match ratio above the threshold (0.85); the verified
  offsets are stored on the rule. Unfaithful rules are dropped.
- Coverage: each phase-1 span must be overlapped for at least half its
  characters by the source of a surviving rule.
- Independence: unique rule names over rules; reported, never used to drop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from langchain_tag.extraction._alignment import align
from langchain_tag.extraction._span_detection import Span
from langchain_tag.rules import Rule

__all__ = ["DroppedRule", "find_source", "independence_ratio", "uncovered_spans", "verify_faithfulness"]


@dataclass(frozen=True)
class DroppedRule:
    """A rule removed by verification, with the reason."""

    rule_id: str
    rule_name: str
    reason: str


def find_source(source: str, document: str, *, threshold: float = 0.85) -> tuple[int, int, float] | None:
    """Locate ``source`` in ``document``.

    Returns:
        ``(start, end, score)`` for an exact occurrence (score 1.0) or the best
        fuzzy alignment whose ratio exceeds ``threshold``; ``None`` otherwise.
    """
    found = align(source, document, threshold=threshold)
    return None if found is None else (found.start, found.end, found.score)


def verify_faithfulness(
    rules: Sequence[Rule],
    documents: Mapping[str, str],
    *,
    threshold: float = 0.85,
    anchors: Mapping[str, int] | None = None,
) -> tuple[list[Rule], list[DroppedRule]]:
    """Keep the rules whose source text is found in their document.

    Kept rules are copies carrying ``source_start``, ``source_end`` and
    ``faithfulness``.

    Args:
        rules: The rules to check.
        documents: Document id -> text.
        threshold: Fuzzy ratio a source must exceed.
        anchors: Span id -> the span's document offset. When a rule's source
            occurs verbatim at its span, that occurrence is used, so a
            sentence repeated elsewhere in the document is not credited to
            the first place it appears.
    """
    kept: list[Rule] = []
    dropped: list[DroppedRule] = []
    for rule in rules:
        document = documents.get(rule.document_id or "")
        if document is None:
            dropped.append(DroppedRule(rule.rule_id, rule.rule_name, f"unknown document {rule.document_id!r}"))
            continue
        anchor = (anchors or {}).get(rule.span_id or "")
        needle = rule.source_text.strip()
        found = None
        if anchor is not None and needle and document.startswith(needle, anchor):
            found = (anchor, anchor + len(needle), 1.0)
        if found is None:
            found = find_source(rule.source_text, document, threshold=threshold)
        if found is None:
            dropped.append(
                DroppedRule(
                    rule.rule_id, rule.rule_name, f"source_text not found in the document (threshold {threshold})"
                )
            )
            continue
        start, end, score = found
        kept.append(rule.model_copy(update={"source_start": start, "source_end": end, "faithfulness": round(score, 4)}))
    return kept, dropped


def _covered(start: int, end: int, ranges: Iterable[tuple[int, int]]) -> int:
    clipped = sorted((max(start, lo), min(end, hi)) for lo, hi in ranges if hi > start and lo < end)
    total, cursor = 0, start
    for lo, hi in clipped:
        lo = max(lo, cursor)
        if hi > lo:
            total += hi - lo
            cursor = hi
    return total


def uncovered_spans(
    spans: Sequence[Span], ranges: Mapping[str, Sequence[tuple[int, int]]], *, min_overlap: float = 0.5
) -> list[Span]:
    """Spans overlapped for less than ``min_overlap`` of their characters.

    Args:
        spans: Phase-1 spans.
        ranges: Per document id, the verified source ranges of surviving rules.
        min_overlap: Share of a span's characters that must be covered.
    """
    out = []
    for span in spans:
        length = max(1, span.end - span.start)
        if _covered(span.start, span.end, ranges.get(span.document_id, ())) / length < min_overlap:
            out.append(span)
    return out


def independence_ratio(rules: Sequence[Rule]) -> float:
    """Unique rule names (case- and space-insensitive) over rules; 1.0 for no rules."""
    if not rules:
        return 1.0
    names = {" ".join(r.rule_name.lower().split()) for r in rules}
    return len(names) / len(rules)
