"""The bulk job's pace against a bare HTTP client, on an OpenAI-compatible endpoint that answers at once.

One run, side by side, on the same instant endpoint (an aiohttp server on
127.0.0.1 in its own process, answering YES/NO with logprobs):

1. a bare client: ``httpx.AsyncClient`` posting the judge's own request bodies,
   ``--max-concurrency`` at a time (no package code between requests): the pace
   the job is measured against;
2. the default bulk job through ``ChatOpenAI`` as ``langchain-tag match`` configures it
   (:func:`~langchain_tag.local.models.get_chat_model` for the endpoint, no client retries):
   :func:`~langchain_tag.scale.bulk.match_corpus` (sync) and
   :func:`~langchain_tag.scale.bulk.amatch_corpus` (async) with a fresh
   :class:`~langchain_tag.judging.verdict_cache.SQLiteVerdictCache`;
3. the same two without a verdict cache.

Each row prints judgments per second, its ratio to the bare client, and the
most requests the server saw in flight at once (against ``--max-concurrency``).

With ``--ray``, two more rows: the job through Ray Data
(:func:`~langchain_tag.scale.ray_data.judge_with_ray`, ``--ray-workers``
HTTP workers sharing ``--max-concurrency``, SQLite cache), and its ratio to
the in-process ``match_corpus`` row. The local Ray instance is started before
the timing; each Ray pass's own start-up is timed. ``--delay`` makes the
endpoint take that many seconds per request (a model's time, no CPU).

Usage::

    python -m langchain_tag_bench.pace --inputs 200 --rules 30 --max-concurrency 16
    python -m langchain_tag_bench.pace --inputs 20 --rules 5 --max-concurrency 8 --delay 0.5 --ray
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_tag_bench.overhead import InstantEndpoint, rules

__all__ = ["WAYS", "Row", "main", "run"]

WAYS = ("sync-cache", "async-cache", "sync", "async")
"""The in-process rows (``--ways``): match_corpus / amatch_corpus, with and without the SQLite cache."""


@dataclass(frozen=True)
class Row:
    """One way of doing the job."""

    name: str
    judgments: int
    seconds: float
    max_in_flight: int
    requests: int

    @property
    def per_second(self) -> float:
        """Judgments per second."""
        return self.judgments / self.seconds if self.seconds > 0 else 0.0


def _retriever(base_url: str, rule_set: Sequence[Any], cache: Any, max_concurrency: int) -> Any:
    """A retriever whose judge is the package's own configured model for this endpoint (what the CLI uses)."""
    from langchain_tag.local.models import ModelConfig, get_chat_model
    from langchain_tag.retrievers import ApplicabilityRetriever

    config = ModelConfig(provider="openai", base_url=base_url, api_key="none", model="instant", max_retries=0)
    llm = get_chat_model(role="judge", config=config)
    return ApplicabilityRetriever(
        llm=llm, rules=list(rule_set), cache=cache, calibration=None, max_concurrency=max_concurrency
    )


def _bodies(retriever: Any, inputs: Sequence[str], rule_set: Sequence[Any]) -> list[dict[str, Any]]:
    """The request bodies the judge sends, as the Ray path renders them (same messages, logprobs, token cap)."""
    from langchain_tag.scale.ray_data import chat_request_body
    from langchain_tag.scale.ray_data.job import judge_endpoint

    endpoint = judge_endpoint(retriever, base_url=None, model=None, api_key=None, extra_body=None)
    return [
        chat_request_body(r.to_dict(), model=endpoint["model"], extra_body=endpoint["extra_body"])
        for q in inputs
        for r in retriever.judge.requests(q, list(rule_set))
    ]


async def _bare(url: str, bodies: Sequence[dict[str, Any]], max_concurrency: int) -> None:
    import httpx

    gate = asyncio.Semaphore(max_concurrency)
    limits = httpx.Limits(max_connections=max_concurrency, max_keepalive_connections=max_concurrency)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:

        async def post(body: dict[str, Any]) -> None:
            async with gate:
                (await client.post(url, json=body, headers={"Authorization": "Bearer none"})).raise_for_status()

        await asyncio.gather(*(post(b) for b in bodies))


def _job(texts: Sequence[str], retriever: Any, asynchronous: bool) -> Callable[[], Any]:
    """The bulk job over ``texts``, every result drained (sync, or async on a new event loop)."""
    from langchain_tag.scale.bulk import amatch_corpus, match_corpus

    async def drain() -> None:
        async for _ in amatch_corpus(texts, retriever, show_progress=False):
            pass

    if asynchronous:
        return lambda: asyncio.run(drain())
    return lambda: list(match_corpus(texts, retriever, show_progress=False))


def _timed(name: str, endpoint: InstantEndpoint, judgments: int, work: Callable[[], Any]) -> Row:
    endpoint.stats(reset=True)
    started = time.perf_counter()
    work()
    seconds = time.perf_counter() - started
    stats = endpoint.stats()
    return Row(name, judgments, seconds, stats["max_in_flight"], stats["requests"])


