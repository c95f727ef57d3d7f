"""The style-breaking transforms and the variants made with them."""

from __future__ import annotations

import pytest

from bench_tests.unit_tests.test_pep8 import CLEAN, codes, parses
from langchain_tag_bench.pep8_checks import PEP8_CHECKS
from langchain_tag_bench.style_breaks import TRANSFORMS, Transform, apply_transform, make_variants

pytest.importorskip("pycodestyle")


# --------------------------------------------------------------------------
# Transforms.
# --------------------------------------------------------------------------
def test_transform_names_unique_and_codes_in_rule_set() -> None:
    names = [t.name for t in TRANSFORMS]
    assert len(names) == len(set(names))
    table = {c.code for c in PEP8_CHECKS}
    for transform in TRANSFORMS:
        assert transform.codes and set(transform.codes) <= table


@pytest.mark.parametrize("transform", TRANSFORMS, ids=lambda t: t.name)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_transform_produces_its_codes_on_clean_code(transform: Transform, seed: int) -> None:
    broken = apply_transform(transform, CLEAN, seed=seed)
    assert broken is not None, f"{transform.name} did not apply"
    assert broken != CLEAN
    assert parses(broken)
    found = codes(broken)
    assert set(transform.codes) <= set(found), f"{transform.name} gave {found}"


def test_transforms_that_do_not_apply_return_none() -> None:
    plain = "x = 1\n"
    assert apply_transform("bare_except", plain) is None
    assert apply_transform("none_equality", plain) is None
    assert apply_transform("collapse_blank_lines", plain) is None
    assert apply_transform("import_not_at_top", plain) is None
    with pytest.raises(KeyError):
        apply_transform("no_such_transform", plain)


def test_transform_keeps_meaning_where_it_should() -> None:
    assert apply_transform("negated_membership", "y = x not in z\n") == "y = not x in z\n"
    assert apply_transform("negated_identity", "y = x is not z\n") == "y = not x is z\n"
    assert apply_transform("none_equality", "y = x is None\n") == "y = x == None\n"
    assert apply_transform("bare_except", "try:\n    pass\nexcept (A, B):\n    pass\n") == (
        "try:\n    pass\nexcept:\n    pass\n"
    )
    assert apply_transform("lambda_assignment", "def f(a: int, b=2) -> int:\n    return a + b\n") == (
        "f = lambda a, b=2: a + b\n"
    )
    assert apply_transform("semicolon_join", "x = 1\ny = 2\n") == "x = 1; y = 2\n"


def test_transform_skips_result_that_does_not_parse() -> None:
    # The only content line ends in a backslash: trailing whitespace would break the continuation.
    assert apply_transform("trailing_whitespace", "x = 1 + \\\n") is None


# --------------------------------------------------------------------------
# Variants.
# --------------------------------------------------------------------------
def test_variants_parse_and_are_named_by_transforms() -> None:
    variants = make_variants(CLEAN, seed=0, n=5)
    assert len(variants) == 5
    names = {t.name for t in TRANSFORMS}
    seen_codes: set[str] = set()
    for name, code in variants:
        parts = name.split("+")
        assert 1 <= len(parts) <= 3 and set(parts) <= names
        assert parses(code) and code != CLEAN
        seen_codes.update(codes(code))
    assert len({code for _, code in variants}) == 5
    assert seen_codes


def test_variants_are_deterministic_and_depend_on_seed() -> None:
    assert make_variants(CLEAN, seed=7, n=3) == make_variants(CLEAN, seed=7, n=3)
    assert make_variants(CLEAN, seed=7, n=3) != make_variants(CLEAN, seed=8, n=3)
    assert make_variants(CLEAN, seed=0, n=0) == []
