"""The chat judge: one chat request per (input, rule) pair, a one-token verdict read from logprobs.

:class:`ChatJudge` renders each pair once as OpenAI-style message dicts
(:func:`~langchain_tag.judging._pairs.render_pairs`, input first so a prefix
cache holds), sends them as they are through the package's one call runner
(:class:`~langchain_tag.calls._runner.CallRunner`: bounded concurrency, retries,
the verdict cache, token accounting), and reads each reply once
(:func:`~langchain_tag.judging._read.read_message`) into a
:class:`~langchain_tag.judging.results.Reading`. Scoring and failure
reports are the :class:`~langchain_tag.judging.judge.Judge`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableSequence, RunnableWithFallbacks
from langchain_core.runnables.base import RunnableBindingBase

from langchain_tag.calls._runner import CallRunner, ChatRunnable, Request
from langchain_tag.errors import ParseError
from langchain_tag.judging._admission import admitted_key, asked_model, foreign_reply, same_model
from langchain_tag.judging._pairs import PairRequest, combine_halves, render_pairs, render_questions
from langchain_tag.judging._read import read_message, read_reply
from langchain_tag.judging.judge import Batch, Judge
from langchain_tag.judging.prompts import QUESTION_PROMPT_VERSION, VerdictFormat
from langchain_tag.judging.results import Reading
from langchain_tag.judging.verdict_cache import VerdictStore
from langchain_tag.rules import Rule

__all__ = ["JUDGE_TAGS", "ChatJudge", "ChatRunnable", "chat_judge", "configure_judge", "never_streaming", "same_model"]

JUDGE_TAGS = ("tag_judge", "nostream")
"""Tags of every judge run: ``nostream`` keeps its tokens out of LangGraph's ``stream_mode="messages"``."""

TOP_LOGPROBS = 5
"""``top_logprobs`` requested from a judge that takes it and was given without logprobs configured."""


def configure_judge(llm: ChatRunnable, verdict_format: VerdictFormat = "token") -> ChatRunnable:
    """The judge as it is called: never streaming, and a bare model that takes logprobs gets them and a one-token cap.

    A chat model with ``logprobs``, ``top_logprobs`` and ``max_tokens``
    fields (``ChatOpenAI`` and other OpenAI-compatible clients), none of them
    set, is bound with ``logprobs=True, top_logprobs=5`` and, for one-word
    verdicts, ``max_tokens=1``. Anything else (a model configured by you, a
    ``bind``/``with_retry``/``with_fallbacks`` runnable, a provider without
    logprobs) is called as given, but for streaming (:func:`never_streaming`).
    """
    fields = getattr(type(llm), "model_fields", {})
    configured = not {"logprobs", "top_logprobs", "max_tokens"} <= set(fields) or any(
        getattr(llm, name, None) is not None for name in ("logprobs", "top_logprobs", "max_tokens")
    )  # configured by its owner (e.g. logprobs left off for a server that refuses them), or without those fields
    if configured:
        return never_streaming(llm)
    options: dict[str, Any] = {"logprobs": True, "top_logprobs": TOP_LOGPROBS, "stream": False}
    if verdict_format == "token":
        options["max_tokens"] = 1
    return llm.bind(**options)


def never_streaming(runnable: ChatRunnable) -> ChatRunnable:
    """``runnable`` with its chat models' calls never streamed, whatever the caller streams.

    Under ``astream_events`` or LangGraph's ``stream_mode="messages"`` a chat model streams its reply when it can,
    ``nostream`` tag or not: an endpoint that cannot stream then fails every call, and one that can sends each
    verdict's tokens to the caller. ``stream=False`` is bound where the call's options reach a chat model: on a
    chat model, a ``bind``/``with_retry``/``with_config`` of one, fallbacks made of those, and the first step of
    a sequence that starts with one (``llm | parser``). Anything else is called as given.
    """
    if _takes_call_options(runnable):
        return runnable.bind(stream=False)
    if isinstance(runnable, RunnableSequence) and _takes_call_options(runnable.first):
        return RunnableSequence(runnable.first.bind(stream=False), *runnable.middle, runnable.last)
    return runnable


