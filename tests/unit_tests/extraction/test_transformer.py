from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable

import pytest
from langchain_core.documents import Document

from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, fake_extraction_reply, fake_extractor

POLICY = """Refund policy
=============

Refunds must be requested within 30 days of purchase. Refunds should never be promised by phone.

Shipping
--------

Orders over 50 euros always ship free. Customers must never be charged twice for shipping.
Our company was founded in 1990 and has grown since.
"""


ABLATION_POLICY = """Refunds
=======

Refunds must be requested within 30 days.

Refunds should never be promised by phone or by email.

History
-------

Refunds were introduced in 1990, when the company was founded.
"""


def _doc(text: str = POLICY, doc_id: str = "policy") -> Document:
    return Document(page_content=text, id=doc_id)


def test_full_run_gives_rules_traceable_to_the_source() -> None:
    transformer = RuleDocumentTransformer(fake_extractor(), domain="customer service", min_section_chars=0)
    docs = transformer.transform_documents([_doc()])
    rules = [Rule.from_document(d) for d in docs]
    assert len(rules) == 4
    for rule in rules:
        assert POLICY[rule.source_start : rule.source_end] == rule.source_text
        assert rule.document_id == "policy" and rule.span_id and rule.atomic_id
    assert not any("founded" in r.source_text for r in rules)
    report = transformer.last_result.report
    assert (report.faithfulness, report.coverage, report.independence) == (1.0, 1.0, 1.0)
    assert report.counts["rules"] == 4 and report.usage[1].calls == 2  # one call per section


async def test_async_gives_the_same_rules_as_sync() -> None:
    sync = RuleDocumentTransformer(fake_extractor()).transform_documents([_doc()])
    async_ = await RuleDocumentTransformer(fake_extractor(delay=0.005)).atransform_documents([_doc()])
    assert [d.metadata for d in sync] == [d.metadata for d in async_]


@pytest.mark.parametrize("skip", [{1}, {2}, {3}, {4}, {5}])
def test_each_phase_can_be_switched_off(skip: set[int]) -> None:
    llm = fake_extractor()
    transformer = RuleDocumentTransformer(llm, skip_phases=skip)
    rules = transformer.extract([_doc(ABLATION_POLICY)]).rules
    asked = {
        key
        for key in ('{"labels"', '{"units"', '{"rules"', '{"pairs"')
        if any(f"Return {key}" in p for p in llm.prompts)
    }
    phase_key = {1: '{"labels"', 2: '{"units"', 3: '{"rules"', 4: '{"pairs"'}
    for phase, key in phase_key.items():
        assert (key in asked) == (phase not in skip)
    assert rules
    report = transformer.last_result.report
    assert report.skipped_phases == tuple(sorted(skip))
    if 5 in skip:
        assert report.faithfulness is None and all(r.source_start is None for r in rules)
    if 3 in skip:
        assert all(r.condition == r.action for r in rules)
    if 1 in skip:  # paragraphs become spans: the history sentence is in one
        assert any("founded" in r.source_text for r in rules)


def test_phase4_merges_duplicates() -> None:
    text = POLICY + "\nAppendix\n--------\n\nRefunds must be requested within 30 days of purchase.\n"
    transformer = RuleDocumentTransformer(fake_extractor(), min_section_chars=0)
    rules = transformer.extract([_doc(text)]).rules
    merged = [r for r in rules if r.merged_from]
    assert len(merged) == 1 and transformer.last_result.report.merged


def test_phase4_keeps_rules_a_model_wrongly_calls_duplicates_and_reports_it() -> None:
    # A small model's habit: every rule of a tag group is a "duplicate" of the first.
    def reply(prompt: str) -> str:
        if 'Return {"pairs"' not in prompt:
            return fake_extraction_reply(prompt)
        ids = re.findall(r'"rule_id": "(R-\d+)"', prompt)
        return json.dumps(
            {"pairs": [{"a": ids[0], "b": other, "relation": "duplicate", "do": "merge"} for other in ids[1:]]}
        )

    text = "Refunds\n=======\n\nRefunds must be requested within 30 days.\n\nRefunds must be paid within 14 days.\n"
    transformer = RuleDocumentTransformer(FakeChatModel(respond=reply), min_section_chars=0)
    result = transformer.extract([_doc(text)])
    assert len(result.rules) == 2 and not result.report.merged
    assert any("kept both" in note and "'30'" in note for note in result.report.notes)


