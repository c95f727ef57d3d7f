"""A corpus for the bulk job: code inputs and rules whose gold a linter gives.

``python -m langchain_tag_bench.corpus --inputs 300 --rules 20 --out DIR`` writes ``DIR/inputs.jsonl``
(one ``{"id", "text"}`` per line: up to three consecutive lines of a HumanEval canonical solution, spread
over the problems) and ``DIR/rules.jsonl`` (the first N pycodestyle checks as rules), ready for
``langchain-tag match --inputs DIR/inputs.jsonl --rules DIR/rules.jsonl -o DIR/verdicts.jsonl``.
HumanEval is read from ``../shared/data/humaneval`` or ``--humaneval``; nothing is copied into the repository.

``--set ruff`` writes instead a seeded draw of ``--inputs`` cases of the ruff set's test split
(:mod:`langchain_tag_bench.ruff_cases`: standard-library functions, gold from ruff) and the ruff policy's
statements as rules, one rule per statement, its id the statement's (``S01``); about one pair in twenty is a
violation, against one in two thousand for the pycodestyle corpus. ``--set pep8`` does the same with the
``pep8`` quality set (:mod:`langchain_tag_bench.pep8_cases`: gold from pycodestyle) and its PEP 8 statements.
``--set demo`` writes the demo set's 52
cases and the shipped demo rules ruff can check (:data:`~langchain_tag_bench.check_loop.RULE_CODES`; gold from
ruff through those codes). ``--set nba`` writes the first ``--inputs`` problems of a seeded shuffle of the NBA
set's test split (:mod:`langchain_tag_bench.nba_cases`: RuleArena scenarios, so a larger count keeps the smaller
one's problems) and RuleArena's 55-rule catalog as rules; the gold is each problem's ``relevant_rules``, about one
pair in five. The data is read from ``--nba-data`` (default the shared ``rulearena-nba``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections.abc import Sequence
from pathlib import Path

from langchain_tag.rules import Rule, save_rules

__all__ = ["code_snippets", "demo_job", "main", "nba_job", "ruff_job", "statement_rules"]

HUMANEVAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "humaneval" / "HumanEval.jsonl.gz"


def code_snippets(path: Path, count: int, *, lines: int = 3) -> list[dict[str, str]]:
    """``count`` snippets of up to ``lines`` non-blank lines of canonical solutions, taken round-robin over problems."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        problems = [json.loads(line) for line in handle if line.strip()]
    chunks: list[list[tuple[str, str]]] = []
    for problem in problems:
        body = [line for line in problem["canonical_solution"].splitlines() if line.strip()]
        name = problem["task_id"].replace("/", "-")
        chunks.append([(f"{name}.{i // lines}", "\n".join(body[i : i + lines])) for i in range(0, len(body), lines)])
    found: list[dict[str, str]] = []
    depth = 0
    while len(found) < count and any(depth < len(c) for c in chunks):
        found += [{"id": c[depth][0], "text": c[depth][1]} for c in chunks if depth < len(c)]
        depth += 1
    return found[:count]


def statement_rules(policy: str = "ruff") -> list[Rule]:
    """A policy's statements as rules (``"ruff"`` or ``"pep8"``): the condition is that the code goes against one."""
    if policy == "pep8":
        from langchain_tag_bench.pep8_cases import STATEMENTS_PATH as POLICY_PATH
        from langchain_tag_bench.pep8_cases import load_statements
    else:
        from langchain_tag_bench.ruff_cases import POLICY_PATH, load_statements

    return [
        Rule(
            rule_id=s["id"],
            rule_name=s["id"],
            condition=f"the code goes against this rule: {s['text']}",
            action=s["text"],
            source_text=s["text"],
            document_id=POLICY_PATH.name,
        )
        for s in load_statements()
    ]


def ruff_job(count: int, cache_dir: Path, *, seed: int = 0, policy: str = "ruff") -> list[dict[str, str]]:
    """A seeded draw of ``count`` test-split cases of the ruff (or ``pep8``) set, as ``{"id", "text"}`` inputs."""
    if policy == "pep8":
        from langchain_tag_bench.pep8_cases import cached_cases
    else:
        from langchain_tag_bench.ruff_cases import cached_cases

    path = cached_cases(cache_dir)
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    test = [c for c in cases if c["split"] == "test"]
    if count > len(test):
        raise SystemExit(f"--inputs: the {policy} set's test split has {len(test)} cases, got {count}")
    drawn = sorted(random.Random(seed).sample(test, count), key=lambda c: c["id"])
    return [{"id": c["id"], "text": c["code"]} for c in drawn]


def demo_job() -> tuple[list[dict[str, str]], list[Rule]]:
    """The demo set's cases as inputs, and the shipped demo rules that have ruff codes."""
    from langchain_tag.cli.demo import load_shipped_demo
    from langchain_tag_bench.check_loop import RULE_CODES

    path = Path(__file__).resolve().parent.parent / "data" / "demo" / "demo_cases.jsonl"
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rules = [r for r in load_shipped_demo().rules if r.rule_id in RULE_CODES]
    return [{"id": c["id"], "text": c["code"]} for c in cases], rules


def nba_job(count: int, data_dir: Path | None = None, *, seed: int = 0) -> tuple[list[dict[str, str]], list[Rule]]:
    """The first ``count`` test-split NBA problems of a seeded shuffle, in id order, and the catalog's rules."""
    from langchain_tag_bench.nba import catalog_rules
    from langchain_tag_bench.nba_cases import nba_data_dir
    from langchain_tag_bench.quality import load_quality_set

    folder = nba_data_dir(data_dir)
    test = [c for c in load_quality_set("nba", data_path=folder).cases if c["split"] == "test"]
    if count > len(test):
        raise SystemExit(f"--inputs: the NBA set's test split has {len(test)} problems, got {count}")
    random.Random(seed).shuffle(test)
    drawn = sorted(test[:count], key=lambda c: c["id"])
    return [{"id": c["id"], "text": c["text"]} for c in drawn], catalog_rules(folder)


def main(argv: Sequence[str] | None = None) -> int:
    """Write the corpus's inputs and rules."""
    from langchain_tag_bench.scale import scale_rules

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=300)
    parser.add_argument("--rules", type=int, default=20)
    parser.add_argument("--humaneval", type=Path, default=HUMANEVAL)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--set", choices=("pycodestyle", "ruff", "pep8", "demo", "nba"), default="pycodestyle")
    parser.add_argument("--nba-data", type=Path, default=None, help="the RuleArena NBA directory")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "langchain-tag")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.set in ("ruff", "pep8"):
        items, rules = ruff_job(args.inputs, args.cache_dir, policy=args.set), statement_rules(args.set)
    elif args.set == "demo":
        items, rules = demo_job()
    elif args.set == "nba":
        items, rules = nba_job(args.inputs, args.nba_data)
    else:
        items, rules = code_snippets(args.humaneval, args.inputs), scale_rules(args.rules)
    (args.out / "inputs.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    save_rules(rules, args.out / "rules.jsonl")
    print(f"{len(items)} inputs and {len(rules)} rules in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
