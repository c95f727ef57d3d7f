from __future__ import annotations

import pytest

from langchain_tag.extraction._decomposition import AtomicUnit
from langchain_tag.extraction._operationalisation import (
    collect_rules,
    reads_as_instruction,
    strip_consequent,
    unoperationalised_draft,
)

UNITS = [
    AtomicUnit("A-001", "S-001", "Avoid wildcard imports.", "Wildcard imports should be avoided."),
    AtomicUnit("A-002", "S-002", "Use 4 spaces.", "Use 4 spaces per indentation level."),
]


def test_rules_are_matched_to_units_and_fields_checked() -> None:
    raw = [
        {
            "atomic_id": "A-002",
            "rule_name": "four space indent",
            "condition": "a line is indented with tabs",
            "action": "indent with four spaces",
            "category_tags": "Indentation, whitespace, layout, extra",
        },
        {"atomic_id": "A-001", "rule_name": "no wildcard", "condition": "", "action": "x"},
    ]
    notes: list[str] = []
    found, missing = collect_rules(UNITS, raw, notes=notes)
    assert [u.atomic_id for u, _ in found] == ["A-002"]
    assert found[0][1]["category_tags"] == ["indentation", "whitespace", "layout"]
    assert found[0][1]["source_text"] == UNITS[1].original_text  # copied by the program
    assert [u.atomic_id for u in missing] == ["A-001"] and "lacks" in notes[0]


def test_model_supplied_source_text_is_ignored() -> None:
    raw = [
        {"atomic_id": "A-001", "rule_name": "n", "condition": "c", "action": "a", "source_text": "Paraphrase of it."}
    ]
    found, _ = collect_rules(UNITS, raw, notes=[])
    assert found[0][1]["source_text"] == "Wildcard imports should be avoided."


def test_ids_dropped_but_order_kept_are_recovered() -> None:
    raw = [
        {"rule_name": "a", "condition": "c1", "action": "x1"},
        {"rule_name": "b", "condition": "c2", "action": "x2", "does_not_apply_to": ["rookies"], "primary_tag": "trade"},
    ]
    found, missing = collect_rules(UNITS, raw, notes=[], extra_fields=("does_not_apply_to", "primary_tag"))
    assert [u.atomic_id for u, _ in found] == ["A-001", "A-002"] and not missing
    assert found[1][1]["does_not_apply_to"] == ["rookies"] and found[1][1]["primary_tag"] == "trade"


def test_extra_fields_are_asked_for_and_only_those_are_kept() -> None:
    from langchain_tag.extraction.prompts import operationalisation_messages
    from langchain_tag.testing import prompt_text

    text = prompt_text(
        operationalisation_messages(
            domain="d", units=[{"atomic_id": "A-001", "text": "t"}], extra_fields={"severity": "low or high"}
        )
    )
    assert '"severity": low or high' in text and '"severity": ...' in text
    raw = [{"atomic_id": "A-001", "rule_name": "n", "condition": "c", "action": "a", "severity": "high", "noise": "x"}]
    found, _ = collect_rules(UNITS[:1], raw, notes=[], extra_fields=("severity",))
    assert found[0][1]["severity"] == "high" and "noise" not in found[0][1]


def test_unoperationalised_draft_uses_unit_text() -> None:
    draft = unoperationalised_draft(UNITS[0], "prohibition")
    assert draft["condition"] == draft["action"] == "Avoid wildcard imports."
    assert draft["category_tags"] == ["prohibition"]


def test_the_violation_is_the_rules_condition_and_the_prompt_asks_for_it() -> None:
    from langchain_tag.extraction.prompts import operationalisation_messages
    from langchain_tag.testing import prompt_text

    text = prompt_text(operationalisation_messages(domain="d", units=[{"atomic_id": "A-001", "text": "t"}]))
    assert '"violation": "<noun phrase>"' in text and "never only what is missing" in text
    raw = [{"atomic_id": "A-001", "rule_name": "n", "violation": "the input uses B", "action": "use A"}]
    found, _ = collect_rules(UNITS[:1], raw, notes=[])
    assert found[0][1]["condition"] == "the input uses B"


@pytest.mark.parametrize(
    ("violation", "condition"),
    [
        ("a bare `except:` clause.", "the input contains a bare `except:` clause"),
        ("A size given in yards", "the input contains a size given in yards"),
        ("API key  in a string literal", "the input contains API key in a string literal"),
        ("The input calls print", "the input calls print"),
    ],
)
def test_a_noun_phrase_violation_becomes_a_condition_on_what_the_input_contains(violation: str, condition: str) -> None:
    raw = [{"atomic_id": "A-001", "rule_name": "n", "violation": violation, "action": "fix it"}]
    found, _ = collect_rules(UNITS[:1], raw, notes=[])
    assert found[0][1]["condition"] == condition


