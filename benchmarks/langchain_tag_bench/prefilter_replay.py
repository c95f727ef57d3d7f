"""The query-time prefilter (``ApplicabilityRetriever.fit_prefilter``) replayed on a recorded job: fit, then held out.

``python -m langchain_tag_bench.prefilter_replay --job DIR --strong DIR/strong.jsonl [--sample-share 0.5]
[--splits 200] [--targets 0.9:0.1]``: for each seeded split of the job's inputs, the sample's pairs (judged in
full, as ``fit_prefilter`` judges them) fit the cosine threshold with
:func:`~langchain_tag.judging.proxy_gate.sample_threshold`, as :func:`~langchain_tag.judging.proxy_gate.fit_gate`
does (on the packaged MiniLM cosine); on the held-out
inputs, the pairs at or above it are the ones the retriever would judge. Printed per target: the median share of
held-out pairs judged, the median recall of the judge's YES on them, and the share of splits whose held-out recall
met the target. No judge call: the verdicts are the recorded ``--all-pairs`` run's.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Sequence
from pathlib import Path

from langchain_tag.judging.proxy_gate import sample_threshold
from langchain_tag_bench.cascade_guarantee import Pairs, load_pairs

__all__ = ["held_out", "main"]


def held_out(pairs: Pairs, *, seed: int, share: float, target_recall: float, delta: float) -> tuple[float, float]:
    """One split: the share of held-out pairs the fitted retriever judges, and its recall of the judge's YES."""
    inputs = len(pairs.strong) // pairs.per_input
    order = list(range(inputs))
    random.Random(seed).shuffle(order)
    cut = max(1, round(share * inputs))
    sample = [k for i in order[:cut] for k in range(i * pairs.per_input, (i + 1) * pairs.per_input)]
    rest = [k for i in order[cut:] for k in range(i * pairs.per_input, (i + 1) * pairs.per_input)]
    threshold = sample_threshold(
        [pairs.rows[k][0] for k in sample], [pairs.strong[k] for k in sample], target_recall=target_recall, delta=delta
    )
    judged = [k for k in rest if threshold is None or pairs.rows[k][0] >= threshold]
    yes = sum(pairs.strong[k] for k in rest)
    kept = sum(pairs.strong[k] for k in judged)
    return len(judged) / len(rest) if rest else 0.0, kept / yes if yes else 1.0


def main(argv: Sequence[str] | None = None) -> int:
    """Print one table row per target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--job", type=Path, required=True)
    parser.add_argument("--strong", type=Path, required=True)
    parser.add_argument("--gold", default="demo", help="as cascade_guarantee's --gold (read, not scored here)")
    parser.add_argument("--sample-share", type=float, default=0.5)
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--targets", default="0.9:0.1", help="recall:delta pairs, comma-separated")
    args = parser.parse_args(argv)

    from langchain_tag.local.models import get_embeddings

    pairs = load_pairs(args.job, args.strong, None, args.gold, get_embeddings())
    inputs = len(pairs.strong) // pairs.per_input
    print(
        f"# {args.job.name}: {inputs} inputs x {pairs.per_input} rules, {sum(pairs.strong)} judge YES; "
        f"fitted on {args.sample_share:.0%} of the inputs, {args.splits} seeded splits"
    )
    print("| target (delta) | held-out pairs judged (median) | held-out recall (median) | target met |")
    print("|---|---|---|---|")
    for spec in args.targets.split(","):
        target, delta = (float(x) for x in spec.split(":"))
        runs = [
            held_out(pairs, seed=s, share=args.sample_share, target_recall=target, delta=delta)
            for s in range(args.splits)
        ]
        met = sum(r >= target for _, r in runs) / len(runs)
        print(
            f"| {target:g} ({delta:g}) | {statistics.median(j for j, _ in runs):.1%} "
            f"| {statistics.median(r for _, r in runs):.3f} | {met:.1%} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
