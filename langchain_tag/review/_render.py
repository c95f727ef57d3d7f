"""The review's one entry: read the rules and the files beside them, write the page."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from langchain_tag.ranges import THRESHOLD
from langchain_tag.review._files import (
    ReviewError,
    check_judged_rules,
    check_rule_ids,
    read_gold,
    read_report,
    read_source,
    read_verdicts,
)
from langchain_tag.review._html import render_html
from langchain_tag.review._page import build_page
from langchain_tag.rules import Rule, RuleFileError, check_unique_rule_ids, load_rules
from langchain_tag.scale.inputs import InputItem, read_inputs

__all__ = ["render_review"]


def render_review(
    rules: str | Path | Sequence[Rule],
    source: str | Path,
    output: str | Path,
    *,
    report: str | Path | None = None,
    verdicts: str | Path | None = None,
    inputs: str | Path | Sequence[InputItem] | None = None,
    gold: str | Path | None = None,
    threshold: float | None = None,
    title: str | None = None,
    cut_at: int = 2000,
) -> Path:
    """Write a self-contained HTML page showing the rules over their source, and how they matched.

    The page shows the source document with each rule's verbatim span
    highlighted and linked both ways with the rule's card; a span the document
    no longer holds is listed as unaligned. With an extraction ``report``, the
    sentences it found normative but no rule covers are marked. With
    ``verdicts`` (what ``langchain-tag match --inputs ... -o`` writes; with
    ``--all-pairs`` for full score distributions), each rule's match count,
    score distribution (counts on a log scale) with the threshold drawn, the inputs nearest the
    threshold and its failed judgments, and each input's matched rules. With
    ``gold``, precision, recall and F1 per rule and overall, and the threshold
    that would maximise F1 there, as a suggestion.

    The page needs no network and reads without JavaScript. Inputs longer
    than ``cut_at`` characters are cut in the page; their full text goes to
    ``<output stem>_files/`` beside it, linked from the page.

    Args:
        rules: A rule file (JSONL) or the rules themselves.
        source: The source document the rules were extracted from.
        output: Where to write the page.
        report: The extraction report (``langchain-tag extract --report``).
        verdicts: The bulk job's verdicts file (JSONL).
        inputs: The inputs file the verdicts were made on (or its items), to show the inputs' text.
        gold: A gold file: ``{"id": input id, "rule_ids": [...]}`` per line (needs ``verdicts``).
        threshold: The threshold the verdicts were made at; ``None`` draws the lowest matched score.
        title: The page's title.
        cut_at: Inputs longer than this many characters are cut in the page.

    Returns:
        The page's path.

    Raises:
        ReviewError: On a file that cannot be used (naming it and the line), verdicts or a gold made for other
            rules, or verdicts made for rules whose condition changed since (naming both files and those rules;
            verdicts that do not say which rules they judged are shown, marked unverified), a gold without
            verdicts, or a threshold outside [0, 1] (:data:`~langchain_tag.ranges.THRESHOLD`'s message).
        RuleFileError: On a bad rule file.
        MissingExtraError: When the ``review`` extra (Jinja2) is not installed.
    """
    if gold is not None and verdicts is None:
        raise ReviewError("a gold file is scored against verdicts: give the verdicts file too")
    try:
        THRESHOLD.check_optional(threshold)
    except ValueError as exc:
        raise ReviewError(str(exc)) from None
    if cut_at < 1:
        raise ReviewError(f"cut_at must be at least 1, got {cut_at}")
    if isinstance(rules, (str, Path)):
        rules_path = Path(rules)
        rule_list = load_rules(rules_path)
    else:
        rules_path, rule_list = Path("the given rules"), list(rules)
    rule_ids = [r.rule_id for r in rule_list]
    try:
        check_unique_rule_ids(rule_ids, where=str(rules_path))  # a rule file's were checked as it was read
    except RuleFileError as exc:
        raise ReviewError(str(exc)) from None
    source_path = Path(source)
    output = Path(output)
    records = None
    unverified = None
    if verdicts is not None:
        records = read_verdicts(verdicts)
        check_rule_ids(records, rule_ids, verdicts=Path(verdicts), rules=rules_path)
        unverified = check_judged_rules(records, rule_list, verdicts=Path(verdicts), rules_path=rules_path)
    texts = None
    if inputs is not None:
        items = read_inputs(inputs) if isinstance(inputs, (str, Path)) else list(inputs)
        texts = {item.id: item.text for item in items}
    full_text_dir = f"{output.stem}_files"
    page = build_page(
        rules=rule_list,
        source=read_source(source_path),
        source_name=source_path.name,
        rules_name=str(rules_path),
        report=read_report(report) if report is not None else None,
        records=records,
        verdicts_name=str(verdicts or ""),
        texts=texts,
        gold=read_gold(gold, rule_ids, rules=rules_path) if gold is not None else None,
        gold_name=str(gold or ""),
        threshold=threshold,
        title=title,
        cut_at=cut_at,
        full_text_dir=full_text_dir,
    )
    if unverified is not None:
        page.context["notes"].append(unverified)
    html = render_html(page.context)
    output.parent.mkdir(parents=True, exist_ok=True)
    for full in page.full_texts:
        target = output.parent / full.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(full.text, encoding="utf-8")
    partial = output.with_name(f".{output.name}.partial")
    partial.write_text(html, encoding="utf-8")
    os.replace(partial, output)
    return output
