"""Malformed replies and provider faults in every extraction phase."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.documents import Document

import langchain_tag.calls._runner as calls_module
from langchain_tag.errors import ProviderError
from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.extraction.report import ExtractionResult
from langchain_tag.testing import FakeChatModel, Reply, fake_extraction_reply
from tests.unit_tests.faults import FAULTS, CountingEndpoint, injecting, named

POLICY = """Refunds
=======

Refunds must be requested within 30 days of purchase. Refunds should never be promised by phone.

Shipping
--------

Orders over 50 euros always ship free and tracked. Customers must never be charged twice for shipping or handling.

Appendix
--------

Orders over 50 euros always ship free and tracked.
"""

MARK = {1: 'Return {"labels"', 2: 'Return {"units"', 3: 'Return {"rules"', 4: 'Return {"pairs"'}
TARGET = "ship free"  # in two sections, their spans and units, and one of the two phase-4 tag groups


def _run(respond: Callable[[str], Reply], **kwargs: object) -> tuple[ExtractionResult, FakeChatModel]:
    llm = FakeChatModel(respond=respond)
    transformer = RuleDocumentTransformer(llm, retry_backoff=0.0, **kwargs)  # type: ignore[arg-type]
    return transformer.extract([Document(page_content=POLICY, id="policy")]), llm


def _targets(phase: int) -> Callable[[str], bool]:
    return lambda text: MARK[phase] in text and TARGET in text


def _check_faithful(result: ExtractionResult) -> None:
    for rule in result.rules:
        assert POLICY[rule.source_start : rule.source_end] == rule.source_text


CLEAN, CLEAN_LLM = _run(fake_extraction_reply)


def test_the_clean_run_touches_every_phase() -> None:
    assert len(CLEAN.rules) == 4 and CLEAN.report.merged and not CLEAN.report.failures
    assert CLEAN.report.coverage == 1.0  # the merged duplicate covers its own span, not its first occurrence
    for phase in MARK:
        assert sum(_targets(phase)(p) for p in CLEAN_LLM.prompts) >= 1
    assert sum(MARK[4] in p for p in CLEAN_LLM.prompts) == 2


def _wrong_ids(phase: int, good: str) -> str:
    data = json.loads(good)
    key = {1: "labels", 2: "units", 3: "rules", 4: "pairs"}[phase]
    for number, item in enumerate(data[key], start=99):
        for field in ("span", "id", "a"):
            if field in item and phase != 1:
                item[field] = {"span": "S-999", "id": "A-999", "a": "R-999"}[field]
        if phase == 1:  # sentence numbers that are not in the prompt
            item["n"] = number
    return json.dumps(data)


MALFORMED: dict[str, Callable[[int, str], str]] = {
    "not json": lambda phase, good: "Sorry, I cannot help with that.",
    "wrong fields": lambda phase, good: json.dumps({"answer": [{"verdict": 42}]}),
    "empty object": lambda phase, good: "{}",
    "ids that do not exist": _wrong_ids,
}


@pytest.mark.parametrize("phase", [1, 2, 3, 4])
@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_reply_in_any_phase_is_retried_then_skipped_and_reported(phase: int, kind: str) -> None:
    fault = MALFORMED[kind]
    result, _ = _run(injecting(fake_extraction_reply, when=_targets(phase), fault=lambda t, g: fault(phase, g)))
    report = result.report
    _check_faithful(result)
    assert result.rules  # the other sections' and calls' work survives
    if kind == "ids that do not exist" and phase == 3:  # one rule per unit, in order: repaired by position
        assert [r.model_dump() for r in result.rules] == [r.model_dump() for r in CLEAN.rules]
        return
    if kind == "ids that do not exist" and phase == 4:
        assert any("unknown" in n for n in report.notes)
    else:
        assert {f.phase for f in report.failures} == {phase}
        assert all(f.attempts == 2 for f in report.failures)
        assert "failed calls" in report.summary() and f"failed: phase {phase}" in report.summary()
    if phase == 1:  # the shipping rules are gone, and it shows
        assert not any(TARGET in r.source_text for r in result.rules)
        assert any(f.phase == 1 for f in report.failures)
    if phase == 2:  # spans are kept whole
        assert len(result.rules) == len(CLEAN.rules)
    if phase == 3:  # the units without rules are retried, then reported as uncovered
        assert report.uncovered_spans and any("no rule for" in n for n in report.notes)
    if phase == 4:  # the duplicate in the failed group is not merged; nothing else changes
        assert len(result.rules) == len(CLEAN.rules) + 1


@pytest.mark.parametrize("phase", [1, 2, 3, 4])
def test_reply_cut_off_at_the_end_is_repaired(phase: int) -> None:
    # Cut right after the last complete value: the closing brackets are lost, nothing else.
    result, _ = _run(injecting(fake_extraction_reply, when=_targets(phase), fault=lambda t, g: g.rstrip("]}")))
    assert [r.model_dump() for r in result.rules] == [r.model_dump() for r in CLEAN.rules]
    assert not result.report.failures


@pytest.mark.parametrize("phase", [1, 2, 3, 4])
def test_reply_cut_in_half_never_raises(phase: int) -> None:
    result, _ = _run(injecting(fake_extraction_reply, when=_targets(phase), fault=lambda t, g: g[: len(g) // 2]))
    _check_faithful(result)
    assert result.rules


@pytest.mark.parametrize("phase", [1, 2, 3, 4])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_flaky_provider_is_retried_with_backoff(phase: int, fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[int] = []
    monkeypatch.setattr(calls_module, "backoff_delay", lambda attempt, **kw: waits.append(attempt) or 0.0)
    result, llm = _run(
        injecting(fake_extraction_reply, when=_targets(phase), fault=lambda t, g: FAULTS[fault](), times=1)
    )
    assert [r.model_dump() for r in result.rules] == [r.model_dump() for r in CLEAN.rules]
    assert not result.report.failures
    faulted = sum(_targets(phase)(p) for p in CLEAN_LLM.prompts)
    assert llm.calls == CLEAN_LLM.calls + faulted
    assert waits and set(waits) == {1}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_persistent_fault_is_reported_naming_provider_and_call(fault: str) -> None:
    result, _ = _run(injecting(fake_extraction_reply, when=_targets(3), fault=lambda t, g: FAULTS[fault]()))
    failures = result.report.failures
    assert failures and all(f.phase == 3 and f.attempts == 2 for f in failures)
    assert all(named(FAULTS[fault]()) in f.error and "FakeChatModel" in f.error for f in failures)
    assert result.rules and result.report.uncovered_spans


def test_every_call_failing_is_an_error_naming_provider_and_call() -> None:
    with pytest.raises(ProviderError) as caught:
        _run(lambda text: FAULTS["429"]())
    message = str(caught.value)
    assert "span detection call failed at FakeChatModel" in message
    assert "phase 1 (span detection) call 'policy#" in message and "after 2 attempt(s)" in message
    assert "HTTP 429: Rate limit reached" in message


class RetryingClient(FakeChatModel):
    """A model whose own client retries transport faults (like ChatOpenAI)."""

    max_retries: int = 2


def test_faults_the_client_already_retried_are_not_sent_again() -> None:
    respond = injecting(fake_extraction_reply, when=_targets(3), fault=lambda t, g: FAULTS["503"]())
    llm = RetryingClient(respond=respond)
    result = RuleDocumentTransformer(llm, retry_backoff=0.0).extract([Document(page_content=POLICY, id="policy")])
    assert result.report.failures and all(f.attempts == 1 for f in result.report.failures)
    # ...but a garbage reply from it is still retried.
    llm = RetryingClient(respond=injecting(fake_extraction_reply, when=_targets(3), fault=lambda t, g: "??"))
    result = RuleDocumentTransformer(llm).extract([Document(page_content=POLICY, id="policy")])
    assert result.report.failures and all(f.attempts == 2 for f in result.report.failures)


async def test_async_path_handles_faults_the_same_way() -> None:
    respond = injecting(fake_extraction_reply, when=_targets(2), fault=lambda t, g: FAULTS["timeout"](), times=1)
    transformer = RuleDocumentTransformer(FakeChatModel(respond=respond), retry_backoff=0.0)
    result = await transformer.aextract([Document(page_content=POLICY, id="policy")])
    assert [r.model_dump() for r in result.rules] == [r.model_dump() for r in CLEAN.rules]
    with pytest.raises(ProviderError, match="every span detection call failed"):
        await RuleDocumentTransformer(FakeChatModel(respond=lambda t: FAULTS["reset"]()), retry_backoff=0.0).aextract(
            [Document(page_content=POLICY, id="policy")]
        )


@pytest.mark.parametrize("phase", [1, 2, 3, 4])
@pytest.mark.parametrize("fault", ["429", "garbage"])
def test_requests_per_prompt_for_each_fault_class_with_a_default_chat_openai(phase: int, fault: str) -> None:
    endpoint = CountingEndpoint(
        lambda text: (429 if fault == "429" else "Sorry.") if _targets(phase)(text) else fake_extraction_reply(text)
    )
    transformer = RuleDocumentTransformer(endpoint.model(), retry_backoff=0.0)  # max_retries left at None
    result = transformer.extract([Document(page_content=POLICY, id="policy")])
    assert {f.phase for f in result.report.failures} == {phase}
    # A 429 is retried by the client only (1 + 2); garbage by the call runner only (1 + 1); no pass sends it again.
    assert endpoint.most_requests(_targets(phase)) == (3 if fault == "429" else 2)
    assert endpoint.most_requests(lambda text: not _targets(phase)(text)) == 1


TRUNCATED_OR_WRONG: dict[str, Callable[[str], str]] = {
    "cut to 60 %": lambda good: good[: len(good) * 6 // 10],
    "wrong field": lambda good: good.replace('"labels"', '"kinds"'),
}


@pytest.mark.parametrize("kind", sorted(TRUNCATED_OR_WRONG))
def test_a_lossy_phase1_reply_is_a_failure_never_stored_and_a_rerun_recovers_every_rule(
    kind: str, tmp_path: Path
) -> None:
    store = tmp_path / "store.sqlite"
    lossy = injecting(fake_extraction_reply, when=_targets(1), fault=lambda t, g: TRUNCATED_OR_WRONG[kind](g))
    broken, _ = _run(lossy, store=store)
    assert {(f.phase, f.attempts) for f in broken.report.failures} == {(1, 2)}
    assert "failed calls" in broken.report.summary()
    healthy, llm = _run(fake_extraction_reply, store=store)
    assert [r.model_dump() for r in healthy.rules] == [r.model_dump() for r in CLEAN.rules]
    assert not healthy.report.failures and llm.calls >= 1  # the failed call was not stored, so it is sent again


@pytest.mark.parametrize("reply", ["{" * 100_000, "[" * 100_000 + "]" * 100_000, '{"labels": ' * 20_000])
def test_huge_or_deeply_nested_replies_fail_fast_without_crashing(reply: str) -> None:
    start = time.perf_counter()
    result, _ = _run(injecting(fake_extraction_reply, when=_targets(3), fault=lambda t, g: reply))
    assert {f.phase for f in result.report.failures} == {3}
    assert time.perf_counter() - start < 10


def test_a_document_of_headings_only_gives_no_rules_and_no_crash() -> None:
    result = RuleDocumentTransformer(FakeChatModel(respond=fake_extraction_reply)).extract(
        [Document(page_content="Policy\n======\n\nScope\n-----\n", id="headings")]
    )
    assert result.rules == [] and not result.report.failures
    assert any("headings only" in n for n in result.report.notes)
