from __future__ import annotations

import pytest

from langchain_tag.extraction._normativity import (
    describes_document,
    is_example_caption,
    looks_declarative,
    normative_cue,
    veto_uncued_labels,
)
from langchain_tag.extraction._span_detection import NORMATIVE_TYPES


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


@pytest.mark.parametrize(
    "sentence",
    [
        "This policy applies to all contractors.",
        "This document describes how we review code.",
        "The guidelines below cover Python code only.",
        "Each section below states when a rule applies and what the writer should do.",
        "This section lists the checks every reviewer must run.",
        "It is not a complete policy.",
        "It is not any real encyclopedia's policy text and is not complete.",
        "This is a summary of the review rules.",
        "> This is a short illustrative example written for the review team.",
    ],
)
def test_sentences_about_the_document_itself_are_recognised(sentence: str) -> None:
    assert describes_document(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "This policy requires every visitor to sign in.",
        "These guidelines are binding and must be followed.",
        "It is the policy of the company that staff wear badges.",
        "It is the policy of the company to require badges.",
        "This section applies to contractors, who must wear badges.",
        "This is the only text you may publish.",
        "All articles are expected to be neutral.",
        "The section heading must be bold.",
        "Every page must show the date.",
        "The text of a comment should be a full sentence.",
        "Articles describe subjects; they do not promote, attack or take sides.",
        "Use four spaces per indentation level.",
        # Parts of the input, in a policy for reports: not this document.
        "Each section states its purpose in its first sentence.",
        "The summary is at most one page.",
        "Each page is numbered at the bottom.",
    ],
)
def test_rules_that_name_a_document_are_not_taken_for_descriptions_of_it(sentence: str) -> None:
    assert not describes_document(sentence)


def test_a_sentence_about_the_document_labelled_a_rule_becomes_background_with_a_note() -> None:
    notes: list[str] = []
    labels = veto_uncued_labels(
        ["Each section below states when a rule applies and what the writer should do.", "Never use tabs."],
        ["requirement", "prohibition"],
        NORMATIVE_TYPES,
        where="s1",
        notes=notes,
    )
    # The first sentence has modal words ("applies", "should"), so only this check can see it asks nothing.
    assert normative_cue("Each section below states when a rule applies and what the writer should do.")
    assert labels == ["background", "prohibition"]
    assert notes == [
        "s1: sentence 1 was labelled requirement but describes the document itself (its scope, layout or status); "
        "read as background"
    ]
