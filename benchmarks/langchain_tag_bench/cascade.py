"""The judge cascade measured from two recorded quality runs: a cheap judge's and a strong judge's.

Both runs are ``bench quality`` runs of the same set and the same rules (run the second with ``--rules`` of the
first), each with per-pair judgments in ``records.jsonl``. No judge is called here: the cascade of
:class:`~langchain_tag.cascade_retriever.CascadeRetriever` is replayed from the records, which is exact as long as the
strong row scores each pair on its own (``tag-fitted``: a per-rule reference and a Platt map, no per-input step).

* The band is chosen on the dev cases' pairs with :func:`~langchain_tag.judging.cascade.choose_band` (the narrowest band
  whose cascade agrees with the strong judge alone on at least the target share of dev pairs), once per target.
* On the test cases: the share of pairs sent to the strong judge, the pairwise agreement with the strong judge
  alone, and micro P/R/F1 over (case, statement) pairs as ``bench quality`` scores them; against the cheap judge
  alone and the strong judge alone.
* Time per case is computed, not measured: the cheap judge's seconds per judgment times every pair of the case,
  plus the strong judge's seconds per judgment times the pairs sent to it. Seconds per judgment are each run's
  median over its records that made calls of ``seconds / calls``, or given (``--cheap-seconds``,
  ``--strong-seconds``) when the two runs did not share the machine under the same load.

``python -m langchain_tag_bench.cascade --cheap runs/A --strong runs/B [--set demo]`` prints the table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_tag.judging._logodds import sigmoid
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.cascade import Band, cascade_decisions, choose_band
from langchain_tag.rules import load_rules
from langchain_tag_bench.quality import (
    FITTED_FILE,
    RECORDS_FILE,
    QualitySet,
    load_quality_set,
    rule_statements,
    score_pairs,
    statement_spans,
)

__all__ = [
    "ROWS",
    "CascadeReport",
    "CascadeRow",
    "JudgeRun",
    "cascade_report",
    "load_judge_run",
    "main",
]

ROWS = ("tag-fitted", "tag", "tag-raw")
"""Recorded rows a judge's scores can be read from: ``tag-fitted`` (the run's dev-fitted calibration), ``tag``
(the recorded calibrated score and threshold) or ``tag-raw`` (raw P(YES), threshold 0.5)."""
DEFAULT_TARGETS = (0.9, 0.95, 0.98, 1.0)
"""Dev agreement targets of the cascade rows."""


@dataclass
class JudgeRun:
    """One judge's scores over a recorded quality run.

    Attributes:
        directory: The run directory.
        row: The recorded row the scores come from (:data:`ROWS`).
        threshold: The decision threshold of that row.
        scores: Case id -> rule id -> calibrated score (``None``: the judgment failed or gave no probability).
        split_of: Case id -> ``dev`` or ``test``.
        rule_ids: The rules judged (the run's ``rules.jsonl``, in order).
        seconds_per_judgment: Median over the run's records that made calls of ``seconds / calls`` (``None``
            without such records).
        judgments_timed: Judge calls in the records that timing is taken from.
        model: The judge model, when the run recorded it (the fitted calibration's ``model``).
    """

    directory: Path
    row: str
    threshold: float
    scores: dict[str, dict[str, float | None]]
    split_of: dict[str, str]
    rule_ids: list[str]
    seconds_per_judgment: float | None
    judgments_timed: int = 0
    model: str | None = None

    def decisions(self, case_id: str) -> dict[str, bool]:
        """Rule id -> YES for one case (a failed judgment is NO)."""
        return {r: s is not None and s >= self.threshold for r, s in self.scores[case_id].items()}


def _records(directory: Path) -> list[dict[str, Any]]:
    path = directory / RECORDS_FILE
    if not path.is_file():
        raise ValueError(f"{directory}: no {RECORDS_FILE} (a bench quality run directory is needed)")
    records = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a torn last line, as RunLog reads it
    return records


def load_judge_run(directory: str | Path, row: str = "tag-fitted") -> JudgeRun:
    """Read one judge's per-pair scores from a ``bench quality`` run.

    Args:
        directory: The run directory (``records.jsonl``, ``rules.jsonl`` and, for ``tag-fitted``,
            ``fitted-calibration.json``).
        row: Which recorded row to score with (:data:`ROWS`).

    Returns:
        The scores, with the run's seconds per judgment.

    Raises:
        ValueError: On an unknown row, a missing file, or no records of the row.
    """
    path = Path(directory).expanduser()
    if row not in ROWS:
        raise ValueError(f"unknown row {row!r}; expected one of: {', '.join(ROWS)}")
    records = _records(path)
    source = "tag" if row == "tag-raw" else row
    latest: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.get("method") == source and record.get("judgments") is not None:
            latest[str(record["key"])] = record  # a later record replaces an earlier one
    if not latest:
        raise ValueError(f"{path}: no {source!r} records (run bench quality --methods {source})")
    calibration: Calibration | None = None
    if row == "tag-fitted":
        fitted = path / FITTED_FILE
        if not fitted.is_file():
            raise ValueError(f"{path}: no {FITTED_FILE}; rerun bench quality --methods tag-fitted there to write it")
        calibration = Calibration.load(fitted)
        threshold = calibration.threshold if calibration.threshold is not None else 0.5
    elif row == "tag-raw":
        threshold = 0.5
    else:
        thresholds = {float(r["threshold"]) for r in latest.values() if r.get("threshold") is not None}
        if len(thresholds) > 1:
            raise ValueError(f"{path}: the {row!r} records were made with different thresholds {sorted(thresholds)}")
        threshold = thresholds.pop() if thresholds else 0.5
    scores: dict[str, dict[str, float | None]] = {}
    for case_id, record in latest.items():
        scores[case_id] = {str(j["rule_id"]): _score(row, j, calibration) for j in record["judgments"]}
    timed = [r for r in records if int(r.get("calls") or 0) > 0 and r.get("seconds") is not None]
    per_judgment = [float(r["seconds"]) / int(r["calls"]) for r in timed]
    rules_file = path / "rules.jsonl"
    rule_ids = [r.rule_id for r in load_rules(rules_file)] if rules_file.is_file() else []
    return JudgeRun(
        directory=path,
        row=row,
        threshold=float(threshold),
        scores=scores,
        split_of={c: str(r.get("split", "")) for c, r in latest.items()},
        rule_ids=rule_ids,
        seconds_per_judgment=statistics.median(per_judgment) if per_judgment else None,
        judgments_timed=sum(int(r["calls"]) for r in timed),
        model=calibration.model if calibration is not None else None,
    )


def _score(row: str, judgment: Mapping[str, Any], calibration: Calibration | None) -> float | None:
    if judgment.get("error"):
        return None
    if row == "tag-fitted":
        assert calibration is not None
        feature = judgment.get("feature")
        return None if feature is None else sigmoid(calibration.slope * float(feature) + calibration.intercept)
    value = judgment.get("p_yes") if row == "tag-raw" else judgment.get("score")
    return None if value is None else float(value)


@dataclass(frozen=True)
class CascadeRow:
    """One row of the table, on the test split.

    Attributes:
        label: What the row is.
        band: The band chosen on dev (cascade rows only).
        target: The dev agreement target (cascade rows only).
        cases: Test cases scored.
        pairs: Test pairs.
        strong_share: Share of test pairs the strong judge judges (0 for the cheap judge alone, 1 for the strong).
        agreement: Share of test pairs decided as the strong judge alone decides them.
        precision: Micro precision over (case, statement) pairs.
        recall: Micro recall.
        f1: Micro F1.
        seconds_per_case: Computed judge time per test case (``None`` without timing).
    """

    label: str
    band: Band | None
    target: float | None
    cases: int
    pairs: int
    strong_share: float
    agreement: float
    precision: float
    recall: float
    f1: float
    seconds_per_case: float | None


@dataclass
class CascadeReport:
    """The table: the cheap judge alone, the strong judge alone, and the cascade per dev agreement target.

    Attributes:
        set_name: The quality set.
        cheap: The cheap judge's run.
        strong: The strong judge's run.
        rows: The rows, in table order.
        dev_cases: Dev cases the bands were chosen on.
        dev_pairs: Dev pairs the bands were chosen on.
        notes: Remarks printed under the table.
    """

    set_name: str
    cheap: JudgeRun
    strong: JudgeRun
    rows: list[CascadeRow]
    dev_cases: int
    dev_pairs: int
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        """The table and its notes as Markdown."""
        cheap_s, strong_s = self.cheap.seconds_per_judgment, self.strong.seconds_per_judgment
        lines = [
            f"Set {self.set_name}: bands chosen on {self.dev_cases} dev cases ({self.dev_pairs} pairs), scored on "
            f"{self.rows[0].cases} test cases ({self.rows[0].pairs} pairs). Cheap: {self.cheap.directory} "
            f"(`{self.cheap.row}`, threshold {self.cheap.threshold:.3f}, {_num(cheap_s, 3)} s / judgment); strong: "
            f"{self.strong.directory} (`{self.strong.row}`, threshold {self.strong.threshold:.3f}, "
            f"{_num(strong_s, 3)} s / judgment).",
            "",
            "| row | band [low, high] | dev: to strong, agreement | test: to strong | agreement with strong "
            "| P | R | F1 | s / case (computed) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row in self.rows:
            band = f"[{row.band.low:.3f}, {row.band.high:.3f}]" if row.band else "-"
            dev = f"{row.band.strong_share:.0%}, {row.band.agreement:.1%}" if row.band else "-"
            lines.append(
                f"| {row.label} | {band} | {dev} | {row.strong_share:.0%} | {row.agreement:.1%} | "
                f"{row.precision:.2f} | {row.recall:.2f} | **{row.f1:.2f}** | {_num(row.seconds_per_case, 1)} |"
            )
        if self.notes:
            lines.append("")
            lines.extend(f"- {note}" for note in self.notes)
        return "\n".join(lines)


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def cascade_report(
    quality_set: QualitySet,
    cheap: JudgeRun,
    strong: JudgeRun,
    *,
    targets: Sequence[float] = DEFAULT_TARGETS,
    reference: JudgeRun | None = None,
) -> CascadeReport:
    """Replay the cascade over two runs: bands chosen on dev, every row scored on test.

    Args:
        quality_set: The set both runs judged (its cases' labels and statements).
        cheap: The cheap judge's run.
        strong: The strong judge's run (its row should score each pair on its own, as ``tag-fitted`` does).
        targets: Dev agreement targets, one cascade row each.
        reference: Another row of the strong run to show alone (e.g. its shipped default ``tag``), or ``None``.

    Returns:
        The report.

    Raises:
        ValueError: When the runs judged different rules, share no dev or no test case, or a target is outside
            ``[0, 1]``.
    """
    if cheap.rule_ids and strong.rule_ids and cheap.rule_ids != strong.rule_ids:
        raise ValueError(
            f"{cheap.directory} and {strong.directory} judged different rules; run one with --rules of the other"
        )
    rules = load_rules(strong.directory / "rules.jsonl")
    rule_map = rule_statements(rules, statement_spans(quality_set), quality_set.policy_text)
    cases = {str(c["id"]): c for c in quality_set.cases}
    shared = [c for c in cases if c in cheap.scores and c in strong.scores]
    dev = [c for c in shared if cases[c]["split"] == "dev"]
    test = [c for c in shared if cases[c]["split"] == "test"]
    if not dev or not test:
        raise ValueError(f"the runs share {len(dev)} dev and {len(test)} test cases of {quality_set.name}; need both")

    def pairs(case_ids: Sequence[str]) -> tuple[list[tuple[str, str]], list[float | None], list[bool]]:
        keys = [(c, r) for c in case_ids for r in cheap.scores[c] if r in strong.scores[c]]
        strong_yes = {c: strong.decisions(c) for c in case_ids}
        return keys, [cheap.scores[c][r] for c, r in keys], [strong_yes[c][r] for c, r in keys]

    dev_keys, dev_cheap, dev_strong = pairs(dev)
    test_keys, test_cheap, test_strong = pairs(test)
    gold = {c: set(cases[c].get("violates") or ()) for c in test}

    def scored(
        label: str, decisions: Sequence[bool], sent: Sequence[bool], *, cheap_judges: bool = True, **extra: Any
    ) -> CascadeRow:
        yes: dict[str, set[str]] = {c: set() for c in test}
        for (case_id, rule_id), decision in zip(test_keys, decisions, strict=True):
            if decision:
                yes[case_id] |= rule_map.get(rule_id, set())
        precision, recall, f1 = score_pairs(yes, gold)
        seconds = None
        if cheap.seconds_per_judgment is not None and strong.seconds_per_judgment is not None:
            cheap_pairs = len(test_keys) if cheap_judges else 0
            total = cheap_pairs * cheap.seconds_per_judgment + sum(sent) * strong.seconds_per_judgment
            seconds = total / len(test)
        agree = sum(d == s for d, s in zip(decisions, test_strong, strict=True))
        return CascadeRow(
            label=label,
            band=extra.get("band"),
            target=extra.get("target"),
            cases=len(test),
            pairs=len(test_keys),
            strong_share=sum(sent) / len(test_keys) if test_keys else 0.0,
            agreement=agree / len(test_keys) if test_keys else 1.0,
            precision=precision,
            recall=recall,
            f1=f1,
            seconds_per_case=seconds,
        )

    n = len(test_keys)
    cheap_alone = [s is not None and s >= cheap.threshold for s in test_cheap]
    rows = [
        scored(f"cheap alone (`{cheap.row}`)", cheap_alone, [False] * n),
        scored(f"strong alone (`{strong.row}`)", test_strong, [True] * n, cheap_judges=False),
    ]
    notes = []
    if reference is not None:
        ref_yes = [reference.decisions(c).get(r, False) if c in reference.scores else False for c, r in test_keys]
        label = f"strong alone, `{reference.row}` (reference; not what the cascade uses)"
        rows.append(scored(label, ref_yes, [True] * n, cheap_judges=False))
        missing = [c for c in test if c not in reference.scores]
        if missing:
            notes.append(f"the reference row lacks {len(missing)} test cases (counted as no match)")
    for target in targets:
        if not 0.0 <= target <= 1.0:
            raise ValueError(f"agreement target {target} is outside [0, 1]")
        band = choose_band(dev_cheap, dev_strong, threshold=cheap.threshold, target_agreement=target)
        decisions, sent = cascade_decisions(
            test_cheap, test_strong, threshold=cheap.threshold, low=band.low, high=band.high
        )
        rows.append(scored(f"cascade, dev agreement >= {target:.0%}", decisions, sent, band=band, target=target))
    notes.append(
        "s / case = cheap s/judgment x all pairs of the case + strong s/judgment x the pairs sent to it "
        "(each judge's median seconds per judgment over its run's records that made calls); the strong judge's "
        "one-off reference judgments per rule are left out"
    )
    return CascadeReport(
        set_name=quality_set.name,
        cheap=cheap,
        strong=strong,
        rows=rows,
        dev_cases=len(dev),
        dev_pairs=len(dev_keys),
        notes=notes,
    )


def _targets(text: str) -> list[float]:
    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--targets: expected comma-separated numbers, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Print the cascade table for two ``bench quality`` runs (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m langchain_tag_bench.cascade",
        description="Replay a cheap -> strong judge cascade from two bench quality runs of the same set and rules.",
    )
    parser.add_argument("--cheap", required=True, help="the cheap judge's run directory")
    parser.add_argument("--strong", required=True, help="the strong judge's run directory")
    parser.add_argument("--set", dest="quality_set", default="demo", help="the quality set both runs judged")
    parser.add_argument("--cheap-row", choices=ROWS, default="tag-fitted", help="the cheap judge's scores")
    parser.add_argument("--strong-row", choices=ROWS, default="tag-fitted", help="the strong judge's scores")
    parser.add_argument(
        "--reference-row", choices=(*ROWS, "none"), default="tag", help="another strong row to show alone"
    )
    parser.add_argument(
        "--targets", type=_targets, default=list(DEFAULT_TARGETS), help="dev agreement targets, e.g. 0.9,0.95"
    )
    parser.add_argument(
        "--cheap-seconds", type=float, help="the cheap judge's seconds per judgment (default: from its run's records)"
    )
    parser.add_argument(
        "--strong-seconds", type=float, help="the strong judge's seconds per judgment (default: from its run's records)"
    )
    parser.add_argument("--cache-dir", help="where the set's derived cases are cached")
    parser.add_argument("--pep8", help="pep8 set: the PEP 8 source")
    parser.add_argument("--data", help="nba or wnc set: the data directory")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args(argv)
    try:
        cache_dir = args.cache_dir
        if cache_dir is None:
            from langchain_tag.local.weights import default_cache_dir

            cache_dir = default_cache_dir()
        quality_set = load_quality_set(args.quality_set, cache_dir=cache_dir, pep8_path=args.pep8, data_path=args.data)
        cheap = load_judge_run(args.cheap, args.cheap_row)
        strong = load_judge_run(args.strong, args.strong_row)
        for run, given in ((cheap, args.cheap_seconds), (strong, args.strong_seconds)):
            if given is not None:
                if given <= 0:
                    raise ValueError(f"seconds per judgment must be positive, got {given}")
                run.seconds_per_judgment, run.judgments_timed = given, 0
        reference = None
        if args.reference_row != "none" and args.reference_row != args.strong_row:
            try:
                reference = load_judge_run(args.strong, args.reference_row)
            except ValueError as exc:
                print(f"reference row left out: {exc}", file=sys.stderr)
        report = cascade_report(quality_set, cheap, strong, targets=args.targets, reference=reference)
    except ValueError as exc:
        print(f"cascade: {exc}", file=sys.stderr)
        return 2
    table = report.markdown()
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
