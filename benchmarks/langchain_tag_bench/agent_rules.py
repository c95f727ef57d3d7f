"""Rules in a LangChain agent: none, all of them, similarity top-k, or TAG's middleware; ruff counts what is left.

A ``create_agent`` code-review agent (the embedded 1.5B as its model, the ``code_review`` executor's
instructions as its system prompt, no tools) revises each input once per method:

* ``none``: the system prompt alone;
* ``all_rules``: every rule's id and action in the system prompt;
* ``similarity``: the ``--k`` rules most similar to the input (MiniLM over each rule's name, condition and
  action, in Chroma), in the system prompt;
* ``tag``: :class:`~langchain_tag.agents.TagMiddleware` (the demo's judge and calibration) adds the rules whose
  condition the judge finds holding.

Every method's rules reach the model as the same block (the executor's heading, then ``- id: action`` lines).
ruff, not the judge, counts the violations of the rules with a ruff code in each input and in each final answer
(:func:`~langchain_tag_bench.check_loop.ruff_codes`), with outputs the revision broke (a syntax error or an
undefined name the input did not have). Cost: the agent model's prompt tokens per call (as the server reports
them), judge calls, seconds per input (judging included).

Sets as in :mod:`~langchain_tag_bench.check_loop`: ``demo`` (the demo's three snippets, then the demo set's cases
ruff flags; the shipped demo rules and their codes) and ``ruff`` (a seeded draw of ruff-set cases violating a
statement of the ruff policy; the statements as rules, each with its own codes). Records are appended to
``--out``/``records.jsonl`` as each (method, input) finishes; a rerun skips those already there.

``python -m langchain_tag_bench.agent_rules --set demo --cases 6 --out runs/agent_rules_demo``
``python -m langchain_tag_bench.agent_rules --set ruff --cases 4 --out runs/agent_rules_ruff``
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from typing_extensions import override

from langchain_tag.executors import EXECUTOR_PROMPTS, unfence
from langchain_tag.rules import Rule
from langchain_tag_bench.check_loop import BROKEN, RULE_CODES, ruff_codes
from langchain_tag_bench.runlog import RunLog

__all__ = [
    "METHODS",
    "Builder",
    "JudgeCounter",
    "local_agents",
    "main",
    "rules_prompt",
    "run",
    "run_one",
    "score",
    "table",
]

METHODS = ("none", "all_rules", "similarity", "tag")
"""The rows, in table order."""

Builder = Callable[[str], tuple[Any, "list[str] | None"]]
"""Gives a method's agent for an input, and the rule ids it was given (``None``: the middleware's, from the state)."""


SYSTEM = EXECUTOR_PROMPTS["code_review"].system
HEADING = EXECUTOR_PROMPTS["code_review"].rules_intro


def rules_prompt(rules: Sequence[Rule]) -> str:
    """The system prompt with ``rules`` as the block TAG's middleware writes (none: the system prompt alone)."""
    if not rules:
        return SYSTEM
    return SYSTEM + "\n\n" + "\n".join([HEADING, *(f"- {r.rule_id}: {r.action}" for r in rules)])


class JudgeCounter(BaseCallbackHandler):
    """Counts the judge calls the middleware makes (its internal calls, ``lc_source="tag_rules"``)."""

    def __init__(self) -> None:
        self.calls = 0

    @override
    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any) -> Any:
        if (kwargs.get("metadata") or {}).get("lc_source") == "tag_rules":
            self.calls += 1


def run_one(agent: Any, code: str) -> dict[str, Any]:
    """Run the agent on one input: its final answer (unfenced), rules given, prompt tokens per call, cost."""
    counter = JudgeCounter()
    start = time.perf_counter()
    state = agent.invoke({"messages": [HumanMessage(code)]}, {"callbacks": [counter]})
    seconds = time.perf_counter() - start
    answers = [m for m in state["messages"] if isinstance(m, AIMessage)]
    return {
        "output": unfence(answers[-1].text).strip() + "\n",
        "model_calls": len(answers),
        "prompt_tokens": [int((m.usage_metadata or {}).get("input_tokens", 0)) for m in answers],
        "given_by_tag": [m["rule_id"] for m in state.get("tag_matches", [])],
        "judge_calls": counter.calls,
        "seconds": seconds,
    }


