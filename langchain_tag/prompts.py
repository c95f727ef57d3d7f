"""Every prompt the package sends, kept apart from the code that sends them.

Each prompt is a pure function from its inputs to a list of chat messages.
Prompts carry a version string; caches and stores key on it, so editing a
prompt's wording must bump its version.

Layout rule for the judge prompts: the fixed instructions come first (system
message), then the task input, then the rule. Every judgment for one input
therefore shares the longest possible prefix, which prompt caches (OpenAI,
DeepSeek, vLLM prefix caching, llama.cpp KV reuse) can reuse.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_tag.rules import Rule

__all__ = [
    "EXECUTOR_PROMPTS", "EXTRACTION_PROMPT_VERSION", "JUDGE_PROMPTS", "NEGATION_OPENINGS", "PHASE_PROMPT_VERSIONS",
    "SPAN_LABELS", "ExecutorPrompt", "JudgePrompt", "VerdictFormat", "decomposition_messages", "dedup_messages",
    "negate_condition", "operationalisation_messages", "span_detection_messages",
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


# --------------------------------------------------------------------------
# Stage 2: pairwise judgments.
# --------------------------------------------------------------------------
_TOKEN_REPLY = "Answer with one word: YES or NO."


@dataclass(frozen=True)
class JudgePrompt:
    """A pairwise judge prompt: a predicate over (input, rule).

    Attributes:
        name: Registry name, e.g. ``"applicability"``.
        version: Bumped whenever the wording changes.
        system: Fixed instructions, shared by every call.
        render_rule: Renders the rule fields the judge may see.
        question: The question asked after the rule.
        json_reply: The reply instruction used when ``verdict_format="json"``.
        negation: A twin prompt that asks the opposite question (the rule's
            condition negated). With one, every pair is judged twice and its
            score is the contrast of the two answers
            (:class:`~langchain_tag.matcher.PairwiseJudge`): a small judge's
            leaning towards YES, and an input that lifts every answer, count
            on both sides and cancel.
    """

    name: str
    version: str
    system: str
    render_rule: Callable[[Rule], str]
    question: str
    json_reply: str
    negation: JudgePrompt | None = None

    @property
    def scoring_version(self) -> str:
        """What a score depends on: this prompt's version, and its negation's when it has one.

        Calibrations are fitted for, and matched on, this string; the verdict
        cache keys each call on the version of the prompt that made it, so the
        two halves of a contrast share their cache entries with the prompts
        judged alone.
        """
        return self.version if self.negation is None else f"{self.version}+{self.negation.scoring_version}"

    def messages(self, query: str, rule: Rule, verdict_format: VerdictFormat = "token") -> list[BaseMessage]:
        """Build the messages for one judgment: system, then input, then rule.

        The input sits between a ``<<<`` line and a ``>>>`` line
        (:func:`fence_input` escapes any input line that could pass for either),
        and every rule field is rendered on one line (:func:`one_line`), so
        neither an input nor a rule can forge the end of the input block, a
        rule block, the question or a system line.
        """
        reply = _TOKEN_REPLY if verdict_format == "token" else self.json_reply
        user = f"INPUT:\n<<<\n{fence_input(query)}\n>>>\n\nRULE:\n{self.render_rule(rule)}\n\n{self.question} {reply}"
        return [SystemMessage(self.system), HumanMessage(user)]


# An input line that could pass for a fence: ``<<<`` opening it, or ``>>>`` closing it.
_FENCE_LIKE = re.compile(r"^([ \t]*)(?=<<<)|(>>>[ \t]*)$", re.MULTILINE)


def fence_input(query: str) -> str:
    """The input as placed inside the judge prompt's fence.

    A backslash goes before a ``<<<`` that starts a line and before a ``>>>``
    that ends one, so no input line can open or close the fence; everything
    else (``>>>`` doctest prompts included) is left exactly as written, so an
    ordinary input renders as it always did.
    """
    return _FENCE_LIKE.sub(lambda m: f"{m.group(1)}\\" if m.group(2) is None else f"\\{m.group(2)}", query)


def one_line(text: str) -> str:
    """A rule field on one line: runs of whitespace, newlines included, become one space."""
    return " ".join(text.split())


def _render_condition_rule(rule: Rule) -> str:
    # The condition comes first: a rule's name and tags can prime a small
    # judge towards YES, so they follow as identification only. The name is
    # quoted as a JSON string, so a quote in it cannot end it.
    tags = one_line(", ".join(rule.category_tags)) or "-"
    name = json.dumps(one_line(rule.rule_name), ensure_ascii=False)
    return f"Condition: {one_line(rule.condition)}\n(rule {one_line(rule.rule_id)}, {name}; tags: {tags})"


def _render_relevance_rule(rule: Rule) -> str:
    return _render_condition_rule(rule) + f"\nAction: {one_line(rule.action)}"


def _render_statement(rule: Rule) -> str:
    # The condition alone, as a statement to check; the id identifies the rule
    # in traces. Names and tags are left out: they can prime a small judge
    # towards YES, and they cost tokens on every judgment.
    return f"Statement: {one_line(rule.condition)}\n(rule {one_line(rule.rule_id)})"


_NEGATABLE = re.compile(r"^the input contains\s+", re.IGNORECASE)

NEGATION_OPENINGS: tuple[str, str] = ("the input does not contain ", "it is not the case that ")
"""How :func:`negate_condition` opens a negation: for a ``"the input contains ..."`` condition, and for any other."""


def negate_condition(condition: str) -> str:
    """A rule's condition turned into its negation, on one line.

    Phase 3 writes conditions as ``"the input contains <noun phrase>"``; those
    become ``"the input does not contain <noun phrase>"``. Any other condition
    is prefixed with ``"it is not the case that"``.
    """
    text = one_line(condition)
    if _NEGATABLE.match(text):
        return _NEGATABLE.sub(NEGATION_OPENINGS[0], text, count=1)
    return NEGATION_OPENINGS[1] + text


def _render_negated_statement(rule: Rule) -> str:
    # The same layout as _render_statement, so the two halves of a contrast differ only in the statement.
    return f"Statement: {negate_condition(rule.condition)}\n(rule {one_line(rule.rule_id)})"


_STATEMENT_SYSTEM = """You check whether a statement is true of an input. The input can be any kind of text: code, prose, a message, or the description of a case.
Answer YES if the input, as written, makes the statement true. Answer NO if the statement is false of the input, or if the input does not show it: never assume facts the input does not give.
Answer with one word."""

# Worked examples for the few-shot variant, from several domains. They sit in
# the system text, so they belong to the prefix every judgment shares: a
# local prefix cache evaluates them once, and remote providers bill them at
# the cached rate.
_STATEMENT_EXAMPLES = """

