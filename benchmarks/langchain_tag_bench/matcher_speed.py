"""Matcher speed and cost: TAG's judge, LangChain's LLMChainFilter, a naive loop, and the token limit.

Everything here runs against one llama.cpp server (the embedded default) whose
``/metrics`` counters say how many prompt tokens were actually evaluated
(after prefix-cache reuse) and how many were generated. Four ways of picking
the rules that hold for an input, over the same rules and inputs:

(a) ``tag``: the pairwise judge of
    :class:`~langchain_tag.retrievers.ApplicabilityRetriever` as shipped
    (system, then input, then rule; one-token verdicts with logprobs).
    (a') is (a) with four worked examples in the system text: what few-shot
    examples cost (prefix tokens) and buy (F1).
(b) ``llm_chain_filter``: ``langchain_classic``'s ``LLMChainFilter`` around
    the same rule documents, on the same model as an ordinary chat model.
(c) ``naive``: one call per rule with the rule *before* the input, so no two
    prompts share a prefix (one-token verdicts too).
(d) ``limit``: the time to evaluate only the tokens that must be evaluated,
    each input's prefix once plus each rule's own tokens once, at the
    best prompt throughput known for this machine (``--prompt-tps``, for
    example a native build's; default: the running server's, measured),
    plus one decode step per pair.

:func:`main` prints markdown tables:

1. Per rule set (RuleArena-NBA catalog, 55 rules; pycodestyle checks, 73
   rules) and method: wall seconds per input, prompt tokens evaluated,
   tokens generated, LLM calls, F1 against gold, and the ratios
   (b)/(a), (c)/(a), (a)/(d).
2. The remote view of (a): prompt and completion tokens per input as a
   provider bills them, and the share that is a cacheable shared prefix.
3. The candidate pre-filter: how much of (a)'s YES set survives judging only
   the top-N similar rules (no extra calls: verdicts are per pair).
4. Scaling of (a) and (d) with the number of rules (synthetic) and with the
   input length.
5. Extraction cost (``--extraction``): the demo policy (or ``--policy``)
   extracted afresh, calls and prompt / completion tokens per phase, and per
   1,000 policy words.

The pure helpers (token arithmetic, synthetic rules, prefilter recall) are
unit-tested.

Usage::

    python -m langchain_tag_bench.matcher_speed --limit 3
    python -m langchain_tag_bench.matcher_speed --limit 2 --naive-limit 1 --scaling 50,200 --lengths 250,1000

Quote the machine's core count with the numbers: timings depend on it, and
nothing else should run beside the benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langchain_tag.errors import ParseError
from langchain_tag.judging._read import read_message
from langchain_tag.judging.chat import ChatJudge
from langchain_tag.judging.prompts import JUDGE_PROMPTS
from langchain_tag.local.server import read_metrics
from langchain_tag.rules import Rule
from langchain_tag_bench.data import default_data_path
from langchain_tag_bench.metrics import score_retrieval
from langchain_tag_bench.prompts import rule_first_messages

__all__ = [
    "Calibration",
    "LlamaEndpoint",
    "MethodCost",
    "calibrate",
    "common_prefix_length",
    "main",
    "measure",
    "minimal_tokens",
    "prefilter_recall",
    "synthetic_rules",
]


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def minimal_tokens(prompts: Sequence[Sequence[int]]) -> tuple[int, int]:
    """Tokens that must be evaluated for a sequence of prompts judged in order, and the shared prefix.

    The first prompt is evaluated whole; each later prompt only past its
    common prefix with the one before (what a prefix cache that keeps the
    last prompt saves).

    Returns:
        ``(tokens to evaluate, tokens of the prefix all prompts share)``.
    """
    if not prompts:
        return 0, 0
    total = len(prompts[0])
    shared = len(prompts[0])
    for previous, current in pairwise(prompts):
        common = common_prefix_length(previous, current)
        total += len(current) - common
        shared = min(shared, common_prefix_length(prompts[0], current))
    return total, shared


def prefilter_recall(
    matched_all: Sequence[str], ranking: Sequence[str], candidates: int
) -> tuple[float | None, list[str]]:
    """What a similarity pre-filter of ``candidates`` rules keeps of the full matcher's YES set.

    Judgments are independent per pair, so judging only the top-N similar
    rules gives exactly the full run's verdicts restricted to those N.

    Args:
        matched_all: Rule ids the matcher said YES to when judging every rule.
        ranking: All rule ids, most similar to the input first.
        candidates: N, the rules the pre-filter passes to the judge.

    Returns:
        ``(share of matched_all kept, or None if matched_all is empty; the kept ids)``.
    """
    top = set(ranking[:candidates])
    kept = [rule_id for rule_id in matched_all if rule_id in top]
    return (len(kept) / len(matched_all) if matched_all else None), kept


_SUBJECTS = (
    "a function",
    "a class",
    "a loop",
    "a comment",
    "an import",
    "a string literal",
    "a team",
    "a player contract",
    "a trade",
    "a signing",
    "a sentence",
    "a quotation",
)
_PROPERTIES = (
    "is longer than {n} lines",
    "has more than {n} parameters",
    "mentions the year {y}",
    "uses a value above {n} million",
    "is nested {n} levels deep",
    "refers to season {y}",
    "contains the word '{w}'",
    "repeats the same name {n} times",
)
_WORDS = ("alpha", "basis", "cap", "delta", "exception", "floor", "guard", "harbor", "index", "jitter")


def synthetic_rules(count: int, *, seed: int = 0) -> list[Rule]:
    """``count`` distinct, plausible-looking rules for scaling runs (none is meant to hold).

    Conditions combine a subject, a property and a number or word, so rule
    texts differ in length and wording like real ones.
    """
    rng = random.Random(seed)
    rules: list[Rule] = []
    seen: set[str] = set()
    while len(rules) < count:
        subject, prop = rng.choice(_SUBJECTS), rng.choice(_PROPERTIES)
        condition = f"{subject} {prop.format(n=rng.randint(2, 90), y=rng.randint(1990, 2030), w=rng.choice(_WORDS))}"
        if condition in seen:
            continue
        seen.add(condition)
        number = len(rules) + 1
        rules.append(
            Rule(
                rule_id=f"SYN-{number:04d}",
                rule_name=f"synthetic rule {number}",
                condition=f"The input has {condition}.",
                action=f"Report that the input has {condition}.",
                source_text=f"synthetic {number}",
                category_tags=["synthetic"],
            )
        )
    return rules


class LlamaEndpoint:
    """The llama.cpp server behind a ``ChatOpenAI`` model: counters, tokenizer, chat template.

    Args:
        base_url: The OpenAI-compatible base URL (``.../v1``).
    """

    def __init__(self, base_url: str) -> None:
        self.root = base_url.rstrip("/").removesuffix("/v1")
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @classmethod
    def of(cls, llm: BaseChatModel) -> LlamaEndpoint:
        """The endpoint of a ``ChatOpenAI`` model."""
        base = getattr(llm, "openai_api_base", None)
        if not base:
            raise ValueError("the model has no base URL; matcher_speed measures a llama.cpp server")
        return cls(str(base))

    def post(self, path: str, payload: dict[str, Any], *, timeout: float = 60.0) -> Any:
        """POST JSON to one of the server's native endpoints (``/tokenize``, ``/completion``, ...); the reply's JSON."""
        request = urllib.request.Request(
            self.root + path, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
        )
        with self._opener.open(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))

    def counters(self) -> dict[str, float]:
        """Cumulative prompt/generation token counters and seconds."""
        return read_metrics(self.root + "/metrics")

    def tokens(self, messages: Sequence[BaseMessage | Mapping[str, str]]) -> list[int]:
        """The token ids of a chat prompt (LangChain messages or OpenAI-style dicts), as the server templates it."""
        roles = {"system": "system", "human": "user", "ai": "assistant"}
        chat = [
            dict(m) if isinstance(m, Mapping) else {"role": roles.get(m.type, "user"), "content": str(m.content)}
            for m in messages
        ]
        prompt = self.post("/apply-template", {"messages": chat})["prompt"]
        return list(self.post("/tokenize", {"content": prompt, "add_special": True})["tokens"])

    def text_tokens(self, text: str) -> list[int]:
        """The token ids of plain text (a completion-style prompt)."""
        return list(self.post("/tokenize", {"content": text, "add_special": True})["tokens"])


@dataclass(frozen=True)
class Calibration:
    """The server's measured speeds.

    Attributes:
        prompt_tps: Prompt tokens evaluated per second (uncached prompts).
        decode_seconds: Seconds per generated token.
    """

    prompt_tps: float
    decode_seconds: float

    def limit_seconds(self, evaluated_tokens: int, pairs: int) -> float:
        """(d): evaluate only the tokens that must be, then one decode step per pair."""
        return evaluated_tokens / self.prompt_tps + pairs * self.decode_seconds


def calibrate(llm: BaseChatModel, endpoint: LlamaEndpoint, *, prompt_words: int = 900, repeats: int = 3) -> Calibration:
    """Measure prompt throughput (fresh prompts, no cache reuse) and the time per decoded token."""
    from langchain_core.messages import HumanMessage

    words = [f"w{i}" for i in range(prompt_words)]
    before = endpoint.counters()
    for repeat in range(repeats):
        # A different first word each time: nothing can be reused from the cache.
        text = f"{time.time_ns()}-{repeat} " + " ".join(words)
        llm.invoke([HumanMessage(text)], max_tokens=1)
    mid = endpoint.counters()
    llm.invoke([HumanMessage(f"{time.time_ns()} Count from 1 to 200 separated by spaces.")], max_tokens=64)
    after = endpoint.counters()
    prompt_tokens = mid["prompt_tokens_total"] - before["prompt_tokens_total"]
    prompt_seconds = mid["prompt_seconds_total"] - before["prompt_seconds_total"]
    predicted = after["tokens_predicted_total"] - mid["tokens_predicted_total"]
    predicted_seconds = after["tokens_predicted_seconds_total"] - mid["tokens_predicted_seconds_total"]
    return Calibration(prompt_tps=prompt_tokens / prompt_seconds, decode_seconds=predicted_seconds / max(predicted, 1))


@dataclass
class MethodCost:
    """One method's cost and quality over a set of inputs.

    Attributes:
        name: ``tag``, ``llm_chain_filter``, ``naive`` or ``limit``.
        inputs: Inputs measured.
        seconds: Wall seconds per input.
        evaluated: Prompt tokens the server evaluated, per input.
        generated: Tokens generated, per input.
        calls: LLM calls per input.
        f1: Mean F1 against gold (None where no gold).
        errors: Inputs whose run raised.
        matched: Matched rule ids per input.
    """

    name: str
    inputs: int = 0
    seconds: list[float] = field(default_factory=list)
    evaluated: list[float] = field(default_factory=list)
    generated: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    f1s: list[float] = field(default_factory=list)
    errors: int = 0
    matched: list[list[str]] = field(default_factory=list)

    @staticmethod
    def _mean(values: Sequence[float]) -> float | None:
        return sum(values) / len(values) if values else None

    def row(self) -> dict[str, float | None]:
        """Means per input."""
        return {
            "seconds": self._mean(self.seconds),
            "evaluated": self._mean(self.evaluated),
            "generated": self._mean(self.generated),
            "calls": self._mean([float(c) for c in self.calls]),
            "f1": self._mean(self.f1s),
        }


def measure(
    cost: MethodCost,
    endpoint: LlamaEndpoint,
    run: Callable[[], tuple[list[str], int]],
    gold: Sequence[str] | None,
) -> None:
    """Time one input's run and read the server's counters around it.

    Args:
        cost: Where the numbers go.
        endpoint: The server.
        run: Returns ``(matched rule ids, calls made)``.
        gold: Gold rule ids, if known.
    """
    before = endpoint.counters()
    start = time.perf_counter()
    try:
        matched, calls = run()
    except Exception:  # a filter that cannot parse its own reply raises; counted, not fatal
        cost.errors += 1
        return
    seconds = time.perf_counter() - start
    after = endpoint.counters()
    cost.inputs += 1
    cost.seconds.append(seconds)
    cost.evaluated.append(after["prompt_tokens_total"] - before["prompt_tokens_total"])
    cost.generated.append(after["tokens_predicted_total"] - before["tokens_predicted_total"])
    cost.calls.append(calls)
    cost.matched.append(list(matched))
    if gold is not None:
        f1 = score_retrieval(matched, gold).f1
        if f1 is not None:
            cost.f1s.append(f1)


def rule_documents(rules: Sequence[Rule]) -> list[Document]:
    """The rule documents both filters receive."""
    return [rule.to_document() for rule in rules]


Item = tuple[str, str, tuple[str, ...] | None]  # key, text, gold rule ids


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def nba_items(data: Path, limit: int) -> tuple[list[Rule], list[Item]]:
    from langchain_tag_bench.tasks import nba_task

    task = nba_task(data, limit=limit)
    return list(task.load_rules(None)), [(i.key, i.text, i.gold_rules) for i in task.items]


def pep8_items(humaneval: Path, limit: int) -> tuple[list[Rule], list[Item]]:
    from langchain_tag_bench.tasks import pep8_task

    task = pep8_task(humaneval, limit=limit, variants=1)
    variants = [i for i in task.items if i.group == "variant"][:limit]
    return list(task.load_rules(None)), [(i.key, i.text, i.gold_rules) for i in variants]


def run_methods(
    rules: Sequence[Rule],
    items: Sequence[Item],
    *,
    judge: BaseChatModel,
    chat: BaseChatModel,
    endpoint: LlamaEndpoint,
    calibration: Calibration,
    naive_limit: int,
    skip_filter: bool,
    with_fewshot: bool = True,
) -> tuple[dict[str, MethodCost], list[dict[str, float]]]:
    from langchain_classic.retrievers.document_compressors import LLMChainFilter

    prompt = JUDGE_PROMPTS["applicability"]
    # As ApplicabilityRetriever ships it, but scoring raw P(YES): a calibration's reference judgments (8 per rule
    # for the shipped default) are a one-off per rule set, and would land in the first input's time.
    tag_judge = ChatJudge(judge, prompt, max_concurrency=8, calibration=None)
    chain_filter = LLMChainFilter.from_llm(chat)
    documents = rule_documents(rules)
    fewshot = ChatJudge(judge, JUDGE_PROMPTS["applicability-fewshot"], max_concurrency=8, calibration=None)
    costs = {name: MethodCost(name) for name in ("tag", "tag_fewshot", "llm_chain_filter", "naive", "limit")}
    remote: list[dict[str, float]] = []
    for number, (key, text, gold) in enumerate(items):
        print(f"  {key}: tag", file=sys.stderr, flush=True)

        def tag(text: str = text) -> tuple[list[str], int]:
            result = tag_judge.judge(text, rules)
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
                        reading = read_message(reply)
                    except ParseError:
                        continue
                    if reading.p_yes >= 0.5 if reading.p_yes is not None else reading.word:
                        matched.append(rule.rule_id)
                return matched, len(rules)

            measure(costs["naive"], endpoint, naive, gold)
        # (d) and the remote view: the exact prompts (a) sends, tokenized by the server.
        token_lists = [endpoint.tokens(tag_judge.messages(text, rule)) for rule in rules]
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
    from langchain_tag.integrations.similarity import in_memory_chroma
    from langchain_tag.local.models import get_embeddings

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
    judge: BaseChatModel,
    endpoint: LlamaEndpoint,
    calibration: Calibration,
    text: str,
    ms: Sequence[int],
    lengths: Sequence[int],
) -> None:
    tag_judge = ChatJudge(judge, "applicability", max_concurrency=8, calibration=None)
    print(
        "\n| rules M | input tokens | (a) s | (a) s / judgment | (d) s | (a)/(d) | tokens evaluated (a) | needed (d) |"
    )
    print("|---|---|---|---|---|---|---|---|")

    def one(rules: list[Rule], query: str) -> None:
        cost = MethodCost("tag")
        measure(cost, endpoint, lambda: ([j.rule_id for j in tag_judge.judge(query, rules).matched], len(rules)), None)
        needed, _ = minimal_tokens([endpoint.tokens(tag_judge.messages(query, r)) for r in rules])
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


@dataclass(frozen=True)
class ExtractionCost:
    """One phase of an extraction run.

    Attributes:
        phase: 1-4.
        calls: Calls made.
        prompt_tokens: Prompt tokens (as billed: a prefix cache does not lower them).
        completion_tokens: Tokens generated.
    """

    phase: int
    calls: int
    prompt_tokens: int
    completion_tokens: int


def extraction_costs(report: Any) -> list[ExtractionCost]:
    """Per-phase costs from an :class:`~langchain_tag.extraction.report.ExtractionReport`, in phase order."""
    return [
        ExtractionCost(phase, u.calls, u.prompt_tokens, u.completion_tokens)
        for phase, u in sorted(report.usage.items())
    ]


def per_thousand_words(value: float, words: int) -> float:
    """``value`` per 1,000 words of policy."""
    return 1000.0 * value / max(words, 1)


def print_extraction(costs: Sequence[ExtractionCost], words: int, seconds: float, rules: int) -> None:
    """Table 5: calls and tokens per phase, with the totals per 1,000 policy words."""
    print(f"\n### Extraction cost: {words} policy words, {rules} rules, {seconds:.0f} s\n")
    print("| phase | calls | prompt tokens | completion tokens |")
    print("|---|---|---|---|")
    for cost in costs:
        print(f"| {cost.phase} | {cost.calls} | {cost.prompt_tokens:,} | {cost.completion_tokens:,} |")
    prompt = sum(c.prompt_tokens for c in costs)
    completion = sum(c.completion_tokens for c in costs)
    print(f"| all | {sum(c.calls for c in costs)} | {prompt:,} | {completion:,} |")
    prompt_k, completion_k = per_thousand_words(prompt, words), per_thousand_words(completion, words)
    print(f"| per 1,000 words | | {prompt_k:,.0f} | {completion_k:,.0f} |")
    print(f"\nSeconds per 1,000 words: {per_thousand_words(seconds, words):.0f}.")


def run_extraction(chat: BaseChatModel, policy: Path | None) -> None:
    """Extract the demo policy (or ``policy``) with no store, as a first run does, and print table 5."""
    from langchain_core.documents import Document

    from langchain_tag.cli.demo import demo_policy, demo_transformer

    document = Document(page_content=policy.read_text(encoding="utf-8"), id=policy.name) if policy else demo_policy()
    transformer = demo_transformer(chat, store=None)
    began = time.perf_counter()
    result = transformer.extract([document])
    seconds = time.perf_counter() - began
    print_extraction(extraction_costs(result.report), len(document.page_content.split()), seconds, len(result.rules))


def main(argv: list[str] | None = None) -> int:
    """Run the measurement and print its tables (``python -m langchain_tag_bench.matcher_speed --help``)."""
    from langchain_tag.local.models import get_chat_model

    parser = argparse.ArgumentParser(
        prog="python -m langchain_tag_bench.matcher_speed", description=(__doc__ or "").split("\n\n")[0]
    )
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
    parser.add_argument(
        "--prompt-tps",
        type=float,
        help="best prompt throughput measured on this machine, tokens/s, for (d) (default: the server's, measured)",
    )
    parser.add_argument("--extraction", action="store_true", help="also measure extraction cost (table 5)")
    parser.add_argument("--policy", help="the policy --extraction extracts (default: the demo policy)")
    args = parser.parse_args(argv)

    judge = get_chat_model(role="judge")
    chat = get_chat_model(role="executor")
    endpoint = LlamaEndpoint.of(judge)
    start = time.perf_counter()
    measured = calibrate(chat, endpoint)
    calibration = Calibration(prompt_tps=args.prompt_tps or measured.prompt_tps, decode_seconds=measured.decode_seconds)
    print(f"# Matcher speed ({os.cpu_count()} cores, model {getattr(judge, 'model_name', '?')})")
    print(
        f"\nCalibration: prompt throughput {measured.prompt_tps:.1f} tokens/s (fresh prompts), "
        f"decode {measured.decode_seconds * 1000:.0f} ms/token; (d) uses {calibration.prompt_tps:.1f} tokens/s"
        + (" (given with --prompt-tps)." if args.prompt_tps else " (this server's).")
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
    if args.extraction:
        run_extraction(chat, Path(args.policy) if args.policy else None)
    print(f"\n(total {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
