# ruff: noqa: E501  (prompt text reads better unwrapped)
"""The benchmark's own prompts.

The NBA and passage judges, the rule-first baseline, the NPOV rewrite grader
and the NPOV, HumanEval and NBA executors.

They are passed to the library as :class:`~langchain_tag.judging.prompts.JudgePrompt`
and :class:`~langchain_tag.executors.ExecutorPrompt` objects, so the benchmark
runs the same retrievers and graph a user runs. Wording changes bump the
prompt's version.
"""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_tag.executors import ExecutorPrompt
from langchain_tag.extraction.prompts import _JSON_ONLY
from langchain_tag.judging.prompts import TOKEN_REPLY, JudgePrompt
from langchain_tag.rules import Rule

__all__ = [
    "BENCH_EXECUTOR_PROMPTS",
    "BENCH_JUDGE_PROMPTS",
    "NBA_FIELDS",
    "NPOV_JUDGE_PROMPT_VERSION",
    "npov_judge_messages",
    "rule_first_messages",
]

NBA_FIELDS: Mapping[str, str] = {
    "primary_tag": "the one main category",
    "applies_when": "the kind of transaction or situation",
    "constraint": "the limit or requirement imposed",
    "violation_check": "how to tell from the facts that the rule is broken",
    "does_not_apply_to": "a list of situations that veto the rule; [] if none",
}
"""The NBA/CBA rule schema: extra rule fields asked of phase 3 (``extra_fields``)."""


def _extra(rule: Rule, name: str) -> str | None:
    value = (rule.model_extra or {}).get(name)
    return str(value) if value not in (None, "", []) else None


def _vetoes(rule: Rule) -> list[str]:
    value = (rule.model_extra or {}).get("does_not_apply_to")
    if isinstance(value, str):
        return [value] if value.strip() else []
    return [str(v) for v in value or []]


def _render_rich_rule(rule: Rule) -> str:
    lines = [f"{rule.rule_id}: {rule.rule_name}"]
    if _extra(rule, "primary_tag"):
        lines.append(f"Primary tag: {_extra(rule, 'primary_tag')}")
    lines.append(f"Applies when: {_extra(rule, 'applies_when') or rule.condition}")
    if _extra(rule, "applies_when") and rule.condition != _extra(rule, "applies_when"):
        lines.append(f"Condition: {rule.condition}")
    if _extra(rule, "constraint"):
        lines.append(f"Constraint: {_extra(rule, 'constraint')}")
    if _extra(rule, "violation_check"):
        lines.append(f"Violation check: {_extra(rule, 'violation_check')}")
    vetoes = "; ".join(_vetoes(rule)) or "-"
    lines.append(f"Does not apply to: {vetoes}")
    return "\n".join(lines)


_NBA_SYSTEM = """You decide whether one NBA collective bargaining agreement rule governs a salary-cap scenario. The rule applies only when the scenario's stated facts satisfy the rule's own preconditions.
- The transaction type must match: signing, trade, extension, renegotiation, qualifying offer, or sign-and-trade.
- Generic verbs in the rule ("evaluate", "check") are not preconditions.
- A rule about a specific mechanism (mid-level exception, bi-annual exception, traded player exception, two-way contract, 10-day contract, rookie scale extension, designated veteran extension) applies only if the scenario uses that mechanism.
- A general limit (salary cap, tax, apron, maximum salary, raises, contract length) applies only if the scenario gives the facts needed to evaluate it, not merely because the term appears.
- If any "does not apply to" item matches the scenario, the rule does not apply.
- Among near-identical rules, accept only the one whose boundary (years of service, length, amount) the scenario's facts support.
When in doubt, the rule does not apply."""

_PASSAGE_SYSTEM = """You check whether a passage of guidance governs an input: whether the input is a case the passage's instructions are about, as the input is written.
Answer NO if the passage is only about a related topic, or if telling would need facts the input does not give (never assume or invent them).
Answer with one word."""


def _render_passage(rule: Rule) -> str:
    # Chunks judged pairwise (the chunks + applicability ablation cell) carry
    # their text as the condition; there is no separate name or action.
    return f"Passage ({rule.rule_id}):\n{rule.condition}"


BENCH_JUDGE_PROMPTS: dict[str, JudgePrompt] = {
    "passage": JudgePrompt(
        name="passage",
        version="judge-passage-v2",  # v2: the input fenced (JudgePrompt.messages)
        system=_PASSAGE_SYSTEM,
        render_rule=_render_passage,
        question="Is the INPUT a case this passage's guidance is about?",
        json_reply='Reply with JSON only: {"verdict": "YES"} or {"verdict": "NO"}.',
    ),
    "nba": JudgePrompt(
        name="nba",
        version="judge-nba-v3",  # v3: the input fenced (JudgePrompt.messages)
        system=_NBA_SYSTEM,
        render_rule=_render_rich_rule,
        question="Does the RULE apply to the scenario in the INPUT?",
        json_reply='Reply with JSON only: {"applicable": true|false, "reason": "<one sentence>"}.',
    ),
}
"""Judge prompts of the benchmark, by name."""


