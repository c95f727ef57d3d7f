"""Inputs given in code: strings, InputItem objects and mappings, each checked as a file's lines are."""

from __future__ import annotations

import pytest


def test_inputs_given_in_code_as_mappings_are_read_as_lines_are() -> None:
    from langchain_tag.scale.inputs import InputsError, as_input_items

    items = as_input_items([{"id": "a", "text": "x = 1", "lang": "py"}, "y = 2"])
    assert [(i.id, i.text, i.fields) for i in items] == [("a", "x = 1", {"lang": "py"}), ("2", "y = 2", {})]
    with pytest.raises(InputsError, match=r'inputs:1: expected a "text" string, got no text'):
        as_input_items([{"id": "a", "body": "x"}])
    with pytest.raises(InputsError, match=r"inputs:2: expected a string, an InputItem or a mapping"):
        as_input_items(["ok", 42])
