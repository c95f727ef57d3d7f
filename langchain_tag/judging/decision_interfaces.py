"""The one place that touches LangChain's decision-model interfaces (beta upstream).

Two shapes of the same idea, one state and many yes/no questions answered with
a P(yes) each, are spoken here and nowhere else, so a rename upstream touches
this file only:

- ``langchain_core.decisions.BaseDecisionModel`` (``{"state": ..., "questions":
  {name: Noul(...)}}`` in, ``ClassifierResponse`` with ``nouls[name].noul`` out);
- ``langchain_openai.decisions.OpenAIDecisions``, OpenAI's Decisions API
  (``{"input": ..., "questions": {name: Predicate(...)}}`` in,
  ``DecisionResponse`` with ``predicates[name].probability`` out). It is found
  only when ``langchain_openai.decisions`` is already imported (a user who built
  one has imported it), so the core never loads the extra. Its requests are sent
  by :mod:`langchain_tag.judging._openai_decisions`, which also reads the body for
  questions answered twice (the parsed response keeps one answer a question);
  what it returns is a :class:`DecisionReply`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.decisions import (
    BaseDecisionModel,
    ClassifierResponse,
    Noul,
    NoulAnswer,
    Question,
    State,
)
from langchain_core.messages import BaseMessage

__all__ = [
    "BaseDecisionModel",
    "ClassifierResponse",
    "DecisionReply",
    "Noul",
    "NoulAnswer",
    "Question",
    "State",
    "answered_by",
    "answers_of",
    "conflicting_answers",
    "is_decision_model",
    "is_openai_decisions",
    "noul_answer",
    "noul_answers",
    "probabilities",
    "question_request",
    "state_text",
    "unsupported_questions",
]

_OPENAI_MODULE = "langchain_openai.decisions"


def _openai_decisions_class() -> type | None:
    module = sys.modules.get(_OPENAI_MODULE)
    found = getattr(module, "OpenAIDecisions", None) if module is not None else None
    return found if isinstance(found, type) else None


@dataclass(frozen=True, slots=True)
class DecisionReply:
    """A decision model's parsed response, with the questions its body answered more than once, differently.

    Attributes:
        response: The response as the model parsed it (which keeps one answer a question).
        conflicts: Question name to each answer the body gave it, as text (``P(yes)=0.67``, ``refusal``).
    """

    response: Any
    conflicts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def usage(self) -> Any:
        """The usage the response reports."""
        return getattr(self.response, "usage", None)


def is_openai_decisions(model: object) -> bool:
    """Whether ``model`` is an ``OpenAIDecisions`` (found only when its module is loaded)."""
    openai_class = _openai_decisions_class()
    return openai_class is not None and isinstance(model, openai_class)


def is_decision_model(model: object) -> bool:
    """Whether ``model`` answers yes/no questions in one request (a decision model), not a chat model.

    >>> from langchain_tag.testing import FakeChatModel
    >>> is_decision_model(FakeChatModel(respond=lambda prompt: "YES"))
    False
    """
    return isinstance(model, BaseDecisionModel) or is_openai_decisions(model)


def question_request(model: object, state: str, questions: Mapping[str, str]) -> dict[str, Any]:
    """The request that asks ``model`` every yes/no question about ``state``, each named by its key.

    Args:
        model: A decision model (:func:`is_decision_model`).
        state: The input text.
        questions: Question name (a rule id) to its full instructions.

    Returns:
        ``{"state": ..., "questions": {name: Noul}}`` for a ``BaseDecisionModel``,
        ``{"input": ..., "questions": {name: Predicate}}`` for ``OpenAIDecisions``.
    """
    if isinstance(model, BaseDecisionModel):
        return {"state": state, "questions": {name: Noul(instructions=text) for name, text in questions.items()}}
    predicate = sys.modules[_OPENAI_MODULE].Predicate
    return {"input": state, "questions": {name: predicate(instructions=text) for name, text in questions.items()}}


def answers_of(response: object) -> tuple[dict[str, float], Mapping[str, tuple[str, ...]]]:
    """A decision model's response read once: P(yes) per question name, and the questions answered differently.

    The first is :func:`probabilities`, the second :func:`conflicting_answers`.

    >>> answers_of(DecisionReply(ClassifierResponse(model="m", answers={"R1": noul_answer(0.75)})))
    ({'R1': 0.75}, {})

    Raises:
        TypeError: When ``response`` is neither a ``ClassifierResponse`` nor a ``DecisionResponse`` (nor a
            :class:`DecisionReply` of one).
    """
    conflicts: Mapping[str, tuple[str, ...]] = {}
    if isinstance(response, DecisionReply):
        conflicts = response.conflicts
        response = response.response
    if isinstance(response, ClassifierResponse):
        return {name: answer.noul for name, answer in response.nouls.items()}, conflicts
    predicates = getattr(response, "predicates", None)
    if isinstance(predicates, Mapping):
        return {str(name): float(answer.probability) for name, answer in predicates.items()}, conflicts
    raise TypeError(f"not a decision model response: {type(response).__name__}")


def answered_by(response: object) -> str | None:
    """The model a decision model's response names as the one that answered (``None``: it names none).

    >>> answered_by(DecisionReply(ClassifierResponse(model="m", answers={})))
    'm'
    """
    if isinstance(response, DecisionReply):
        response = response.response
    model = getattr(response, "model", None)
    return model if isinstance(model, str) and model else None


def probabilities(response: object) -> dict[str, float]:
    """P(yes) per question name from a decision model's response (questions refused or missing are absent).

    Raises:
        TypeError: When ``response`` is neither a ``ClassifierResponse`` nor a ``DecisionResponse`` (nor a
            :class:`DecisionReply` of one).
    """
    return answers_of(response)[0]


def conflicting_answers(response: object) -> Mapping[str, tuple[str, ...]]:
    """The questions a response's body answered more than once, differently (none unless a :class:`DecisionReply`).

    >>> conflicting_answers(DecisionReply(response=None, conflicts={"R1": ("P(yes)=0.9", "P(yes)=0.1")}))
    {'R1': ('P(yes)=0.9', 'P(yes)=0.1')}
    """
    return response.conflicts if isinstance(response, DecisionReply) else {}


def state_text(state: State) -> str:
    """A decision state as the text a chat judge reads: a string as is, messages as ``role: text`` lines.

    >>> state_text("def f(): pass")
    'def f(): pass'
    >>> state_text({"code": "x = 1"})
    '{"code": "x = 1"}'
    """
    if isinstance(state, str):
        return state
    if isinstance(state, BaseMessage):
        return f"{state.type}: {state.text}"
    return json.dumps(_plain(state), ensure_ascii=False)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        return {"role": value.type, "content": value.text}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def unsupported_questions(questions: Mapping[str, Question]) -> list[str]:
    """The names of questions that are not ``Noul`` (with their type), for a clear refusal."""
    return [f"{name} ({type(q).__name__})" for name, q in questions.items() if not isinstance(q, Noul)]


def noul_answer(p_yes: float) -> NoulAnswer:
    """A ``Noul`` answer holding ``p_yes``."""
    return NoulAnswer(type="noul", noul=p_yes)


def noul_answers(p_yes: Mapping[str, float]) -> dict[str, NoulAnswer]:
    """A ``Noul`` answer per question name, each holding its P(yes) (:func:`noul_answer`).

    >>> noul_answers({"R1": 0.25})["R1"].noul
    0.25
    """
    return {name: NoulAnswer(type="noul", noul=p) for name, p in p_yes.items()}
