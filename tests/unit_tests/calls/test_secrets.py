"""The key a provider echoes back never reaches a file, a terminal, a log or an exception."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from langchain_openai import ChatOpenAI

import langchain_tag.local.models as models
from langchain_tag.calls._secrets import mask_secrets, secrets_of
from langchain_tag.cli.main import main
from langchain_tag.errors import ProviderError
from langchain_tag.judging.chat import ChatJudge
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule, save_rules
from tests.unit_tests.faults import completion

KEY = "sk-proj-Zq8v3LmN0pXr7Ty2Wb5c"
OTHER = "a-bare-token-9f8e7d6c5b4a"


def _echoing(failing: set[str] | None = None) -> ChatOpenAI:
    """An endpoint that answers 401 repeating the request's key (for the rules in ``failing``; all when None)."""

    def respond(request: httpx2.Request) -> httpx2.Response:
        body = request.content.decode()
        if failing is None or any(rule_id in body for rule_id in failing):
            sent = request.headers["authorization"]
            message = f"Incorrect API key provided: {sent.split()[-1]}. Header was 'Authorization: {sent}'"
            return httpx2.Response(401, json={"error": {"message": message, "type": "invalid_request_error"}})
        return completion("NO")

    return ChatOpenAI(
        model="m",
        base_url="http://127.0.0.1:9/v1",
        api_key=KEY,
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(respond)),  # type: ignore[arg-type]
    )


def test_the_masker_removes_the_given_key_and_any_authorization_or_api_key_value() -> None:
    text = f"got {KEY}; Authorization: Bearer {OTHER}; api-key: {OTHER}; {{'api_key': '{OTHER}'}}"
    masked = mask_secrets(text, (KEY,))
    assert KEY not in masked and OTHER not in masked and masked.count("***") == 4
    assert KEY in secrets_of(_echoing())


def test_a_failed_judgment_and_its_warning_never_hold_the_key(
    rules: list[Rule], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING"):
        result = ChatJudge(_echoing({"R-002"}), cache=None, retry_backoff=0).judge("x = 1", rules)
    assert [j.rule_id for j in result.failed] == ["R-002"]
    error = result.failed[0].error or ""
    assert "HTTP 401" in error and "***" in error and KEY not in error
    assert "R-002" in caplog.text and KEY not in caplog.text


def test_the_error_raised_when_every_judgment_failed_never_holds_the_key(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=_echoing(), rules=rules, cache=None)
    with pytest.raises(ProviderError) as caught:
        retriever.invoke("x = 1")
    assert "401" in str(caught.value) and KEY not in str(caught.value) and KEY not in repr(caught.value)


def test_the_output_file_and_stderr_of_a_job_never_hold_the_key(
    rules: list[Rule], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: _echoing({"R-002"}))
    path = save_rules(rules, tmp_path / "rules.jsonl")
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text(json.dumps({"id": "a", "text": "x = 1"}) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    main(["match", "--inputs", str(inputs), "--rules", str(path), "-o", str(out)])
    written = out.read_text(encoding="utf-8")
    err = capsys.readouterr().err
    assert "R-002" in written and "401" in written and KEY not in written
    assert "1 failed judgments" in err and KEY not in err
