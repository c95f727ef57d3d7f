from __future__ import annotations

import random
from pathlib import Path

import pytest

from langchain_tag.judging._logodds import logit, sigmoid
from langchain_tag.judging.calibration.defaults import default_calibration, load_reference_inputs
from langchain_tag.judging.calibration.model import (
    Calibration,
    CalibrationError,
    expected_calibration_error,
    fit_calibration,
)
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, judged_rule_id


def _biased_pairs(n: int = 400, seed: int = 0) -> tuple[list[float], list[bool]]:
    """Log-odds of a judge that ranks well but sits low: positives around 0.35, negatives around 0.15."""
    rng = random.Random(seed)
    xs, ys = [], []
    for _ in range(n):
        y = rng.random() < 0.3
        xs.append(rng.gauss(logit(0.35) if y else logit(0.15), 0.4))
        ys.append(y)
    return xs, ys


def _f1(scores: list[float], labels: list[bool], threshold: float = 0.5) -> float:
    tp = sum(1 for s, y in zip(scores, labels, strict=True) if s >= threshold and y)
    fp = sum(1 for s, y in zip(scores, labels, strict=True) if s >= threshold and not y)
    fn = sum(1 for s, y in zip(scores, labels, strict=True) if s < threshold and y)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


@pytest.mark.parametrize("method", ["threshold", "platt", "isotonic"])
def test_fitted_calibration_beats_raw_threshold_on_held_out_pairs(method: str) -> None:
    xs, ys = _biased_pairs(seed=1)
    test_xs, test_ys = _biased_pairs(seed=2)
    calibration = fit_calibration(xs, ys, method=method)  # type: ignore[arg-type]
    raw = [sigmoid(x) for x in test_xs]
    calibrated = [calibration.score(sigmoid(x)) for x in test_xs]
    assert _f1(raw, test_ys) < 0.3  # raw P(YES) at 0.5 matches almost nothing
    assert _f1(calibrated, test_ys) > 0.6
    if method != "threshold":  # a pure shift moves the cut, not the spread
        assert expected_calibration_error(calibrated, test_ys) < expected_calibration_error(raw, test_ys)


def test_platt_recovers_a_known_logistic_map() -> None:
    rng = random.Random(3)
    xs = [rng.uniform(-4, 4) for _ in range(4000)]
    ys = [rng.random() < sigmoid(2.0 * x + 1.0) for x in xs]
    calibration = fit_calibration(xs, ys, method="platt")
    assert calibration.slope == pytest.approx(2.0, rel=0.15)
    assert calibration.intercept == pytest.approx(1.0, abs=0.2)


def test_platt_on_a_few_separable_examples_stays_finite_and_ordered() -> None:
    # Two positives far above seven negatives: plain Newton steps overshoot here and run away.
    xs = [3.58, 3.58, 0.0, 0.0, 0.0, 0.0, -0.45, -0.45, -0.45]
    ys = [True, True, False, False, False, False, False, False, False]
    calibration = fit_calibration(xs, ys, method="platt")
    assert 0 < calibration.slope < 50 and abs(calibration.intercept) < 50
    high, mid, low = (calibration.score(sigmoid(x)) for x in (3.58, 0.0, -0.45))
    assert 0.5 < high < 1.0 and 0.0 < low < mid < 0.5  # Platt's smoothed targets keep scores off 0 and 1


def test_isotonic_scores_never_decrease() -> None:
    xs, ys = _biased_pairs()
    calibration = fit_calibration(xs, ys, method="isotonic")
    grid = [calibration.score(sigmoid(x / 10)) for x in range(-60, 30)]
    assert grid == sorted(grid)


def test_threshold_moves_the_best_cut_to_one_half() -> None:
    xs = [logit(p) for p in (0.1, 0.2, 0.3, 0.35, 0.45, 0.5)]
    ys = [False, False, False, True, True, True]
    calibration = fit_calibration(xs, ys, method="threshold")
    assert calibration.score(0.35) > 0.5 > calibration.score(0.3)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    xs, ys = _biased_pairs()
    calibration = fit_calibration(xs, ys, method="isotonic", reference_inputs=["N/A"], model="m", prompt_version="v")
    loaded = Calibration.load(calibration.save(tmp_path / "cal.json"))
    assert loaded == calibration
    assert loaded.score(0.3, reference=-1.0) == calibration.score(0.3, reference=-1.0)


