"""The pep8 quality set: PEP 8 excerpts, statements verbatim in them, pycodestyle labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pycodestyle")

from langchain_tag_bench import pep8_cases
from langchain_tag_bench.data import BenchDataError, default_data_path
from langchain_tag_bench.pep8_cases import RECOMMENDATIONS, SECTIONS, pep8_policy, run_pycodestyle


def _pep8_path() -> Path:
    try:
        return default_data_path("pep8/pep-0008.rst")
    except BenchDataError:
        pytest.skip("the shared PEP 8 source is not on this machine")


def test_pycodestyle_labels_only_the_selected_codes() -> None:
    snippets = ["def f( x ):\n    return x == None\n", "def g(x):\n    return x is None\n"]
    assert run_pycodestyle(snippets, ["E201", "E202", "E711"]) == [["E201", "E202", "E711"], []]
    assert run_pycodestyle(snippets[:1], ["E711"]) == [["E711"]]  # E201/E202 not selected


def test_every_statement_is_verbatim_in_the_excerpts_and_names_codes() -> None:
    policy = pep8_policy(_pep8_path())
    statements = json.loads(pep8_cases.STATEMENTS_PATH.read_text(encoding="utf-8"))
    assert len(statements) >= 15 and len({s["id"] for s in statements}) == len(statements)
    for statement in statements:
        assert statement["text"] in policy and statement["codes"]
    assert policy.startswith(SECTIONS[0]) and 1000 < len(policy.split()) < 2500
    assert "Designing for Inheritance" not in policy  # only the chosen excerpts


def test_a_missing_excerpt_is_named(tmp_path: Path) -> None:
    text = _pep8_path().read_text(encoding="utf-8").replace(RECOMMENDATIONS[2], "- Something else entirely")
    broken = tmp_path / "pep8.rst"
    broken.write_text(text, encoding="utf-8")
    with pytest.raises(BenchDataError, match="no recommendation starting"):
        pep8_policy(broken)
    with pytest.raises(BenchDataError, match="cannot read PEP 8"):
        pep8_policy(tmp_path / "missing.rst")
