"""The extraction prompts (phases 1-4), kept apart from the code that sends them.

Each prompt is a pure function from its inputs to a list of chat messages.
Prompts carry a version string; caches and stores key on it, so editing a
prompt's wording must bump its version.

Layout rule for the judge prompts: the fixed instructions come first (system
message), then the task input, then the rule. Every judgment for one input
therefore shares the longest possible prefix, which prompt caches (OpenAI,
DeepSeek, vLLM prefix caching, llama.cpp KV reuse) can reuse.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_tag.rules import Rule

__all__ = [
    "DEFAULT_TASK_INPUT",
    "EXTRACTION_PROMPT_VERSION",
    "PHASE_PROMPT_VERSIONS",
    "SPAN_LABELS",
    "decomposition_messages",
    "dedup_messages",
    "operationalisation_instructions",
    "operationalisation_messages",
    "span_detection_messages",
]

VerdictFormat = Literal["token", "json"]

# --------------------------------------------------------------------------
# Stage 1: extraction (phases 1-4). Phase 5 is programmatic.
# --------------------------------------------------------------------------
# v11: phase 3 names the violating element as a noun phrase; the condition is "the input contains ...".
# v12: replies on one line with short keys; phase 2 names a span kept whole by its id only (the program copies
# its text); phase 3 no longer echoes ids; phase 4 gives no explanation.
# v13: phase 1 answers with a map from sentence number to label ({"1": "requirement", ...}), half the tokens of
# a list of {"n", "label"} objects; phases 2-4 are unchanged (their stored replies stay valid).
EXTRACTION_PROMPT_VERSION = "extract-v13"
PHASE_PROMPT_VERSIONS: dict[int, str] = {1: "extract-v13", 2: "extract-v12", 3: "extract-v12", 4: "extract-v12"}
"""The version of each phase's prompt: a stored reply is reused only under its phase's version."""
DEFAULT_TASK_INPUT = "whatever the rules are applied to (a text, a piece of code, a case description)"

_JSON_ONLY = (
    "Reply with one JSON object on a single line, without indentation, and nothing else: no prose, no code fences."
)

SPAN_LABELS: tuple[str, ...] = (
    "requirement",
    "prohibition",
    "recommendation",
    "permission",
    "exception",
    "conditional",
    "continuation",
    "background",
)
"""Phase 1's sentence labels: the six normative types, a continuation of the previous rule, and background."""

_SPAN_SYSTEM = (
    """You read {domain} documents one sentence at a time and label what each sentence does. The rules will later be applied to {task_input}.
Labels:
- requirement: something must or should be done;
- prohibition: something must not be done ("never", "do not", "is forbidden");
- recommendation: something is advised or preferred ("prefer", "avoid", "rather than", "usually");
- permission: something may be done;
- exception: a nearby rule does not apply in some case;
- conditional: something must or may be done only when a condition holds;
- continuation: the sentence completes the rule of the sentence just before it, for example by saying what to do instead;
- background: anything that tells nobody what to do: history, motivation, who wrote or maintains the document, descriptions, definitions, headings, examples.
A sentence is a rule only if it tells its reader to do, avoid or may do something. For example, "The committee adopted these guidelines in 2015." and "Inspectors are drawn from every region." are background; "Inspectors must sign each report." is a requirement.
Give every sentence exactly one label.
"""
    + _JSON_ONLY
)

_SPAN_USER = """Section title: {title}
Sentences:
{sentences}

Return {{"labels": {{"1": "<label>", "2": "<label>", ...}}}} with one entry per sentence, "1" to "{count}", in order."""


def span_detection_messages(
    *, domain: str, title: str, sentences: Sequence[str], task_input: str = DEFAULT_TASK_INPUT
) -> list[BaseMessage]:
    """Phase 1: label every sentence of one document section.

    The sentences are numbered; the reply refers to them by number, so the
    program, not the model, copies the text (spans are verbatim by
    construction, and the reply is a few tokens per sentence).
    """
    listing = "\n".join(f"[{i}] {' '.join(s.split())}" for i, s in enumerate(sentences, start=1))
    return [
        SystemMessage(_SPAN_SYSTEM.format(domain=domain, task_input=task_input)),
        HumanMessage(_SPAN_USER.format(title=title or "(untitled)", sentences=listing, count=len(sentences))),
    ]


_DECOMP_SYSTEM = (
    """You split {domain} rules into atomic units. An atomic unit has one subject, one situation in which it applies, and one action.
Split a span when it: lists several independent actions; gives alternative conditions ("if A or B" becomes one unit for A and one for B); or gives different subjects different actions.
Do not split: joint conditions ("if A and B" stays one unit); an exception from the rule it qualifies; a prohibition from the alternative it prescribes ("do not A; do B instead" and "use B rather than A" stay one unit).
Each unit must read on its own (resolve "this", "such", "it"). Never add a duty, limit or permission the span does not state.
"""
    + _JSON_ONLY
)

_DECOMP_USER = """Spans:
{spans}

Return {{"units": [...]}} with, for each span in order: {{"span": "<span_id>"}} alone when the span is already one atomic unit (its text is kept as written), or one {{"span": "<span_id>", "text": "<self-contained statement>"}} per unit when you split it."""


