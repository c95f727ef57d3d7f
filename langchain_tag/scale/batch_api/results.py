"""Import: OpenAI Batch API output files read back into the judge's verdict cache.

:func:`import_openai_batch` checks that the judge is the one the batch was
exported with, reads every results line, refuses a reply that does not answer
its pair's current request (another export's, or one to an input or rule
edited since), records each readable reply with
:meth:`~langchain_tag.judging.chat.ChatJudge.record` (one another model than the batch's gave is kept apart and
reported failed), and reports what failed,
was refused, conflicts or is missing in an :class:`ImportSummary`.
:class:`BatchResultsModel` is a judge model that answers only from the
verdict cache, for reading results with no live model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from typing_extensions import override

from langchain_tag.calls._recorded import RecordedReplies
from langchain_tag.calls._replies import Completion, read_completion
from langchain_tag.errors import ParseError
from langchain_tag.jsonl import JsonLineError, json_lines
from langchain_tag.scale.batch_api.ids import BatchError, split_custom_id
from langchain_tag.scale.batch_api.mapping import BatchEntry, BatchMapping, plan_requests
from langchain_tag.scale.inputs import InputItem

__all__ = [
    "CONFLICTING",
    "REFUSED_CHANGED",
    "REFUSED_GONE",
    "REFUSED_UNKNOWN",
    "BatchRequestFailure",
    "BatchResultsModel",
    "ImportSummary",
    "import_openai_batch",
]

REFUSED_CHANGED = (
    "the request it answers is not this pair's (input text, rule or judge changed since export, "
    "or another export's results)"
)
"""Why a reply is refused when its pair is known but its ``custom_id``'s request digest is not the current one."""

REFUSED_UNKNOWN = "custom_id not in the mapping (another export's results)"
"""Why a reply is refused when no pair of the mapping has its ``custom_id``."""

REFUSED_GONE = "its pair is not among the current inputs and rules"
"""Why a reply to a request of the mapping is refused when the current inputs and rules no longer ask it."""

CONFLICTING = "conflicting replies to one request: none recorded"
"""Why a request answered twice, differently, is not recorded."""


@dataclass(frozen=True)
class BatchRequestFailure:
    """A request of the batch whose verdict could not be recorded, or a results line that was refused.

    Attributes:
        custom_id: Its ``custom_id`` (empty for a results line that named none).
        error: Why: the Batch API's error, a non-200 status, an unreadable
            reply, or why the line was refused or conflicts.
        input_id: The input it judged, when the mapping names it.
        rule_id: The rule it judged, when the mapping names it.
        where: ``FILE:LINE`` of its results line (of each differing reply, for a conflict).
    """

    custom_id: str
    error: str
    input_id: str | None = None
    rule_id: str | None = None
    where: str = ""


