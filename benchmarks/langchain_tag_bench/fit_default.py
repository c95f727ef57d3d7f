"""Fit a judge model family's shipped calibration on the pooled dev splits of several quality runs.

``langchain-tag bench fit-default --runs demo=runs/q-demo,ruff=runs/q-ruff,pep8=runs/q-pep8`` reads the
recorded features of one judged row (``tag-domain``: each rule's log-odds centred and scaled on the run's
reference sample; ``tag-fitted``: centred on the typical inputs; ``--centre-inputs`` then also centres each
case's features on their median over the rules) from each run's ``records.jsonl``, fits one
Platt map on every dev pair of every set, and picks the threshold with the best *mean* dev F1 over the sets, so
a set with many pairs does not decide it alone. Test pairs are never read for the fit.

It also prints, per set, the test F1 of the pooled fit and of a fit that leaves that set out (its Platt map and
threshold fitted on the other sets' dev splits only): how the default is expected to do on a policy it was not
fitted on. The fitted numbers go into the package's ``langchain_tag/data/calibrations.json`` by hand, with
the command and what was fitted on in the entry's ``provenance``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_tag.judging._logodds import sigmoid
from langchain_tag.judging.calibration.model import Calibration, fit_calibration
from langchain_tag.rules import load_rules
from langchain_tag_bench.quality import (
    RECORDS_FILE,
    best_threshold,
    load_quality_set,
    rule_statements,
    score_pairs,
    statement_spans,
)

__all__ = ["FitReport", "RunData", "fit_pooled", "fit_report", "load_run", "parse_runs"]


@dataclass
class RunData:
    """One quality run's judged pairs: per case, the (rule, feature) pairs of rules that map to a statement."""

    name: str
    split_of: dict[str, str]
    gold: dict[str, set[str]]
    rule_map: dict[str, set[str]]
    features: dict[str, list[tuple[str, float]]]

    def cases(self, split: str) -> list[str]:
        """The run's recorded cases of a split."""
        return [c for c in self.features if self.split_of[c] == split]

    def pairs(self, split: str) -> tuple[list[float], list[bool]]:
        """Features and labels of the split's pairs (label: the case violates a statement the rule maps to)."""
        xs: list[float] = []
        ys: list[bool] = []
        for case in self.cases(split):
            for rule_id, x in self.features[case]:
                if self.rule_map.get(rule_id):
                    xs.append(x)
                    ys.append(bool(self.rule_map[rule_id] & self.gold[case]))
        return xs, ys

    def scores(self, platt: Calibration, threshold: float, split: str) -> tuple[float, float, float]:
        """Micro P/R/F1 of the split when a rule matches at ``sigmoid(slope * x + intercept) >= threshold``."""
        predicted = {}
        for case in self.cases(split):
            units = [r for r, x in self.features[case] if sigmoid(platt.slope * x + platt.intercept) >= threshold]
            predicted[case] = set().union(*(self.rule_map.get(u, set()) for u in units))
        return score_pairs(predicted, {c: self.gold[c] for c in self.cases(split)})


def parse_runs(text: str) -> dict[str, Path]:
    """Parse ``SET=DIR,SET=DIR`` (``SET``: a quality set name or directory).

    Raises:
        ValueError: On an item without ``=`` or a directory without records.
    """
    runs: dict[str, Path] = {}
    for item in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, directory = item.partition("=")
        if not sep or not name or not directory:
            raise ValueError(f"--runs item {item!r}: expected SET=RUN_DIR")
        path = Path(directory).expanduser()
        if not (path / RECORDS_FILE).is_file():
            raise ValueError(f"--runs item {item!r}: no {RECORDS_FILE} in {path}")
        runs[name] = path
    if len(runs) < 1:
        raise ValueError("--runs needs at least one SET=RUN_DIR")
    return runs


