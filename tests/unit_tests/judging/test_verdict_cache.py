"""Verdict caches: repeated pairs cost no call; the key covers model, prompt, input and the rule as judged."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.documents import Document

from langchain_tag.calls._identity import IDENTITY_METADATA_KEY, model_identity
from langchain_tag.errors import TagError
from langchain_tag.judging.chat import ChatJudge
from langchain_tag.judging.results import Reading
from langchain_tag.judging.verdict_cache import (
    InMemoryVerdictCache,
    SQLiteVerdictCache,
    VerdictCacheError,
    verdict_key,
)
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, fake_judge, judged_rule_id
from tests.helpers.threads import run_together

QUERY = "def f(x=[]):\n    return x"


def test_repeated_query_costs_no_call(rule_docs: list[Document]) -> None:
    judge = fake_judge({"R-004"}, with_logprobs=True)
    retriever = ApplicabilityRetriever(llm=judge, rules=rule_docs)
    first = retriever.match(QUERY)
    assert judge.calls == 5 and first.cache_hits == 0
    second = retriever.match(QUERY)
    assert judge.calls == 5 and second.cache_hits == 5 and second.calls == 0
    assert [(j.rule_id, j.applies, j.p_yes) for j in second.judgments] == [
        (j.rule_id, j.applies, j.p_yes) for j in first.judgments
    ]
    assert [d.metadata["rule_id"] for d in retriever.invoke(QUERY)] == ["R-004"]
    retriever.match(QUERY + " ")  # another input is another key
    assert judge.calls == 10


def test_cache_none_judges_every_time(rule_docs: list[Document]) -> None:
    judge = fake_judge({"R-004"})
    retriever = ApplicabilityRetriever(llm=judge, rules=rule_docs, cache=None)
    retriever.match(QUERY)
    retriever.match(QUERY)
    assert judge.calls == 10


def test_threshold_is_applied_to_cached_probabilities(rule_docs: list[Document]) -> None:
    cache = InMemoryVerdictCache()
    judge = FakeChatModel(
        respond=lambda text: ("YES", 0.7) if judged_rule_id(text) == "R-004" else ("NO", 0.1), with_logprobs=True
    )
    loose = ApplicabilityRetriever(llm=judge, rules=rule_docs, cache=cache, threshold=0.5)
    strict = ApplicabilityRetriever(llm=judge, rules=rule_docs, cache=cache, threshold=0.9)
    assert [j.rule_id for j in loose.match(QUERY).matched] == ["R-004"]
    again = strict.match(QUERY)
    assert judge.calls == 5 and again.cache_hits == 5
    assert again.matched == []


def test_key_covers_the_rule_as_judged_and_the_prompt(rules: list[Rule]) -> None:
    cache = InMemoryVerdictCache()
    judge = fake_judge({"R-004"})
    ChatJudge(judge, cache=cache).judge(QUERY, rules)
    assert judge.calls == 5
    # The applicability judge never sees the action: editing it keeps the verdict.
    new_action = [r.model_copy(update={"action": "something else"}) for r in rules]
    ChatJudge(judge, cache=cache).judge(QUERY, new_action)
    assert judge.calls == 5
    # Editing a condition is a new pair.
    edited = [rules[0].model_copy(update={"condition": "a different condition"}), *rules[1:]]
    ChatJudge(judge, cache=cache).judge(QUERY, edited)
    assert judge.calls == 6
    # The relevance judge sees the action, and is another prompt: all new pairs.
    ChatJudge(judge, "relevance", cache=cache).judge(QUERY, rules)
    assert judge.calls == 11
    # Another model is another key.
    assert verdict_key(model="a", prompt_version="v", verdict_format="token", query="q", rule_text="r") != verdict_key(
        model="b", prompt_version="v", verdict_format="token", query="q", rule_text="r"
    )


def test_model_identity() -> None:
    remote = SimpleNamespace(model_name="deepseek-chat", openai_api_base="https://api.deepseek.com/v1/")
    local = SimpleNamespace(model_name="qwen-1.5b.gguf", openai_api_base="http://127.0.0.1:41234/v1")
    other_port = SimpleNamespace(model_name="qwen-1.5b.gguf", openai_api_base="http://127.0.0.1:41235/v1")
    embedded = SimpleNamespace(
        model_name="qwen-1.5b.gguf",
        openai_api_base="http://127.0.0.1:41234/v1",
        metadata={IDENTITY_METADATA_KEY: "q.gguf"},
    )
    assert model_identity(remote) == "https://api.deepseek.com/v1/deepseek-chat"
    # A local server names its model, not its port: with no server answering, the model name alone, on any port
    # (what the server reports about itself refines it: tests/unit_tests/calls/test_identity.py).
    assert model_identity(local) == "qwen-1.5b.gguf" == model_identity(other_port)
    assert model_identity(embedded) == "q.gguf"  # the embedded model: its file, whatever its port
    assert model_identity(fake_judge(())) == "FakeChatModel"


def test_failed_judgments_are_not_cached(rules: list[Rule]) -> None:
    cache = InMemoryVerdictCache()
    garbage = FakeChatModel(respond=lambda text: "hmm" if judged_rule_id(text) == "R-001" else "NO")
    result = ChatJudge(garbage, cache=cache).judge(QUERY, rules)
    assert [j.rule_id for j in result.failed] == ["R-001"] and len(cache) == 4
    again = ChatJudge(garbage, cache=cache).judge(QUERY, rules)
    assert again.cache_hits == 4 and again.calls == 2  # only R-001 asked again (and retried once)


def test_sqlite_cache_persists_and_is_shared_across_threads(rules: list[Rule], tmp_path: Path) -> None:
    path = tmp_path / "sub" / "verdicts.sqlite"
    judge = fake_judge({"R-004"}, with_logprobs=True)
    ChatJudge(judge, cache=SQLiteVerdictCache(path), max_concurrency=4).judge(QUERY, rules)
    assert judge.calls == 5
    reopened = SQLiteVerdictCache(path)
    assert len(reopened) == 5
    result = ChatJudge(judge, cache=reopened).judge(QUERY, rules)
    assert judge.calls == 5 and [j.rule_id for j in result.matched] == ["R-004"]
    assert result.matched[0].p_yes == pytest.approx(0.9)
    # Many threads writing and reading one file.

    def work(n: int) -> None:
        cache = SQLiteVerdictCache(path)
        for i in range(20):
            cache.put(f"k{n}-{i}", Reading(word=i % 2 == 0, p_yes=i / 20))
            assert cache.get(f"k{n}-{i}") == Reading(word=i % 2 == 0, p_yes=i / 20)

    errors = run_together(work, 4)
    assert errors == [] and len(SQLiteVerdictCache(path)) == 5 + 80


def test_in_memory_cache_evicts_least_recently_used() -> None:
    cache = InMemoryVerdictCache(max_size=2)
    cache.put("a", Reading(word=True))
    cache.put("b", Reading(word=False))
    assert cache.get("a") == Reading(word=True)  # a is now the most recent
    cache.put("c", Reading(word=True))
    assert cache.get("b") is None and cache.get("a") is not None and len(cache) == 2
    assert (cache.hits, cache.misses) == (2, 1)
    with pytest.raises(ValueError, match="max_size"):
        InMemoryVerdictCache(max_size=0)


async def test_async_path_uses_the_cache(rule_docs: list[Document]) -> None:
    judge = fake_judge({"R-004"})
    retriever = ApplicabilityRetriever(llm=judge, rules=rule_docs)
    await retriever.amatch(QUERY)
    again = await retriever.amatch(QUERY)
    assert judge.calls == 5 and again.cache_hits == 5


UNREADABLE = ["It applies only to other inputs; here it does not.", "Yes, no.", '{"verdict": ["YES"]}', "Not sure."]


@pytest.mark.parametrize("reply", UNREADABLE)
def test_an_unreadable_reply_is_never_cached_and_a_healthy_server_is_asked_again(
    reply: str, rules: list[Rule], tmp_path: Path
) -> None:
    cache = SQLiteVerdictCache(tmp_path / "verdicts.sqlite")
    broken = FakeChatModel(respond=lambda text: reply)
    result = ChatJudge(broken, cache=cache, retry_backoff=0.0).judge(QUERY, rules)
    assert not result.matched and len(result.failed) == 5 and broken.calls == 10  # retried once each
    assert len(cache) == 0
    healthy = fake_judge({"R-004"})
    again = ChatJudge(healthy, cache=cache).judge(QUERY, rules)
    assert healthy.calls == 5 and again.cache_hits == 0
    assert [j.rule_id for j in again.matched] == ["R-004"] and not again.failed


def test_a_cached_probability_that_is_not_one_is_judged_again(rules: list[Rule]) -> None:
    judge = fake_judge({"R-004"}, with_logprobs=True)
    cache = InMemoryVerdictCache()
    first = ChatJudge(judge, cache=cache)
    keys = [r.key for r in first.requests(QUERY, rules)]
    for key in keys:
        cache.put(key, Reading(word=True, p_yes=float("nan"), reply="YES"))  # as an older reader stored it
    result = first.judge(QUERY, rules)
    assert judge.calls == 5 and result.cache_hits == 0 and [j.rule_id for j in result.matched] == ["R-004"]


# --------------------------------------------------------------------------------------------- writing in transactions


def counting_commits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every COMMIT the verdict caches' connections run from now on, through SQLite's trace callback."""
    import langchain_tag.calls._sqlite_file as sqlite_file

    commits: list[str] = []
    connect = sqlite_file.sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> Any:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: commits.append(sql) if sql.strip().upper() == "COMMIT" else None)
        return conn

    monkeypatch.setattr(sqlite_file.sqlite3, "connect", traced)
    return commits