@dataclass
class ImportSummary:
    """What :func:`import_openai_batch` recorded and what it could not.

    Attributes:
        requests: Requests in the mapping.
        recorded: Replies read and stored in the verdict cache.
        failures: Requests whose results line gave no readable verdict (and results lines that are not valid).
        missing: ``custom_id`` values of the mapping with no results line.
        unknown: ``custom_id`` values of results lines the mapping does not name (another batch's; refused too).
        refused: Results lines not recorded because they do not answer their
            pair's current request (:data:`REFUSED_CHANGED`,
            :data:`REFUSED_UNKNOWN`, :data:`REFUSED_GONE`), one per line.
        conflicts: Requests answered by results lines with different replies, none recorded, one per request.
        duplicates: Results lines repeating a reply already read (recorded once).
        prompt_tokens: Prompt tokens the provider reported over the recorded replies.
        completion_tokens: Completion tokens likewise.
    """

    requests: int = 0
    recorded: int = 0
    failures: list[BatchRequestFailure] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    refused: list[BatchRequestFailure] = field(default_factory=list)
    conflicts: list[BatchRequestFailure] = field(default_factory=list)
    duplicates: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def complete(self) -> bool:
        """Whether every request of the mapping was recorded, and no results line failed, was refused or conflicts."""
        return (
            self.recorded == self.requests
            and not self.failures
            and not self.missing
            and not self.refused
            and not self.conflicts
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return asdict(self)

    def summary(self) -> str:
        """One line: recorded, failed, missing, refused, conflicting, repeated."""
        text = f"recorded {self.recorded} of {self.requests} batch replies"
        parts = [
            f"{len(self.failures)} failed" if self.failures else "",
            f"{len(self.missing)} missing" if self.missing else "",
            f"{len(self.refused)} refused" if self.refused else "",
            f"{len(self.conflicts)} conflicting" if self.conflicts else "",
            f"{self.duplicates} repeated" if self.duplicates else "",
        ]
        parts = [p for p in parts if p]
        return text + (f" ({', '.join(parts)})" if parts else "")


def _judge_of(retriever_or_judge: Any) -> Any:
    """The pairwise judge of a retriever, or the judge itself."""
    return retriever_or_judge if hasattr(retriever_or_judge, "record") else retriever_or_judge.judge


def _check_judge(mapping: BatchMapping, judge: Any) -> None:
    """Refuse a judge whose cache keys differ from the mapping's: its verdicts would never be found."""
    if judge.settings.cache is None:
        raise BatchError("the judge has no verdict cache to record the batch replies in")
    if mapping.model_identity is not None and mapping.model_identity != judge.model_identity:
        raise BatchError(
            f"the batch was exported for model {mapping.model_identity!r} but this judge is "
            f"{judge.model_identity!r}; import with a judge of the same model "
            f"(e.g. BatchResultsModel(model_name={mapping.model_identity!r}))"
        )
    prompt = judge.prompt
    versions = {prompt.version} | ({prompt.negation.version} if prompt.negation is not None else set())
    foreign = sorted({e.prompt_version for e in mapping.entries.values()} - versions)
    if foreign:
        raise BatchError(
            f"the batch was rendered with prompt version(s) {', '.join(foreign)}; this judge's prompt "
            f"{prompt.name!r} asks {', '.join(sorted(versions))}: import with the predicate of the export"
        )
    reads = judge.settings.verdict_format
    if mapping.verdict_format is not None and mapping.verdict_format != reads:
        raise BatchError(f"the batch asked {mapping.verdict_format!r} verdicts, this judge reads {reads!r} ones")


class _PairCheck:
    """Whether a results line answers its pair's current request: its ``custom_id`` is the mapping's and current.

    A ``custom_id`` ends with the digest of the request it was exported for,
    so one of another export, or of an input or rule edited since, is not the
    current request's. Without current requests (no ``inputs=``), the
    mapping's are taken as current.
    """

    def __init__(self, mapping: BatchMapping, current: BatchMapping | None) -> None:
        self.mapping = mapping
        self.current = current if current is not None else mapping
        self._pairs: dict[int, dict[str, BatchEntry]] = {}

    def entry(self, cid: str) -> BatchEntry | None:
        """The current request of an accepted ``custom_id``."""
        return self.current.entries.get(cid)

    def refusal(self, cid: str) -> tuple[str, BatchEntry | None] | None:
        """``None`` for a line to read; else why it is refused and the pair it names, if any."""
        if cid in self.mapping.entries and cid in self.current.entries:
            return None
        now = self._pair(cid, self.current)
        if cid in self.mapping.entries:  # exported, but the current inputs and rules ask otherwise or not at all
            return (REFUSED_CHANGED if now is not None else REFUSED_GONE), now or self.mapping.entries[cid]
        exported = self._pair(cid, self.mapping)
        return (REFUSED_CHANGED if exported is not None else REFUSED_UNKNOWN), now or exported

    def _pair(self, cid: str, among: BatchMapping) -> BatchEntry | None:
        """The request of ``among`` for the pair a ``custom_id`` names, whatever its digest."""
        pairs = self._pairs.get(id(among))
        if pairs is None:
            pairs = self._pairs[id(among)] = {split_custom_id(c)[0]: e for c, e in among.entries.items()}
        return pairs.get(split_custom_id(cid)[0])


def _current_requests(
    retriever_or_judge: Any, inputs: Iterable[InputItem | str] | None, mapping: BatchMapping
) -> BatchMapping | None:
    """The requests the retriever renders now for ``inputs`` (``None`` without inputs)."""
    if inputs is None:
        return None
    if hasattr(retriever_or_judge, "record"):
        raise BatchError("checking the replies against inputs= needs the retriever (its rules), not its judge")
    return plan_requests((retriever_or_judge, inputs), model_name=mapping.model_name, skip_cached=False).mapping


def _error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        code, message = error.get("code"), error.get("message")
        return ": ".join(str(p) for p in (code, message) if p) or json.dumps(error)
    return str(error)


def _body_of(data: Mapping[str, Any]) -> Mapping[str, Any] | str:
    """A results line's response body (a chat completion), or why it has none."""
    if data.get("error"):
        return f"batch error {_error_text(data['error'])}"
    response = data.get("response")
    if not isinstance(response, Mapping):
        return "no response in the results line"
    body = response.get("body")
    status = response.get("status_code")
    if status != 200:
        detail = _error_text(body.get("error")) if isinstance(body, Mapping) and body.get("error") else ""
        return f"HTTP {status}" + (f": {detail}" if detail else "")
    if not isinstance(body, Mapping):
        return "the response has no body"
    return body


def _reply(data: Mapping[str, Any]) -> Completion | str:
    """A results line's reply (:func:`~langchain_tag.calls._replies.read_completion`), or why it has none."""
    body = _body_of(data)
    if isinstance(body, str):
        return body
    try:
        return read_completion(body)
    except ParseError as exc:
        return str(exc)


def _results_lines(paths: Iterable[str | Path]) -> Iterator[tuple[str, dict[str, Any] | str]]:
    """``(FILE:LINE, parsed line or why it is not valid)`` over every non-blank line of the results files."""
    for path in paths:
        path = Path(path)
        try:
            handle = path.open(encoding="utf-8")
        except OSError as exc:
            raise BatchError(f"{path}: cannot read batch results ({exc.strerror or exc})") from exc
        with handle:
            for number, data in json_lines(handle, str(path)):
                where = f"{path}:{number}"
                if isinstance(data, JsonLineError):
                    yield where, f"not JSON ({data.reason})"
                    continue
                if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str):
                    yield where, "not a Batch API results line (no custom_id)"
                    continue
                yield where, data