def rule_first_messages(prompt: JudgePrompt, query: str, rule: Rule) -> list[BaseMessage]:
    """A judge prompt with the rule *before* the input: a benchmark baseline in which no two prompts share a prefix.

    Same system text, rule rendering and question as ``prompt``; only the
    order differs from :meth:`JudgePrompt.messages`.
    """
    user = f"RULE:\n{prompt.render_rule(rule)}\n\nINPUT:\n<<<\n{query}\n>>>\n\n{prompt.question} {TOKEN_REPLY}"
    return [SystemMessage(prompt.system), HumanMessage(user)]


BENCH_EXECUTOR_PROMPTS: dict[str, ExecutorPrompt] = {
    "npov": ExecutorPrompt(
        name="npov",
        version="exec-npov-v2",
        system=(
            "You edit one encyclopedia sentence so that it follows the neutral point of view policy. "
            "Use only edits that can be made with information already in the sentence: add no facts, sources or "
            "viewpoints, and keep the sentence's content. Answer in exactly three lines:\n"
            "Applied rules: <comma-separated rule ids, or NONE>\n"
            "Reasoning: <one sentence>\n"
            "Rewrite: <the revised sentence>\n"
            "If no rule is applied, the Rewrite line repeats the sentence unchanged."
        ),
        rules_intro="Rules to apply (id and action):",
        chunks_intro="Policy passages (cite passage ids in place of rule ids):",
        none_text="No policy material is given; rely on the neutral point of view policy as you know it.",
    ),
    "code": ExecutorPrompt(
        name="code",
        version="exec-code-v2",
        system=(
            "You complete a Python function. Keep its signature and docstring exactly. Correctness comes first; "
            "then follow the style rules that fit the code you write. Output only the complete code: no Markdown "
            "fences, no explanation, no imports or comments that the code does not need."
        ),
        rules_intro="Style rules (id and action):",
        chunks_intro="Style guide passages:",
        none_text="No style material is given.",
    ),
    "nba": ExecutorPrompt(
        name="nba",
        version="exec-nba-v2",
        system=(
            "You decide whether any operation in an NBA salary-cap scenario breaks the collective bargaining "
            "agreement. Use only the facts stated. If the material does not establish that an operation is "
            "illegal, answer false. Reply with JSON only: "
            '{"answer": true|false, "illegal_operation": "<operation letter>"|null, '
            '"problematic_team": "<team letter>"|null, "rationale": "<short explanation>"} '
            "where answer true means some operation is illegal."
        ),
        rules_intro="Rules that govern this scenario (id and requirement):",
        chunks_intro="Agreement excerpts:",
        none_text="No agreement text is given; use your knowledge of the NBA collective bargaining agreement.",
    ),
}
"""Executor prompts of the benchmark's domains, by name."""


# --------------------------------------------------------------------------
# Benchmark scoring: the NPOV rewrite judge.
# --------------------------------------------------------------------------
NPOV_JUDGE_PROMPT_VERSION = "judge-npov-rewrite-v1"

_NPOV_JUDGE_SYSTEM = (
    """You grade an edit of one encyclopedia sentence. The original sentence breaks a neutral point of view policy in the way described; the rewrite is an attempt to fix it.
Give four integer scores from 1 (worst) to 5 (best):
- remediation: how completely the described violation is gone from the rewrite;
- preservation: how much of the original's factual content the rewrite keeps, without adding facts, sources or claims;
- tone: how neutral and encyclopedic the rewrite reads;
- fluency: how grammatical and natural the rewrite is.
Set violation_fixed to true only if the described violation is fully removed from the rewrite.
"""
    + _JSON_ONLY
)

_NPOV_JUDGE_USER = """ORIGINAL:
<<<
{sentence}
>>>

VIOLATION: {violation}

REWRITE:
<<<
{rewrite}
>>>

Return {{"violation_fixed": true|false, "remediation": 1-5, "preservation": 1-5, "tone": 1-5, "fluency": 1-5, "reason": "<one sentence>"}}."""


def npov_judge_messages(*, sentence: str, violation: str, rewrite: str) -> list[BaseMessage]:
    """NPOV benchmark: ask a judge to score one rewrite of a biased sentence.

    The fixed instructions come first, then the original sentence, the
    description of its violation and the rewrite. The reply asked for is one
    JSON object with ``violation_fixed`` and four 1-5 scores.

    Args:
        sentence: The original (biased) sentence.
        violation: What is wrong with it, in one sentence.
        rewrite: The executor's rewrite.
    """
    user = _NPOV_JUDGE_USER.format(sentence=sentence.strip(), violation=violation.strip(), rewrite=rewrite.strip())
    return [SystemMessage(_NPOV_JUDGE_SYSTEM), HumanMessage(user)]