def test_sqlite_cache_commits_many_verdicts_per_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "verdicts.sqlite"
    commits = counting_commits(monkeypatch)
    cache = SQLiteVerdictCache(path)  # the defaults: 64 verdicts or 0.2 s a transaction
    opening = len(commits)  # creating the tables
    for i in range(200):
        cache.put(f"k{i}", Reading(word=i % 2 == 0, p_yes=i / 200, reply="YES"))
        assert cache.get(f"k{i}") == Reading(word=i % 2 == 0, p_yes=i / 200, reply="YES")  # pending puts are read back
    cache.close()  # commits the rest
    # 200 // 64 = 3 full transactions, then the rest (and maybe one or two after 0.2 s)
    assert len(commits) - opening <= 6, f"{len(commits) - opening} commits for 200 puts"
    assert len(SQLiteVerdictCache(path)) == 200


def test_sqlite_cache_commits_pending_verdicts_after_the_interval_and_at_the_end_of_a_judging(
    tmp_path: Path, rules: list[Rule]
) -> None:
    path = tmp_path / "verdicts.sqlite"
    cache = SQLiteVerdictCache(path, flush_every=1000, flush_interval=0.05)
    cache.put("a", Reading(word=True, p_yes=0.9, reply="YES"))
    other = SQLiteVerdictCache(path)  # another process's view: committed rows only
    deadline = time.monotonic() + 5
    while other.get("a") is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert other.get("a") == Reading(word=True, p_yes=0.9, reply="YES")
    # A judging that returned has its verdicts on disk, whatever the interval.
    slow = SQLiteVerdictCache(path, flush_every=1000, flush_interval=3600)
    ChatJudge(fake_judge({"R-004"}), cache=slow).judge(QUERY, rules)
    assert len(SQLiteVerdictCache(path, flush_interval=3600)) == 1 + len(rules)
    with pytest.raises(ValueError, match="flush_every"):
        SQLiteVerdictCache(path, flush_every=0)


