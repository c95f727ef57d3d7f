"""The judge's context window: a judge prompt that would not fit is refused before any call, never cut."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from langchain_tag.errors import InputTooLongError
from langchain_tag.judging.prompts import JudgePrompt, VerdictFormat
from langchain_tag.rules import Rule

__all__ = ["CONTEXT_TOKENS_ENV", "check_context", "context_tokens_from_env", "estimate_tokens"]

CONTEXT_TOKENS_ENV = "LANGCHAIN_TAG_CONTEXT_TOKENS"
"""Environment variable giving the judge model's context window when a judge is built without ``context_tokens``."""


def context_tokens_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    """The context window set in ``LANGCHAIN_TAG_CONTEXT_TOKENS``, or ``None`` when it is unset or empty.

    Args:
        environ: Mapping to read instead of ``os.environ``.

    Raises:
        ValueError: When it is set to anything but a positive integer.
    """
    raw = (os.environ if environ is None else environ).get(CONTEXT_TOKENS_ENV, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{CONTEXT_TOKENS_ENV} must be an integer, got {raw!r}.") from None
    if value < 1:
        raise ValueError(f"{CONTEXT_TOKENS_ENV} must be positive, got {value}.")
    return value


def estimate_tokens(text: str) -> int:
    """A deliberately high token estimate: one token per three characters.

    Real tokenisers give about four characters per token for English prose and
    fewer for code; erring high refuses a borderline input rather than letting
    the provider cut it.
    """
    return len(text) // 3 + 1


def _needed(prompt: JudgePrompt, verdict_format: VerdictFormat, query: str, rule: Rule) -> int:
    """The estimated size of one judge prompt, with a margin for the reply and message framing."""
    return estimate_tokens("\n\n".join(m["content"] for m in prompt.messages(query, rule, verdict_format))) + 16


def check_context(
    prompt: JudgePrompt, verdict_format: VerdictFormat, query: str, rules: Sequence[Rule], context: int | None
) -> None:
    """Refuse a query whose judge prompts would not fit ``context`` tokens, naming what is too long.

    Raises:
        InputTooLongError: Naming the input, a rule, or the two together.
    """
    if context is None or not rules:
        return
    longest = max(rules, key=lambda r: len(prompt.render_rule(r)))
    if _needed(prompt, verdict_format, query, longest) <= context:
        return
    needed = {r.rule_id: _needed(prompt, verdict_format, query, r) for r in rules}
    over = [r for r in rules if needed[r.rule_id] > context]
    alone = [r for r in over if _needed(prompt, verdict_format, "", r) > context]
    limit = f"the judge model's context of {context} tokens"
    if alone:
        first = alone[0]
        raise InputTooLongError(
            f"rule {', '.join(r.rule_id for r in alone)} is too long: rule {first.rule_id} is about "
            f"{estimate_tokens(prompt.render_rule(first))} tokens and with the judge prompt alone needs "
            f"about {_needed(prompt, verdict_format, '', first)} tokens, more than {limit}: shorten the rule"
        )
    if len(over) == len(rules):
        raise InputTooLongError(
            f"the input is too long: about {estimate_tokens(query)} tokens ({len(query)} characters); with the "
            f"judge prompt and the shortest rule it needs about {min(needed.values())} tokens, more than "
            f"{limit}: shorten or split the input"
        )
    first = over[0]
    raise InputTooLongError(
        f"the input (about {estimate_tokens(query)} tokens) together with rule "
        f"{', '.join(r.rule_id for r in over)} is too long: with rule {first.rule_id} (about "
        f"{estimate_tokens(prompt.render_rule(first))} tokens) it needs about {needed[first.rule_id]} "
        f"tokens, more than {limit}; the other rules fit: shorten the input or these rules"
    )
