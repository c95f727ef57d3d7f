"""The methods a benchmark compares: what reference material each gives the executor.

A method is a unit kind (nothing, rules or chunks) and a way of selecting
units (all of them, top-k by similarity, or a pairwise LLM judge). The rows
of the spec's tables:

============================  =========  =====================  =====================
name                          units      selection              row
============================  =========  =====================  =====================
``none``                      none       -                      M0 no retrieval
``all_rules``                 rules      all                    M1 all rules
``similarity@K``              chunks     similarity top-K       M2 standard RAG
``tag``                       rules      applicability judge    M3 TAG
``relevance``                 rules      relevance judge        relevance reranker
``rules_similarity@K``        rules      similarity top-K       2x2: rules + similarity
``chunks_applicability``      chunks     applicability judge    2x2: chunks + applicability
``tag-no-pN``                 rules      applicability judge    TAG, rules extracted without phase N
============================  =========  =====================  =====================

Shorthands in a method list: ``similarity`` and ``rules_similarity`` expand
to one row per k (5, 10, 15, 20 by default), ``phases`` to ``tag-no-p1`` ...
``tag-no-p5``, ``2x2`` to the four ablation cells, and ``all`` to every row.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DEFAULT_KS",
    "METHOD_NAMES",
    "Method",
    "parse_methods",
]

DEFAULT_KS: tuple[int, ...] = (5, 10, 15, 20)
"""Top-k cut-offs of the similarity rows."""

Units = Literal["none", "rules", "chunks"]
Selection = Literal["none", "all", "similarity", "applicability", "relevance"]

METHOD_NAMES: tuple[str, ...] = (
    "none",
    "all_rules",
    "similarity",
    "tag",
    "relevance",
    "rules_similarity",
    "chunks_applicability",
    "phases",
    "2x2",
    "all",
)
"""Names accepted by :func:`parse_methods` (``similarity@10`` and ``tag-no-p3`` name single rows)."""


@dataclass(frozen=True)
class Method:
    """One row of a results table.

    Attributes:
        name: Stable name, used in run records and on the command line.
        units: What the executor is given: ``"none"``, ``"rules"`` or ``"chunks"``.
        selection: How units are chosen.
        k: Top-k of a similarity selection.
        skip_phase: For the phase ablation, the extraction phase left out of
            the rule set.
    """

    name: str
    units: Units
    selection: Selection
    k: int | None = None
    skip_phase: int | None = None

    @property
    def label(self) -> str:
        """The row label in the spec's tables."""
        if self.name == "none":
            return "M0 no retrieval"
        if self.name == "all_rules":
            return "M1 all rules"
        if self.units == "chunks" and self.selection == "similarity":
            return f"M2 standard RAG k={self.k}"
        if self.name == "tag":
            return "M3 TAG"
        if self.name == "relevance":
            return "relevance reranker"
        if self.units == "rules" and self.selection == "similarity":
            return f"rules + similarity k={self.k}"
        if self.name == "chunks_applicability":
            return "chunks + applicability"
        return f"TAG without phase {self.skip_phase}"

    @property
    def judged(self) -> bool:
        """Whether the method calls the pairwise judge."""
        return self.selection in ("applicability", "relevance")

    @property
    def needs_sources(self) -> bool:
        """Whether the method needs the source documents (chunks, or a re-extraction)."""
        return self.units == "chunks" or self.skip_phase is not None

    def for_retrieval_only(self) -> Method | None:
        """The method scored in a retrieval-only run, or ``None`` if it cannot be scored there.

        Retrieval is scored against gold *rule* ids, so chunk rows have no
        score. Standard RAG's ``similarity@K`` becomes ``rules_similarity@K``
        (similarity top-k over the rule set); ``none`` retrieves nothing.
        """
        if self.units == "rules":
            return self
        if self.units == "chunks" and self.selection == "similarity":
            return _rules_similarity(self.k or DEFAULT_KS[0])
        return None


def _similarity(k: int) -> Method:
    return Method(f"similarity@{k}", "chunks", "similarity", k=k)


def _rules_similarity(k: int) -> Method:
    return Method(f"rules_similarity@{k}", "rules", "similarity", k=k)


def _no_phase(phase: int) -> Method:
    return Method(f"tag-no-p{phase}", "rules", "applicability", skip_phase=phase)


_SINGLE = {
    "none": Method("none", "none", "none"),
    "all_rules": Method("all_rules", "rules", "all"),
    "tag": Method("tag", "rules", "applicability"),
    "relevance": Method("relevance", "rules", "relevance"),
    "chunks_applicability": Method("chunks_applicability", "chunks", "applicability"),
}
_WITH_K = re.compile(r"^(similarity|rules_similarity)@(\d+)$")
_NO_PHASE = re.compile(r"^tag-no-p([1-5])$")


def _expand(name: str, ks: Sequence[int]) -> list[Method]:
    if name in _SINGLE:
        return [_SINGLE[name]]
    if name == "similarity":
        return [_similarity(k) for k in ks]
    if name == "rules_similarity":
        return [_rules_similarity(k) for k in ks]
    if name == "phases":
        return [_no_phase(p) for p in range(1, 6)]
    if name == "2x2":
        return [_similarity(max(ks)), _rules_similarity(max(ks)), _SINGLE["chunks_applicability"], _SINGLE["tag"]]
    if name == "all":
        return [
            _SINGLE["none"],
            _SINGLE["all_rules"],
            *(_similarity(k) for k in ks),
            _SINGLE["tag"],
            _SINGLE["relevance"],
            *(_rules_similarity(k) for k in ks),
            _SINGLE["chunks_applicability"],
            *(_no_phase(p) for p in range(1, 6)),
        ]
    match = _WITH_K.match(name)
    if match:
        k = int(match.group(2))
        if k < 1:
            raise ValueError(f"method {name!r}: k must be at least 1")
        return [_similarity(k) if match.group(1) == "similarity" else _rules_similarity(k)]
    match = _NO_PHASE.match(name)
    if match:
        return [_no_phase(int(match.group(1)))]
    known = ", ".join((*METHOD_NAMES, "similarity@K", "rules_similarity@K", "tag-no-pN"))
    raise ValueError(f"unknown method {name!r}; choose from: {known}")


def parse_methods(spec: str | Iterable[str], ks: Sequence[int] = DEFAULT_KS) -> list[Method]:
    """Methods named in a comma-separated list (or an iterable of names), in order, without repeats.

    Args:
        spec: E.g. ``"none,all_rules,similarity,tag"`` or ``["tag", "similarity@10"]``.
        ks: Cut-offs that ``similarity`` and ``rules_similarity`` expand to.

    Raises:
        ValueError: On an unknown name, an empty list or a k below 1.
    """
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    if not names:
        raise ValueError("no methods given")
    if not ks or min(ks) < 1:
        raise ValueError(f"similarity cut-offs must be positive, got {list(ks)}")
    out: dict[str, Method] = {}
    for name in names:
        for method in _expand(name, ks):
            out.setdefault(method.name, method)
    return list(out.values())
