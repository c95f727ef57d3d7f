"""The review page's cost: how long ``langchain-tag review`` takes, and how large the page grows.

Two measurements, printed as markdown:

1. Wall time of ``langchain-tag review`` on the demo's shipped rules and policy, a fresh process each run (so
   the interpreter's start and every import count, as a user sees them), ``--runs`` times, median and range.
2. A synthetic corpus of ``--inputs`` inputs x ``--rules`` rules (the demo's ten rules, repeated under new ids
   over the same spans, to the count asked), with every pair's score (as ``match --all-pairs`` writes) drawn
   from a seeded generator, the inputs' texts (the demo's code cases, cycled) and a gold file: the page's size
   in bytes, the size of its parts, and the time of one render in this process.
3. The same at scale: 1,000 inputs x 200 rules (``--large-inputs``, ``--large-rules``), the case the page must keep
   under 1.5 MB.

Run: ``python -m langchain_tag_bench.review_page [--runs 5] [--inputs 300] [--rules 20] [--input-chars N]``;
``--corpus-only`` skips the command's timing (1.), ``--no-large`` the large case (3.).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path

from langchain_tag.rules import load_rules, save_rules

DATA = files("langchain_tag") / "data"
CASES = Path(__file__).resolve().parents[1] / "data" / "demo" / "demo_cases.jsonl"


def time_command(argv: list[str], runs: int) -> list[tuple[float, float]]:
    """Wall and CPU seconds (user + system) of ``langchain-tag ARGV``, one fresh process per run."""
    command = [sys.executable, "-m", "langchain_tag.cli.main", *argv]
    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append((wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
    return times


def _row(name: str, times: list[tuple[float, float]]) -> str:
    walls, cpus = [w for w, _ in times], [c for _, c in times]
    return (
        f"| {name} | {statistics.median(walls):.2f} | {min(walls):.2f} | {max(walls):.2f} "
        f"| {statistics.median(cpus):.2f} |"
    )


def synthetic_corpus(
    directory: Path, n_inputs: int, n_rules: int, *, input_chars: int = 0, seed: int = 7
) -> dict[str, Path]:
    """Write a rule file of ``n_rules`` rules, inputs, all-pairs verdicts and a gold file; return their paths.

    With ``input_chars``, each input's text is its case repeated to that many characters.
    """
    base = load_rules(Path(str(DATA / "demo_rules.jsonl")))
    rules = [
        base[i % len(base)].model_copy(update={"rule_id": f"R-{i + 1:03d}"}) if i >= len(base) else base[i]
        for i in range(n_rules)
    ]
    rules_path = save_rules(rules, directory / "rules.jsonl")
    cases = [json.loads(line)["code"] for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(seed)
    inputs, verdicts, gold = [], [], []
    threshold = 0.5
    for i in range(n_inputs):
        input_id = f"case-{i + 1:04d}"
        text = cases[i % len(cases)]
        if input_chars:
            text = ((text + "\n\n") * (input_chars // len(text) + 1))[:input_chars]
        inputs.append({"id": input_id, "text": text})
        pairs = []
        for rule in rules:
            p = rng.betavariate(0.6, 2.5)
            pairs.append({"rule_id": rule.rule_id, "applies": p >= threshold, "p_yes": p, "score": p})
        matched = sorted(
            ({"rule_id": q["rule_id"], "score": q["score"], "p_yes": q["p_yes"]} for q in pairs if q["applies"]),
            key=lambda m: -m["score"],
        )
        verdicts.append({"id": input_id, "matched": matched, "failed": [], "pairs": pairs})
        wanted = [q["rule_id"] for q in pairs if q["score"] + rng.gauss(0, 0.15) > threshold]
        gold.append({"id": input_id, "rule_ids": wanted})
    paths = {"rules": rules_path}
    for name, rows in (("inputs", inputs), ("verdicts", verdicts), ("gold", gold)):
        paths[name] = directory / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return paths


def page_parts(html: str) -> dict[str, int]:
    """Characters of the page's inline SVG plots, its inputs section, and the rest."""
    svg = sum(len(part.split("</svg>")[0]) + 6 for part in html.split("<svg")[1:])
    inputs = len(html.split('<section id="inputs">')[1].split("</section>")[0]) if 'id="inputs"' in html else 0
    return {"svg plots": svg, "inputs section": inputs, "rest": len(html) - svg - inputs}


