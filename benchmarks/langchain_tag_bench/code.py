"""The HumanEval x PEP 8 benchmark: problems, functional tests and style scores.

A model completes each HumanEval function while following PEP 8. A reply is
scored twice:

* **Correctness** (Pass@1): the program runs with the problem's official
  ``check`` function in a separate Python process inside the sandbox of
  :mod:`langchain_tag_bench.sandbox` (:func:`run_tests`).
* **Style**: the pylint score of the program without the tests
  (:func:`pylint_score`), on pylint's default rules but without its floor at
  0, so it ranges from -10 to 10. Cyclomatic complexity (radon) and the number
  of bandit findings are secondary metrics.

The data is read from a path the caller passes (it is never bundled):
``HumanEval.jsonl.gz``, a plain ``.jsonl`` file, or a directory holding
``HumanEval.jsonl.gz``.

Model output is untrusted code. On Linux with user namespaces the sandbox
contains it: no network, no inherited environment, no writes outside its own
directory, a process limit, and its whole process tree killed at the timeout.
Elsewhere it falls back to resource limits only and says so in a warning.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_tag_bench import sandbox
from langchain_tag_bench.data import BenchDataError
from langchain_tag_bench.sandbox import NETWORK_ERROR, NETWORK_PRELUDE

__all__ = [
    "DATA_FILE",
    "NETWORK_ERROR",
    "PYLINT_EVALUATION",
    "CodeScores",
    "HumanEvalProblem",
    "PassResult",
    "PylintResult",
    "assemble_program",
    "bandit_issues",
    "extract_code",
    "load_humaneval",
    "pass_at_1",
    "pylint_score",
    "radon_complexity",
    "run_tests",
    "score_completion",
]

DATA_FILE = "HumanEval.jsonl.gz"
"""File name looked for when :func:`load_humaneval` is given a directory."""

PYLINT_EVALUATION = (
    "max(-10.0, 0 if fatal else 10.0 - ((float(5 * error + warning + refactor + convention) / statement) * 10))"
)
"""pylint's default score formula with the floor at -10 instead of 0.

pylint's own default is ``max(0, 0 if fatal else 10.0 - ...)``; the benchmark
reports scores from -10 to 10, so the floor is moved (and the result clamped
again after reading it).
"""

PYLINT_DISABLED = ("missing-final-newline", "trailing-newlines")
"""Messages turned off: completions are cut from replies, so their file ends are arbitrary."""

_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "test")
_DETAIL_CHARS = 500
_PYTHON_FENCE_LANGS = frozenset({"", "python", "python3", "py", "py3"})
_FENCE = re.compile(r"^\s*```\s*([\w+-]*)\s*$")
_FENCE_CLOSE = re.compile(r"^\s*```\s*$")


# --------------------------------------------------------------------------
# Problems.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class HumanEvalProblem:
    """One HumanEval problem.

    Attributes:
        task_id: The problem id, e.g. ``"HumanEval/0"``.
        prompt: Imports, helper functions and the signature and docstring of
            the function to complete.
        entry_point: Name of the function to complete.
        canonical_solution: The reference body (continuing ``prompt``).
        test: Source defining ``check(candidate)`` with the official asserts.
    """

    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str

    @property
    def key(self) -> str:
        """The problem's id (``task_id``)."""
        return self.task_id


def _data_file(path: str | Path) -> Path:
    file = Path(path).expanduser()
    if file.is_dir():
        file = file / DATA_FILE
    if not file.is_file():
        raise BenchDataError(
            f"HumanEval data file not found: {file}. "
            f"Pass {DATA_FILE}, a .jsonl file or a directory holding {DATA_FILE}."
        )
    return file


def _read_lines(file: Path) -> list[str]:
    try:
        if file.suffix == ".gz":
            with gzip.open(file, "rt", encoding="utf-8") as handle:
                return handle.read().splitlines()
        return file.read_text(encoding="utf-8").splitlines()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise BenchDataError(f"cannot read HumanEval data file {file}: {exc}") from exc