def test_empty_and_binary_documents_are_refused_before_any_call() -> None:
    llm = fake_extractor()
    with pytest.raises(ValueError, match="'blank' is empty"):
        RuleDocumentTransformer(llm).transform_documents([_doc(), _doc("  \n ", "blank")])
    with pytest.raises(ValueError, match="NUL bytes"):
        RuleDocumentTransformer(llm).transform_documents([_doc("abc\x00def", "bin")])
    assert llm.calls == 0


def test_unknown_phase_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown phase"):
        RuleDocumentTransformer(fake_extractor(), skip_phases={6})


def test_garbage_in_every_phase_never_raises_and_is_reported() -> None:
    llm = FakeChatModel(respond=lambda text: "Sorry, I can't help with that.")
    transformer = RuleDocumentTransformer(llm)
    result = transformer.extract([_doc()])
    assert result.rules == []
    assert {f.phase for f in result.report.failures} == {1}
    assert all(f.attempts == 2 for f in result.report.failures)


def test_truncated_json_is_repaired() -> None:
    def respond(text: str) -> str:
        reply = fake_extraction_reply(text)
        return reply[:-3] if 'Return {"rules"' in text else reply  # cut off mid-array

    result = RuleDocumentTransformer(FakeChatModel(respond=respond)).extract([_doc()])
    assert len(result.rules) == 4 and not result.report.failures


def test_spans_are_the_labelled_sentences_verbatim_and_background_gives_none() -> None:
    def respond(text: str) -> str:
        if 'Return {"labels"' in text and "Refunds must" in text:
            count = int(re.search(r'"1" to "(\d+)"', text).group(1))  # type: ignore[union-attr]
            labels = ["requirement"] + ["background"] * (count - 1)
            return json.dumps({"labels": {str(i): x for i, x in enumerate(labels, 1)}})
        return fake_extraction_reply(text)

    result = RuleDocumentTransformer(FakeChatModel(respond=respond)).extract([_doc()])
    first = result.spans[0]
    assert POLICY[first.start : first.end] == first.text and first.text.startswith("Refunds must be requested")
    section_spans = [s for s in result.spans if s.section_id == first.section_id]
    assert section_spans == [first]  # the sentences labelled background gave no span
    assert all(POLICY[s.start : s.end] == s.text for s in result.spans)


def _dropping(times: int | None) -> tuple[FakeChatModel, Callable[[], int]]:
    """A fake extractor whose phase-3 replies leave out the "twice" unit, the first ``times`` times (``None``: always)."""
    seen = {"n": 0}
    lock = threading.Lock()

    def respond(text: str) -> str:
        reply = fake_extraction_reply(text)
        if 'Return {"rules"' not in text or "twice" not in text:
            return reply
        with lock:
            seen["n"] += 1
            if times is not None and seen["n"] > times:
                return reply
        return json.dumps({"rules": [r for r in json.loads(reply)["rules"] if "twice" not in r["action"]]})

    return FakeChatModel(respond=respond), lambda: seen["n"]


def test_a_rules_reply_missing_a_unit_is_a_failed_call_retried_once() -> None:
    llm, sent = _dropping(times=1)
    result = RuleDocumentTransformer(llm, retry_backoff=0.0).extract([_doc()])
    assert any("twice" in r.source_text for r in result.rules)  # recovered by the call's retry
    assert result.report.coverage == 1.0 and not result.report.failures
    assert sent() == 2