def load_run(
    name: str,
    directory: Path,
    method: str,
    *,
    cache_dir: str | Path | None = None,
    pep8_path: str | Path | None = None,
    data_path: str | Path | None = None,
    centre_inputs: bool = False,
) -> RunData:
    """Read one run's features of ``method`` (records without features are skipped).

    Args:
        name: The quality set's name.
        directory: The run directory (``records.jsonl`` and ``rules.jsonl``).
        method: The recorded row whose features to read.
        cache_dir: Where the quality set's derived cases are cached.
        pep8_path: The PEP 8 text, for the ``pep8`` set.
        data_path: The data directory of the ``nba`` or ``wnc`` set (RuleArena NBA, the WNC sample).
        centre_inputs: Centre each case's features on their median over all of
            its judged rules, as a calibration with ``centre_per_input`` does.

    Raises:
        ValueError: When the run has no ``method`` record with features.
    """
    quality_set = load_quality_set(name, cache_dir=cache_dir, pep8_path=pep8_path, data_path=data_path)
    rules = load_rules(directory / "rules.jsonl")
    rule_map = rule_statements(rules, statement_spans(quality_set), quality_set.policy_text)
    cases = {str(c["id"]): c for c in quality_set.cases}
    features: dict[str, list[tuple[str, float]]] = {}
    centring = Calibration(centre_per_input=centre_inputs)
    with (directory / RECORDS_FILE).open(encoding="utf-8") as fh:
        for line in fh:
            record: dict[str, Any] = json.loads(line)
            if record.get("method") != method or record.get("key") not in cases:
                continue
            found = [(j["rule_id"], float(j["feature"])) for j in record["judgments"] if j.get("feature") is not None]
            if found:
                centre = centring.input_centre([x for _, x in found])
                features[record["key"]] = [(r, x - centre) for r, x in found]  # a later record replaces an earlier one
    if not features:
        raise ValueError(f"{directory}: no {method!r} records with features (run bench quality --methods {method})")
    return RunData(
        name=name,
        split_of={c: str(cases[c]["split"]) for c in features},
        gold={c: set(cases[c].get("violates") or ()) for c in features},
        rule_map=rule_map,
        features=features,
    )


def fit_pooled(runs: Sequence[RunData]) -> tuple[Calibration, float, float]:
    """Platt over the pooled dev pairs, and the threshold with the best mean dev F1 over the runs.

    The threshold goes midway into the gap below the best cut, as ``tag-fitted`` does.

    Returns:
        The Platt map, the threshold and the mean dev F1 there.

    Raises:
        CalibrationError: When the dev pairs hold only one label.
    """
    xs: list[float] = []
    ys: list[bool] = []
    for run in runs:
        x, y = run.pairs("dev")
        xs += x
        ys += y
    platt = fit_calibration(xs, ys, method="platt")
    best, best_f1 = best_threshold(
        (sigmoid(platt.slope * x + platt.intercept) for x in xs),
        lambda cut: statistics.mean(run.scores(platt, cut, "dev")[2] for run in runs),
    )
    return platt, best, best_f1


@dataclass
class FitReport:
    """The pooled fit and how it and the leave-one-set-out fits score each set."""

    method: str
    platt: Calibration
    threshold: float
    dev_f1: float
    pairs: int
    rows: list[dict[str, Any]]

    def markdown(self) -> str:
        """The report as markdown."""
        lines = [
            f"Pooled fit of `{self.method}` on {self.pairs} dev pairs: Platt slope {self.platt.slope:.2f}, "
            f"intercept {self.platt.intercept:.2f}, threshold {self.threshold:.3f} (mean dev F1 {self.dev_f1:.2f}).",
            "",
            "| set | dev cases | test cases | pooled fit: dev F1 | test P | test R | test F1 | "
            "left out of the fit: threshold | test F1 |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            held = "-" if r["held_f1"] is None else f"{r['held_f1']:.2f}"
            held_t = "-" if r["held_threshold"] is None else f"{r['held_threshold']:.3f}"
            lines.append(
                f"| {r['set']} | {r['dev']} | {r['test']} | {r['dev_f1']:.2f} | {r['test_p']:.2f} | "
                f"{r['test_r']:.2f} | {r['test_f1']:.2f} | {held_t} | {held} |"
            )
        return "\n".join(lines) + "\n"


def fit_report(runs: Mapping[str, RunData], method: str) -> FitReport:
    """Fit on every run's dev split; score every test split; refit without each run to score it held out."""
    data = list(runs.values())
    platt, threshold, dev_f1 = fit_pooled(data)
    rows = []
    for run in data:
        p, r, f = run.scores(platt, threshold, "test")
        others = [o for o in data if o is not run]
        held_f1 = held_threshold = None
        if others:
            held_platt, held_threshold, _ = fit_pooled(others)
            held_f1 = run.scores(held_platt, held_threshold, "test")[2]
        rows.append(
            {
                "set": run.name,
                "dev": len(run.cases("dev")),
                "test": len(run.cases("test")),
                "dev_f1": run.scores(platt, threshold, "dev")[2],
                "test_p": p,
                "test_r": r,
                "test_f1": f,
                "held_threshold": held_threshold,
                "held_f1": held_f1,
            }
        )
    return FitReport(method, platt, threshold, dev_f1, sum(len(run.pairs("dev")[0]) for run in data), rows)