def test_bad_input_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError, match="positive and one negative"):
        fit_calibration([0.1, 0.2], [True, True])
    with pytest.raises(CalibrationError, match="unknown calibration method"):
        Calibration(method="magic")  # type: ignore[arg-type]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CalibrationError, match="not JSON"):
        Calibration.load(bad)
    bad.write_text('{"method": "platt", "slop": 1}')
    with pytest.raises(CalibrationError, match="slop"):
        Calibration.load(bad)


def test_default_calibration_matches_model_family_and_prompt_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_tag.judging.calibration import defaults as module

    shipped = Calibration(method="threshold", intercept=1.0, prompt_version="judge-v9")
    monkeypatch.setitem(module.DEFAULT_CALIBRATIONS, "tiny-judge", shipped)
    assert default_calibration("http://x/v1/Tiny-Judge-Q4.gguf", "judge-v9") is shipped
    assert default_calibration("Tiny-Judge", "judge-v8") is None  # another prompt version: not fitted for it
    assert default_calibration("other-model", "judge-v9") is None


# ---------------------------------------------------------------- in the retriever
RULES = [
    Rule(rule_id="R-1", rule_name="one", condition="c1", action="a1"),
    Rule(rule_id="R-2", rule_name="two", condition="c2", action="a2"),
    Rule(rule_id="R-3", rule_name="three", condition="c3", action="a3"),
]
# A judge biased per rule: R-3 always leans YES, so only a per-rule step separates it.
BIAS = {"R-1": 0.05, "R-2": 0.1, "R-3": 0.6}


def _judge() -> FakeChatModel:
    def respond(text: str) -> tuple[str, float]:
        rule_id = judged_rule_id(text)
        p = BIAS[rule_id]
        if f"HOLDS-{rule_id}" in text:
            p = min(0.95, p + 0.3)
        return ("YES" if p >= 0.5 else "NO", p)

    return FakeChatModel(respond=respond, with_logprobs=True)


def test_retriever_applies_calibration_and_reports_raw_and_calibrated_scores() -> None:
    calibration = Calibration(method="threshold", intercept=-logit(0.3))  # raw 0.3 -> 0.5
    retriever = ApplicabilityRetriever(llm=_judge(), rules=RULES, calibration=calibration)
    docs = retriever.invoke("HOLDS-R-1")
    assert [d.metadata["rule_id"] for d in docs] == ["R-3", "R-1"]
    first = docs[0].metadata
    assert first["tag_p_yes"] == pytest.approx(0.6)
    assert first["tag_score"] == pytest.approx(calibration.score(0.6))


def test_reference_inputs_remove_a_rules_own_bias_and_are_judged_once() -> None:
    llm = _judge()
    calibration = Calibration(method="threshold", intercept=-1.0, reference_inputs=("N/A",))
    retriever = ApplicabilityRetriever(llm=llm, rules=RULES, calibration=calibration)
    assert [d.metadata["rule_id"] for d in retriever.invoke("HOLDS-R-3")] == ["R-3"]
    assert retriever.invoke("HOLDS-R-2 only") and llm.calls == 3 + 3 + 3  # references judged once
    assert [d.metadata["rule_id"] for d in retriever.invoke("nothing holds")] == []
    assert llm.calls == 3 * 4


def test_calibrate_fits_from_labelled_examples_and_is_used_next(tmp_path: Path) -> None:
    retriever = ApplicabilityRetriever(llm=_judge(), rules=RULES, calibration=None)
    assert [d.metadata["rule_id"] for d in retriever.invoke("HOLDS-R-1")] == ["R-3"]  # raw: the biased rule wins
    examples = [("HOLDS-R-1", ["R-1"]), ("HOLDS-R-2", ["R-2"]), ("HOLDS-R-3", ["R-3"]), ("none", [])]
    fitted = retriever.calibrate(examples, method="isotonic", reference_inputs=["N/A"])
    assert fitted.reference_inputs == ("N/A",) and "12 labelled judgments" in fitted.note
    assert [d.metadata["rule_id"] for d in retriever.invoke("HOLDS-R-1")] == ["R-1"]
    again = ApplicabilityRetriever(
        llm=_judge(), rules=RULES, calibration=Calibration.load(fitted.save(tmp_path / "c.json"))
    )
    assert [d.metadata["rule_id"] for d in again.invoke("HOLDS-R-2")] == ["R-2"]


def test_calibrate_refuses_unknown_rule_ids_and_keeps_its_calibration() -> None:
    retriever = ApplicabilityRetriever(llm=_judge(), rules=RULES, calibration=None)
    with pytest.raises(CalibrationError, match="R-9"):
        retriever.calibrate([("x", ["R-9"])])
    assert retriever.judge.calibration is None