Examples (each is a separate case):
INPUT: for i in range(len(prices)): total += prices[i]
Statement: the input loops over list positions to read the list's elements
Answer: YES
INPUT: with open(path) as fh: data = fh.read()
Statement: the input opens a file and never closes it
Answer: NO (the with block closes the file)
INPUT: Refund request: order 4411 arrived 45 days ago; the blender is unopened.
Statement: the input asks for a refund more than 30 days after delivery
Answer: YES (45 days is more than 30)
INPUT: The bridge opened in 2019 and carries about 40,000 cars a day.
Statement: the input praises its subject in the writer's own voice
Answer: NO (it states facts only)"""

_APPLICABILITY_SYSTEM = """You check whether a rule's condition is true of an input. Answer YES if the condition is true of the input as written.
Answer NO if it is false, if the rule is only about a related topic, or if telling would need facts the input does not give (never assume or invent them).
Answer with one word."""

_RELEVANCE_SYSTEM = """You decide whether a reference rule is relevant to an input: whether a person handling the input could plausibly find the rule useful.
Say YES if the rule is relevant to the input, NO otherwise."""

_STATEMENT_QUESTION = "Is the statement true of the input?"
_STATEMENT_JSON = 'Reply with JSON only: {"verdict": "YES"} or {"verdict": "NO"}.'

_STATEMENT_PROMPT = JudgePrompt(
    name="applicability",
    version="judge-applicability-v5",  # v5: input and rule fields fenced
    system=_STATEMENT_SYSTEM,
    render_rule=_render_statement,
    question=_STATEMENT_QUESTION,
    json_reply=_STATEMENT_JSON,
)

_NEGATED_PROMPT = JudgePrompt(
    name="applicability-negated",
    version="judge-applicability-negated-v1",
    system=_STATEMENT_SYSTEM,
    render_rule=_render_negated_statement,
    question=_STATEMENT_QUESTION,
    json_reply=_STATEMENT_JSON,
)

JUDGE_PROMPTS: dict[str, JudgePrompt] = {
    "applicability": _STATEMENT_PROMPT,
    # The statement and its negation, scored by their contrast: two calls per pair (the second shares the
    # first's input, so a prompt cache evaluates only the statement again); its statement half shares
    # "applicability"'s cache entries.
    "applicability-contrast": dataclasses.replace(
        _STATEMENT_PROMPT, name="applicability-contrast", negation=_NEGATED_PROMPT
    ),
    "applicability-fewshot": JudgePrompt(
        name="applicability-fewshot",
        version="judge-applicability-fewshot-v3",
        system=_STATEMENT_SYSTEM + _STATEMENT_EXAMPLES,
        render_rule=_render_statement,
        question="Is the statement true of the input?",
        json_reply='Reply with JSON only: {"verdict": "YES"} or {"verdict": "NO"}.',
    ),
    "applicability-named": JudgePrompt(
        name="applicability-named",
        version="judge-applicability-named-v4",
        system=_APPLICABILITY_SYSTEM,
        render_rule=_render_condition_rule,
        question="Is the condition true of this input?",
        json_reply='Reply with JSON only: {"verdict": "YES"} or {"verdict": "NO"}.',
    ),
    "relevance": JudgePrompt(
        name="relevance",
        version="judge-relevance-v4",
        system=_RELEVANCE_SYSTEM,
        render_rule=_render_relevance_rule,
        question="Is the RULE relevant to the INPUT?",
        json_reply='Reply with JSON only: {"verdict": "YES"} or {"verdict": "NO"}.',
    ),
}
"""Judge prompts by name: the single source of ``predicate=`` and the CLI's choices."""


