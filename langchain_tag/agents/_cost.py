"""What the first input costs: the calibration's reference judgments, made once per rule, stated before they run."""

from __future__ import annotations

import logging

from langchain_tag.agents._config import Retriever
from langchain_tag.cascade_retriever import CascadeRetriever

__all__ = ["reference_judgments", "state_cost"]

logger = logging.getLogger(__name__)


def reference_judgments(retriever: Retriever) -> tuple[int, int]:
    """How many reference judgments the next input's judgment also makes, and how many rules it judges.

    A calibration with reference inputs (the shipped default of a known judge model, or your own) judges each rule
    once on each reference input, at the first input that meets the rule; later inputs take one judgment per
    rule. Rules drawn from a vector store per input are not known beforehand: ``(0, 0)``.
    """
    first = retriever.cheap if isinstance(retriever, CascadeRetriever) else retriever
    if first.candidates is not None:
        return 0, 0
    rules = first.rules_for("")
    needed = first.judge.scorer.needed_references(rules)
    return sum(len(missing) for _, missing in needed), len(rules)


def state_cost(retriever: Retriever) -> None:
    """Log (INFO) the reference judgments the next judgment makes, when it makes any."""
    extra, rules = reference_judgments(retriever)
    if extra:
        logger.info(
            "this input's judgment also makes %d reference judgments (the calibration's reference inputs, judged once "
            "per rule): %d judge calls now, %d for each later input; calibration=None, or a calibration without "
            "reference inputs, avoids them",
            extra,
            extra + rules,
            rules,
        )
