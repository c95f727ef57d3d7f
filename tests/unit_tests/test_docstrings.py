"""The examples in the core's docstrings run as written (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import langchain_tag

BESIDE = ("langchain_tag.local", "langchain_tag.cli", "langchain_tag.scale.ray_data")


def _core_modules() -> list[str]:
    names = [info.name for info in pkgutil.walk_packages(langchain_tag.__path__, "langchain_tag.")]
    return sorted(n for n in names if not any(n == b or n.startswith(b + ".") for b in BESIDE))


def _examples() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = []
    for name in _core_modules():
        module = importlib.import_module(name)
        found += [t for t in finder.find(module, name) if t.examples and t.name.startswith(name)]
    return found


EXAMPLES = _examples()


def test_the_core_has_docstring_examples() -> None:
    names = {t.name for t in EXAMPLES}
    assert "langchain_tag.retrievers.ApplicabilityRetriever" in names
    assert "langchain_tag.executors.executor_chain" in names


@pytest.mark.parametrize("test", EXAMPLES, ids=lambda t: t.name)
def test_docstring_example_runs(test: doctest.DocTest) -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0, f"{test.name}: {result.failed} of {result.attempted} failed"
