"""Phase 3: operationalisation of atomic units into condition -> action rules.

Units go in batches; the reply must give one rule per unit, keyed by
``atomic_id``. A unit whose rule is missing or invalid is left to the caller
(the transformer retries it once, then reports it). ``source_text`` is copied
from the unit's verbatim original text by the program rather than retyped by
the model, which saves output tokens and cannot drift from the source.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_tag.calls._replies import local_ids, parse_json_items, with_aliases
from langchain_tag.errors import ParseError
from langchain_tag.extraction._calls import Call
from langchain_tag.extraction._decomposition import AtomicUnit
from langchain_tag.extraction.prompts import operationalisation_instructions, operationalisation_messages

__all__ = [
    "RuleDraft",
    "collect_rules",
    "echoes_instructions",
    "operationalisation_calls",
    "parse_rules",
    "reads_as_instruction",
    "strip_consequent",
    "unoperationalised_draft",
    "violation_condition",
]

RuleDraft = dict[str, Any]
"""Rule fields from the model, before ids and provenance are assigned."""

_NO_VIOLATION = frozenset({"none", "n/a", "no violation", "nothing"})
_ABOUT_INPUT = re.compile(r"(?i)(the|this|an?) (task )?input\b")
_WORDS = re.compile(r"[A-Za-z0-9][\w'-]*")
# Deontic words say what to do; a description of an input has none. ", not with X" sets the compliant form
# against the breaking one, and "and never X" tacks a second instruction on.
_INSTRUCTION = re.compile(
    r"(?i)\b(must|should|shall|ought to|do not|don't|does not need to)\b"
    r"|,\s*not\s+(with|by|using|via)\b"
    r"|\band\s+never\b"
)


_ALIASES = {"id": "atomic_id", "name": "rule_name", "tags": "category_tags"}


def _local_id(raw: dict[str, Any], position: int, ids: Sequence[str], count_matches: bool) -> str:
    """The batch-local id a raw rule answers: its ``atomic_id``, or its position when ids were dropped."""
    given = str(raw.get("atomic_id") or "").strip()
    if given not in ids and count_matches:
        return ids[position]
    return given


def _is_complete(raw: dict[str, Any]) -> bool:
    condition = str(raw.get("violation") or raw.get("condition") or "").strip()
    if condition.strip(" .\"'").lower() in _NO_VIOLATION:
        return True
    return bool(condition and str(raw.get("action") or "").strip() and str(raw.get("rule_name") or "").strip())


def parse_rules(text: str, *, count: int) -> list[dict[str, Any]]:
    """Read phase 3's reply for a batch of ``count`` units: one complete rule for each.

    A rule is complete with a name, a violation and an action, or with the
    violation ``"none"`` (the statement asks nothing). A reply that leaves a
    unit without one (fewer rules than asked, wrong field names, a cut-off
    item) is a failed call, retried and then reported, never a partial success.

    Raises:
        ParseError: When any unit of the batch gets no complete rule.
    """
    items = [with_aliases(item, _ALIASES) for item in parse_json_items(text, "rules")]
    ids = local_ids("A", count)
    answered = {
        local
        for position, raw in enumerate(items)
        if _is_complete(raw)
        for local in [_local_id(raw, position, ids, len(items) == count)]
    }
    missing = [local for local in ids if local not in answered]
    if missing:
        shown = ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else "")
        raise ParseError(
            f"the reply gives complete rules for {count - len(missing)} of {count} units; missing: {shown}"
        )
    return items


def operationalisation_calls(
    batches: Sequence[Sequence[AtomicUnit]],
    *,
    domain: str,
    task_input: str,
    extra_fields: Mapping[str, str] | None = None,
) -> list[Call[list[dict[str, Any]]]]:
    """One phase-3 call per batch of units."""
    calls = []
    for batch in batches:
        # Ids local to the batch: the prompt does not depend on units elsewhere in the document.
        payload = [
            {"atomic_id": local, "text": u.text, "original_text": u.original_text}
            for local, u in zip(local_ids("A", len(batch)), batch, strict=True)
        ]
        messages = operationalisation_messages(
            domain=domain, units=payload, extra_fields=extra_fields, task_input=task_input
        )
        parse = functools.partial(parse_rules, count=len(batch))
        calls.append(Call(3, f"{batch[0].atomic_id}..{batch[-1].atomic_id}", messages, parse))
    return calls


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return []
    return [str(t).strip().lower() for t in value if str(t).strip()][:3]


def _extra_value(value: Any) -> Any:
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return str(value).strip()


def violation_condition(violation: str) -> str:
    """The rule's condition from phase 3's violation: ``"the input contains <noun phrase>"``.

    A violation already written as a statement about the input (``"the input
    uses ..."``) is kept as it is.
    """
    text = " ".join(violation.split()).rstrip(".")
    if _ABOUT_INPUT.match(text):
        return text[0].lower() + text[1:]
    first = text.split()[0]
    if not any(c.isupper() for c in first[1:]):  # keep acronyms and names as written: "API", "UTF-8", "McDonald"
        text = text[0].lower() + text[1:]
    return f"the input contains {text}"


# Words too common to tie a violation to its statement.
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "not",
        "no",
        "nor",
        "of",
        "in",
        "on",
        "at",
        "to",
        "by",
        "for",
        "with",
        "without",
        "from",
        "into",
        "as",
        "is",
        "are",
        "be",
        "that",
        "this",
        "it",
        "its",
        "any",
        "every",
        "each",
        "one",
    ]
)


def _content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORDS.findall(text) if w.lower() not in _FUNCTION_WORDS}


@functools.cache
def _instruction_text() -> str:
    return " ".join(_WORDS.findall(operationalisation_instructions().lower()))


def echoes_instructions(violation: str, statement: str) -> bool:
    """Whether a violation repeats phase 3's own instructions or examples rather than its statement.

    True when the phrase (three words or more) occurs word for word in the
    instructions and none of its content words occurs in the statement: the
    model copied an example ("a table without a caption") for a statement
    about something else.
    """
    words = _WORDS.findall(violation.lower())
    if len(words) < 3 or f" {' '.join(words)} " not in f" {_instruction_text()} ":
        return False
    return not (_content_words(violation) & _content_words(statement))


# ", then ..." in a condition: the start of a conditional statement's consequent.
_THEN = re.compile(r",\s+then\s+", re.IGNORECASE)


def strip_consequent(condition: str, statement: str) -> str | None:
    """The condition without the "then ..." clause it copied from its statement, or ``None`` when it has none.

    A small model sometimes turns a conditional statement ("If a sentence
    praises its subject ..., then replace the word ...") into a condition
    that carries the whole statement, action included. The condition is the
    part before ", then", and only when the words after it open the
    statement's own "then" clause; a condition that merely tells a sequence
    ("a loop that reads the file, then writes it") is kept as it is.
    """
    found = list(_THEN.finditer(condition))
    if not found:
        return None
    last = found[-1]
    head, tail = condition[: last.start()].rstrip(), condition[last.end() :].split()
    if len(tail) < 2 or len(_WORDS.findall(head)) < 5:
        return None
    opening = r"\bthen\s+" + r"\s+".join(re.escape(word) for word in tail[:3])
    return head if re.search(opening, " ".join(statement.split()), re.IGNORECASE) else None


def reads_as_instruction(condition: str) -> bool:
    """Whether a rule's condition (or violation) restates its statement's instruction instead of describing an input.

    A small model sometimes copies the statement into the violation: "a handler
    that ... must not consist of nothing but `pass`", or "a key test with
    `key in mapping`, not with `key in mapping.keys()`". Such a condition names
    the compliant form or no form at all, so a judge cannot check it. Words
    that merely describe ("a variable never read", "`lambda` instead of
    `def`") do not count.
    """
    return bool(_INSTRUCTION.search(condition))


def _draft(raw: dict[str, Any], unit: AtomicUnit, extra_fields: Sequence[str] = ()) -> RuleDraft | None:
    name = str(raw.get("rule_name") or "").strip()
    # Prompts ask for the "violation": a noun phrase naming what a breaking input contains.
    violation = str(raw.get("violation") or "").strip()
    condition = violation_condition(violation) if violation else str(raw.get("condition") or "").strip()
    action = str(raw.get("action") or "").strip()
    if (violation or condition).strip(" .\"'").lower() in _NO_VIOLATION:
        return {"no_rule": True}
    if violation and echoes_instructions(violation, unit.original_text):
        return {"no_rule": True, "echo": violation}
    if not (name and condition and action):
        return None
    draft: RuleDraft = {
        "rule_name": name,
        "condition": condition,
        "action": action,
        # Copied from the unit by the program, not by the model: verbatim by construction.
        "source_text": unit.original_text,
        "category_tags": _tags(raw.get("category_tags")) or ["general"],
    }
    for key in extra_fields:
        if raw.get(key) not in (None, ""):
            draft[key] = _extra_value(raw[key])
    return draft


def collect_rules(
    batch: Sequence[AtomicUnit],
    raw_rules: Sequence[dict[str, Any]] | None,
    *,
    notes: list[str],
    extra_fields: Sequence[str] = (),
    declined: list[AtomicUnit] | None = None,
) -> tuple[list[tuple[AtomicUnit, RuleDraft]], list[AtomicUnit]]:
    """Match raw rules to the batch's units.

    A unit the model answers with the violation "none" (the statement asks
    nothing of anyone) gets no rule: it is added to ``declined``, not
    reported missing.

    ``extra_fields`` are the extra rule fields the prompt asked for; they are
    kept when the model gave them.

    Returns:
        ``(drafts, missing)``: one draft per unit that got a valid rule, and
        the units that did not.
    """
    by_id = {u.atomic_id: u for u in batch}
    local = dict(zip(local_ids("A", len(batch)), (u.atomic_id for u in batch), strict=True))
    drafts: dict[str, RuleDraft] = {}
    ids = list(local)
    for position, raw in enumerate(raw_rules or []):
        atomic_id = _local_id(raw, position, ids, len(raw_rules or []) == len(batch))  # ids dropped, order kept
        atomic_id = local.get(atomic_id, atomic_id)
        unit = by_id.get(atomic_id)
        if unit is None:
            notes.append(f"phase 3: rule for unknown unit {atomic_id!r}; dropped")
            continue
        draft = _draft(raw, unit, extra_fields)
        if draft is None:
            notes.append(f"phase 3: rule for {atomic_id} lacks a name, condition or action")
            continue
        cut = None if draft.get("no_rule") else strip_consequent(draft["condition"], unit.original_text)
        if cut is not None and atomic_id not in drafts:
            notes.append(
                f"phase 3: {atomic_id}'s condition carried its statement's consequent (\", then ...\"); "
                "kept what comes before it"
            )
            draft["condition"] = cut
        drafts.setdefault(atomic_id, draft)
    refused = [u for u in batch if drafts.get(u.atomic_id, {}).get("no_rule")]
    for unit in refused:
        echo = drafts[unit.atomic_id].get("echo")
        if echo:
            notes.append(
                f"phase 3: {unit.atomic_id}'s violation {echo!r} repeats the prompt's own example, not its "
                "statement; left out"
            )
        else:
            notes.append(f"phase 3: {unit.atomic_id} states no rule (the model found nothing it asks); left out")
    if declined is not None:
        declined.extend(refused)
    found = [(u, drafts[u.atomic_id]) for u in batch if u.atomic_id in drafts and u not in refused]
    missing = [u for u in batch if u.atomic_id not in drafts]
    return found, missing


def unoperationalised_draft(unit: AtomicUnit, normative_type: str) -> RuleDraft:
    """Phase 3 switched off: the unit's own text serves as condition and action."""
    words = _WORDS.findall(unit.text)
    return {
        "rule_name": " ".join(words[:8]) or unit.atomic_id,
        "condition": unit.text,
        "action": unit.text,
        "source_text": unit.original_text,
        "category_tags": [normative_type],
    }
