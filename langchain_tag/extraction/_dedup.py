"""Phase 4: deduplication and conflict resolution among rules that share a tag.

Only rules sharing at least one category tag are compared. A tag group of up
to ``exhaustive`` rules is cut into blocks and every pair of blocks is compared
once, so every pair of its rules is seen. A larger group is split: its rules
are ordered so that rules sharing their other tags and similar conditions sit
together, and each block is compared with the next one (overlapping windows of
two blocks). The number of calls then grows linearly with the rules sharing a
tag (1,418 rules: 141 calls, not 10,011), at the price of not comparing rules
far apart in that order.

The model's labels are advice, not a licence: a small model calls rules
"duplicates" that differ in a number or a name ("a contract signed with the
Bi-annual Exception" and "... with the Non-Taxpayer Mid-Level Exception"), and
merging them loses a rule for good. A merge is therefore carried out only when
the two rules read alike and each names every specific (number, capitalised
name, quoted or ``code`` term) the other names (:func:`merge_blockers`);
otherwise the pair is kept and linked as overlapping, and the report says why.
Keeping a true duplicate costs one more judgment per input; a wrong merge
costs a rule.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations, pairwise
from typing import Any

from rapidfuzz import fuzz

from langchain_tag.calls._replies import local_ids, parse_json_items, with_aliases
from langchain_tag.extraction._calls import Call
from langchain_tag.extraction.prompts import dedup_messages
from langchain_tag.rules import Rule

__all__ = [
    "MERGE_SIMILARITY",
    "DedupOutcome",
    "Relation",
    "apply_relations",
    "collect_relations",
    "dedup_calls",
    "merge_blockers",
    "tag_groups",
]

logger = logging.getLogger(__name__)

# The reply is {"pairs": [...]}; items that are not objects are dropped.
_ALIASES = {"a": "rule_a", "b": "rule_b", "do": "preferred_action", "why": "explanation"}


def _parse(text: str) -> list[dict[str, Any]]:
    """Read phase 4's pairs; the short keys the prompt asks for and the long ones read the same."""
    return [with_aliases(item, _ALIASES) for item in parse_json_items(text, "pairs")]


RELATIONS = frozenset({"duplicate", "subsumption", "overlap", "conflict"})
ACTIONS = frozenset({"merge", "keep_both", "manual_review"})

MERGE_SIMILARITY = 80.0
"""Least token-set similarity (0-100, rapidfuzz) of two rules' conditions for a merge to be carried out."""

# Specifics: ``code`` and quoted terms, numbers, and capitalised words (the first word of a text aside).
_CODE = re.compile(r"`+([^`]+?)`+")
_QUOTED = re.compile(r"[\"“”]([^\"“”]{1,80})[\"“”]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CAPITALISED = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][\w'\u2019-]*")
_NON_WORD = re.compile(r"[^0-9a-z]+")


@dataclass(frozen=True)
class Relation:
    """A non-independent pair of rules, as labelled by the model."""

    rule_a: str
    rule_b: str
    relation: str
    preferred_action: str
    explanation: str = ""


@dataclass
class DedupOutcome:
    """Rules after phase 4 and what happened to the others.

    Attributes:
        rules: The rules kept, in their original order.
        merged: Merged-away rule id -> the id it was merged into.
        conflicts: Pairs flagged as conflicting (both rules kept).
        reviews: Pairs the model wanted a person to look at (both kept).
        refused: Merges the model asked for but :func:`merge_blockers` refused, with the reason; both rules
            were kept and linked as related.
    """

    rules: list[Rule]
    merged: dict[str, str] = field(default_factory=dict)
    conflicts: list[Relation] = field(default_factory=list)
    reviews: list[Relation] = field(default_factory=list)
    refused: list[tuple[Relation, str]] = field(default_factory=list)


def _plain(text: str) -> str:
    return " " + " ".join(_NON_WORD.split(text.lower())).strip() + " "


