"""The PEP 8 benchmark: the pycodestyle gold, the items and their summary.

Also the helpers the other PEP 8 test modules share (:data:`CLEAN`, :func:`codes`, :func:`parses`).
"""

from __future__ import annotations

import ast
import gzip
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from langchain_tag_bench.data import BenchDataError
from langchain_tag_bench.metrics import score_retrieval
from langchain_tag_bench.pep8 import Pep8Item, gold_summary, load_pep8_items, pycodestyle_codes
from langchain_tag_bench.pep8_checks import PEP8_CHECKS
from langchain_tag_bench.style_breaks import make_variants

pytest.importorskip("pycodestyle")

# A clean module with a site for every transform: pycodestyle reports nothing.
CLEAN = '''"""A small module used to test the transforms."""
import math
import os
from typing import List

# Scale used by the helpers.
SCALE = 2


def total(values: List[int], limit=None) -> int:
    """Sum the values below the limit."""
    result = 0
    for value in values:
        if value is None:
            continue
        if value not in (1, 2):
            result += value * SCALE

    try:
        result = math.floor(result)
    except ValueError:
        result = 0
    if limit:
        result = min(result, limit)
    return result


def order(items: List[str], reverse=False) -> List[str]:
    # Longest first, then by name.
    ordered = sorted(items, key=lambda item: (len(item), item))
    if len(ordered) > 1 and ordered is not items:
        ordered = list(ordered)
    return ordered[::-1] if reverse else ordered


def root(path):
    return os.path.basename(path)
'''

_TABLE = {c.code for c in PEP8_CHECKS}
# Codes pycodestyle reported (unfiltered) in the PEP 8 tests that use codes().
_SEEN: set[str] = set()


def raw_codes(source: str) -> set[str]:
    """Every code pycodestyle reports, not filtered to the rule set."""
    import pycodestyle

    found: set[str] = set()

    class Collect(pycodestyle.BaseReport):  # type: ignore[misc]
        def error(self, line_number: int, offset: int, text: str, check: Any) -> Any:
            code = super().error(line_number, offset, text, check)
            if code:
                found.add(code)
            return code

    guide = pycodestyle.StyleGuide(quiet=True, ignore=["W503", "W504"], max_line_length=79)
    lines = source.splitlines(keepends=True)
    pycodestyle.Checker(lines=lines, options=guide.options, report=Collect(guide.options)).check_all()
    return found


def codes(source: str) -> tuple[str, ...]:
    """The gold codes; checks that pycodestyle reported nothing outside the rule set."""
    found = pycodestyle_codes(source)
    raw = raw_codes(source)
    _SEEN.update(raw)
    assert raw <= _TABLE, f"codes outside the rule set: {sorted(raw - _TABLE)}"
    assert set(found) == raw
    return found


def parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except SyntaxError:
        return False
    return True


def write_humaneval(path: Path, records: list[Any], *, raw_lines: list[str] | None = None) -> Path:
    lines = raw_lines if raw_lines is not None else [json.dumps(r) for r in records]
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def problem(number: int) -> dict[str, str]:
    return {
        "task_id": f"HumanEval/{number}",
        "prompt": (
            "from typing import List\n\n\n"
            f"def f{number}(values: List[int], limit: int) -> List[int]:\n"
            '    """Keep the values below the limit.\n'
            f"    >>> f{number}([1, 5], 3)\n"
            "    [1]\n"
            '    """\n'
        ),
        "canonical_solution": (
            "    kept = []\n"
            "    for value in values:\n"
            "        if value < limit and value is not None:\n"
            "            kept.append(value * 2)\n"
            "    return kept\n"
        ),
        "entry_point": f"f{number}",
        "test": "",
    }


# --------------------------------------------------------------------------
# The gold.
# --------------------------------------------------------------------------
def test_clean_code_has_no_codes() -> None:
    assert codes(CLEAN) == ()
    assert codes("def f(x):\n    return x + 1\n") == ()


def test_hand_checked_codes() -> None:
    assert codes("x=1\n") == ("E225",)
    assert codes("x = '" + "a" * 94 + "'\n") == ("E501",)
    assert codes("x = '" + "a" * 72 + "'\n") == ()  # 79 characters exactly
    assert codes("import os, sys\n") == ("E401",)
    assert codes("def f(x): return x\n") == ("E704",)  # off by default, kept
    assert codes("x = 1+2\n") == ("E226",)  # off by default, kept
    assert codes("x = (1 +\n     2)\n") == ()  # W504 is not reported
    assert codes("x = (1\n     + 2)\n") == ()  # nor W503
    assert codes("x = 1") == ("W292",)
    assert codes("x = 1\r\ny = 2\r\n") == ()