def test_a_unit_still_missing_after_the_retry_is_reported_and_never_sent_again() -> None:
    llm, sent = _dropping(times=None)
    report = RuleDocumentTransformer(llm, retry_backoff=0.0).extract([_doc()]).report
    assert "Customers must never be charged twice for shipping." in [s.text for s in report.uncovered_spans]
    assert [(f.phase, f.attempts) for f in report.failures] == [(3, 2)]
    assert "complete rules for" in report.failures[0].error and any("no rule for" in n for n in report.notes)
    assert sent() == 2  # no second pass and no phase-5 redo of a failed call


def test_concurrency_is_bounded() -> None:
    llm = fake_extractor(delay=0.01)
    text = "\n\n".join(f"Section {i}\n{'=' * 10}\n\nStaff must file form {i} daily." for i in range(12))
    RuleDocumentTransformer(llm, max_concurrency=3, min_section_chars=0).extract([_doc(text)])
    assert 1 < llm.max_in_flight <= 3


def test_documents_keep_distinct_ids() -> None:
    result = RuleDocumentTransformer(fake_extractor(), skip_phases={4}).extract(
        [_doc(doc_id="same"), _doc(doc_id="same")]
    )
    assert {r.document_id for r in result.rules} == {"same", "same#2"}


def test_a_span_whose_statement_asks_nothing_is_left_out_without_hurting_coverage() -> None:
    def respond(text: str) -> str:
        reply = fake_extraction_reply(text)
        if 'Return {"rules"' in text and "phone" in text:
            data = json.loads(reply)
            for rule in data["rules"]:
                if "phone" in rule["action"]:
                    rule["violation"] = "none"
            reply = json.dumps(data)
        return reply

    clean = RuleDocumentTransformer(fake_extractor()).extract([_doc()])
    result = RuleDocumentTransformer(FakeChatModel(respond=respond)).extract([_doc()])
    assert len(result.rules) == len(clean.rules) - 1 and not any("phone" in r.source_text for r in result.rules)
    assert result.report.coverage == 1.0 and result.report.counts["units stating no rule"] == 1
    assert any("states no rule" in n for n in result.report.notes)
    assert not any("phone" in s.text for s in result.spans)


def test_rule_ids_namespaced_per_source_merge_without_collisions() -> None:
    from langchain_tag.rules import rules_from_documents

    def run(doc_id: str) -> list[Document]:
        return list(
            RuleDocumentTransformer(fake_extractor(), rule_id_prefix=None).transform_documents([_doc(doc_id=doc_id)])
        )

    refunds, shipping = run("refunds.md"), run("shipping-policy.md")
    assert refunds and all(d.metadata["rule_id"].startswith("REFUNDS-") for d in refunds)
    assert all(d.metadata["rule_id"].startswith("SHIPPING-POLICY-") for d in shipping)
    assert len(rules_from_documents(refunds + shipping)) == len(refunds) + len(shipping)  # no duplicate id
    default = RuleDocumentTransformer(fake_extractor()).transform_documents([_doc()])
    assert default[0].metadata["rule_id"] == "R-001"


def test_a_condition_that_restates_its_instruction_is_named_in_the_report() -> None:
    def respond(text: str) -> str:
        reply = fake_extraction_reply(text)
        if 'Return {"rules"' not in text:
            return reply
        rules = json.loads(reply)["rules"]
        for rule in rules:  # the model copied the statement's instruction into one violation, described the rest
            rule["violation"] = (
                "customers must never be charged twice for shipping" if "twice" in rule["action"] else "a late refund"
            )
        return json.dumps({"rules": rules})

    llm = FakeChatModel(respond=respond)
    result = RuleDocumentTransformer(llm, retry_backoff=0.0).extract([_doc()])
    flagged = [n for n in result.report.notes if "restates its statement's instruction" in n]
    assert len(flagged) == 1 and "charged twice" in flagged[0] and "check its polarity" in flagged[0]
    assert any(
        r.condition == "the input contains customers must never be charged twice for shipping" for r in result.rules
    )
    assert not any("restates" in p for p in llm.prompts)  # a note, not another call