async def test_acalibrate_matches_calibrate() -> None:
    examples = [("HOLDS-R-1", ["R-1"]), ("HOLDS-R-3", ["R-3"]), ("none", [])]
    sync = ApplicabilityRetriever(llm=_judge(), rules=RULES, calibration=None).calibrate(examples, method="platt")
    other = ApplicabilityRetriever(llm=_judge(), rules=RULES, calibration=None)
    fitted = await other.acalibrate(examples, method="platt")
    assert fitted.slope == pytest.approx(sync.slope) and fitted.intercept == pytest.approx(sync.intercept)


def test_standardising_over_typical_inputs_and_the_calibrations_own_threshold() -> None:
    typical = ("plain input one", "plain input two", "HOLDS-R-2 sample")  # the spread comes from these
    calibration = Calibration(method="threshold", reference_inputs=typical, standardise=True, threshold=0.8)
    retriever = ApplicabilityRetriever(llm=_judge(), rules=RULES, calibration=calibration)
    assert retriever.judge.decision_threshold == 0.8
    judged = {j.rule_id: j for j in retriever.match("HOLDS-R-1").judgments}
    mean, spread = retriever.judge.reference_log_odds(RULES[0])
    assert mean == pytest.approx(logit(0.05)) and spread == 0.0  # R-1 never stands out on the typical inputs
    expected = sigmoid((logit(0.35) - logit(0.05)) / calibration.min_spread)
    _, spread_r2 = retriever.judge.reference_log_odds(RULES[1])
    assert spread_r2 is not None and spread_r2 > 1.0  # R-2 holds for one of them
    assert judged["R-1"].score == pytest.approx(expected)
    assert [d.metadata["rule_id"] for d in retriever.invoke("HOLDS-R-1")] == ["R-1"]
    with pytest.raises(CalibrationError, match="at least two reference inputs"):
        Calibration(reference_inputs=("N/A",), standardise=True)


def test_the_local_model_has_a_shipped_calibration_for_the_default_prompt() -> None:
    from langchain_tag.judging.prompts import JUDGE_PROMPTS

    shipped = default_calibration("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", JUDGE_PROMPTS["applicability"].version)
    assert shipped is not None and shipped.reference_inputs and shipped.threshold is not None
    assert shipped.score(0.5, reference=logit(0.5)) < shipped.threshold  # no more likely than on "N/A": no match


# ---------------------------------------------------------------- your own inputs as references
DOMAIN = {"method": "threshold", "intercept": 0.0, "standardise": True, "min_spread": 0.5, "threshold": 0.8}
SAMPLE = ["plain input one", "plain input two", "plain input three", "HOLDS-R-2 sample"]


