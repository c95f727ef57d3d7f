from __future__ import annotations

from typing import Any

from langchain_tag.app import build_app_graph
from tests.helpers.app_fakes import fake_models

INTERNAL = {"settings", "rule_list", "proposed", "below", "scores", "given", "unit_kind", "remaining"}


def _described(schema: dict[str, Any]) -> dict[str, str]:
    return {name: prop.get("description", "") for name, prop in schema["properties"].items()}


def test_the_input_schema_is_the_input_and_optional_rules_documented() -> None:
    schema = build_app_graph(fake_models()).get_input_jsonschema()
    fields = _described(schema)
    assert set(fields) == {"input", "rules"} and schema["required"] == ["input"]
    assert all(fields.values()) and schema["properties"]["input"]["type"] == "string"


def test_the_output_schema_is_what_a_person_reads_documented() -> None:
    schema = build_app_graph(fake_models()).get_output_jsonschema()
    fields = _described(schema)
    assert set(fields) == {"output", "matched", "findings", "rounds", "mode", "review"}
    assert not INTERNAL & set(fields) and all(fields.values())
    rule_ref = schema["$defs"]["RuleRef"]
    assert set(rule_ref["properties"]) == {"rule_id", "rule_name", "action", "score"}
    assert all(p.get("description") for p in rule_ref["properties"].values())
    assert set(schema["$defs"]["ReviewRecord"]["properties"]) >= {"reviewer", "added", "dropped", "approved"}


def test_the_context_schema_lists_every_setting_documented() -> None:
    schema = build_app_graph(fake_models()).get_context_jsonschema()
    assert schema is not None
    fields = _described(schema)
    assert set(fields) == {
        "judge_model", "judge_base_url", "threshold", "rules_file", "rule_set", "mode", "check_rounds", "review",
        "executor", "k",
    }  # fmt: skip
    assert all(fields.values()) and schema.get("required", []) == []
    mode = schema["properties"]["mode"]["anyOf"][0]
    assert mode["enum"] == ["tag", "relevance", "all_rules", "similarity", "none"]
    assert schema["properties"]["threshold"]["anyOf"][0] == {"maximum": 1, "minimum": 0, "type": "number"}


def test_the_input_rules_are_typed_so_studio_renders_a_rule_form() -> None:
    schema = build_app_graph(fake_models()).get_input_jsonschema()
    rules = schema["properties"]["rules"]
    (listed,) = [s for s in rules.get("anyOf", [rules]) if s.get("type") == "array"]
    item = schema["$defs"][listed["items"]["$ref"].rsplit("/", 1)[1]]
    assert set(item["required"]) == {"rule_id", "rule_name", "condition", "action"}
    assert {"rule_id", "rule_name", "condition", "action", "source_text", "category_tags"} <= set(item["properties"])
    assert all(p.get("description") for p in item["properties"].values())
    assert item["properties"]["condition"]["type"] == "string"
    assert item.get("additionalProperties") is True  # a rule's own extra fields (severity, url) are kept


def test_the_review_request_schema_offers_condition_and_source() -> None:
    from pydantic import TypeAdapter

    from langchain_tag.app import ReviewRequest

    schema = TypeAdapter(ReviewRequest).json_schema()
    offered = schema["$defs"][schema["properties"]["matched"]["items"]["$ref"].rsplit("/", 1)[1]]
    assert {"rule_id", "rule_name", "condition", "action", "score", "source"} <= set(offered["properties"])
    assert all(p.get("description") for p in offered["properties"].values())
