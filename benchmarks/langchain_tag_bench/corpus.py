"""A corpus for the bulk job: short code snippets from HumanEval, and pycodestyle checks as rules.

``python -m langchain_tag_bench.corpus --inputs 300 --rules 20 --out DIR`` writes ``DIR/inputs.jsonl``
(one ``{"id", "text"}`` per line: up to three consecutive lines of a HumanEval canonical solution, spread
over the problems) and ``DIR/rules.jsonl`` (the first N pycodestyle checks as rules), ready for
``langchain-tag match --inputs DIR/inputs.jsonl --rules DIR/rules.jsonl -o DIR/verdicts.jsonl``.
HumanEval is read from ``../shared/data/humaneval`` or ``--humaneval``; nothing is copied into the repository.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Sequence
from pathlib import Path

from langchain_tag.rules import save_rules

__all__ = ["code_snippets", "main"]

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


def main(argv: Sequence[str] | None = None) -> int:
    """Write the corpus's inputs and rules."""
    from langchain_tag_bench.scale import scale_rules

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=300)
    parser.add_argument("--rules", type=int, default=20)
    parser.add_argument("--humaneval", type=Path, default=HUMANEVAL)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    items = code_snippets(args.humaneval, args.inputs)
    (args.out / "inputs.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    save_rules(scale_rules(args.rules), args.out / "rules.jsonl")
    print(f"{len(items)} inputs and {args.rules} rules in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
