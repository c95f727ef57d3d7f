r"""Judging throughput in process and through Ray Data, side by side, on the same model server.

The same job, N inputs (the demo set's code) against M rules (pycodestyle
checks), is judged twice from empty verdict caches:

1. in process: :meth:`ApplicabilityRetriever.match` for each input, the
   judge's own batched calls (``--max-concurrency`` in flight);
2. through Ray Data: :func:`langchain_tag.scale.ray_data.judge_with_ray`, the HTTP
   request processor posting the same requests to the same endpoint
   (``--concurrency`` HTTP workers, ``--batch-size`` rows per batch).

It prints judgments per second for each (after one warm-up call), Ray's
start-up time (not counted in its rate), and whether the two gave the same
verdicts. A third row is the hardware limit they are measured against: the
same request bodies posted back to back by a bare HTTP client (no package
code between requests), the pace of the model server when it is never idle;
each engine's share of it is printed. By default the
embedded llama.cpp server is used; ``--base-url`` and ``--model`` point both
at another OpenAI-compatible endpoint (vLLM, for example), where Ray's
workers can run requests in parallel.

On the embedded server (one slot), requests are served one at a time
whichever engine sends them: expect equal rates, less Ray's fixed cost per
pass. Its prompt cache makes P(YES) drift slightly from run to run of the
same prompt; ``--no-cache-prompt`` turns it off for exact agreement (and
slower prompts).

Usage::

    nice -n 10 python -m langchain_tag_bench.scale --inputs 10 --rules 10
    python -m langchain_tag_bench.scale --base-url http://gpu-host:8000/v1 --model Qwen/Qwen2.5-Coder-1.5B-Instruct \\
        --inputs 200 --rules 73 --concurrency 8 --max-concurrency 64

Quote the machine's core count with the numbers, and run nothing beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_tag.judging.results import MatchResult
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule

__all__ = ["Agreement", "EngineTiming", "agreement", "demo_inputs", "main", "scale_rules"]

DEMO_CASES = Path(__file__).resolve().parents[1] / "data" / "demo" / "demo_cases.jsonl"


@dataclass(frozen=True)
class EngineTiming:
    """One engine's run of the job."""

    engine: str
    judgments: int
    seconds: float
    note: str = ""

    @property
    def per_second(self) -> float:
        """Judgments per second."""
        return self.judgments / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Agreement:
    """How far two runs' verdicts agree."""

    pairs: int
    same_verdict: int
    max_p_yes_gap: float


def agreement(first: Sequence[MatchResult], second: Sequence[MatchResult]) -> Agreement:
    """Compare two runs' judgments pair by pair (same inputs, same rules, same order)."""
    pairs = same = 0
    gap = 0.0
    for a, b in zip(first, second, strict=True):
        for x, y in zip(a.judgments, b.judgments, strict=True):
            pairs += 1
            same += x.applies == y.applies
            if x.p_yes is not None and y.p_yes is not None:
                gap = max(gap, abs(x.p_yes - y.p_yes))
    return Agreement(pairs, same, gap)