def test_reference_inputs_select_the_domain_default_with_the_sample_as_references(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langchain_tag.judging.calibration import defaults as module

    monkeypatch.setitem(module.DOMAIN_REFERENCE_CALIBRATIONS, "tiny-judge", {**DOMAIN, "prompt_version": "judge-v9"})
    typical = Calibration(method="threshold", reference_inputs=("N/A",), prompt_version="judge-v9")
    monkeypatch.setitem(module.DEFAULT_CALIBRATIONS, "tiny-judge", typical)
    domain = default_calibration("Tiny-Judge-Q4", "judge-v9", [*SAMPLE, "plain input one", "  "])
    assert domain is not None and domain.standardise and domain.min_spread == 0.5 and domain.threshold == 0.8
    assert domain.reference_inputs == tuple(SAMPLE)  # repeats and blanks dropped, order kept
    assert default_calibration("Tiny-Judge-Q4", "judge-v9") is typical  # no sample: the typical-input default
    assert default_calibration("Tiny-Judge-Q4", "judge-v8", SAMPLE) is None  # not fitted for that prompt
    with pytest.raises(CalibrationError, match="at least 4 distinct"):
        default_calibration("Tiny-Judge-Q4", "judge-v9", ["a", "b", "a"])
    with pytest.raises(CalibrationError, match="not one string"):
        default_calibration("Tiny-Judge-Q4", "judge-v9", "one long input")  # type: ignore[arg-type]


def test_retriever_scores_each_rule_against_its_level_on_the_users_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_tag.judging.calibration import defaults as module
    from langchain_tag.judging.prompts import JUDGE_PROMPTS

    version = JUDGE_PROMPTS["applicability"].version
    monkeypatch.setitem(module.DOMAIN_REFERENCE_CALIBRATIONS, "fakechatmodel", {**DOMAIN, "prompt_version": version})
    llm = _judge()
    retriever = ApplicabilityRetriever(llm=llm, rules=RULES, reference_inputs=SAMPLE)
    # R-3 leans YES everywhere (raw 0.6 on every input): on the user's own inputs that is its ordinary level,
    # so it no longer matches; R-1 stands out from its level on the sample.
    assert [d.metadata["rule_id"] for d in retriever.invoke("HOLDS-R-1")] == ["R-1"]
    assert llm.calls == 3 * len(SAMPLE) + 3  # every rule judged once on each sample input, then the input
    retriever.invoke("HOLDS-R-3")
    assert llm.calls == 3 * len(SAMPLE) + 6  # the sample is not judged again
    calibration = retriever.judge.calibration
    assert calibration is not None and calibration.reference_inputs == tuple(SAMPLE) and calibration.standardise


def test_reference_inputs_need_the_default_calibration() -> None:
    with pytest.raises(ValueError, match='calibration="default"'):
        ApplicabilityRetriever(llm=_judge(), rules=RULES, calibration=None, reference_inputs=SAMPLE)
    with pytest.raises(ValueError, match="at least 4"):  # pydantic wraps the CalibrationError
        ApplicabilityRetriever(llm=_judge(), rules=RULES, reference_inputs=["only one"])


def test_load_reference_inputs_reads_jsonl_and_names_the_bad_line(tmp_path: Path) -> None:
    good = tmp_path / "sample.jsonl"
    good.write_text('"def f():\\n    return 1"\n\n{"text": "x = 2"}\n"y = 3"\n{"text": "z = 4", "id": 7}\n')
    assert load_reference_inputs(good) == ("def f():\n    return 1", "x = 2", "y = 3", "z = 4")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('"a"\nnot json\n')
    with pytest.raises(CalibrationError, match=r"bad\.jsonl:2: not JSON"):
        load_reference_inputs(bad)
    bad.write_text('"a"\n{"input": "b"}\n')
    with pytest.raises(CalibrationError, match=r'bad\.jsonl:2: expected a JSON string or an object with a "text"'):
        load_reference_inputs(bad)
    with pytest.raises(CalibrationError, match="cannot read"):
        load_reference_inputs(tmp_path / "missing.jsonl")


def test_the_local_model_has_a_domain_reference_default_for_the_default_prompt() -> None:
    from langchain_tag.judging.prompts import JUDGE_PROMPTS

    version = JUDGE_PROMPTS["applicability"].version
    shipped = default_calibration("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", version, SAMPLE)
    assert shipped is not None and shipped.standardise and shipped.threshold is not None
    assert shipped.score(0.3, reference=logit(0.3), spread=1.0) < shipped.threshold  # at its usual level: no match
    assert shipped.score(0.3, reference=logit(0.1), spread=0.4) > shipped.threshold  # far above it: a match


def test_a_sample_without_a_shipped_domain_default_is_said_not_silently_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    retriever = ApplicabilityRetriever(llm=_judge(), rules=RULES, reference_inputs=SAMPLE)
    with caplog.at_level("WARNING", logger="langchain_tag.judging.chat"):
        assert retriever.judge.calibration is None  # the fake model has no shipped calibration of either kind
    assert "no domain-reference calibration is shipped for FakeChatModel" in caplog.text


# ---------------------------------------------------------------- per-input centring
SIX = [Rule(rule_id=f"S-{i}", rule_name=f"rule {i}", condition=f"c{i}", action=f"a{i}") for i in range(1, 7)]


def _busy_judge() -> FakeChatModel:
    """Every rule sits at 0.1; a BUSY input lifts every rule to 0.4; HOLDS-S-n adds 0.4 more for rule S-n."""

    def respond(text: str) -> tuple[str, float]:
        rule_id = judged_rule_id(text)
        p = 0.4 if "BUSY" in text else 0.1
        if f"HOLDS-{rule_id}" in text:
            p += 0.4
        return ("YES" if p >= 0.5 else "NO", p)

    return FakeChatModel(respond=respond, with_logprobs=True)


def test_input_centre_is_the_median_over_enough_rules() -> None:
    centring = Calibration(centre_per_input=True, min_centred_rules=3)
    assert centring.input_centre([1.0, -2.0, 5.0, 0.5]) == pytest.approx(0.75)
    assert centring.input_centre([1.0, 2.0]) == 0.0  # too few rules to centre on
    assert Calibration().input_centre([1.0, -2.0, 5.0, 0.5]) == 0.0  # the step is off by default
    assert Calibration.from_dict(centring.to_dict()) == centring
    with pytest.raises(CalibrationError, match="min_centred_rules"):
        Calibration(centre_per_input=True, min_centred_rules=1)


def test_centring_per_input_removes_a_lift_shared_by_every_rule() -> None:
    flat = Calibration(method="threshold", intercept=-logit(0.3))
    centred = Calibration(method="threshold", intercept=-1.0, centre_per_input=True)
    plain = ApplicabilityRetriever(llm=_busy_judge(), rules=SIX, calibration=flat)
    # A busy input lifts every rule over the flat line; only the one that holds stands out among them.
    assert len(plain.invoke("BUSY HOLDS-S-2")) == 6
    retriever = ApplicabilityRetriever(llm=_busy_judge(), rules=SIX, calibration=centred)
    assert [d.metadata["rule_id"] for d in retriever.invoke("BUSY HOLDS-S-2")] == ["S-2"]
    assert [d.metadata["rule_id"] for d in retriever.invoke("quiet HOLDS-S-5")] == ["S-5"]
    assert retriever.invoke("BUSY and nothing holds") == []
    judged = {j.rule_id: j for j in retriever.match("BUSY HOLDS-S-2").judgments}
    centre = logit(0.4)  # the median over the six rules: five at 0.4, one at 0.8
    assert judged["S-2"].score == pytest.approx(sigmoid(logit(0.8) - centre - 1.0))
    assert judged["S-1"].p_yes == pytest.approx(0.4) and judged["S-1"].score == pytest.approx(sigmoid(-1.0))


def test_too_few_rules_are_not_centred() -> None:
    centred = Calibration(method="threshold", intercept=-1.0, centre_per_input=True, min_centred_rules=5)
    retriever = ApplicabilityRetriever(llm=_busy_judge(), rules=SIX[:3], calibration=centred)
    judged = retriever.match("BUSY HOLDS-S-1").judgments
    assert [j.score for j in judged] == pytest.approx([centred.score(0.8), centred.score(0.4), centred.score(0.4)])


def test_calibrate_can_fit_on_centred_features() -> None:
    examples = [("BUSY HOLDS-S-1", ["S-1"]), ("quiet HOLDS-S-3", ["S-3"]), ("BUSY", []), ("quiet", [])]
    retriever = ApplicabilityRetriever(llm=_busy_judge(), rules=SIX, calibration=None)
    fitted = retriever.calibrate(examples, method="threshold", centre_per_input=True)
    assert fitted.centre_per_input
    # Centred, the holding pairs sit at one level whatever the input's lift, so one cut separates them.
    assert [d.metadata["rule_id"] for d in retriever.invoke("BUSY HOLDS-S-4")] == ["S-4"]
    assert [d.metadata["rule_id"] for d in retriever.invoke("quiet HOLDS-S-6")] == ["S-6"]


def test_the_local_models_default_centres_per_input() -> None:
    from langchain_tag.judging.prompts import JUDGE_PROMPTS

    shipped = default_calibration("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", JUDGE_PROMPTS["applicability"].version)
    assert shipped is not None and shipped.centre_per_input and shipped.reference_inputs


def test_every_shipped_calibration_comes_from_the_data_file_with_its_provenance() -> None:
    import json
    from importlib import resources

    from langchain_tag.judging.calibration import defaults

    data = json.loads(resources.files("langchain_tag").joinpath("data/calibrations.json").read_text(encoding="utf-8"))
    assert set(data["defaults"]) == set(defaults.DEFAULT_CALIBRATIONS)
    assert set(data["domain_reference"]) == set(defaults.DOMAIN_REFERENCE_CALIBRATIONS)
    for entry in [*data["defaults"].values(), *data["domain_reference"].values()]:
        assert entry["provenance"]["command"].startswith("langchain-tag bench fit-default")
        assert entry["provenance"]["fitted_on"] and entry["provenance"]["results"]
    shipped = defaults.DEFAULT_CALIBRATIONS["qwen2.5-coder-1.5b"]
    assert (shipped.method, shipped.slope, shipped.intercept, shipped.threshold) == ("platt", 5.06, -3.63, 0.176)
    assert shipped.reference_inputs == defaults.TYPICAL_INPUTS and len(defaults.TYPICAL_INPUTS) == 8
