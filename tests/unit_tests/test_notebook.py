"""The notebooks run top to bottom in a Jupyter kernel (nbclient) on deterministic fakes, and are committed executed.

Every notebook in ``notebooks/`` reads ``LANGCHAIN_TAG_NOTEBOOK_FAKES=1`` in its first code cell and then uses the
fake models of :mod:`langchain_tag.testing` (and, for the quality comparison, a tiny fake quality run in a temporary
directory). The kernel talks to the test over Unix sockets (``transport="ipc"``): the unit suite allows no TCP.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
NEEDS = {"tag_vs_langchain.ipynb": ("langchain_tag_bench", "langchain_classic", "pandas")}
"""What a notebook imports beyond the core and its test extra (the benchmark distribution)."""
MAX_BYTES = 1_000_000
"""A committed notebook stays under this size (its outputs are small PNGs and short tables)."""


def _outputs(notebook: Any) -> list[Any]:
    return [output for cell in notebook["cells"] if cell["cell_type"] == "code" for output in cell.get("outputs", [])]


def _images(notebook: Any) -> int:
    return sum("image/png" in output.get("data", {}) for output in _outputs(notebook))


def test_the_notebooks_are_found() -> None:
    assert {p.name for p in NOTEBOOKS} >= {"tag_vs_vectorstore.ipynb", "tag_vs_langchain.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom_on_fakes(path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("ipykernel")
    for module in NEEDS.get(path.name, ()):
        pytest.importorskip(module)
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    from jupyter_client.manager import KernelManager

    monkeypatch.setenv("LANGCHAIN_TAG_NOTEBOOK_FAKES", "1")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend renders the figures
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    notebook = nbformat.read(path, as_version=4)
    manager = KernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "kernel-ipc"))
    client = nbclient.NotebookClient(
        notebook,
        km=manager,
        timeout=300,
        allow_errors=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError, naming the cell, on the first error
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code)
    assert not [o for o in _outputs(notebook) if o.get("output_type") == "error"]
    assert _images(notebook) >= 1, "the notebook drew no figure"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_is_executed_with_outputs_and_no_error(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code and all(cell.get("execution_count") is not None for cell in code), f"{path.name} is not executed"
    assert _outputs(notebook), f"{path.name} is committed without outputs"
    errors = [o for o in _outputs(notebook) if o.get("output_type") == "error"]
    assert not errors, f"{path.name} holds an error output: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    assert _images(notebook) >= 1, f"{path.name} holds no plot"
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is {path.stat().st_size:,} bytes; keep outputs small"