def _problem(record: Any, file: Path, line_no: int) -> HumanEvalProblem:
    where = f"{file}, line {line_no}"
    if not isinstance(record, dict):
        raise BenchDataError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [name for name in _FIELDS if name not in record]
    if missing:
        raise BenchDataError(f"{where}: missing field(s) {', '.join(missing)}")
    wrong = [name for name in _FIELDS if not isinstance(record[name], str)]
    if wrong:
        raise BenchDataError(f"{where}: field(s) {', '.join(wrong)} must be strings")
    if not record["entry_point"].isidentifier():
        raise BenchDataError(f"{where}: entry_point {record['entry_point']!r} is not a Python identifier")
    return HumanEvalProblem(**{name: record[name] for name in _FIELDS})


def load_humaneval(path: str | Path, limit: int | None = None) -> list[HumanEvalProblem]:
    """Load HumanEval problems in file order.

    Args:
        path: ``HumanEval.jsonl.gz``, a plain ``.jsonl`` file (one JSON record
            per line), or a directory holding ``HumanEval.jsonl.gz``.
        limit: Load at most this many problems (all when ``None``).

    Returns:
        The problems. Blank lines are skipped.

    Raises:
        BenchDataError: When the file is missing or unreadable, or a line is
            not JSON or lacks a field; the message names the path and line.
        ValueError: When ``limit`` is negative.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    file = _data_file(path)
    problems: list[HumanEvalProblem] = []
    for line_no, line in enumerate(_read_lines(file), start=1):
        if limit is not None and len(problems) >= limit:
            break
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BenchDataError(f"{file}, line {line_no}: invalid JSON: {exc}") from exc
        problems.append(_problem(record, file, line_no))
    return problems


# --------------------------------------------------------------------------
# Replies and programs.
# --------------------------------------------------------------------------
def extract_code(reply: str) -> str:
    """The code in a model reply.

    When the reply has a fenced block opened by ```` ```python ```` (or
    ``py``, ``python3``) or a bare ```` ``` ````, the code is the text inside
    the first such block; prose before and after it and blocks in other
    languages (```` ```bash ````, ...) are dropped, and a missing closing fence
    is tolerated (the code runs to the end of the reply).
    Otherwise the reply is returned unchanged, leading indentation included,
    since it may be a function body continuing the prompt.

    Args:
        reply: The model's reply.

    Returns:
        The code.
    """
    body: list[str] | None = None  # lines of the open Python block
    in_other_block = False  # inside a block of another language
    for line in reply.splitlines(keepends=True):
        if body is not None:
            if _FENCE_CLOSE.match(line):
                return "".join(body)
            body.append(line)
        elif in_other_block:
            in_other_block = _FENCE_CLOSE.match(line) is None
        elif match := _FENCE.match(line):
            if match.group(1).lower() in _PYTHON_FENCE_LANGS:
                body = []
            else:
                in_other_block = True
    return reply if body is None else "".join(body)


def _defines_entry_point(code: str, entry_point: str) -> bool:
    pattern = rf"^(?:async[ \t]+)?def[ \t]+{re.escape(entry_point)}[ \t]*\("
    return re.search(pattern, code, flags=re.MULTILINE) is not None


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(decorator.lineno for decorator in decorators)])


def _imported(tree: ast.Module) -> set[tuple[str, int, str, str | None]]:
    names: set[tuple[str, int, str, str | None]] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(("", 0, alias.name, alias.asname) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update((node.module or "", node.level, alias.name, alias.asname) for alias in node.names)
    return names


def _replaced_by(completion: str, entry_point: str) -> Callable[[ast.stmt], bool]:
    """A test for prompt statements that the completion replaces."""
    try:
        tree = ast.parse(completion)
    except (SyntaxError, ValueError):
        return lambda node: isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point
    defined = {
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    dumps = {ast.dump(node) for node in tree.body}
    imported = _imported(tree)

    def replaced(node: ast.stmt) -> bool:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in defined:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return _imported(ast.Module(body=[node], type_ignores=[])) <= imported
        return ast.dump(node) in dumps

    return replaced


def _setup_code(prompt: str, completion: str, entry_point: str) -> str:
    """The prompt without the statements a full-function completion replaces."""
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError):
        return prompt
    replaced = _replaced_by(completion, entry_point)
    kept: set[int] = set()
    dropped: set[int] = set()
    for node in tree.body:
        span = range(_first_line(node), (node.end_lineno or node.lineno) + 1)
        (dropped if replaced(node) else kept).update(span)
    lines = prompt.splitlines(keepends=True)
    return "".join(line for number, line in enumerate(lines, start=1) if number in kept or number not in dropped)


def assemble_program(problem: HumanEvalProblem, completion: str) -> str:
    """The program that is tested and style-scored for a completion.

    The completion first goes through :func:`extract_code`. Then:

    * **Full function.** When the code defines ``def <entry_point>(`` at top
      level (column 0), the program is the prompt as setup code (it carries
      the imports and helper functions the completion may rely on) followed
      by the code. Prompt statements the code replaces are left out of the
      setup, so the code's definition wins and is the only one: the stub of
      the entry point and any top-level function or class the code defines
      again, imports the code repeats, and statements it repeats verbatim.
      This changes no behaviour (Python keeps the last definition anyway) but
      keeps pylint from charging the model for ``function-redefined`` or
      ``reimported`` that it did not write.
    * **Body.** Otherwise the code continues the prompt, as in the official
      harness: the program is ``prompt + code``.

    Args:
        problem: The problem.
        completion: The model's completion or reply.

    Returns:
        The program, without the tests.
    """
    code = extract_code(completion)
    if not _defines_entry_point(code, problem.entry_point):
        return problem.prompt + code
    setup = _setup_code(problem.prompt, code, problem.entry_point).rstrip()
    code = code.lstrip("\n")
    return f"{setup}\n\n\n{code}" if setup.strip() else code


# --------------------------------------------------------------------------
# Functional tests (Pass@1).
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class PassResult:
    """The outcome of running a completion against the official tests.

    Attributes:
        passed: Whether every test passed (the process exited with code 0).
        status: ``"passed"``, ``"failed"`` (non-zero exit: a failed assert or
            an exception), ``"timeout"``, or ``"error"`` (the program does not
            compile or the process could not be started).
        detail: The last lines of the process's stderr (or the reason for a
            timeout or error), at most about 500 characters.
        seconds: Wall-clock time spent.
    """

    passed: bool
    status: str
    detail: str
    seconds: float


def _tail(text: str, limit: int = _DETAIL_CHARS) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    newline = tail.find("\n")
    if 0 <= newline < len(tail) - 1:
        tail = tail[newline + 1 :]
    return "..." + tail


def _test_script(problem: HumanEvalProblem, completion: str) -> str:
    program = assemble_program(problem, completion)
    return f"{program}\n\n{problem.test}\n\ncheck({problem.entry_point})\n"


def run_tests(problem: HumanEvalProblem, completion: str, *, timeout: float = 10.0) -> PassResult:
    """Run a completion against the problem's official tests.

    The script ``assemble_program(problem, completion) + test +
    "check(<entry_point>)"`` runs with ``sys.executable -I`` in a fresh
    temporary directory (also its working directory), with stdin closed and
    stdout discarded, inside :func:`langchain_tag_bench.sandbox.run`: its own
    network, PID, mount and user namespaces, an empty environment, read-only
    file system outside that directory, process, file-size, memory and CPU
    limits, and the whole process tree killed at the timeout (see
    :mod:`langchain_tag_bench.sandbox`, also for the fallback where namespaces
    are unavailable). A prelude also makes ``socket.socket``,
    ``socket.create_connection`` and ``socket.getaddrinfo`` raise
    ``OSError("network disabled in benchmark sandbox")``, for a clear message.

    Args:
        problem: The problem.
        completion: The model's completion or reply (see
            :func:`assemble_program`).
        timeout: Wall-clock limit in seconds.

    Returns:
        The result; exit code 0 means passed.
    """
    start = time.perf_counter()
    script = _test_script(problem, completion)

    def result(status: str, detail: str) -> PassResult:
        return PassResult(status == "passed", status, _tail(detail), time.perf_counter() - start)

    try:
        compile(script, "program.py", "exec")
    except (SyntaxError, ValueError) as exc:
        return result("error", f"{type(exc).__name__}: {exc}")
    with tempfile.TemporaryDirectory(prefix="humaneval-") as tmp:
        work = Path(tmp)
        (work / "program.py").write_text(script, encoding="utf-8")
        (work / "sandbox.py").write_text(NETWORK_PRELUDE, encoding="utf-8")
        stderr_path = work / "stderr.txt"
        with stderr_path.open("wb") as stderr:
            try:
                returncode = sandbox.run(work, ["sandbox.py", "program.py"], timeout=timeout, stderr=stderr)
            except OSError as exc:
                return result("error", f"cannot start Python: {exc}")
        if returncode is None:
            return result("timeout", f"timed out after {timeout:g} s")
        errors = stderr_path.read_text(encoding="utf-8", errors="replace")
    if returncode == 0:
        return result("passed", errors)
    if returncode < 0 and not errors.strip():
        errors = f"killed by signal {-returncode}"
    return result("failed", errors)


# --------------------------------------------------------------------------
# Style and secondary metrics.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class PylintResult:
    """The pylint score of a program.

    Attributes:
        score: The score, from -10 to 10 (``None`` on error).
        messages: Symbols of the messages pylint reported, in its order and
            with repeats, e.g. ``("invalid-name", "unused-import")``.
        error: Why there is no score, or ``None``.
    """

    score: float | None
    messages: tuple[str, ...]
    error: str | None


def _run_tool(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def pylint_score(code: str, *, timeout: float = 60.0) -> PylintResult:
    """Score code with pylint's default rules.

    Runs ``python -m pylint --output-format=json2`` on the code (saved as
    ``solution.py`` in a temporary directory, with an empty rc file so no
    project configuration applies), with ``missing-final-newline`` and
    ``trailing-newlines`` disabled and the score formula
    :data:`PYLINT_EVALUATION` (pylint's default, floored at -10 instead of 0).
    The score is read from the report's ``statistics.score`` and clamped to
    [-10, 10]. pylint exits non-zero whenever it reports messages; that is not
    an error. A syntax error is reported by pylint as ``syntax-error`` (an
    error message in a file of no statements, which the JSON2 report counts as
    one), so it scores -10 with this formula.

    Args:
        code: The program.
        timeout: Seconds before pylint is stopped.

    Returns:
        The score and message symbols, or an error for empty code, a timeout
        or unreadable pylint output.
    """
    if not code.strip():
        return PylintResult(None, (), "empty code")
    with tempfile.TemporaryDirectory(prefix="pylint-") as tmp:
        work = Path(tmp)
        (work / "solution.py").write_text(code, encoding="utf-8")
        (work / "empty.rc").write_text("", encoding="utf-8")
        args = [
            "-m",
            "pylint",
            "--rcfile=empty.rc",
            "--output-format=json2",
            f"--disable={','.join(PYLINT_DISABLED)}",
            "--persistent=n",
            "--score=y",
            f"--evaluation={PYLINT_EVALUATION}",
            "solution.py",
        ]
        try:
            completed = _run_tool(args, work, timeout)
        except subprocess.TimeoutExpired:
            return PylintResult(None, (), f"pylint timed out after {timeout:g} s")
        except OSError as exc:
            return PylintResult(None, (), f"cannot run pylint: {exc}")
    try:
        report = json.loads(completed.stdout)
        messages = tuple(str(message["symbol"]) for message in report["messages"])
        score = report["statistics"]["score"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        detail = _tail(completed.stderr or completed.stdout)
        return PylintResult(None, (), f"unreadable pylint output (exit {completed.returncode}): {exc}; {detail}")
    if not isinstance(score, (int, float)):
        return PylintResult(None, messages, f"pylint gave no score (exit {completed.returncode})")
    return PylintResult(max(-10.0, min(10.0, float(score))), messages, None)


def radon_complexity(code: str) -> float | None:
    """Mean cyclomatic complexity of the code's blocks.

    The blocks are those :func:`radon.complexity.cc_visit` returns: functions,
    classes and methods (as ``radon cc --average`` counts them).

    Args:
        code: The program.

    Returns:
        The mean, or ``None`` on a syntax error or when there is no block.
    """
    from radon.complexity import cc_visit  # an optional (bench) dependency

    try:
        blocks = cc_visit(code)
    except (SyntaxError, ValueError):
        return None
    if not blocks:
        return None
    return sum(block.complexity for block in blocks) / len(blocks)


def bandit_issues(code: str, *, timeout: float = 60.0) -> int | None:
    """The number of bandit findings in the code (all severities).

    Runs ``python -m bandit -q -f json`` on the code saved to a temporary file
    and counts the report's ``results``.

    Args:
        code: The program.
        timeout: Seconds before bandit is stopped.

    Returns:
        The count, or ``None`` when bandit cannot run, times out, gives
        unreadable output or cannot parse the code (a syntax error).
    """
    with tempfile.TemporaryDirectory(prefix="bandit-") as tmp:
        work = Path(tmp)
        (work / "solution.py").write_text(code, encoding="utf-8")
        try:
            completed = _run_tool(["-m", "bandit", "-q", "-f", "json", "solution.py"], work, timeout)
        except (subprocess.TimeoutExpired, OSError):
            return None
    try:
        report = json.loads(completed.stdout)
        results = report["results"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return None
    if report.get("errors") or not isinstance(results, list):
        return None
    return len(results)


# --------------------------------------------------------------------------
# Scoring a reply.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class CodeScores:
    """All scores of one reply.

    Attributes:
        passed: Whether the official tests passed.
        status: The test status (see :class:`PassResult`).
        pylint: The pylint score of the program without tests (-10 to 10),
            or ``None`` when pylint gave none.
        complexity: Mean cyclomatic complexity (radon), or ``None``.
        bandit: Number of bandit findings, or ``None``.
        seconds: Wall-clock time spent scoring.
    """

    passed: bool
    status: str
    pylint: float | None
    complexity: float | None
    bandit: int | None
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The scores as a JSON-ready dict."""
        return asdict(self)


def score_completion(
    problem: HumanEvalProblem, reply: str, *, timeout: float = 10.0, secondary: bool = True
) -> CodeScores:
    """Score a model reply: tests, then pylint, then radon and bandit.

    Args:
        problem: The problem.
        reply: The model's reply; the code is taken with :func:`extract_code`.
        timeout: Wall-clock limit for the tests, in seconds.
        secondary: Also compute radon complexity and bandit findings
            (``None`` otherwise).

    Returns:
        The scores. Style metrics are computed on
        :func:`assemble_program`'s program, without the tests.
    """
    start = time.perf_counter()
    code = extract_code(reply)
    tests = run_tests(problem, code, timeout=timeout)
    program = assemble_program(problem, code)
    style = pylint_score(program)
    complexity = radon_complexity(program) if secondary else None
    findings = bandit_issues(program) if secondary else None
    return CodeScores(
        passed=tests.passed,
        status=tests.status,
        pylint=style.score,
        complexity=complexity,
        bandit=findings,
        seconds=time.perf_counter() - start,
    )


def pass_at_1(results: Sequence[PassResult | CodeScores | bool]) -> float:
    """Pass@1 with one sample per problem: the fraction of results that passed.

    Args:
        results: One result per problem: :class:`PassResult`,
            :class:`CodeScores` or a plain ``bool``.

    Returns:
        The fraction passed, from 0.0 to 1.0.

    Raises:
        ValueError: When ``results`` is empty (there is no meaningful rate, and
            0.0 would hide a run that scored nothing).
        TypeError: When a result is of another type.
    """
    if not results:
        raise ValueError("pass_at_1 needs at least one result")
    passed = 0
    for result in results:
        if isinstance(result, bool):
            passed += result
        elif isinstance(result, (PassResult, CodeScores)):
            passed += result.passed
        else:
            raise TypeError(f"expected PassResult, CodeScores or bool, got {type(result).__name__}")
    return passed / len(results)
