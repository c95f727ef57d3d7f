"""The five extraction phases, written once as a generator of call batches.

:class:`ExtractionPipeline` yields each phase's LLM calls and receives their
parsed replies; :class:`~langchain_tag.extraction.transformer.RuleDocumentTransformer`
drives it with blocking batches (``extract``) or async ones (``aextract``), so
the sync and async paths cannot drift apart. The phases' own logic lives in
their modules (``span_detection``, ``decomposition``, ``operationalisation``,
``dedup``, ``verification``); this module sequences them.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any, Protocol

from langchain_core.documents import Document

from langchain_tag.extraction._calls import Call, PhaseCalls
from langchain_tag.extraction._decomposition import (
    AtomicUnit,
    collect_units,
    decomposition_calls,
    may_need_split,
    unsplit_unit,
)
from langchain_tag.extraction._dedup import apply_relations, collect_relations, dedup_calls, tag_groups
from langchain_tag.extraction._normativity import veto_uncued_labels
from langchain_tag.extraction._operationalisation import (
    RuleDraft,
    collect_rules,
    operationalisation_calls,
    reads_as_instruction,
    unoperationalised_draft,
)
from langchain_tag.extraction._sections import Section, split_sections, split_sentences
from langchain_tag.extraction._span_detection import (
    NORMATIVE_TYPES,
    Span,
    paragraph_spans,
    span_calls,
    spans_from_labels,
)
from langchain_tag.extraction._verification import (
    independence_ratio,
    uncovered_spans,
    verify_faithfulness,
)
from langchain_tag.extraction.report import ExtractionReport, ExtractionResult
from langchain_tag.rules import Rule


class ExtractionSettings(Protocol):
    """The settings one extraction run reads.

    A :class:`~langchain_tag.extraction.transformer.RuleDocumentTransformer` has them all.
    """

    domain: str
    task_input: str
    skip_phases: tuple[int, ...]
    max_section_chars: int
    min_section_chars: int
    spans_per_call: int
    units_per_call: int
    extra_fields: dict[str, str]
    rule_id_prefix: str | None
    faithfulness_threshold: float
    coverage_threshold: float
    check_normativity: bool


__all__ = ["ExtractionPipeline", "ExtractionSettings"]

_Step = Generator[tuple[list[Call[Any]], str], list[Any], Any]


def _batches(items: Sequence[Any], size: int) -> list[list[Any]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def _texts(documents: Sequence[Document]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for index, doc in enumerate(documents, start=1):
        base = str(doc.id or doc.metadata.get("source") or f"doc-{index}")
        doc_id = base if base not in texts else f"{base}#{index}"
        if not isinstance(doc.page_content, str) or not doc.page_content.strip():
            raise ValueError(f"document {doc_id!r} is empty: nothing to extract rules from")
        if "\x00" in doc.page_content:
            raise ValueError(f"document {doc_id!r} contains NUL bytes: is it a binary file loaded as text?")
        texts[doc_id] = doc.page_content
    return texts


def _note_instructions(units: list[AtomicUnit], found: dict[str, RuleDraft], notes: list[str]) -> None:
    """Name each rule whose condition restates its statement's instruction: one to check by hand."""
    for unit in units:
        condition = str(found.get(unit.atomic_id, {}).get("condition", ""))
        if reads_as_instruction(condition):
            notes.append(
                f"phase 3: {unit.atomic_id}'s condition {condition!r} restates its statement's instruction "
                "instead of describing an input that breaks it; check its polarity"
            )


def _ranges(kept: list[Rule], absorbed: list[Rule], merged: dict[str, str]) -> dict[str, list[tuple[int, int]]]:
    alive = {r.rule_id for r in kept}
    ranges: dict[str, list[tuple[int, int]]] = {}
    for rule in kept + [r for r in absorbed if merged.get(r.rule_id) in alive]:
        if rule.document_id and rule.source_start is not None and rule.source_end is not None:
            ranges.setdefault(rule.document_id, []).append((rule.source_start, rule.source_end))
    return ranges


