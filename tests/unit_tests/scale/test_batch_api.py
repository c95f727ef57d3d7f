"""OpenAI Batch API: exporting judgments as batch input files, importing the results into the verdict cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from langchain_tag.judging._pairs import PairRequest
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache, SQLiteVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.batch_api import (
    BATCH_URL,
    CUSTOM_ID_MAX_CHARS,
    MAPPING_FILE,
    BatchError,
    BatchMapping,
    BatchResultsModel,
    batch_mapping,
    custom_id,
    export_openai_batch,
    import_openai_batch,
    parse_custom_id,
    request_digest,
    split_custom_id,
)
from langchain_tag.scale.bulk import InputItem, match_corpus
from langchain_tag.testing import yes_no_logprobs
from tests.helpers.judge_fakes import answer, batch_lines, ok_line, prompt_input, scored_judge

MODEL = "gpt-4o-mini"
ITEMS = [InputItem(id=f"in-{i}", text=f"def f{i}(x=[]):\n\treturn x  # input {i}") for i in range(1, 5)]
REFERENCES = ("x = 1", "import os, sys", "def g(a, b=None):\n    return a", "try:\n    pass\nexcept:\n    pass")


def retriever_for(llm: Any, rules: list[Rule], cache: Any = None, **kwargs: Any) -> ApplicabilityRetriever:
    cache = InMemoryVerdictCache() if cache is None else cache
    return ApplicabilityRetriever(llm=llm, rules=rules, cache=cache, **kwargs)


def verdicts(retriever: ApplicabilityRetriever, text: str) -> list[tuple[str, bool, float | None, float | None]]:
    result = retriever.match(text)
    return [(j.rule_id, j.applies, j.score, j.error) for j in result.judgments]


# --------------------------------------------------------------------------------------------- custom_id


def request(
    rule_id: str = "R-001", version: str = "judge-applicability-v5", negated: bool = False, key: str = "k"
) -> PairRequest:
    return PairRequest(key=key, rule_id=rule_id, prompt_version=version, negated=negated, messages=())


def readable(cid: str) -> str:
    """A readable custom_id without its request digest: ``INPUT/RULE/PROMPT_VERSION`` (``/neg``)."""
    parsed = parse_custom_id(cid)
    assert parsed is not None, cid
    return "/".join(parsed[:3]) + ("/neg" if parsed[3] else "")


def test_custom_id_is_readable_and_parses_back() -> None:
    digest = request_digest("k")
    assert len(digest) == 12 and int(digest, 16) >= 0
    assert custom_id("in-1", request()) == f"in-1/R-001/judge-applicability-v5/{digest}"
    assert parse_custom_id("in-1/R-001/judge-applicability-v5") == ("in-1", "R-001", "judge-applicability-v5", False)
    assert parse_custom_id(f"in-1/R-001/judge-applicability-v5/{digest}") == parse_custom_id(
        "in-1/R-001/judge-applicability-v5"
    )
    negated = custom_id("7", request(version="judge-applicability-negated-v1", negated=True))
    assert negated == f"7/R-001/judge-applicability-negated-v1/neg/{digest}"
    assert parse_custom_id(negated) == ("7", "R-001", "judge-applicability-negated-v1", True)
    assert split_custom_id(negated) == ("7/R-001/judge-applicability-negated-v1/neg", digest)


def test_a_custom_id_ends_with_its_requests_digest() -> None:
    other = custom_id("in-1", request(key="another input text"))
    assert other != custom_id("in-1", request()) and readable(other) == readable(custom_id("in-1", request()))
    assert split_custom_id(other)[1] == request_digest("another input text")
    hashed, hashed_other = custom_id("has space", request()), custom_id("has space", request(key="k2"))
    assert split_custom_id(hashed)[0] == split_custom_id(hashed_other)[0] and hashed != hashed_other
    assert split_custom_id("another-batch/x") == ("another-batch/x", None)


@pytest.mark.parametrize("input_id", ["a" * 60, "has space", "slash/in/id", "ünïcode"])
def test_a_custom_id_that_would_be_long_or_odd_is_hashed_within_the_limit(input_id: str) -> None:
    value = custom_id(input_id, request())
    assert value.startswith("h-") and len(value) <= CUSTOM_ID_MAX_CHARS and parse_custom_id(value) is None
    assert value != custom_id(input_id + "x", request()) and value == custom_id(input_id, request())


# --------------------------------------------------------------------------------------------- export


def test_export_writes_batch_api_lines_input_major(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(scored_judge(), rules)
    paths = export_openai_batch((retriever, ITEMS), tmp_path / "batch", model_name=MODEL)
    assert [p.name for p in paths] == ["batch-0001.jsonl"]
    lines = batch_lines(paths)
    assert len(lines) == len(ITEMS) * len(rules)
    first = lines[0]
    first_request = retriever.judge.requests(ITEMS[0].text, rules)[0]
    assert first["custom_id"] == f"in-1/R-001/judge-applicability-v5/{request_digest(first_request.key)}"
    assert first["method"] == "POST" and first["url"] == BATCH_URL == "/v1/chat/completions"
    assert first["body"] == {
        "model": MODEL,
        "messages": [dict(m) for m in retriever.judge.requests(ITEMS[0].text, rules)[0].messages],
        "max_tokens": 1,
        "logprobs": True,
        "top_logprobs": 5,
        "temperature": 0,
    }
    assert [prompt_input(line["body"]["messages"][-1]["content"]) for line in lines] == [
        item.text for item in ITEMS for _ in rules
    ]
    mapping = BatchMapping.load(tmp_path / "batch")
    assert list(mapping.entries) == [line["custom_id"] for line in lines]
    assert mapping.model_name == MODEL and mapping.model_identity == retriever.judge.model_identity
    assert all(e.file == "batch-0001.jsonl" for e in mapping.entries.values())


def test_extra_body_adds_and_drops_fields(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(scored_judge(), rules)
    extra = {"max_tokens": None, "max_completion_tokens": 1, "seed": 7}
    paths = export_openai_batch((retriever, ITEMS[:1]), tmp_path / "b", model_name=MODEL, extra_body=extra)
    body = batch_lines(paths)[0]["body"]
    assert "max_tokens" not in body and body["max_completion_tokens"] == 1 and body["seed"] == 7


def test_export_splits_at_the_request_limit(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(scored_judge(), rules)
    paths = export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL, max_requests=3)
    sizes = [len(p.read_text().splitlines()) for p in paths]
    assert sizes == [3] * 6 + [2] and sum(sizes) == len(ITEMS) * len(rules)
    mapping = BatchMapping.load(tmp_path / "b" / MAPPING_FILE)
    assert mapping.files == [p.name for p in paths]
    by_file = {p.name: [line["custom_id"] for line in batch_lines([p])] for p in paths}
    assert all(cid in by_file[e.file] for cid, e in mapping.entries.items())


def test_export_splits_at_the_size_limit(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(scored_judge(), rules)
    one = export_openai_batch((retriever, ITEMS[:1]), tmp_path / "one", model_name=MODEL)[0]
    longest = max(len(line) for line in one.read_bytes().splitlines(keepends=True))
    limit = 2 * longest + 10
    paths = export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL, max_bytes=limit)
    assert len(paths) > 1 and all(p.stat().st_size <= limit for p in paths)
    assert len(batch_lines(paths)) == len(ITEMS) * len(rules)
    with pytest.raises(BatchError, match=r"alone is \d+ bytes"):
        export_openai_batch((retriever, ITEMS), tmp_path / "c", model_name=MODEL, max_bytes=longest - 1)


def test_references_go_first_once_and_repeated_requests_once(tmp_path: Path, rules: list[Rule]) -> None:
    calibration = Calibration(method="threshold", reference_inputs=REFERENCES)
    retriever = retriever_for(scored_judge(), rules, calibration=calibration, predicate="applicability-contrast")
    twin = InputItem(id="twin", text=ITEMS[0].text)  # the same text again: its requests are the same
    reused = InputItem(id="ref-again", text=REFERENCES[0])  # an input that is also a reference input
    paths = export_openai_batch((retriever, [*ITEMS, twin, reused]), tmp_path / "b", model_name=MODEL)
    lines = batch_lines(paths)
    per_input = 2 * len(rules)
    assert len(lines) == (len(REFERENCES) + len(ITEMS)) * per_input
    assert len({line["custom_id"] for line in lines}) == len(lines)
    ids = [line["custom_id"] for line in lines]
    assert readable(ids[0]) == "@ref-1/R-001/judge-applicability-v5"
    assert readable(ids[len(rules)]) == "@ref-1/R-001/judge-applicability-negated-v1/neg"
    assert {parse_custom_id(i)[0] for i in ids[: len(REFERENCES) * per_input]} == {  # type: ignore[index]
        f"@ref-{n}" for n in range(1, len(REFERENCES) + 1)
    }
    mapping = BatchMapping.load(tmp_path / "b")
    assert sum(e.reference for e in mapping.entries.values()) == len(REFERENCES) * per_input
    assert not any(e.input_id in ("twin", "ref-again") for e in mapping.entries.values())


def test_export_skips_what_the_cache_holds(tmp_path: Path, rules: list[Rule]) -> None:
    cache = InMemoryVerdictCache()
    retriever_for(scored_judge(), rules, cache).match(ITEMS[1].text)
    retriever = retriever_for(scored_judge(), rules, cache)
    paths = export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL)
    assert len(batch_lines(paths)) == (len(ITEMS) - 1) * len(rules)
    everything = export_openai_batch((retriever, ITEMS), tmp_path / "c", model_name=MODEL, skip_cached=False)
    assert len(batch_lines(everything)) == len(ITEMS) * len(rules)


def test_export_of_nothing_writes_no_batch_file(tmp_path: Path, rules: list[Rule]) -> None:
    assert export_openai_batch((retriever_for(scored_judge(), rules), []), tmp_path / "b", model_name=MODEL) == []
    assert len(BatchMapping.load(tmp_path / "b")) == 0


def test_export_refuses_a_directory_holding_an_export(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(scored_judge(), rules)
    export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL)
    with pytest.raises(BatchError, match="already holds an export"):
        export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL)


def test_export_takes_requests_rendered_elsewhere(tmp_path: Path, rules: list[Rule]) -> None:
    judge = retriever_for(scored_judge(), rules).judge
    source = {item.id: judge.requests(item.text, rules) for item in ITEMS[:2]}
    paths = export_openai_batch(source, tmp_path / "b", model_name=MODEL)
    assert [readable(line["custom_id"]) for line in batch_lines(paths)][:2] == ["in-1/R-001/judge-applicability-v5"] + [
        "in-1/R-002/judge-applicability-v5"
    ]
    assert [line["custom_id"] for line in batch_lines(paths)][:2] == [custom_id("in-1", r) for r in source["in-1"][:2]]
    assert BatchMapping.load(tmp_path / "b").model_identity is None  # no judge given: nothing to check on import


# --------------------------------------------------------------------------------------------- import


@pytest.mark.parametrize("predicate", ["applicability", "applicability-contrast"])
def test_round_trip_gives_the_in_process_verdicts_with_no_call(
    tmp_path: Path, rules: list[Rule], predicate: str
) -> None:
    calibration = Calibration(method="threshold", reference_inputs=REFERENCES, threshold=0.55)
    options = {"predicate": predicate, "calibration": calibration}
    exporter = retriever_for(scored_judge(), rules, SQLiteVerdictCache(tmp_path / "v.sqlite"), **options)
    paths = export_openai_batch((exporter, ITEMS), tmp_path / "b", model_name=MODEL, max_requests=7)
    results = answer(paths, tmp_path / "results.jsonl")

    importer_llm = scored_judge()
    importer = retriever_for(importer_llm, rules, SQLiteVerdictCache(tmp_path / "v.sqlite"), **options)
    summary = import_openai_batch([results], importer, tmp_path / "b")
    assert summary.complete and summary.recorded == summary.requests == len(batch_lines(paths))
    assert summary.prompt_tokens > 0 and summary.completion_tokens == summary.recorded

    in_process = retriever_for(scored_judge(), rules, **options)
    for item in ITEMS:
        assert verdicts(importer, item.text) == verdicts(in_process, item.text)
    assert importer_llm.calls == 0
    assert any(applies for item in ITEMS for _, applies, _, _ in verdicts(importer, item.text))


def test_results_read_with_a_stand_in_model_and_written_by_match_corpus(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(BatchResultsModel(model_name=MODEL), rules, SQLiteVerdictCache(tmp_path / "v.sqlite"))
    assert retriever.judge.model_identity == MODEL
    paths = export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL)
    summary = import_openai_batch(answer(paths, tmp_path / "r.jsonl"), retriever, tmp_path / "b" / MAPPING_FILE)
    assert summary.complete
    got = list(match_corpus(ITEMS, retriever, all_pairs=True))
    want = list(match_corpus(ITEMS, retriever_for(scored_judge(), rules), all_pairs=True))
    assert got == want


def test_failed_requests_are_reported_and_the_others_recorded(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(BatchResultsModel(model_name=MODEL), rules, SQLiteVerdictCache(tmp_path / "v.sqlite"))
    paths = export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL)
    lines = [ok_line(line, scored_judge(), n) for n, line in enumerate(batch_lines(paths), 1)]
    by_id = {readable(line["custom_id"]): line for line in lines}
    # input 1 is answered in full; input 2 has one of each failure; input 3 has no line at all.
    rate_limited = by_id["in-2/R-001/judge-applicability-v5"]
    rate_limited["response"] = None
    rate_limited["error"] = {"code": "rate_limit_exceeded", "message": "slow down"}
    server = by_id["in-2/R-002/judge-applicability-v5"]
    server["response"]["status_code"] = 500
    server["response"]["body"] = {"error": {"message": "internal error", "type": "server_error"}}
    hedged = by_id["in-2/R-003/judge-applicability-v5"]["response"]["body"]["choices"][0]
    hedged["message"]["content"], hedged["logprobs"] = "Perhaps.", None
    results = [json.dumps(line) for cid, line in by_id.items() if not cid.startswith("in-3/")]
    results.insert(3, "{not json")
    results.append(json.dumps({**by_id["in-1/R-001/judge-applicability-v5"]}))  # the same reply twice
    results.append(json.dumps({**by_id["in-1/R-002/judge-applicability-v5"], "custom_id": "another-batch/x"}))
    out = tmp_path / "results.jsonl"
    out.write_text("\n".join(results) + "\n")

    summary = import_openai_batch(out, retriever, tmp_path / "b")
    failures = {readable(f.custom_id) if f.custom_id else "": f for f in summary.failures}
    assert failures["in-2/R-001/judge-applicability-v5"].error == "batch error rate_limit_exceeded: slow down"
    assert failures["in-2/R-002/judge-applicability-v5"].error == "HTTP 500: internal error"
    assert "no YES/NO verdict" in failures["in-2/R-003/judge-applicability-v5"].error
    assert failures["in-2/R-003/judge-applicability-v5"].input_id == "in-2"
    assert failures[""].where == f"{out}:4" and "not JSON" in failures[""].error
    assert summary.missing == [line["custom_id"] for cid, line in by_id.items() if cid.startswith("in-3/")]
    assert summary.unknown == ["another-batch/x"] and summary.duplicates == 1
    assert summary.recorded == len(lines) - 3 - len(rules) and not summary.complete
    assert "3 failed" not in summary.summary() and "4 failed" in summary.summary()

    records = {r["id"]: r for r in match_corpus(ITEMS, retriever)}
    assert records["in-1"]["failed"] == [] and records["in-4"]["failed"] == []
    assert [f["rule_id"] for f in records["in-2"]["failed"]] == ["R-001", "R-002", "R-003"]
    assert "no reply from batch model 'gpt-4o-mini'" in records["in-2"]["failed"][0]["error"]
    assert "error" in records["in-3"] and len(records["in-3"]["failed"]) == len(rules)

    again = export_openai_batch((retriever, ITEMS), tmp_path / "retry", model_name=MODEL)
    assert len(batch_lines(again)) == 3 + len(rules)  # only what failed or is missing


@pytest.mark.parametrize(("answered", "same"), [(f"{MODEL}-2024-07-18", True), ("another-model", False)])
def test_replies_another_model_gave_are_kept_apart_not_recorded(
    answered: str, same: bool, tmp_path: Path, rules: list[Rule], caplog: pytest.LogCaptureFixture
) -> None:
    retriever = retriever_for(BatchResultsModel(model_name=MODEL), rules, SQLiteVerdictCache(tmp_path / "v.sqlite"))
    paths = export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL)
    lines = [ok_line(line, scored_judge(), n) for n, line in enumerate(batch_lines(paths), 1)]
    for line in lines:
        line["response"]["body"]["model"] = answered
    out = tmp_path / "results.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))

    with caplog.at_level("WARNING", logger="langchain_tag"):
        summary = import_openai_batch(out, retriever, tmp_path / "b")

    warned = [r.getMessage() for r in caplog.records if "another-model" in r.getMessage()]
    again = export_openai_batch((retriever, ITEMS), tmp_path / "retry", model_name=MODEL)
    if same:
        assert summary.complete and summary.recorded == len(lines) and not warned and again == []
        return
    assert summary.recorded == 0 and not summary.complete and len(warned) == 1
    assert summary.summary() == f"recorded 0 of {len(lines)} batch replies ({len(lines)} failed)"
    assert all("answered by 'another-model', not 'gpt-4o-mini'" in f.error for f in summary.failures)
    assert len(batch_lines(again)) == len(lines)  # none was stored as gpt-4o-mini's


def test_a_later_success_replaces_an_earlier_failure(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(BatchResultsModel(model_name=MODEL), rules)
    paths = export_openai_batch((retriever, ITEMS[:1]), tmp_path / "b", model_name=MODEL)
    lines = [ok_line(line, scored_judge(), n) for n, line in enumerate(batch_lines(paths), 1)]
    errors = tmp_path / "errors.jsonl"
    errors.write_text(json.dumps({**lines[0], "response": None, "error": {"code": "x", "message": "y"}}) + "\n")
    output = tmp_path / "output.jsonl"
    output.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = import_openai_batch([errors, output], retriever, tmp_path / "b")
    assert summary.complete and summary.failures == []


def test_import_refuses_another_judge(tmp_path: Path, rules: list[Rule]) -> None:
    exporter = retriever_for(BatchResultsModel(model_name=MODEL), rules)
    paths = export_openai_batch((exporter, ITEMS[:1]), tmp_path / "b", model_name=MODEL)
    results = answer(paths, tmp_path / "r.jsonl")
    other_model = retriever_for(BatchResultsModel(model_name="gpt-4.1"), rules)
    with pytest.raises(BatchError, match=r"exported for model 'gpt-4o-mini' but this judge is 'gpt-4\.1'"):
        import_openai_batch(results, other_model, tmp_path / "b")
    other_prompt = retriever_for(BatchResultsModel(model_name=MODEL), rules, predicate="relevance")
    with pytest.raises(BatchError, match="prompt version"):
        import_openai_batch(results, other_prompt, tmp_path / "b")
    no_cache = ApplicabilityRetriever(llm=BatchResultsModel(model_name=MODEL), rules=rules, cache=None)
    with pytest.raises(BatchError, match="no verdict cache"):
        import_openai_batch(results, no_cache, tmp_path / "b")


def test_the_judge_itself_can_import_and_a_lost_mapping_is_rebuilt(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(BatchResultsModel(model_name=MODEL), rules)
    paths = export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL)
    rebuilt = batch_mapping((retriever, ITEMS), model_name=MODEL)
    saved = BatchMapping.load(tmp_path / "b")
    assert {k: (e.key, e.input_id) for k, e in rebuilt.entries.items()} == {
        k: (e.key, e.input_id) for k, e in saved.entries.items()
    }
    summary = import_openai_batch(answer(paths, tmp_path / "r.jsonl"), retriever.judge, rebuilt)
    assert summary.complete


def test_a_bad_mapping_file_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / MAPPING_FILE
    path.write_text('{"format": "something else"}\n')
    with pytest.raises(BatchError, match=r"mapping.jsonl:1: not a batch mapping"):
        BatchMapping.load(path)
    with pytest.raises(BatchError, match="cannot read the batch mapping"):
        BatchMapping.load(tmp_path / "missing.jsonl")


def test_the_stand_in_model_never_answers() -> None:
    with pytest.raises(BatchError, match="no reply from batch model"):
        BatchResultsModel(model_name=MODEL).invoke("hello")


# --------------------------------------------------------------------------------------------- replies checked on import

# The same input ids as ITEMS, other texts: another export's inputs, or ITEMS edited after the export.
EDITED = [InputItem(id=item.id, text=item.text.replace("return x", "return list(x)")) for item in ITEMS]


def _inputs_file(path: Path, items: list[InputItem]) -> Path:
    path.write_text("".join(json.dumps({"id": item.id, "text": item.text}) + "\n" for item in items))
    return path


def _failed_rules(retriever: ApplicabilityRetriever, items: list[InputItem]) -> dict[str, list[str]]:
    return {r["id"]: [f["rule_id"] for f in r["failed"]] for r in match_corpus(items, retriever)}


def test_results_of_another_export_with_the_same_input_ids_are_refused(tmp_path: Path, rules: list[Rule]) -> None:
    first = retriever_for(BatchResultsModel(model_name=MODEL), rules)
    results = answer(export_openai_batch((first, ITEMS), tmp_path / "a", model_name=MODEL), tmp_path / "a.jsonl")
    second = retriever_for(BatchResultsModel(model_name=MODEL), rules)
    export_openai_batch((second, EDITED), tmp_path / "b", model_name=MODEL)

    summary = import_openai_batch(results, second, tmp_path / "b")
    assert not summary.complete and summary.recorded == 0  # none of A's replies lands on B's pairs
    pairs = len(ITEMS) * len(rules)
    assert len(summary.refused) == pairs and f"{pairs} refused" in summary.summary()
    assert [f.where for f in summary.refused] == [f"{results}:{n}" for n in range(1, pairs + 1)]
    assert all("changed since export" in f.error for f in summary.refused)
    assert summary.missing == list(BatchMapping.load(tmp_path / "b").entries)
    assert _failed_rules(second, EDITED) == {item.id: [r.rule_id for r in rules] for item in EDITED}


@pytest.mark.parametrize("mapping", ["saved", "rebuilt"])
def test_replies_to_an_input_edited_since_export_are_refused(tmp_path: Path, rules: list[Rule], mapping: str) -> None:
    retriever = retriever_for(BatchResultsModel(model_name=MODEL), rules)
    results = answer(export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL), tmp_path / "r.jsonl")
    current = [ITEMS[0], EDITED[1], *ITEMS[2:]]  # in-2 edited after the export
    if mapping == "saved":
        summary = import_openai_batch(results, retriever, tmp_path / "b", inputs=current)
    else:
        summary = import_openai_batch(results, retriever, batch_mapping((retriever, current), model_name=MODEL))
    assert not summary.complete and summary.recorded == (len(ITEMS) - 1) * len(rules)
    assert [(f.input_id, f.rule_id) for f in summary.refused] == [("in-2", r.rule_id) for r in reversed(rules)]
    assert all("changed since export" in f.error and f.where.startswith(f"{results}:") for f in summary.refused)
    assert len(summary.missing) == (len(rules) if mapping == "rebuilt" else 0)
    assert _failed_rules(retriever, current) == {"in-1": [], "in-2": [r.rule_id for r in rules], "in-3": [], "in-4": []}
    # The same inputs as at export: everything is recorded.
    assert import_openai_batch(results, retriever, tmp_path / "b", inputs=ITEMS).complete


def test_a_reply_to_an_input_no_longer_given_is_refused(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(BatchResultsModel(model_name=MODEL), rules)
    results = answer(export_openai_batch((retriever, ITEMS), tmp_path / "b", model_name=MODEL), tmp_path / "r.jsonl")
    summary = import_openai_batch(results, retriever, tmp_path / "b", inputs=ITEMS[1:])
    assert not summary.complete and {f.input_id for f in summary.refused} == {"in-1"}
    assert all("not among the current inputs" in f.error for f in summary.refused)


def test_conflicting_replies_for_one_custom_id_record_neither(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(BatchResultsModel(model_name=MODEL), rules)
    paths = export_openai_batch((retriever, ITEMS[:1]), tmp_path / "b", model_name=MODEL)
    lines = [ok_line(line, scored_judge(), n) for n, line in enumerate(batch_lines(paths), 1)]
    flipped = json.loads(json.dumps(lines[0]))  # the same request answered the other way
    choice = flipped["response"]["body"]["choices"][0]
    other = "NO" if choice["message"]["content"] == "YES" else "YES"
    choice["message"]["content"], choice["logprobs"] = other, yes_no_logprobs(other, 0.9 if other == "YES" else 0.1)
    again = {**lines[1], "id": "batch_req_again"}  # the same reply twice: recorded once
    out = tmp_path / "results.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in [*lines, flipped, again]))

    summary = import_openai_batch(out, retriever, tmp_path / "b")
    assert not summary.complete and summary.recorded == len(lines) - 1 and summary.duplicates == 1
    assert [(c.custom_id, c.where) for c in summary.conflicts] == [
        (lines[0]["custom_id"], f"{out}:1, {out}:{len(lines) + 1}")
    ]
    assert "1 conflicting" in summary.summary() and summary.missing == [] and summary.failures == []
    assert _failed_rules(retriever, ITEMS[:1]) == {"in-1": ["R-001"]}


def test_the_cli_import_refuses_replies_to_edited_inputs_and_exits_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from langchain_tag.cli.main import EXIT_JUDGMENTS_FAILED, main
    from langchain_tag.rules import save_rules

    inputs = _inputs_file(tmp_path / "inputs.jsonl", ITEMS)
    common = ["--inputs", str(inputs), "--rules", str(save_rules(rules, tmp_path / "rules.jsonl")), "--model", MODEL]
    out_dir = tmp_path / "batch"
    assert main(["batch", "export", *common, "--verdicts", str(tmp_path / "export.sqlite"), "--out", str(out_dir)]) == 0
    results = answer(sorted(out_dir.glob("batch-*.jsonl")), tmp_path / "results.jsonl")
    _inputs_file(inputs, [ITEMS[0], EDITED[1], *ITEMS[2:]])
    capsys.readouterr()

    for n, mapping in enumerate([[], ["--mapping", str(out_dir / MAPPING_FILE)]]):
        argv = ["batch", "import", str(results), *common, *mapping, "--verdicts", str(tmp_path / f"v{n}.sqlite")]
        assert main(argv) == EXIT_JUDGMENTS_FAILED
        err = capsys.readouterr().err
        assert f"recorded {3 * len(rules)} of {4 * len(rules)} batch replies" in err
        assert f"{len(rules)} refused" in err and "changed since export" in err
        assert f"{results}:{(len(ITEMS) - 2) * len(rules) + 1}:" in err  # the first refused line (in-2's last rule)


def test_the_cli_import_of_conflicting_replies_exits_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from langchain_tag.cli.main import EXIT_JUDGMENTS_FAILED, main
    from langchain_tag.rules import save_rules

    inputs = _inputs_file(tmp_path / "inputs.jsonl", ITEMS[:1])
    common = ["--inputs", str(inputs), "--rules", str(save_rules(rules, tmp_path / "rules.jsonl")), "--model", MODEL]
    common += ["--verdicts", str(tmp_path / "v.sqlite")]
    out_dir = tmp_path / "batch"
    assert main(["batch", "export", *common, "--out", str(out_dir)]) == 0
    results = answer(sorted(out_dir.glob("batch-*.jsonl")), tmp_path / "results.jsonl")
    first = json.loads(results.read_text().splitlines()[0])
    first["response"]["body"]["choices"][0]["message"]["content"] = "Perhaps."  # another reply to the same request
    with results.open("a") as handle:
        handle.write(json.dumps(first) + "\n")
    capsys.readouterr()
    assert main(["batch", "import", str(results), *common]) == EXIT_JUDGMENTS_FAILED
    err = capsys.readouterr().err
    assert "1 conflicting" in err and f"{results}:1, {results}:{len(rules) + 1}" in err


def test_a_mapping_of_the_earlier_format_or_edited_is_refused(tmp_path: Path, rules: list[Rule]) -> None:
    retriever = retriever_for(BatchResultsModel(model_name=MODEL), rules)
    export_openai_batch((retriever, ITEMS[:1]), tmp_path / "b", model_name=MODEL)
    header, *entries = (tmp_path / "b" / MAPPING_FILE).read_text().splitlines()
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text("\n".join([json.dumps({**json.loads(header), "version": 1}), *entries]) + "\n")
    with pytest.raises(BatchError, match=r"earlier\.jsonl:1: batch mapping format version 1"):
        BatchMapping.load(earlier)
    swapped = {**json.loads(entries[1]), "key": json.loads(entries[2])["key"]}  # an entry given another pair's key
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join([header, entries[0], json.dumps(swapped), *entries[2:]]) + "\n")
    with pytest.raises(BatchError, match=r"edited\.jsonl:3: custom_id '.*' does not end with its key's digest"):
        BatchMapping.load(edited)
    with pytest.raises(BatchError, match="needs the retriever"):
        import_openai_batch(tmp_path / "results.jsonl", retriever.judge, tmp_path / "b", inputs=ITEMS[:1])
