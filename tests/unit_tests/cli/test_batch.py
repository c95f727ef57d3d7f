"""``batch import`` stopped by Ctrl-C at any moment: exit 130 and one line, the interrupt injected where it lands
(while the command's modules are imported, inside a library that turns it into another error, in a place that
swallows it), not timed."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from langchain_tag.cli.main import main
from langchain_tag.rules import Rule, save_rules

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def batch_import(tmp_path: Path, rules: list[Rule]) -> list[str]:
    """The argv of a ``batch import`` of a whole export's replies (to a fresh verdict cache)."""
    from tests.helpers.judge_fakes import answer

    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("".join(f'"x = {n}"\n' for n in range(20)))
    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    common = ["--inputs", str(inputs), "--rules", rule_file, "--model", "gpt-4o-mini"]
    assert (
        main(["batch", "export", *common, "--verdicts", str(tmp_path / "export.sqlite"), "--out", str(tmp_path)]) == 0
    )
    results = answer(sorted(tmp_path.glob("batch-*.jsonl")), tmp_path / "results.jsonl")
    return ["batch", "import", str(results), *common, "--verdicts", str(tmp_path / "v.sqlite")]


@pytest.fixture(autouse=True)
def _ctrl_c_raises() -> Any:
    """Ctrl-C raises KeyboardInterrupt here as at a terminal, even where the suite runs with SIGINT ignored.

    A shell starts its background jobs with SIGINT ignored, and Python then leaves it ignored: run so, the
    interrupts injected below would do nothing.
    """
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _interrupt() -> None:
    """Ctrl-C, delivered to this process now (``os.kill`` runs the handler before it returns)."""
    os.kill(os.getpid(), signal.SIGINT)


def test_an_interrupt_a_library_turns_into_another_error_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], batch_import: list[str]
) -> None:
    """As pydantic-core does when Ctrl-C lands while it builds a schema: "SchemaError: ... KeyboardInterrupt"."""
    import langchain_tag.scale.batch_api as batch_api

    def import_openai_batch(*args: Any, **kwargs: Any) -> Any:
        try:
            _interrupt()
        except KeyboardInterrupt as exc:
            raise ValueError(f"Error building validator: {exc!r}") from None
        raise AssertionError("the interrupt was not raised")

    monkeypatch.setattr(batch_api, "import_openai_batch", import_openai_batch)
    capsys.readouterr()
    assert main(batch_import) == 130
    err = capsys.readouterr().err
    assert err.startswith("langchain-tag: interrupted") and err.count("\n") == 1


def test_an_interrupt_swallowed_on_the_way_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], batch_import: list[str]
) -> None:
    """As in a finalizer, where Python prints "Exception ignored ... KeyboardInterrupt" and goes on."""
    import langchain_tag.scale.batch_api as batch_api

    real = batch_api.import_openai_batch

    def import_openai_batch(*args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(KeyboardInterrupt):  # swallowed
            _interrupt()
        return real(*args, **kwargs)

    monkeypatch.setattr(batch_api, "import_openai_batch", import_openai_batch)
    capsys.readouterr()
    assert main(batch_import) == 130
    err = capsys.readouterr().err
    assert "langchain-tag: interrupted" in err and "recorded" not in err.split("langchain-tag: interrupted")[1]


INTERRUPTED_IMPORTS = """
import importlib.abc, os, signal, sys

WHEN = sys.argv[1]
signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal, even if the suite ignores SIGINT


class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == WHEN:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the command's modules are imported
        return None


sys.meta_path.insert(0, Interrupt())
from langchain_tag.cli.main import main

sys.exit(main(sys.argv[2:]))
"""
"""The CLI, Ctrl-C landing as the module named by its first argument is imported."""


@pytest.mark.parametrize("module", ["langchain_tag.rules", "langchain_tag.scale.batch_api.results", "sqlite3"])
def test_an_interrupt_while_the_command_is_imported_exits_130(
    module: str, tmp_path: Path, batch_import: list[str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_IMPORTS, module, *batch_import],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=120,
    )
    err = done.stderr.decode()
    assert done.returncode == 130, err
    assert err.startswith("langchain-tag: interrupted") and err.count("\n") == 1, err
    verdicts = tmp_path / "v.sqlite"
    if verdicts.exists():
        with sqlite3.connect(verdicts) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_the_batch_client_keeps_the_chat_judges_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from langchain_tag.cli.batch import _batch_client

    monkeypatch.setenv("LANGCHAIN_TAG_TIMEOUT", "0.5")
    monkeypatch.setenv("LANGCHAIN_TAG_API_KEY", "sk-test-not-used-anywhere")
    client = _batch_client(argparse.Namespace(base_url="http://127.0.0.1:9/v1"))
    assert client.timeout == 0.5
