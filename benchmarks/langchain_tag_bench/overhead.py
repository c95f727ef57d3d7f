"""The package's own cost per judgment, against models that answer at once.

Two judges that take no time to think, so what is measured is everything
else on the path of one judgment (render, the call runner, parse, the verdict
cache, the scorer):

1. ``fake-model``: :class:`~langchain_tag.testing.FakeChatModel` in process,
   with first-token logprobs: the package and langchain-core alone;
2. ``fake-endpoint``: ``ChatOpenAI`` posting to an OpenAI-compatible HTTP
   server on 127.0.0.1 that answers every request at once with a YES/NO token
   and its logprobs (an aiohttp server in its own process): what a GPU server
   behind the package would see as client overhead, HTTP included;
3. the same endpoint as OpenAI's Decisions API (``POST /v1/decisions``) behind
   ``OpenAIDecisions``: one request an input, every rule a question of it,
   answered at once; beside it the same requests sent by ``OpenAIDecisions.invoke``
   alone, the client's own floor.

Each judges ``--inputs`` inputs against ``--rules`` rules from an empty
in-memory verdict cache with ``max_concurrency`` judgments in flight, and
prints judgments per second. The target is 500 judgments/s in process, so
the package is never the bottleneck of a GPU server.

Usage::

    python -m langchain_tag_bench.overhead --inputs 40 --rules 50 --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, judged_rule_id

_QUESTION_RULE = re.compile(r"^\(rule (\S+)\)$", re.MULTILINE)

__all__ = ["InstantEndpoint", "main", "rules", "time_decisions_alone", "time_judging"]


def rules(count: int) -> list[Rule]:
    """``count`` distinct rules; the judge says YES to every seventh."""
    return [
        Rule(
            rule_id=f"R-{i:03d}",
            rule_name=f"rule {i}",
            condition=f"the input contains the marker token_{i}",
            action=f"remove token_{i}",
        )
        for i in range(count)
    ]


def _says_yes(rule_id: str) -> bool:
    return rule_id.endswith(("0", "7")) and rule_id != "R-000"


def _answers_yes(prompt: str) -> bool:
    return _says_yes(judged_rule_id(prompt) or "")


def _question_says_yes(instructions: str) -> bool:
    """A decision question's answer: as the chat judge's, for the rule its ``(rule R-007)`` line names."""
    found = _QUESTION_RULE.search(instructions)
    return found is not None and _says_yes(found.group(1))


def _serve(port_out: Any, delay: float = 0.0) -> None:
    """The instant endpoint (or one taking ``delay`` s a request), counting requests in flight.

    ``GET /stats`` gives the counts, ``POST /reset`` starts them again.
    """
    from aiohttp import web

    state = {"in_flight": 0, "max_in_flight": 0, "requests": 0}

    async def complete(request: web.Request) -> web.Response:
        state["in_flight"] += 1
        state["requests"] += 1
        state["max_in_flight"] = max(state["max_in_flight"], state["in_flight"])
        try:
            body = await request.json()
            if delay > 0:
                await asyncio.sleep(delay)
            prompt = body["messages"][-1]["content"]
            word = "YES" if _answers_yes(prompt) else "NO"
            other = "NO" if word == "YES" else "YES"
            top = [{"token": word, "logprob": -0.05}, {"token": other, "logprob": -3.0}]
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": word},
                "logprobs": {"content": [{"token": word, "logprob": -0.05, "top_logprobs": top}]},
                "finish_reason": "length",
            }
            usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": 1, "total_tokens": len(prompt) // 4 + 1}
            reply = {"id": "c", "object": "chat.completion", "created": 0, "model": body.get("model", "instant")}
            return web.json_response({**reply, "choices": [choice], "usage": usage})
        finally:
            state["in_flight"] -= 1

    async def decide(request: web.Request) -> web.Response:
        state["requests"] += 1
        body = await request.json()
        answers = [
            {
                "name": q["name"],
                "type": "predicate",
                "probability": 0.9 if _question_says_yes(q["instructions"]) else 0.1,
            }
            for q in body["questions"]
        ]
        usage = {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": len(answers)}
        return web.json_response({"model": body.get("model", "instant"), "answers": answers, "usage": usage})

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(state)

    async def reset(request: web.Request) -> web.Response:
        state.update(max_in_flight=0, requests=0)
        return web.json_response(state)

    async def start() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", complete)
        app.router.add_post("/v1/decisions", decide)
        app.router.add_get("/stats", stats)
        app.router.add_post("/reset", reset)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_out.put(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        await asyncio.Event().wait()

    asyncio.run(start())


class InstantEndpoint:
    """The instant endpoint in a process of its own (so it takes no time from the client's interpreter).

    It counts the requests it serves and the most in flight at once (:meth:`stats`).

    Args:
        delay: Seconds the endpoint takes over each request (a model's time, without its CPU use).
    """

    def __init__(self, delay: float = 0.0) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        ports = context.Queue()
        self._process = context.Process(target=_serve, args=(ports, delay), daemon=True)
        self._process.start()
        self.port = int(ports.get(timeout=60))

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self, *, reset: bool = False) -> dict[str, int]:
        """Requests served and the most in flight at once (since the last reset)."""
        import httpx

        url = f"http://127.0.0.1:{self.port}/" + ("reset" if reset else "stats")
        response = httpx.post(url) if reset else httpx.get(url)
        return dict(response.json())

    def close(self) -> None:
        """Stop the endpoint."""
        self._process.terminate()
        self._process.join(5)


def time_judging(
    llm: Any,
    inputs: Sequence[str],
    rule_set: Sequence[Rule],
    *,
    max_concurrency: int,
    adjust: Callable[[ApplicabilityRetriever], None] | None = None,
) -> float:
    """Judgments per second of one pass over ``inputs`` (raw P(YES), fresh in-memory cache).

    ``adjust`` changes the retriever before the pass (a row comparing one part of the path with another).
    """
    retriever = ApplicabilityRetriever(llm=llm, rules=list(rule_set), calibration=None, max_concurrency=max_concurrency)
    if adjust is not None:
        adjust(retriever)
    start = time.perf_counter()
    judged = 0
    for text in inputs:
        result = retriever.match(text)
        judged += len(result.judgments)
        assert not result.failed, result.failed[0].error
    return judged / (time.perf_counter() - start)


def time_client_alone(llm: Any, inputs: Sequence[str], rule_set: Sequence[Rule], *, max_concurrency: int) -> float:
    """Requests per second of the same prompts sent by ``llm.batch`` alone: the client's own floor."""
    from langchain_tag.judging.chat import configure_judge
    from langchain_tag.judging.prompts import JUDGE_PROMPTS

    prompt, caller = JUDGE_PROMPTS["applicability"], configure_judge(llm)
    batches = [[prompt.messages(text, rule) for rule in rule_set] for text in inputs]
    start = time.perf_counter()
    sent = 0
    for batch in batches:
        sent += len(caller.batch(batch, config={"max_concurrency": max_concurrency}))
    return sent / (time.perf_counter() - start)


def time_decisions_alone(llm: Any, inputs: Sequence[str], rule_set: Sequence[Rule]) -> float:
    """Questions per second of the judge's decision requests sent by ``llm.invoke`` alone, one input a request."""
    from langchain_tag.judging.decision_interfaces import question_request
    from langchain_tag.judging.decision_judge import instructions
    from langchain_tag.judging.prompts import JUDGE_PROMPTS

    prompt = JUDGE_PROMPTS["applicability"]
    requests = [question_request(llm, text, {r.rule_id: instructions(prompt, r) for r in rule_set}) for text in inputs]
    start = time.perf_counter()
    answered = sum(len(llm.invoke(request).predicates) for request in requests)
    return answered / (time.perf_counter() - start)


def _median_rate(
    make: Callable[[], Any],
    inputs: Sequence[str],
    rule_set: Sequence[Rule],
    args: Any,
    adjust: Callable[[ApplicabilityRetriever], None] | None = None,
) -> list[float]:
    return [
        time_judging(make(), inputs, rule_set, max_concurrency=args.max_concurrency, adjust=adjust)
        for _ in range(args.repeats)
    ]


def _through_invoke(retriever: ApplicabilityRetriever) -> None:
    """The decision judge sending through the bare ``OpenAIDecisions.invoke``: no check of the body."""
    retriever.judge.runner.llm = retriever.judge.llm


def _decision_rows(
    endpoint: InstantEndpoint, inputs: Sequence[str], rule_set: Sequence[Rule], args: Any
) -> list[tuple[str, list[float]]]:
    """The Decisions API rows: the package's decision judge, and ``OpenAIDecisions.invoke`` alone."""
    import warnings

    from langchain_core._api.beta_decorator import LangChainBetaWarning
    from langchain_openai.decisions import OpenAIDecisions

    warnings.simplefilter("ignore", LangChainBetaWarning)

    def decisions() -> OpenAIDecisions:
        return OpenAIDecisions(model="instant", base_url=endpoint.base_url, api_key="none", max_retries=0)

    return [
        (
            "fake-endpoint (OpenAIDecisions over HTTP, one request an input)",
            _median_rate(decisions, inputs, rule_set, args),
        ),
        (
            "the same, through OpenAIDecisions.invoke (no check of the body)",
            _median_rate(decisions, inputs, rule_set, args, adjust=_through_invoke),
        ),
        (
            "OpenAIDecisions.invoke alone, same requests (no package)",
            [time_decisions_alone(decisions(), inputs, rule_set) for _ in range(args.repeats)],
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Print judgments per second against an in-process fake model and an instant HTTP endpoint."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=40)
    parser.add_argument("--rules", type=int, default=50)
    parser.add_argument("--max-concurrency", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rule_set = rules(args.rules)
    inputs = [f"x_{i} = compute(token_{i % args.rules})  # input {i}" for i in range(args.inputs)]
    print(
        f"# Package overhead per judgment ({os.cpu_count()} cores; {args.inputs} inputs x {args.rules} rules, "
        f"max_concurrency {args.max_concurrency}, {args.repeats} passes each)"
    )
    rows: list[tuple[str, list[float]]] = []
    rows.append(
        (
            "fake-model (in process)",
            _median_rate(
                lambda: FakeChatModel(respond=lambda p: "YES" if _answers_yes(p) else "NO", with_logprobs=True),
                inputs,
                rule_set,
                args,
            ),
        )
    )
    from langchain_openai import ChatOpenAI

    endpoint = InstantEndpoint()
    try:
        rows.append(
            (
                "fake-endpoint (ChatOpenAI over HTTP)",
                _median_rate(
                    lambda: ChatOpenAI(model="instant", base_url=endpoint.base_url, api_key="none", max_retries=0),
                    inputs,
                    rule_set,
                    args,
                ),
            )
        )
        rows.append(
            (
                "ChatOpenAI.batch alone, same prompts (no package)",
                [
                    time_client_alone(
                        ChatOpenAI(model="instant", base_url=endpoint.base_url, api_key="none", max_retries=0),
                        inputs,
                        rule_set,
                        max_concurrency=args.max_concurrency,
                    )
                    for _ in range(args.repeats)
                ],
            )
        )
        rows += _decision_rows(endpoint, inputs, rule_set, args)
    finally:
        endpoint.close()
    print("| judge | judgments/s (median) | per judgment | passes |")
    print("|---|---|---|---|")
    for name, rates in rows:
        median = statistics.median(rates)
        print(f"| {name} | {median:.0f} | {1000 / median:.2f} ms | {', '.join(f'{r:.0f}' for r in rates)} |")
    print(json.dumps({name: statistics.median(r) for name, r in rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
