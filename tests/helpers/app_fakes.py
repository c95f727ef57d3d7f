"""Fakes of the served graph's tests: a judge and an executor that answer from the prompt text alone.

An input flags the rules that apply to it with ``flag:<rule id>``. The judge says YES exactly for a flagged
rule (P(YES) 0.9, else 0.1); the executor fixes the flags of the rules it was given (removes them), except
:data:`STUBBORN`'s, and lists what it was given on its last line. So the check finds the stubborn rule still
holding after every round, and the test can read from the output exactly which rules the executor saw.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from langchain_tag.app._models import AppModels
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, asks_negation, judged_rule_id

STUBBORN = "R-005"
"""The rule whose flag the executor never removes."""

_GIVEN = re.compile(r"^\[(\S+)\] ", re.MULTILINE)
_JUDGED_INPUT = re.compile(r"INPUT:\n<<<\n(.*?)\n>>>", re.DOTALL)


def judge_reply(prompt: str) -> tuple[str, float]:
    """YES (P 0.9) when the judged input flags the judged rule, else NO (P 0.1); the opposite for a negation."""
    found = _JUDGED_INPUT.search(prompt)
    rule_id = judged_rule_id(prompt)
    flagged = found is not None and rule_id is not None and f"flag:{rule_id}" in found.group(1)
    yes = flagged != asks_negation(prompt)
    return ("YES", 0.9) if yes else ("NO", 0.1)


def executor_reply(prompt: str) -> str:
    """The input with the given rules' flags removed (not the stubborn one's), and a last line naming them."""
    head, _, text = prompt.rpartition("INPUT:\n")
    given = _GIVEN.findall(head)
    body = text.split("\n# given:")[0]
    for rule_id in given:
        if rule_id != STUBBORN:
            body = body.replace(f"flag:{rule_id}", "fixed")
    return f"{body}\n# given: {','.join(given) or '-'}"


def given_ids(output: str) -> list[str]:
    """The rule ids the executor's last round was given, read from its output."""
    line = output.rsplit("\n# given: ", 1)[1]
    return [] if line == "-" else line.split(",")


def is_judge_prompt(prompt: str) -> bool:
    return judged_rule_id(prompt) is not None


def fake_models(rule_sets: dict[str, list[Rule]] | None = None) -> AppModels:
    """An :class:`AppModels` of the fakes (new models each run, like the environment's)."""
    sets = rule_sets or {}

    def rule_set(name: str, cache: Any) -> list[Rule]:
        if name not in sets:
            raise ValueError(f"no rule set named {name!r}")
        return sets[name]

    return AppModels(
        executor=lambda settings: FakeChatModel(respond=executor_reply),
        judge=lambda settings: FakeChatModel(respond=judge_reply, with_logprobs=True),
        rule_set=rule_set,
    )


def openai_reply(body: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat completion answering ``body`` as the fakes do (with first-token logprobs for the judge)."""
    prompt = "\n\n".join(str(m["content"]) for m in body["messages"])
    if is_judge_prompt(prompt):
        word, p = judge_reply(prompt)
        top = [{"token": "YES", "logprob": math.log(p)}, {"token": "NO", "logprob": math.log(1 - p)}]
        logprobs: dict[str, Any] | None = {
            "content": [{"token": word, "logprob": math.log(p if word == "YES" else 1 - p), "top_logprobs": top}]
        }
        content = word
    else:
        content, logprobs = executor_reply(prompt), None
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "logprobs": logprobs,
              "finish_reason": "stop"}  # fmt: skip
    usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": 1, "total_tokens": len(prompt.split()) + 1}
    return {"id": "fake", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
            "choices": [choice], "usage": usage}  # fmt: skip


def resume_in_this_process(db: str, thread_id: str, decision_json: str, rules_json: str) -> None:
    """Resume a reviewed thread from a SQLite checkpoint file; print the run's output as JSON (a second process)."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    from langchain_tag.app import build_app_graph

    rules = [Rule.model_validate(r) for r in json.loads(rules_json)]
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    graph = build_app_graph(fake_models({"demo": rules}), checkpointer=saver)
    config = {"configurable": {"thread_id": thread_id}}
    out = graph.invoke(Command(resume=json.loads(decision_json)), config)
    print(json.dumps(out))


if __name__ == "__main__":
    resume_in_this_process(*sys.argv[1:])
