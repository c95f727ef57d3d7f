"""A programmatic second opinion on phase 1: does a sentence have any normative wording at all?

Small extraction models label background sentences ("The team wrote this
policy in 2024.", "Reviewers are volunteers.") as requirements, and every such
label becomes a rule that fires on nothing the policy asks. English states a
norm through a small closed set of devices: a modal or deontic word ("must",
"shall", "should", "may", "is forbidden", "is required", "prefer", "avoid",
"never", "only", ...) or an imperative ("Use four spaces.", "If you raise,
chain it."). A sentence with neither is not a rule.

The check is deliberately one-sided: it only *vetoes* a normative label on a
sentence that has no such device and reads as a plain declarative (it starts
with a determiner, a pronoun, a possessive or a number, or its second word is
a common finite verb). Anything it cannot tell keeps the model's label, so a
rule is never lost to a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["is_example_caption", "looks_declarative", "normative_cue", "veto_uncued_labels"]

# Modal and deontic vocabulary (stems match their inflections), negation,
# and the words that carry a preference, a limit or an exception.
_CUES = re.compile(
    r"\b("
    r"must|shall|should|ought|may|might|can|cannot|can't|could|will|won't|would|need(s|ed)?|has to|have to|is to|are to"
    r"|requir\w*|mandat\w*|oblig\w*|compuls\w*|prohibit\w*|forbid\w*|disallow\w*|allow\w*|permit\w*|permissi\w*"
    r"|eligib\w*|entitl\w*|exempt\w*|except\w*|unless|only|never|always|not|no|nor|n't|avoid\w*|prefer\w*"
    r"|recommend\w*|advis\w*|encourag\w*|discourag\w*|acceptable|unacceptable|appropriate|inappropriate"
    r"|instead|rather|better|best|worse|wrong|correct|okay|ok|fine|limit\w*|maximum|minimum|at least|at most|up to"
    r"|exceed\w*|subject to|appl(y|ies|ied)|responsib\w*|duty|duties|right to|expected|ensure\w*|make sure"
    r")\b",
    re.IGNORECASE,
)

# Words a declarative sentence typically starts with (a subject), never an imperative verb.
_SUBJECT_STARTS = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "each",
        "every",
        "all",
        "some",
        "any",
        "both",
        "either",
        "neither",
        "our",
        "its",
        "their",
        "his",
        "her",
        "my",
        "your",
        "it",
        "they",
        "we",
        "he",
        "she",
        "i",
        "you",
        "there",
        "here",
        "one",
        "many",
        "most",
        "several",
        "few",
        "such",
    ]
)

# Common finite verbs: "Reviewers are volunteers", "The team wrote ...".
_FINITE = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "does",
        "do",
        "did",
        "became",
        "becomes",
        "began",
        "begins",
        "wrote",
        "writes",
        "revised",
        "revises",
        "came",
        "comes",
        "went",
        "goes",
        "met",
        "meets",
        "took",
        "takes",
        "made",
        "makes",
        "gave",
        "gives",
        "grew",
        "grows",
        "started",
        "starts",
        "includes",
        "included",
        "contains",
        "contained",
        "consists",
        "consisted",
        "describes",
        "described",
        "explains",
        "explained",
        "covers",
        "covered",
        "lists",
        "listed",
        "shows",
        "showed",
    ]
)

_WORD = re.compile(r"[A-Za-z][\w'-]*|\d[\d.,]*")
_LEAD = re.compile(r"^[\s\-*+>•#\d.)(]*")


def normative_cue(sentence: str) -> str | None:
    """The first modal, deontic, preference or limit word in ``sentence``, or ``None``."""
    found = _CUES.search(sentence)
    return found.group(0) if found else None


def looks_declarative(sentence: str) -> bool:
    """Whether ``sentence`` reads as a plain statement of fact rather than an imperative.

    True when it starts with a subject-like word (determiner, pronoun,
    possessive or number) or its second word is a common finite verb.
    Anything else, including every sentence that starts with a verb, is not
    called declarative.
    """
    words = _WORD.findall(_LEAD.sub("", sentence))
    if not words:
        return False
    first = words[0].lower()
    if first in _SUBJECT_STARTS or first.endswith(("'s", "s'")) or first[0].isdigit():
        return True
    return len(words) > 1 and words[1].lower() in _FINITE


_CAPTION = re.compile(r"^\W*(?:\S+\s+){0,2}\S+:\s*$")
_CAPTION_WORDS = re.compile(
    r"\b(yes|no|not|correct|incorrect|wrong|right|good|bad|ok|okay|better|worse|rather|definitely|example|examples"
    r"|e\.g|this|these|instead)\b",
    re.IGNORECASE,
)


def is_example_caption(sentence: str) -> bool:
    """Whether ``sentence`` captions examples: up to three words ending in a colon, with a word such as "yes",
    "wrong", "not" or "this" ("Yes:", "Rather not:", "Don't do this:").

    Style guides put such captions before good and bad examples; the norm is
    in the sentence the examples illustrate, never in the caption. A short
    rule that introduces examples ("Avoid wildcard imports:") is no caption.
    """
    text = sentence.strip()
    return bool(_CAPTION.match(text) and _CAPTION_WORDS.search(text))


def veto_uncued_labels(
    sentences: Sequence[str], labels: Sequence[str], normative: frozenset[str], *, where: str, notes: list[str]
) -> list[str]:
    """Relabel as background each sentence labelled normative that has no normative wording and reads as a fact,
    and each example caption (:func:`is_example_caption`).

    Args:
        sentences: The sentences' text.
        labels: The model's label per sentence.
        normative: The labels that make a rule.
        where: The section id, for the notes.
        notes: Each veto is reported here.

    Returns:
        The labels, with the vetoed ones set to ``"background"``.
    """
    out = list(labels)
    for number, (sentence, label) in enumerate(zip(sentences, labels, strict=True), start=1):
        if label in normative and is_example_caption(sentence):
            out[number - 1] = "background"
            notes.append(
                f"{where}: sentence {number} was labelled {label} but only captions examples; read as background"
            )
        elif label in normative and normative_cue(sentence) is None and looks_declarative(sentence):
            out[number - 1] = "background"
            notes.append(
                f"{where}: sentence {number} was labelled {label} but states no norm "
                "(no modal, deontic or imperative wording); read as background"
            )
    return out