def _specifics(text: str) -> set[str]:
    outside_code = _CODE.sub(" ", text)
    found = _CODE.findall(text) + _QUOTED.findall(text) + _NUMBER.findall(outside_code)
    found += _CAPITALISED.findall(outside_code.strip())
    return {plain.strip() for plain in map(_plain, found) if plain.strip()}


def merge_blockers(a: Rule, b: Rule, *, min_similarity: float = MERGE_SIMILARITY) -> str | None:
    """Why two rules labelled duplicates must not be merged, or ``None`` when they may be.

    They may be merged when their conditions read alike (token-set similarity at least ``min_similarity``) and
    each rule names every specific of the other: every number, capitalised name, quoted or ``code`` term in one
    rule's condition or action occurs, as words, somewhere in the other's. "A player with fewer than seven (7)
    Years of Service" and "a player with ten (10) or more Years of Service" differ in ``7`` and ``10``; "a bare
    ``except:`` clause" and "a bare except clause" name the same thing.
    """
    similarity = fuzz.token_set_ratio(_plain(a.condition), _plain(b.condition))
    if similarity < min_similarity:
        return f"their conditions differ (similarity {similarity:.0f} < {min_similarity:.0f})"
    for one, other in ((a, b), (b, a)):
        text = _plain(f"{other.condition} {other.action}")
        named = _specifics(one.condition) | _specifics(one.action)  # each text's first word is not a name
        missing = sorted(s for s in named if f" {s} " not in text)
        if missing:
            return f"{one.rule_id} names {', '.join(repr(m) for m in missing[:3])}, which {other.rule_id} does not"
    return None


def tag_groups(rules: Sequence[Rule], *, block: int = 10, exhaustive: int = 40) -> list[list[Rule]]:
    """Sets of rules to compare (each at most ``2 * block`` rules), per tag.

    Args:
        rules: The rules after phase 3.
        block: Rules per block; a set is one block or two.
        exhaustive: Largest tag group compared pair by pair (every block
            pair once); a larger group is compared in overlapping windows of
            two neighbouring blocks, so its cost grows linearly.

    Returns:
        The sets, each with at least two rules, none repeated.
    """
    if block < 1 or exhaustive < 2:
        raise ValueError(f"block must be >= 1 and exhaustive >= 2, got {block} and {exhaustive}")
    by_tag: dict[str, list[Rule]] = {}
    for rule in rules:
        for tag in rule.category_tags:
            by_tag.setdefault(tag, []).append(rule)
    seen: set[frozenset[str]] = set()
    groups: list[list[Rule]] = []
    for tag, members in by_tag.items():
        if len(members) < 2:
            continue
        if len(members) > exhaustive:
            logger.info(
                "phase 4: %d rules share the tag %r; comparing neighbouring blocks of %d only",
                len(members),
                tag,
                block,
            )
            members = sorted(members, key=lambda r: (sorted(set(r.category_tags) - {tag}), r.condition.lower()))
        blocks = [members[i : i + block] for i in range(0, len(members), block)]
        if len(blocks) == 1:
            sets = blocks
        elif len(members) <= exhaustive:
            sets = [a + b for a, b in combinations(blocks, 2)]
        else:
            sets = [a + b for a, b in pairwise(blocks)]
        for group in sets:
            key = frozenset(r.rule_id for r in group)
            if len(group) >= 2 and key not in seen:
                seen.add(key)
                groups.append(group)
    return groups


def dedup_calls(groups: Sequence[Sequence[Rule]], *, domain: str) -> list[Call[list[dict[str, Any]]]]:
    """One phase-4 call per group."""
    calls = []
    for group in groups:
        # Ids local to the group: the prompt does not depend on how rules elsewhere were numbered.
        renamed = [
            r.model_copy(update={"rule_id": local}) for local, r in zip(local_ids("R", len(group)), group, strict=True)
        ]
        calls.append(
            Call(4, f"{len(group)} rules from {group[0].rule_id}", dedup_messages(domain=domain, rules=renamed), _parse)
        )
    return calls


