"""The judge cascade: which pairs reach the strong judge, whose verdict stands, and how the band is chosen."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from langchain_tag.cascade_retriever import CascadeRetriever
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.cascade import JUDGE_KEY, STRONG_SHARE_KEY, Band, cascade_decisions, choose_band
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, fake_judge, judged_rule_id

# The cheap judge's P(YES) per rule; with calibration=None the score is P(YES) and the threshold 0.5.
CHEAP_P = {"R-001": 0.95, "R-002": 0.55, "R-003": 0.45, "R-004": 0.05, "R-005": 0.6}
# The strong judge says YES to these (P(YES) 0.9, else 0.1).
STRONG_YES = {"R-001", "R-003"}


def _cheap_reply(text: str) -> tuple[str, float] | str:
    rule_id = judged_rule_id(text) or ""
    if rule_id not in CHEAP_P:
        return "I cannot tell."
    p_yes = CHEAP_P[rule_id]
    return ("YES" if p_yes >= 0.5 else "NO", p_yes)


def _judged(llm: FakeChatModel) -> list[str]:
    return sorted(judged_rule_id(p) or "?" for p in llm.prompts)


def _cascade(rules: list[Rule], low: float = 0.4, high: float = 0.58, **kwargs: Any) -> CascadeRetriever:
    cheap_llm = kwargs.pop("cheap_llm", None) or FakeChatModel(respond=_cheap_reply, with_logprobs=True)
    strong_llm = kwargs.pop("strong_llm", None) or fake_judge(STRONG_YES, with_logprobs=True)
    cheap = ApplicabilityRetriever(llm=cheap_llm, rules=rules, calibration=None)
    strong = ApplicabilityRetriever(llm=strong_llm, rules=rules, calibration=None)
    return CascadeRetriever(cheap=cheap, strong=strong, low=low, high=high, **kwargs)


def test_only_band_pairs_reach_the_strong_judge(rules: list[Rule]) -> None:
    retriever = _cascade(rules)
    docs = retriever.invoke("import os, sys")
    cheap_llm, strong_llm = retriever.cheap.llm, retriever.strong.llm
    assert isinstance(cheap_llm, FakeChatModel) and isinstance(strong_llm, FakeChatModel)
    assert _judged(cheap_llm) == sorted(CHEAP_P)
    assert _judged(strong_llm) == ["R-002", "R-003"]  # 0.55 and 0.45 lie in [0.4, 0.58]; 0.6 does not
    # R-001 (cheap YES, outside), R-003 (strong YES replaces cheap NO), R-005 (cheap YES, outside); R-002's
    # cheap YES is replaced by the strong NO.
    assert [d.id for d in docs] == ["R-001", "R-003", "R-005"]
    assert {d.id: d.metadata[JUDGE_KEY] for d in docs} == {"R-001": "cheap", "R-003": "strong", "R-005": "cheap"}
    assert all(d.metadata[STRONG_SHARE_KEY] == pytest.approx(0.4) for d in docs)
    assert all(d.metadata["tag_verdict"] == "YES" for d in docs)


def test_match_reports_routes_share_and_calls(rules: list[Rule]) -> None:
    result = _cascade(rules).match("q")
    assert result.sent == ["R-002", "R-003"]
    assert result.routes == {"R-001": "cheap", "R-002": "strong", "R-003": "strong", "R-004": "cheap", "R-005": "cheap"}
    assert result.strong_share == pytest.approx(0.4)
    assert (result.cheap_calls, result.strong_calls, result.calls) == (5, 2, 7)
    assert [j.rule_id for j in result.judgments] == ["R-001", "R-002", "R-003", "R-004", "R-005"]
    assert {j.rule_id for j in result.matched} == {"R-001", "R-003", "R-005"}
    assert result.strong is not None and [j.rule_id for j in result.strong.judgments] == ["R-002", "R-003"]
    by_id = {j.rule_id: j for j in result.judgments}
    assert by_id["R-003"].p_yes == pytest.approx(0.9)  # the strong judgment replaced the cheap one
    assert by_id["R-005"].p_yes == pytest.approx(0.6)


def test_no_band_pair_makes_no_strong_call(rules: list[Rule]) -> None:
    retriever = _cascade(rules, low=0.7, high=0.8)
    result = retriever.match("q")
    assert result.strong is None and result.sent == [] and result.strong_share == 0.0
    strong_llm = retriever.strong.llm
    assert isinstance(strong_llm, FakeChatModel) and strong_llm.calls == 0


def test_full_band_equals_the_strong_judge(rules: list[Rule]) -> None:
    docs = _cascade(rules, low=0.0, high=1.0).invoke("q")
    assert sorted(str(d.id) for d in docs) == sorted(STRONG_YES)
    assert all(d.metadata[JUDGE_KEY] == "strong" and d.metadata[STRONG_SHARE_KEY] == 1.0 for d in docs)


def test_async_matches_sync(rules: list[Rule]) -> None:
    retriever = _cascade(rules)
    docs = asyncio.run(retriever.ainvoke("q"))
    assert [(d.id, d.metadata[JUDGE_KEY]) for d in docs] == [
        ("R-001", "cheap"),
        ("R-003", "strong"),
        ("R-005", "cheap"),
    ]
    result = asyncio.run(retriever.amatch("q"))
    assert result.sent == ["R-002", "R-003"]
    assert retriever.last_match is not None and retriever.last_match.sent == ["R-002", "R-003"]


def test_k_caps_documents(rules: list[Rule]) -> None:
    retriever = _cascade(rules, k=1)
    assert [d.id for d in retriever.invoke("q")] == ["R-001"]
    assert len(retriever.invoke("q", k=2)) == 2


def test_unscored_cheap_pairs_go_to_the_strong_judge(rules: list[Rule]) -> None:
    def respond(text: str) -> tuple[str, float] | str:
        return "¯\\_(ツ)_/¯" if judged_rule_id(text) == "R-004" else _cheap_reply(text)

    result = _cascade(rules, cheap_llm=FakeChatModel(respond=respond, with_logprobs=True)).match("q")
    assert result.sent == ["R-002", "R-003", "R-004"]
    assert result.routes["R-004"] == "strong" and result.failed == []


def test_failed_strong_judgment_falls_back_to_cheap(rules: list[Rule]) -> None:
    def respond(text: str) -> tuple[str, float] | str:
        rule_id = judged_rule_id(text)
        if rule_id == "R-002":
            return "¯\\_(ツ)_/¯"
        return ("YES", 0.9) if rule_id in STRONG_YES else ("NO", 0.1)

    strong_llm = FakeChatModel(respond=respond, with_logprobs=True)
    result = _cascade(rules, strong_llm=strong_llm).match("q")
    assert result.routes["R-002"] == "cheap" and "R-002" in result.sent
    assert "R-002" in {j.rule_id for j in result.matched}  # the cheap YES stands
    counted_no = _cascade(rules, strong_llm=strong_llm, fallback=False).match("q")
    assert counted_no.routes["R-002"] == "strong"
    assert [j.rule_id for j in counted_no.failed] == ["R-002"]


class _Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tags: list[list[str]] = []
        self.events: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, *, tags: list[str] | None = None, **kw: Any) -> None:
        self.tags.append(list(tags or []))

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append(name)


def test_callbacks_reach_both_judges_tagged(rules: list[Rule]) -> None:
    recorder = _Recorder()
    _cascade(rules).invoke("q", config={"callbacks": [recorder]})
    cheap = [t for t in recorder.tags if "tag_cascade:cheap" in t]
    strong = [t for t in recorder.tags if "tag_cascade:strong" in t]
    assert (len(cheap), len(strong)) == (5, 2)


def test_failure_event_when_a_decided_pair_failed(rules: list[Rule]) -> None:
    def respond(text: str) -> str:
        return "¯\\_(ツ)_/¯" if judged_rule_id(text) == "R-004" else "NO"

    recorder = _Recorder()
    cheap_llm = FakeChatModel(respond=lambda t: "¯\\_(ツ)_/¯" if judged_rule_id(t) == "R-004" else _cheap_reply(t))
    retriever = _cascade(rules, cheap_llm=cheap_llm, strong_llm=FakeChatModel(respond=respond), fallback=False)
    retriever.invoke("q", config={"callbacks": [recorder]})
    assert recorder.events == ["tag_judgments_failed"]
    assert retriever.last_match is not None and [j.rule_id for j in retriever.last_match.failed] == ["R-004"]


def test_bad_options_are_refused(rules: list[Rule]) -> None:
    with pytest.raises(ValueError, match="low bound"):
        _cascade(rules, low=0.7, high=0.3)
    with pytest.raises(ValueError, match=r"(?i)extra"):
        _cascade(rules, band=(0.1, 0.2))
    cheap = ApplicabilityRetriever(llm=fake_judge(set()), rules=rules, calibration=None)
    with pytest.raises(ValueError, match="same retriever"):
        CascadeRetriever(cheap=cheap, strong=cheap, low=0.1, high=0.9)
    strong = ApplicabilityRetriever(llm=fake_judge(set()), rules=rules[:3], calibration=None)
    with pytest.raises(ValueError, match="R-004, R-005"):
        CascadeRetriever(cheap=cheap, strong=strong, low=0.1, high=0.9)


def test_warns_on_a_per_input_centred_strong_calibration(rules: list[Rule]) -> None:
    cheap = ApplicabilityRetriever(llm=fake_judge(set(), with_logprobs=True), rules=rules, calibration=None)
    centred = Calibration(method="identity", centre_per_input=True)
    strong = ApplicabilityRetriever(llm=fake_judge(set(), with_logprobs=True), rules=rules, calibration=centred)
    with pytest.warns(UserWarning, match="centre_per_input"):
        CascadeRetriever(cheap=cheap, strong=strong, low=0.1, high=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CascadeRetriever(cheap=cheap, strong=_cascade(rules).strong, low=0.1, high=0.9)


# --------------------------------------------------------------------------
# choose_band and cascade_decisions.
# --------------------------------------------------------------------------
def test_cascade_decisions() -> None:
    decisions, sent = cascade_decisions(
        [0.9, 0.55, 0.45, 0.1, None], [False, False, True, True, True], threshold=0.5, low=0.4, high=0.6
    )
    assert sent == [False, True, True, False, True]
    assert decisions == [True, False, True, False, True]


def test_choose_band_with_perfect_cheap_judge_sends_nothing() -> None:
    scores = [0.1, 0.2, 0.8, 0.9]
    band = choose_band(scores, [False, False, True, True], threshold=0.5, target_agreement=1.0)
    assert band.strong_share == 0.0 and band.agreement == 1.0 and band.pairs == 4
    assert 0.2 < band.low <= 0.5 <= band.high < 0.8


def test_choose_band_takes_the_fewest_pairs_reaching_the_target() -> None:
    scores = [0.05, 0.2, 0.4, 0.45, 0.55, 0.6, 0.8, 0.95]
    strong = [False, False, True, False, False, True, True, True]  # the cheap errs at 0.4 and 0.55
    band = choose_band(scores, strong, threshold=0.5, target_agreement=1.0)
    assert band.low == pytest.approx(0.3) and band.high == pytest.approx(0.575)
    assert band.strong_share == pytest.approx(3 / 8) and band.agreement == 1.0  # 0.4, 0.45 and 0.55
    decisions, _ = cascade_decisions(scores, strong, threshold=0.5, low=band.low, high=band.high)
    assert decisions == strong
    looser = choose_band(scores, strong, threshold=0.5, target_agreement=0.85)  # one error allowed
    assert looser.strong_share == pytest.approx(1 / 8) and looser.agreement == pytest.approx(7 / 8)
    assert looser.low <= 0.5 <= looser.high
    none_needed = choose_band(scores, strong, threshold=0.5, target_agreement=0.75)
    assert none_needed.strong_share == 0.0 and none_needed.agreement == pytest.approx(6 / 8)


def test_choose_band_counts_unscored_pairs_as_sent() -> None:
    band = choose_band([None, 0.9, 0.1], [True, True, False], threshold=0.5, target_agreement=1.0)
    assert band.strong_share == pytest.approx(1 / 3) and band.agreement == 1.0
    assert band.contains(None) and not band.contains(0.9)


def test_choose_band_always_answers() -> None:
    band = choose_band([0.9, 0.1], [False, True], threshold=0.5, target_agreement=1.0)
    assert (band.low, band.high, band.strong_share) == (0.0, 1.0, 1.0)


def test_choose_band_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="paired"):
        choose_band([0.1], [True, False], threshold=0.5)
    with pytest.raises(ValueError, match="at least one"):
        choose_band([], [], threshold=0.5)
    with pytest.raises(ValueError, match="target_agreement"):
        choose_band([0.1], [True], threshold=0.5, target_agreement=1.5)


def test_band_is_plain_data() -> None:
    band = Band(low=0.2, high=0.6, agreement=0.9, strong_share=0.3, pairs=10)
    assert band.contains(0.2) and band.contains(0.6) and not band.contains(0.61)


def test_the_bulk_job_runs_a_cascade_and_resumes_without_a_strong_call(rules: list[Rule], tmp_path: Any) -> None:
    from langchain_tag.judging.cascade import CascadeJudge
    from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
    from langchain_tag.scale.bulk import amatch_corpus, match_corpus

    def build() -> CascadeRetriever:
        cheap_llm = FakeChatModel(respond=_cheap_reply, with_logprobs=True)
        strong_llm = fake_judge(STRONG_YES, with_logprobs=True)
        cheap = ApplicabilityRetriever(
            llm=cheap_llm, rules=rules, calibration=None, cache=SQLiteVerdictCache(tmp_path / "cheap.sqlite")
        )
        strong = ApplicabilityRetriever(
            llm=strong_llm, rules=rules, calibration=None, cache=SQLiteVerdictCache(tmp_path / "strong.sqlite")
        )
        return CascadeRetriever(cheap=cheap, strong=strong, low=0.4, high=0.58)

    inputs = ["a = 1", "b = 2", "c = 3"]
    first = build()
    assert isinstance(first.judge, CascadeJudge)
    records = list(match_corpus(inputs, first))
    assert [[m["rule_id"] for m in r["matched"]] for r in records] == [["R-001", "R-003", "R-005"]] * 3
    strong_llm = first.strong.llm
    assert isinstance(strong_llm, FakeChatModel) and strong_llm.calls == 2 * len(inputs)  # each
    again = build()
    assert list(match_corpus(inputs, again)) == records
    resumed_cheap, resumed_strong = again.cheap.llm, again.strong.llm
    assert isinstance(resumed_cheap, FakeChatModel) and isinstance(resumed_strong, FakeChatModel)
    assert (resumed_cheap.calls, resumed_strong.calls) == (0, 0)  # both judges' verdicts came from their caches

    async def collect() -> list[dict[str, Any]]:
        return [r async for r in amatch_corpus(inputs, build())]

    assert asyncio.run(collect()) == records


def test_the_cascade_judge_speaks_the_judge_protocol(rules: list[Rule]) -> None:
    from langchain_tag.judging.cascade import CascadeJudge

    retriever = _cascade(rules)
    judge = retriever.judge
    assert isinstance(judge, CascadeJudge) and judge.prompt is retriever.cheap.judge.prompt
    result = judge.judge("q", retriever.cheap.rules_for("q"))
    assert {j.rule_id for j in result.matched} == {"R-001", "R-003", "R-005"}
    assert [r.rule_id for r in judge.requests("q", retriever.cheap.rules_for("q"))] == sorted(CHEAP_P)
    with pytest.raises(ValueError, match="band"):
        CascadeJudge(retriever.cheap.judge, retriever.strong.judge, 0.6, 0.4)


# --------------------------------------------------------------------------
# Arrays and Series for choose_band; per-call options of the retriever.
# --------------------------------------------------------------------------
def test_choose_band_and_cascade_decisions_take_numpy_arrays_and_pandas_series() -> None:
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    scores = [0.05, 0.2, 0.4, 0.45, 0.55, 0.6, 0.8, 0.95]
    strong = [False, False, True, False, False, True, True, True]
    expected = choose_band(scores, strong, threshold=0.5, target_agreement=1.0)
    assert choose_band(np.asarray(scores), np.asarray(strong), threshold=0.5, target_agreement=1.0) == expected
    assert choose_band(pd.Series(scores), pd.Series(strong), threshold=0.5, target_agreement=1.0) == expected
    frame = pd.DataFrame({"cheap": scores, "strong": strong})
    assert choose_band(frame["cheap"], frame["strong"], threshold=0.5, target_agreement=1.0) == expected
    # A missing score (None in a list, NaN in an array or Series) is an unscored pair.
    with_gap = pd.Series([None, 0.9, 0.1], dtype="float64")
    band = choose_band(with_gap, np.asarray([True, True, False]), threshold=0.5, target_agreement=1.0)
    assert band == choose_band([None, 0.9, 0.1], [True, True, False], threshold=0.5, target_agreement=1.0)
    decisions, sent = cascade_decisions(
        np.asarray([0.9, 0.55, 0.45, 0.1, np.nan]), pd.Series([False, False, True, True, True]),
        threshold=0.5, low=0.4, high=0.6,
    )  # fmt: skip
    assert sent == [False, True, True, False, True]
    assert decisions == [True, False, True, False, True]
    with pytest.raises(ValueError, match="paired"):
        choose_band(np.asarray([0.1, 0.2]), np.asarray([True]), threshold=0.5)
    with pytest.raises(ValueError, match="at least one"):
        choose_band(np.asarray([]), np.asarray([]), threshold=0.5)


def test_per_call_threshold_applies_to_the_cheap_judges_decisions(rules: list[Rule]) -> None:
    retriever = _cascade(rules)
    # 0.95 and 0.6 lie outside the band: at 0.99 the cheap judge says NO to both; the band's
    # pairs still go to the strong judge, which keeps its own threshold.
    docs = retriever.invoke("q", threshold=0.99)
    assert [(d.id, d.metadata[JUDGE_KEY]) for d in docs] == [("R-003", "strong")]
    assert retriever.last_match is not None and retriever.last_match.sent == ["R-002", "R-003"]
    assert [d.id for d in asyncio.run(retriever.ainvoke("q", threshold=0.99))] == ["R-003"]
    assert [d.id for d in retriever.invoke("q", threshold=0.99, k=0)] == []
    # The option is one call's: the next call decides at the cheap judge's own threshold again.
    assert [d.id for d in retriever.invoke("q")] == ["R-001", "R-003", "R-005"]
    with pytest.raises(ValueError, match=r"threshold must be a number within \[0, 1\], got 1.5"):
        retriever.invoke("q", threshold=1.5)


def test_unsupported_per_call_options_are_refused_naming_the_supported_ones(rules: list[Rule]) -> None:
    retriever = _cascade(rules)
    with pytest.raises(TypeError, match=r"unsupported per-call option.*low.*takes k and threshold"):
        retriever.invoke("q", low=0.1)
    with pytest.raises(TypeError, match="takes k and threshold"):
        asyncio.run(retriever.ainvoke("q", calibration=None))