def test_a_statement_that_asks_nothing_gets_no_rule_and_is_not_missing() -> None:
    raw = [
        {"atomic_id": "A-001", "rule_name": "n", "violation": "none", "action": "-"},
        {"atomic_id": "A-002", "rule_name": "m", "violation": "the input does B", "action": "do A"},
    ]
    notes: list[str] = []
    declined: list = []
    found, missing = collect_rules(UNITS, raw, notes=notes, declined=declined)
    assert [u.atomic_id for u, _ in found] == ["A-002"] and missing == [] and declined == [UNITS[0]]
    assert "states no rule" in notes[0]


def test_a_violation_copied_from_the_prompts_example_gets_no_rule() -> None:
    caption = AtomicUnit("A-001", "S-001", "The former is more readable.", "The former is more readable and preferred:")
    table = AtomicUnit("A-002", "S-002", "Every table needs a caption.", "Every table needs a caption.")
    raw = [
        {"atomic_id": "A-001", "rule_name": "n", "violation": "a table without a caption", "action": "add one"},
        {"atomic_id": "A-002", "rule_name": "m", "violation": "a table without a caption", "action": "add one"},
    ]
    notes: list[str] = []
    declined: list = []
    found, missing = collect_rules([caption, table], raw, notes=notes, declined=declined)
    # The same words are a real rule where the statement is about tables.
    assert [u.atomic_id for u, _ in found] == ["A-002"] and missing == [] and declined == [caption]
    assert "repeats the prompt's own example" in notes[0]


@pytest.mark.parametrize(
    ("violation", "statement", "echo"),
    [
        ("a size given in inches", "Prices are shown in euros.", True),
        ("a size given in inches", "Give every size in centimetres, never in inches.", False),
        ("a size in feet", "Prices are shown in euros.", False),  # not the prompt's wording
        ("a caption", "Prices are shown in euros.", False),  # too short to tell
    ],
)
def test_echoes_instructions(violation: str, statement: str, echo: bool) -> None:
    from langchain_tag.extraction._operationalisation import echoes_instructions

    assert echoes_instructions(violation, statement) is echo


@pytest.mark.parametrize(
    ("condition", "flagged"),
    [
        ("the input contains a handler catching `Exception` must not consist of nothing but `pass`", True),
        ("the input contains a key test with `key in mapping`, not with `key in mapping.keys()`", True),
        ("the input contains a body on the header's line, and never join statements with semicolons", True),
        ("the input contains code that should be refactored", True),
        ("the input contains a local variable assigned but never read", False),
        ("the input contains a function defined with `lambda` instead of `def`", False),
        ("the input contains a mustard recipe", False),
    ],
)
def test_reads_as_instruction_flags_deontic_wording_not_descriptions(condition: str, flagged: bool) -> None:
    assert reads_as_instruction(condition) is flagged


PRAISE = (
    'If a sentence praises its subject with words such as "legendary" or "iconic", then replace the word with a plain '
    "description of what the subject did."
)


@pytest.mark.parametrize(
    ("condition", "statement", "kept"),
    [
        # The statement's own consequent, copied after ", then": cut.
        (
            "the input contains a sentence praising its subject with words such as 'legendary' or 'iconic', "
            "then replace the word with a plain description",
            PRAISE,
            "the input contains a sentence praising its subject with words such as 'legendary' or 'iconic'",
        ),
        # A sequence the condition describes, not the statement's consequent: kept.
        ("the input contains a loop that reads the file, then writes it back", "Never rewrite a file in a loop.", None),
        # No ", then" at all.
        ("the input contains a bare `except:` clause", "Never write a bare `except:` clause.", None),
        # Too little before ", then" to be a condition on its own.
        ("the input contains it, then replace the word", PRAISE, None),
    ],
)
def test_strip_consequent_cuts_only_the_statements_own_then_clause(
    condition: str, statement: str, kept: str | None
) -> None:
    assert strip_consequent(condition, statement) == kept


def test_a_condition_carrying_its_consequent_is_cut_with_a_note() -> None:
    unit = AtomicUnit("A-001", "S-001", PRAISE, PRAISE)
    raw = [
        {
            "atomic_id": "A-001",
            "rule_name": "praising word",
            "violation": "a sentence praising its subject with words such as 'legendary', then replace the word with a "
            "plain description",
            "action": "replace the word with a plain description",
        }
    ]
    notes: list[str] = []
    found, _ = collect_rules([unit], raw, notes=notes)
    assert (
        found[0][1]["condition"] == "the input contains a sentence praising its subject with words such as 'legendary'"
    )
    assert notes == [
        "phase 3: A-001's condition carried its statement's consequent (\", then ...\"); kept what comes before it"
    ]
