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

``--variants`` then compares four ways to check the first revision against each matched rule ruff has a code
for, ruff's verdict as gold (:func:`variant_checks`, :func:`score_variants`): the check off (it never says a
rule still holds); today's absolute check (the rule judged on the revision alone); a differential check (the
rule still holds unless its score fell from the original input to the revision); and the judge shown the
original and the revision together, asked whether the revision still has what the rule describes. Each
reading is appended to ``variants.jsonl`` as it is made, so a killed run resumes.

``python -m langchain_tag_bench.check_loop --cases 12 --out runs/check_loop``
``python -m langchain_tag_bench.check_loop --set ruff --cases 12 --out runs/check_loop_ruff``
``python -m langchain_tag_bench.check_loop --cases 6 --rounds 0 --variants --out runs/check_variants``
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

__all__ = ["RULE_CODES", "main", "paired_rule", "ruff_codes", "ruff_set", "score_variants", "variant_checks"]

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


def run(
    inputs: Sequence[str],
    rounds: int,
    workdir: Path,
    rules: Sequence[Any] | None = None,
    path: Path | None = None,
) -> list[dict[str, Any]]:
    """Run the demo's graph with ``rounds`` extra rounds on each input; one record per input and round.

    ``rules``: the rules to match (default: the shipped demo rules, with their shipped reference figures).
    ``path``: a JSONL file the records of each input are appended to as it finishes; the inputs it already
    holds are not run again (a killed run resumes).
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
    records = _read_jsonl(path) if path is not None else []
    done = {r["input"] for r in records}
    for number, code in enumerate(inputs):
        if number in done:
            continue
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
        found = []
        for extra in range(rounds + 1):
            at = min(extra + 1, len(outputs) - 1)  # an input the check passed keeps its last output
            found.append(
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
        records.extend(found)
        if path is not None:
            _append_jsonl(path, found)
        print(f"input {number + 1}/{len(inputs)}: {len(outputs) - 1} round(s), {times[-1]:.0f} s", flush=True)
    return sorted(records, key=lambda r: (r["input"], r["extra_rounds"]))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _append_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in rows))
        handle.flush()


# --------------------------------------------------------------------------- four ways to check a revision
PAIRED_TEXT = "ORIGINAL CODE:\n{original}\n\nREVISED CODE (the code to judge):\n{revision}"
"""The input a paired check shows the judge: the original and the revision, the revision named as the one judged."""


def paired_rule(rule: Any) -> Any:
    """``rule`` asked of a revision shown beside its original: does the revision still have what it describes?"""
    condition = (
        "the REVISED CODE still has what this describes (judge the revised code only; the original is shown "
        f"for comparison): {rule.condition}"
    )
    return rule.model_copy(update={"condition": condition})


def variant_checks(
    inputs: Sequence[str],
    records: Sequence[dict[str, Any]],
    rule_codes: dict[str, tuple[str, ...]],
    path: Path,
    rules: Sequence[Any] | None = None,
    judge_llm: Any = None,
) -> list[dict[str, Any]]:
    """For each first revision and matched rule with a ruff code: ruff's verdict and each check's reading.

    The absolute and differential checks use the demo's judge and calibration (a rule "still holds" on the
    absolute check when it is matched on the revision; on the differential one unless its score fell from the
    original to the revision); the paired check asks the same model with the revision beside its original, at
    raw P(YES) >= 0.5 (its rewritten rules have no calibration). Each reading is appended to ``path`` with the
    seconds its judgment took (uncached: an in-memory verdict cache holding only the calibration's reference
    judgments); pairs already in ``path`` are skipped.
    """
    from langchain_tag.cli.demo import load_shipped_demo
    from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
    from langchain_tag.retrievers import ApplicabilityRetriever

    cache = InMemoryVerdictCache(max_size=None)
    if rules is None:
        shipped = load_shipped_demo()
        shipped.preload(cache)
        rules = shipped.rules
    if judge_llm is None:
        from langchain_tag.local.models import get_chat_model

        judge_llm = get_chat_model(role="judge")
    by_id = {r.rule_id: r for r in rules}
    judge = ApplicabilityRetriever(llm=judge_llm, rules=list(rules), max_concurrency=1, cache=cache).judge
    paired = ApplicabilityRetriever(
        llm=judge_llm, rules=[paired_rule(r) for r in rules], max_concurrency=1, calibration=None, cache=cache
    ).judge
    rows = _read_jsonl(path)
    done = {(r["input"], r["rule_id"]) for r in rows}
    first = [r for r in records if r["extra_rounds"] == 0]
    wanted = [(r, rule_id) for r in first for rule_id in r["matched"] if rule_codes.get(rule_id)]
    found = ruff_codes([r["output"] for r in first], [c for group in rule_codes.values() for c in group])
    ruff_by_input = {r["input"]: codes for r, codes in zip(first, found, strict=True)}
    for number, (record, rule_id) in enumerate(wanted, start=1):
        if (record["input"], rule_id) in done:
            continue
        rule, original, revision = by_id[rule_id], inputs[record["input"]], record["output"]
        timed: dict[str, float] = {}
        judged = {}
        for name, which, text, asked in (
            ("original", judge, original, rule),
            ("absolute", judge, revision, rule),
            ("paired", paired, PAIRED_TEXT.format(original=original, revision=revision), paired_rule(rule)),
        ):
            start = time.perf_counter()
            judged[name] = which.judge(text, [asked]).judgments[0]
            timed[name] = time.perf_counter() - start
        row = {
            "input": record["input"],
            "rule_id": rule_id,
            "ruff_still": bool(ruff_by_input[record["input"]] & set(rule_codes[rule_id])),
            "score_original": judged["original"].score,
            "score_revision": judged["absolute"].score,
            "absolute_still": bool(judged["absolute"].applies),
            "paired_p_yes": judged["paired"].p_yes,
            "paired_still": bool(judged["paired"].applies),
            "seconds_original": timed["original"],
            "seconds_absolute": timed["absolute"],
            "seconds_paired": timed["paired"],
        }
        rows.append(row)
        _append_jsonl(path, [row])
        print(f"variant check {number}/{len(wanted)}: input {record['input']} {rule_id}", flush=True)
    return rows


def _drop_still(row: dict[str, Any], margin: float) -> bool:
    """The differential check: the rule still holds unless its score fell by more than ``margin``."""
    before, after = row["score_original"], row["score_revision"]
    if before is None or after is None:
        return bool(row["absolute_still"])  # no scores (no logprobs): the absolute reading
    return not before - after > margin


def score_variants(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per check: its agreement with ruff on whether each first revision still breaks the rule, and its cost.

    Cost per checked rule: the judge calls the check adds to a revise-then-check round, and their seconds (the
    differential check adds none: the original's score is the retrieval's, the revision's the absolute one's).
    """
    checks: list[tuple[str, Any, int, str | None]] = [
        ("off (never says it still holds)", lambda r: False, 0, None),
        ("absolute (today's: the rule judged on the revision)", lambda r: r["absolute_still"], 1, "seconds_absolute"),
        ("differential (still holds unless its score fell)", lambda r: _drop_still(r, 0.0), 1, "seconds_absolute"),
        ("differential (... fell by more than 0.10)", lambda r: _drop_still(r, 0.10), 1, "seconds_absolute"),
        ("paired (original and revision shown together)", lambda r: r["paired_still"], 1, "seconds_paired"),
    ]
    out = []
    for name, still, calls, seconds in checks:
        agree = sum(bool(still(r)) == r["ruff_still"] for r in rows)
        says = sum(bool(still(r)) for r in rows)
        out.append(
            {
                "check": name,
                "pairs": len(rows),
                "ruff_still": sum(r["ruff_still"] for r in rows),
                "says_still": says,
                "agrees": agree,
                "agreement": agree / len(rows) if rows else None,
                "judge_calls_per_rule": calls,
                "seconds_per_rule": (sum(r[seconds] for r in rows) / len(rows)) if seconds and rows else 0.0,
            }
        )
    return out


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
    parser.add_argument("--variants", action="store_true", help="then compare four checks of the first revision")
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
        run(inputs, args.rounds, args.out, rules, path=path)
    records = sorted(_read_jsonl(path), key=lambda r: (r["input"], r["extra_rounds"]))
    if args.variants:
        variants = args.out / "variants.jsonl"
        if not args.score_only:
            variant_checks(inputs, records, rule_codes, variants, rules)
        _print_variants(score_variants(_read_jsonl(variants)))
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


def _print_variants(rows: Sequence[dict[str, Any]]) -> None:
    pairs = rows[0]["pairs"] if rows else 0
    still = rows[0]["ruff_still"] if rows else 0
    print(
        f"# first revisions: {pairs} (revision, matched rule with a ruff code) pairs, ruff finds {still} still broken"
    )
    print("| check | says still broken | agrees with ruff | judge calls per checked rule | seconds per checked rule |")
    print("|---|---|---|---|---|")
    for row in rows:
        agreement = "-" if row["agreement"] is None else f"{row['agrees']} of {row['pairs']} ({row['agreement']:.0%})"
        print(
            f"| {row['check']} | {row['says_still']} | {agreement} | {row['judge_calls_per_rule']} "
            f"| {row['seconds_per_rule']:.1f} |"
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    raise SystemExit(main())
