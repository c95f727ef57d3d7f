"""The ``wnc`` quality set, on a tiny synthetic corpus directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_tag_bench.data import BenchDataError
from langchain_tag_bench.wnc_cases import LABELS_PATH, STATEMENTS_PATH, wnc_cases

PRE = [
    "the legendary architect designed the library .",
    "the bridge opened in 2019 .",
    "unfortunately , the festival was cancelled .",
    "critics argue the tram is noisy .",
]
POST = [
    "the architect designed the library .",
    "the bridge opened in 2019 .",
    "the festival was cancelled .",
    "the tram is noisy .",
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "pre.test").write_text("\n".join(PRE) + "\n")
    (tmp_path / "post.test").write_text("\n".join(POST) + "\n")
    return tmp_path


@pytest.fixture
def labels(tmp_path: Path) -> Path:
    path = tmp_path / "labels.json"
    labels = {"0": ["promotional"], "2": ["editorializing"], "3": ["vague-attribution", "one-sided"]}
    path.write_text(json.dumps({"labels": labels}))
    return path


def test_each_labelled_pair_gives_a_breaking_and_a_compliant_case(corpus: Path, labels: Path) -> None:
    cases = wnc_cases(corpus, labels)
    # Line 1 is unlabelled, so it gives no case; the others give two each, in line order.
    assert [c["id"] for c in cases] == [
        "wnc-000-biased",
        "wnc-000-edited",
        "wnc-002-biased",
        "wnc-002-edited",
        "wnc-003-biased",
        "wnc-003-edited",
    ]
    assert [c["text"] for c in cases[:2]] == [PRE[0], POST[0]]
    assert [c["violates"] for c in cases] == [
        ["promotional"],
        [],
        ["editorializing"],
        [],
        ["vague-attribution", "one-sided"],
        [],
    ]
    # Pairs alternate dev and test; both sentences of a pair share a split.
    assert [c["split"] for c in cases] == ["dev", "dev", "test", "test", "dev", "dev"]


def test_misaligned_or_short_corpus_is_refused(corpus: Path, labels: Path, tmp_path: Path) -> None:
    (corpus / "post.test").write_text("\n".join(POST[:3]) + "\n")
    with pytest.raises(BenchDataError, match="must align"):
        wnc_cases(corpus, labels)
    (corpus / "post.test").write_text("\n".join(POST) + "\n")
    far = tmp_path / "far.json"
    far.write_text(json.dumps({"labels": {"9": ["promotional"]}}))
    with pytest.raises(BenchDataError, match="line 9"):
        wnc_cases(corpus, far)
    with pytest.raises(BenchDataError, match=r"pre\.test"):
        wnc_cases(tmp_path / "absent", labels)


def test_wnc_quality_set_statements_are_policy_passages_and_labels_name_them(corpus: Path) -> None:
    from langchain_tag_bench.quality import load_quality_set

    statements = json.loads(STATEMENTS_PATH.read_text())
    known = {s["id"] for s in statements}
    shipped = json.loads(LABELS_PATH.read_text())["labels"]
    assert shipped and all(ids and set(ids) <= known for ids in shipped.values())
    # The shipped labels name lines of the real corpus; with a 4-line corpus they are out of range.
    with pytest.raises(BenchDataError, match="line"):
        load_quality_set("wnc", data_path=corpus)


def test_wnc_quality_set_reads_the_corpus_it_is_given(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_tag_bench import wnc_cases as module
    from langchain_tag_bench.quality import load_quality_set, statement_spans

    small = corpus / "labels.json"
    small.write_text(json.dumps({"labels": {"0": ["promotional"], "2": ["editorializing"]}}))
    monkeypatch.setattr(module, "wnc_cases", lambda data_dir: wnc_cases(data_dir, small))
    qs = load_quality_set("wnc", data_path=corpus)
    assert [c["id"] for c in qs.cases] == ["wnc-000-biased", "wnc-000-edited", "wnc-002-biased", "wnc-002-edited"]
    spans = statement_spans(qs)
    assert len(qs.statements) == 11
    assert all(qs.policy_text[slice(*spans[s["id"]])] == s["text"] for s in qs.statements)
    assert qs.task_input and "neutral" in qs.domain


@pytest.mark.parametrize("text", ["{not json", '{"pairs": {}}', '{"labels": {"one": ["promotional"]}}', "[1, 2]"])
def test_a_malformed_labels_file_is_refused_naming_it(corpus: Path, tmp_path: Path, text: str) -> None:
    bad = tmp_path / "bad-labels.json"
    bad.write_text(text)
    with pytest.raises(BenchDataError, match=r"bad-labels\.json"):
        wnc_cases(corpus, bad)
