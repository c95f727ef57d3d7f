"""HumanEval x PEP 8 scoring, on two small inline problems (the shared data is not needed)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from langchain_tag_bench.code import (
    DATA_FILE,
    NETWORK_ERROR,
    CodeScores,
    HumanEvalProblem,
    PassResult,
    PylintResult,
    assemble_program,
    bandit_issues,
    extract_code,
    load_humaneval,
    pass_at_1,
    pylint_score,
    radon_complexity,
    run_tests,
    score_completion,
)
from langchain_tag_bench.data import BenchDataError

DOUBLE_PROMPT = '''from typing import List


def _double(value: int) -> int:
    """Twice the value."""
    return 2 * value


def double_all(numbers: List[int]) -> List[int]:
    """Double every number.
    >>> double_all([1, 2])
    [2, 4]
    """
'''

DOUBLE_TEST = """

METADATA = {}


def check(candidate):
    assert candidate([1, 2]) == [2, 4]
    assert candidate([]) == []
    assert candidate([-3]) == [-6]
"""

ADD_PROMPT = '''

def add(a: int, b: int) -> int:
    """Add two numbers.
    >>> add(2, 3)
    5
    """
'''

ADD_TEST = """

def check(candidate):
    assert candidate(2, 3) == 5
    assert candidate(-1, 1) == 0
