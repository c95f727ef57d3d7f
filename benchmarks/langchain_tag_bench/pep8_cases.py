"""The ``pep8`` quality set: excerpts of PEP 8 as the policy, stdlib functions as cases, pycodestyle as the gold.

The policy is cut out of the PEP 8 source (``pep-0008.rst``, read from the shared data directory or a path the
user gives; never copied into the repository): the sections whose advice pycodestyle checks on a single function
(tabs, line length, whitespace, compound statements, comments) in full, and the bullets of *Programming
Recommendations* that pycodestyle checks (comparisons to singletons and booleans, ``is not``, lambda assignment,
bare ``except``, type comparisons). ``benchmarks/data/pep8/pep8_statements.json`` names the statements, each a
verbatim passage of those excerpts with the pycodestyle codes that flag it.

The cases are functions and methods cut out of the running interpreter's standard library
(:func:`~langchain_tag_bench.ruff_cases.extract_snippets`), linted by pycodestyle with only those codes selected
and a 79-character limit; the codes found map back to statements. They are built on first use into the cache
directory and never committed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from langchain_tag_bench import ruff_cases
from langchain_tag_bench.data import BenchDataError, default_data_path

__all__ = ["RECOMMENDATIONS", "SECTIONS", "STATEMENTS_PATH", "cached_cases", "pep8_policy", "run_pycodestyle"]

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "pep8"
STATEMENTS_PATH = DATA_DIR / "pep8_statements.json"

SECTIONS = (
    "Tabs or Spaces?",
    "Maximum Line Length",
    "Pet Peeves",
    "Other Recommendations",
    "Block Comments",
    "Inline Comments",
)
"""Sections taken whole (each runs to the next heading)."""

RECOMMENDATIONS = (
    "- Comparisons to singletons like None",
    "- Use ``is not`` operator rather than",
    "- Always use a def statement instead of an assignment",
    "- When catching exceptions, mention specific exceptions",
    "- Object type comparisons should always use isinstance()",
    "- Don't compare boolean values to True or False",
)
"""Bullets of *Programming Recommendations* taken (each runs to the next top-level bullet or heading)."""

_UNDERLINE = frozenset("=-~^")


def _headings(lines: list[str]) -> list[int]:
    """Line numbers of the heading titles (a line underlined by a run of one punctuation character)."""
    return [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip()
        and len(set(lines[i + 1].strip())) == 1
        and lines[i + 1].strip()[0] in _UNDERLINE
        and len(lines[i + 1].strip()) >= 3
    ]


def pep8_policy(path: str | Path | None = None) -> str:
    """The policy text: the excerpts of PEP 8 this set uses, verbatim, in document order.

    Raises:
        BenchDataError: When the file cannot be read or an excerpt is not found in it.
    """
    source = Path(path) if path is not None else default_data_path("pep8/pep-0008.rst", "--pep8")
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BenchDataError(f"{source}: cannot read PEP 8 ({exc})") from exc
    heads = _headings(lines)
    ends = {h: next((n for n in heads if n > h), len(lines)) for h in heads}
    parts: list[str] = []
    for title in SECTIONS:
        start = next((h for h in heads if lines[h].strip() == title), None)
        if start is None:
            raise BenchDataError(f"{source}: no section {title!r}")
        parts.append("\n".join(lines[start : ends[start]]).rstrip())
    recommendations = next((h for h in heads if lines[h].strip() == "Programming Recommendations"), None)
    if recommendations is None:
        raise BenchDataError(f"{source}: no section 'Programming Recommendations'")
    block = lines[recommendations : ends[recommendations]]
    bullets = [i for i, line in enumerate(block) if line.startswith("- ")]
    kept = ["\n".join(block[:2])]
    for opening in RECOMMENDATIONS:
        start = next((i for i in bullets if block[i].startswith(opening)), None)
        if start is None:
            raise BenchDataError(f"{source}: no recommendation starting {opening!r}")
        end = next((i for i in bullets if i > start), len(block))
        kept.append("\n".join(block[start:end]).rstrip())
    parts.append("\n\n".join(kept))
    return "\n\n".join(parts) + "\n"


def run_pycodestyle(snippets: list[str], codes: list[str]) -> list[list[str]]:
    """The sorted unique pycodestyle codes (among ``codes``) each snippet triggers, with a 79-character limit."""
    import pycodestyle

    class _Codes(pycodestyle.BaseReport):  # type: ignore[misc]
        def __init__(self, options: Any) -> None:
            super().__init__(options)
            self.codes: set[str] = set()

        def error(self, line_number: int, offset: int, text: str, check: Any) -> str | None:
            code = super().error(line_number, offset, text, check)
            if code:
                self.codes.add(code)
            return code

    style = pycodestyle.StyleGuide(select=codes, max_line_length=79, quiet=True)
    found: list[list[str]] = []
    for code in snippets:
        report = _Codes(style.options)
        checker = pycodestyle.Checker(lines=code.splitlines(keepends=True), options=style.options, report=report)
        checker.check_all()
        found.append(sorted(c for c in report.codes if c in codes))
    return found


def load_statements(path: Path = STATEMENTS_PATH) -> list[dict[str, Any]]:
    """The statements (``id``, ``text``, ``codes``) in file order."""
    return json.loads(path.read_text(encoding="utf-8"))


def cached_cases(cache_dir: Path, *, lib_dir: Path | None = None) -> Path:
    """The cases file for this interpreter and pycodestyle version under ``cache_dir``, built on first use."""
    import pycodestyle

    python = ".".join(str(part) for part in sys.version_info[:3])
    where = Path(cache_dir) / "bench-quality" / f"pep8-cases-py{python}-pycodestyle{pycodestyle.__version__}"
    path = where / "cases.jsonl"
    if not path.exists():
        ruff_cases.write_cases(
            where,
            lib_dir=lib_dir,
            statements=load_statements(),
            lint=run_pycodestyle,
            linter="pycodestyle",
            version=f"pycodestyle {pycodestyle.__version__}",
            per_statement=4,
            negatives=20,
            id_prefix="pep8",
        )
    return path
