"""Threaded and async batches give the same results as one call at a time; memory stays flat."""

from __future__ import annotations

import gc
import tracemalloc

from langchain_core.documents import Document
from typing_extensions import override

from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.judging.chat import ChatJudge
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, fake_extractor, judged_rule_id


def _respond(text: str) -> tuple[str, float]:
    rule_id = judged_rule_id(text) or ""
    query = text.split("RULE:")[0]
    p = (sum(map(ord, rule_id + query)) % 100) / 100
    return ("YES" if p >= 0.5 else "NO", p)


def _many_rules(rules: list[Rule]) -> list[Rule]:
    return [r.model_copy(update={"rule_id": f"{r.rule_id}-{i}"}) for i in range(8) for r in rules]


def _verdicts(result: object) -> list[tuple[str, bool, float | None]]:
    return [(j.rule_id, j.applies, j.p_yes) for j in result.judgments]


async def test_threaded_and_async_judging_match_sequential(rules: list[Rule]) -> None:
    many = _many_rules(rules)
    queries = [f"query {i}: def f(x=[]): pass" for i in range(5)]
    sequential = [
        _verdicts(ChatJudge(FakeChatModel(respond=_respond, with_logprobs=True), max_concurrency=1).judge(q, many))
        for q in queries
    ]
    threaded_llm = FakeChatModel(respond=_respond, with_logprobs=True, delay=0.002)
    threaded = ChatJudge(threaded_llm, max_concurrency=8)
    async_llm = FakeChatModel(respond=_respond, with_logprobs=True, delay=0.002)
    async_judge = ChatJudge(async_llm, max_concurrency=8)
    assert [_verdicts(threaded.judge(q, many)) for q in queries] == sequential
    assert [_verdicts(await async_judge.ajudge(q, many)) for q in queries] == sequential
    assert threaded_llm.max_in_flight > 1 and async_llm.max_in_flight > 1
    retriever = ApplicabilityRetriever(llm=FakeChatModel(respond=_respond, with_logprobs=True), rules=many, cache=None)
    batched = retriever.batch(queries, config={"max_concurrency": 4})
    abatched = await retriever.abatch(queries)
    expected = [[d.id for d in retriever.invoke(q)] for q in queries]
    assert [[d.id for d in docs] for docs in batched] == expected == [[d.id for d in docs] for docs in abatched]


async def test_concurrent_extraction_matches_sequential() -> None:
    text = "\n\n".join(
        f"Part {i}\n{'=' * 8}\n\nStaff must file form {i} daily. Visitors should avoid room {i}." for i in range(10)
    )
    docs = [Document(page_content=text, id="policy")]

    def rules(concurrency: int, delay: float = 0.0) -> list[dict]:
        result = RuleDocumentTransformer(fake_extractor(delay=delay), max_concurrency=concurrency).extract(docs)
        return [r.model_dump() for r in result.rules]

    sequential = rules(1)
    assert len(sequential) == 20 and rules(6, delay=0.002) == sequential
    result = await RuleDocumentTransformer(fake_extractor(delay=0.002), max_concurrency=6).aextract(docs)
    assert [r.model_dump() for r in result.rules] == sequential


class _ForgetfulFake(FakeChatModel):
    """The fake judge without its prompt log, so that only the library's memory is measured."""

    @override
    def _enter(self, text: str) -> None:
        return None


def test_soak_1000_queries_without_memory_growth(rules: list[Rule]) -> None:
    llm = _ForgetfulFake(respond=_respond, with_logprobs=True)
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, cache=None, max_concurrency=1)
    tracemalloc.start()
    try:
        for i in range(1000):
            retriever.invoke(f"query number {i}: x = [{i}]")
            if i == 99:
                gc.collect()
                after_100 = tracemalloc.get_traced_memory()[0]
        gc.collect()
        after_1000 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # 900 more queries of 5 judgments each: growth of even 60 bytes per judgment would exceed this.
    assert after_1000 - after_100 < 256 * 1024, (after_100, after_1000)


def test_default_verdict_cache_stays_bounded(rules: list[Rule]) -> None:
    cache = InMemoryVerdictCache(max_size=50)
    retriever = ApplicabilityRetriever(llm=FakeChatModel(respond=_respond), rules=rules, cache=cache)
    for i in range(100):
        retriever.invoke(f"query {i}")
    assert len(cache) == 50


def _thirty_rules(rules: list[Rule]) -> list[Rule]:
    return [rules[0].model_copy(update={"rule_id": f"C{i}"}) for i in range(30)]


def test_max_concurrency_caps_a_batch_of_inputs(rules: list[Rule]) -> None:
    from langchain_tag.testing import fake_judge

    llm = fake_judge({"C1"}, delay=0.02)
    retriever = ApplicabilityRetriever(llm=llm, rules=_thirty_rules(rules)[:6], calibration=None)
    retriever.batch(["a = 1", "b = 2", "c = 3", "d = 4"], config={"max_concurrency": 2})
    assert llm.calls == 4 * 6 and 1 < llm.max_in_flight <= 2  # before: each input had its own 2 (8 in flight)


def test_the_bulk_jobs_max_concurrency_is_a_cap_on_requests(rules: list[Rule]) -> None:
    import asyncio

    from langchain_tag.scale.bulk import amatch_corpus, match_corpus
    from langchain_tag.testing import fake_judge

    inputs = [f"x = {i}" for i in range(6)]
    for limit in (4, 32):
        llm = fake_judge({"C1"}, delay=0.005)
        retriever = ApplicabilityRetriever(llm=llm, rules=_thirty_rules(rules), calibration=None)
        list(match_corpus(inputs, retriever, max_concurrency=limit))
        assert llm.calls == 6 * 30 and 1 < llm.max_in_flight <= limit
        async_llm = fake_judge({"C1"}, delay=0.005)
        retriever = ApplicabilityRetriever(llm=async_llm, rules=_thirty_rules(rules), calibration=None)

        async def run(retriever: ApplicabilityRetriever = retriever, limit: int = limit) -> None:
            async for _ in amatch_corpus(inputs, retriever, max_concurrency=limit):
                pass

        asyncio.run(run())
        assert async_llm.calls == 6 * 30 and 1 < async_llm.max_in_flight <= limit
    llm = fake_judge({"C1"}, delay=0.01)
    retriever = ApplicabilityRetriever(llm=llm, rules=_thirty_rules(rules)[:2], calibration=None, max_concurrency=3)
    list(match_corpus(inputs, retriever))  # no cap given: the retriever's own, over inputs in parallel
    assert 1 < llm.max_in_flight <= 3