def test_gold_does_not_print(capsys: pytest.CaptureFixture[str]) -> None:
    codes("x=1 \n")
    assert capsys.readouterr().out == ""


def test_gold_scores_with_score_retrieval() -> None:
    gold = codes("x=1;\n")
    assert gold == ("E225", "E703")
    assert score_retrieval(["E225", "E501"], gold).recall == 0.5


# --------------------------------------------------------------------------
# Loading items.
# --------------------------------------------------------------------------
def test_load_items_keys_groups_and_limit(tmp_path: Path) -> None:
    path = write_humaneval(tmp_path / "he.jsonl.gz", [problem(n) for n in range(3)])
    items = load_pep8_items(path, limit=2, variants=2, seed=0)
    assert [i.key for i in items] == [
        "HumanEval/0",
        "HumanEval/0#v1",
        "HumanEval/0#v2",
        "HumanEval/1",
        "HumanEval/1#v1",
        "HumanEval/1#v2",
    ]
    assert [i.group for i in items] == ["canonical", "variant", "variant"] * 2
    first = items[0]
    assert first.code == problem(0)["prompt"] + problem(0)["canonical_solution"]
    assert first.gold == () and first.transforms == ()
    canonical = {i.key: i.code for i in items if i.group == "canonical"}
    for item in items:
        assert item.gold == codes(item.code)
        assert parses(item.code)
        if item.group == "variant":
            assert item.transforms
            assert item.code != canonical[item.key.split("#")[0]]
            assert "+".join(item.transforms) in dict(make_variants(canonical[item.key.split("#")[0]], seed=0, n=2))
    assert load_pep8_items(path, limit=2, variants=2, seed=0) == items
    assert len(load_pep8_items(path, variants=0)) == 3


def test_load_items_bad_files(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl.gz"
    with pytest.raises(BenchDataError, match=r"nope\.jsonl\.gz"):
        load_pep8_items(missing)
    bad_json = write_humaneval(tmp_path / "bad.jsonl.gz", [], raw_lines=[json.dumps(problem(0)), "{not json"])
    with pytest.raises(BenchDataError, match=r"bad\.jsonl\.gz, line 2"):
        load_pep8_items(bad_json)
    no_field = write_humaneval(tmp_path / "field.jsonl.gz", [{"task_id": "HumanEval/0", "prompt": "x = 1\n"}])
    with pytest.raises(BenchDataError, match=r"field\.jsonl\.gz, line 1.*canonical_solution"):
        load_pep8_items(no_field)
    not_gzip = tmp_path / "plain.jsonl.gz"
    not_gzip.write_text("hello\n")
    with pytest.raises(BenchDataError, match=r"plain\.jsonl\.gz"):
        load_pep8_items(not_gzip)
    with pytest.raises(ValueError):
        load_pep8_items(not_gzip, limit=-1)


def test_gold_summary_counts() -> None:
    items = [
        Pep8Item("a", "x = 1\n", (), "canonical"),
        Pep8Item("a#v1", "x=1;\n", ("E225", "E703"), "variant", ("tight_assignment", "trailing_semicolon")),
        Pep8Item("a#v2", "x=1\n", ("E225",), "variant", ("tight_assignment",)),
    ]
    summary = gold_summary(items)
    assert summary["items"] == 3
    assert summary["empty_gold"] == 1
    assert summary["mean_gold_size"] == 1.0
    assert summary["code_counts"] == {"E225": 2, "E703": 1}
    assert summary["transform_counts"] == {"tight_assignment": 2, "trailing_semicolon": 1}
    assert summary["by_group"]["variant"] == {"items": 2, "empty_gold": 0, "mean_gold_size": 1.5, "max_gold_size": 2}


def test_every_code_seen_is_in_rule_set() -> None:
    """Every code pycodestyle gave in these tests (raw, unfiltered) is a rule."""
    codes(CLEAN + "x=1 \n")
    assert _SEEN and _SEEN <= _TABLE


def test_gold_drops_codes_outside_the_rule_set() -> None:
    # Not valid Python: pycodestyle also reports E112 (left out of the rule set).
    assert "E112" in raw_codes("if True:\npass\n")
    assert set(pycodestyle_codes("if True:\npass\n")) <= _TABLE