def demo_inputs(count: int, path: Path = DEMO_CASES) -> list[str]:
    """The first ``count`` code inputs of the demo set (repeated, numbered, when it holds fewer)."""
    codes = [json.loads(line)["code"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [codes[i % len(codes)] + (f"\n# copy {i // len(codes)}" if i >= len(codes) else "") for i in range(count)]


def scale_rules(count: int) -> list[Rule]:
    """The first ``count`` pycodestyle checks as rules."""
    from langchain_tag_bench.pep8_checks import pep8_rules

    rules = pep8_rules()
    if count > len(rules):
        raise SystemExit(f"--rules: at most {len(rules)} pycodestyle rules, got {count}")
    return rules[:count]


def _judge(args: argparse.Namespace) -> Any:
    """The judge model: the embedded server's, or a ChatOpenAI at ``--base-url``."""
    extra = {"cache_prompt": args.cache_prompt}
    if args.base_url is None:
        from langchain_tag.local import get_chat_model

        return get_chat_model(role="judge", extra_body=extra)
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    return ChatOpenAI(
        base_url=args.base_url,
        model=args.model,
        api_key=SecretStr(os.environ.get("OPENAI_API_KEY", "none")),
        temperature=0,
        extra_body=extra if args.cache_prompt is False else None,
    )


def _retriever(judge: Any, rules: Sequence[Rule], args: argparse.Namespace) -> ApplicabilityRetriever:
    return ApplicabilityRetriever(
        llm=judge,
        rules=list(rules),
        cache=InMemoryVerdictCache(),
        calibration="default" if args.calibration == "default" else None,
        max_concurrency=args.max_concurrency,
    )


def run_in_process(retriever: ApplicabilityRetriever, inputs: Sequence[str]) -> tuple[list[MatchResult], EngineTiming]:
    """Judge every input in process; time it."""
    started = time.perf_counter()
    results = [retriever.match(q) for q in inputs]
    seconds = time.perf_counter() - started
    calls = sum(r.calls for r in results)
    # Reference judgments (a calibration's) are made once, outside the inputs' results.
    references = len(retriever.judge.reference_requests(_rules_of(retriever)))
    note = f"max_concurrency={retriever.max_concurrency}"
    return results, EngineTiming("in process", calls + references, seconds, note)


def _rules_of(retriever: ApplicabilityRetriever) -> list[Rule]:
    from langchain_tag.rules import rule_documents, rules_from_documents

    return rules_from_documents(rule_documents(retriever.rules))


def run_ray(
    retriever: ApplicabilityRetriever, inputs: Sequence[str], args: argparse.Namespace
) -> tuple[list[MatchResult], EngineTiming, float]:
    """Judge every input through Ray Data; time the passes, and Ray's start-up apart."""
    import ray

    from langchain_tag.scale.ray_data import init_local_ray, judge_with_ray

    started = time.perf_counter()
    if not ray.is_initialized():
        init_local_ray(num_cpus=args.num_cpus)
    startup = time.perf_counter() - started
    run = judge_with_ray(
        retriever,
        inputs,
        base_url=args.base_url,
        model=args.model,
        concurrency=args.concurrency,
        batch_size=args.batch_size,
    )
    note = f"{args.concurrency} HTTP worker(s), batch {args.batch_size}, {run.passes} pass(es)"
    if run.failures:
        note += f", {len(run.failures)} failed"
    return run.results, EngineTiming("Ray Data", run.sent - len(run.failures), run.seconds, note), startup


def run_bare_client(retriever: ApplicabilityRetriever, inputs: Sequence[str], args: argparse.Namespace) -> EngineTiming:
    """The server's own pace: the same request bodies posted one after another by a bare HTTP client.

    No package code runs between two requests (no runner, parsing, cache or scorer), so this is what the
    model server gives when it is never idle: the limit the two engines are measured against.
    """
    import httpx

    from langchain_tag.scale.ray_data import chat_request_body
    from langchain_tag.scale.ray_data.job import judge_endpoint

    endpoint = judge_endpoint(retriever, base_url=args.base_url, model=args.model, api_key=None, extra_body=None)
    base_url, model = endpoint["base_url"], endpoint["model"]
    rules = _rules_of(retriever)
    bodies = [
        chat_request_body(r.to_dict(), model=model, extra_body=endpoint["extra_body"])
        for q in inputs
        for r in retriever.judge.requests(q, rules)
    ]
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {endpoint['api_key'] or 'none'}"}
    with httpx.Client(timeout=300) as client:
        started = time.perf_counter()
        for body in bodies:
            client.post(url, json=body, headers=headers).raise_for_status()
        seconds = time.perf_counter() - started
    return EngineTiming("server alone (bare HTTP client)", len(bodies), seconds, "one request in flight, no package")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job both ways and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10, help="inputs to judge (demo set code)")
    parser.add_argument("--rules", type=int, default=10, help="rules (pycodestyle checks)")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (.../v1) instead of the embedded server")
    parser.add_argument("--model", help="the model it serves (with --base-url)")
    parser.add_argument("--concurrency", type=int, default=1, help="Ray HTTP workers")
    parser.add_argument("--batch-size", type=int, default=16, help="Ray rows per batch")
    parser.add_argument("--max-concurrency", type=int, default=8, help="in-process judgments in flight")
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs for the local Ray instance")
    parser.add_argument("--calibration", choices=("none", "default"), default="none")
    parser.add_argument("--no-cache-prompt", dest="cache_prompt", action="store_false", help="server prompt cache off")
    parser.add_argument("--ray-first", action="store_true", help="run Ray before in process")
    args = parser.parse_args(argv)
    if (args.base_url is None) != (args.model is None):
        parser.error("--base-url and --model go together")

    inputs, rules = demo_inputs(args.inputs), scale_rules(args.rules)
    judge = _judge(args)
    # One call first, so neither engine pays for loading the weights or the system prompt's first evaluation.
    _retriever(judge, rules[:1], args).match("x = 1  # warm-up")
    timings: dict[str, EngineTiming] = {}
    results: dict[str, list[MatchResult]] = {}
    startup = 0.0
    for engine in ("ray", "in process") if args.ray_first else ("in process", "ray"):
        retriever = _retriever(judge, rules, args)
        if engine == "ray":
            results[engine], timings[engine], startup = run_ray(retriever, inputs, args)
        else:
            results[engine], timings[engine] = run_in_process(retriever, inputs)

    timings["bare"] = run_bare_client(_retriever(judge, rules, args), inputs, args)

    cores = os.cpu_count()
    print(f"{len(inputs)} inputs x {len(rules)} rules, judge {retriever.judge.model_identity}, {cores} cores")
    print()
    limit = timings["bare"].per_second
    print("| engine | judgments | seconds | judgments/s | share of the server's own pace | setting |")
    print("|---|---|---|---|---|---|")
    for timing in (timings["in process"], timings["ray"], timings["bare"]):
        share = f"{timing.per_second / limit:.0%}" if limit > 0 else "-"
        print(
            f"| {timing.engine} | {timing.judgments} | {timing.seconds:.1f} | {timing.per_second:.2f} | {share} "
            f"| {timing.note} |"
        )
    print()
    print(f"Ray start-up (not counted above): {startup:.1f} s")
    agreed = agreement(results["in process"], results["ray"])
    gap = f"{agreed.max_p_yes_gap:.4f}"
    print(f"Same verdict: {agreed.same_verdict}/{agreed.pairs} pairs; largest P(YES) difference {gap}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