def _ray_job(texts: Sequence[str], retriever: Any, workers: int, batch_size: int) -> Callable[[], Any]:
    """The job through Ray Data: every pair judged, then each input's result from the cache."""
    from langchain_tag.scale.ray_data import judge_with_ray

    def job() -> None:
        run = judge_with_ray(retriever, texts, concurrency=workers, batch_size=batch_size)
        if run.failures:
            raise RuntimeError(f"{len(run.failures)} Ray requests failed: {run.failures[0].error}")

    return job


def run(
    inputs: int,
    rule_count: int,
    max_concurrency: int,
    workdir: Path,
    *,
    delay: float = 0.0,
    ray: bool = False,
    ray_workers: int = 1,
    ray_batch_size: int = 16,
    ways: Sequence[str] = WAYS,
) -> list[Row]:
    """Time every row of ``ways`` once on a fresh endpoint; return the rows (the bare client's always first)."""
    from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
    from langchain_tag.scale.bulk import match_corpus

    rule_set = rules(rule_count)
    texts = [f"x_{i} = compute(token_{i % rule_count})  # input {i}" for i in range(inputs)]
    judgments = inputs * rule_count
    if ray:
        from langchain_tag.scale.ray_data import init_local_ray

        init_local_ray()
    endpoint = InstantEndpoint(delay)
    rows: list[Row] = []
    try:
        base = endpoint.base_url
        # Warm-up: imports, the client's first connection, the endpoint's first request.
        list(match_corpus(texts[:1], _retriever(base, rule_set[:2], None, max_concurrency), show_progress=False))
        bodies = _bodies(_retriever(base, rule_set, None, max_concurrency), texts, rule_set)
        url = base + "/chat/completions"
        rows.append(
            _timed(
                "bare client (httpx.AsyncClient)",
                endpoint,
                judgments,
                lambda: asyncio.run(_bare(url, bodies, max_concurrency)),
            )
        )

        for cached in (True, False):
            label = "SQLite cache" if cached else "no cache"
            for asynchronous in (False, True):
                tag = f"{'async' if asynchronous else 'sync'}"
                if f"{tag}{'-cache' if cached else ''}" not in ways:
                    continue
                cache = SQLiteVerdictCache(workdir / f"{tag}.sqlite") if cached else None
                retriever = _retriever(base, rule_set, cache, max_concurrency)
                name = f"{'amatch_corpus' if asynchronous else 'match_corpus'}, {label}"
                rows.append(_timed(name, endpoint, judgments, _job(texts, retriever, asynchronous)))
        if ray:
            retriever = _retriever(base, rule_set, SQLiteVerdictCache(workdir / "ray.sqlite"), max_concurrency)
            name = f"judge_with_ray ({ray_workers} worker(s), batch {ray_batch_size}), SQLite cache"
            rows.append(_timed(name, endpoint, judgments, _ray_job(texts, retriever, ray_workers, ray_batch_size)))
    finally:
        endpoint.close()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Print the rows as a table, then as JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=200)
    parser.add_argument("--rules", type=int, default=30)
    parser.add_argument("--max-concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds the endpoint takes per request")
    parser.add_argument("--ray", action="store_true", help="add the Ray Data row (the ray extra)")
    parser.add_argument("--ray-workers", type=int, default=1)
    parser.add_argument("--ray-batch-size", type=int, default=16)
    parser.add_argument("--ways", default=",".join(WAYS), help=f"in-process rows to time, of {','.join(WAYS)}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tag-pace-") as workdir:
        rows = run(
            args.inputs,
            args.rules,
            args.max_concurrency,
            Path(workdir),
            delay=args.delay,
            ray=args.ray,
            ray_workers=args.ray_workers,
            ray_batch_size=args.ray_batch_size,
            ways=args.ways.split(","),
        )
    bare = rows[0].per_second
    endpoint = f"endpoint taking {args.delay:g} s a request" if args.delay > 0 else "instant endpoint"
    print(
        f"# {args.inputs} inputs x {args.rules} rules, max_concurrency {args.max_concurrency}, "
        f"{os.cpu_count()} cores, {endpoint} on 127.0.0.1"
    )
    print("| way | judgments | seconds | judgments/s | x bare client | max in flight (cap) | requests |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        ratio = row.per_second / bare if bare > 0 else 0.0
        print(
            f"| {row.name} | {row.judgments} | {row.seconds:.2f} | {row.per_second:.0f} | {ratio:.2f}x "
            f"| {row.max_in_flight} ({args.max_concurrency}) | {row.requests} |"
        )
    if args.ray:
        in_process = next((r for r in rows if r.name == "match_corpus, SQLite cache"), None)
        if in_process is not None:
            print(f"Ray / in process (match_corpus, SQLite cache): {rows[-1].per_second / in_process.per_second:.2f}x")
    summary = {r.name: {"per_second": round(r.per_second, 1), "max_in_flight": r.max_in_flight} for r in rows}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
