"""A PEP 8 retrieval benchmark whose gold rule sets come from pycodestyle.

The rule set has one rule per pycodestyle check code (:data:`PEP8_CHECKS`,
:func:`pep8_rules`); the inputs are Python snippets; the gold rule set of a
snippet is the set of codes pycodestyle reports for it
(:func:`pycodestyle_codes`). Any retriever (similarity top-k, the LLM
applicability judge) can then be scored with
:func:`langchain_tag_bench.metrics.score_retrieval` against that gold, with no
LLM grader.

Inputs (:func:`load_pep8_items`) are the HumanEval problems, each as
``prompt + canonical_solution`` (group ``"canonical"``), plus variants broken
by program (group ``"variant"``, see :func:`make_variants`).

The benchmark is split over three modules:

* :mod:`~langchain_tag_bench.pep8_checks`: the check table and the rules
  (which checks are in the rule set, and why).
* :mod:`~langchain_tag_bench.style_breaks`: the style-breaking transforms
  and the variants made with them.
* This module: the gold (pycodestyle run in process), the items and their
  summary. It re-exports the public names of the other two, so they can be
  imported from here as well.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_tag_bench.pep8_checks import (
    DEFAULT_OFF,
    DOCUMENT_ID,
    EXCLUDED_CODES,
    FAMILIES,
    MAX_LINE_LENGTH,
    PEP8_CHECKS,
    Pep8Check,
    check_by_code,
    pep8_rules,
)
from langchain_tag_bench.style_breaks import TRANSFORMS, Transform, apply_transform, make_variants

__all__ = [
    "DEFAULT_OFF",
    "DOCUMENT_ID",
    "EXCLUDED_CODES",
    "FAMILIES",
    "GROUPS",
    "MAX_LINE_LENGTH",
    "PEP8_CHECKS",
    "TRANSFORMS",
    "Pep8Check",
    "Pep8Item",
    "Transform",
    "apply_transform",
    "check_by_code",
    "gold_summary",
    "load_pep8_items",
    "make_variants",
    "pep8_rules",
    "pycodestyle_codes",
]

GROUPS: tuple[str, ...] = ("canonical", "variant")
"""Item groups: the unchanged HumanEval snippet, and a variant broken by :data:`TRANSFORMS`."""

_IGNORED = ("W503", "W504")

_RULE_SET_CODES: frozenset[str] = frozenset(check.code for check in PEP8_CHECKS)


# --------------------------------------------------------------------------
# Gold: what pycodestyle reports.
# --------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _style_options() -> Any:
    try:
        import pycodestyle
    except ImportError as exc:  # pragma: no cover - the bench extra installs it
        raise ImportError("the PEP 8 benchmark needs pycodestyle: pip install langchain-tag-bench") from exc
    # Every option that changes what is reported is set here, so a user or
    # project configuration file cannot change the gold.
    guide = pycodestyle.StyleGuide(
        quiet=True,
        select=[],
        ignore=list(_IGNORED),
        max_line_length=MAX_LINE_LENGTH,
        max_doc_length=None,
        hang_closing=False,
        indent_size=4,
        verbose=0,
    )
    return guide.options


def pycodestyle_codes(code: str) -> tuple[str, ...]:
    """The rule-set codes pycodestyle reports for a snippet.

    pycodestyle runs in process on the snippet's lines (nothing is printed)
    with every check on except W503 and W504, and a 79-character line limit.

    Args:
        code: Python source text.

    Returns:
        Sorted unique codes, only those in :data:`PEP8_CHECKS`.
    """
    import pycodestyle

    options = _style_options()
    found: set[str] = set()

    class _Collect(pycodestyle.BaseReport):  # type: ignore[misc]
        def error(self, line_number: int, offset: int, text: str, check: Any) -> Any:
            result = super().error(line_number, offset, text, check)
            if result:
                found.add(result)
            return result

    lines = io.StringIO(code, newline=None).readlines()
    pycodestyle.Checker(lines=lines, options=options, report=_Collect(options)).check_all()
    return tuple(sorted(found & _RULE_SET_CODES))


# --------------------------------------------------------------------------
# Items.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Pep8Item:
    """One benchmark input with its gold codes.

    Attributes:
        key: ``"HumanEval/0"`` for a canonical snippet, ``"HumanEval/0#v1"``
            for its first variant.
        code: The Python snippet.
        gold: Codes pycodestyle reports for it (:func:`pycodestyle_codes`).
        group: ``"canonical"`` or ``"variant"``.
        transforms: Names of the transforms applied (empty for canonical).
    """

    key: str
    code: str
    gold: tuple[str, ...]
    group: str
    transforms: tuple[str, ...] = ()


def load_pep8_items(
    humaneval_path: str | Path, *, limit: int | None = None, variants: int = 2, seed: int = 0
) -> list[Pep8Item]:
    """The benchmark items built from HumanEval.

    For each of the first ``limit`` problems: the snippet ``prompt +
    canonical_solution`` (group ``"canonical"``), then up to ``variants``
    style-broken variants of it (group ``"variant"``, see
    :func:`make_variants`). Gold codes come from :func:`pycodestyle_codes`.

    Args:
        humaneval_path: ``HumanEval.jsonl.gz`` (or an uncompressed ``.jsonl``).
        limit: At most this many problems; all when ``None``.
        variants: Variants per problem.
        seed: Seed for the variants.

    Returns:
        Items in file order, each canonical item followed by its variants.

    Raises:
        BenchDataError: When the file is missing, unreadable or has a bad
            record (the message names the path and line).
        ValueError: On a negative ``limit`` or ``variants``.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if variants < 0:
        raise ValueError(f"variants must be >= 0, got {variants}")
    from langchain_tag_bench.code import load_humaneval

    items: list[Pep8Item] = []
    for problem in load_humaneval(Path(humaneval_path).expanduser(), limit=limit):
        task_id, snippet = problem.task_id, problem.prompt + problem.canonical_solution
        items.append(Pep8Item(task_id, snippet, pycodestyle_codes(snippet), "canonical"))
        for number, (name, code) in enumerate(make_variants(snippet, seed=seed, n=variants), start=1):
            items.append(
                Pep8Item(f"{task_id}#v{number}", code, pycodestyle_codes(code), "variant", tuple(name.split("+")))
            )
    return items