def decomposition_messages(*, domain: str, spans: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """Phase 2: decompose normative spans into atomic units."""
    listing = json.dumps(
        [{"span_id": s["span_id"], "text": s["text"], "normative_type": s.get("normative_type", "")} for s in spans],
        ensure_ascii=False,
        indent=1,
    )
    return [
        SystemMessage(_DECOMP_SYSTEM.format(domain=domain)),
        HumanMessage(_DECOMP_USER.format(spans=listing)),
    ]


_OPER_SYSTEM = (
    """You turn atomic {domain} statements into rules that a checker applies to one task input at a time; here a task input is {task_input}.
A rule fires on a task input that breaks its statement, and its action says how to fix that input. For each statement write:
- "violation": a noun phrase naming what a breaking task input contains: the thing a reader would point at. It must be visible by reading that input alone. For a prohibition ("never X", "X is forbidden") name X itself; for a requirement ("every Z must have Y") name a Z without Y; for a preference ("use A rather than B") name the B. Name something that is there to see, never only what is missing: "a table without a caption", not "no caption". Give no reason and no remedy in it.
- "action": one concrete change to the task input that makes it follow the statement. A vague goal such as "improve", "ensure quality" or "make it appropriate" is not an action.
- "name": 3 to 8 words that name the violation and tell the rule apart from its neighbours.
- "tags": 1 to 3 short lower-case words naming the rule's subject.
If a statement asks nothing of anyone (it only tells history, describes people or explains), write "violation": "none" for it.

Four examples from other domains, to show the shift from statement to rule (do not reuse their wording):
Statement: "Visitors must be signed in before they enter the office."
Rule: {{"violation": "a visitor let into the office without signing in at reception", "action": "have the visitor sign in at reception before letting them in", "name": "visitor admitted without signing in", "tags": ["visitors", "access"]}}
Statement: "Articles must not take sides in a dispute."
Rule: {{"violation": "an evaluative judgement stated in the writer's own voice without saying who holds it", "action": "replace the evaluative word with a neutral description, or attribute the judgement to a source the sentence already names", "name": "unattributed evaluative wording", "tags": ["neutrality", "attribution"]}}
Statement: "Give sizes in metric units rather than in inches."
Rule: {{"violation": "a size given in inches", "action": "convert the size to centimetres and give it in centimetres", "name": "size given in inches", "tags": ["units"]}}
Statement: "Every invoice must show the customer's tax number."
Rule: {{"violation": "an invoice that does not show the customer's tax number", "action": "add the customer's tax number to the invoice", "name": "invoice missing customer tax number", "tags": ["invoices", "tax"]}}
"""
    + _JSON_ONLY
)

_OPER_USER = """Statements to turn into rules:
{units}

Return {{"rules": [{{"violation": "<noun phrase>", "action": "...", "name": "<rule name>", "tags": ["..."]{rich}}}]}} with exactly one rule per statement, in the order given."""


def operationalisation_instructions() -> str:
    """Phase 3's fixed instructions and worked examples, as the model reads them (domain and input left as slots).

    A small model sometimes answers with an example's wording instead of its
    statement's; phase 3 checks its replies against this text.
    """
    return _OPER_SYSTEM


def operationalisation_messages(
    *,
    domain: str,
    units: Sequence[dict[str, Any]],
    task_input: str = DEFAULT_TASK_INPUT,
    extra_fields: Mapping[str, str] | None = None,
) -> list[BaseMessage]:
    """Phase 3: write one operational rule per atomic unit.

    ``extra_fields`` maps extra rule field names to what each must hold (a
    domain schema); the reply is asked to give them too.
    """
    listing = json.dumps(
        [{"id": u["atomic_id"], "statement": u["text"]} for u in units],
        ensure_ascii=False,
        indent=1,
    )
    system = _OPER_SYSTEM.format(domain=domain, task_input=task_input)
    extra = ""
    if extra_fields:
        system += "\nAlso give these fields:\n" + "\n".join(f'- "{k}": {v}' for k, v in extra_fields.items())
        extra = "".join(f', "{k}": ...' for k in extra_fields)
    return [SystemMessage(system), HumanMessage(_OPER_USER.format(units=listing, rich=extra))]


_DEDUP_SYSTEM = (
    """You audit a set of {domain} rules that share a topic. Compare them in pairs and report only the pairs that are not independent:
- duplicate: both say the same thing;
- subsumption: one rule's case is wholly contained in the other's;
- overlap: they apply to some of the same inputs with compatible actions;
- conflict: they can apply to the same input with actions that cannot both be followed.
For each reported pair choose preferred_action: merge (keep one rule), keep_both, or manual_review.
"""
    + _JSON_ONLY
)

_DEDUP_USER = """Rules:
{rules}

Return {{"pairs": [{{"a": "<rule_id>", "b": "<rule_id>", "relation": "duplicate|subsumption|overlap|conflict", "do": "merge|keep_both|manual_review"}}]}}. Return {{"pairs": []}} if all are independent."""


def dedup_messages(*, domain: str, rules: Sequence[Rule]) -> list[BaseMessage]:
    """Phase 4: label the non-independent pairs among rules sharing a tag."""
    listing = json.dumps(
        [{"rule_id": r.rule_id, "rule_name": r.rule_name, "condition": r.condition, "action": r.action} for r in rules],
        ensure_ascii=False,
        indent=1,
    )
    return [SystemMessage(_DEDUP_SYSTEM.format(domain=domain)), HumanMessage(_DEDUP_USER.format(rules=listing))]
