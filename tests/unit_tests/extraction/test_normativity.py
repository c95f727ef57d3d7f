from __future__ import annotations

import pytest

from langchain_tag.extraction.normativity import (
    is_example_caption,
    looks_declarative,
    normative_cue,
    veto_uncued_labels,
)
from langchain_tag.extraction.span_detection import NORMATIVE_TYPES


@pytest.mark.parametrize(
    "sentence",
    [
        "A function must not use a mutable object as a default argument value.",
        "Public functions should have a docstring.",
        "Wildcard imports are forbidden.",
        "Never write a bare `except:` clause.",
        "Use f-strings rather than `%` formatting.",
        "The Team may not exceed the Salary Cap.",
        "Tabs are disallowed for indentation.",
        "Players are eligible for a Qualifying Offer after four seasons.",
    ],
)
def test_normative_wording_is_found(sentence: str) -> None:
    assert normative_cue(sentence) is not None


@pytest.mark.parametrize(
    "sentence",
    [
        "Northwind's platform team wrote this policy in 2024, after a run of incidents, and revises it each quarter.",
        "Reviewers are volunteers from every product group.",
        "The committee adopted these guidelines in 2015.",
        "Its first edition appeared in 2019.",
    ],
)
def test_background_has_no_cue_and_reads_as_a_fact(sentence: str) -> None:
    assert normative_cue(sentence) is None and looks_declarative(sentence)


@pytest.mark.parametrize(
    "sentence",
    ["Put each imported module on its own `import` line.", "- Define named functions with `def`.", "Catch it early."],
)
def test_imperatives_are_not_called_declarative(sentence: str) -> None:
    assert not looks_declarative(sentence)


def test_only_uncued_declarative_sentences_lose_their_normative_label() -> None:
    sentences = [
        "Reviewers are volunteers from every product group.",  # no cue, declarative: vetoed
        "Put each imported module on its own line.",  # imperative: kept
        "Reviewers must sign each review.",  # cue: kept
        "The team wrote it in 2019.",  # background already: unchanged, not noted
    ]
    labels = ["requirement", "requirement", "requirement", "background"]
    notes: list[str] = []
    out = veto_uncued_labels(sentences, labels, NORMATIVE_TYPES, where="doc#1", notes=notes)
    assert out == ["background", "requirement", "requirement", "background"]
    assert len(notes) == 1 and "doc#1: sentence 1 was labelled requirement but states no norm" in notes[0]


@pytest.mark.parametrize("sentence", ["Yes:", "Rather not:", "Definitely not:", "# Wrong:", "Don't do this:"])
def test_example_captions_are_recognised(sentence: str) -> None:
    assert is_example_caption(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "- Immediately before a comma, semicolon, or colon:",
        "Never write a bare except clause.",
        "Use spaces: always.",
        "Avoid wildcard imports:",
    ],
)
def test_rules_are_not_captions(sentence: str) -> None:
    assert not is_example_caption(sentence)


def test_a_caption_labelled_a_rule_becomes_background_with_a_note() -> None:
    notes: list[str] = []
    labels = veto_uncued_labels(
        ["Avoid trailing whitespace.", "Rather not:"],
        ["prohibition", "prohibition"],
        NORMATIVE_TYPES,
        where="s1",
        notes=notes,
    )
    assert labels == ["prohibition", "background"]
    assert notes == ["s1: sentence 2 was labelled prohibition but only captions examples; read as background"]