def import_openai_batch(
    results_paths: Iterable[str | Path] | str | Path,
    retriever_or_judge: Any,
    mapping: BatchMapping | str | Path,
    *,
    inputs: Iterable[InputItem | str] | None = None,
) -> ImportSummary:
    """Read OpenAI Batch API output (and error) files into the judge's verdict cache.

    Each results line is ``{"id", "custom_id", "response": {"status_code",
    "request_id", "body": <chat completion>}, "error": {"code", "message"} |
    null}``. A reply is read from ``choices[0].message.content`` and
    ``choices[0].logprobs`` and recorded with :meth:`ChatJudge.record`,
    so a later ``retriever.match(input)`` of an exported input makes no call.
    A failed request (an error line, a status other than 200, an unreadable
    reply) is reported in the summary and the others are recorded all the
    same; export the missing pairs again to retry them.

    A line is refused, and not recorded, unless it answers its pair's current
    request: its ``custom_id`` (which ends with the digest of the request it
    was exported for) must be in the mapping and, with ``inputs``, among the
    requests the retriever renders for them now. So a reply of another export
    whose inputs reuse the same ids, or to an input or rule edited since the
    export, never lands on the wrong pair. A request answered by two lines
    with different replies is a conflict: neither is recorded. The same reply
    twice is recorded once. The results files are read twice (to find the
    conflicts before recording anything).

    Args:
        results_paths: The downloaded output and error files (one path or several).
        retriever_or_judge: The retriever (or its ``judge``) that exported the batch.
        mapping: The export's :class:`~langchain_tag.scale.batch_api.mapping.BatchMapping`, its ``mapping.jsonl``,
            or the export directory.
        inputs: The inputs as they are now (with a retriever): each reply must
            answer a request the retriever renders for them. Without them,
            the mapping's requests are taken as current (as they are when the
            mapping was rebuilt from the current inputs with
            :func:`~langchain_tag.scale.batch_api.mapping.batch_mapping`).

    Returns:
        What was recorded, and what failed, was refused, conflicts or is missing.

    Raises:
        BatchError: When a results file cannot be read, the judge has no
            verdict cache, it is not the judge the batch was exported with
            (another model identity, prompt or verdict format), or ``inputs``
            come with a judge rather than a retriever.
    """
    paths = [results_paths] if isinstance(results_paths, str | Path) else list(results_paths)
    judge = _judge_of(retriever_or_judge)
    if not isinstance(mapping, BatchMapping):
        mapping = BatchMapping.load(mapping)
    _check_judge(mapping, judge)
    check = _PairCheck(mapping, _current_requests(retriever_or_judge, inputs, mapping))
    summary = ImportSummary(requests=len(mapping))
    to_record = _read_replies(paths, check, summary)
    recorded: set[str] = set()
    for where, data in _results_lines(paths) if to_record else ():
        cid = to_record.pop(where, None)
        entry = check.entry(cid) if cid is not None else None
        if entry is None or isinstance(data, str):
            continue
        error = _record(judge, entry, data, summary, asked=mapping.model_name)
        if error is None:
            recorded.add(entry.custom_id)
        else:
            summary.failures.append(BatchRequestFailure(entry.custom_id, error, entry.input_id, entry.rule_id, where))
    seen = recorded | {f.custom_id for f in (*summary.failures, *summary.refused, *summary.conflicts)}
    summary.missing = [cid for cid in mapping.entries if cid not in seen]
    return summary


