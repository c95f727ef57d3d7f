"""The PEP 8 check table and the rules made from it."""

from __future__ import annotations

from typing import Any

import pytest

from bench_tests.unit_tests.test_pep8 import codes, parses
from langchain_tag.rules import Rule
from langchain_tag_bench.pep8_checks import (
    DEFAULT_OFF,
    DOCUMENT_ID,
    EXCLUDED_CODES,
    PEP8_CHECKS,
    check_by_code,
    pep8_rules,
)

pytest.importorskip("pycodestyle")


# --------------------------------------------------------------------------
# The check table and the rules.
# --------------------------------------------------------------------------
def test_table_codes_unique_and_excluded_codes_absent() -> None:
    table = [c.code for c in PEP8_CHECKS]
    assert len(table) == len(set(table))
    assert not set(table) & set(EXCLUDED_CODES)
    assert {"W503", "W504"} <= set(EXCLUDED_CODES)
    assert set(table) >= DEFAULT_OFF
    assert len(table) == 73


@pytest.mark.parametrize("check", PEP8_CHECKS, ids=lambda c: c.code)
def test_every_check_example_is_valid_and_triggers_its_code(check: Any) -> None:
    assert parses(check.example)
    assert check.code in codes(check.example)
    assert check.name and check.condition and check.action and check.message
    assert 3 <= len(check.name.split()) <= 8


def test_pep8_rules_fields_and_tags() -> None:
    rules = pep8_rules()
    assert [r.rule_id for r in rules] == [c.code for c in PEP8_CHECKS]
    e501 = next(r for r in rules if r.rule_id == "E501")
    assert "79 characters" in e501.condition
    assert e501.document_id == DOCUMENT_ID
    assert e501.category_tags == ["pep8", "line length"]
    assert e501.source_text == "pycodestyle E501: line too long (80 > 79 characters)"
    e226 = next(r for r in rules if r.rule_id == "E226")
    assert e226.category_tags == ["pep8", "whitespace", "off by default"]
    assert check_by_code("W605").family == "deprecation"


def test_pep8_rules_round_trip_through_documents() -> None:
    for rule in pep8_rules():
        doc = rule.to_document()
        assert doc.id == rule.rule_id
        assert Rule.from_document(doc) == rule
