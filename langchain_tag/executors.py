"""Executors: the model that does the task, given only the matched rules' actions.

Rule mode lists ``[rule_id] action`` and nothing else: the executor never sees
conditions, sources or tags. Chunk mode lists passages for standard RAG. The
prompt is otherwise identical, so methods differ only in reference material.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import Runnable, RunnableLambda

from langchain_tag.registry import resolve

__all__ = [
    "EXECUTOR_PROMPTS",
    "ExecutorPrompt",
    "UnitKind",
    "executor_chain",
    "executor_messages",
    "format_units",
    "resolve_executor_prompt",
    "unfence",
]

UnitKind = Literal["rules", "chunks", "none"]


@dataclass(frozen=True)
class ExecutorPrompt:
    """An executor prompt in rule mode and its chunk-mode twin.

    Rule mode lists ``[rule_id] action`` lines; chunk mode lists reference
    passages. Everything else is identical, so only the reference material
    differs between methods. ``output="code"``: the reply is code, and a reply
    that is one Markdown-fenced block is unwrapped.
    """

    name: str
    version: str
    system: str
    rules_intro: str
    chunks_intro: str
    none_text: str
    task_suffix: str = ""
    output: Literal["text", "code"] = "text"

    def messages(self, query: str, units: Sequence[tuple[str, str]], unit_kind: str = "rules") -> list[BaseMessage]:
        """Build executor messages.

        Args:
            query: The task input.
            units: ``(id, text)`` pairs: rule ids and actions, or chunk ids and text.
            unit_kind: ``"rules"``, ``"chunks"`` or ``"none"``. An empty
                ``units`` gives the same prompt as ``"none"``: a method that
                matched nothing hands the executor what no retrieval does.
        """
        if unit_kind == "none" or not units:
            reference = self.none_text
        elif unit_kind == "rules":
            reference = self.rules_intro + "\n" + "\n".join(f"[{uid}] {text}" for uid, text in units)
        else:
            reference = self.chunks_intro + "\n" + "\n\n".join(f"[{uid}] {text}" for uid, text in units)
        user = f"{reference}\n\nINPUT:\n{query}"
        if self.task_suffix:
            user += f"\n\n{self.task_suffix}"
        return [SystemMessage(self.system), HumanMessage(user)]


EXECUTOR_PROMPTS: dict[str, ExecutorPrompt] = {
    "generic": ExecutorPrompt(
        name="generic",
        version="exec-generic-v2",
        system=(
            "You carry out a task on the user's input. Follow the reference guidance where it fits the input; "
            "do not invent facts. Give only the result."
        ),
        rules_intro="Rules that apply to this input (id and what to do):",
        chunks_intro="Reference passages:",
        none_text="No reference guidance is given.",
    ),
    "code_review": ExecutorPrompt(
        name="code_review",
        version="exec-code-review-v2",
        system=(
            "You revise Python code so that it follows a team's review rules. Apply each given rule that the code "
            "breaks and change nothing else; keep the code's behaviour. Output only the revised code, with no "
            "Markdown fences and no explanation."
        ),
        rules_intro="Review rules that apply to this code (id and what to do):",
        chunks_intro="Review policy passages:",
        none_text="No review rules are given; follow common Python practice.",
        output="code",
    ),
}
"""Executor prompts by domain name: the single source of ``domain=`` and the CLI's choices."""


_ONE_FENCED_BLOCK = re.compile(r"\A\s*(```|~~~)[^\n]*\n(?P<body>.*?)\n?[ \t]*\1[ \t]*\s*\Z", re.DOTALL)


def unfence(text: str) -> str:
    """The code inside a reply that is exactly one Markdown-fenced block; any other reply unchanged.

    Small models fence code although the prompt asks for bare code. Only a
    reply that is nothing but one fenced block is unwrapped, so code that
    merely contains a fence (in a docstring, say) is never cut.
    """
    match = _ONE_FENCED_BLOCK.match(text)
    if match is None or "```" in match.group("body") or "~~~" in match.group("body"):
        return text
    return match.group("body")


def resolve_executor_prompt(executor: str | ExecutorPrompt) -> ExecutorPrompt:
    """Return the executor prompt for a registry key, or pass one through.

    The keys are those of :data:`~langchain_tag.executors.EXECUTOR_PROMPTS`.

    Raises:
        ValueError: For an unknown key, listing the known ones.
    """
    return resolve(executor, EXECUTOR_PROMPTS, ExecutorPrompt, "executor prompt")


def format_units(documents: Sequence[Document], unit_kind: UnitKind) -> list[tuple[str, str]]:
    """``(id, text)`` pairs shown to the executor.

    For rules: the rule id and its action only. For chunks: a chunk id and the
    chunk text.
    """
    if unit_kind == "none":
        return []
    if unit_kind == "rules":
        out = []
        for doc in documents:
            rule_id, action = doc.metadata.get("rule_id"), doc.metadata.get("action")
            if not rule_id or not action:
                raise ValueError(f"document {doc.id!r} is not a rule document (needs rule_id and action metadata)")
            out.append((str(rule_id), str(action)))
        return out
    return [(str(doc.metadata.get("chunk_id") or f"C{i}"), doc.page_content) for i, doc in enumerate(documents, 1)]


def executor_messages(
    query: str,
    documents: Sequence[Document],
    *,
    executor: str | ExecutorPrompt = "generic",
    unit_kind: UnitKind = "rules",
) -> list[BaseMessage]:
    """The executor prompt for one input and its reference units."""
    prompt = resolve_executor_prompt(executor)
    return prompt.messages(query, format_units(documents, unit_kind), unit_kind)


def executor_chain(llm: BaseChatModel, *, executor: str | ExecutorPrompt = "generic") -> Runnable[dict[str, Any], str]:
    """A runnable ``{"input", "documents", "unit_kind"} -> str`` with one executor prompt.

    Args:
        llm: The executor model.
        executor: A key of :data:`~langchain_tag.executors.EXECUTOR_PROMPTS` (``"generic"``, ``"code_review"``)
            or an :class:`~langchain_tag.executors.ExecutorPrompt`.

    Example:
        >>> from langchain_tag.testing import FakeChatModel
        >>> chain = executor_chain(FakeChatModel(respond=lambda prompt: "done"), executor="generic")
        >>> chain.invoke({"input": "some text", "documents": [], "unit_kind": "none"})
        'done'
    """
    prompt = resolve_executor_prompt(executor)

    def build(inputs: dict[str, Any]) -> list[BaseMessage]:
        return executor_messages(
            inputs["input"], inputs.get("documents") or [], executor=prompt, unit_kind=inputs.get("unit_kind", "rules")
        )

    chain = RunnableLambda(build, name="tag_executor_prompt") | llm | StrOutputParser()
    if prompt.output == "code":
        chain = chain | RunnableLambda(unfence, name="tag_unfence")
    return chain.with_config(run_name=f"tag_executor_{prompt.name}")
