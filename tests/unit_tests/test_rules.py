from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from langchain_core.documents import Document

from langchain_tag.integrations.similarity import in_memory_chroma
from langchain_tag.rules import Rule, RuleFileError, load_rules, rules_from_documents, save_rules
from langchain_tag.testing import HashingEmbeddings


def _full_rule() -> Rule:
    return Rule(
        rule_id="R-009",
        rule_name="sign and trade limits",
        condition="the scenario includes a sign-and-trade",
        action="check the contract is 3 to 4 seasons",
        source_text="A sign-and-trade contract must be ...",
        category_tags=["Trade", "length, seasons"],
        primary_tag="trade",
        applies_when="sign-and-trade",
        constraint="3 to 4 seasons",
        violation_check="length outside 3-4",
        does_not_apply_to=["rookie scale, first round", "two-way contracts"],
        document_id="cba",
        span_id="S-004",
        atomic_id="A-007",
        source_start=10,
        source_end=46,
        faithfulness=0.97,
        conflicts_with=["R-010"],
        related_rules=["R-011"],
        merged_from=["R-012"],
    )


def test_document_round_trip_is_lossless() -> None:
    rule = _full_rule()
    doc = rule.to_document()
    assert Rule.from_document(doc) == rule
    assert doc.id == "R-009"
    assert doc.metadata["category_tags"] == "trade, length seasons"
    assert all(isinstance(v, (str, int, float, bool)) for v in doc.metadata.values())


def test_tags_are_normalised_and_commas_cannot_break_round_trip() -> None:
    rule = Rule(rule_id="a", rule_name="n", condition="c", action="x", category_tags="A,  b , a")
    assert rule.category_tags == ["a", "b"]
    assert Rule.from_document(rule.to_document()).category_tags == ["a", "b"]


def test_any_document_with_the_keys_is_a_rule() -> None:
    doc = Document(
        page_content="whatever",
        metadata={
            "rule_id": "X1",
            "rule_name": "n",
            "condition": "c",
            "action": "a",
            "category_tags": "t1,t2",
            "tag_verdict": "YES",
            "source": "chroma",
        },
    )
    rule = Rule.from_document(doc)
    assert rule.rule_id == "X1" and rule.category_tags == ["t1", "t2"]


def test_document_without_rule_keys_is_refused() -> None:
    with pytest.raises(RuleFileError, match="lacks condition, action"):
        Rule.from_document(Document(page_content="x", metadata={"rule_id": "1", "rule_name": "n"}))


def test_duplicate_ids_are_refused(rules: list[Rule]) -> None:
    docs = [rules[0].to_document(), rules[0].to_document()]
    with pytest.raises(RuleFileError, match="duplicate rule_id 'R-001'"):
        rules_from_documents(docs)


def test_jsonl_round_trip(tmp_path: Path, rules: list[Rule]) -> None:
    path = save_rules(rules + [_full_rule()], tmp_path / "rules.jsonl")
    assert load_rules(path) == rules + [_full_rule()]


def test_jsonl_bad_json_names_line(tmp_path: Path, rules: list[Rule]) -> None:
    path = save_rules(rules, tmp_path / "r.jsonl")
    lines = path.read_text().splitlines()
    lines.insert(2, "{not json")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RuleFileError, match=r"r\.jsonl:3: not JSON"):
        load_rules(path)


def test_jsonl_missing_field_names_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    good = {"rule_id": "a", "rule_name": "n", "condition": "c", "action": "x"}
    bad = {"rule_id": "b", "rule_name": "n", "condition": "c"}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(RuleFileError, match=r"r\.jsonl:3: field 'action'"):
        load_rules(path)


def test_jsonl_duplicate_ids(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    line = json.dumps({"rule_id": "a", "rule_name": "n", "condition": "c", "action": "x"})
    path.write_text(line + "\n" + line + "\n")
    with pytest.raises(RuleFileError, match="duplicate rule_id 'a'"):
        load_rules(path)


def test_jsonl_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    line = json.dumps({"rule_id": "a", "rule_name": "n", "condition": "c", "action": "x"})
    other = json.dumps({"rule_id": "b", "rule_name": "n", "condition": "c", "action": "x"})
    path.write_text(line + "\n" + other + "\n\n" + line + "\n")
    with pytest.raises(RuleFileError, match=r"r\.jsonl:4: duplicate rule_id 'a' \(first on line 1\)"):
        load_rules(path)


def test_jsonl_with_a_utf8_bom_loads(tmp_path: Path, rules: list[Rule]) -> None:
    path = save_rules(rules, tmp_path / "r.jsonl")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert load_rules(path) == rules


def test_jsonl_bad_byte_names_file_and_line(tmp_path: Path, rules: list[Rule]) -> None:
    path = save_rules(rules, tmp_path / "r.jsonl")
    path.write_bytes(path.read_bytes() + b'{"rule_id": "caf\xe9"}\n')
    with pytest.raises(RuleFileError, match=rf"^{re.escape(str(path))}:{len(rules) + 1}: not UTF-8 text \(0xe9"):
        load_rules(path)


def test_jsonl_missing_file_names_it(tmp_path: Path) -> None:
    path = tmp_path / "missing.jsonl"
    with pytest.raises(FileNotFoundError) as exc:
        load_rules(path)
    assert str(exc.value) == f"{path}: cannot read rules (No such file or directory)"
    with pytest.raises(IsADirectoryError, match=f"^{re.escape(str(tmp_path))}: cannot read rules"):
        load_rules(tmp_path)


def test_jsonl_unencodable_text_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"rule_id": "a", "rule_name": "n", "condition": "c \\ud800", "action": "x"}\n')
    with pytest.raises(RuleFileError, match=r"r\.jsonl:1: a text holds \\ud800, which UTF-8 cannot encode"):
        load_rules(path)


