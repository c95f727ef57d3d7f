"""Matcher speed and cost: TAG's judge, LangChain's LLMChainFilter, a naive loop, and the token limit.

Runs on the embedded local model (a llama.cpp server whose counters give the
prompt tokens actually evaluated). Prints markdown tables:

1. Per rule set (RuleArena-NBA catalog, 55 rules; pycodestyle checks, 73
   rules) and method: wall seconds per input, prompt tokens evaluated,
   tokens generated, LLM calls, F1 against gold, and the ratios
   (b)/(a), (c)/(a), (a)/(d).
   (a') is (a) with four worked examples in the system text: what few-shot
   examples cost (prefix tokens) and buy (F1).
2. The remote view of (a): prompt and completion tokens per input as a
   provider bills them, and the share that is a cacheable shared prefix.
3. The candidate pre-filter: how much of (a)'s YES set survives judging only
   the top-N similar rules (no extra calls: verdicts are per pair).
4. Scaling of (a) and (d) with the number of rules (synthetic) and with the
   input length.

Usage::

    python benchmarks/matcher_speed.py --limit 3
    python benchmarks/matcher_speed.py --limit 2 --naive-limit 1 --scaling 50,200 --lengths 250,1000

Quote the machine's core count with the numbers: timings depend on it, and
nothing else should run beside the benchmark.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from langchain_core.documents import Document

from langchain_tag.bench.data import default_data_path
from langchain_tag.bench.matcher_speed import (
    Calibration,
    LlamaEndpoint,
    MethodCost,
    calibrate,
    measure,
    minimal_tokens,
    prefilter_recall,
    rule_documents,
    synthetic_rules,
)
from langchain_tag.matcher import PairwiseJudge
from langchain_tag.local.models import get_chat_model, get_embeddings
from langchain_tag.parsing import ParseError, parse_verdict
from langchain_tag.prompts import JUDGE_PROMPTS, rule_first_messages
from langchain_tag.rules import Rule

Item = tuple[str, str, tuple[str, ...] | None]  # key, text, gold rule ids


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def nba_items(data: Path, limit: int) -> tuple[list[Rule], list[Item]]:
    from langchain_tag.bench.tasks import nba_task

    task = nba_task(data, limit=limit)
    return list(task.load_rules(None)), [(i.key, i.text, i.gold_rules) for i in task.items]


def pep8_items(humaneval: Path, limit: int) -> tuple[list[Rule], list[Item]]:
    from langchain_tag.bench.tasks import pep8_task

    task = pep8_task(humaneval, limit=limit, variants=1)
    variants = [i for i in task.items if i.group == "variant"][:limit]
    return list(task.load_rules(None)), [(i.key, i.text, i.gold_rules) for i in variants]


def run_methods(
    rules: Sequence[Rule],
    items: Sequence[Item],
    *,
    judge,
    chat,
    endpoint: LlamaEndpoint,
    calibration: Calibration,
    naive_limit: int,
    skip_filter: bool,
    with_fewshot: bool = True,
) -> tuple[dict[str, MethodCost], list[dict[str, float]]]:
    from langchain_classic.retrievers.document_compressors import LLMChainFilter

    prompt = JUDGE_PROMPTS["applicability"]
    pairwise = PairwiseJudge(judge, prompt, max_concurrency=8)  # as ApplicabilityRetriever ships it
    chain_filter = LLMChainFilter.from_llm(chat)
    documents = rule_documents(rules)
    fewshot = PairwiseJudge(judge, JUDGE_PROMPTS["applicability-fewshot"], max_concurrency=8)
    costs = {name: MethodCost(name) for name in ("tag", "tag_fewshot", "llm_chain_filter", "naive", "limit")}
    remote: list[dict[str, float]] = []
    for number, (key, text, gold) in enumerate(items):
        print(f"  {key}: tag", file=sys.stderr, flush=True)

        def tag(text: str = text) -> tuple[list[str], int]:
            result = pairwise.judge(text, rules)
            return [j.rule_id for j in result.matched], result.calls

        measure(costs["tag"], endpoint, tag, gold)
        if with_fewshot:
            print(f"  {key}: tag, few-shot", file=sys.stderr, flush=True)

            def tag_fewshot(text: str = text) -> tuple[list[str], int]:
                result = fewshot.judge(text, rules)
                return [j.rule_id for j in result.matched], result.calls

            measure(costs["tag_fewshot"], endpoint, tag_fewshot, gold)
        if not skip_filter:
            print(f"  {key}: LLMChainFilter", file=sys.stderr, flush=True)

            def filtered(text: str = text) -> tuple[list[str], int]:
                kept = chain_filter.compress_documents(documents, text)
                return [str(d.metadata["rule_id"]) for d in kept], len(documents)

            measure(costs["llm_chain_filter"], endpoint, filtered, gold)
        if number < naive_limit:
            print(f"  {key}: naive loop", file=sys.stderr, flush=True)

            def naive(text: str = text) -> tuple[list[str], int]:
                matched = []
                for rule in rules:
                    reply = judge.invoke(rule_first_messages(prompt, text, rule))
                    try:
                        if parse_verdict(reply).applies:
                            matched.append(rule.rule_id)
                    except ParseError:
                        pass
                return matched, len(rules)

            measure(costs["naive"], endpoint, naive, gold)
        # (d) and the remote view: the exact prompts (a) sends, tokenized by the server.
        token_lists = [endpoint.tokens(pairwise.messages(text, rule)) for rule in rules]
        needed, shared = minimal_tokens(token_lists)
        limit = costs["limit"]
        limit.inputs += 1
        limit.evaluated.append(needed)
        limit.generated.append(len(rules))
        limit.calls.append(len(rules))
        limit.seconds.append(calibration.limit_seconds(needed, len(rules)))
        billed = sum(len(t) for t in token_lists)
        remote.append(
            {
                "prompt": billed,
                "completion": len(rules),
                "shared_prefix": shared,
                "cacheable": shared * (len(rules) - 1) / billed,
            }
        )
    return costs, remote


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def print_costs(title: str, n: int, costs: dict[str, MethodCost]) -> None:
    rows = {name: cost.row() for name, cost in costs.items() if cost.inputs}
    print(f"\n### {title} (n = {n} inputs)\n")
    print(
        "| method | inputs | s / input | prompt tokens evaluated | tokens generated | LLM calls | F1 vs gold | errors |"
    )
    print("|---|---|---|---|---|---|---|---|")
    labels = {
        "tag": "(a) ApplicabilityRetriever",
        "tag_fewshot": "(a') same, 4 few-shot examples in the system text",
        "llm_chain_filter": "(b) LLMChainFilter",
        "naive": "(c) naive loop, rule first",
        "limit": "(d) token-throughput limit",
    }
    for name, row in rows.items():
        cost = costs[name]
        print(
            f"| {labels[name]} | {cost.inputs} | {_fmt(row['seconds'])} | {_fmt(row['evaluated'], 0)} | "
            f"{_fmt(row['generated'], 0)} | {_fmt(row['calls'], 0)} | {_fmt(row['f1'], 3)} | {cost.errors} |"
        )
    a = rows.get("tag")
    if a and a["seconds"]:
        parts = []
        for name, label in (("tag_fewshot", "(a')/(a)"), ("llm_chain_filter", "(b)/(a)"), ("naive", "(c)/(a)")):
            if name in rows and rows[name]["seconds"]:
                # The naive loop may cover fewer inputs: compare per-input times on the inputs it ran.
                paired = costs["tag"].seconds[: costs[name].inputs]
                parts.append(f"{label} = {sum(costs[name].seconds) / sum(paired):.2f}")
        if "limit" in rows and rows["limit"]["seconds"]:
            parts.append(f"(a)/(d) = {a['seconds'] / rows['limit']['seconds']:.2f}")
        print("\n" + "; ".join(parts))


def print_remote(remote: list[dict[str, float]]) -> None:
    if not remote:
        return
    n = len(remote)
    prompt = sum(r["prompt"] for r in remote) / n
    completion = sum(r["completion"] for r in remote) / n
    shared = sum(r["shared_prefix"] for r in remote) / n
    cacheable = sum(r["cacheable"] for r in remote) / n
    print(
        f"\nRemote view of (a), per input: {prompt:,.0f} prompt tokens billed, {completion:,.0f} completion tokens "
        f"(1 per judgment), a {shared:,.0f}-token prefix shared by every judgment: {cacheable:.0%} of prompt tokens "
        "are a cacheable repeated prefix."
    )


def print_prefilter(rules: Sequence[Rule], items: Sequence[Item], tag: MethodCost, ns: Sequence[int]) -> None:
    from langchain_tag.similarity import in_memory_chroma

    store = in_memory_chroma(
        [Document(page_content=r.condition, metadata={"rule_id": r.rule_id}) for r in rules], get_embeddings()
    )
    print("\n| candidates N | YES verdicts kept (mean over inputs with any) | inputs |")
    print("|---|---|---|")
    rankings = [
        [str(d.metadata["rule_id"]) for d in store.similarity_search(text, k=len(rules))] for _, text, _ in items
    ]
    for n in ns:
        kept = [prefilter_recall(m, r, n)[0] for m, r in zip(tag.matched, rankings, strict=False)]
        defined = [k for k in kept if k is not None]
        mean = sum(defined) / len(defined) if defined else None
        print(f"| {n} | {_fmt(mean, 2)} | {len(defined)} of {len(kept)} |")


def scaling(
    judge, endpoint: LlamaEndpoint, calibration: Calibration, text: str, ms: Sequence[int], lengths: Sequence[int]
) -> None:
    pairwise = PairwiseJudge(judge, "applicability", max_concurrency=8)
    print(
        "\n| rules M | input tokens | (a) s | (a) s / judgment | (d) s | (a)/(d) | tokens evaluated (a) | needed (d) |"
    )
    print("|---|---|---|---|---|---|---|---|")

    def one(rules: list[Rule], query: str) -> None:
        cost = MethodCost("tag")
        measure(cost, endpoint, lambda: ([j.rule_id for j in pairwise.judge(query, rules).matched], len(rules)), None)
        needed, _ = minimal_tokens([endpoint.tokens(pairwise.messages(query, r)) for r in rules])
        limit = calibration.limit_seconds(needed, len(rules))
        seconds = cost.seconds[0]
        input_tokens = len(endpoint.text_tokens(query))
        print(
            f"| {len(rules)} | {input_tokens} | {seconds:.1f} | {seconds / len(rules):.2f} | {limit:.1f} | "
            f"{seconds / limit:.2f} | {cost.evaluated[0]:,.0f} | {needed:,} |",
            flush=True,
        )

    for m in ms:
        one(synthetic_rules(m, seed=m), text)
    words = text.split()
    for length in lengths:
        # Input length scaling: the scenario's words repeated or cut to about `length` tokens.
        stretched = (words * (1 + length // max(len(words), 1)))[: int(length * 0.75)]
        one(synthetic_rules(20, seed=7), " ".join(stretched))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=3, help="inputs per rule set")
    parser.add_argument("--naive-limit", type=int, default=1, help="inputs the (slow) naive loop runs on")
    parser.add_argument("--rule-sets", default="nba,pep8", help="nba, pep8 or both")
    parser.add_argument("--skip-filter", action="store_true", help="leave out LLMChainFilter")
    parser.add_argument("--skip-fewshot", action="store_true", help="leave out the few-shot variant of (a)")
    parser.add_argument("--scaling", type=_ints, default=[50, 200], help="rule counts M for the scaling table")
    parser.add_argument(
        "--lengths", type=_ints, default=[250, 1000], help="input lengths (tokens) for the scaling table"
    )
    parser.add_argument("--candidates", type=_ints, default=[5, 10, 20, 30], help="pre-filter sizes N")
    parser.add_argument("--nba-data", help="RuleArena NBA directory (default: the shared data)")
    parser.add_argument("--humaneval", help="HumanEval.jsonl.gz (default: the shared data)")
    args = parser.parse_args(argv)

    judge = get_chat_model(role="judge")
    chat = get_chat_model(role="executor")
    endpoint = LlamaEndpoint.of(judge)
    start = time.perf_counter()
    calibration = calibrate(chat, endpoint)
    print(f"# Matcher speed ({os.cpu_count()} cores, model {getattr(judge, 'model_name', '?')})")
    print(
        f"\nCalibration: prompt throughput {calibration.prompt_tps:.1f} tokens/s (fresh prompts), "
        f"decode {calibration.decode_seconds * 1000:.0f} ms/token."
    )
    first_text = None
    for name in [s.strip() for s in args.rule_sets.split(",") if s.strip()]:
        if name == "nba":
            rules, items = nba_items(
                Path(args.nba_data) if args.nba_data else default_data_path("rulearena-nba"), args.limit
            )
            title = f"RuleArena-NBA catalog, {len(rules)} rules"
        elif name == "pep8":
            data = Path(args.humaneval) if args.humaneval else default_data_path("humaneval/HumanEval.jsonl.gz")
            rules, items = pep8_items(data, args.limit)
            title = f"pycodestyle checks, {len(rules)} rules, style-broken HumanEval code"
        else:
            parser.error(f"unknown rule set {name!r}")
        print(f"{title}: {len(items)} inputs", file=sys.stderr, flush=True)
        costs, remote = run_methods(
            rules,
            items,
            judge=judge,
            chat=chat,
            endpoint=endpoint,
            calibration=calibration,
            naive_limit=args.naive_limit,
            skip_filter=args.skip_filter,
            with_fewshot=not args.skip_fewshot,
        )
        print_costs(title, len(items), costs)
        print_remote(remote)
        print_prefilter(rules, items, costs["tag"], args.candidates)
        first_text = first_text or items[0][1]
    if first_text and (args.scaling or args.lengths):
        print("\n### Scaling of (a) against (d), synthetic rules\n", flush=True)
        scaling(judge, endpoint, calibration, first_text, args.scaling, args.lengths)
    print(f"\n(total {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