def _group_summary(items: Sequence[Pep8Item]) -> dict[str, Any]:
    sizes = [len(item.gold) for item in items]
    return {
        "items": len(items),
        "empty_gold": sum(1 for size in sizes if size == 0),
        "mean_gold_size": round(sum(sizes) / len(sizes), 3) if sizes else 0.0,
        "max_gold_size": max(sizes, default=0),
    }


def gold_summary(items: Iterable[Pep8Item]) -> dict[str, Any]:
    """Counts that describe the gold of a list of items.

    Args:
        items: Benchmark items.

    Returns:
        ``items``, ``empty_gold`` (items whose gold is empty),
        ``mean_gold_size``, ``max_gold_size``, ``distinct_codes``,
        ``code_counts`` (in how many items each code is gold, most frequent
        first), ``transform_counts`` (how often each transform was applied)
        and ``by_group`` (the size counts per group).
    """
    items = list(items)
    codes = Counter(code for item in items for code in item.gold)
    transforms = Counter(name for item in items for name in item.transforms)
    summary = _group_summary(items)
    summary["distinct_codes"] = len(codes)
    summary["code_counts"] = dict(sorted(codes.items(), key=lambda kv: (-kv[1], kv[0])))
    summary["transform_counts"] = dict(sorted(transforms.items(), key=lambda kv: (-kv[1], kv[0])))
    summary["by_group"] = {
        group: _group_summary([item for item in items if item.group == group])
        for group in GROUPS
        if any(item.group == group for item in items)
    }
    return summary
