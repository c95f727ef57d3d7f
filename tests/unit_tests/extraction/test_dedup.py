from __future__ import annotations

import pytest

from langchain_tag.extraction._dedup import Relation, apply_relations, collect_relations, merge_blockers, tag_groups
from langchain_tag.rules import Rule


def _rule(i: int, tags: list[str], condition: str | None = None, action: str = "remove it") -> Rule:
    # The same condition by default, so that a merge the model asks for is carried out.
    return Rule(
        rule_id=f"R-{i:03d}",
        rule_name=f"n{i}",
        condition=condition or "the input contains a mutable default argument",
        action=action,
        category_tags=tags,
    )


def test_only_tag_sharing_rules_are_compared() -> None:
    rules = [_rule(1, ["imports"]), _rule(2, ["imports", "style"]), _rule(3, ["naming"]), _rule(4, ["style"])]
    groups = [{r.rule_id for r in g} for g in tag_groups(rules)]
    assert {"R-001", "R-002"} in groups and {"R-002", "R-004"} in groups
    assert all("R-003" not in g for g in groups)


def test_big_groups_are_blocked_and_every_pair_is_covered() -> None:
    rules = [_rule(i, ["x"]) for i in range(1, 26)]
    groups = tag_groups(rules, block=10)
    assert all(len(g) <= 20 for g in groups)
    pairs = {frozenset((a.rule_id, b.rule_id)) for g in groups for a in g for b in g if a.rule_id != b.rule_id}
    assert len(pairs) == 25 * 24 // 2


def test_collect_relations_rejects_bad_pairs() -> None:
    group = [_rule(1, ["x"]), _rule(2, ["x"])]
    raw = [
        {"rule_a": "R-001", "rule_b": "R-002", "relation": "Duplicate", "preferred_action": "merge"},
        {"rule_a": "R-001", "rule_b": "R-999", "relation": "overlap"},
        {"rule_a": "R-001", "rule_b": "R-001", "relation": "conflict"},
        {"rule_a": "R-001", "rule_b": "R-002", "relation": "friends"},
        {"rule_a": "R-001", "rule_b": "R-002", "relation": "independent"},
    ]
    notes: list[str] = []
    rels = collect_relations(group, raw, notes=notes)
    assert rels == [Relation("R-001", "R-002", "duplicate", "merge", "")]
    assert len(notes) == 3


def test_apply_relations_merges_links_and_flags() -> None:
    rules = [_rule(1, ["x"]), _rule(2, ["x", "y"]), _rule(3, ["x"]), _rule(4, ["x"]), _rule(5, ["x"])]
    rels = [
        Relation("R-002", "R-001", "duplicate", "merge"),
        Relation("R-003", "R-004", "conflict", "manual_review"),
        Relation("R-004", "R-005", "overlap", "keep_both"),
        Relation("R-001", "R-005", "subsumption", "keep_both"),
    ]
    out = apply_relations(rules, rels)
    ids = [r.rule_id for r in out.rules]
    assert ids == ["R-001", "R-003", "R-004", "R-005"]
    kept = out.rules[0]
    assert kept.merged_from == ["R-002"] and kept.category_tags == ["x", "y"]
    assert out.merged == {"R-002": "R-001"}
    assert out.rules[1].conflicts_with == ["R-004"] and out.rules[2].conflicts_with == ["R-003"]
    assert "R-005" in out.rules[2].related_rules and "R-001" in out.rules[3].related_rules
    assert [(c.rule_a, c.rule_b) for c in out.conflicts] == [("R-003", "R-004")]
    assert rules[0].merged_from == []  # inputs untouched


def test_chained_duplicates_collapse_into_the_first() -> None:
    rules = [_rule(1, ["x"]), _rule(2, ["x"]), _rule(3, ["x"])]
    rels = [Relation("R-002", "R-003", "duplicate", "merge"), Relation("R-001", "R-002", "duplicate", "merge")]
    out = apply_relations(rules, rels)
    assert [r.rule_id for r in out.rules] == ["R-001"]
    assert out.merged == {"R-002": "R-001", "R-003": "R-001"}


