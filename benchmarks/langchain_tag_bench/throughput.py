"""Prompt and decode throughput of llama.cpp servers, side by side.

Compares the embedded runtime with another llama.cpp build (for example one compiled on this machine with
``-DGGML_NATIVE=ON``) serving the same GGUF. Each server gets the same fresh prompts (prompt cache off, a
different first word each time) through llama.cpp's ``/completion`` endpoint, and the server's own ``timings``
give prompt tokens/s and milliseconds per generated token; the medians are printed. Run one server at a time
or alternate rounds, with nothing else on the machine.

Usage::

    python -m langchain_tag_bench.throughput http://127.0.0.1:8091 http://127.0.0.1:8092 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_tag_bench.matcher_speed import LlamaEndpoint

__all__ = ["Throughput", "main", "measure", "summarise"]


@dataclass(frozen=True)
class Throughput:
    """Medians over a server's replies."""

    prompt_tps: float
    decode_ms: float
    samples: int


def summarise(timings: Sequence[dict[str, Any]]) -> Throughput:
    """Medians of llama.cpp ``timings`` objects (``prompt_per_second``, ``predicted_ms``, ``predicted_n``).

    Raises:
        ValueError: With no timings.
    """
    if not timings:
        raise ValueError("no timings to summarise")
    prompt = [float(t["prompt_per_second"]) for t in timings]
    decode = [float(t["predicted_ms"]) / max(int(t["predicted_n"]), 1) for t in timings]
    return Throughput(statistics.median(prompt), statistics.median(decode), len(timings))


def measure(url: str, *, prompts: int = 5, prompt_words: int = 300, n_predict: int = 32) -> list[dict[str, Any]]:
    """Send ``prompts`` fresh prompts to one llama.cpp server; return the server's ``timings`` of each."""
    endpoint = LlamaEndpoint(url)
    body_words = " ".join(f"w{i}" for i in range(prompt_words))
    found = []
    for i in range(prompts):
        payload = {"prompt": f"run {i}: {body_words}", "n_predict": n_predict, "cache_prompt": False, "temperature": 0}
        found.append(endpoint.post("/completion", payload, timeout=600)["timings"])
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Measure each server ``--rounds`` times, alternating, and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("urls", nargs="+", help="llama.cpp server base URLs (without /v1)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=5, help="prompts per round")
    parser.add_argument("--prompt-words", type=int, default=300)
    args = parser.parse_args(argv)
    timings: dict[str, list[dict[str, Any]]] = {u: [] for u in args.urls}
    for _ in range(args.rounds):
        for url in args.urls:
            timings[url] += measure(url, prompts=args.prompts, prompt_words=args.prompt_words)
    print("| server | replies | prompt tokens/s (median) | ms per generated token (median) |")
    print("|---|---|---|---|")
    for url, found in timings.items():
        t = summarise(found)
        print(f"| {url} | {t.samples} | {t.prompt_tps:.1f} | {t.decode_ms:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
