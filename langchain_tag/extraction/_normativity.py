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

A second veto covers sentences about the document itself: its scope, layout
or status ("This policy applies to all contractors.", "Each section below
states when a rule applies and what the writer should do.", "It is not a
complete policy."). Their modal words belong to what they describe, so the
first check cannot see that they ask nothing of an input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["describes_document", "is_example_caption", "looks_declarative", "normative_cue", "veto_uncued_labels"]

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
    """Whether ``sentence`` captions examples.

    A caption is up to three words ending in a colon, with a word such as
    "yes", "wrong", "not" or "this" ("Yes:", "Rather not:", "Don't do this:").

    Style guides put such captions before good and bad examples; the norm is
    in the sentence the examples illustrate, never in the caption. A short
    rule that introduces examples ("Avoid wildcard imports:") is no caption.
    """
    text = sentence.strip()
    return bool(_CAPTION.match(text) and _CAPTION_WORDS.search(text))


# Nouns that name a document or a part of it, and verbs that say what it holds.
_DOC_NOUN = (
    r"(?:document|documents|policy|policies|guide|guides|guideline|guidelines|section|sections|page|pages|text"
    r"|handbook|manual|standard|example|chapter|chapters|list|summary|overview|excerpt|excerpts|draft|version)"
)
_CONTENT_VERB = (
    r"(?:states?|describes?|explains?|lists?|covers?|gives?|sets? out|summari[sz]es?|outlines?|presents?|collects?"
    r"|defines?|introduces?)"
)
# "This document ...", "These guidelines ...", "Each section below ...": the document or a part of it, named so
# that it can only be this document. "Each section ..." or "The summary ..." alone may be a part of the input
# ("Each section states its purpose in its first sentence." is a rule for reports), so those need "below" and the like.
_LOCATIVE = r"(?:below|above|here|that follows|following)"
_DOC_SUBJECT = (
    rf"^\W*(?:(?:this|these|our)\s+(?:[\w'-]+\s+){{0,2}}?{_DOC_NOUN}\b(?:\s+{_LOCATIVE})?"
    rf"|(?:the|each|every|all)\s+(?:[\w'-]+\s+){{0,2}}?{_DOC_NOUN}\s+{_LOCATIVE})\s+"
)
_DOC_CONTENT = re.compile(_DOC_SUBJECT + rf"{_CONTENT_VERB}\b", re.IGNORECASE)
# "This policy applies to ...", "These guidelines are ...": scope or status, unless a modal follows.
_DOC_SCOPE = re.compile(_DOC_SUBJECT + r"(?:is|are|was|were|applies|apply)\b", re.IGNORECASE)
# "This is a short example ...", "It is not a complete policy": the document named as what "it" or "this" is.
_DOC_IDENTITY = re.compile(
    rf"^\W*(?:it|this|these)\s+(?:is|are|was|were)\s+(?:not\s+)?(?:a|an|the|any|only|one|our)\b[^,;:]*?"
    rf"\b{_DOC_NOUN}\b",
    re.IGNORECASE,
)
# "It is the policy of the company that staff wear badges" / "... to require badges" states a norm.
_NORM_CLAUSE = re.compile(r"\b(that|to)\b", re.IGNORECASE)
# Words that make a sentence about the document ask something after all ("This policy is binding and must ...").
_MODAL = re.compile(
    r"\b(must|shall|should|ought|may|might|can|cannot|can't|need(s|ed)? to|has to|have to|requir\w*|mandat\w*"
    r"|forbid\w*|prohibit\w*|allow\w*|permit\w*|expected|never|always|avoid\w*|prefer\w*|binding"
    r"|only|unless|except\w*|at least|at most|no more than|no less than|limit\w*|maximum|minimum)\b",
    re.IGNORECASE,
)


def describes_document(sentence: str) -> bool:
    """Whether ``sentence`` is about the document itself (its scope, layout or status), not about an input.

    True for a sentence whose subject is the document or a part of it and whose
    verb says what it holds ("Each section below states when a rule applies
    and what the writer should do."), and, when no modal word follows, for
    one that gives its scope or status ("This policy applies to all
    contractors.", "It is not a complete policy."). A document that itself
    asks something ("This policy requires every visitor to sign in.", "These
    guidelines are binding and must be followed.", "It is the policy of the
    company that staff wear badges.") is not matched.
    """
    text = " ".join(sentence.split())
    if _DOC_CONTENT.search(text):
        return True
    scope = _DOC_SCOPE.search(text)
    if scope:
        return _MODAL.search(text, scope.end()) is None
    identity = _DOC_IDENTITY.search(text)
    if identity is None:
        return False
    return not (_MODAL.search(text, identity.end()) or _NORM_CLAUSE.search(text, identity.end()))


def veto_uncued_labels(
    sentences: Sequence[str], labels: Sequence[str], normative: frozenset[str], *, where: str, notes: list[str]
) -> list[str]:
    """Relabel as background the sentences labelled normative that state no norm.

    These are the sentences labelled normative that have no normative wording
    and read as a fact, each example caption (:func:`is_example_caption`) and
    each sentence about the document itself (:func:`describes_document`).

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
        elif label in normative and describes_document(sentence):
            out[number - 1] = "background"
            notes.append(
                f"{where}: sentence {number} was labelled {label} but describes the document itself "
                "(its scope, layout or status); read as background"
            )
        elif label in normative and normative_cue(sentence) is None and looks_declarative(sentence):
            out[number - 1] = "background"
            notes.append(
                f"{where}: sentence {number} was labelled {label} but states no norm "
                "(no modal, deontic or imperative wording); read as background"
            )
    return out
