"""``match --cascade`` with its default cheap stage (the packaged MiniLM) in front of an OpenAI-compatible endpoint.

The endpoint is a fake on 127.0.0.1 that says YES exactly for the rules an input triggers (the synthetic
corpus of the unit tests: inputs share words with the rules they trigger). The cascade must keep at least the
stated recall of that endpoint's YES while sending it fewer pairs than the job holds.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_tag.rules import save_rules
from langchain_tag.testing import judged_rule_id
from tests.helpers.chat_endpoint import ChatEndpoint
from tests.unit_tests.scale.test_cascade_job import corpus, kept_recall

pytestmark = [pytest.mark.integration, pytest.mark.allow_hosts(["127.0.0.1"])]


def _answer(applies: dict[int, set[str]]) -> Any:
    """A chat completion saying YES (P 0.9) for the rules the prompt's ``docN`` triggers, else NO (P 0.1)."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        prompt = "\n\n".join(m["content"] for m in body["messages"])
        found = re.search(r"# doc(\d+)", prompt)
        yes = found is not None and judged_rule_id(prompt) in applies[int(found.group(1))]
        word, p = ("YES", 0.9) if yes else ("NO", 0.1)
        top = [{"token": "YES", "logprob": math.log(p)}, {"token": "NO", "logprob": math.log(1 - p)}]
        logprobs = {"content": [{"token": word, "logprob": math.log(max(p, 1 - p)), "top_logprobs": top}]}
        choice = {"index": 0, "message": {"role": "assistant", "content": word}, "logprobs": logprobs}
        reply = {"id": "x", "object": "chat.completion", "model": "judge", "choices": [choice]}
        return reply | {"usage": {"prompt_tokens": 1, "completion_tokens": 1}}

    return reply


@pytest.fixture
def corpus_endpoint() -> Iterator[tuple[Any, ...]]:
    items, rules, applies = corpus(inputs=60)
    endpoint = ChatEndpoint(_answer(applies))
    yield items, rules, applies, endpoint
    endpoint.close()


def test_cli_cascade_keeps_the_target_recall_of_an_endpoints_yes_with_the_packaged_minilm(
    corpus_endpoint: tuple[Any, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers")
    from langchain_tag.cli.main import main

    items, rules, applies, endpoint = corpus_endpoint
    for name, value in {
        "LANGCHAIN_TAG_PROVIDER": "openai",
        "LANGCHAIN_TAG_BASE_URL": endpoint.base_url,
        "LANGCHAIN_TAG_MODEL": "judge",
        "LANGCHAIN_TAG_API_KEY": "none",
    }.items():
        monkeypatch.setenv(name, value)
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("".join(json.dumps({"id": i.id, "text": i.text}) + "\n" for i in items))
    argv = ["match", "--inputs", str(inputs), "--rules", str(save_rules(rules, tmp_path / "rules.jsonl")), "--raw"]
    argv += ["--cascade", "--target-recall", "0.9", "--delta", "0.1", "--label-budget", "250"]
    argv += ["-o", str(tmp_path / "out.jsonl"), "--verdicts", str(tmp_path / "v.sqlite")]
    argv += ["--cascade-report", str(tmp_path / "report.json")]

    assert main(argv) == 0

    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    report = json.loads((tmp_path / "report.json").read_text())
    assert kept_recall(records, applies) >= 0.9
    assert report["strong_judgments"] == endpoint.requests < len(items) * len(rules)
    assert report["proxy"] == "cosine" and report["t_low"] is not None
