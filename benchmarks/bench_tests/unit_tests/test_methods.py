"""Method names: expansion, labels, retrieval-only mapping, errors."""

from __future__ import annotations

import pytest

from langchain_tag_bench.methods import parse_methods


def test_shorthands_expand_in_order_without_repeats() -> None:
    names = [m.name for m in parse_methods("none, all_rules,similarity,tag,tag")]
    assert names == ["none", "all_rules", "similarity@5", "similarity@10", "similarity@15", "similarity@20", "tag"]
    assert [m.name for m in parse_methods("rules_similarity", ks=(3, 7))] == [
        "rules_similarity@3",
        "rules_similarity@7",
    ]
    assert [m.name for m in parse_methods("phases")] == [f"tag-no-p{i}" for i in range(1, 6)]
    assert [m.name for m in parse_methods("2x2", ks=(5, 20))] == [
        "similarity@20",
        "rules_similarity@20",
        "chunks_applicability",
        "tag",
    ]
    every = [m.name for m in parse_methods("all", ks=(10,))]
    assert every == [
        "none",
        "all_rules",
        "similarity@10",
        "tag",
        "relevance",
        "rules_similarity@10",
        "chunks_applicability",
        *(f"tag-no-p{i}" for i in range(1, 6)),
    ]


def test_single_rows_and_their_labels() -> None:
    rows = {m.name: m for m in parse_methods(["similarity@7", "tag-no-p3", "relevance", "chunks_applicability"])}
    assert (rows["similarity@7"].units, rows["similarity@7"].k, rows["similarity@7"].label) == (
        "chunks",
        7,
        "M2 standard RAG k=7",
    )
    assert rows["tag-no-p3"].skip_phase == 3 and rows["tag-no-p3"].label == "TAG without phase 3"
    assert rows["tag-no-p3"].judged and rows["tag-no-p3"].needs_sources
    assert rows["relevance"].selection == "relevance" and rows["relevance"].label == "relevance reranker"
    assert rows["chunks_applicability"].units == "chunks" and rows["chunks_applicability"].judged


def test_retrieval_only_mapping() -> None:
    rows = {m.name: m for m in parse_methods("none,similarity@5,tag,chunks_applicability,all_rules")}
    assert rows["similarity@5"].for_retrieval_only().name == "rules_similarity@5"
    assert rows["tag"].for_retrieval_only() is rows["tag"]
    assert rows["all_rules"].for_retrieval_only() is rows["all_rules"]
    assert rows["none"].for_retrieval_only() is None
    assert rows["chunks_applicability"].for_retrieval_only() is None


@pytest.mark.parametrize("spec", ["bogus", "similarity@x", "tag-no-p6", "", " , "])
def test_unknown_or_empty_is_an_error(spec: str) -> None:
    with pytest.raises(ValueError, match=r"unknown method|no methods"):
        parse_methods(spec)


def test_bad_cutoffs() -> None:
    with pytest.raises(ValueError, match="k must be at least 1"):
        parse_methods("similarity@0")
    with pytest.raises(ValueError, match="cut-offs must be positive"):
        parse_methods("similarity", ks=(0, 5))
