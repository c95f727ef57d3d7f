"""Integration tests: the real local model and embeddings (CPU, about a minute).

They load the bundled Qwen2.5-Coder GGUF through the model factory, serve it
on 127.0.0.1 and check a few obvious YES/NO judgments by reading P(YES) from
the judge's top log-probabilities. Skipped when the local runtime or weights
are not installed.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from langchain_tag.local.models import ModelConfig, get_chat_model, get_embeddings
from langchain_tag.local.server import LocalLlamaServer, LocalServerError

pytestmark = [pytest.mark.integration, pytest.mark.allow_hosts(["127.0.0.1"])]

SYSTEM = (
    "You check facts about Python code. Given code and a statement, answer YES if the "
    "statement is true of the code and NO if it is false. Answer with one word."
)
MUTABLE_DEFAULT = "def add(item, bucket=[]):\n    bucket.append(item)\n    return bucket"
ASYNC_CODE = "import asyncio\n\nasync def main():\n    await asyncio.sleep(1)"


def _messages(code: str, statement: str) -> list[SystemMessage | HumanMessage]:
    # Fixed instructions, then the input, then the condition: judgments of one
    # input share a prefix that the server's prompt cache reuses.
    return [
        SystemMessage(SYSTEM),
        HumanMessage(
            f"Code:\n```python\n{code}\n```\n\nStatement: {statement}\n\n"
            "Is the statement true of this code? Answer YES or NO."
        ),
    ]


def _p_yes(message: AIMessage) -> float:
    """P(YES) renormalised over the YES/NO alternatives of the first token."""
    top = message.response_metadata["logprobs"]["content"][0]["top_logprobs"]
    yes = sum(math.exp(t["logprob"]) for t in top if t["token"].strip().upper() == "YES")
    no = sum(math.exp(t["logprob"]) for t in top if t["token"].strip().upper() == "NO")
    assert yes + no > 0.5, f"YES/NO missing from the top alternatives: {top}"
    return yes / (yes + no)


@pytest.fixture(scope="module")
def judge(local_config: ModelConfig) -> BaseChatModel:
    return get_chat_model(local_config, role="judge")


@pytest.mark.parametrize(
    ("code", "holds", "does_not_hold"),
    [
        (
            "import os, sys",
            "several modules are imported on one import line",
            "a function has a mutable default argument",
        ),
        (
            MUTABLE_DEFAULT,
            "a function has a mutable default argument",
            "several modules are imported on one import line",
        ),
        (ASYNC_CODE, "the code uses asyncio", "the code defines a class"),
    ],
)
def test_obvious_judgments(judge: BaseChatModel, code: str, holds: str, does_not_hold: str) -> None:
    p_holds = _p_yes(judge.invoke(_messages(code, holds)))
    p_not = _p_yes(judge.invoke(_messages(code, does_not_hold)))
    assert p_holds > 0.5, f"P(YES)={p_holds:.3f} for {holds!r} on {code!r}"
    assert p_not < 0.5, f"P(YES)={p_not:.3f} for {does_not_hold!r} on {code!r}"


def test_judge_reply_shape_and_prefix_cache(judge: BaseChatModel) -> None:
    first = judge.invoke(_messages("x = [1, 2, 3]", "the code defines a list"))
    second = judge.invoke(_messages("x = [1, 2, 3]", "the code opens a file"))
    assert isinstance(first, AIMessage) and isinstance(second, AIMessage)
    assert first.text.strip().upper() in {"YES", "NO"}
    assert first.usage_metadata is not None and first.usage_metadata["output_tokens"] == 1
    entry = first.response_metadata["logprobs"]["content"][0]
    assert {"token", "logprob", "top_logprobs"} <= set(entry)
    assert len(entry["top_logprobs"]) == 5
    # The second prompt shares everything up to the statement with the first.
    assert second.usage_metadata is not None
    cached = second.usage_metadata.get("input_token_details", {}).get("cache_read", 0)
    assert cached > second.usage_metadata["input_tokens"] // 2


def test_server_is_shared_and_json_schema_output_works(local_config: ModelConfig, judge: BaseChatModel) -> None:
    class Imports(BaseModel):
        modules: list[str]

    executor = get_chat_model(local_config, max_tokens=64)
    assert executor.openai_api_base == judge.openai_api_base  # type: ignore[attr-defined]
    structured = executor.with_structured_output(Imports, method="json_schema")
    result = structured.invoke("List the modules imported by this line: import os, sys")
    assert isinstance(result, Imports)
    assert {m.strip().lower() for m in result.modules} >= {"os", "sys"}


def test_embeddings_are_384_dimensional() -> None:
    embeddings = get_embeddings()
    assert get_embeddings() is embeddings
    docs = embeddings.embed_documents(["import os, sys", "def add(item, bucket=[]): ..."])
    query = embeddings.embed_query("imports on one line")
    assert [len(v) for v in docs] == [384, 384]
    assert len(query) == 384
    assert math.isclose(sum(x * x for x in query), 1.0, rel_tol=1e-3)


def test_bad_gguf_fails_with_server_log(tmp_path: Path, local_config: ModelConfig) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a gguf file" * 64)
    server = LocalLlamaServer(bad, startup_timeout=60)
    with pytest.raises(LocalServerError) as info:
        server.start()
    message = str(info.value)
    assert "exited during start-up" in message
    assert "GGUF" in message or "failed to load model" in message
    assert not server.running
    server.stop()  # also removes the log kept for the error message


def test_server_counters_match_the_tokenized_prompt(judge: BaseChatModel) -> None:
    matcher_speed = pytest.importorskip("langchain_tag_bench.matcher_speed")  # the benchmark distribution
    LlamaEndpoint = matcher_speed.LlamaEndpoint

    endpoint = LlamaEndpoint.of(judge)
    messages = _messages("total = sum(values) / len(values)", "the code divides by a length")
    before = endpoint.counters()
    judge.invoke(messages)
    after = endpoint.counters()
    evaluated = after["prompt_tokens_total"] - before["prompt_tokens_total"]
    reused = after["prompt_tokens_cached_total"] - before["prompt_tokens_cached_total"]
    # Every prompt token is either evaluated or reused from the prefix cache.
    assert evaluated + reused == len(endpoint.tokens(messages))
    assert after["tokens_predicted_total"] - before["tokens_predicted_total"] == 1


def test_the_packages_decision_model_answers_nouls_offline(judge: BaseChatModel) -> None:
    from langchain_core.decisions import ClassifierResponse, Noul

    from langchain_tag.judging.chat_decision_model import ChatDecisionModel

    decisions = ChatDecisionModel(llm=judge)
    questions = {
        "mutable_default": Noul(instructions="Does a function in the code have a list as a default argument value?"),
        "async": Noul(instructions="Does the code define an async function?"),
    }
    response = decisions.invoke({"state": MUTABLE_DEFAULT, "questions": questions})
    assert isinstance(response, ClassifierResponse) and set(response.nouls) == set(questions)
    assert response.nouls["mutable_default"].noul > 0.5 > response.nouls["async"].noul
    assert response.usage is not None and response.usage["input_tokens"] > 0