def local_agents(
    rules: Sequence[Rule], k: int, workdir: Path, preload: Callable[[Any], Any] | None
) -> dict[str, Builder]:
    """Per method, its :data:`Builder` on the embedded model (the judge's verdicts kept in ``workdir``)."""
    from langchain.agents import create_agent

    from langchain_tag.agents import TagMiddleware
    from langchain_tag.integrations.similarity import similarity_retriever
    from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
    from langchain_tag.local.models import get_chat_model, get_embeddings
    from langchain_tag.retrievers import ApplicabilityRetriever

    model = get_chat_model(role="executor")
    cache = SQLiteVerdictCache(workdir / "verdicts.sqlite")
    if preload is not None:
        preload(cache)
    retriever = ApplicabilityRetriever(
        llm=get_chat_model(role="judge"), rules=list(rules), max_concurrency=1, cache=cache
    )
    tag_agent = create_agent(model, system_prompt=SYSTEM, middleware=[TagMiddleware(retriever, heading=HEADING)])
    by_id = {r.rule_id: r for r in rules}
    similar = similarity_retriever([r.to_document(content="search") for r in rules], get_embeddings(), k=k, chunk=False)

    def fixed(chosen: Callable[[str], list[Rule]]) -> Builder:
        def build(code: str) -> tuple[Any, list[str] | None]:
            given = chosen(code)
            return create_agent(model, system_prompt=rules_prompt(given)), [r.rule_id for r in given]

        return build

    return {
        "none": fixed(lambda code: []),
        "all_rules": fixed(lambda code: list(rules)),
        "similarity": fixed(lambda code: [by_id[str(d.metadata["rule_id"])] for d in similar.invoke(code)]),
        "tag": lambda code: (tag_agent, None),
    }


def run(inputs: Sequence[str], builders: dict[str, Builder], methods: Sequence[str], log: RunLog) -> RunLog:
    """Run every method on every input not yet recorded in ``log`` (appending each record as it finishes)."""
    for method in methods:
        for number, code in enumerate(inputs):
            if log.done(method, str(number)):
                continue
            agent, given = builders[method](code)
            record = run_one(agent, code)
            record["given"] = record["given_by_tag"] if given is None else given
            log.append({"method": method, "key": str(number), **record})
            print(f"{method} {number + 1}/{len(inputs)}: {len(record['given'])} rules, {record['seconds']:.0f} s")
    return log


def score(
    records: Sequence[dict[str, Any]], inputs: Sequence[str], rule_codes: dict[str, tuple[str, ...]]
) -> list[dict[str, Any]]:
    """Per method: violations of any rule with a code (inputs -> final answers), broken outputs, cost."""
    codes = sorted({c for group in rule_codes.values() for c in group})
    coded = [set(c) for c in rule_codes.values() if c]
    before = ruff_codes(inputs, codes)
    after = ruff_codes([r["output"] for r in records], codes)
    rows = []
    for method in [m for m in METHODS if any(r["method"] == m for r in records)]:
        picked = [(r, found) for r, found in zip(records, after, strict=True) if r["method"] == method]
        tokens = [t for r, _ in picked for t in r["prompt_tokens"]]
        rows.append(
            {
                "method": method,
                "inputs": len(picked),
                "violations_in_inputs": sum(bool(before[int(r["key"])] & c) for r, _ in picked for c in coded),
                "violations_left": sum(bool(found & c) for _, found in picked for c in coded),
                "broken_outputs": sum(bool((found - before[int(r["key"])]) & set(BROKEN)) for r, found in picked),
                "rules_given": statistics.mean(len(r["given"]) for r, _ in picked),
                "prompt_tokens_per_call": statistics.median(tokens) if tokens else None,
                "model_calls": sum(r["model_calls"] for r, _ in picked),
                "judge_calls": sum(r["judge_calls"] for r, _ in picked),
                "seconds_median": statistics.median(r["seconds"] for r, _ in picked),
                "seconds_sum": sum(r["seconds"] for r, _ in picked),
            }
        )
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| method | violations of any coded rule (inputs -> final answers) | answers the revision broke "
        "| rules given (mean) | prompt tokens per model call (median) | model calls | judge calls "
        "| seconds per input (median) | seconds (sum) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['method']} | {row['violations_in_inputs']} -> {row['violations_left']} "
            f"| {row['broken_outputs']} of {row['inputs']} | {row['rules_given']:.1f} "
            f"| {row['prompt_tokens_per_call']:.0f} | {row['model_calls']} | {row['judge_calls']} "
            f"| {row['seconds_median']:.1f} | {row['seconds_sum']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or with ``--score-only`` score the records already in ``--out``) and print the table."""
    from langchain_tag_bench.check_loop import _inputs, ruff_set

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--set", choices=("demo", "ruff"), default="demo")
    parser.add_argument("--cases", type=int, default=6)
    parser.add_argument("--k", type=int, default=3, help="the similarity row's top-k")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {', '.join(METHODS)}")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--score-only", action="store_true", help="score the records already in --out")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "langchain-tag")
    args = parser.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown method(s) {unknown}; choose from {', '.join(METHODS)}")
    preload = None
    if args.set == "ruff":
        inputs, rules, rule_codes = ruff_set(args.cases, args.cache_dir)
    else:
        from langchain_tag.cli.demo import load_shipped_demo

        shipped = load_shipped_demo()
        inputs, rules, rule_codes, preload = _inputs(args.cases), shipped.rules, RULE_CODES, shipped.preload
    args.out.mkdir(parents=True, exist_ok=True)
    log = RunLog(args.out / "records.jsonl")
    if not args.score_only:
        run(inputs, local_agents(rules, args.k, args.out, preload), methods, log)
    records = [r for r in log.records() if r["method"] in methods and int(r["key"]) < len(inputs)]
    rows = score(records, inputs, rule_codes)
    print(f"# {args.set} set, {len(inputs)} inputs, similarity k={args.k}")
    print(table(rows))
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
