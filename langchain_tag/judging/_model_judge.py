"""Which judge a model gets: a chat model the chat judge, a decision model the decision judge.

Every front that judges (the retrievers, the graph, the served app, the agent middleware) builds its judge here,
from one :class:`~langchain_tag.judging.settings.JudgeSettings`, so a model is judged the same way whichever
front holds it.
"""

from __future__ import annotations

from typing import Any, cast

from langchain_tag.judging.chat import ChatJudge, ChatRunnable
from langchain_tag.judging.chat_decision_model import ChatDecisionModel
from langchain_tag.judging.decision_interfaces import is_decision_model
from langchain_tag.judging.decision_judge import DecisionJudge
from langchain_tag.judging.judge import Judge, JudgeState
from langchain_tag.judging.settings import JudgeSettings

__all__ = ["judge_for_model"]


def judge_for_model(llm: Any, settings: JudgeSettings, state: JudgeState | None = None) -> Judge:
    """The judge of ``llm`` with ``settings``, sharing ``state`` (a new one when ``None``).

    A :class:`~langchain_tag.judging.chat_decision_model.ChatDecisionModel` (the package's chat judge behind the
    decision interface) is judged by the chat judge asking each rule as a question; another decision model by a
    :class:`~langchain_tag.judging.decision_judge.DecisionJudge`; anything else by a
    :class:`~langchain_tag.judging.chat.ChatJudge`.

    Example:
        >>> from langchain_tag.testing import fake_judge
        >>> type(judge_for_model(fake_judge({"R1"}), JudgeSettings())).__name__
        'ChatJudge'
    """
    if isinstance(llm, ChatDecisionModel):
        return ChatJudge(llm.llm, questions=True, settings=settings, state=state)
    if is_decision_model(llm):
        return DecisionJudge(llm, settings=settings, state=state)
    return ChatJudge(cast(ChatRunnable, llm), settings=settings, state=state)
