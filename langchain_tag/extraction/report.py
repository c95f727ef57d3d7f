"""What an extraction run produced and what it checked: rules plus a report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.documents import Document

from langchain_tag.extraction._calls import CallFailure, PhaseUsage
from langchain_tag.extraction._decomposition import AtomicUnit
from langchain_tag.extraction._dedup import Relation
from langchain_tag.extraction._span_detection import Span
from langchain_tag.extraction._verification import DroppedRule
from langchain_tag.rules import Rule

__all__ = ["ExtractionReport", "ExtractionResult"]


@dataclass
class ExtractionReport:
    """Phase-5 figures and everything that was dropped, flagged or failed.

    Attributes:
        faithfulness: Share of rules whose source was found (before dropping).
        coverage: Share of phase-1 spans covered by surviving rules.
        independence: Unique rule names over rules.
        dropped_rules: Rules removed as unfaithful.
        conflicts: Pairs flagged as conflicting (both rules kept).
        reviews: Pairs the model asked a person to review.
        merged: Rule id merged away -> rule id kept.
        uncovered_spans: Spans still uncovered after the re-extraction pass.
        failures: LLM calls that failed after every attempt.
        notes: Repairs and skips made while reading model output.
        usage: Calls and tokens per phase.
        skipped_phases: Phases switched off for this run.
        counts: Sizes at each stage (documents, sections, spans, units, rules).
    """

    faithfulness: float | None = None
    coverage: float | None = None
    independence: float | None = None
    dropped_rules: list[DroppedRule] = field(default_factory=list)
    conflicts: list[Relation] = field(default_factory=list)
    reviews: list[Relation] = field(default_factory=list)
    merged: dict[str, str] = field(default_factory=dict)
    uncovered_spans: list[Span] = field(default_factory=list)
    failures: list[CallFailure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    usage: dict[int, PhaseUsage] = field(default_factory=dict)
    skipped_phases: tuple[int, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable view."""
        return asdict(self)

    def summary(self) -> str:
        """A few human-readable lines."""

        def pct(value: float | None) -> str:
            return "n/a (phase 5 off)" if value is None else f"{value:.1%}"

        counts = ", ".join(f"{k} {v}" for k, v in self.counts.items())
        calls = sum(u.calls for u in self.usage.values())
        reused = sum(u.reused for u in self.usage.values())
        tokens = sum(u.prompt_tokens + u.completion_tokens for u in self.usage.values())
        lines = [
            f"{counts}",
            f"faithfulness {pct(self.faithfulness)}, coverage {pct(self.coverage)}, "
            f"independence {pct(self.independence)}",
            f"dropped {len(self.dropped_rules)}, merged {len(self.merged)}, conflicts {len(self.conflicts)}, "
            f"uncovered spans {len(self.uncovered_spans)}, failed calls {len(self.failures)}",
            f"LLM calls {calls}, tokens {tokens}" + (f", {reused} calls reused from the store" if reused else ""),
        ]
        for failure in self.failures[:5]:
            lines.append(f"failed: phase {failure.phase} {failure.key!r} after {failure.attempts}: {failure.error}")
        if len(self.failures) > 5:
            lines.append(f"... and {len(self.failures) - 5} more failed calls (see the report)")
        if self.skipped_phases:
            lines.append(f"skipped phases: {', '.join(map(str, self.skipped_phases))}")
        return "\n".join(lines)


@dataclass
class ExtractionResult:
    """The rules of an extraction run, its report and the intermediate units."""

    rules: list[Rule]
    report: ExtractionReport
    spans: list[Span] = field(default_factory=list)
    units: list[AtomicUnit] = field(default_factory=list)

    def documents(self) -> list[Document]:
        """The rules as rule ``Document`` objects."""
        return [rule.to_document() for rule in self.rules]
