"""The ruff-labelled case builder (``langchain_tag_bench.ruff_cases``) and the policy files it relies on."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import pytest

from langchain_tag_bench import ruff_cases as bc

STATEMENTS = bc.load_statements()
POLICY = bc.POLICY_PATH.read_text(encoding="utf-8")
# Rules that depend on module context (imports, globals) are meaningless on cut-out snippets.
CONTEXT_DEPENDENT = {"F401", "F403", "F405", "F811", "F821", "F822", "E402", "I001"}

SYNTHETIC_VIOLATIONS = '''
def bare(x):
    try:
        x.run()
    except:
        x.fail()


def broad_pass(x):
    try:
        x.run()
        x.stop()
    except Exception:
        pass


def suppressible(x):
    try:
        x.close()
    except OSError:
        pass


def unchained(mapping, key):
    try:
        return mapping[key]
    except KeyError:
        raise ValueError(key)


def mutable_default(x, seen=[]):
    """Violate one statement."""
    seen.append(x)
    return seen


def lambda_name(values):
    key = lambda v: v[0]
    values.sort(key=key)
    return values


def unused_local(x):
    y = x + 1
    z = x * 2
    return y


def assign_return(x):
    x.prepare()
    result = x.compute()
    return result


def ambiguous(items):
    """Violate one statement."""
    l = len(items)
    return items[: l // 2]


def else_after_return(x):
    if x:
        return 1
    else:
        return 2


def nested_if(a, b):
    if a:
        if b:
            a.go()
    return b


def loop_reassign(items):
    out = {}
    for item in items:
        item = item.strip()
        out[item] = True
    return out


def unused_loop_var(n):
    total = 0
    for i in range(n):
        total += 1
    return total


def manual_append(items):
    out = []
    for item in items:
        out.append(item.upper())
    return out


def not_in(x, y):
    if not x in y:
        return False
    return True


def type_compare(x):
    if type(x) == int:
        x.bit_length()
    return x


def keys_membership(d, k):
    if k in d.keys():
        d.pop(k)
    return d


def percent_format(name):
    """Violate one statement."""
    msg = "hello %s" % name
    return msg.upper()


def one_liner(x):
    """Violate one statement."""
    if x: x.go()
    return x


def printer(x):
    """Violate one statement."""
    print(x)
    return x


def opener(path):
    handle = open(path)
    data = handle.read()
    handle.close()
    return data


def evaluator(expr):
    """Violate one statement."""
    value = eval(expr)
    return value * 2


class Holder:
    def method_print(self, x):
        """Print from a method."""
        print(x)
        return self
'''

SYNTHETIC_CLEAN = (
    """
def clean_one(x):
    if x is None:
        return 0
    return x + 1


def clean_two(items):
    '''Keep truthy items.'''
    kept = [item for item in items if item]
    return kept or None


def clean_three(a, b):
    total = a + b
    total *= 2
    return total - 1


def too_short(x):
    return x


def too_long(x):
"""
    + "".join(f"    x = x + {i}\n" for i in range(45))
    + "    return x\n"
)


def ruff_known(code: str) -> dict[str, Any] | None:
    """Return ruff's JSON description of a rule code, or ``None`` if ruff does not know it."""
    proc = subprocess.run(
        [bc.ruff_executable(), "rule", code, "--output-format", "json"], capture_output=True, text=True
    )
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def relint(case: dict[str, Any], tmp_path: Path) -> tuple[list[str], list[str]]:
    """Lint one case's code on its own; return ``(codes, statement ids)`` as ruff sees them."""
    code_map = bc.code_to_statements(STATEMENTS)
    target = tmp_path / f"{case['id']}.py"
    target.write_text(case["code"], encoding="utf-8")
    proc = subprocess.run(bc.ruff_command(sorted(code_map), target), capture_output=True, text=True, check=True)
    codes = sorted({d["code"] for d in json.loads(proc.stdout) if d.get("code")})
    return codes, sorted({sid for code in codes for sid in code_map[code]})