"""

RECORDS: list[dict[str, Any]] = [
    {
        "task_id": "Toy/0",
        "prompt": DOUBLE_PROMPT,
        "entry_point": "double_all",
        "canonical_solution": "    return [_double(number) for number in numbers]\n",
        "test": DOUBLE_TEST,
    },
    {
        "task_id": "Toy/1",
        "prompt": ADD_PROMPT,
        "entry_point": "add",
        "canonical_solution": "    return a + b\n",
        "test": ADD_TEST,
    },
]

DOUBLE = HumanEvalProblem(**RECORDS[0])
ADD = HumanEvalProblem(**RECORDS[1])

CLEAN_MODULE = '''"""Small arithmetic helpers."""


def add(first: int, second: int) -> int:
    """Return the sum of two integers."""
    return first + second'''  # no final newline on purpose


def _write_gz(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


# --------------------------------------------------------------------------
# Loading.
# --------------------------------------------------------------------------
def test_load_gz_file_keeps_order_and_fields(tmp_path: Path) -> None:
    path = _write_gz(tmp_path / "toy.jsonl.gz", [json.dumps(RECORDS[0]), "", json.dumps(RECORDS[1])])
    problems = load_humaneval(path)
    assert problems == [DOUBLE, ADD]
    assert [problem.key for problem in problems] == ["Toy/0", "Toy/1"]
    assert problems[1].canonical_solution == "    return a + b\n"


def test_load_limit(tmp_path: Path) -> None:
    path = _write_gz(tmp_path / "toy.jsonl.gz", [json.dumps(record) for record in RECORDS])
    assert load_humaneval(path, limit=1) == [DOUBLE]
    assert load_humaneval(str(path), limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        load_humaneval(path, limit=-1)


def test_load_directory_and_plain_jsonl(tmp_path: Path) -> None:
    _write_gz(tmp_path / DATA_FILE, [json.dumps(record) for record in RECORDS])
    assert load_humaneval(tmp_path) == [DOUBLE, ADD]
    plain = tmp_path / "toy.jsonl"
    plain.write_text(json.dumps(RECORDS[1]) + "\n", encoding="utf-8")
    assert load_humaneval(plain) == [ADD]


def test_load_bad_json_line_names_path_and_line(tmp_path: Path) -> None:
    path = _write_gz(tmp_path / "bad.jsonl.gz", [json.dumps(RECORDS[0]), '{"task_id": "Toy/1",'])
    with pytest.raises(BenchDataError, match=r"bad\.jsonl\.gz, line 2: invalid JSON") as info:
        load_humaneval(path)
    assert isinstance(info.value, ValueError)


def test_load_missing_field_names_field_and_line(tmp_path: Path) -> None:
    record = {key: value for key, value in RECORDS[1].items() if key != "test"}
    path = _write_gz(tmp_path / "toy.jsonl.gz", [json.dumps(RECORDS[0]), json.dumps(record)])
    with pytest.raises(BenchDataError, match=r"line 2: missing field\(s\) test"):
        load_humaneval(path)


def test_load_missing_file_names_path(tmp_path: Path) -> None:
    with pytest.raises(BenchDataError, match=r"nowhere\.jsonl\.gz"):
        load_humaneval(tmp_path / "nowhere.jsonl.gz")
    with pytest.raises(BenchDataError, match=re.escape(DATA_FILE)):
        load_humaneval(tmp_path)  # a directory without the data file


# --------------------------------------------------------------------------
# Extracting and assembling code.
# --------------------------------------------------------------------------
def test_extract_code_takes_first_python_fence_and_drops_prose() -> None:
    reply = (
        "Here is my solution.\nIt doubles each item.\n```python\ndef f():\n    return 1\n```\n"
        "Explanation.\n```python\nprint('second block')\n```\n"
    )
    assert extract_code(reply) == "def f():\n    return 1\n"


def test_extract_code_bare_fence_and_other_languages() -> None:
    assert extract_code("Run:\n```bash\nls -l\n```\nCode:\n```\nx = 1\n```") == "x = 1\n"
    assert extract_code("```py\ny = 2\n```") == "y = 2\n"


def test_extract_code_tolerates_missing_closing_fence() -> None:
    assert extract_code("Sure:\n```python\n    return a + b\n    # done\n") == "    return a + b\n    # done\n"


def test_extract_code_without_fence_returns_reply_unchanged() -> None:
    body = "    total = a + b\n    return total\n"
    assert extract_code(body) == body
    assert extract_code("") == ""


def test_assemble_body_continues_prompt() -> None:
    assert assemble_program(ADD, "    return a + b\n") == ADD_PROMPT + "    return a + b\n"


def test_assemble_full_function_replaces_the_stub_only() -> None:
    completion = (
        "```python\nfrom typing import List\n\n\n"
        "def double_all(numbers: List[int]) -> List[int]:\n"
        '    """Double every number."""\n'
        "    return [_double(number) for number in numbers]\n```"
    )
    program = assemble_program(DOUBLE, completion)
    assert program.count("def double_all(") == 1
    assert program.count("from typing import List") == 1
    assert "def _double(value: int) -> int:" in program  # the prompt's helper is kept
    assert ">>> double_all" not in program  # the stub's docstring went with it
    assert program.endswith("    return [_double(number) for number in numbers]\n")


def test_assemble_full_function_without_imports_keeps_prompt_imports() -> None:
    completion = "def double_all(numbers):\n    return [2 * number for number in numbers]\n"
    program = assemble_program(DOUBLE, completion)
    assert program.startswith("from typing import List\n")
    assert program.count("def double_all(") == 1
    assert program.endswith("\n\n\n" + completion)


# --------------------------------------------------------------------------
# Running the tests.
# --------------------------------------------------------------------------
def test_canonical_solutions_pass() -> None:
    for problem in (DOUBLE, ADD):
        result = run_tests(problem, problem.canonical_solution)
        assert result == PassResult(True, "passed", "", result.seconds), result.detail


def test_wrong_solution_fails_with_assertion() -> None:
    result = run_tests(ADD, "    return a - b\n")
    assert not result.passed
    assert result.status == "failed"
    assert "AssertionError" in result.detail


def test_full_function_and_body_completions_both_pass() -> None:
    full = "Done:\n```python\nfrom __future__ import annotations\n\n\ndef add(a, b):\n    return b + a\n```\n"
    assert run_tests(ADD, full).status == "passed"
    assert run_tests(ADD, "    result = a + b\n    return result\n").status == "passed"
    # The redefinition may call the prompt's helper.
    assert run_tests(DOUBLE, "def double_all(numbers):\n    return list(map(_double, numbers))\n").passed


def test_infinite_loop_times_out() -> None:
    result = run_tests(ADD, "    while True:\n        pass\n", timeout=2)
    assert result.status == "timeout"
    assert not result.passed
    assert 2 <= result.seconds < 6
    assert "timed out" in result.detail


@pytest.mark.parametrize(
    "call",
    [
        'socket.create_connection(("example.com", 80))',
        'socket.getaddrinfo("example.com", 80)',
        "socket.socket()",
    ],
)
def test_network_is_disabled(call: str) -> None:
    result = run_tests(ADD, f"    import socket\n    {call}\n    return a + b\n")
    assert result.status == "failed"
    assert f"OSError: {NETWORK_ERROR}" in result.detail


def test_syntax_error_is_an_error_and_detail_is_short() -> None:
    result = run_tests(ADD, "    return a +\n")
    assert (result.passed, result.status) == (False, "error")
    assert "SyntaxError" in result.detail
    noisy = run_tests(ADD, "    import sys\n    sys.stderr.write('x' * 5000)\n    raise SystemExit(3)\n")
    assert noisy.status == "failed"
    assert len(noisy.detail) <= 510


# --------------------------------------------------------------------------
# Style and secondary metrics.
# --------------------------------------------------------------------------
def test_pylint_clean_module_scores_ten_without_final_newline_message() -> None:
    result = pylint_score(CLEAN_MODULE)
    assert result == PylintResult(10.0, (), None)


def test_pylint_known_problems() -> None:
    code = '"""Doc."""\nimport os\n\n\ndef Add(a, b):\n    """Add."""\n    return a + b\n'
    result = pylint_score(code)
    assert sorted(result.messages) == ["invalid-name", "unused-import"]
    # 3 statements, 1 warning + 1 convention: 10 - 2 / 3 * 10.
    assert result.score == pytest.approx(10 - 20 / 3)


def test_pylint_score_goes_below_zero() -> None:
    code = "import os\n\n\ndef Add(a, b):\n    return a + b\n"
    result = pylint_score(code)
    assert result.error is None
    assert set(result.messages) == {
        "missing-module-docstring",
        "missing-function-docstring",
        "invalid-name",
        "unused-import",
    }
    # 3 statements, 4 messages: 10 - 4 / 3 * 10 (pylint's default would floor it at 0).
    assert result.score == pytest.approx(10 - 40 / 3)


def test_pylint_syntax_error_and_empty_code() -> None:
    result = pylint_score("def broken(:\n    pass\n")
    assert result.error is None
    assert "syntax-error" in result.messages
    assert result.score == -10.0
    assert pylint_score("  \n") == PylintResult(None, (), "empty code")


def test_radon_complexity() -> None:
    code = "def sign(x):\n    if x < 0:\n        return -1\n    return 1\n"
    assert radon_complexity(code) == 2.0
    assert radon_complexity(code + "\n\ndef one():\n    return 1\n") == 1.5
    assert radon_complexity("x = 1\n") is None
    assert radon_complexity("def broken(:\n") is None


@pytest.mark.parametrize(
    "code",
    [
        "print(eval(input()))\n",
        'import subprocess\n\nsubprocess.run("ls", shell=True, check=False)\n',
    ],
)
def test_bandit_flags_risky_code(code: str) -> None:
    issues = bandit_issues(code)
    assert issues is not None
    assert issues >= 1


def test_bandit_clean_code() -> None:
    assert bandit_issues(CLEAN_MODULE + "\n") == 0


# --------------------------------------------------------------------------
# Scoring replies and Pass@1.
# --------------------------------------------------------------------------
def test_score_completion_end_to_end() -> None:
    reply = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
    scores = score_completion(ADD, reply)
    # Program: the function only (the prompt's stub is replaced), 2 statements,
    # missing module and function docstrings: 10 - 2 / 2 * 10.
    assert (scores.passed, scores.status) == (True, "passed")
    assert scores.pylint == pytest.approx(0.0)
    assert scores.complexity == 1.0
    assert scores.bandit == 0
    assert set(scores.to_dict()) == {"passed", "status", "pylint", "complexity", "bandit", "seconds"}

    quick = score_completion(ADD, "    return a * b\n", secondary=False)
    assert (quick.passed, quick.status) == (False, "failed")
    assert quick.complexity is None
    assert quick.bandit is None


def test_pass_at_1() -> None:
    results: list[PassResult | CodeScores | bool] = [
        True,
        False,
        PassResult(True, "passed", "", 0.1),
        PassResult(False, "timeout", "timed out", 2.0),
        CodeScores(True, "passed", 10.0, 1.0, 0, 1.0),
    ]
    assert pass_at_1(results) == pytest.approx(3 / 5)
    assert pass_at_1([False, False]) == 0.0
    assert pass_at_1([True]) == 1.0
    with pytest.raises(ValueError, match="at least one"):
        pass_at_1([])
    with pytest.raises(TypeError):
        pass_at_1(["passed"])  # type: ignore[list-item]
