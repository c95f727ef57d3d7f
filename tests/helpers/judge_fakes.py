"""Fakes for bulk and batch tests: a judge whose P(YES) depends on the (input, rule) pair, and Batch API replies.

Every reply is a function of the prompt text alone, so results do not depend
on call order, concurrency or which engine (in process, batch) made the call.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_tag.testing import FakeChatModel, asks_negation, batch_results_line, judged_rule_id

_INPUT = re.compile(r"INPUT:\n<<<\n(.*?)\n>>>", re.DOTALL)


def prompt_input(text: str) -> str:
    """The input a judge prompt asks about."""
    found = _INPUT.search(text)
    if found is None:
        raise AssertionError(f"not a judge prompt: {text[:200]!r}")
    return found.group(1)


def pair_of(text: str) -> tuple[str, str | None, bool]:
    """``(input, rule id, negated half)`` of a judge prompt."""
    return prompt_input(text), judged_rule_id(text), asks_negation(text)


def p_yes_of(text: str) -> float:
    """A P(YES) that depends on the pair only, spread over (0.02, 0.98)."""
    seed = "|".join(str(part) for part in pair_of(text))
    return 0.02 + 0.96 * int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16) / 2**32


def scored_reply(text: str) -> tuple[str, float]:
    """The reply of :func:`scored_judge`: YES when P(YES) >= 0.5, with that P(YES)."""
    p = p_yes_of(text)
    return ("YES" if p >= 0.5 else "NO"), p


def scored_judge(**kwargs: Any) -> FakeChatModel:
    """A fake judge with logprobs whose P(YES) is a function of the (input, rule) pair read from the prompt."""
    return FakeChatModel(respond=scored_reply, with_logprobs=True, **kwargs)


def batch_lines(paths: list[Path]) -> list[dict[str, Any]]:
    """Every line of some Batch API input files, in order."""
    return [json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines()]


def as_messages(messages: list[dict[str, str]]) -> list[BaseMessage]:
    """OpenAI-style messages as LangChain messages."""
    return [SystemMessage(m["content"]) if m["role"] == "system" else HumanMessage(m["content"]) for m in messages]


def ok_line(line: dict[str, Any], model: FakeChatModel, number: int) -> dict[str, Any]:
    """The Batch API output line for one input line, answered by ``model``."""
    reply = model.invoke(as_messages(line["body"]["messages"]))
    logprobs = reply.response_metadata.get("logprobs")
    content = str(reply.content)
    return batch_results_line(
        line["custom_id"], content, logprobs, model=line["body"]["model"], number=number, prompt_tokens=100 + number
    )


def answer(paths: list[Path], out: Path, model: FakeChatModel | None = None) -> Path:
    """A Batch API output file for some input files, answered by ``model`` (lines in reverse order)."""
    model = model or scored_judge()
    lines = [ok_line(line, model, n) for n, line in enumerate(batch_lines(paths), 1)]
    out.write_text("".join(json.dumps(line) + "\n" for line in reversed(lines)))
    return out
