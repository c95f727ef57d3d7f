"""``RuleDocumentTransformer``: loaded documents -> rule documents, via five phases.

The five phases are sequenced by :class:`~langchain_tag.extraction._pipeline.ExtractionPipeline`, a generator
of call batches; :meth:`RuleDocumentTransformer.extract` drives it with blocking batches and
:meth:`RuleDocumentTransformer.aextract` with async ones, so the sync and async paths cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentTransformer, Document
from langchain_core.language_models import BaseChatModel
from typing_extensions import override

from langchain_tag.calls._limits import CallLimits
from langchain_tag.extraction._calls import PhaseCalls
from langchain_tag.extraction._pipeline import ExtractionPipeline
from langchain_tag.extraction.prompts import DEFAULT_TASK_INPUT
from langchain_tag.extraction.report import ExtractionResult
from langchain_tag.extraction.store import ExtractionStore, open_store

__all__ = ["RuleDocumentTransformer"]

PHASES = (1, 2, 3, 4, 5)


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
            not retry them (see :mod:`langchain_tag.calls._faults`).
        check_normativity: After phase 1, read as background every sentence
            labelled normative that has no modal, deontic or imperative
            wording and reads as a statement of fact, captions examples, or
            describes the document itself (its scope, layout or status)
            (:mod:`langchain_tag.extraction._normativity`); each such veto is
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
        CallLimits(max_concurrency, max_attempts, retry_backoff)  # each checked against its one range, now
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
        pipeline = ExtractionPipeline(self).run(documents, runner)
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
        pipeline = ExtractionPipeline(self).run(documents, runner)
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
    def _runner(self) -> PhaseCalls:
        return PhaseCalls(
            llm=self.llm,
            limits=CallLimits(self.max_concurrency, self.max_attempts, self.retry_backoff),
            show_progress=self.show_progress,
            callbacks=self.callbacks,
            store=self.store,
        )
