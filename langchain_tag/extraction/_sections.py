"""Split a document into sections for phase 1: by headings first, size second.

Every section keeps its start offset in the document, so spans found inside
a section map back to exact document offsets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Section", "code_regions", "split_paragraphs", "split_sections", "split_sentences"]

# A Markdown ATX heading ("## Title"), or a line underlined by a row of one
# punctuation character (reStructuredText / setext), e.g. "Title\n=====".
_ATX = re.compile(r"^#{1,6}\s+\S.*$", re.MULTILINE)
_UNDERLINED = re.compile(r"^(?P<title>[^\n]*\S[^\n]*)\n(?P<rule>([=\-~^\"'`#*+])\3{2,})[ \t]*$", re.MULTILINE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
# A sentence ends at . ! or ? (after any closing quote or bracket) followed by
# whitespace and something that can start a sentence.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9`\"'(\[*_])")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|Mr|Mrs|Ms|Dr|No|St|Sec|Art)\.|\b[A-Z]\.)[\"')\]]*$")
_LIST_ITEM = re.compile(r"\n(?=[ \t]*(?:[-*+\u2022]|\d{1,3}[.)]|\([a-z0-9]{1,3}\))[ \t]+\S)")
_RULE_LINE = re.compile(r"^[ \t]*(?:#{1,6}[ \t].*|([=\-~^\"'`#*+])\1{2,}[ \t]*)$", re.MULTILINE)


@dataclass(frozen=True)
class Section:
    """A piece of a document.

    Attributes:
        section_id: Unique within the extraction run.
        document_id: The document it belongs to.
        title: The heading it falls under ("" before the first heading).
        text: The section text, an exact slice of the document.
        start: Offset of ``text`` in the document.
    """

    section_id: str
    document_id: str
    title: str
    text: str
    start: int

    @property
    def end(self) -> int:
        """Offset just past the section's end."""
        return self.start + len(self.text)


