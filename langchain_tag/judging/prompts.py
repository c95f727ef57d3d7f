"""The judge prompts: a predicate over (input, rule), rendered input first so a prefix cache holds.

Layout rule: the fixed instructions come first (system message), then the task
input, then the rule. Every judgment for one input therefore shares the longest
possible prefix, which prompt caches (OpenAI, DeepSeek, vLLM prefix caching,
llama.cpp KV reuse) can reuse. A prompt carries a version string that is part
of every verdict-cache key: editing its wording must bump it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from langchain_tag.rules import Rule

__all__ = [
    "JUDGE_PROMPTS",
    "NEGATION_OPENINGS",
    "QUESTION_PROMPT_VERSION",
    "TOKEN_REPLY",
    "USER_TEMPLATE",
    "JudgePrompt",
    "VerdictFormat",
    "fence_input",
    "negate_condition",
    "one_line",
    "question_messages",
    "rule_question",
]

VerdictFormat = Literal["token", "json"]

# --------------------------------------------------------------------------
# Stage 2: pairwise judgments.
# --------------------------------------------------------------------------
TOKEN_REPLY = "Answer with one word: YES or NO."
"""The reply instruction of a one-token verdict."""

USER_TEMPLATE = "INPUT:\n<<<\n{input}\n>>>\n\nRULE:\n{rule}\n\n{question} {reply}"
"""A judgment's user message: the fenced input (:func:`fence_input`), the rendered rule, the question, the reply
instruction."""


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
            (:class:`~langchain_tag.judging.chat.ChatJudge`): a small judge's
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

    def messages(self, query: str, rule: Rule, verdict_format: VerdictFormat = "token") -> list[dict[str, str]]:
        """The messages of one judgment as they are sent (OpenAI style): system, then input, then rule.

        The input sits between a ``<<<`` line and a ``>>>`` line
        (:func:`fence_input` escapes any input line that could pass for either),
        and every rule field is rendered on one line (:func:`one_line`), so
        neither an input nor a rule can forge the end of the input block, a
        rule block, the question or a system line.
        """
        return list(self.compose(fence_input(query), self.render_rule(rule), verdict_format))

    def compose(self, fenced_input: str, rule_text: str, verdict_format: VerdictFormat) -> tuple[dict[str, str], ...]:
        """The one renderer of a judgment's messages, from the input as fenced and the rule as rendered."""
        reply = TOKEN_REPLY if verdict_format == "token" else self.json_reply
        user = USER_TEMPLATE.format(input=fenced_input, rule=rule_text, question=self.question, reply=reply)
        return {"role": "system", "content": self.system}, {"role": "user", "content": user}


# Every line boundary of ``str.splitlines`` (``\r\n`` is ``\r`` then ``\n``), and whitespace that is not one.
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_LINE_SPACE = rf"[^\S{_LINE_BREAKS}]*"
# An input line that could pass for a fence: ``<<<`` opening it, or ``>>>`` closing it, whitespace aside.
_FENCE_LIKE = re.compile(
    rf"(?:^|(?<=[{_LINE_BREAKS}]))({_LINE_SPACE})(?=<<<)|(>>>{_LINE_SPACE})(?=[{_LINE_BREAKS}]|\Z)"
)


def fence_input(query: str) -> str:
    r"""The input as placed inside the judge prompt's fence.

    A backslash goes before a ``<<<`` that starts a line and before a ``>>>``
    that ends one, so no input line can open or close the fence. Lines are
    the lines of ``str.splitlines`` (split at ``\n``, ``\r\n``, ``\r``,
    ``\v``, ``\f``, ``\x1c``-``\x1e``, ``\x85``, ``\u2028`` and
    ``\u2029``), and whitespace before a ``<<<`` or after a ``>>>`` (a
    non-breaking space too) does not hide it. Everything else (``>>>``
    doctest prompts included) is left exactly as written, so an ordinary
    input renders as it always did.
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


# A yes/no question about an input, asked by the package's decision model (``Noul`` questions): the same layout
# as the rule prompts (fixed system text, then the fenced input, then the question), so a prefix cache holds.
QUESTION_PROMPT_VERSION = "judge-question-v1"
"""Version of :func:`question_messages`' wording (part of each of its verdict-cache keys)."""

_QUESTION_SYSTEM = """You answer a yes/no question about an input. The input can be any kind of text: code, prose, a message, structured data, or the description of a case.
Answer YES only if the input, as written, makes the answer yes; answer NO otherwise. Never assume facts the input does not give.
Answer with one word."""


def rule_question(prompt: JudgePrompt, rule: Rule) -> str:
    """A rule as one yes/no question: the rule as the judge prompt renders it, then the prompt's question.

    >>> rule = Rule(rule_id="R1", rule_name="bare except", condition="an except clause names no class", action="-")
    >>> print(rule_question(JUDGE_PROMPTS["applicability"], rule))
    Statement: an except clause names no class
    (rule R1)
    Is the statement true of the input?
    """
    return f"{prompt.render_rule(rule)}\n{prompt.question}"


def question_messages(state: str, question: str, yes_means: str = "", no_means: str = "") -> list[dict[str, str]]:
    """The chat messages that ask one yes/no ``question`` about ``state``, as OpenAI-style dicts.

    Args:
        state: The input, fenced as in the rule prompts.
        question: The question's full instructions.
        yes_means: What counts as yes, when the question says so.
        no_means: What counts as no, when the question says so.

    >>> question_messages("x = 1", "Does the code assign a variable?")[1]["content"].splitlines()[-1]
    'QUESTION: Does the code assign a variable? Answer with one word: YES or NO.'
    """
    criteria = "".join(
        f"\n{label}: {one_line(text)}" for label, text in (("YES means", yes_means), ("NO means", no_means)) if text
    )
    fenced = fence_input(state) if "<<<" in state or ">>>" in state else state  # nothing to escape: as it is
    user = f"INPUT:\n<<<\n{fenced}\n>>>{criteria}\n\nQUESTION: {' '.join(question.split())} {TOKEN_REPLY}"
    return [{"role": "system", "content": _QUESTION_SYSTEM}, {"role": "user", "content": user}]
