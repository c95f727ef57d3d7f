"""End-to-end quality on the demo policy: extracted rules, judged on 52 labelled snippets, scored per statement.

policy -> rules (the demo's extraction settings) -> every (snippet, rule) judged once with raw P(YES)
and the content-free references -> precision / recall / F1 over (snippet, statement) pairs, against
the hand-labelled violations in ``benchmarks/data/demo``. Calibrations are chosen on the development
split and reported on the test split; similarity baselines (MiniLM + Chroma over 500/100-character
chunks and over rule documents) are scored the same way. A rule or chunk counts for the statements
its text covers by at least half.

Judgments go to a SQLite verdict cache (``--cache``), so a rerun makes no call it made before.

    python benchmarks/demo_quality.py [--cache verdicts.sqlite] [--fit]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from langchain_core.documents import Document

from langchain_tag.calibration import (
    DEFAULT_CALIBRATIONS,
    Calibration,
    expected_calibration_error,
    fit_calibration,
    logit,
)
from langchain_tag.demo import DEMO_INPUTS, demo_policy, demo_transformer
from langchain_tag.local import get_chat_model, get_embeddings
from langchain_tag.local.weights import default_cache_dir
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.similarity import chunk_documents, in_memory_chroma
from langchain_tag.verdict_cache import SQLiteVerdictCache

DATA = Path(__file__).parent / "data" / "demo"
NULLS = ("N/A", "")


def _overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


def main() -> None:
    """Judge, score and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=str(default_cache_dir() / "demo-quality-verdicts.sqlite"))
    parser.add_argument("--fit", action="store_true", help="also print the Platt fit on the development split")
    args = parser.parse_args()

    policy = demo_policy().page_content
    statements = json.loads((DATA / "demo_statements.json").read_text())
    cases = [json.loads(line) for line in (DATA / "demo_cases.jsonl").read_text().splitlines() if line.strip()]
    spans = {s["id"]: (policy.find(s["text"]), policy.find(s["text"]) + len(s["text"])) for s in statements}

    def statements_of(a0: int, a1: int) -> set[str]:
        return {sid for sid, (b0, b1) in spans.items() if _overlap(a0, a1, b0, b1) >= 0.5 * min(b1 - b0, a1 - a0)}

    t0 = time.perf_counter()
    result = demo_transformer(get_chat_model(role="extractor"), store=default_cache_dir() / "extraction-store.sqlite")
    rules: list[Rule] = result.extract([demo_policy()]).rules
    rule_statements = {r.rule_id: statements_of(r.source_start or 0, r.source_end or 0) for r in rules}
    probe = Calibration(method="identity", reference_inputs=NULLS)
    retriever = ApplicabilityRetriever(
        llm=get_chat_model(role="judge"),
        rules=rules,
        calibration=probe,
        max_concurrency=1,
        cache=SQLiteVerdictCache(args.cache),
    )
    judged: dict[str, dict[str, tuple[float, float]]] = {}
    inputs = [(c["id"], c["code"]) for c in cases] + [(f"D{i}", code) for i, code in enumerate(DEMO_INPUTS, 1)]
    for case_id, code in inputs:
        match = retriever.match(code)
        judged[case_id] = {
            r.rule_id: (j.probability, retriever.judge.reference_log_odds(r)[0])
            for r, j in zip(rules, match.judgments, strict=True)
            if j.probability is not None
        }
    seconds = time.perf_counter() - t0
    gold = {c["id"]: set(c["violates"]) for c in cases}
    split_of = {c["id"]: c["split"] for c in cases}

    def prf(predict: Callable[[str], set[str]], split: str) -> tuple[float, float, float, float]:
        tp = fp = fn = units = 0  # units: statements predicted, summed over cases
        ids = [c for c in gold if split_of[c] == split]
        for cid in ids:
            found = predict(cid)
            units += len(found)
            tp, fp, fn = tp + len(found & gold[cid]), fp + len(found - gold[cid]), fn + len(gold[cid] - found)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return precision, recall, f1, units / max(len(ids), 1)

    def feature(p: float, ref: float | None) -> float:
        return logit(p) - (ref or 0.0)

    def tag(score: Callable[[float, float | None], float], threshold: float) -> Callable[[str], set[str]]:
        def predict(cid: str) -> set[str]:
            out: set[str] = set()
            for rid, (p, ref) in judged[cid].items():
                if score(p, ref) >= threshold:
                    out |= rule_statements[rid]
            return out

        return predict

    def pairs(split: str) -> tuple[list[float], list[bool], list[tuple[float, float | None]]]:
        xs, ys, raw = [], [], []
        for cid in gold:
            if split_of[cid] != split:
                continue
            for rid, (p, ref) in judged[cid].items():
                if rule_statements[rid]:
                    xs.append(feature(p, ref))
                    ys.append(bool(rule_statements[rid] & gold[cid]))
                    raw.append((p, ref))
        return xs, ys, raw

    rows: list[tuple[str, str, tuple[float, float, float, float], float | None]] = []

    def add(name: str, score: Callable[[float, float | None], float], threshold: float) -> None:
        for split in ("dev", "test"):
            _, ys, raw = pairs(split)
            ece = expected_calibration_error([score(p, ref) for p, ref in raw], ys)
            rows.append((name, split, prf(tag(score, threshold), split), ece))

    shipped = DEFAULT_CALIBRATIONS["qwen2.5-coder-1.5b"]
    add("TAG, raw P(YES) at 0.5", lambda p, ref: p, 0.5)
    add(
        f"TAG, shipped default (content-free reference, Platt, threshold {shipped.threshold})",
        lambda p, ref: shipped.score(p, ref),
        shipped.threshold or 0.5,
    )
    if args.fit:
        xs, ys, _ = pairs("dev")
        fitted = fit_calibration(xs, ys, method="platt", reference_inputs=NULLS)
        print(f"Platt on dev: slope {fitted.slope:.3f}, intercept {fitted.intercept:.3f}")
    dev_ids = [c for c in gold if split_of[c] == "dev"]
    stats = {}
    for rule in rules:
        xs = [logit(judged[c][rule.rule_id][0]) for c in dev_ids if rule.rule_id in judged[c]]
        stats[rule.rule_id] = (statistics.mean(xs), statistics.stdev(xs))
    # Per-rule standardisation over the unlabelled development inputs (the option for users with typical inputs).
    standard = {
        cid: {rid: (logit(p) - stats[rid][0]) / max(stats[rid][1], 0.25) for rid, (p, _) in judged[cid].items()}
        for cid in judged
    }

    def standardised(cid: str) -> set[str]:
        return set().union(*(rule_statements[rid] for rid, z in standard[cid].items() if z >= 1.0))

    for split in ("dev", "test"):
        rows.append(
            ("TAG, standardised over the unlabelled dev inputs, z >= 1.0", split, prf(standardised, split), None)
        )
        covered = set().union(*rule_statements.values())
        rows.append(("all rules", split, prf(lambda cid, c=covered: set(c), split), None))

    embeddings = get_embeddings()
    chunks = chunk_documents([Document(page_content=policy, id="policy")])
    chunk_statements = {
        c.metadata["chunk_id"]: statements_of(
            c.metadata["start_index"], c.metadata["start_index"] + len(c.page_content)
        )
        for c in chunks
    }
    chunk_store = in_memory_chroma(chunks, embeddings)
    rule_store = in_memory_chroma([r.to_document() for r in rules], embeddings)
    code = {c["id"]: c["code"] for c in cases}

    def nearest(store: object, key: str, table: dict[str, set[str]], k: int) -> Callable[[str], set[str]]:
        def predict(cid: str) -> set[str]:
            found = store.similarity_search(code[cid], k=k)  # type: ignore[attr-defined]
            return set().union(*(table[d.metadata[key]] for d in found))

        return predict

    for k in (1, 2, 3, 5):
        for split in ("dev", "test"):
            chunked = nearest(chunk_store, "chunk_id", chunk_statements, k)
            rows.append((f"chunks + similarity top-{k}", split, prf(chunked, split), None))
            ruled = nearest(rule_store, "rule_id", rule_statements, k)
            rows.append((f"rules + similarity top-{k}", split, prf(ruled, split), None))

    non_rules = [rid for rid, found in rule_statements.items() if not found]
    print(
        f"{len(rules)} rules, {len(non_rules)} non-rules ({', '.join(non_rules) or '-'}); statements covered "
        f"{len(set().union(*rule_statements.values()))}/{len(spans)}; {len(cases)} cases "
        f"({sum(1 for c in cases if c['split'] == 'dev')} dev); {seconds:.0f} s of extraction and judging"
    )
    print("\n| method | split | P | R | F1 | statements per snippet | ECE |\n|---|---|---|---|---|---|---|")
    for name, split, (precision, recall, f1, per_case), ece in rows:
        shown = "" if ece is None else f"{ece:.3f}"
        print(f"| {name} | {split} | {precision:.2f} | {recall:.2f} | {f1:.2f} | {per_case:.2f} | {shown} |")
    polarity = []
    for rule in rules:
        if not rule_statements[rule.rule_id]:
            continue
        hit = [judged[c][rule.rule_id][0] for c in dev_ids if rule_statements[rule.rule_id] & gold[c]]
        miss = [judged[c][rule.rule_id][0] for c in dev_ids if not rule_statements[rule.rule_id] & gold[c]]
        if hit and miss and statistics.mean(hit) > statistics.mean(miss):
            polarity.append(rule_statements[rule.rule_id])
    print(
        "\nstatements covered by a rule of correct polarity (judge-based proxy: the rule's mean P(YES) on dev "
        f"snippets that violate its statement exceeds that on the others): {len(set().union(*polarity))}/{len(spans)}"
    )


if __name__ == "__main__":
    main()