class ExtractionPipeline:
    """One extraction run over some documents, with a transformer's settings.

    Args:
        options: The transformer whose settings (domain, batch sizes, phases to skip, thresholds) apply.
    """

    def __init__(self, options: ExtractionSettings) -> None:
        self.options = options

    def run(self, documents: Sequence[Document], runner: PhaseCalls) -> _Step:
        """The whole extraction: yields each phase's calls, receives their parsed replies, returns the result."""
        texts = _texts(documents)
        notes: list[str] = []
        sections = [
            s
            for doc_id, text in texts.items()
            for s in split_sections(
                text,
                document_id=doc_id,
                max_chars=self.options.max_section_chars,
                min_chars=self.options.min_section_chars,
            )
        ]
        for doc_id in texts.keys() - {s.document_id for s in sections}:
            notes.append(f"{doc_id}: no section with text to read (headings only?); no rules from it")
        spans = yield from self._phase1(sections, texts, notes)
        units = yield from self._phase2(spans, notes)
        span_by_id = {s.span_id: s for s in spans}
        declined: list[AtomicUnit] = []
        failed_units: set[str] = set()
        drafts = yield from self._phase3(units, span_by_id, notes, declined, failed_units)
        rules = self._number(drafts, span_by_id, start=1)
        # A span whose every unit states no rule is background after all: it needs no coverage.
        declined_ids = {u.atomic_id for u in declined}
        background = {
            s.span_id
            for s in spans
            if all(u.atomic_id in declined_ids for u in units if u.span_id == s.span_id)
            and any(u.span_id == s.span_id for u in units)
        }
        spans = [s for s in spans if s.span_id not in background]
        counts = {
            "documents": len(texts),
            "sections": len(sections),
            "spans": len(spans),
            "units": len(units),
            "units stating no rule": len(declined_ids),
            "rules extracted": len(rules),
        }
        report = ExtractionReport(skipped_phases=self.options.skip_phases, notes=notes)

        merged_away: list[Rule] = []
        if 4 not in self.options.skip_phases:
            outcome = yield from self._phase4(rules, notes)
            merged_away = [r for r in rules if r.rule_id in outcome.merged]
            rules = outcome.rules
            report.merged, report.conflicts, report.reviews = outcome.merged, outcome.conflicts, outcome.reviews
        if 5 not in self.options.skip_phases:
            redo_units = [u for u in units if u.atomic_id not in failed_units]
            rules = yield from self._phase5(rules, merged_away, spans, redo_units, span_by_id, texts, report, notes)
        counts["rules"] = len(rules)
        report.counts = counts
        report.failures = list(runner.failures)
        report.usage = dict(runner.usage)
        return ExtractionResult(rules=rules, report=report, spans=spans, units=units)

    def _phase1(self, sections: list[Section], texts: dict[str, str], notes: list[str]) -> _Step:
        if 1 in self.options.skip_phases:
            located = [paragraph_spans(s) for s in sections]
        else:
            sentences = [split_sentences(s) for s in sections]
            todo = [(s, found) for s, found in zip(sections, sentences, strict=True) if found]
            for section, found in zip(sections, sentences, strict=True):
                if not found:
                    notes.append(f"{section.section_id}: no sentence to read (headings only?); no call made")
            calls = span_calls(todo, domain=self.options.domain, task_input=self.options.task_input, texts=texts)
            replies = iter((yield calls, "phase 1: spans"))
            located = []
            for section, found in zip(sections, sentences, strict=True):
                labels = next(replies) if found else None
                if labels is not None and self.options.check_normativity:
                    text = texts[section.document_id]
                    labels = veto_uncued_labels(
                        [text[a:b] for a, b in found], labels, NORMATIVE_TYPES, where=section.section_id, notes=notes
                    )
                located.append(spans_from_labels(section, found, labels, notes=notes) if labels is not None else [])
        spans: list[Span] = []
        for section, section_spans in zip(sections, located, strict=True):
            for start, end, kind, summary in section_spans:
                text = texts[section.document_id][start:end]
                spans.append(
                    Span(
                        f"S-{len(spans) + 1:03d}",
                        section.document_id,
                        section.section_id,
                        text,
                        kind,
                        summary,
                        start,
                        end,
                    )
                )
        return spans

    def _phase2(self, spans: list[Span], notes: list[str]) -> _Step:
        if 2 in self.options.skip_phases:
            units = [unsplit_unit(s) for s in spans]
        else:
            # A plain single sentence is one unit already: only the others cost a call.
            by_section: dict[str, list[Span]] = {}
            for span in spans:
                if may_need_split(span):
                    by_section.setdefault(span.section_id, []).append(span)
            batches = [b for group in by_section.values() for b in _batches(group, self.options.spans_per_call)]
            raw = yield decomposition_calls(batches, domain=self.options.domain), "phase 2: atomic units"
            split: dict[str, list[AtomicUnit]] = {}
            for batch, reply in zip(batches, raw, strict=True):
                for unit in collect_units(batch, reply, notes=notes):
                    split.setdefault(unit.span_id, []).append(unit)
            units = [u for s in spans for u in split.get(s.span_id, [unsplit_unit(s)])]
        return [
            AtomicUnit(f"A-{i:03d}", u.span_id, u.text, u.original_text, u.was_split, u.split_rationale)
            for i, u in enumerate(units, start=1)
        ]

    def _phase3(
        self,
        units: list[AtomicUnit],
        span_by_id: dict[str, Span],
        notes: list[str],
        declined: list[AtomicUnit] | None = None,
        failed: set[str] | None = None,
    ) -> _Step:
        if 3 in self.options.skip_phases:
            return [(u, unoperationalised_draft(u, span_by_id[u.span_id].normative_type)) for u in units]
        # One pass: a reply that leaves a unit without a rule is a failed call, which the
        # call runner already retried; sending the units again here would multiply retries.
        by_section: dict[str, list[AtomicUnit]] = {}
        for unit in units:
            by_section.setdefault(span_by_id[unit.span_id].section_id, []).append(unit)
        # Batches never mix sections, so editing one section leaves the others' prompts unchanged.
        size = self.options.units_per_call
        batches = [b for group in by_section.values() for b in _batches(group, size)]
        options = self.options
        calls = operationalisation_calls(
            batches, domain=options.domain, task_input=options.task_input, extra_fields=options.extra_fields
        )
        raw = yield calls, "phase 3: rules"
        found: dict[str, RuleDraft] = {}
        for batch, reply in zip(batches, raw, strict=True):
            got, missing = collect_rules(
                batch, reply, notes=notes, extra_fields=tuple(self.options.extra_fields), declined=declined
            )
            found.update({u.atomic_id: d for u, d in got})
            for unit in missing:
                notes.append(f"phase 3: no rule for {unit.atomic_id} (span {unit.span_id}): its call failed")
                if reply is None and failed is not None:
                    failed.add(unit.atomic_id)
        _note_instructions(units, found, notes)
        return [(u, found[u.atomic_id]) for u in units if u.atomic_id in found]

    def _prefix(self, document_id: str) -> str:
        """The rule id prefix: the one given, else one from the source document's id."""
        if self.options.rule_id_prefix is not None:
            return self.options.rule_id_prefix
        slug = re.sub(r"[^0-9A-Za-z]+", "-", Path(document_id).stem or document_id).strip("-").upper()
        return slug or "R"

    def _number(
        self, drafts: list[tuple[AtomicUnit, RuleDraft]], span_by_id: dict[str, Span], *, start: int
    ) -> list[Rule]:
        rules = []
        for offset, (unit, draft) in enumerate(drafts):
            span = span_by_id[unit.span_id]
            rules.append(
                Rule(
                    rule_id=f"{self._prefix(span.document_id)}-{start + offset:03d}",
                    document_id=span.document_id,
                    span_id=span.span_id,
                    atomic_id=unit.atomic_id,
                    **draft,
                )
            )
        return rules

    def _phase4(self, rules: list[Rule], notes: list[str]) -> _Step:
        groups = tag_groups(rules)
        raw = yield dedup_calls(groups, domain=self.options.domain), "phase 4: dedup"
        relations = [rel for g, r in zip(groups, raw, strict=True) for rel in collect_relations(g, r, notes=notes)]
        outcome = apply_relations(rules, relations)
        for rel, why in outcome.refused:
            notes.append(f"phase 4: {rel.rule_a} and {rel.rule_b} were labelled {rel.relation}; kept both: {why}")
        return outcome

    def _phase5(
        self,
        rules: list[Rule],
        merged_away: list[Rule],
        spans: list[Span],
        units: list[AtomicUnit],
        span_by_id: dict[str, Span],
        texts: dict[str, str],
        report: ExtractionReport,
        notes: list[str],
    ) -> _Step:
        threshold = self.options.faithfulness_threshold
        anchors = {s.span_id: s.start for s in spans}
        kept, dropped = verify_faithfulness(rules, texts, threshold=threshold, anchors=anchors)
        checked = len(rules)
        absorbed, _ = verify_faithfulness(merged_away, texts, threshold=threshold, anchors=anchors)
        missing = uncovered_spans(
            spans, _ranges(kept, absorbed, report.merged), min_overlap=self.options.coverage_threshold
        )
        if missing and 3 not in self.options.skip_phases:
            redo_ids = {s.span_id for s in missing}
            redo = [u for u in units if u.span_id in redo_ids]
            drafts = yield from self._phase3(redo, span_by_id, notes)
            next_id = 1 + max((int(r.rule_id.rsplit("-", 1)[-1]) for r in rules + merged_away), default=0)
            extra = self._number(drafts, span_by_id, start=next_id)
            extra_kept, extra_dropped = verify_faithfulness(extra, texts, threshold=threshold, anchors=anchors)
            kept, dropped, checked = kept + extra_kept, dropped + extra_dropped, checked + len(extra)
            missing = uncovered_spans(
                spans, _ranges(kept, absorbed, report.merged), min_overlap=self.options.coverage_threshold
            )
        report.faithfulness = (len(kept) / checked) if checked else 1.0
        report.coverage = (1 - len(missing) / len(spans)) if spans else 1.0
        report.independence = independence_ratio(kept)
        report.dropped_rules = dropped
        report.uncovered_spans = missing
        return kept