def _headings(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, title)`` of each heading; ``end`` is just past its last line."""
    found: dict[int, tuple[int, str]] = {}
    for m in _ATX.finditer(text):
        found[m.start()] = (m.end(), m.group(0).lstrip("#").strip())
    for m in _UNDERLINED.finditer(text):
        title = m.group("title").strip()
        if set(title) <= set(m.group("rule")[0] + " "):
            continue  # an overline, not a title
        found.setdefault(m.start(), (m.end(), title))
    return [(start, end, title) for start, (end, title) in sorted(found.items())]


def _pieces(text: str, start: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut ``text[start:]``-relative ranges no longer than ``max_chars``.

    Cuts fall on paragraph breaks, else sentence ends, else hard at the limit.
    """
    ranges: list[tuple[int, int]] = []
    pos, end = 0, len(text)
    while end - pos > max_chars:
        window = text[pos : pos + max_chars]
        cut = -1
        for pattern in (_PARAGRAPH_BREAK, _SENTENCE_END):
            matches = [m.end() for m in pattern.finditer(window) if m.end() > max_chars // 4]
            if matches:
                cut = matches[-1]
                break
        if cut <= 0:
            cut = max_chars
        ranges.append((start + pos, start + pos + cut))
        pos += cut
    ranges.append((start + pos, start + end))
    return ranges


def split_sections(text: str, *, document_id: str, max_chars: int = 6000, min_chars: int = 0) -> list[Section]:
    """Split ``text`` into sections by heading, then by size.

    Args:
        text: The document text.
        document_id: Id recorded on each section.
        max_chars: Longest section; longer ones are cut at paragraph or
            sentence boundaries.
        min_chars: A section shorter than this is joined with the next one
            (while the result stays within ``max_chars``), so that a document
            of many short headed parts costs fewer calls.

    Returns:
        Sections in document order, whitespace-only pieces left out.
    """
    if max_chars < 200:
        raise ValueError(f"max_chars must be at least 200, got {max_chars}")
    # Each section is the body under one heading; the heading itself is kept
    # as the title, not in the text, so it cannot be mistaken for a rule.
    bounds = [(0, 0, "")] + _headings(text)
    sections: list[Section] = []
    for i, (_, body, title) in enumerate(bounds):
        finish = bounds[i + 1][0] if i + 1 < len(bounds) else len(text)
        if finish <= body:
            continue
        for lo, hi in _pieces(text[body:finish], body, max_chars):
            piece = text[lo:hi]
            stripped = piece.strip()
            if not stripped:
                continue
            lead = len(piece) - len(piece.lstrip())
            sections.append(
                Section(
                    section_id=f"{document_id}#{len(sections) + 1}",
                    document_id=document_id,
                    title=title,
                    text=stripped,
                    start=lo + lead,
                )
            )
    return _merge_short(sections, text, max_chars=max_chars, min_chars=min_chars) if min_chars else sections


def _merge_short(sections: list[Section], text: str, *, max_chars: int, min_chars: int) -> list[Section]:
    merged: list[Section] = []
    for section in sections:
        last = merged[-1] if merged else None
        if last is not None and len(last.text) < min_chars and section.end - last.start <= max_chars:
            titles = " / ".join(t for t in (last.title, section.title) if t)
            merged[-1] = Section(last.section_id, last.document_id, titles, text[last.start : section.end], last.start)
        else:
            merged.append(section)
    return [
        Section(f"{s.document_id}#{i}", s.document_id, s.title, s.text, s.start) for i, s in enumerate(merged, start=1)
    ]


def split_paragraphs(section: Section, *, min_chars: int = 20) -> list[tuple[int, str]]:
    """Paragraphs of a section as ``(document offset, text)``, headings and scraps left out."""
    out: list[tuple[int, str]] = []
    pos = 0
    for part in _PARAGRAPH_BREAK.split(section.text) + [""]:
        idx = section.text.find(part, pos) if part else -1
        if idx == -1:
            continue
        pos = idx + len(part)
        stripped = part.strip()
        if len(stripped) < min_chars or _is_heading(stripped, section.title):
            continue
        lead = len(part) - len(part.lstrip())
        out.append((section.start + idx + lead, stripped))
    return out


def _is_heading(paragraph: str, title: str) -> bool:
    """Whether a paragraph is only a heading (with its underline or ``#`` marks)."""
    lines = [ln.strip() for ln in paragraph.splitlines() if ln.strip()]
    words = [ln.lstrip("#").strip() for ln in lines if len(set(ln)) > 1 or ln[0].isalnum()]
    return bool(title) and words == [title]


# A Markdown fence, an RST code directive, or prose ending in "::" (an RST literal block follows).
_FENCE_LINE = re.compile(r"^[ \t]*(```|~~~)")
_CODE_DIRECTIVE = re.compile(
    r"^[ \t]*\.\.[ \t]+(?:code-block|code|sourcecode|literalinclude|doctest|testcode|testoutput)::"
)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def code_regions(text: str) -> list[tuple[int, int]]:
    """Character ranges of ``text`` that hold code, not prose.

    Fenced Markdown blocks (fences included), RST code directives with
    their indented body, and the indented literal block after a line ending
    in ``::`` (the line itself is prose and stays out of the range).
    Example code in a style guide is not a rule: sending its lines to
    phase 1 as sentences invites the model to read ``# Wrong:`` lines as
    prohibitions.
    """
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    regions: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE_LINE.match(line)
        if fence:
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(fence.group(1)):
                j += 1
            regions.append((offsets[i], offsets[min(j + 1, len(lines))]))
            i = j + 1
            continue
        directive = bool(_CODE_DIRECTIVE.match(line))
        if directive or line.rstrip().endswith("::"):
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > _indent(line)):
                j += 1
            start = offsets[i] if directive else offsets[i + 1]
            if offsets[j] > start:
                regions.append((start, offsets[j]))
            i = max(j, i + 1)
            continue
        i += 1
    return regions


def split_sentences(section: Section, *, min_chars: int = 8) -> list[tuple[int, int]]:
    """The section's sentences as document ``(start, end)`` offsets, in order.

    Paragraphs are cut at list items, then at sentence ends (not after
    common abbreviations such as "e.g."); heading lines, code
    (:func:`code_regions`) and scraps shorter than ``min_chars`` are left
    out. Every range is an exact slice of the document, so a span built from
    sentences is verbatim by construction.
    """
    out: list[tuple[int, int]] = []
    code = [(section.start + a, section.start + b) for a, b in code_regions(section.text)]
    for start, paragraph in split_paragraphs(section, min_chars=1):
        if any(a <= start < b for a, b in code):
            continue
        text = _RULE_LINE.sub(lambda m: " " * len(m.group(0)), paragraph)
        pieces: list[tuple[int, int]] = []
        block_start = 0
        for cut in [m.start() for m in _LIST_ITEM.finditer(text)] + [len(text)]:
            piece_start = block_start
            for m in _SENTENCE_BREAK.finditer(text, block_start, cut):
                if _ABBREVIATION.search(text, piece_start, m.start()):
                    continue
                pieces.append((piece_start, m.start()))
                piece_start = m.end()
            pieces.append((piece_start, cut))
            block_start = cut
        for lo, hi in pieces:
            piece = text[lo:hi]
            lead = len(piece) - len(piece.lstrip())
            stripped = piece.strip()
            if len(stripped) >= min_chars:
                out.append((start + lo + lead, start + lo + lead + len(stripped)))
    return out
