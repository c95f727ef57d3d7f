"""The README is a front page: what TAG is, the two CI commands, one drop-in example that runs, a link per task."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TASK_PAGES = (
    "retriever.md",
    "decision-models.md",
    "agents.md",
    "extraction.md",
    "graph.md",
    "serve.md",
    "models.md",
    "scale.md",
    "review.md",
    "cli.md",
    "how-it-works.md",
    "benchmarks.md",
    "reference/index.md",
)


def _run_first_example(heading: str, most_lines: int) -> None:
    """Run the first Python block after ``heading`` and compare what it prints with its ``# ->`` comment."""
    text = README.read_text(encoding="utf-8")
    section = text.split(heading, 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    assert code.count("\n") <= most_lines
    expected = re.search(r"# -> (.*)", code).group(1).strip()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue().strip() == expected


def test_readme_chain_example_runs_as_printed() -> None:
    _run_first_example("## Replace a vector store retriever", 22)


def test_readme_python_blocks_are_the_one_example() -> None:
    assert README.read_text(encoding="utf-8").count("```python") == 1


def test_readme_is_a_front_page() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_readme_starts_with_the_two_commands() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 2  # .ci/run runs the first two; no third one to shift them
    assert blocks[0].strip() == (
        'python3 -m venv .venv && . .venv/bin/activate && pip install --no-compile "torch==2.13.0" -e ".[local]"'
        " && langchain-tag demo"
    )
    assert blocks[1].strip() == (
        '. .venv/bin/activate && pip install -e ".[local,test,ray,docs]" -e ./benchmarks && python -m pytest'
    )


def test_readme_links_each_task_page_once_click_away() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)", text)
    for link in links:
        assert (README.parent / link).exists(), link
    for page in TASK_PAGES:
        assert f"docs/{page}" in links, page


def test_readme_says_how_to_build_and_serve_the_site() -> None:
    development = README.read_text(encoding="utf-8").split("## Development", 1)[1]
    assert "mkdocs build --strict" in development and "mkdocs serve" in development
