"""Deterministic stand-ins for tests, examples and offline dry runs.

:class:`FakeChatModel` answers from the prompt text through a function you
give it, so its replies do not depend on call order and stay correct under
batching and concurrency. :func:`fake_judge` builds one that says YES to a set
of rule ids. :class:`HashingEmbeddings` is a deterministic bag-of-words
embedding, good enough for in-memory Chroma in tests.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr
from typing_extensions import override

from langchain_tag.judging.prompts import NEGATION_OPENINGS

if TYPE_CHECKING:
    from langchain_tag.judging.verdict_cache import VerdictCache
    from langchain_tag.scale.batch_api.mapping import BatchMapping

__all__ = [
    "FakeChatModel",
    "HashingEmbeddings",
    "asks_negation",
    "batch_results_from_cache",
    "batch_results_line",
    "fake_extraction_reply",
    "fake_extractor",
    "fake_judge",
    "judged_rule_id",
    "prompt_text",
    "yes_no_logprobs",
]

Reply = str | tuple[str, float] | AIMessage | BaseException


def prompt_text(messages: Iterable[BaseMessage | Mapping[str, Any]]) -> str:
    """Join the text of a prompt's messages (LangChain messages or OpenAI-style dicts), one per paragraph."""
    return "\n\n".join(str(m["content"] if isinstance(m, Mapping) else m.content) for m in messages)


