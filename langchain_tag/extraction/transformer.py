"""``RuleDocumentTransformer``: loaded documents -> rule documents, via five phases.

The pipeline is written once as a generator that yields batches of LLM calls
and receives their parsed results; :meth:`RuleDocumentTransformer.extract`
drives it with blocking batches and :meth:`RuleDocumentTransformer.aextract`
with async ones, so the sync and async paths cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentTransformer, Document
from langchain_core.language_models import BaseChatModel
from typing_extensions import override

from langchain_tag.extraction.calls import Call, CallRunner
from langchain_tag.extraction.decomposition import (
    AtomicUnit,
    collect_units,
    decomposition_calls,
    may_need_split,
    unsplit_unit,
)
from langchain_tag.extraction.dedup import apply_relations, collect_relations, dedup_calls, tag_groups
from langchain_tag.extraction.normativity import veto_uncued_labels
from langchain_tag.extraction.operationalisation import (
    RuleDraft,
    collect_rules,
    operationalisation_calls,
    reads_as_instruction,
    unoperationalised_draft,
)
from langchain_tag.extraction.report import ExtractionReport, ExtractionResult
from langchain_tag.extraction.sections import Section, split_sections, split_sentences
from langchain_tag.extraction.span_detection import (
    NORMATIVE_TYPES,
    Span,
    paragraph_spans,
    span_calls,
    spans_from_labels,
)
from langchain_tag.extraction.store import ExtractionStore, open_store
from langchain_tag.extraction.verification import (
    independence_ratio,
    uncovered_spans,
    verify_faithfulness,
)
from langchain_tag.prompts import DEFAULT_TASK_INPUT
from langchain_tag.rules import Rule

__all__ = ["RuleDocumentTransformer"]

PHASES = (1, 2, 3, 4, 5)
_Step = Generator[tuple[list[Call[Any]], str], list[Any], Any]


def _batches(items: Sequence[Any], size: int) -> list[list[Any]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


class RuleDocumentTransformer(BaseDocumentTransformer):
    """Turn loaded documents into atomic condition -> action rule documents.

    Phases: (1) normative span detection per section, (2) atomic decomposition,
    (3) operationalisation into rules, (4) deduplication and conflict flagging
    among tag-sharing rules, (5) programmatic verification (faithfulness,
    coverage with one re-extraction pass, independence). Any phase can be
    switched off for ablations.

    Args:
        llm: The extraction chat model (temperature 0 recommended).
        domain: Domain name given to every prompt, e.g. ``"PEP 8"``.
        task_input: What the rules will be applied to, e.g. ``"a Python
            function"`` or ``"one sentence of a Wikipedia article"``; phase 3
            writes conditions and actions about it.
        max_concurrency: Most LLM calls in flight.
        skip_phases: Phases to switch off, e.g. ``{3}``.
        max_section_chars: Longest section sent to phase 1.
        min_section_chars: Shorter headed sections are joined with the next
            (fewer calls on documents with many tiny sections; small local
            models do better with one heading's text at a time, the default).
        spans_per_call: Spans sent in one phase-2 call (same section only).
        units_per_call: Atomic units sent in one phase-3 call; 1 gives small
            local models one statement at a time.
        extra_fields: Extra rule fields phase 3 asks for (a domain schema),
            as name -> what the field holds; kept on each rule as extra fields.
        rule_id_prefix: Rule ids are ``f"{prefix}-{n:03d}"``; ``None`` takes
            each rule's prefix from its source document's id (``"pep-0008.rst"``
            gives ``"PEP-0008-001"``), so rule sets extracted from different
            sources merge without colliding ids.
        faithfulness_threshold: Fuzzy ratio a source must exceed (0.85).
        coverage_threshold: Share of a span that rule sources must cover (0.5).
        max_attempts: Attempts per LLM call before it is reported as failed.
        show_progress: Progress bars: ``None`` shows them only on a terminal.
        callbacks: LangChain callbacks passed to every call.
        store: Where finished calls are kept so an interrupted run resumes
            (:class:`~langchain_tag.extraction.store.ExtractionStore` or the
            path of its SQLite file); ``None`` keeps nothing. A rerun with the
            same store redoes no finished call and gives the same rules, and
            after editing one section only that section's calls are made
            again (plus the phase-4 calls of the tag groups its rules join).
        retry_backoff: Base delay (seconds, exponential, with jitter) before
            resending requests that raised, when the model's own client does
            not retry them (see :mod:`langchain_tag.faults`).
        check_normativity: After phase 1, read as background every sentence
            labelled normative that has no modal, deontic or imperative
            wording and reads as a statement of fact, captions examples, or
            describes the document itself (its scope, layout or status)
            (:mod:`langchain_tag.extraction.normativity`); each such veto is
            noted in the report.

    After :meth:`transform_documents`, ``last_result`` holds the full
    :class:`~langchain_tag.extraction.report.ExtractionResult` (rules, report,
    spans, units).
    """

    def __init__(
        self,
        llm: BaseChatModel,
        *,
        domain: str = "general policy",
        task_input: str | None = None,
        max_concurrency: int = 4,
        skip_phases: Iterable[int] = (),
        max_section_chars: int = 6000,
        min_section_chars: int = 0,
        spans_per_call: int = 8,
        units_per_call: int = 4,
        extra_fields: Mapping[str, str] | None = None,
        rule_id_prefix: str | None = "R",
        faithfulness_threshold: float = 0.85,
        coverage_threshold: float = 0.5,
        max_attempts: int = 2,
        show_progress: bool | None = None,
        callbacks: Callbacks = None,
        store: ExtractionStore | str | Path | None = None,
        retry_backoff: float = 1.0,
        check_normativity: bool = True,
    ) -> None:
        skip = tuple(sorted(set(skip_phases)))
        unknown = [p for p in skip if p not in PHASES]
        if unknown:
            raise ValueError(f"unknown phase(s) {unknown}; phases are 1-5")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.llm = llm
        self.domain = domain
        self.task_input = task_input or DEFAULT_TASK_INPUT
        self.max_concurrency = max_concurrency
        self.skip_phases = skip
        self.max_section_chars = max_section_chars
        self.min_section_chars = min_section_chars
        if spans_per_call < 1 or units_per_call < 1:
            raise ValueError("spans_per_call and units_per_call must be >= 1")
        self.spans_per_call = spans_per_call
        self.units_per_call = units_per_call
        self.extra_fields = dict(extra_fields or {})
        self.rule_id_prefix = rule_id_prefix
        self.faithfulness_threshold = faithfulness_threshold
        self.coverage_threshold = coverage_threshold
        self.max_attempts = max_attempts
        self.show_progress = show_progress
        self.callbacks = callbacks
        self.store = open_store(store)
        self.retry_backoff = retry_backoff
        self.check_normativity = check_normativity
        self.last_result: ExtractionResult | None = None

    # ------------------------------------------------------------------ API
    def extract(self, documents: Sequence[Document]) -> ExtractionResult:
        """Run the five phases and return rules with their report."""
        runner = self._runner()
        pipeline = self._pipeline(documents, runner)
        try:
            calls, desc = next(pipeline)
            while True:
                calls, desc = pipeline.send(runner.run(calls, desc))
        except StopIteration as stop:
            result: ExtractionResult = stop.value
        self.last_result = result
        return result

    async def aextract(self, documents: Sequence[Document]) -> ExtractionResult:
        """Async twin of :meth:`extract`."""
        runner = self._runner()
        pipeline = self._pipeline(documents, runner)
        try:
            calls, desc = next(pipeline)
            while True:
                calls, desc = pipeline.send(await runner.arun(calls, desc))
        except StopIteration as stop:
            result: ExtractionResult = stop.value
        self.last_result = result
        return result

    @override
    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        """Extract rules; return them as rule documents (report in ``last_result``)."""
        return self.extract(documents).documents()

    @override
    async def atransform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        """Async twin of :meth:`transform_documents`."""
        return (await self.aextract(documents)).documents()

    # ------------------------------------------------------------------ pipeline
    def _runner(self) -> CallRunner:
        return CallRunner(
            llm=self.llm,
            max_concurrency=self.max_concurrency,
            max_attempts=self.max_attempts,
            show_progress=self.show_progress,
            callbacks=self.callbacks,
            store=self.store,
            retry_backoff=self.retry_backoff,
        )

    @staticmethod
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

    def _pipeline(self, documents: Sequence[Document], runner: CallRunner) -> _Step:
        texts = self._texts(documents)
        notes: list[str] = []
        sections = [
            s
            for doc_id, text in texts.items()
            for s in split_sections(
                text, document_id=doc_id, max_chars=self.max_section_chars, min_chars=self.min_section_chars
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
        report = ExtractionReport(skipped_phases=self.skip_phases, notes=notes)

        merged_away: list[Rule] = []
        if 4 not in self.skip_phases:
            outcome = yield from self._phase4(rules, notes)
            merged_away = [r for r in rules if r.rule_id in outcome.merged]
            rules = outcome.rules
            report.merged, report.conflicts, report.reviews = outcome.merged, outcome.conflicts, outcome.reviews
        if 5 not in self.skip_phases:
            redo_units = [u for u in units if u.atomic_id not in failed_units]
            rules = yield from self._phase5(rules, merged_away, spans, redo_units, span_by_id, texts, report, notes)
        counts["rules"] = len(rules)
        report.counts = counts
        report.failures = list(runner.failures)
        report.usage = dict(runner.usage)
        return ExtractionResult(rules=rules, report=report, spans=spans, units=units)

    def _phase1(self, sections: list[Section], texts: dict[str, str], notes: list[str]) -> _Step:
        if 1 in self.skip_phases:
            located = [paragraph_spans(s) for s in sections]
        else:
            sentences = [split_sentences(s) for s in sections]
            todo = [(s, found) for s, found in zip(sections, sentences, strict=True) if found]
            for section, found in zip(sections, sentences, strict=True):
                if not found:
                    notes.append(f"{section.section_id}: no sentence to read (headings only?); no call made")
            calls = span_calls(todo, domain=self.domain, task_input=self.task_input, texts=texts)
            replies = iter((yield calls, "phase 1: spans"))
            located = []
            for section, found in zip(sections, sentences, strict=True):
                labels = next(replies) if found else None
                if labels is not None and self.check_normativity:
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
        if 2 in self.skip_phases:
            units = [unsplit_unit(s) for s in spans]
        else:
            # A plain single sentence is one unit already: only the others cost a call.
            by_section: dict[str, list[Span]] = {}
            for span in spans:
                if may_need_split(span):
                    by_section.setdefault(span.section_id, []).append(span)
            batches = [b for group in by_section.values() for b in _batches(group, self.spans_per_call)]
            raw = yield decomposition_calls(batches, domain=self.domain), "phase 2: atomic units"
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
        if 3 in self.skip_phases:
            return [(u, unoperationalised_draft(u, span_by_id[u.span_id].normative_type)) for u in units]
        # One pass: a reply that leaves a unit without a rule is a failed call, which the
        # call runner already retried; sending the units again here would multiply retries.
        by_section: dict[str, list[AtomicUnit]] = {}
        for unit in units:
            by_section.setdefault(span_by_id[unit.span_id].section_id, []).append(unit)
        # Batches never mix sections, so editing one section leaves the others' prompts unchanged.
        batches = [b for group in by_section.values() for b in _batches(group, self.units_per_call)]
        calls = operationalisation_calls(
            batches, domain=self.domain, task_input=self.task_input, extra_fields=self.extra_fields
        )
        raw = yield calls, "phase 3: rules"
        found: dict[str, RuleDraft] = {}
        for batch, reply in zip(batches, raw, strict=True):
            got, missing = collect_rules(
                batch, reply, notes=notes, extra_fields=tuple(self.extra_fields), declined=declined
            )
            found.update({u.atomic_id: d for u, d in got})
            for unit in missing:
                notes.append(f"phase 3: no rule for {unit.atomic_id} (span {unit.span_id}): its call failed")
                if reply is None and failed is not None:
                    failed.add(unit.atomic_id)
        self._note_instructions(units, found, notes)
        return [(u, found[u.atomic_id]) for u in units if u.atomic_id in found]

    @staticmethod
    def _note_instructions(units: list[AtomicUnit], found: dict[str, RuleDraft], notes: list[str]) -> None:
        """Name each rule whose condition restates its statement's instruction: one to check by hand."""
        for unit in units:
            condition = str(found.get(unit.atomic_id, {}).get("condition", ""))
            if reads_as_instruction(condition):
                notes.append(
                    f"phase 3: {unit.atomic_id}'s condition {condition!r} restates its statement's instruction "
                    "instead of describing an input that breaks it; check its polarity"
                )

    def _prefix(self, document_id: str) -> str:
        """The rule id prefix: the one given, else one from the source document's id."""
        if self.rule_id_prefix is not None:
            return self.rule_id_prefix
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
        raw = yield dedup_calls(groups, domain=self.domain), "phase 4: dedup"
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
        threshold = self.faithfulness_threshold
        anchors = {s.span_id: s.start for s in spans}
        kept, dropped = verify_faithfulness(rules, texts, threshold=threshold, anchors=anchors)
        checked = len(rules)
        absorbed, _ = verify_faithfulness(merged_away, texts, threshold=threshold, anchors=anchors)
        missing = uncovered_spans(
            spans, self._ranges(kept, absorbed, report.merged), min_overlap=self.coverage_threshold
        )
        if missing and 3 not in self.skip_phases:
            redo_ids = {s.span_id for s in missing}
            redo = [u for u in units if u.span_id in redo_ids]
            drafts = yield from self._phase3(redo, span_by_id, notes)
            next_id = 1 + max((int(r.rule_id.rsplit("-", 1)[-1]) for r in rules + merged_away), default=0)
            extra = self._number(drafts, span_by_id, start=next_id)
            extra_kept, extra_dropped = verify_faithfulness(extra, texts, threshold=threshold, anchors=anchors)
            kept, dropped, checked = kept + extra_kept, dropped + extra_dropped, checked + len(extra)
            missing = uncovered_spans(
                spans, self._ranges(kept, absorbed, report.merged), min_overlap=self.coverage_threshold
            )
        report.faithfulness = (len(kept) / checked) if checked else 1.0
        report.coverage = (1 - len(missing) / len(spans)) if spans else 1.0
        report.independence = independence_ratio(kept)
        report.dropped_rules = dropped
        report.uncovered_spans = missing
        return kept

    @staticmethod
    def _ranges(kept: list[Rule], absorbed: list[Rule], merged: dict[str, str]) -> dict[str, list[tuple[int, int]]]:
        alive = {r.rule_id for r in kept}
        ranges: dict[str, list[tuple[int, int]]] = {}
        for rule in kept + [r for r in absorbed if merged.get(r.rule_id) in alive]:
            if rule.document_id and rule.source_start is not None and rule.source_end is not None:
                ranges.setdefault(rule.document_id, []).append((rule.source_start, rule.source_end))
        return ranges
