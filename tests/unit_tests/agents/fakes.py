"""Fakes for the agent tests: a tool-calling agent model that records the system message of every call.

Its replies are a function of the messages it gets (how many tool results follow the latest human message), not
of call order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pydantic import PrivateAttr
from typing_extensions import override

from langchain_tag import Rule
from langchain_tag.testing import FakeChatModel, judged_rule_id

RULES = [
    Rule(rule_id="R1", rule_name="mutable default argument", condition="a function has a list default value",
         action="use None as the default and create the list inside"),
    Rule(rule_id="R2", rule_name="bare except clause", condition="an except clause names no exception class",
         action="catch the specific exception class"),
    Rule(rule_id="R3", rule_name="print call", condition="the code calls print",
         action="log with the logging module instead of printing"),
]  # fmt: skip


@tool
def lookup(n: int) -> str:
    """Look something up (returns a snippet of code that has a list default)."""
    return f"def helper{n}(xs=[]):\n    return xs"


class AgentModel(BaseChatModel):
    """Calls ``lookup`` ``loops`` times after the latest human message, then answers with the rule ids it was given.

    Attributes:
        systems: The system message text of every call ("" without one), in order.
    """

    loops: int = 0
    _systems: list[str] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "agent-fake"

    @property
    def systems(self) -> list[str]:
        return list(self._systems)

    @override
    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> AgentModel:  # type: ignore[override]
        return self

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
        self._systems.append(system)
        results = _results(messages)
        if results < self.loops:
            call = {"name": "lookup", "args": {"n": results}, "id": f"call-{len(messages)}-{results}"}
            message = AIMessage(content="", tool_calls=[call])
        else:
            given = sorted(line.split(":")[0][2:] for line in system.splitlines() if line.startswith("- R"))
            message = AIMessage(content="answer with " + (",".join(given) or "no rules"))
        return ChatResult(generations=[ChatGeneration(message=message)])


def _results(messages: list[BaseMessage]) -> int:
    """How many lookups the turn made: the latest one's ``n`` + 1 (a summary may have dropped the earlier ones).

    The turn starts at the latest human message that is not LangChain's own (a summary is marked ``lc_source``).
    """
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and not m.additional_kwargs]
    turn = messages[humans[-1] if humans else 0 :]
    found = [m.text for m in turn if isinstance(m, ToolMessage)]
    return int(found[-1].split("(")[0].removeprefix("def helper")) + 1 if found else 0


def input_judge(yes: dict[str, str], **kwargs: Any) -> FakeChatModel:
    """A judge that says YES to a rule when its marker text is in the judged input (the prompt), with logprobs."""

    def respond(prompt: str) -> str:
        rule_id = judged_rule_id(prompt)
        input_part = prompt.rsplit("RULE:\n", 1)[0]
        return "YES" if rule_id in yes and yes[rule_id] in input_part else "NO"

    return FakeChatModel(respond=respond, with_logprobs=True, **kwargs)


class RunRecorder(BaseCallbackHandler):
    """Records the tags and metadata of every chat model run, and the custom events."""

    def __init__(self) -> None:
        self.runs: list[tuple[list[str], dict[str, Any]]] = []
        self.events: list[tuple[str, Any]] = []

    @override
    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data))

    @override
    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.runs.append((list(kwargs.get("tags") or []), dict(kwargs.get("metadata") or {})))
