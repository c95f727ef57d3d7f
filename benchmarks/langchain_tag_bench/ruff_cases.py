"""Linter-labelled cases for the ruff-derived Python review policy (the ``ruff`` quality set).

Functions and methods are cut out of the running interpreter's standard library, ruff is run once over all of them
with only the rule codes named in ``benchmarks/data/ruff/ruff_policy_statements.json`` selected, and the triggered
codes are mapped back to policy statement ids. The gold labels therefore come from ruff, not from a human annotator.

The cases are other people's code, so they are never committed: :func:`cached_cases` builds them into a cache
directory on first use (keyed by the Python and ruff versions), and
``python -m langchain_tag_bench.ruff_cases [DIR]`` writes ``cases.jsonl`` and ``cases_summary.md`` into ``DIR``.
"""

from __future__ import annotations

import ast
import json
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "ruff"
STATEMENTS_PATH = DATA_DIR / "ruff_policy_statements.json"
POLICY_PATH = DATA_DIR / "ruff_policy.md"
SKIP_DIRS = frozenset({"test", "tests", "idlelib", "lib2to3", "site-packages"})
MIN_LINES = 4
MAX_LINES = 40
MAX_CHARS = 2000
MAX_VIOLATED = 3  # skip snippets that violate more statements than this
TARGET_VERSION = "py311"


def load_statements(path: Path = STATEMENTS_PATH) -> list[dict[str, Any]]:
    """Return the policy statements (``id``, ``text``, ``codes``) in file order."""
    return json.loads(path.read_text(encoding="utf-8"))