def collect_relations(
    group: Sequence[Rule], raw_pairs: Sequence[dict[str, Any]] | None, *, notes: list[str]
) -> list[Relation]:
    """Keep the well-formed pairs between two distinct, tag-sharing rules of the group."""
    by_id = {r.rule_id: r for r in group}
    local = dict(zip(local_ids("R", len(group)), (r.rule_id for r in group), strict=True))
    out = []
    for raw in raw_pairs or []:
        a, b = str(raw.get("rule_a") or "").strip(), str(raw.get("rule_b") or "").strip()
        a, b = local.get(a, a), local.get(b, b)
        relation = str(raw.get("relation") or "").strip().lower()
        action = str(raw.get("preferred_action") or "").strip().lower()
        if a not in by_id or b not in by_id or a == b:
            notes.append(f"phase 4: pair ({a!r}, {b!r}) names unknown rules; ignored")
            continue
        if relation not in RELATIONS:
            if relation != "independent":
                notes.append(f"phase 4: pair ({a}, {b}) has unknown relation {relation!r}; ignored")
            continue
        if not set(by_id[a].category_tags) & set(by_id[b].category_tags):
            continue
        action = action if action in ACTIONS else "manual_review"
        out.append(Relation(a, b, relation, action, str(raw.get("explanation") or "")))
    return out


def apply_relations(rules: Sequence[Rule], relations: Iterable[Relation]) -> DedupOutcome:
    """Merge duplicates, link overlaps, flag conflicts.

    A duplicate, or a subsumption the model wants merged, drops the later rule
    and folds its id and tags into the earlier one, unless :func:`merge_blockers`
    finds the two rules distinct: then both are kept and linked as overlapping,
    and the refusal is listed in :attr:`DedupOutcome.refused`. Overlaps are
    linked both ways and kept; conflicts are marked on both rules and kept for
    review.
    """
    order = {r.rule_id: i for i, r in enumerate(rules)}
    live = {r.rule_id: r.model_copy(deep=True) for r in rules}
    outcome = DedupOutcome(rules=[])
    unique: dict[tuple[str, str], Relation] = {}
    for rel in relations:
        key = tuple(sorted((rel.rule_a, rel.rule_b), key=order.__getitem__))
        unique.setdefault(key, rel)  # type: ignore[arg-type]
    for (first, second), rel in unique.items():
        keep = outcome.merged.get(first, first)
        drop = outcome.merged.get(second, second)
        if keep == drop or keep not in live or drop not in live:
            continue
        wants_merge = rel.relation == "duplicate" or (rel.relation == "subsumption" and rel.preferred_action == "merge")
        blocker = merge_blockers(live[keep], live[drop]) if wants_merge else None
        if blocker is not None:
            outcome.refused.append((rel, blocker))
            rel = Relation(rel.rule_a, rel.rule_b, "overlap", "keep_both", rel.explanation)
        if wants_merge and blocker is None:
            kept, gone = live[keep], live.pop(drop)
            kept.merged_from = kept.merged_from + [drop] + gone.merged_from
            kept.category_tags = (kept.category_tags + [t for t in gone.category_tags if t not in kept.category_tags])[
                :3
            ]
            for old, new in list(outcome.merged.items()):
                if new == drop:
                    outcome.merged[old] = keep
            outcome.merged[drop] = keep
        elif rel.relation == "conflict":
            live[keep].conflicts_with = live[keep].conflicts_with + [drop]
            live[drop].conflicts_with = live[drop].conflicts_with + [keep]
            outcome.conflicts.append(rel)
        else:
            live[keep].related_rules = live[keep].related_rules + [drop]
            live[drop].related_rules = live[drop].related_rules + [keep]
            if rel.preferred_action == "manual_review":
                outcome.reviews.append(rel)
    outcome.rules = sorted(live.values(), key=lambda r: order[r.rule_id])
    return outcome
