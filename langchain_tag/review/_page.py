"""The review page's content: everything the template shows, worked out from the rules and the files beside them.

Nothing here writes HTML; :mod:`langchain_tag.review._html` renders what
:func:`build_page` returns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from langchain_tag.extraction._normativity import looks_declarative, normative_cue
from langchain_tag.review._files import ReportView, VerdictRecord
from langchain_tag.review._gold import GoldDiff, score_gold
from langchain_tag.review._spans import Piece, Placement, cut_document, place
from langchain_tag.review._verdicts import VerdictSummary, summarize_verdicts
from langchain_tag.rules import Rule

__all__ = ["FullText", "Page", "anchors_for", "build_page"]

SNIPPET = 90
"""Characters of an input shown beside a rule (nearest the threshold)."""

LINKED_LISTS = 2000
"""Most rule ids the inputs' lists (matched, missed, wrongly matched) show as plain links; over it they are written
compactly (the id alone), and the page's script links them, so a large corpus's page stays small."""

_SAFE_ANCHOR = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def anchors_for(ids: Sequence[str], prefix: str) -> list[str]:
    """A unique, URL-safe anchor per id, in order: the id itself when plain and new, else ``prefix`` + position.

    >>> anchors_for(["R-001", "a b", "R-001x", "R-001"], "r")
    ['R-001', 'r2', 'R-001x', 'r4']
    """
    anchors: list[str] = []
    used: set[str] = set()
    for position, item in enumerate(ids, start=1):
        anchor = item if _SAFE_ANCHOR.fullmatch(item) and item not in used else f"{prefix}{position}"
        while anchor in used:
            anchor += "_"
        anchors.append(anchor)
        used.add(anchor)
    return anchors


def deontic_note(text: str) -> str:
    """What makes a rule's source text a norm: its first modal or deontic word, else how it reads.

    >>> deontic_note("Never write a bare except.")
    'deontic word: “Never”'
    >>> deontic_note("Put each import on its own line.")
    'no modal word: an imperative'
    """
    if not text.strip():
        return "no source text"
    cue = normative_cue(text)
    if cue is not None:
        return f"deontic word: “{cue}”"
    if looks_declarative(text):
        return "no modal or deontic word, and reads as a statement of fact: check it states a norm"
    return "no modal word: an imperative"


@dataclass(frozen=True)
class FullText:
    """An input cut in the page: its full text goes to a file of its own, linked from the page."""

    name: str
    text: str


@dataclass
class Page:
    """What the template renders.

    Attributes:
        context: The template's variables.
        full_texts: The inputs too long to show whole, each to be written beside the page.
    """

    context: dict[str, Any]
    full_texts: list[FullText] = field(default_factory=list)


def _rule_card(rule: Rule, anchor: str, placement: Placement, report: ReportView | None) -> dict[str, Any]:
    merged_here = sorted(
        set(rule.merged_from) | {k for k, v in (report.merged if report else {}).items() if v == rule.rule_id}
    )
    conflicts = sorted(set(rule.conflicts_with) | set(report.conflicts.get(rule.rule_id, []) if report else []))
    reviews = sorted(set(report.reviews.get(rule.rule_id, [])) if report else set())
    extras = {k: v for k, v in (rule.model_extra or {}).items() if v not in (None, "", [], {})}
    return {
        "id": rule.rule_id,
        "anchor": anchor,
        "name": rule.rule_name,
        "condition": rule.condition,
        "action": rule.action,
        "tags": rule.category_tags,
        "source_text": rule.source_text,
        "how": placement.how,
        "score": placement.score,
        "faithfulness": rule.faithfulness,
        "merged_from": merged_here,
        "conflicts": conflicts,
        "related": rule.related_rules,
        "reviews": reviews,
        "deontic": deontic_note(rule.source_text),
        "extras": extras,
        "verdicts": None,
    }


def _pieces(pieces: Sequence[Piece], names: Mapping[str, Rule]) -> list[dict[str, Any]]:
    return [
        {
            "text": p.text,
            "rules": p.rules,
            "uncovered": p.uncovered,
            "starts": [(a, names[a].rule_id, names[a].rule_name) for a in p.starts],
            "uncovered_starts": p.uncovered_starts,
        }
        for p in pieces
    ]


def _snippet(text: str | None) -> str:
    if text is None:
        return ""
    line = " ".join(text.split())
    return line if len(line) <= SNIPPET else line[: SNIPPET - 1] + "…"


def build_page(
    *,
    rules: Sequence[Rule],
    source: str,
    source_name: str,
    rules_name: str,
    report: ReportView | None = None,
    records: Sequence[VerdictRecord] | None = None,
    verdicts_name: str = "",
    texts: Mapping[str, str] | None = None,
    gold: Mapping[str, set[str]] | None = None,
    gold_name: str = "",
    threshold: float | None = None,
    title: str | None = None,
    cut_at: int = 2000,
    full_text_dir: str = "",
) -> Page:
    """Work out the page's content.

    Args:
        rules: The rules, in file order.
        source: The source document's text.
        source_name: Its file name, as the page names it.
        rules_name: The rule file's name.
        report: The extraction report, if given.
        records: The verdicts file's records, if given (already checked against the rules).
        verdicts_name: The verdicts file's name.
        texts: Input id -> its text, when an inputs file was given.
        gold: Input id -> the rule ids that should match it, if given.
        gold_name: The gold file's name.
        threshold: The configured threshold (``None``: inferred from the verdicts).
        title: The page's title.
        cut_at: Inputs longer than this many characters are cut, their full text linked.
        full_text_dir: The directory (relative to the page) the cut inputs' full texts go to.
    """
    rule_anchors = dict(zip((r.rule_id for r in rules), anchors_for([r.rule_id for r in rules], "rule"), strict=True))
    by_anchor = {rule_anchors[r.rule_id]: r for r in rules}
    placements = {
        r.rule_id: place(rule_anchors[r.rule_id], r.source_text, source, start=r.source_start, end=r.source_end)
        for r in rules
    }
    uncovered_rows: list[dict[str, Any]] = []
    uncovered_places: list[Placement] = []
    if report is not None:
        names = {source_name, Path(source_name).name}
        spans = [u for u in report.uncovered if not u.document_id or u.document_id in names] or report.uncovered
        for item, anchor in zip(spans, anchors_for([u.span_id for u in spans], "span"), strict=True):
            placed = place(f"uncovered-{anchor}", item.text, source, start=item.start, end=item.end)
            uncovered_places.append(placed)
            uncovered_rows.append(
                {
                    "anchor": placed.key,
                    "id": item.span_id,
                    "text": item.text,
                    "type": item.normative_type,
                    "placed": placed.placed,
                }
            )
    pieces = cut_document(source, list(placements.values()), uncovered_places)
    cards = [_rule_card(r, rule_anchors[r.rule_id], placements[r.rule_id], report) for r in rules]
    context: dict[str, Any] = {
        "title": title or f"Review of {Path(rules_name).name}",
        "source_name": source_name,
        "rules_name": rules_name,
        "pieces": _pieces(pieces, by_anchor),
        "cards": cards,
        "unaligned": [c for c in cards if c["how"] == "unaligned"],
        "without_span": [c for c in cards if c["how"] == "none"],
        "uncovered": uncovered_rows,
        "report": report.summary if report else None,
        "with_span": sum(1 for p in placements.values() if p.placed),
        "verdicts": None,
        "gold": None,
        "notes": [],
    }
    page = Page(context)
    if records is not None:
        summary = summarize_verdicts(records, [r.rule_id for r in rules], threshold)
        scores = score_gold(records, gold, [r.rule_id for r in rules], summary.threshold) if gold is not None else None
        if scores is not None:
            context["gold"] = {
                "name": gold_name,
                "scores": scores,
                "better": scores.better_threshold,
                "rows": [(rule_anchors[r.rule_id], r.rule_id, r.rule_name, scores.per_rule[r.rule_id]) for r in rules],
            }
        suggested = scores.best_threshold if scores is not None and scores.better_threshold else None
        diffs = scores.per_input if scores is not None else None
        _add_verdicts(
            page, records, summary, rule_anchors, verdicts_name, texts, diffs, suggested, cut_at, full_text_dir
        )
    return page


def _add_verdicts(
    page: Page,
    records: Sequence[VerdictRecord],
    summary: VerdictSummary,
    rule_anchors: Mapping[str, str],
    verdicts_name: str,
    texts: Mapping[str, str] | None,
    diffs: Mapping[str, GoldDiff] | None,
    suggested: float | None,
    cut_at: int,
    full_text_dir: str,
) -> None:
    from langchain_tag.review._plots import PLOT_DEFS, score_histogram

    context = page.context
    listed = sum(len(v.matched) for v in summary.inputs) + sum(
        len(d.missed) + len(d.wrong) for d in (diffs or {}).values()
    )
    input_anchors = dict(zip((r.id for r in records), anchors_for([r.id for r in records], "input"), strict=True))
    inputs: list[dict[str, Any]] = []
    for index, view in enumerate(summary.inputs):
        text = texts.get(view.id) if texts is not None else None
        row: dict[str, Any] = {
            "id": view.id,
            "anchor": f"input-{input_anchors[view.id]}",
            "text": text,
            "length": len(text) if text is not None else None,
            "full": None,
            "matched": [(rule_anchors[r], r, s) for r, s in view.matched],
            "failed": [(rule_anchors[r], r, e) for r, e in view.failed],
            "error": view.error,
            "gold": None,
        }
        diff = diffs.get(view.id) if diffs is not None else None
        if diff is not None:
            row["gold"] = {
                "missed": [(rule_anchors[r], r) for r in diff.missed],
                "wrong": [(rule_anchors[r], r) for r in diff.wrong],
            }
        if text is not None and len(text) > cut_at:
            name = f"{full_text_dir}/input-{index + 1:05d}.txt"
            page.full_texts.append(FullText(name, text))
            row["text"], row["full"] = text[:cut_at], quote(name)
        inputs.append(row)

    def near(items: Sequence[tuple[float, int]]) -> list[dict[str, Any]]:
        return [
            {
                "score": s,
                "id": inputs[i]["id"],
                "anchor": inputs[i]["anchor"],
                "snippet": _snippet(texts.get(inputs[i]["id"]) if texts else None),
            }
            for s, i in items
        ]

    matched_ids = {(r.id, p.rule_id) for r in records for p in r.matched}
    for card in context["cards"]:
        rv = summary.rules[card["id"]]
        scores = [(s, (records[i].id, card["id"]) in matched_ids) for s, i in rv.scores]
        card["verdicts"] = {
            "matched": rv.matched,
            "judged": rv.judged,
            "plot": score_histogram(scores, threshold=summary.threshold, prefix=f"plot-{card['anchor']}")
            if scores
            else None,
            "above": near(rv.above),
            "below": near(rv.below),
            "failed": [(inputs[i]["anchor"], inputs[i]["id"], e) for i, e in rv.failed],
        }
    all_scores = [
        (s, (records[i].id, rule_id) in matched_ids) for rule_id, rv in summary.rules.items() for s, i in rv.scores
    ]
    context["verdicts"] = {
        "name": verdicts_name,
        "summary": summary,
        "inputs": inputs,
        "with_texts": texts is not None,
        "threshold": summary.threshold,
        "inferred": summary.inferred,
        "all_pairs": summary.all_pairs,
        "failed": summary.failed,
        "matched": sum(len(v.matched) for v in summary.inputs),
        "plot": score_histogram(
            all_scores, threshold=summary.threshold, suggested=suggested, prefix="plot-all", wide=True
        )
        if all_scores
        else None,
        "cut_at": cut_at,
        "compact": listed > LINKED_LISTS,
        "plot_defs": PLOT_DEFS if any(card["verdicts"]["plot"] for card in context["cards"]) else "",
    }
    notes: list[str] = context["notes"]
    if summary.inferred:
        notes.append(
            f"no threshold was given: the line is drawn at the lowest matched score ({summary.threshold:.3f}); "
            "pass the threshold the job ran with (--threshold) to draw that one"
        )
    if summary.threshold is None:
        notes.append("the verdicts hold no scores (a judge without logprobs): no distribution to draw")
    if not summary.all_pairs:
        notes.append(
            "the verdicts hold the matched pairs' scores only (the job ran without --all-pairs): the distributions "
            "show the matched side, and no input below the threshold can be named"
        )
    if summary.disagreeing:
        notes.append(
            f"{summary.disagreeing} judgments in {verdicts_name} were decided otherwise than this threshold "
            "would decide them: they were made at another threshold"
        )
    if texts is not None:
        missing = sum(1 for row in inputs if row["text"] is None)
        if missing:
            notes.append(f"{missing} inputs of {verdicts_name} are not in the inputs file: shown by id only")
