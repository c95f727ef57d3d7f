"""The README's chain example runs as printed and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


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


def test_readme_agent_example_runs_as_printed() -> None:
    _run_first_example("## In an agent", 22)


def test_readme_starts_with_the_two_commands() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert "langchain-tag demo" in blocks[0]
    assert "pytest" in blocks[1]


def test_readme_sdk_example_is_the_script_the_served_test_runs() -> None:
    section = README.read_text(encoding="utf-8").split("### Serve it with LangGraph", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    script = README.parent / "examples" / "langgraph_app" / "drive.py"
    assert code == script.read_text(encoding="utf-8")  # tests/unit_tests/app/test_served.py runs it
    commands = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)
    assert "langgraph-app" in commands and "cp .env.example .env" in commands
    assert "--host 127.0.0.1" in commands and "LANGGRAPH_CLI_NO_ANALYTICS=1" in commands