class FakeChatModel(BaseChatModel):
    """A chat model whose reply is a function of the prompt text.

    Args:
        respond: Maps the joined prompt text to a reply string, a
            ``(reply, p_yes)`` pair (used for logprobs), an ``AIMessage`` sent
            as it is (to give any response metadata), or an exception to raise.
        delay: Seconds each call takes (to exercise concurrency).
        with_logprobs: Attach OpenAI-style first-token logprobs for YES/NO replies.

    Attributes:
        calls: Number of calls made so far.
        max_in_flight: Highest number of calls running at the same time.
        prompts: Every prompt text received, in arrival order.
    """

    respond: Callable[[str], Reply]
    delay: float = 0.0
    with_logprobs: bool = False

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _in_flight: int = PrivateAttr(default=0)
    _max_in_flight: int = PrivateAttr(default=0)
    _prompts: list[str] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "langchain-tag-fake"

    @property
    def calls(self) -> int:
        """Number of calls made so far."""
        return len(self._prompts)

    @property
    def max_in_flight(self) -> int:
        """Peak number of concurrent calls."""
        return self._max_in_flight

    @property
    def prompts(self) -> list[str]:
        """Prompt texts received."""
        return list(self._prompts)

    def _enter(self, text: str) -> None:
        with self._lock:
            self._prompts.append(text)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _result(self, text: str) -> ChatResult:
        reply = self.respond(text)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, AIMessage):
            return ChatResult(generations=[ChatGeneration(message=reply)])
        p_yes: float | None = None
        if isinstance(reply, tuple):
            reply, p_yes = reply
        metadata: dict[str, Any] = {}
        word = reply.strip().upper()
        if self.with_logprobs and word in {"YES", "NO"}:
            p = p_yes if p_yes is not None else (0.9 if word == "YES" else 0.1)
            metadata["logprobs"] = yes_no_logprobs(word, min(max(p, 1e-6), 1 - 1e-6))
        usage = {
            "input_tokens": len(text.split()),
            "output_tokens": max(1, len(reply.split())),
            "total_tokens": len(text.split()) + max(1, len(reply.split())),
        }
        message = AIMessage(content=reply, response_metadata=metadata, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = prompt_text(messages)
        self._enter(text)
        try:
            if self.delay:
                time.sleep(self.delay)
            return self._result(text)
        finally:
            self._leave()

    @override
    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = prompt_text(messages)
        self._enter(text)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return self._result(text)
        finally:
            self._leave()


_RULE_ID_PATTERNS = (
    re.compile(r'^\(rule (\S+), "', re.MULTILINE),
    re.compile(r"^\(rule (\S+)\)$", re.MULTILINE),
    re.compile(r"^RULE:\n(\S+): ", re.MULTILINE),
    re.compile(r"^RULE:\nPassage \((\S+)\):", re.MULTILINE),
)


_QUESTION_RULE = re.compile(r"\(rule (\S+)\)")


def _question(prompt: str) -> str | None:
    """The question line of a prompt that asks a rule as a yes/no question (``QUESTION: ... (rule R1) ...``)."""
    block = prompt.rsplit("\nQUESTION: ", 1)
    return block[1].split("\n", 1)[0] if len(block) == 2 else None


def judged_rule_id(prompt: str) -> str | None:
    """The id of the rule a judge prompt asks about (in its RULE block, or its question), or ``None``."""
    block = prompt.rsplit("RULE:\n", 1)
    if len(block) != 2:
        question = _question(prompt)
        found = _QUESTION_RULE.search(question) if question is not None else None
        return found.group(1) if found else None
    for pattern in _RULE_ID_PATTERNS:
        found = pattern.search("RULE:\n" + block[1])
        if found:
            return found.group(1)
    return None


# The statement line of a judge prompt that asks about a rule's negated condition.
_NEGATED_STATEMENT = re.compile(
    "^Statement: (" + "|".join(re.escape(opening) for opening in NEGATION_OPENINGS) + ")", re.MULTILINE
)


def asks_negation(prompt: str) -> bool:
    """Whether a judge prompt asks about a rule's negated condition (the second half of a contrast)."""
    block = prompt.rsplit("RULE:\n", 1)
    if len(block) == 2:
        return bool(_NEGATED_STATEMENT.search(block[1]))
    question = _question(prompt)
    return question is not None and bool(_NEGATED_STATEMENT.match(question))


def fake_judge(yes_rule_ids: Iterable[str], **kwargs: Any) -> FakeChatModel:
    """A fake judge that says YES exactly for the given rule ids.

    It reads the rule id from the RULE block of the judge prompt (or from the
    question of a rule asked as a yes/no question, as a
    :class:`~langchain_tag.judging.chat_decision_model.ChatDecisionModel` asks it),
    so it works for any input, any call order and every judge of the package. Asked about a rule's negated condition
    (:func:`asks_negation`), it gives the opposite answer, as a consistent
    judge would.
    """
    yes = set(yes_rule_ids)

    def respond(text: str) -> Reply:
        rule_id = judged_rule_id(text)
        if rule_id is None:
            return "I cannot tell."
        return "YES" if (rule_id in yes) != asks_negation(text) else "NO"

    return FakeChatModel(respond=respond, **kwargs)


_TOKEN = re.compile(r"[a-z0-9]+")


class HashingEmbeddings(Embeddings):
    """Deterministic bag-of-words embeddings via feature hashing.

    Texts that share words get similar vectors, so similarity search behaves
    sensibly in tests, with no model and no network.

    Args:
        size: Vector dimension.
    """

    def __init__(self, size: int = 256) -> None:
        self.size = size

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.size
        for token in _TOKEN.findall(text.lower()):
            digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.size
            vector[index] += 1.0 if digest[4] % 2 == 0 else -1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    @override
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    @override
    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


_LISTING = re.compile(r"^(?:Spans|Statements to turn into rules|Rules):\n(\[.*\])\n\nReturn", re.DOTALL | re.MULTILINE)
_NORMATIVE = re.compile(r"\b(must|should|never|avoid|prefer|do not|don't|always|use)\b", re.IGNORECASE)
_NUMBERED = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def fake_extraction_reply(text: str) -> str:
    """Deterministic extraction replies keyed on the JSON each phase asks for."""
    import json

    if 'Return {"labels"' in text:
        numbered = _NUMBERED.findall(text)
        labels = {n: "requirement" if _NORMATIVE.search(s) else "background" for n, s in numbered}
        return json.dumps({"labels": labels})
    listing = _LISTING.search(text)
    items = json.loads(listing.group(1)) if listing else []
    if 'Return {"units"' in text:
        return json.dumps({"units": [{"span": s["span_id"]} for s in items]})  # every span kept whole
    if 'Return {"rules"' in text:
        rules = []
        for u in items:
            words = _TOKEN.findall(u["statement"].lower())
            topic = next((w for w in words if len(w) > 4), "general")
            rules.append(
                {
                    "id": u["id"],
                    "name": " ".join(words[:6]) or "rule",
                    "violation": f"the input goes against: {u['statement']}",
                    "action": u["statement"],
                    "tags": [topic],
                }
            )
        return json.dumps({"rules": rules})
    if 'Return {"pairs"' in text:
        pairs = []
        for i, a in enumerate(items):
            for b in items[i + 1 :]:
                if a["condition"] == b["condition"] and a["action"] == b["action"]:
                    pairs.append({"a": a["rule_id"], "b": b["rule_id"], "relation": "duplicate", "do": "merge"})
        return json.dumps({"pairs": pairs})
    return "I do not understand the request."


def fake_extractor(**kwargs: Any) -> FakeChatModel:
    """A fake extraction model: sentences with modal words become rules.

    Phase 1 labels each sentence containing "must", "should", "never", "avoid",
    "prefer", "do not", "always" or "use" a requirement, the rest background; phase 2 keeps each span whole;
    phase 3 writes a rule whose action is the sentence; phase 4 merges exact
    duplicates. Replies are a function of the prompt alone.
    """
    return FakeChatModel(respond=fake_extraction_reply, **kwargs)


def yes_no_logprobs(word: str, p: float) -> dict[str, Any]:
    """First-token logprobs of a one-word verdict with P(YES) = ``p``, in OpenAI's shape.

    Args:
        word: The reply, ``"YES"`` or ``"NO"``.
        p: P(YES), strictly between 0 and 1.
    """
    top = [{"token": "YES", "logprob": math.log(p)}, {"token": "NO", "logprob": math.log(1 - p)}]
    return {"content": [{"token": word, "logprob": math.log(p if word == "YES" else 1 - p), "top_logprobs": top}]}


def batch_results_line(
    custom_id: str,
    content: str,
    logprobs: Mapping[str, Any] | None,
    *,
    model: str,
    number: int,
    prompt_tokens: int = 0,
) -> dict[str, Any]:
    """One OpenAI Batch API output line: a 200 response whose chat completion replies ``content``.

    Args:
        custom_id: The request's ``custom_id``.
        content: The reply text.
        logprobs: The first choice's ``logprobs`` object, if any.
        model: The model named in the completion.
        number: Makes the line's ids unique.
        prompt_tokens: The prompt tokens reported.
    """
    return {
        "id": f"batch_req_{number}",
        "custom_id": custom_id,
        "response": {
            "status_code": 200,
            "request_id": f"req_{number}",
            "body": {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content, "refusal": None},
                        "logprobs": dict(logprobs) if logprobs is not None else None,
                        "finish_reason": "length",
                    }
                ],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1},
            },
        },
        "error": None,
    }