def code_to_statements(statements: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Map each ruff rule code to the ids of the statements that cite it."""
    mapping: dict[str, list[str]] = defaultdict(list)
    for statement in statements:
        for code in statement["codes"]:
            mapping[code].append(statement["id"])
    return dict(mapping)


def ruff_executable() -> str:
    """Locate the ruff binary, preferring the one installed next to the running interpreter."""
    candidate = Path(sys.executable).parent / "ruff"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("ruff")
    if found is None:
        raise FileNotFoundError("ruff executable not found")
    return found


def ruff_version() -> str:
    """Return the version string reported by ``ruff --version``."""
    return subprocess.run([ruff_executable(), "--version"], capture_output=True, text=True, check=True).stdout.strip()


def ruff_command(codes: list[str], target: Path) -> list[str]:
    """Build the ruff command line used for labelling (and for re-checking in the tests)."""
    return [
        ruff_executable(),
        "check",
        "--isolated",
        "--no-cache",
        "--ignore-noqa",
        "--exit-zero",
        "--target-version",
        TARGET_VERSION,
        "--select",
        ",".join(sorted(codes)),
        "--output-format",
        "json",
        str(target),
    ]


def run_ruff(snippets: list[str], codes: list[str]) -> list[list[str]]:
    """Lint every snippet in one ruff invocation; return the sorted unique codes triggered per snippet."""
    with tempfile.TemporaryDirectory(prefix="ruff_cases_") as tmp:
        tmp_path = Path(tmp)
        for index, code in enumerate(snippets):
            (tmp_path / f"s{index:06d}.py").write_text(code, encoding="utf-8")
        proc = subprocess.run(ruff_command(codes, tmp_path), capture_output=True, text=True, check=True)
    triggered: list[set[str]] = [set() for _ in snippets]
    for diagnostic in json.loads(proc.stdout or "[]"):
        if diagnostic.get("code") is None:  # syntax errors carry no rule code
            continue
        triggered[int(Path(diagnostic["filename"]).stem[1:])].add(diagnostic["code"])
    return [sorted(found) for found in triggered]


def _iter_modules(lib_dir: Path) -> Iterator[tuple[str, str]]:
    """Yield ``(relative posix path, source)`` for every readable module outside the skipped directories."""
    for path in sorted(lib_dir.rglob("*.py")):
        relative = path.relative_to(lib_dir)
        if SKIP_DIRS.intersection(relative.parts[:-1]):
            continue
        try:
            yield relative.as_posix(), path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


def _snippet(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """Cut a function (with its decorators) out of its module, dedented; ``None`` if it is out of bounds."""
    start = min([decorator.lineno for decorator in node.decorator_list] + [node.lineno])
    end = node.end_lineno or node.lineno
    if not MIN_LINES <= end - start + 1 <= MAX_LINES:
        return None
    code = textwrap.dedent("\n".join(lines[start - 1 : end])).rstrip() + "\n"
    if len(code) > MAX_CHARS:
        return None
    try:
        ast.parse(code)
    except SyntaxError:  # e.g. a multi-line string literal defeats dedenting
        return None
    return code


def extract_snippets(lib_dir: Path) -> list[dict[str, Any]]:
    """Extract top-level functions and methods of top-level classes (4-40 lines, at most 2,000 characters).

    Identical snippets are kept once (first occurrence in path order).
    """
    snippets: list[dict[str, Any]] = []
    seen: set[str] = set()
    for relative, source in _iter_modules(lib_dir):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        lines = source.splitlines()
        functions: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((node.name, node))
            elif isinstance(node, ast.ClassDef):
                functions.extend(
                    (f"{node.name}.{item.name}", item)
                    for item in node.body
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                )
        for qualname, function in functions:
            code = _snippet(lines, function)
            if code is None or code in seen:
                continue
            seen.add(code)
            snippets.append({"source": f"{relative}:{qualname}", "code": code, "n_lines": code.count("\n")})
    return snippets


def _preference_key(rng: random.Random, snippet: dict[str, Any]) -> tuple[int, float]:
    """Sort key: shorter snippets first (10-line buckets), then a seeded random tie-break."""
    return (snippet["n_lines"] // 10, rng.random())


def _assign_splits(cases: list[dict[str, Any]], rng: random.Random) -> None:
    """Greedy stratified dev/test split over all violated statements (negatives form their own stratum).

    Cases with more labels are placed first; each goes to the split where its labels are currently rarer, with
    ties broken by the split totals and then by the seeded generator.
    """
    per_split: dict[str, Counter[str]] = {"dev": Counter(), "test": Counter()}
    order = list(cases)
    rng.shuffle(order)
    order.sort(key=lambda case: -len(case["violates"]))
    for case in order:
        labels = case["violates"] or ["~negative"]
        totals = {split: sum(counts.values()) for split, counts in per_split.items()}
        split = min(
            ("dev", "test"),
            key=lambda name: (sum(per_split[name][label] for label in labels), totals[name], rng.random()),
        )
        case["split"] = split
        per_split[split].update(labels)


def build_cases(
    python_lib_dir: Path,
    *,
    seed: int = 0,
    per_statement: int = 6,
    negatives: int = 40,
    statements: list[dict[str, Any]] | None = None,
    lint: Callable[[list[str], list[str]], list[list[str]]] = run_ruff,
    id_prefix: str = "ruff",
) -> list[dict[str, Any]]:
    """Build labelled cases from the Python sources under ``python_lib_dir``.

    ``lint(snippets, codes)`` gives the codes each snippet triggers (default: ruff); case ids are
    ``{id_prefix}-0001``, ...

    For each statement (rarest first) up to ``per_statement`` snippets that violate it are chosen (snippets already
    chosen for another statement count towards the quota), plus ``negatives`` snippets that violate no statement.
    Snippets violating more than ``MAX_VIOLATED`` statements are skipped; shorter snippets are preferred; the
    selection is deterministic for a seed.
    Each case is ``{"id", "source", "code", "violates", "codes", "split", "sampled_for"}``.
    """
    statements = statements if statements is not None else load_statements()
    code_map = code_to_statements(statements)
    snippets = extract_snippets(Path(python_lib_dir))
    triggered = lint([snippet["code"] for snippet in snippets], sorted(code_map))
    for snippet, codes in zip(snippets, triggered, strict=True):
        snippet["codes"] = codes
        snippet["violates"] = sorted({sid for code in codes for sid in code_map.get(code, [])})

    rng = random.Random(seed)
    by_statement: dict[str, list[int]] = defaultdict(list)
    for index, snippet in enumerate(snippets):
        for sid in snippet["violates"]:
            by_statement[sid].append(index)

    chosen: dict[int, str | None] = {}
    coverage: Counter[str] = Counter()
    order = sorted((s["id"] for s in statements), key=lambda sid: (len(by_statement[sid]), sid))
    for sid in order:
        pool = sorted(by_statement[sid], key=lambda i: _preference_key(rng, snippets[i]))
        for index in pool:
            if coverage[sid] >= per_statement:
                break
            if index in chosen or len(snippets[index]["violates"]) > MAX_VIOLATED:
                continue
            chosen[index] = sid
            coverage.update(snippets[index]["violates"])

    clean = [i for i, snippet in enumerate(snippets) if not snippet["violates"]]
    clean.sort(key=lambda i: _preference_key(rng, snippets[i]))
    for index in clean[:negatives]:
        chosen[index] = None

    cases: list[dict[str, Any]] = []
    statement_rank = {s["id"]: rank for rank, s in enumerate(statements)}
    ordered = sorted(
        chosen.items(),
        key=lambda item: (item[1] is None, statement_rank.get(item[1] or "", 0), snippets[item[0]]["source"]),
    )
    for number, (index, sampled_for) in enumerate(ordered, start=1):
        snippet = snippets[index]
        case = {
            "id": f"{id_prefix}-{number:04d}",
            "source": snippet["source"],
            "code": snippet["code"],
            "violates": snippet["violates"],
            "codes": snippet["codes"],
            "split": "",
            "sampled_for": sampled_for,
        }
        cases.append(case)
    _assign_splits(cases, rng)
    return cases


def summarise(
    cases: list[dict[str, Any]],
    statements: list[dict[str, Any]],
    seconds: float,
    version: str,
    *,
    linter: str = "Ruff",
) -> str:
    """Render the Markdown summary of a build: counts per statement per split, totals, linter version and timing."""
    counts: Counter[tuple[str, str]] = Counter()
    for case in cases:
        for sid in case["violates"] or ["(none)"]:
            counts[(sid, case["split"])] += 1
    lines = [
        f"# {linter}-labelled cases: summary",
        "",
        f"- cases: {len(cases)} (dev {sum(c['split'] == 'dev' for c in cases)}, "
        f"test {sum(c['split'] == 'test' for c in cases)})",
        f"- negatives (violate no statement): {sum(not c['violates'] for c in cases)}",
        f"- linter: {version}; python {sys.version.split()[0]}; target {TARGET_VERSION}; no preview rules",
        f"- build time: {seconds:.1f} s",
        "",
        "Counts are cases whose `violates` contains the statement (a case can violate several).",
        "",
        "| statement | codes | dev | test | total |",
        "|---|---|---:|---:|---:|",
    ]
    for statement in statements + [{"id": "(none)", "codes": []}]:
        sid = statement["id"]
        dev, test = counts[(sid, "dev")], counts[(sid, "test")]
        lines.append(f"| {sid} | {', '.join(statement['codes'])} | {dev} | {test} | {dev + test} |")
    return "\n".join(lines) + "\n"


def write_cases(
    out_dir: Path,
    *,
    lib_dir: Path | None = None,
    statements: list[dict[str, Any]] | None = None,
    lint: Callable[[list[str], list[str]], list[list[str]]] | None = None,
    linter: str = "Ruff",
    version: str | None = None,
    **build: Any,
) -> tuple[Path, str]:
    """Build on ``lib_dir`` (default: the running interpreter's standard library) into ``out_dir``.

    Writes ``cases.jsonl`` and ``cases_summary.md``; returns the cases file and the summary. ``statements``,
    ``lint`` (with its ``linter`` name and ``version`` for the summary) and ``build`` (:func:`build_cases`'s
    other options) default to the ruff set's.
    """
    lib_dir = Path(lib_dir) if lib_dir is not None else Path(sysconfig.get_paths()["stdlib"])
    statements = statements if statements is not None else load_statements()
    started = time.perf_counter()
    cases = build_cases(lib_dir, statements=statements, lint=lint or run_ruff, **build)
    seconds = time.perf_counter() - started
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "cases.jsonl"
    partial = path.with_suffix(".jsonl.part")
    with partial.open("w", encoding="utf-8") as handle:
        for case in cases:
            handle.write(json.dumps(case, ensure_ascii=False) + "\n")
    partial.replace(path)  # a half-written file is never taken for a finished build
    summary = summarise(cases, statements, seconds, version or ruff_version(), linter=linter)
    (out_dir / "cases_summary.md").write_text(summary, encoding="utf-8")
    return path, summary


def cached_cases(cache_dir: Path) -> Path:
    """The cases file for this interpreter and ruff version under ``cache_dir``, built on first use."""
    version = ruff_version().split()[-1]
    python = ".".join(str(part) for part in sys.version_info[:3])
    where = Path(cache_dir) / "bench-quality" / f"ruff-cases-py{python}-ruff{version}"
    path = where / "cases.jsonl"
    if not path.exists():
        write_cases(where)
    return path


def main(argv: list[str] | None = None) -> None:
    """Build on the running interpreter's standard library; write ``cases.jsonl`` and ``cases_summary.md``."""
    args = sys.argv[1:] if argv is None else argv
    out_dir = Path(args[0]) if args else Path.cwd()
    _, summary = write_cases(out_dir)
    print(summary)


if __name__ == "__main__":
    main()
