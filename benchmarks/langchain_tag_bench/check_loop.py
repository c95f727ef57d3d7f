"""Revise, then check: violations ruff still finds in the executor's output after 0, 1 and 2 extra rounds.

The demo's graph (:func:`langchain_tag.cli.demo.run_demo`'s: the shipped demo rules, the ``code_review``
executor, the demo's judge and calibration) runs with ``check_rounds=2`` on each input, streamed, so one run
gives the output of every round: round 1 is the graph with the check off, round 2 after one extra round, round 3
after two (an input the check passes keeps its output). ruff, not the judge, counts what is left:

* ``violations``: the matched rules whose ruff code (:data:`RULE_CODES`) ruff still reports in the output;
* ``broken``: outputs in which ruff finds a syntax error or an undefined name (F821: a revision calling what
  it never imported) that the input did not have;
* ``agreement``: for each checked (output, rule with a code), whether the judge's "still holds" equals ruff's;
* cost: executor and judge calls and seconds up to each round.

Inputs: the demo's three (:data:`~langchain_tag.cli.demo.DEMO_INPUTS`) and the demo set's cases that violate a
rule with a code (``benchmarks/data/demo/demo_cases.jsonl``), up to ``--cases``.

``--set ruff`` runs the same graph on the ruff set instead: a seeded draw of ``--cases`` test-split cases that
violate a statement of the ruff policy (:mod:`langchain_tag_bench.ruff_cases`), with the policy's statements as
rules (:func:`~langchain_tag_bench.corpus.statement_rules`) and each statement's own ruff codes; the judge is
the demo's, with its default calibration over those rules.

``python -m langchain_tag_bench.check_loop --cases 12 --out runs/check_loop``
``python -m langchain_tag_bench.check_loop --set ruff --cases 12 --out runs/check_loop_ruff``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_tag_bench.ruff_cases import ruff_executable

__all__ = ["RULE_CODES", "main", "ruff_codes", "ruff_set"]

RULE_CODES: dict[str, tuple[str, ...]] = {
    "R-001": ("B006",),  # mutable default argument
    "R-002": ("D103",),  # public function without a docstring
    "R-003": ("E722",),  # bare except
    "R-005": ("S110",),  # try-except-pass
    "R-006": ("F403",),  # wildcard import
    "R-007": ("E401",),  # several modules on one import line
    "R-008": ("UP031", "UP032"),  # % formatting, str.format
    "R-009": ("T201",),  # print
    "R-010": ("S105",),  # hard-coded password (ruff matches names like password/token/secret, not API_KEY)
}
"""The shipped demo rules ruff can check, with the codes that report them (R-004 has none)."""

BROKEN = ("E999", "F821", "invalid-syntax")
"""What makes an output broken code: a syntax error, or a name it never defined or imported."""


def ruff_codes(snippets: Sequence[str], codes: Sequence[str]) -> list[set[str]]:
    """The codes ruff reports per snippet (a syntax error as ``E999``)."""
    with tempfile.TemporaryDirectory(prefix="check_loop_") as tmp:
        for index, code in enumerate(snippets):
            (Path(tmp) / f"s{index:04d}.py").write_text(code, encoding="utf-8")
        command = [ruff_executable(), "check", "--isolated", "--no-cache", "--exit-zero", "--target-version", "py311"]
        command += ["--select", ",".join(sorted({*codes, "F821"})), "--output-format", "json", tmp]
        proc = subprocess.run(command, capture_output=True, text=True, check=True)
    found: list[set[str]] = [set() for _ in snippets]
    for diagnostic in json.loads(proc.stdout or "[]"):
        index = int(Path(diagnostic["filename"]).stem[1:])
        found[index].add(diagnostic.get("code") or "E999")
    return found


def _inputs(limit: int) -> list[str]:
    from langchain_tag.cli.demo import DEMO_INPUTS

    data = Path(__file__).resolve().parent.parent / "data" / "demo" / "demo_cases.jsonl"
    cases = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    coded = ruff_codes([c["code"] for c in cases], [c for codes in RULE_CODES.values() for c in codes])
    violating = [c["code"] for c, found in zip(cases, coded, strict=True) if found - set(BROKEN)]
    return [*DEMO_INPUTS, *violating][:limit]


def ruff_set(limit: int, cache_dir: Path, *, seed: int = 0) -> tuple[list[str], list[Any], dict[str, tuple[str, ...]]]:
    """The ruff set's inputs (test-split cases violating a statement, a seeded draw), rules and codes per rule."""
    import random

    from langchain_tag_bench.corpus import statement_rules
    from langchain_tag_bench.ruff_cases import cached_cases, load_statements

    path = cached_cases(cache_dir)
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    violating = sorted((c for c in cases if c["split"] == "test" and c["violates"]), key=lambda c: c["id"])
    drawn = sorted(random.Random(seed).sample(violating, min(limit, len(violating))), key=lambda c: c["id"])
    codes = {s["id"]: tuple(s["codes"]) for s in load_statements()}
    return [c["code"] for c in drawn], statement_rules(), codes


def _strip_fence(text: str) -> str:
    lines = text.strip().splitlines()
    if lines and lines[0].startswith("```"):
        lines = lines[1:]
    if lines and lines[-1].startswith("```"):
        lines = lines[:-1]
    return "\n".join(lines) + "\n"


