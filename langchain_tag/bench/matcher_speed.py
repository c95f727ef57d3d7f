"""Matcher cost, measured: TAG's pairwise judge next to LangChain's LLMChainFilter and a naive loop.

Everything here runs against one llama.cpp server (the embedded default) whose
``/metrics`` counters say how many prompt tokens were actually evaluated
(after prefix-cache reuse) and how many were generated. Four ways of picking
the rules that hold for an input, over the same rules and inputs:

(a) ``tag``: :class:`~langchain_tag.retrievers.ApplicabilityRetriever` as
    shipped (system, then input, then rule; one-token verdicts with logprobs).
(b) ``llm_chain_filter``: ``langchain_classic``'s ``LLMChainFilter`` around
    the same rule documents, on the same model as an ordinary chat model.
(c) ``naive``: one call per rule with the rule *before* the input, so no two
    prompts share a prefix (one-token verdicts too).
(d) ``limit``: the time to evaluate only the tokens that must be evaluated,
    each input's prefix once plus each rule's own tokens once, at the
    measured prompt throughput, plus one decode step per pair.

The pure helpers (token arithmetic, synthetic rules, prefilter recall) are
unit-tested; ``benchmarks/matcher_speed.py`` drives the measurement.
"""

from __future__ import annotations

import json
import random
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langchain_tag.bench.metrics import score_retrieval
from langchain_tag.local.server import read_metrics
from langchain_tag.rules import Rule

__all__ = [
    "Calibration",
    "LlamaEndpoint",
    "MethodCost",
    "common_prefix_length",
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

    def _post(self, path: str, payload: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            self.root + path, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
        )
        with self._opener.open(request, timeout=60) as response:
            return json.loads(response.read().decode("utf-8"))

    def counters(self) -> dict[str, float]:
        """Cumulative prompt/generation token counters and seconds."""
        return read_metrics(self.root + "/metrics")

    def tokens(self, messages: Sequence[BaseMessage]) -> list[int]:
        """The token ids of a chat prompt, as the server templates it."""
        roles = {"system": "system", "human": "user", "ai": "assistant"}
        chat = [{"role": roles.get(m.type, "user"), "content": str(m.content)} for m in messages]
        prompt = self._post("/apply-template", {"messages": chat})["prompt"]
        return list(self._post("/tokenize", {"content": prompt, "add_special": True})["tokens"])

    def text_tokens(self, text: str) -> list[int]:
        """The token ids of plain text (a completion-style prompt)."""
        return list(self._post("/tokenize", {"content": text, "add_special": True})["tokens"])


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