def command_times(directory: Path, runs: int) -> None:
    """Time ``langchain-tag review`` on the demo's rules against ``--help``, ``runs`` fresh processes each."""
    demo = ["review", str(DATA / "demo_rules.jsonl"), "--source", str(DATA / "demo_policy.md")]
    load = os.getloadavg()[0]
    review = time_command([*demo, "-o", str(directory / "demo.html")], runs)
    baseline = time_command(["--help"], runs)
    demo_size = (directory / "demo.html").stat().st_size
    print(
        f"## langchain-tag review on the demo's rules ({runs} fresh processes each, {os.cpu_count()} CPUs, "
        f"load average {load:.1f} at the start)\n"
    )
    print("| command | median wall s | min wall s | max wall s | median CPU s |\n|---|---:|---:|---:|---:|")
    print(_row("`langchain-tag review` (demo rules, page " + f"{demo_size:,} bytes)", review))
    print(_row("`langchain-tag --help` (the CLI's start alone)", baseline) + "\n")


def main(argv: list[str] | None = None) -> None:
    """Print the measurements as markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--inputs", type=int, default=300)
    parser.add_argument("--rules", type=int, default=20)
    parser.add_argument(
        "--input-chars", type=int, default=0, help="each input this long (default: the demo cases as they are)"
    )
    parser.add_argument("--large-inputs", type=int, default=1000)
    parser.add_argument("--large-rules", type=int, default=200)
    parser.add_argument("--no-large", action="store_true", help="skip the large case")
    parser.add_argument("--corpus-only", action="store_true", help="skip timing the command")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        if not args.corpus_only:
            command_times(directory, args.runs)
        cases = [(args.inputs, args.rules)]
        if not args.no_large:
            cases.append((args.large_inputs, args.large_rules))
        for n_inputs, n_rules in cases:
            corpus_case(directory / f"{n_inputs}x{n_rules}", n_inputs, n_rules, args.input_chars)


def corpus_case(directory: Path, n_inputs: int, n_rules: int, input_chars: int) -> None:
    """Render the page of a synthetic corpus of ``n_inputs`` x ``n_rules``; print its size, parts and render time."""
    from langchain_tag.review import render_review

    directory.mkdir(parents=True, exist_ok=True)
    paths = synthetic_corpus(directory, n_inputs, n_rules, input_chars=input_chars)
    start = time.perf_counter()
    page = render_review(
        paths["rules"],
        Path(str(DATA / "demo_policy.md")),
        directory / "corpus.html",
        verdicts=paths["verdicts"],
        inputs=paths["inputs"],
        gold=paths["gold"],
        threshold=0.5,
    )
    seconds = time.perf_counter() - start
    html = page.read_text(encoding="utf-8")
    size = page.stat().st_size
    lengths = f"inputs of {input_chars:,} characters" if input_chars else "the demo cases as inputs"
    print(f"## {n_inputs} inputs x {n_rules} rules, every pair's score, {lengths}, and a gold\n")
    print("| page bytes | MB | render s (in process) | plots |\n|---:|---:|---:|---:|")
    plots = html.count('<svg id="plot-')
    print(f"| {size:,} | {size / 1e6:.2f} | {seconds:.2f} | {plots} |\n")
    print("| part | characters |\n|---|---:|")
    for part, count in page_parts(html).items():
        print(f"| {part} | {count:,} |")
    print()


if __name__ == "__main__":
    main()