@pytest.fixture(scope="module")
def synthetic_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Create a tiny fake standard library: violating and clean functions, plus a skipped ``test`` package."""
    root = tmp_path_factory.mktemp("lib")
    (root / "violations.py").write_text(textwrap.dedent(SYNTHETIC_VIOLATIONS), encoding="utf-8")
    (root / "pkg").mkdir()
    (root / "pkg" / "clean.py").write_text(SYNTHETIC_CLEAN, encoding="utf-8")
    (root / "test").mkdir()
    (root / "test" / "test_skipped.py").write_text("def skipped(x):\n    print(x)\n    print(x)\n    return x\n")
    (root / "broken.py").write_text("def broken(:\n    pass\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def synthetic_cases(synthetic_lib: Path) -> list[dict[str, Any]]:
    """Cases built from the synthetic library with small quotas."""
    return bc.build_cases(synthetic_lib, seed=0, per_statement=2, negatives=3)


def test_statement_texts_are_verbatim_and_unique() -> None:
    ids = [s["id"] for s in STATEMENTS]
    assert len(ids) == len(set(ids))
    assert 16 <= len(STATEMENTS) <= 22
    for statement in STATEMENTS:
        assert POLICY.count(statement["text"]) == 1, statement["id"]
        assert statement["codes"], statement["id"]


def test_intro_yields_no_statement() -> None:
    intro = POLICY.split("\n## ", 1)[0]
    assert not any(statement["text"] in intro for statement in STATEMENTS)


def test_every_code_is_known_stable_and_context_free() -> None:
    codes = {code for statement in STATEMENTS for code in statement["codes"]}
    assert not codes & CONTEXT_DEPENDENT
    for code in sorted(codes):
        info = ruff_known(code)
        assert info is not None, f"ruff does not know {code}"
        assert not info.get("preview"), f"{code} is a preview rule"


def test_each_code_maps_to_one_statement() -> None:
    assert all(len(ids) == 1 for ids in bc.code_to_statements(STATEMENTS).values())


def test_extraction_limits_and_skips(synthetic_lib: Path) -> None:
    snippets = bc.extract_snippets(synthetic_lib)
    sources = {s["source"] for s in snippets}
    assert "violations.py:Holder.method_print" in sources
    assert "pkg/clean.py:clean_one" in sources
    assert not any(src.startswith("test/") for src in sources)
    assert "pkg/clean.py:too_short" not in sources
    assert "pkg/clean.py:too_long" not in sources
    for snippet in snippets:
        assert bc.MIN_LINES <= snippet["n_lines"] <= bc.MAX_LINES
        assert len(snippet["code"]) <= bc.MAX_CHARS
        assert not snippet["code"].startswith((" ", "\t"))


def test_synthetic_covers_every_statement(synthetic_cases: list[dict[str, Any]]) -> None:
    covered = {sid for case in synthetic_cases for sid in case["violates"]}
    assert covered == {s["id"] for s in STATEMENTS}
    assert sum(not case["violates"] for case in synthetic_cases) == 3


def test_case_schema(synthetic_cases: list[dict[str, Any]]) -> None:
    ids = [case["id"] for case in synthetic_cases]
    assert len(ids) == len(set(ids))
    for case in synthetic_cases:
        assert {"id", "source", "code", "violates", "codes", "split"} <= case.keys()
        assert case["split"] in {"dev", "test"}
        assert case["sampled_for"] is None or case["sampled_for"] in case["violates"]


def test_deterministic_for_seed(synthetic_lib: Path, synthetic_cases: list[dict[str, Any]]) -> None:
    again = bc.build_cases(synthetic_lib, seed=0, per_statement=2, negatives=3)
    assert again == synthetic_cases


def test_both_splits_non_empty(synthetic_cases: list[dict[str, Any]]) -> None:
    assert {case["split"] for case in synthetic_cases} == {"dev", "test"}


def test_violates_matches_ruff(synthetic_cases: list[dict[str, Any]], tmp_path: Path) -> None:
    for case in random.Random(1).sample(synthetic_cases, min(10, len(synthetic_cases))):
        codes, violates = relint(case, tmp_path)
        assert (codes, violates) == (case["codes"], case["violates"]), case["source"]


@pytest.mark.skipif(not os.environ.get("LANGCHAIN_TAG_BENCH_SLOW"), reason="about 10 s over the real standard library")
def test_real_stdlib(tmp_path: Path) -> None:
    cases = bc.build_cases(Path(sysconfig.get_paths()["stdlib"]), seed=0)
    assert sum(not case["violates"] for case in cases) == 40
    assert all(len(case["code"]) <= bc.MAX_CHARS for case in cases)
    for statement in STATEMENTS:
        splits = {case["split"] for case in cases if statement["id"] in case["violates"]}
        assert splits == {"dev", "test"}, statement["id"]
    for case in random.Random(0).sample(cases, 10):
        codes, violates = relint(case, tmp_path)
        assert (codes, violates) == (case["codes"], case["violates"]), case["source"]


def test_write_cases_and_cache(synthetic_lib: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, summary = bc.write_cases(tmp_path / "built", lib_dir=synthetic_lib)
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert cases and (tmp_path / "built" / "cases_summary.md").read_text(encoding="utf-8") == summary
    assert "| S01 | E722 |" in summary
    built: list[Path] = []
    original = bc.write_cases

    def fake_write(out_dir: Path, *, lib_dir: Path | None = None) -> tuple[Path, str]:
        built.append(out_dir)
        return original(out_dir, lib_dir=synthetic_lib)

    monkeypatch.setattr(bc, "write_cases", fake_write)
    first = bc.cached_cases(tmp_path / "cache")
    again = bc.cached_cases(tmp_path / "cache")
    assert first == again and len(built) == 1  # built once, then read from the cache
    assert first.parent.name.startswith("ruff-cases-py")