def run(inputs: Sequence[str], rounds: int, workdir: Path, rules: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """Run the demo's graph with ``rounds`` extra rounds on each input; one record per input and round.

    ``rules``: the rules to match (default: the shipped demo rules, with their shipped reference figures).
    """
    from langchain_tag.cli.demo import load_shipped_demo
    from langchain_tag.graph import build_tag_graph
    from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
    from langchain_tag.local.models import get_chat_model
    from langchain_tag.retrievers import ApplicabilityRetriever

    cache = SQLiteVerdictCache(workdir / "verdicts.sqlite")
    if rules is None:
        shipped = load_shipped_demo()
        shipped.preload(cache)
        rules = shipped.rules
    judge_llm = get_chat_model(role="judge")
    executor = get_chat_model(role="executor")
    retriever = ApplicabilityRetriever(llm=judge_llm, rules=list(rules), max_concurrency=1, cache=cache)
    graph = build_tag_graph(executor, retriever=retriever, executor="code_review", check_rounds=rounds)
    records = []
    for number, code in enumerate(inputs):
        start = time.perf_counter()
        outputs, checks, times = [code], [], []
        matched: list[str] = []
        for update in graph.stream({"input": code}, stream_mode="updates"):
            for node, change in update.items():
                if node == "retrieve":
                    matched = [d.metadata["rule_id"] for d in change.get("retrieved", [])]
                if node == "execute":
                    outputs.append(str(change["output"]))
                    times.append(time.perf_counter() - start)
                if node == "check":
                    checks.append([d.metadata["rule_id"] for d in change.get("remaining", [])])
        for extra in range(rounds + 1):
            at = min(extra + 1, len(outputs) - 1)  # an input the check passed keeps its last output
            records.append(
                {
                    "input": number,
                    "extra_rounds": extra,
                    "matched": matched,
                    "output": _strip_fence(outputs[at]),
                    "remaining_by_judge": checks[at - 1] if at - 1 < len(checks) else None,
                    "executor_calls": at,
                    "seconds": times[at - 1],
                }
            )
        print(f"input {number + 1}/{len(inputs)}: {len(outputs) - 1} round(s), {times[-1]:.0f} s", flush=True)
    return records


def score(
    records: list[dict[str, Any]], inputs: Sequence[str], rule_codes: dict[str, tuple[str, ...]] = RULE_CODES
) -> list[dict[str, Any]]:
    """Per number of extra rounds: violations ruff finds, broken outputs, judge agreement, cost."""
    codes = [c for group in rule_codes.values() for c in group]
    before = ruff_codes(inputs, codes)
    after = ruff_codes([r["output"] for r in records], codes)
    rows = []
    for extra in sorted({r["extra_rounds"] for r in records}):
        picked = [(r, found) for r, found in zip(records, after, strict=True) if r["extra_rounds"] == extra]
        left = agree = compared = broken = 0
        for record, found in picked:
            broken += bool((found - before[record["input"]]) & set(BROKEN))  # broken by the revision
            remaining = set(record["remaining_by_judge"] or [])
            for rule_id in record["matched"]:
                if not rule_codes.get(rule_id):
                    continue
                ruff_says = bool(found & set(rule_codes[rule_id]))
                left += ruff_says
                if record["remaining_by_judge"] is not None:
                    compared += 1
                    agree += ruff_says == (rule_id in remaining)
        at_start = sum(
            bool(before[r["input"]] & set(rule_codes[rule_id]))
            for r, _ in picked
            for rule_id in r["matched"]
            if rule_codes.get(rule_id)
        )
        rule_sets = [set(c) for c in rule_codes.values() if c]
        rows.append(
            {
                "extra_rounds": extra,
                "inputs": len(picked),
                "violations_in_inputs": at_start,
                "violations_left": left,
                "any_rule_in_inputs": sum(bool(before[r["input"]] & c) for r, _ in picked for c in rule_sets),
                "any_rule_left": sum(bool(found & c) for _, found in picked for c in rule_sets),
                "broken_outputs": broken,
                "judge_agrees_with_ruff": agree / compared if compared else None,
                "compared": compared,
                "executor_calls": sum(r["executor_calls"] for r, _ in picked),
                "seconds": sum(r["seconds"] for r, _ in picked),
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or re-score ``--out``'s records with ``--score-only``) and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2, help="most extra rounds")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--score-only", action="store_true", help="score the records already in --out")
    parser.add_argument("--set", choices=("demo", "ruff"), default="demo")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "langchain-tag")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rules: list[Any] | None = None
    rule_codes = RULE_CODES
    if args.set == "ruff":
        inputs, rules, rule_codes = ruff_set(args.cases, args.cache_dir)
    else:
        inputs = _inputs(args.cases)
    path = args.out / "records.jsonl"
    if not args.score_only:
        records = run(inputs, args.rounds, args.out, rules)
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows = score(records, inputs, rule_codes)
    what = "shipped demo rules" if args.set == "demo" else "the ruff policy's statements as rules"
    print(f"# {len(inputs)} inputs, {what}, ruff codes per rule: {rule_codes}")
    print(
        "| extra rounds | matched violations ruff finds (in -> out) | violations of any rule (in -> out) "
        "| outputs the revision broke (syntax, F821) | judge agrees with ruff | executor calls | seconds (sum) |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        agreement = (
            "-"
            if row["judge_agrees_with_ruff"] is None
            else (f"{row['judge_agrees_with_ruff']:.0%} of {row['compared']}")
        )
        print(
            f"| {row['extra_rounds']} | {row['violations_in_inputs']} -> {row['violations_left']} "
            f"| {row['any_rule_in_inputs']} -> {row['any_rule_left']} | {row['broken_outputs']} of {row['inputs']} "
            f"| {agreement} | {row['executor_calls']} "
            f"| {row['seconds']:.0f} |"
        )
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
