"""Phase 1: normative span detection, one call per section.

The section is cut into sentences (:func:`~langchain_tag.extraction._sections.split_sentences`)
and the model labels each numbered sentence: one of the normative types, a
continuation of the previous sentence's rule, or background. Consecutive
sentences of one rule (a normative sentence and its continuations) form a
span. The model never copies text, so spans are exact slices of the document
by construction; a reply that does not label every sentence is a failed call
(retried, then reported), never a silent loss.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_tag.calls._replies import json_shape, parse_json_object
from langchain_tag.errors import ParseError
from langchain_tag.extraction._calls import Call
from langchain_tag.extraction._sections import Section, split_paragraphs
from langchain_tag.extraction.prompts import DEFAULT_TASK_INPUT, SPAN_LABELS, span_detection_messages

__all__ = ["NORMATIVE_TYPES", "Span", "paragraph_spans", "parse_labels", "span_calls", "spans_from_labels"]

NORMATIVE_TYPES = frozenset({"requirement", "prohibition", "recommendation", "permission", "exception", "conditional"})


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


def parse_labels(text: str, *, count: int) -> list[str]:
    """Read phase 1's reply: one label per numbered sentence, ``count`` of them.

    The labels may come as a map from sentence number to label
    (``{"labels": {"1": "requirement", "2": "background"}}``, what the prompt
    asks for), as objects (``{"n": 3, "label": "prohibition"}``, numbered or
    in order) or as bare strings in order. Every label must be one of
    :data:`~langchain_tag.extraction.prompts.SPAN_LABELS`: an empty, missing or unknown
    one (a wrong field name, a reply cut inside a label) would silently turn a
    rule into background.

    Raises:
        ParseError: When any sentence from 1 to ``count`` has no label, or a
            label is not a known one.
    """
    shape = json_shape(text)
    if shape.open_at_end and not shape.ends_after_value:
        raise ParseError(f"the reply is cut off inside a label (unclosed JSON): {text[-160:]!r}")
    raw = parse_json_object(text, expect_key="labels")["labels"]
    entries: list[tuple[Any, Any]]
    if isinstance(raw, dict):
        entries = list(raw.items())
    elif isinstance(raw, list):
        entries = [
            (item.get("n", position), item.get("label")) if isinstance(item, dict) else (position, item)
            for position, item in enumerate(raw, start=1)
        ]
    else:
        raise ParseError(f"'labels' is a {type(raw).__name__}, not a map or a list")
    labels: dict[int, str] = {}
    for position, (number, value) in enumerate(entries, start=1):
        try:
            number = int(number)
        except (TypeError, ValueError):
            number = position
        label = " ".join(str(value or "").lower().split())
        if 1 <= number <= count and number not in labels:
            labels[number] = label
    unknown = sorted(n for n, label in labels.items() if label not in SPAN_LABELS)
    if unknown:
        shown = ", ".join(f"{n}: {labels[n]!r}" for n in unknown[:5])
        raise ParseError(f"the reply gives {len(unknown)} sentence(s) no known label ({shown})")
    missing = [n for n in range(1, count + 1) if n not in labels]
    if missing:
        shown = ", ".join(map(str, missing[:8])) + (" ..." if len(missing) > 8 else "")
        raise ParseError(f"the reply labels {count - len(missing)} of {count} sentences; missing: {shown}")
    return [labels[n] for n in range(1, count + 1)]


def span_calls(
    sections: Sequence[tuple[Section, Sequence[tuple[int, int]]]],
    *,
    domain: str,
    task_input: str = DEFAULT_TASK_INPUT,
    texts: dict[str, str],
) -> list[Call[list[str]]]:
    """One phase-1 call per section, given with its sentences (document offsets)."""
    calls: list[Call[list[str]]] = []
    for section, sentences in sections:
        text = texts[section.document_id]
        messages = span_detection_messages(
            domain=domain, title=section.title, sentences=[text[a:b] for a, b in sentences], task_input=task_input
        )
        count = len(sentences)
        calls.append(Call(1, section.section_id, messages, functools.partial(parse_labels, count=count)))
    return calls


def spans_from_labels(
    section: Section, sentences: Sequence[tuple[int, int]], labels: Sequence[str], *, notes: list[str]
) -> list[tuple[int, int, str, str]]:
    """Group labelled sentences into spans.

    A normative sentence starts a span; each ``continuation`` right after it
    extends the span; background ends it. An unknown label is reported and
    treated as background.

    Returns:
        ``(start, end, normative_type, context_summary)`` per span, with document
        offsets, in document order.
    """
    spans: list[list[Any]] = []
    previous_in_span = False
    for number, ((start, end), label) in enumerate(zip(sentences, labels, strict=True), start=1):
        if label in NORMATIVE_TYPES:
            spans.append([start, end, label, section.title])
            previous_in_span = True
        elif label == "continuation" and previous_in_span:
            spans[-1][1] = end
        elif label == "continuation":
            notes.append(f"{section.section_id}: sentence {number} continues no rule; left out")
        else:
            if label not in SPAN_LABELS:
                notes.append(f"{section.section_id}: sentence {number} has unknown label {label!r}; left out")
            previous_in_span = False
    return [(s, e, kind, summary) for s, e, kind, summary in spans]


def paragraph_spans(section: Section) -> list[tuple[int, int, str, str]]:
    """Phase 1 switched off: every paragraph of the section is a span."""
    return [(start, start + len(text), "unspecified", "") for start, text in split_paragraphs(section)]
