"""The guaranteed cascade (``match --cascade``) replayed over many label draws from one recorded strong-judge job.

Input: a bulk job's directory (``inputs.jsonl``, ``rules.jsonl``, from :mod:`langchain_tag_bench.corpus`) and the
strong judge's ``--all-pairs`` output over every pair (``langchain-tag match --inputs ... --all-pairs``), and
optionally a cheap judge's (``--cheap``). No judge is called: every decision the cascade would ask the strong
judge for is read from the recorded output, which is exact for a judge that scores each pair on its own.

For each seed, as :func:`~langchain_tag.scale.cascade_job.cascade_corpus` does: draw ``--label-budget`` pairs,
choose the thresholds on the packaged MiniLM cosine (or a learned proxy), decide. Per setting, over the seeds
(medians): the share of pairs the strong judge sees (labels + sent), recall and precision of its YES, F1
against the gold relative to the strong judge alone, and how often the stated recall held (it must in at least
``1 - delta`` of the seeds). The gold (``--gold``) is a linter's: pycodestyle's own report for the pycodestyle
corpus, ruff's mapped to the policy's statements for ``--set ruff``, ruff's through the demo rules' codes for
``--set demo``; for ``--set nba`` it is RuleArena's own (each problem's ``relevant_rules``, read from
``--nba-data``). Compared
with a MiniLM-cosine prefilter sending the same number of top-cosine pairs to the strong judge (no guarantee),
and, with ``--cheap``, the band cascade of :func:`~langchain_tag.judging.cascade.choose_band` at the same share.

``python -m langchain_tag_bench.cascade_guarantee --job DIR --strong DIR/strong.jsonl [--cheap DIR/cheap.jsonl]``
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, get_args

from langchain_tag.judging._label_draw import StratifiedDraw
from langchain_tag.judging.guarantee import label_sample
from langchain_tag.judging.proxy import PairFeatures, ProxyKind, log_odds_feature
from langchain_tag.rules import load_rules
from langchain_tag.scale.cascade_job import CascadeTargets, choose_thresholds, pilot_scores
from langchain_tag_bench.candidate_draws import CANDIDATES, run_candidate

__all__ = ["Outcome", "Pairs", "load_pairs", "main", "prefilter", "replay"]


@dataclass(frozen=True)
class Pairs:
    """Every pair of a job, input-major: the strong verdict, the gold, the proxy features."""

    strong: list[bool]
    gold: list[bool]
    rows: list[list[float]]  # [cosine] or [cosine, cheap log-odds]
    cheap_p: list[float | None]
    per_input: int = 1  # the job's rules: pair k is input k // per_input's


@dataclass(frozen=True)
class Outcome:
    """One run of one way of deciding the pairs."""

    share: float  # pairs the strong judge saw / pairs
    recall: float  # of the strong judge's YES
    precision: float  # against the strong judge's YES
    f1_ratio: float  # F1 against gold / the strong judge alone's F1 against gold


def _f1(decided: Sequence[bool], gold: Sequence[bool]) -> float:
    tp = sum(d and g for d, g in zip(decided, gold, strict=True))
    fp = sum(d and not g for d, g in zip(decided, gold, strict=True))
    fn = sum(g and not d for d, g in zip(decided, gold, strict=True))
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def _outcome(decided: Sequence[bool], pairs: Pairs, seen: int) -> Outcome:
    yes = sum(pairs.strong)
    kept = sum(d and s for d, s in zip(decided, pairs.strong, strict=True))
    said = sum(decided)
    base = _f1(pairs.strong, pairs.gold)
    return Outcome(
        share=seen / len(decided),
        recall=kept / yes if yes else 1.0,
        precision=kept / said if said else 1.0,
        f1_ratio=_f1(decided, pairs.gold) / base if base else 0.0,
    )


def load_pairs(
    job: Path,
    strong: Path,
    cheap: Path | None,
    gold: str,
    embeddings: Any,
    *,
    nba_data: Path | None = None,
    strong_score: float | None = None,
) -> Pairs:
    """The job's pairs from its files and the recorded outputs (``--all-pairs`` records).

    With ``strong_score``, the strong judge's YES are the pairs whose recorded calibrated score is at least
    that, instead of its recorded decisions: the same judgments read at another threshold, with no call.
    """
    texts = {}
    for line in (job / "inputs.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        texts[record["id"]] = record["text"]
    rules = load_rules(job / "rules.jsonl")

    def decisions(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
        found = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for pair in record["pairs"]:
                found[(record["id"], pair["rule_id"])] = pair
        return found

    strong_pairs = decisions(strong)
    cheap_pairs = decisions(cheap) if cheap is not None else {}
    keys = [(i, r.rule_id) for i in texts for r in rules]
    codes = _gold(gold, texts, nba_data)
    features = PairFeatures(embeddings)
    cosines = features.cosines([(texts[i], r) for i in texts for r in rules])
    cheap_p = [cheap_pairs[k]["p_yes"] if k in cheap_pairs else None for k in keys]
    rows = [[c, log_odds_feature(p)] if cheap is not None else [c] for c, p in zip(cosines, cheap_p, strict=True)]
    return Pairs(
        strong=[
            bool(strong_pairs[k]["applies"]) if strong_score is None else strong_pairs[k]["score"] >= strong_score
            for k in keys
        ],
        gold=[r in codes[i] for i, r in keys],
        rows=rows,
        cheap_p=cheap_p,
        per_input=len(rules),
    )


def _gold(kind: str, texts: dict[str, str], nba_data: Path | None = None) -> dict[str, set[str]]:
    """Per input, the gold rule ids: the linter's report, or the NBA problem's ``relevant_rules`` in the catalog."""
    if kind == "pycodestyle":
        from langchain_tag_bench.pep8 import pycodestyle_codes

        return {i: set(pycodestyle_codes(text)) for i, text in texts.items()}
    if kind == "ruff":
        from langchain_tag_bench.ruff_cases import code_to_statements, load_statements, run_ruff

        mapping = code_to_statements(load_statements())
        found = run_ruff(list(texts.values()), sorted(mapping))
        return {i: {s for code in codes for s in mapping.get(code, [])} for i, codes in zip(texts, found, strict=True)}
    if kind == "pep8":
        from langchain_tag_bench.pep8_cases import load_statements as pep8_statements
        from langchain_tag_bench.pep8_cases import run_pycodestyle
        from langchain_tag_bench.ruff_cases import code_to_statements

        mapping = code_to_statements(pep8_statements())
        found = run_pycodestyle(list(texts.values()), sorted(mapping))
        return {i: {s for code in codes for s in mapping.get(code, [])} for i, codes in zip(texts, found, strict=True)}
    if kind == "demo":
        from langchain_tag_bench.check_loop import RULE_CODES, ruff_codes

        reported = ruff_codes(list(texts.values()), [c for codes in RULE_CODES.values() for c in codes])
        return {
            i: {rule for rule, codes in RULE_CODES.items() if found & set(codes)}
            for i, found in zip(texts, reported, strict=True)
        }
    if kind == "nba":
        from langchain_tag_bench.nba_cases import nba_data_dir
        from langchain_tag_bench.quality import load_quality_set

        folder = nba_data_dir(nba_data)
        cases = {c["id"]: set(c["violates"]) for c in load_quality_set("nba", data_path=folder).cases}
        unknown = sorted(set(texts) - set(cases))
        if unknown:
            raise SystemExit(f"--gold nba: {folder} has no problem {unknown[0]!r} (of {len(unknown)} input ids)")
        return {i: cases[i] for i in texts}
    raise SystemExit(f"--gold: 'pycodestyle', 'ruff', 'pep8', 'demo' or 'nba', got {kind!r}")


def replay(
    pairs: Pairs,
    *,
    seed: int,
    budget: int,
    target_recall: float,
    delta: float,
    proxy: ProxyKind = "cosine",
    draw: str = "uniform",
) -> tuple[Outcome, bool]:
    """The guaranteed cascade for one label draw; and whether the stated recall held.

    ``draw="uniform"`` replays the job's uniform draw with the proxy named; any other draw of
    :data:`~langchain_tag_bench.candidate_draws.CANDIDATES` (``"stratified"``, the job's default, and the two
    candidates) is replayed on the cosine.
    """
    n = len(pairs.strong)
    if draw == "stratified" and proxy == "learned":
        return _stratified_learned(pairs, seed=seed, budget=budget, target_recall=target_recall, delta=delta)
    if draw != "uniform":
        asked: set[int] = set()

        def oracle(picked: list[int]) -> dict[int, bool]:
            asked.update(picked)
            return {i: pairs.strong[i] for i in picked}

        cosines = [row[0] for row in pairs.rows]
        rule = run_candidate(draw, cosines, oracle, budget=budget, target_recall=target_recall, delta=delta, seed=seed)
        routes = ["strong" if i in asked else rule.route(s) for i, s in enumerate(cosines)]
        decided = [pairs.strong[i] if r == "strong" else r == "yes" for i, r in enumerate(routes)]
        outcome = _outcome(decided, pairs, rule.strong_calls)
        return outcome, outcome.recall >= target_recall
    drawn = label_sample(n, min(budget, n), seed=seed)
    labels = {i: pairs.strong[i] for i in drawn}
    targets = CascadeTargets(target_recall=target_recall, delta=delta, label_budget=budget, proxy=proxy, seed=seed)
    rule, _, scores = choose_thresholds(pairs.rows, labels, targets)  # as the cascade job chooses them
    decided, seen = [], 0
    for i, score in enumerate(scores):
        route = "strong" if i in labels else rule.route(score)
        seen += route == "strong"
        decided.append(pairs.strong[i] if route == "strong" else route == "yes")
    outcome = _outcome(decided, pairs, seen)
    return outcome, outcome.recall >= target_recall


def _stratified_learned(
    pairs: Pairs, *, seed: int, budget: int, target_recall: float, delta: float
) -> tuple[Outcome, bool]:
    """The stratified draw with the learned proxy, as the job runs it: fitted on the pilot (half the budget)."""
    draw = StratifiedDraw(
        len(pairs.strong), budget, target_recall=target_recall, delta=delta, seed=seed, pilot_share=0.5
    )
    pilot = {i: pairs.strong[i] for i in draw.pilot()}
    scores, _ = pilot_scores(pairs.rows, pilot, "learned")
    second, above = draw.second(scores, pilot)
    labels = {**pilot, **{i: pairs.strong[i] for i in second}}
    rule = draw.certify(labels, {i: pairs.strong[i] for i in above})
    routes = ["strong" if i in labels else rule.route(s) for i, s in enumerate(scores)]
    decided = [pairs.strong[i] if r == "strong" else r == "yes" for i, r in enumerate(routes)]
    outcome = _outcome(decided, pairs, rule.strong_calls)
    return outcome, outcome.recall >= target_recall


def prefilter(pairs: Pairs, sent: int) -> Outcome:
    """Send the ``sent`` pairs of highest cosine to the strong judge, the rest NO."""
    order = sorted(range(len(pairs.rows)), key=lambda i: -pairs.rows[i][0])
    chosen = set(order[:sent])
    decided = [pairs.strong[i] if i in chosen else False for i in range(len(pairs.rows))]
    return _outcome(decided, pairs, sent)


def band(pairs: Pairs, sent: int) -> Outcome:
    """The cheap judge decides, except for the ``sent`` pairs whose P(YES) is nearest 0.5 (the band cascade)."""
    p = [0.5 if v is None else float(v) for v in pairs.cheap_p]
    order = sorted(range(len(p)), key=lambda i: abs(p[i] - 0.5))
    chosen = set(order[:sent])
    decided = [pairs.strong[i] if i in chosen else p[i] >= 0.5 for i in range(len(p))]
    return _outcome(decided, pairs, sent)


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table over the settings given, then JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--job", type=Path, required=True, help="the job's directory (inputs.jsonl, rules.jsonl)")
    parser.add_argument("--strong", type=Path, required=True, help="the strong judge's --all-pairs output")
    parser.add_argument("--cheap", type=Path, help="a cheap judge's --all-pairs output (band cascade, learned proxy)")
    parser.add_argument(
        "--gold",
        choices=("pycodestyle", "ruff", "pep8", "demo", "nba"),
        default="pycodestyle",
        help="what gives the gold",
    )
    parser.add_argument("--nba-data", type=Path, default=None, help="the RuleArena NBA directory (--gold nba)")
    parser.add_argument(
        "--strong-score",
        type=float,
        metavar="T",
        help="read the strong judge's YES as recorded score >= T instead of its decisions (another threshold)",
    )
    parser.add_argument(
        "--proxies",
        metavar="LIST",
        help="proxies to replay, comma-separated: cosine, learned (default: cosine, and learned with --cheap; "
        "learned without --cheap is a logistic regression on the cosine alone)",
    )
    parser.add_argument(
        "--draws",
        default="uniform",
        help=f"label draws to replay, comma-separated: {', '.join(CANDIDATES)} (on the cosine; uniform and "
        "stratified also on the learned proxy when --proxies names it)",
    )
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--budgets", default="200,400", help="label budgets, comma-separated")
    parser.add_argument("--targets", default="0.9:0.1,0.95:0.05", help="recall:delta pairs, comma-separated")
    args = parser.parse_args(argv)

    from langchain_tag.local.models import get_embeddings

    pairs = load_pairs(
        args.job,
        args.strong,
        args.cheap,
        args.gold,
        get_embeddings(),
        nba_data=args.nba_data,
        strong_score=args.strong_score,
    )
    n = len(pairs.strong)
    print(
        f"# {n} pairs, {sum(pairs.strong)} strong YES, {sum(pairs.gold)} gold YES; strong alone F1 vs gold "
        f"{_f1(pairs.strong, pairs.gold):.3f}; {args.seeds} label draws per row, medians"
    )
    print(
        "| way | budget | target (delta) | strong sees | recall vs strong | precision vs strong | F1 / strong F1 "
        "| recall held |"
    )
    print("|---|---|---|---|---|---|---|---|")
    summary = []
    names = (args.proxies or ("cosine,learned" if args.cheap else "cosine")).split(",")
    unknown = [name for name in names if name not in get_args(ProxyKind)]
    if unknown:
        raise SystemExit(f"--proxies: 'cosine' or 'learned', got {unknown[0]!r}")
    proxies = cast(list[ProxyKind], names)
    draws = args.draws.split(",")
    for budget in (int(b) for b in args.budgets.split(",")):
        for spec in args.targets.split(","):
            target, delta = (float(x) for x in spec.split(":"))
            unknown_draws = [d for d in draws if d not in CANDIDATES]
            if unknown_draws:
                raise SystemExit(f"--draws: one of {', '.join(CANDIDATES)}, got {unknown_draws[0]!r}")
            ways = [(p, "uniform") for p in proxies] * ("uniform" in draws) + [
                ("cosine", d) for d in draws if d != "uniform"
            ]
            if "stratified" in draws and "learned" in proxies:
                ways.append(("learned", "stratified"))
            for proxy, draw in ways:
                runs = [
                    replay(pairs, seed=s, budget=budget, target_recall=target, delta=delta, proxy=proxy, draw=draw)
                    for s in range(args.seeds)
                ]
                outs = [o for o, _ in runs]
                held = sum(h for _, h in runs) / len(runs)
                share = _median([o.share for o in outs])
                row = {
                    "way": f"guaranteed cascade, {proxy}, {draw} draw",
                    "budget": budget,
                    "target": target,
                    "delta": delta,
                    "share": share,
                    "recall": _median([o.recall for o in outs]),
                    "precision": _median([o.precision for o in outs]),
                    "f1_ratio": _median([o.f1_ratio for o in outs]),
                    "held": held,
                }
                summary.append(row)
                _print(row)
                sent = round(share * n)
                others = [("MiniLM-cosine prefilter, same share", prefilter(pairs, sent))]
                if args.cheap and proxy == "cosine":
                    others.append(("band cascade (cheap judge), same share", band(pairs, sent)))
                for name, out in others:
                    row = {
                        "way": name,
                        "budget": budget,
                        "target": target,
                        "delta": delta,
                        "share": out.share,
                        "recall": out.recall,
                        "precision": out.precision,
                        "f1_ratio": out.f1_ratio,
                        "held": None,
                    }
                    summary.append(row)
                    _print(row)
    print(json.dumps(summary))
    return 0


def _print(row: dict[str, Any]) -> None:
    held = "-" if row["held"] is None else f"{row['held']:.1%}"
    print(
        f"| {row['way']} | {row['budget']} | {row['target']:g} ({row['delta']:g}) | {row['share']:.1%} "
        f"| {row['recall']:.3f} | {row['precision']:.3f} | {row['f1_ratio']:.3f} | {held} |"
    )


if __name__ == "__main__":
    raise SystemExit(main())
