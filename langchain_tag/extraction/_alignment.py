"""Locate a quoted passage in a source text: exactly, or by fuzzy alignment.

Used by phase 1 (snap a near-verbatim span to the real text) and phase 5
(faithfulness of a rule's ``source_text``). Fuzzy matching uses rapidfuzz's
partial-ratio alignment, then moves the ends to word boundaries so the result
is a clean passage rather than a window cut mid-word.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz

__all__ = ["Alignment", "align"]

_SLACK = 15


@dataclass(frozen=True)
class Alignment:
    """Where a passage was found: ``text[start:end]``, with a 0..1 similarity score."""

    start: int
    end: int
    score: float


def _word_starts(text: str, lo: int, hi: int) -> list[int]:
    return [
        i for i in range(max(0, lo), min(len(text), hi)) if not text[i].isspace() and (i == 0 or text[i - 1].isspace())
    ]


def _word_ends(text: str, lo: int, hi: int) -> list[int]:
    return [
        j
        for j in range(max(1, lo), min(len(text), hi) + 1)
        if not text[j - 1].isspace() and (j == len(text) or text[j].isspace())
    ]


def align(needle: str, haystack: str, *, threshold: float = 0.85) -> Alignment | None:
    """Find ``needle`` in ``haystack``.

    Args:
        needle: The quoted passage (surrounding whitespace is ignored).
        haystack: The source text.
        threshold: Lowest accepted similarity for a fuzzy match (exclusive).

    Returns:
        An exact occurrence (score 1.0), else the best fuzzy alignment whose
        similarity exceeds ``threshold``, else ``None``.
    """
    needle = needle.strip()
    if not needle or not haystack:
        return None
    pos = haystack.find(needle)
    if pos != -1:
        return Alignment(pos, pos + len(needle), 1.0)
    if len(needle) >= len(haystack):
        score = fuzz.ratio(needle, haystack) / 100.0
        return Alignment(0, len(haystack), score) if score > threshold else None
    match = fuzz.partial_ratio_alignment(needle, haystack, score_cutoff=threshold * 100.0)
    if match is None:
        return None
    best = Alignment(
        match.dest_start, match.dest_end, fuzz.ratio(needle, haystack[match.dest_start : match.dest_end]) / 100.0
    )
    starts = _word_starts(haystack, match.dest_start - _SLACK, match.dest_start + _SLACK) or [match.dest_start]
    ends = _word_ends(haystack, match.dest_end - _SLACK, match.dest_end + _SLACK) or [match.dest_end]
    for start in starts:
        for end in ends:
            if end > start:
                score = fuzz.ratio(needle, haystack[start:end]) / 100.0
                if score > best.score:
                    best = Alignment(start, end, score)
    return best if best.score > threshold else None