def test_rule_documents_store_in_chroma_and_come_back(rules: list[Rule]) -> None:
    full = _full_rule()
    store = in_memory_chroma([r.to_document() for r in rules + [full]], HashingEmbeddings())
    got = store.get(include=["documents", "metadatas"])
    back = {
        Rule.from_document(Document(page_content=d, metadata=m)).rule_id: Rule.from_document(
            Document(page_content=d, metadata=m)
        )
        for d, m in zip(got["documents"], got["metadatas"], strict=True)
    }
    assert back["R-009"] == full
    assert back["R-003"] == rules[2]


def test_judge_prompt_never_contains_action(rules: list[Rule]) -> None:
    from langchain_tag.judging.prompts import JUDGE_PROMPTS
    from langchain_tag.testing import prompt_text

    text = prompt_text(JUDGE_PROMPTS["applicability"].messages("x = 1", rules[0]))
    assert rules[0].condition in text
    assert rules[0].action not in text


def test_extra_fields_travel_through_files_and_documents(tmp_path: Path) -> None:
    rule = Rule(rule_id="R-1", rule_name="n", condition="c", action="a", severity="high", refs=["u1", "u2"])
    path = save_rules([rule], tmp_path / "r.jsonl")
    loaded = load_rules(path)[0]
    assert loaded.model_extra == {"severity": "high", "refs": ["u1", "u2"]}
    doc = loaded.to_document()
    assert doc.metadata["severity"] == "high" and json.loads(doc.metadata["refs"]) == ["u1", "u2"]
    doc.metadata["tag_score"] = 0.9  # verdict keys added by a retriever are not rule fields
    back = Rule.from_document(doc)
    assert back.model_extra == {"severity": "high", "refs": ["u1", "u2"]}


def test_rule_document_content_is_the_action_unless_asked_for_search_text() -> None:
    rule = Rule(rule_id="R-1", rule_name="bare except", condition="an except names no class", action="name the class")
    assert rule.to_document().page_content == "name the class"
    searched = rule.to_document(content="search").page_content
    assert "an except names no class" in searched and "name the class" in searched
    assert Rule.from_document(rule.to_document()) == rule  # the condition travels in metadata


def test_a_repeated_rule_id_gets_one_message_on_every_front(
    tmp_path: Path, rules: list[Rule], capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule file, rule documents, the retriever, the review page and the command line: one check, one message."""
    from langchain_tag import ApplicabilityRetriever
    from langchain_tag.cli.main import main
    from langchain_tag.review import render_review
    from langchain_tag.testing import fake_judge

    repeated = [*rules, rules[0]]
    path = tmp_path / "rules.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in repeated) + "\n")  # R-001 on lines 1 and 6
    from_a_file = re.escape(f"{path}:6: duplicate rule_id 'R-001' (first on line 1)")
    said: dict[str, str] = {}
    for front, make in {
        "load_rules": lambda: load_rules(path),
        "rules_from_documents": lambda: rules_from_documents([r.to_document() for r in repeated]),
        "retriever": lambda: ApplicabilityRetriever(llm=fake_judge(set()), rules=repeated),
        "render_review": lambda: render_review(repeated, tmp_path / "source.md", tmp_path / "review.html"),
    }.items():
        with pytest.raises(ValueError) as exc:
            make()
        said[front] = str(exc.value)
    assert main(["match", "x", "--rules", str(path)]) == 1
    said["match"] = capsys.readouterr().err

    assert re.search(from_a_file, said["load_rules"]) and re.search(from_a_file, said["match"])
    given = {front: text for front, text in said.items() if front not in ("load_rules", "match")}
    assert {
        front: "duplicate rule_id 'R-001' (rules 1 and 6)" in text for front, text in given.items()
    } == dict.fromkeys(given, True), given
