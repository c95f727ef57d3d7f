r"""The Batch API path on a real model's verdicts: export, answer from those verdicts, import, compare.

Run after a bulk job (``langchain-tag match --inputs F --rules R -o OUT --verdicts V``): the same job is
exported with ``langchain-tag batch export`` into an empty cache, each request is answered with the
verdict the bulk job's cache ``V`` holds for it (:func:`langchain_tag.testing.batch_results_from_cache`,
the reply text and first-token logprobs that give its P(YES)), the answers are imported with
``langchain-tag batch import ... -o`` and the file written is compared with the bulk job's ``OUT``:
same matched rules per input, P(YES) differences, and whether the two files are byte-identical.

Usage::

    python -m langchain_tag_bench.batch_roundtrip --inputs runs/bulk/inputs.jsonl --rules runs/bulk/rules.jsonl \\
        --verdicts runs/bulk/inproc.sqlite --expected runs/bulk/inproc.jsonl \\
        --model qwen2.5-coder-0.5b-instruct-q4_k_m --out runs/bulk/batch --max-requests 2000

``--model`` is the identity of the model that judged the bulk job (the embedded model's GGUF name), so the
batch's cache keys and default calibration are those of that job.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from langchain_tag.cli.main import main as cli_main
from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
from langchain_tag.testing import batch_results_from_cache

__all__ = ["compare_results", "main"]


def compare_results(got: Path, expected: Path) -> dict[str, object]:
    """Per input, whether the matched rules agree, and the largest P(YES) gap over the matched rules."""
    want = [json.loads(line) for line in expected.read_text(encoding="utf-8").splitlines()]
    have = [json.loads(line) for line in got.read_text(encoding="utf-8").splitlines()]
    same_ids = [w["id"] for w in want] == [h["id"] for h in have]
    agree = 0
    gap = 0.0
    for w, h in zip(want, have, strict=False):
        w_rules = [m["rule_id"] for m in w["matched"]]
        h_rules = [m["rule_id"] for m in h["matched"]]
        if sorted(w_rules) == sorted(h_rules) and not w["failed"] and not h["failed"]:
            agree += 1
            p_yes = {m["rule_id"]: m["p_yes"] for m in h["matched"]}
            gap = max([gap, *(abs(m["p_yes"] - p_yes[m["rule_id"]]) for m in w["matched"] if m["p_yes"] is not None)])
    return {
        "inputs": len(want),
        "same_ids": same_ids,
        "inputs_with_same_matches": agree,
        "matched_rules": sum(len(w["matched"]) for w in want),
        "largest_p_yes_gap": gap,
        "byte_identical": got.read_bytes() == expected.read_bytes(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the round trip and print its comparison; the exit code is 0 when the two files agree."""
    parser = argparse.ArgumentParser(prog="python -m langchain_tag_bench.batch_roundtrip", description=__doc__)
    parser.add_argument("--inputs", required=True, type=Path)
    parser.add_argument("--rules", required=True, type=Path)
    parser.add_argument("--verdicts", required=True, type=Path, help="the bulk job's verdict cache (read only)")
    parser.add_argument("--expected", required=True, type=Path, help="the bulk job's results file")
    parser.add_argument("--model", required=True, help="identity of the model that judged the bulk job")
    parser.add_argument("--out", required=True, type=Path, help="a directory for the export, results and cache")
    parser.add_argument("--max-requests", type=int, default=50_000)
    args = parser.parse_args(argv)

    if args.out.exists():
        shutil.rmtree(args.out)
    export_dir, cache = args.out / "export", args.out / "imported.sqlite"
    common = ["--inputs", str(args.inputs), "--rules", str(args.rules), "--model", args.model, "--verdicts", str(cache)]
    started = time.perf_counter()
    code = cli_main(["batch", "export", *common, "--out", str(export_dir), "--max-requests", str(args.max_requests)])
    exported = time.perf_counter() - started
    files = sorted(export_dir.glob("batch-*.jsonl"))
    answered = batch_results_from_cache(export_dir, SQLiteVerdictCache(args.verdicts), args.out / "results.jsonl")
    started = time.perf_counter()
    got = args.out / "imported.jsonl"
    code = code or cli_main(["batch", "import", str(args.out / "results.jsonl"), *common, "-o", str(got)])
    imported = time.perf_counter() - started
    report = {
        "batch_files": len(files),
        "requests_per_file": [sum(1 for _ in f.open(encoding="utf-8")) for f in files],
        "answered_from_the_bulk_cache": answered,
        "export_seconds": round(exported, 1),
        "import_and_match_seconds": round(imported, 1),
        "exit_code": code,
        **compare_results(got, args.expected),
    }
    print(json.dumps(report, indent=2))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