def test_a_verdict_cache_that_cannot_write_stops_the_judging_naming_its_file(tmp_path: Path, rules: list[Rule]) -> None:
    path = tmp_path / "verdicts.sqlite"
    cache = SQLiteVerdictCache(path, timeout=0.05)
    holder = sqlite3.connect(path)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with pytest.raises(VerdictCacheError, match=re.escape(str(path))) as caught:
            ChatJudge(fake_judge({"R-004"}), cache=cache).judge(QUERY, rules)
        assert "database is locked" in str(caught.value) and isinstance(caught.value, TagError)
    finally:
        holder.rollback()
        holder.close()
    # The lock gone, the verdicts held back are committed.
    cache.flush()
    assert len(SQLiteVerdictCache(path)) == len(rules)


class FullDisk(InMemoryVerdictCache):
    """A cache whose every write fails as SQLite's on a full disk."""

    path = Path("full.sqlite")

    def put(self, key: str, verdict: Reading) -> None:
        raise sqlite3.OperationalError("database or disk is full")


def test_a_failing_put_is_raised_not_logged(rules: list[Rule]) -> None:
    judge = fake_judge({"R-004"})
    with pytest.raises(VerdictCacheError, match=r"full\.sqlite: database or disk is full"):
        ChatJudge(judge, cache=FullDisk()).judge(QUERY, rules)
    assert judge.calls == len(rules)  # the replies of the run came, none was asked twice


def test_verdicts_kept_by_another_version_of_the_reader_are_judged_again(
    rules: list[Rule], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_tag.judging import verdict_cache

    path = tmp_path / "verdicts.sqlite"
    monkeypatch.setattr(verdict_cache, "READER_VERSION", "an older reader")
    older = ApplicabilityRetriever(
        llm=fake_judge({"R-002"}), rules=rules, calibration=None, cache=SQLiteVerdictCache(path)
    )
    assert [d.id for d in older.invoke("q")] == ["R-002"]  # what that version read (wrongly), kept in the file
    monkeypatch.undo()
    judge = fake_judge({"R-001"})
    now = ApplicabilityRetriever(llm=judge, rules=rules, calibration=None, cache=SQLiteVerdictCache(path))
    assert [d.id for d in now.invoke("q")] == ["R-001"] and judge.calls == len(rules)