def test_phase_4_calls_grow_at_most_linearly_with_rules_sharing_a_tag() -> None:
    counts = {n: len(tag_groups([_rule(i, ["style"]) for i in range(n)])) for n in (100, 200, 400, 800, 1418)}
    assert counts[1418] == 141  # was 10,011: every pair of 142 blocks
    assert all(calls <= n // 10 for n, calls in counts.items())
    assert all(counts[2 * n] <= 2 * counts[n] + 1 for n in (100, 200, 400))  # doubling the rules doubles the calls


def test_large_tag_groups_compare_neighbours_and_cover_every_rule() -> None:
    rules = [_rule(i, ["style", "naming" if i % 2 else "layout"]) for i in range(100)]
    groups = tag_groups(rules, block=10, exhaustive=40)
    assert all(2 <= len(g) <= 20 for g in groups)
    compared = {r.rule_id for g in groups for r in g}
    assert compared == {r.rule_id for r in rules}
    # Rules sharing their other tag end up together: the "naming" rules of "style" share sets.
    naming = {r.rule_id for r in rules if "naming" in r.category_tags}
    assert any({r.rule_id for r in g} <= naming for g in groups)


def test_group_size_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="block must be >= 1"):
        tag_groups([_rule(1, ["x"])], block=0)


def _pair(a: str, b: str, action_a: str = "fix it", action_b: str = "fix it") -> tuple[Rule, Rule]:
    return _rule(1, ["x"], a, action_a), _rule(2, ["x"], b, action_b)


def test_merge_blockers_allow_rules_that_name_the_same_things() -> None:
    a, b = _pair("the input contains a bare ``except:`` clause", "the input contains a bare except clause")
    assert merge_blockers(a, b) is None
    a, b = _pair("the input imports `os` and `sys` on one line", "the input imports `os` and `sys` on a single line")
    assert merge_blockers(a, b) is None


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        (  # a name
            "the input contains a Team using the Bi-annual Exception to sign a player",
            "the input contains a Team using the Non-Taxpayer Mid-Level Exception to sign a player",
            "'bi annual'",
        ),
        (  # a number
            "the input contains a contract longer than two (2) Seasons",
            "the input contains a contract longer than four (4) Seasons",
            "'2'",
        ),
        ("the input calls `print`", "the input calls `eval`", "'print'"),  # a code term
        ("the input contains a nested if statement", "the input contains a function longer than a page", "differ"),
    ],
)
def test_merge_blockers_refuse_rules_that_differ(a: str, b: str, reason: str) -> None:
    first, second = _pair(a, b)
    why = merge_blockers(first, second)
    assert why is not None and reason in why
    assert merge_blockers(second, first) is not None


def test_a_capitalised_first_word_of_the_action_is_not_a_name() -> None:
    a, b = _pair("the input contains a print call", "the input contains a print call", "Use `logging`", "replace it")
    assert "'use'" not in (merge_blockers(a, b) or "")
    assert "'logging'" in (merge_blockers(a, b) or "")


def test_merge_blockers_read_the_actions_too() -> None:
    a, b = _pair(
        "the input contains a print call", "the input contains a print call", "use `logging`", "use `warnings`"
    )
    assert "'logging'" in (merge_blockers(a, b) or "")


def test_a_refused_merge_keeps_both_rules_linked_and_says_why() -> None:
    rules = [
        _rule(1, ["x"], "the input contains a contract longer than two (2) Seasons"),
        _rule(2, ["x"], "the input contains a contract longer than four (4) Seasons"),
    ]
    out = apply_relations(rules, [Relation("R-001", "R-002", "duplicate", "merge")])
    assert [r.rule_id for r in out.rules] == ["R-001", "R-002"] and out.merged == {}
    assert out.rules[0].related_rules == ["R-002"] and out.rules[1].related_rules == ["R-001"]
    assert [(rel.rule_a, rel.rule_b) for rel, _ in out.refused] == [("R-001", "R-002")]
    assert "'2'" in out.refused[0][1] and not out.reviews


def test_a_chain_of_duplicate_labels_cannot_swallow_distinct_rules() -> None:
    # A small model labels a whole tag group "duplicate" of its first rule; each rule names its own exception.
    names = ["Bi-annual", "Taxpayer Mid-Level", "Minimum Player Salary", "Room Mid-Level"]
    rules = [
        _rule(i, ["contract length"], f"the input contains a contract signed with the {n} Exception")
        for i, n in enumerate(names, start=1)
    ]
    rels = [Relation("R-001", f"R-{i:03d}", "subsumption", "merge") for i in range(2, 5)]
    out = apply_relations(rules, rels)
    assert len(out.rules) == 4 and len(out.refused) == 3
