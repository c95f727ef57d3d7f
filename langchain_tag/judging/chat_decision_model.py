"""TAG's judge offered as a LangChain decision model: ``Noul`` questions answered by any chat model.

:class:`ChatDecisionModel` is a ``langchain_core.decisions.BaseDecisionModel``.
Each ``Noul`` question about the state becomes one chat request on the judge's
path: rendered once (input first, so a prefix cache holds;
:func:`~langchain_tag.judging.prompts.question_messages`), sent through the
package's call runner (concurrency cap, retries, the verdict cache), answered
with one token and read once (P(YES) from the first token's logprobs, else the
YES/NO in the text). With the embedded local model behind it, a LangChain user
gets an offline decision model.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.runnables import ensure_config
from pydantic import ConfigDict, PrivateAttr, ValidationInfo, field_validator, model_validator
from typing_extensions import Self, override

from langchain_tag import ranges
from langchain_tag.calls._identity import model_identity
from langchain_tag.calls._limits import CallLimits
from langchain_tag.calls._runner import CallRunner, Request
from langchain_tag.errors import ProviderError
from langchain_tag.judging._pairs import question_pair
from langchain_tag.judging._read import read_message
from langchain_tag.judging.chat import JUDGE_TAGS, ChatRunnable, configure_judge
from langchain_tag.judging.decision_interfaces import (
    BaseDecisionModel,
    ClassifierResponse,
    Noul,
    Question,
    State,
    noul_answers,
    state_text,
    unsupported_questions,
)
from langchain_tag.judging.results import Reading
from langchain_tag.judging.verdict_cache import VerdictCache, VerdictStore

__all__ = ["ChatDecisionModel"]


class ChatDecisionModel(BaseDecisionModel):
    """A decision model that answers ``Noul`` (yes/no) questions with a chat model, one token per question.

    Example:
        >>> from langchain_core.decisions import Noul
        >>> from langchain_tag.testing import FakeChatModel
        >>> chat = FakeChatModel(respond=lambda p: ("YES", 0.8) if "print(" in p else "NO", with_logprobs=True)
        >>> decisions = ChatDecisionModel(llm=chat)
        >>> asked = {"prints": Noul(instructions="Does the code print?")}
        >>> response = decisions.invoke({"state": "print(1)", "questions": asked})
        >>> round(response.nouls["prints"].noul, 2)
        0.8

    Only ``Noul`` questions are supported; ``Choice``, ``Score`` and ``Box`` are refused with a ``ValueError``
    naming them.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    llm: ChatRunnable
    """The chat model that answers (a bare OpenAI-compatible model gets logprobs and a one-token cap bound)."""
    model: str = ""
    """The answering model's name in responses and traces; empty: the chat model's identity."""
    cache: VerdictCache | None = None
    """Verdict cache: a question asked before about the same state costs no call; ``None`` (the default): none.
    Given to an :class:`~langchain_tag.retrievers.ApplicabilityRetriever`, the retriever's cache is the one used."""
    max_concurrency: int = 8
    """Most questions in flight at once, unless the call's config says otherwise (``max_concurrency``)."""
    max_attempts: int = 2
    """Calls per question before it fails."""

    _identity: tuple[Any, str] | None = PrivateAttr(default=None)
    """The chat model whose identity (part of each cache key) was worked out, and that identity."""
    _runner: tuple[tuple[int, int, int, int], CallRunner] | None = PrivateAttr(default=None)
    """The runner of the last call, with what it was made of (the chat model's and cache's ids, attempts, limit;
    the runner holds both objects, so their ids stay theirs)."""

    @field_validator("max_concurrency", "max_attempts")
    @classmethod
    def _check_setting(cls, value: Any, info: ValidationInfo) -> Any:
        return ranges.check(str(info.field_name), value)

    @model_validator(mode="after")
    def _name_the_model(self) -> Self:
        if not self.model:
            self.model = model_identity(self.llm)
        return self

    @property
    @override
    def _provider(self) -> str:
        return "langchain_tag"

    @override
    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        runner, requests, callbacks = self._plan(state, questions)
        return self._response(questions, runner.run(requests, callbacks=callbacks))

    @override
    async def _aclassify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        runner, requests, callbacks = self._plan(state, questions)
        return self._response(questions, await runner.arun(requests, callbacks=callbacks))

    def _plan(self, state: State, questions: dict[str, Question]) -> tuple[CallRunner, list[Request[Reading]], Any]:
        """The call's runner, one chat request per question, and the callbacks of the call's config.

        The runner is the last call's while the chat model, cache, attempts and concurrency limit (the config's
        ``max_concurrency``, else the field) are the same; its chat calls are child runs of the call.
        """
        refused = unsupported_questions(questions)
        if refused:
            raise ValueError(f"ChatDecisionModel answers Noul (yes/no) questions only; not: {', '.join(refused)}")
        config = ensure_config()
        limit = config.get("max_concurrency") or self.max_concurrency
        made = (id(self.llm), id(self.cache), self.max_attempts, limit)
        kept = self._runner
        runner = kept[1] if kept is not None and kept[0] == made else None
        if runner is None:
            runner = CallRunner(
                configure_judge(self.llm),
                model=self.llm,
                limits=CallLimits(max_concurrency=limit, max_attempts=self.max_attempts),
                store=VerdictStore(self.cache) if self.cache is not None else None,
            )
            self._runner = (made, runner)
        if self._identity is None or self._identity[0] is not self.llm:
            self._identity = (self.llm, model_identity(self.llm))
        text, identity = state_text(state), self._identity[1]
        requests = []
        for name, question in questions.items():
            assert isinstance(question, Noul)
            asked, criteria = question.instructions, question.criteria
            yes, no = (_text(criteria.true), _text(criteria.false)) if criteria is not None else ("", "")
            pair = question_pair(
                model=identity,
                query=text,
                name=name,
                question=asked if isinstance(asked, str) else _text(asked),
                yes_means=yes,
                no_means=no,
            )
            requests.append(
                Request(
                    messages=list(pair.messages),
                    parse=read_message,
                    blank=Reading(),
                    key=pair.key,
                    run_name=f"tag_question {name}",
                    tags=list(JUDGE_TAGS),
                    metadata={"tag_question": name},
                )
            )
        return runner, requests, config.get("callbacks")

    def _response(self, questions: dict[str, Question], readings: list[Reading]) -> ClassifierResponse:
        failed = [(name, r) for name, r in zip(questions, readings, strict=True) if r.error is not None]
        if failed:
            name, reading = failed[0]
            raise ProviderError(
                f"{len(failed)} of {len(questions)} questions got no verdict; first: {name!r}: {reading.error}"
            )
        answers = noul_answers(
            {
                name: r.p_yes if r.p_yes is not None else float(bool(r.word))
                for name, r in zip(questions, readings, strict=True)
            }
        )
        usage = {
            "input_tokens": sum(r.prompt_tokens for r in readings),
            "output_tokens": sum(r.completion_tokens for r in readings),
        }
        return ClassifierResponse(model=self.model, answers=answers, usage=usage)  # type: ignore[arg-type]


def _text(value: Any) -> str:
    """A question's instructions or criterion as text (JSON content as compact JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
