"""The docs site: every Python block of every page runs as printed, and the site builds strictly, offline."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
SCRIPT = re.compile(r"<!-- the script ([\w./-]+)")
"""A comment naming the repository script a block is (a test elsewhere runs that script), put on the line above."""
_FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.DOTALL | re.MULTILINE)
HOW_TO = (
    "retriever.md",
    "decision-models.md",
    "agents.md",
    "extraction.md",
    "graph.md",
    "models.md",
    "scale.md",
    "review.md",
    "how-it-works.md",
)


def _blocks(page: str, language: str) -> list[tuple[str, str | None]]:
    """The page's blocks in ``language``, dedented, each with the script it is when the line above names one."""
    text = (DOCS / page).read_text(encoding="utf-8")
    found = []
    for fence in _FENCE.finditer(text):
        if fence.group(2) != language:
            continue
        above = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        script = SCRIPT.search(above)
        found.append((textwrap.dedent(fence.group(3)), script.group(1) if script else None))
    return found


def _examples(page: str) -> list[str]:
    return [code for code, script in _blocks(page, "python") if script is None]


RUNNABLE = [page for page in PAGES if _examples(page)]


@pytest.mark.parametrize("page", RUNNABLE)
def test_page_examples_run_as_printed(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's blocks run in order in one namespace, in a fresh directory; ``# ->`` lines are what they print."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    with mock.patch.dict(os.environ, {"OPENAI_API_KEY": "sk-docs-example"}):  # restores what a block sets
        for number, code in enumerate(_examples(page), 1):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"docs/{page} block {number}", "exec"), namespace)
            expected = [line.strip() for line in re.findall(r"# -> (.*)", code)]
            if expected:
                printed = [line.strip() for line in out.getvalue().strip().splitlines()]
                assert printed == expected, f"docs/{page} block {number}"


def test_each_how_to_page_has_an_example_that_runs() -> None:
    assert set(HOW_TO) <= set(RUNNABLE)


def test_the_served_script_is_the_one_the_served_test_runs() -> None:
    scripts = [(code, script) for code, script in _blocks("serve.md", "python") if script is not None]
    assert [script for _, script in scripts] == ["examples/langgraph_app/drive.py"]
    code, script = scripts[0]
    assert code == (ROOT / script).read_text(encoding="utf-8")  # tests/unit_tests/app/test_served.py runs it
    (commands, _), *_ = _blocks("serve.md", "bash")
    assert "langgraph-app" in commands and "cp .env.example .env" in commands
    assert "--host 127.0.0.1" in commands and "LANGGRAPH_CLI_NO_ANALYTICS=1" in commands


def test_every_page_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES:
        assert re.search(rf"(: |- ){re.escape(page)}\n", config), page


def _hooks() -> ModuleType:
    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_repository_links_become_the_sites_paths() -> None:
    hooks = _hooks()
    page = "See [speed](../benchmarks/results/speed.md#x), [a page](models.md) and [gone](../README.md).\n"
    code = "```text\n[speed](../benchmarks/results/speed.md)\n```\n"
    assert hooks._rewrite(page + code, "how-it-works.md") == (
        "See [speed](benchmarks/results/speed.md#x), [a page](models.md) and [gone](../README.md).\n" + code
    )
    assert hooks._rewrite("[api](../reference/index.md)", "reference/x.md") == "[api](index.md)"
    assert hooks._rewrite("[docs](../../docs/scale.md)", "benchmarks/results/scale.md") == "[docs](../../scale.md)"
    assert hooks._rewrite("[all](results/)", "benchmarks/EXPERIMENTS.md") == "[all](../benchmarks.md)"


def test_the_site_builds_strictly_offline(tmp_path: Path) -> None:
    """``mkdocs build --strict``: a broken link, anchor, nav entry or API reference fails it."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        pytest.importorskip(module)
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    for page in PAGES:
        assert (site / page.removesuffix(".md") / "index.html").exists() or page.endswith("index.md"), page
    reference = (site / "reference" / "retrievers" / "index.html").read_text(encoding="utf-8")
    assert "langchain_tag.retrievers.ApplicabilityRetriever" in reference
    assert (site / "benchmarks" / "results" / "quality" / "index.html").exists()
    assert (site / "review.png").exists()
