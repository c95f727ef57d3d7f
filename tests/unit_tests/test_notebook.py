"""The notebook runs top to bottom (code cells executed in order, with fake models)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "tag_vs_vectorstore.ipynb"


def test_notebook_runs_top_to_bottom(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("LANGCHAIN_TAG_NOTEBOOK_FAKE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    plot = tmp_path / "plot.png"
    monkeypatch.setenv("LANGCHAIN_TAG_NOTEBOOK_PLOT", str(plot))
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    namespace: dict = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{NOTEBOOK.name}[{cell['id']}]", "exec"), namespace)
    assert plot.stat().st_size > 5000
    assert namespace["p_yes"].shape == (3, len(namespace["rules"]))
    assert namespace["p_yes"].max() > 0.9 and namespace["p_yes"].min() < 0.1
