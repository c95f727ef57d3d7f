"""Where each rule's verbatim span sits in the source document, and the document cut into highlighted pieces.

A rule's recorded offsets are trusted only when the document still holds its
``source_text`` there; otherwise the text is looked for again (exactly, then
by the extraction's fuzzy alignment). A span found nowhere (the document was
edited since the extraction) is *unaligned*: the page lists it apart, never
drops it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from langchain_tag.extraction._alignment import align

__all__ = ["Piece", "Placement", "cut_document", "place"]

How = Literal["offsets", "found", "moved", "fuzzy", "unaligned", "none"]
"""How a span was placed: at its recorded offsets, found exactly with no offsets recorded, found exactly away from
its recorded offsets, found by fuzzy alignment, not found, or the rule has no source text at all."""


@dataclass(frozen=True)
class Placement:
    """Where one quoted span sits in the document.

    Attributes:
        key: What the span belongs to (a rule's or an uncovered span's anchor).
        how: How it was placed (:data:`How`).
        start: Start offset in the document, when placed.
        end: End offset (exclusive), when placed.
        score: Similarity of the document's text there to the quoted one (1.0 when exact).
    """

    key: str
    how: How
    start: int | None = None
    end: int | None = None
    score: float | None = None

    @property
    def placed(self) -> bool:
        """Whether the span was found in the document."""
        return self.start is not None and self.end is not None


def place(
    key: str, text: str, document: str, *, start: int | None = None, end: int | None = None, threshold: float = 0.85
) -> Placement:
    """Place a quoted span in ``document``: at its offsets if they still hold it, else wherever it is found.

    Args:
        key: What the span belongs to.
        text: The quoted (verbatim) text.
        document: The document's text.
        start: The recorded start offset, if any.
        end: The recorded end offset, if any.
        threshold: Lowest similarity a fuzzy alignment must exceed.

    Returns:
        The placement; ``how="unaligned"`` when the text is not in the document, ``"none"`` when it is empty.

    >>> place("R-1", "b c", "a b c d", start=2, end=5)
    Placement(key='R-1', how='offsets', start=2, end=5, score=1.0)
    >>> place("R-1", "b c", "a b c d", start=0, end=3).how
    'moved'
    >>> place("R-1", "b c", "a b c d").how
    'found'
    >>> place("R-1", "x y z", "a b c d").how
    'unaligned'
    """
    quoted = text.strip()
    if not quoted:
        return Placement(key, "none")
    at_offsets = start is not None and end is not None and 0 <= start < end <= len(document)
    if at_offsets and document[start:end].strip() == quoted:
        return Placement(key, "offsets", start, end, 1.0)
    found = align(quoted, document, threshold=threshold)
    if found is None:
        return Placement(key, "unaligned")
    recorded = start is not None and end is not None
    how: How = "fuzzy" if found.score != 1.0 else "moved" if recorded else "found"
    return Placement(key, how, found.start, found.end, found.score)


@dataclass
class Piece:
    """A run of the document under one set of spans.

    Attributes:
        text: The run's text.
        rules: Anchors of the rule spans covering it.
        uncovered: Anchors of the uncovered normative spans covering it.
        starts: Anchors of the rule spans that start at this run (their label goes before it).
        uncovered_starts: Anchors of the uncovered spans that start here.
    """

    text: str
    rules: list[str] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)
    starts: list[str] = field(default_factory=list)
    uncovered_starts: list[str] = field(default_factory=list)


def cut_document(document: str, rules: Sequence[Placement], uncovered: Sequence[Placement] = ()) -> list[Piece]:
    """Cut ``document`` at every placed span's ends, each piece naming the spans over it.

    Spans may overlap or coincide (one sentence split into several rules);
    every placed span starts exactly one piece's ``starts``.

    >>> [(p.text, p.rules) for p in cut_document("ab cd ef", [Placement("R", "offsets", 3, 5)])]
    [('ab ', []), ('cd', ['R']), (' ef', [])]
    """
    placed_rules = [p for p in rules if p.placed]
    placed_uncovered = [p for p in uncovered if p.placed]
    cuts = {0, len(document)}
    for p in (*placed_rules, *placed_uncovered):
        cuts.update((p.start or 0, p.end or 0))
    bounds = sorted(c for c in cuts if 0 <= c <= len(document))
    pieces: list[Piece] = []
    for lo, hi in itertools.pairwise(bounds):
        if hi <= lo:
            continue
        piece = Piece(document[lo:hi])
        for p in placed_rules:
            if (p.start or 0) <= lo and hi <= (p.end or 0):
                piece.rules.append(p.key)
                if p.start == lo:
                    piece.starts.append(p.key)
        for p in placed_uncovered:
            if (p.start or 0) <= lo and hi <= (p.end or 0):
                piece.uncovered.append(p.key)
                if p.start == lo:
                    piece.uncovered_starts.append(p.key)
        pieces.append(piece)
    return pieces