def batch_results_from_cache(mapping: BatchMapping | str | Path, cache: VerdictCache, out: str | Path) -> int:
    """A Batch API output file that answers an export with the verdicts a cache holds for it.

    For trying the import path against a real model's judgments with no
    batch provider: judge the pairs with the model (in process, any engine)
    into ``cache``, export the same job, then answer each exported request
    with the stored verdict of its key: the reply text, and for a stored
    P(YES) the first-token logprobs that give it back. Lines are written in
    reverse order, as a provider's output need not follow the input.

    Args:
        mapping: The export's :class:`~langchain_tag.scale.batch_api.mapping.BatchMapping` (or its file or directory).
        cache: The verdict cache holding the model's judgments, under the keys the export names.
        out: The output file to write.

    Returns:
        How many requests were answered; one whose key the cache lacks gets
        no line (the import reports it missing).
    """
    from langchain_tag.scale.batch_api.mapping import BatchMapping

    if not isinstance(mapping, BatchMapping):
        mapping = BatchMapping.load(mapping)
    lines = []
    for number, entry in enumerate(mapping.entries.values(), start=1):
        found = cache.get(entry.key)
        if found is None:
            continue
        logprobs = None
        if found.p_yes is not None:
            p = min(max(found.p_yes, 1e-12), 1 - 1e-12)
            logprobs = yes_no_logprobs("YES" if p >= 0.5 else "NO", p)
        model = mapping.model_identity or "batch-model"
        lines.append(batch_results_line(entry.custom_id, found.reply, logprobs, model=model, number=number))
    Path(out).write_text("".join(json.dumps(line) + "\n" for line in reversed(lines)), encoding="utf-8")
    return len(lines)