def _read_replies(paths: list[str | Path], check: _PairCheck, summary: ImportSummary) -> dict[str, str]:
    """The first pass: refuse lines, find conflicts and failures; ``{FILE:LINE: custom_id}`` of replies to record."""
    replies: dict[str, dict[bytes, str]] = {}  # custom_id -> {reply fingerprint: FILE:LINE of its first line}
    errors: dict[str, BatchRequestFailure] = {}  # custom_id -> its last failed line
    for where, data in _results_lines(paths):
        if isinstance(data, str):
            summary.failures.append(BatchRequestFailure(custom_id="", error=data, where=where))
            continue
        cid = data["custom_id"]
        refused = check.refusal(cid)
        if refused is not None:
            reason, named = refused
            if cid not in check.mapping.entries:
                summary.unknown.append(cid)
            input_id, rule_id = (named.input_id, named.rule_id) if named is not None else (None, None)
            summary.refused.append(BatchRequestFailure(cid, reason, input_id, rule_id, where))
            continue
        reply = _reply(data)
        if isinstance(reply, str):
            entry = check.mapping.entries[cid]
            errors[cid] = BatchRequestFailure(cid, reply, entry.input_id, entry.rule_id, where)
            continue
        found = replies.setdefault(cid, {})
        fingerprint = reply.fingerprint()
        if fingerprint in found:
            summary.duplicates += 1
        else:
            found[fingerprint] = where
    summary.failures.extend(failure for cid, failure in errors.items() if cid not in replies)
    to_record: dict[str, str] = {}
    for cid, found in replies.items():
        if len(found) == 1:
            to_record[next(iter(found.values()))] = cid
            continue
        entry = check.mapping.entries[cid]
        where = ", ".join(found.values())
        summary.conflicts.append(BatchRequestFailure(cid, CONFLICTING, entry.input_id, entry.rule_id, where))
    return to_record


def _record(
    judge: Any, entry: BatchEntry, data: Mapping[str, Any], summary: ImportSummary, *, asked: str | None
) -> str | None:
    """Record one results line's reply; return why it could not be, or ``None``.

    A reply another model than ``asked`` (the batch's) gave is kept apart, not recorded
    (:meth:`~langchain_tag.judging.chat.ChatJudge.keep`): a failure naming that model.
    """
    reply = _reply(data)
    if isinstance(reply, str):
        return reply
    judgment = judge.record(
        entry.pair_request(),
        reply.text,
        reply.logprobs,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        answered=reply.model or None,
        asked=asked,
    )
    if judgment.error is not None:
        return str(judgment.error)
    summary.recorded += 1
    summary.prompt_tokens += reply.prompt_tokens
    summary.completion_tokens += reply.completion_tokens
    return None


# ---------------------------------------------------------------------------------------------------------------
# A stand-in judge model for reading results
# ---------------------------------------------------------------------------------------------------------------


class BatchResultsModel(RecordedReplies):
    """A judge model that only answers from the verdict cache: named as the batch's model, it never calls one.

    Give it to the retriever that exports and imports a batch, so the cache
    keys name the batch's model. A judgment that is not in the cache (its
    request failed or is missing from the results) fails with a
    :class:`~langchain_tag.scale.batch_api.ids.BatchError` naming it, and is reported as a failed judgment.

    Attributes:
        model_name: The batch's model, e.g. ``"gpt-4o-mini"`` (its identity in cache keys).
    """

    error_type: ClassVar[type[Exception]] = BatchError

    @property
    def _llm_type(self) -> str:
        return "langchain-tag-batch-results"

    @override
    def missing_message(self) -> str:
        return (
            f"no reply from batch model {self.model_name!r} for this pair: its request failed or is missing "
            "from the imported results (export it again)"
        )