def _takes_call_options(runnable: Runnable[Any, Any]) -> bool:
    """Whether call options given to ``runnable`` reach nothing but chat models."""
    if isinstance(runnable, BaseChatModel):
        return True
    if isinstance(runnable, RunnableBindingBase):
        return _takes_call_options(runnable.bound)
    if isinstance(runnable, RunnableWithFallbacks):
        return all(_takes_call_options(r) for r in runnable.runnables)
    return False


class ChatJudge(Judge):
    """Judge every (input, rule) pair independently with one chat model.

    Takes the :class:`~langchain_tag.judging.judge.Judge` settings; ``llm`` is a chat model or a runnable built
    from one, and a bare OpenAI-compatible model gets logprobs and a one-token cap bound (:func:`configure_judge`).

    Args:
        llm: The chat model.
        predicate: The judge prompt or its registry name.
        questions: Ask each rule as a yes/no question (:func:`~langchain_tag.judging._pairs.render_questions`),
            as a :class:`~langchain_tag.judging.chat_decision_model.ChatDecisionModel` asks a ``Noul``: the judge a
            retriever makes of one.
        **settings: The other :class:`~langchain_tag.judging.judge.Judge` settings.
    """

    def __init__(
        self, llm: ChatRunnable, predicate: Any = "applicability", *, questions: bool = False, **settings: Any
    ) -> None:
        self.questions = questions
        super().__init__(llm, predicate, **settings)
        self._asked = asked_model(llm)
        """The model name the judge asks for (a reply another model gave is kept apart: :meth:`_answered_key`)."""
        self.runner = CallRunner(
            configure_judge(llm, self.settings.verdict_format),
            model=llm,
            limits=self.settings.limits,
            gate=self.state.gate(self.settings.limits),
            store=VerdictStore(self.settings.cache) if self.settings.cache is not None else None,
        )

    @property
    def scoring_version(self) -> str:
        """The prompt's scoring version; asked as questions, with the question format's version too.

        A rule prompt's calibration does not apply to the question form.
        """
        version = self.prompt.scoring_version
        return f"{version}+{QUESTION_PROMPT_VERSION}" if self.questions else version

    def messages(self, query: str, rule: Rule) -> list[dict[str, str]]:
        """The messages sent for one pair (OpenAI style)."""
        return self.prompt.messages(query, rule, self.settings.verdict_format)

    def requests(self, query: str, rules: Sequence[Rule]) -> list[PairRequest]:
        """The requests that judge ``query`` against ``rules`` (:func:`~langchain_tag.judging._pairs.render_pairs`).

        Plain data for another engine (a Ray Data pipeline, a provider batch
        API); feed each reply back with :meth:`record`.
        """
        if self.questions:
            return render_questions(self.prompt, query, rules, model=self.model_identity)
        return render_pairs(
            self.prompt, query, rules, model=self.model_identity, verdict_format=self.settings.verdict_format
        )

    def record(
        self,
        request: PairRequest,
        text: str,
        logprobs: Mapping[str, Any] | None = None,
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        answered: str | None = None,
        asked: str | None = None,
    ) -> Reading:
        """Read a reply another engine got for ``request`` (the one reader) and keep it in the verdict cache.

        Returns the reading of that request (one half of the pair, for a contrast prompt); a reply that cannot
        be read gives a reading with ``error`` set and is not cached. A later :meth:`judge` of the same pair
        then makes no call. ``answered`` and ``asked`` are as for :meth:`keep`.
        """
        try:
            reading = read_reply(text, logprobs)
        except ParseError as exc:
            reading = Reading(reply=text, error=str(exc))
        reading = replace(reading, attempts=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        if reading.error is not None:
            return reading
        return self.keep(request, reading, answered=answered, asked=asked)

    def keep(
        self, request: PairRequest, reading: Reading, *, answered: str | None = None, asked: str | None = None
    ) -> Reading:
        """Keep a reading another engine got for ``request`` in the verdict cache, where it may be kept.

        Under the request's key, or, when the reply names another model than the one asked for, apart under that
        model's (:func:`~langchain_tag.judging._admission.admitted_key`, warned of once): the reading returned
        then has ``error`` set, saying so.

        Args:
            request: The request answered.
            reading: Its reading.
            answered: The model the reply names (``None``: it names none).
            asked: The model the request asked for; ``None``: the judge model's.
        """
        asked = asked or self._asked
        key = admitted_key(self, request.key, answered, asked=asked)
        if self.settings.cache is not None:
            VerdictStore(self.settings.cache).put(key, reading)
        foreign = foreign_reply(asked, answered)
        return reading if foreign is None else replace(reading, error=foreign)

    def _call(self, batches: Sequence[Batch], callbacks: Callbacks) -> list[list[Reading]]:
        requests, sent = self._plan_requests(batches)
        readings = dict(zip(sent, self.runner.run(list(sent.values()), callbacks=callbacks), strict=True))
        found = [[readings[r.key] for r in part] for part in requests]
        return [combine_halves(*pair) for pair in zip(requests, found, strict=True)] if self.prompt.negation else found

    async def _acall(self, batches: Sequence[Batch], callbacks: Callbacks) -> list[list[Reading]]:
        requests, sent = self._plan_requests(batches)
        readings = dict(zip(sent, await self.runner.arun(list(sent.values()), callbacks=callbacks), strict=True))
        found = [[readings[r.key] for r in part] for part in requests]
        return [combine_halves(*pair) for pair in zip(requests, found, strict=True)] if self.prompt.negation else found

    def _answered_key(self, key: str, asked: str, reply: Any) -> str:
        """The key a reply is kept under (:func:`~langchain_tag.judging._admission.admitted_key`).

        A reply names the model that gave it (``response_metadata["model_name"]``).
        """
        answered = reply.response_metadata.get("model_name") if isinstance(reply, AIMessage) else None
        return admitted_key(self, key, answered, asked=asked)

    def _plan_requests(self, batches: Sequence[Batch]) -> tuple[list[list[PairRequest]], dict[str, Request[Reading]]]:
        """Each batch's pair requests, and the runner's requests by key.

        A repeat (a reference input equal to the query) is sent once.
        """
        prompt, model, fmt = self.prompt, self.model_identity, self.settings.verdict_format
        requests = [
            render_questions(prompt, text, rules, model=model)
            if self.questions
            else render_pairs(prompt, text, rules, model=model, verdict_format=fmt)
            for text, rules in batches
        ]
        cached = self.settings.cache is not None
        asked = self._asked if cached else None
        sent = {
            pair.key: Request(
                messages=list(pair.messages),
                parse=read_message,
                blank=Reading(),
                key=pair.key if cached else None,
                key_of=partial(self._answered_key, pair.key, asked) if asked is not None else None,
                run_name=f"tag_judge {pair.rule_id}",
                tags=list(JUDGE_TAGS),
                metadata={"tag_rule_id": pair.rule_id, "tag_predicate": self.prompt.name},
            )
            for part in requests
            for pair in part
        }
        return requests, sent


def chat_judge(judge: Any, engine: str, error: type[Exception] = ValueError) -> ChatJudge:
    """``judge`` when it sends chat requests, as an engine that only sends those needs; refused otherwise.

    Args:
        judge: A retriever's judge.
        engine: What needs chat requests, for the message (e.g. ``"judge_with_ray"``).
        error: The error class to raise.

    Raises:
        Exception: ``error``, when ``judge`` is a decision-model judge (it judges each input in one request, in
            process).
    """
    if isinstance(judge, ChatJudge):
        return judge
    raise error(
        f"{engine} sends chat requests; a decision model judges each input in one request in process "
        "(match_corpus, or langchain-tag match --inputs --decisions)"
    )