# --------------------------------------------------------------------------
# Stage 3: execution.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class ExecutorPrompt:
    """An executor prompt in rule mode and its chunk-mode twin.

    Rule mode lists ``[rule_id] action`` lines; chunk mode lists reference
    passages. Everything else is identical, so only the reference material
    differs between methods. ``output="code"``: the reply is code, and a reply
    that is one Markdown-fenced block is unwrapped.
    """

    name: str
    version: str
    system: str
    rules_intro: str
    chunks_intro: str
    none_text: str
    task_suffix: str = ""
    output: Literal["text", "code"] = "text"

    def messages(self, query: str, units: Sequence[tuple[str, str]], unit_kind: str = "rules") -> list[BaseMessage]:
        """Build executor messages.

        Args:
            query: The task input.
            units: ``(id, text)`` pairs: rule ids and actions, or chunk ids and text.
            unit_kind: ``"rules"``, ``"chunks"`` or ``"none"``. An empty
                ``units`` gives the same prompt as ``"none"``: a method that
                matched nothing hands the executor what no retrieval does.
        """
        if unit_kind == "none" or not units:
            reference = self.none_text
        elif unit_kind == "rules":
            reference = self.rules_intro + "\n" + "\n".join(f"[{uid}] {text}" for uid, text in units)
        else:
            reference = self.chunks_intro + "\n" + "\n\n".join(f"[{uid}] {text}" for uid, text in units)
        user = f"{reference}\n\nINPUT:\n{query}"
        if self.task_suffix:
            user += f"\n\n{self.task_suffix}"
        return [SystemMessage(self.system), HumanMessage(user)]


EXECUTOR_PROMPTS: dict[str, ExecutorPrompt] = {
    "generic": ExecutorPrompt(
        name="generic",
        version="exec-generic-v2",
        system=(
            "You carry out a task on the user's input. Follow the reference guidance where it fits the input; "
            "do not invent facts. Give only the result."
        ),
        rules_intro="Rules that apply to this input (id and what to do):",
        chunks_intro="Reference passages:",
        none_text="No reference guidance is given.",
    ),
    "code_review": ExecutorPrompt(
        name="code_review",
        version="exec-code-review-v2",
        system=(
            "You revise Python code so that it follows a team's review rules. Apply each given rule that the code "
            "breaks and change nothing else; keep the code's behaviour. Output only the revised code, with no "
            "Markdown fences and no explanation."
        ),
        rules_intro="Review rules that apply to this code (id and what to do):",
        chunks_intro="Review policy passages:",
        none_text="No review rules are given; follow common Python practice.",
        output="code",
    ),
}
"""Executor prompts by domain name: the single source of ``domain=`` and the CLI's choices."""
