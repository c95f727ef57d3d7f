"""TagMiddleware in a create_agent reviewer on the embedded model: the demo's shipped rules, one demo snippet."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage

from langchain_tag.cli.demo import DEMO_INPUTS, load_shipped_demo
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.local.models import ModelConfig, get_chat_model
from langchain_tag.retrievers import ApplicabilityRetriever

pytestmark = [pytest.mark.integration, pytest.mark.allow_hosts(["127.0.0.1"])]

SYSTEM = "You revise Python code so that it follows the team's review rules. Output only the revised code."


class _Systems(BaseCallbackHandler):
    """The system message of every chat model call that is not the judge's."""

    def __init__(self) -> None:
        self.systems: list[str] = []
        self.judge_tags: list[list[str]] = []

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        if (kwargs.get("metadata") or {}).get("lc_source") == "tag_rules":
            self.judge_tags.append(list(kwargs.get("tags") or []))
        else:
            self.systems.append(next((m.text for m in messages[0] if isinstance(m, SystemMessage)), ""))


def test_an_agent_with_the_middleware_reviews_a_demo_snippet(local_config: ModelConfig) -> None:
    from langchain.agents import create_agent

    from langchain_tag.agents import TagMiddleware

    shipped = load_shipped_demo()
    cache = InMemoryVerdictCache()
    shipped.preload(cache)  # the default calibration's reference judgments, as the demo ships them
    judge = get_chat_model(local_config, role="judge")
    retriever = ApplicabilityRetriever(llm=judge, rules=shipped.rules, max_concurrency=1, cache=cache)
    model = get_chat_model(local_config, role="executor", max_tokens=256)
    agent = create_agent(model, tools=[], system_prompt=SYSTEM, middleware=[TagMiddleware(retriever)])
    code = DEMO_INPUTS[0]  # a mutable default argument and a print call
    seen = _Systems()

    streamed: list[Any] = []
    state: dict[str, Any] = {}
    for mode, data in agent.stream(
        {"messages": [HumanMessage(code)]}, {"callbacks": [seen]}, stream_mode=["messages", "values"]
    ):
        if mode == "messages":
            streamed.append(data[0])
        else:
            state = data

    matched = {m["rule_id"]: m for m in state["tag_matches"]}
    rules = {r.rule_id: r for r in shipped.rules}
    assert "R-001" in matched  # the mutable default argument: the snippet's plainest violation
    assert all(m["action"] == rules[rule_id].action for rule_id, m in matched.items())
    assert state["tag_failures"] == []
    (system,) = seen.systems  # one model call, told exactly the matched rules
    assert system.startswith(SYSTEM)
    assert all(rules[rule_id].action in system for rule_id in matched)
    assert not [r for r in shipped.rules if r.rule_id not in matched and r.action in system]
    assert len(seen.judge_tags) == len(shipped.rules) and all("nostream" in tags for tags in seen.judge_tags)
    texts = [str(c.content) for c in streamed if isinstance(c, AIMessage | AIMessageChunk)]
    assert texts and not [t for t in texts if t.strip().upper() in {"YES", "NO"}]  # no judge token streamed
    answer = state["messages"][-1]
    assert isinstance(answer, AIMessage) and "def add_tag" in answer.text
