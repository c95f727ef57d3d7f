"""The cascade's label draws compared on a synthetic job replayed from its verdicts (no model, no judge call).

``python -m langchain_tag_bench.cascade_draws [--jobs 3] [--trials 200] [--separation 3.0]``: 400 inputs x 20
rules (8,000 pairs), the judge says YES to about 3 % of them, and a proxy whose score is the logistic of
N(+s/2, 1) for a YES pair and N(-s/2, 1) for a NO pair (``--separation`` s). For each job seed and each draw
(:func:`~langchain_tag_bench.candidate_draws.run_candidate`:
the two shipped, SUPG's and BARGAIN's), ``--trials`` seeded runs at recall 0.9, delta 0.1 and a
budget of 600 labels: the share of the judge's calls saved (quartiles), the median recall of its YES, and the
share of trials meeting the target. The numbers are synthetic; they say nothing of a real judge or proxy.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Sequence

from langchain_tag_bench.candidate_draws import CANDIDATES, run_candidate

__all__ = ["main", "synthetic_job", "trial"]


def synthetic_job(
    seed: int, separation: float, pairs: int = 8000, rate: float = 0.03
) -> tuple[list[float], list[bool]]:
    """Scores and judge verdicts of a synthetic job (the unit test's job at seed 0 and separation 3)."""
    rng = random.Random(seed)
    truth = [rng.random() < rate for _ in range(pairs)]
    half = separation / 2
    scores = [1 / (1 + math.exp(-rng.gauss(half if yes else -half, 1.0))) for yes in truth]
    return scores, truth


def trial(draw: str, scores: list[float], truth: list[bool], seed: int, budget: int) -> tuple[float, float]:
    """One seeded run: the share of the judge's calls saved, and the recall of its YES."""
    asked: set[int] = set()

    def oracle(picked: list[int]) -> dict[int, bool]:
        asked.update(picked)
        return {i: truth[i] for i in picked}

    rule = run_candidate(draw, scores, oracle, budget=budget, target_recall=0.9, delta=0.1, seed=seed)
    kept = sum(1 for i, yes in enumerate(truth) if yes and (i in asked or rule.route(scores[i]) == "strong"))
    return 1 - rule.strong_calls / len(scores), kept / sum(truth)


def main(argv: Sequence[str] | None = None) -> int:
    """Print one table row per job and draw."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--separation", type=float, default=3.0)
    parser.add_argument("--budget", type=int, default=600)
    parser.add_argument("--draws", default=",".join(CANDIDATES), help="draws to compare, comma-separated")
    args = parser.parse_args(argv)
    print("| job seed | judge YES | draw | saved: q25 / median / q75 | median recall | target met |")
    print("|---|---|---|---|---|---|")
    for job in range(args.jobs):
        scores, truth = synthetic_job(job, args.separation)
        for draw in args.draws.split(","):
            runs = [trial(draw, scores, truth, seed, args.budget) for seed in range(args.trials)]
            saved = sorted(s for s, _ in runs)
            q25, q50, q75 = statistics.quantiles(saved, n=4)
            met = sum(r >= 0.9 for _, r in runs) / len(runs)
            print(
                f"| {job} | {sum(truth)} | {draw} | {q25:.1%} / {q50:.1%} / {q75:.1%} "
                f"| {statistics.median(r for _, r in runs):.3f} | {met:.1%} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
