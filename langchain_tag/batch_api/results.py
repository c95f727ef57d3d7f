"""Provider batch APIs: judgments written out as OpenAI Batch API input files, and their results read back.

The OpenAI Batch API runs chat-completion requests offline, within 24 hours,
at about half the price. The flow:

1. :func:`export_openai_batch` renders every (input, rule) pair, plus the
   calibration's reference judgments (once), into Batch API input files
   (``batch-0001.jsonl``, ...; at most 50,000 requests and 200 MB each) and
   writes ``mapping.jsonl`` beside them, which ties each ``custom_id`` back
   to its pair and verdict-cache key. Pairs already in the verdict cache,
   and requests asked twice (the same input text twice), are left out.
2. You upload each file, create the batches, and download their output (and
   error) files.
3. :func:`import_openai_batch` reads those files and records each reply in
   the judge's verdict cache (:meth:`PairwiseJudge.record`), reporting the
   requests that failed without losing the others.
4. ``retriever.match(input)`` (or :func:`~langchain_tag.bulk.match_corpus`)
   then makes no call and gives the calibrated verdicts.

The judge that exports and the one that imports must be the same: model
identity, prompt and calibration (its reference inputs). To read results
with no live model, give the retriever a :class:`BatchResultsModel` named as
the batch's model: a pair missing from the results then fails with a clear
error instead of being sent anywhere.

Example:
    .. code-block:: python

        retriever = ApplicabilityRetriever(
            llm=BatchResultsModel(model_name="gpt-4o-mini"), rules=rules, cache=SQLiteVerdictCache("v.sqlite")
        )
        files = export_openai_batch((retriever, read_inputs("inputs.jsonl")), "batch", model_name="gpt-4o-mini")
        # ... run the batches, download the output files ...
        summary = import_openai_batch(["out-1.jsonl"], retriever, "batch/mapping.jsonl")
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from typing_extensions import override

from langchain_tag.bulk import InputItem, as_input_items, retriever_rules
from langchain_tag.errors import TagError
from langchain_tag.pairs import PairRequest

__all__ = [
    "BATCH_URL",
    "CUSTOM_ID_MAX_CHARS",
    "MAPPING_FILE",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "REFERENCE_PREFIX",
    "BatchEntry",
    "BatchError",
    "BatchMapping",
    "BatchResultsModel",
    "ImportSummary",
    "RequestFailure",
    "batch_mapping",
    "custom_id",
    "export_openai_batch",
    "import_openai_batch",
    "parse_custom_id",
]

BATCH_URL = "/v1/chat/completions"
"""The endpoint every exported request targets."""

MAX_REQUESTS = 50_000
"""Most requests in one OpenAI Batch API input file."""

MAX_BYTES = 200 * 1024 * 1024
"""Largest OpenAI Batch API input file, in bytes."""

CUSTOM_ID_MAX_CHARS = 64
"""Longest ``custom_id`` written: the tightest limit among OpenAI-compatible batch APIs."""

MAPPING_FILE = "mapping.jsonl"
"""The file, beside the batch input files, that ties each ``custom_id`` to its pair."""

REFERENCE_PREFIX = "@ref-"
"""The input id of a calibration reference input is this and its 1-based number (``@ref-1``, ...)."""

MAPPING_FORMAT = "langchain-tag/openai-batch-mapping"
MAPPING_VERSION = 1

_ID_PART = re.compile(r"[A-Za-z0-9._:@-]+")
_NEGATED = "neg"
_HASHED = "h-"
_BATCH_FILE = "batch-{:04d}.jsonl"


class BatchError(TagError, ValueError):
    """A batch export or import cannot go on: the message says what is wrong and, for a file, where."""


# ---------------------------------------------------------------------------------------------------------------
# custom_id
# ---------------------------------------------------------------------------------------------------------------


def custom_id(input_id: str, request: PairRequest) -> str:
    """The ``custom_id`` of one request: ``INPUT/RULE/PROMPT_VERSION`` (``/neg`` after a negated half).

    When that would be longer than :data:`CUSTOM_ID_MAX_CHARS`, or a part
    holds a character outside ``A-Z a-z 0-9 . _ : @ -``, it is ``h-`` and 40
    hex digits of its SHA-256 instead; the mapping (:class:`BatchMapping`)
    names the pair either way.
    """
    parts = [input_id, request.rule_id, request.prompt_version] + ([_NEGATED] if request.negated else [])
    readable = "/".join(parts)
    if len(readable) <= CUSTOM_ID_MAX_CHARS and all(_ID_PART.fullmatch(p) for p in parts):
        return readable
    return _HASHED + hashlib.sha256(readable.encode("utf-8")).hexdigest()[:40]


def parse_custom_id(value: str) -> tuple[str, str, str, bool] | None:
    """``(input_id, rule_id, prompt_version, negated)`` of a readable ``custom_id``; ``None`` for a hashed one."""
    parts = value.split("/")
    if len(parts) == 4 and parts[3] == _NEGATED:
        return parts[0], parts[1], parts[2], True
    if len(parts) == 3:
        return parts[0], parts[1], parts[2], False
    return None


# ---------------------------------------------------------------------------------------------------------------
# The mapping
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchEntry:
    """One exported request: which pair it judges and where its verdict goes.

    Attributes:
        custom_id: Its ``custom_id`` in the batch files.
        input_id: The input's id (``@ref-N`` for the calibration's N-th reference input).
        rule_id: The rule judged.
        prompt_version: The version of the prompt that rendered it.
        negated: Whether it is the negated half of a contrast prompt.
        key: Its verdict-cache key.
        file: The batch input file it was written to (empty when not exported).
    """

    custom_id: str
    input_id: str
    rule_id: str
    prompt_version: str
    negated: bool
    key: str
    file: str = ""

    @property
    def reference(self) -> bool:
        """Whether it judges a calibration reference input."""
        return self.input_id.startswith(REFERENCE_PREFIX)

    def pair_request(self) -> PairRequest:
        """The request as :meth:`PairwiseJudge.record` takes it (without messages: reading a reply needs none)."""
        return PairRequest(
            key=self.key,
            rule_id=self.rule_id,
            prompt_version=self.prompt_version,
            negated=self.negated,
            messages=(),
        )


@dataclass
class BatchMapping:
    """Every exported ``custom_id`` and its pair, with the judge that rendered them.

    Attributes:
        entries: By ``custom_id``, in export order.
        model_name: The model named in the batch requests.
        model_identity: The judge model's identity the cache keys were made with.
        predicate: The judge prompt's name.
        prompt_versions: The prompt versions of the requests (two with a contrast prompt).
        verdict_format: ``"token"`` or ``"json"``.
        files: The batch input files written, in order.
    """

    entries: dict[str, BatchEntry] = field(default_factory=dict)
    model_name: str | None = None
    model_identity: str | None = None
    predicate: str | None = None
    prompt_versions: tuple[str, ...] = ()
    verdict_format: str | None = None
    files: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.entries)

    def header(self) -> dict[str, Any]:
        """The first line of the mapping file."""
        return {
            "format": MAPPING_FORMAT,
            "version": MAPPING_VERSION,
            "model_name": self.model_name,
            "model_identity": self.model_identity,
            "predicate": self.predicate,
            "prompt_versions": list(self.prompt_versions),
            "verdict_format": self.verdict_format,
            "files": self.files,
            "requests": len(self.entries),
        }

    def save(self, path: str | Path) -> Path:
        """Write the mapping as JSONL: a header line, then one line per request."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="\n") as handle:
            handle.write(json.dumps(self.header(), ensure_ascii=False) + "\n")
            for entry in self.entries.values():
                handle.write(json.dumps(asdict(entry), ensure_ascii=False) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> BatchMapping:
        """Read a mapping written by :meth:`save` (a directory means its ``mapping.jsonl``).

        Raises:
            BatchError: When the file is missing or not a mapping (naming the line at fault).
        """
        path = Path(path)
        if path.is_dir():
            path = path / MAPPING_FILE
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
        except OSError as exc:
            raise BatchError(f"{path}: cannot read the batch mapping ({exc.strerror or exc})") from exc
        header = _json_line(lines[0] if lines else "", path, 1)
        if header.get("format") != MAPPING_FORMAT:
            raise BatchError(f"{path}:1: not a batch mapping written by export_openai_batch")
        mapping = cls(
            model_name=header.get("model_name"),
            model_identity=header.get("model_identity"),
            predicate=header.get("predicate"),
            prompt_versions=tuple(header.get("prompt_versions") or ()),
            verdict_format=header.get("verdict_format"),
            files=list(header.get("files") or []),
        )
        for number, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            data = _json_line(line, path, number)
            try:
                entry = BatchEntry(**data)
            except TypeError as exc:
                raise BatchError(f"{path}:{number}: not a mapping entry ({exc})") from exc
            mapping.entries[entry.custom_id] = entry
        return mapping


def _json_line(line: str, path: Path, number: int) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BatchError(f"{path}:{number}: not JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise BatchError(f"{path}:{number}: expected a JSON object")
    return data


# ---------------------------------------------------------------------------------------------------------------
# Planning: which requests, under which custom_id
# ---------------------------------------------------------------------------------------------------------------

BatchSource = Mapping[str, Sequence[PairRequest]] | tuple[Any, Iterable[InputItem | str]]
"""What to export: ``{input_id: requests}``, or ``(retriever, inputs)``."""


@dataclass
class _Plan:
    """The requests to export, each once, with the mapping that names them."""

    requests: list[tuple[BatchEntry, PairRequest]]
    mapping: BatchMapping


def _requests_by_input(source: BatchSource) -> tuple[dict[str, Sequence[PairRequest]], Any]:
    """Requests keyed by input id (reference inputs first, as ``@ref-N``), and the judge if one was given."""
    if isinstance(source, tuple):
        retriever, inputs = source
        return _retriever_requests(retriever, as_input_items(inputs)), retriever.judge
    if not isinstance(source, Mapping):
        raise TypeError("export needs {input_id: [PairRequest, ...]} or a (retriever, inputs) pair")
    return dict(source), None


def _retriever_requests(retriever: Any, items: Sequence[InputItem]) -> dict[str, Sequence[PairRequest]]:
    rules = retriever_rules(retriever)
    if not rules:
        raise BatchError("batch export needs the retriever's rules= (it cannot draw candidates from a vector store)")
    judge = retriever.judge
    found: dict[str, Sequence[PairRequest]] = {}
    references = judge.reference_requests(rules)
    per_input = len(judge.requests("", rules))
    for start in range(0, len(references), per_input):
        found[f"{REFERENCE_PREFIX}{start // per_input + 1}"] = references[start : start + per_input]
    for item in items:
        if item.id.startswith(REFERENCE_PREFIX):
            raise BatchError(f"input id {item.id!r}: ids starting with {REFERENCE_PREFIX!r} name reference inputs")
        found[item.id] = judge.requests(item.text, rules)
    return found


def _plan(source: BatchSource, *, model_name: str | None, skip_cached: bool) -> _Plan:
    """Every request once (by verdict-cache key), in input order, each under a unique ``custom_id``."""
    by_input, judge = _requests_by_input(source)
    cache = getattr(judge, "cache", None) if skip_cached else None
    mapping = _empty_mapping(judge, model_name)
    versions: dict[str, None] = dict.fromkeys(mapping.prompt_versions)
    seen_keys: set[str] = set()
    requests: list[tuple[BatchEntry, PairRequest]] = []
    for input_id, pairs in by_input.items():
        for request in pairs:
            if request.key in seen_keys:
                continue
            seen_keys.add(request.key)
            if cache is not None and cache.get(request.key) is not None:
                continue
            entry = BatchEntry(
                custom_id=custom_id(input_id, request),
                input_id=input_id,
                rule_id=request.rule_id,
                prompt_version=request.prompt_version,
                negated=request.negated,
                key=request.key,
            )
            if entry.custom_id in mapping.entries:
                raise BatchError(
                    f"custom_id {entry.custom_id!r} would name two requests (inputs {input_id!r} and "
                    f"{mapping.entries[entry.custom_id].input_id!r}); give the inputs distinct ids"
                )
            mapping.entries[entry.custom_id] = entry
            versions.setdefault(request.prompt_version)
            requests.append((entry, request))
    mapping.prompt_versions = tuple(versions)
    return _Plan(requests, mapping)


def _empty_mapping(judge: Any, model_name: str | None) -> BatchMapping:
    if judge is None:
        return BatchMapping(model_name=model_name)
    prompt = judge.prompt
    versions = (prompt.version,) + ((prompt.negation.version,) if prompt.negation is not None else ())
    return BatchMapping(
        model_name=model_name,
        model_identity=judge.model_identity,
        predicate=prompt.name,
        prompt_versions=versions,
        verdict_format=judge.verdict_format,
    )


def batch_mapping(source: BatchSource, *, model_name: str | None = None) -> BatchMapping:
    """The mapping :func:`export_openai_batch` writes for ``source``, with every request (cached ones too).

    The ``custom_id`` of a request depends only on its input id, rule,
    prompt version and half, so this rebuilds a lost ``mapping.jsonl`` from
    the same retriever and inputs.
    """
    return _plan(source, model_name=model_name, skip_cached=False).mapping


# ---------------------------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------------------------


def _body(request: PairRequest, model_name: str, verdict_format: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model_name,
        "messages": [{"role": m["role"], "content": m["content"]} for m in request.messages],
        "max_tokens": 1,
        "logprobs": True,
        "top_logprobs": 5,
        "temperature": 0,
    }
    if verdict_format != "token":
        del body["max_tokens"]  # a JSON verdict takes more than one token
    for name, value in extra.items():
        if value is None:
            body.pop(name, None)
        else:
            body[name] = value
    return body


def _line(entry: BatchEntry, body: Mapping[str, Any]) -> bytes:
    record = {"custom_id": entry.custom_id, "method": "POST", "url": BATCH_URL, "body": body}
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def _split(
    lines: Iterable[tuple[BatchEntry, bytes]], max_requests: int, max_bytes: int
) -> Iterator[list[tuple[BatchEntry, bytes]]]:
    """Group lines into files of at most ``max_requests`` lines and ``max_bytes`` bytes, in order."""
    group: list[tuple[BatchEntry, bytes]] = []
    size = 0
    for entry, line in lines:
        if len(line) > max_bytes:
            raise BatchError(
                f"request {entry.custom_id!r} alone is {len(line)} bytes, over the {max_bytes} bytes a file may hold"
            )
        if group and (len(group) >= max_requests or size + len(line) > max_bytes):
            yield group
            group, size = [], 0
        group.append((entry, line))
        size += len(line)
    if group:
        yield group


def _check_out_dir(out_dir: Path) -> None:
    """Refuse a directory that already holds an export, so no stale batch file is mistaken for a new one."""
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise BatchError(f"{out_dir}: not a directory")
    stale = sorted(p.name for p in out_dir.glob("batch-*.jsonl")) + (
        [MAPPING_FILE] if (out_dir / MAPPING_FILE).exists() else []
    )
    if stale:
        raise BatchError(f"{out_dir} already holds an export ({', '.join(stale[:3])}); choose an empty directory")


def export_openai_batch(
    source: BatchSource,
    out_dir: str | Path,
    *,
    model_name: str,
    max_requests: int = MAX_REQUESTS,
    max_bytes: int = MAX_BYTES,
    skip_cached: bool = True,
    extra_body: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write OpenAI Batch API input files for every judgment of ``source``, and their mapping.

    Each line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions",
    "body": {"model", "messages", "max_tokens": 1, "logprobs": true,
    "top_logprobs": 5, "temperature": 0}}``. Requests go input-major (a
    calibration's reference inputs first), each verdict-cache key once, and
    are split into ``batch-0001.jsonl``, ``batch-0002.jsonl``, ... at
    ``max_requests`` requests or ``max_bytes`` bytes. ``mapping.jsonl``
    (:class:`BatchMapping`) is written beside them; keep it for
    :func:`import_openai_batch`.

    Args:
        source: ``(retriever, inputs)`` (an
            :class:`~langchain_tag.retrievers.ApplicabilityRetriever` with
            ``rules=``, and :class:`~langchain_tag.bulk.InputItem` objects or
            strings), or ``{input_id: [PairRequest, ...]}`` rendered by a judge
            (:meth:`PairwiseJudge.requests`).
        out_dir: The directory to write to (created if missing; it must not
            hold an earlier export).
        model_name: The model named in every request. For the imported
            verdicts to serve later judgments, the retriever's model identity
            should be this name (:class:`BatchResultsModel` is).
        max_requests: Most requests per file (the Batch API takes 50,000).
        max_bytes: Largest file in bytes (the Batch API takes 200 MB).
        skip_cached: With ``(retriever, inputs)``, leave out pairs already in
            the retriever's verdict cache.
        extra_body: Fields to add to every body, or to drop with ``None``
            (e.g. ``{"max_tokens": None, "max_completion_tokens": 1}``).

    Returns:
        The batch input files written, in order (none when there is nothing to judge).

    Raises:
        BatchError: When ``out_dir`` already holds an export, two requests
            would share a ``custom_id``, or one request alone is over ``max_bytes``.
    """
    if max_requests < 1 or max_bytes < 1:
        raise ValueError("max_requests and max_bytes must be positive")
    out_dir = Path(out_dir)
    _check_out_dir(out_dir)
    plan = _plan(source, model_name=model_name, skip_cached=skip_cached)
    verdict_format = plan.mapping.verdict_format or "token"
    extra = dict(extra_body or {})
    lines = (
        (entry, _line(entry, _body(request, model_name, verdict_format, extra))) for entry, request in plan.requests
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for number, group in enumerate(_split(lines, max_requests, max_bytes), start=1):
        path = out_dir / _BATCH_FILE.format(number)
        with path.open("wb") as handle:
            for _, line in group:
                handle.write(line)
        for entry, _ in group:
            plan.mapping.entries[entry.custom_id] = BatchEntry(**{**asdict(entry), "file": path.name})
        paths.append(path)
    plan.mapping.files = [p.name for p in paths]
    plan.mapping.save(out_dir / MAPPING_FILE)
    return paths


# ---------------------------------------------------------------------------------------------------------------
# Import
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestFailure:
    """A request of the batch whose verdict could not be recorded.

    Attributes:
        custom_id: Its ``custom_id`` (empty for a results line that named none).
        error: Why: the Batch API's error, a non-200 status, or an unreadable reply.
        input_id: The input it judged, when the mapping names it.
        rule_id: The rule it judged, when the mapping names it.
        where: ``FILE:LINE`` of its results line.
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
        unknown: ``custom_id`` values of results lines the mapping does not name (another batch's).
        duplicates: Results lines for a request already recorded (ignored).
        prompt_tokens: Prompt tokens the provider reported over the recorded replies.
        completion_tokens: Completion tokens likewise.
    """

    requests: int = 0
    recorded: int = 0
    failures: list[RequestFailure] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    duplicates: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def complete(self) -> bool:
        """Whether every request of the mapping was recorded."""
        return self.recorded == self.requests and not self.failures and not self.missing

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return asdict(self)

    def summary(self) -> str:
        """One line: recorded, failed, missing, unknown."""
        text = f"recorded {self.recorded} of {self.requests} batch replies"
        parts = [
            f"{len(self.failures)} failed" if self.failures else "",
            f"{len(self.missing)} missing" if self.missing else "",
            f"{len(self.unknown)} not in the mapping" if self.unknown else "",
            f"{self.duplicates} repeated" if self.duplicates else "",
        ]
        parts = [p for p in parts if p]
        return text + (f" ({', '.join(parts)})" if parts else "")


@dataclass
class _Reply:
    text: str
    logprobs: Mapping[str, Any] | None
    prompt_tokens: int
    completion_tokens: int


def _judge_of(retriever_or_judge: Any) -> Any:
    """The pairwise judge of a retriever, or the judge itself."""
    return retriever_or_judge if hasattr(retriever_or_judge, "record") else retriever_or_judge.judge


def _check_judge(mapping: BatchMapping, judge: Any) -> None:
    """Refuse a judge whose cache keys differ from the mapping's: its verdicts would never be found."""
    if getattr(judge, "cache", None) is None:
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
    if mapping.verdict_format is not None and mapping.verdict_format != judge.verdict_format:
        raise BatchError(
            f"the batch asked {mapping.verdict_format!r} verdicts, this judge reads {judge.verdict_format!r} ones"
        )


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


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _reply(data: Mapping[str, Any]) -> _Reply | str:
    """A results line's reply (first choice's text and logprobs, token usage), or why it has none."""
    body = _body_of(data)
    if isinstance(body, str):
        return body
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return "the response has no choices"
    choice = choices[0]
    message = choice.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    logprobs = choice.get("logprobs")
    usage = body.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    return _Reply(
        text=content if isinstance(content, str) else "",
        logprobs=logprobs if isinstance(logprobs, Mapping) else None,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
    )


def _results_lines(paths: Iterable[str | Path]) -> Iterator[tuple[str, dict[str, Any] | str]]:
    """``(FILE:LINE, parsed line or why it is not valid)`` over every non-blank line of the results files."""
    for path in paths:
        path = Path(path)
        try:
            handle = path.open(encoding="utf-8")
        except OSError as exc:
            raise BatchError(f"{path}: cannot read batch results ({exc.strerror or exc})") from exc
        with handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as exc:
                    yield where, f"not JSON ({exc.msg})"
                    continue
                if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str):
                    yield where, "not a Batch API results line (no custom_id)"
                    continue
                yield where, data


def import_openai_batch(
    results_paths: Iterable[str | Path] | str | Path,
    retriever_or_judge: Any,
    mapping: BatchMapping | str | Path,
) -> ImportSummary:
    """Read OpenAI Batch API output (and error) files into the judge's verdict cache.

    Each results line is ``{"id", "custom_id", "response": {"status_code",
    "request_id", "body": <chat completion>}, "error": {"code", "message"} |
    null}``. A reply is read from ``choices[0].message.content`` and
    ``choices[0].logprobs`` and recorded with :meth:`PairwiseJudge.record`,
    so a later ``retriever.match(input)`` of an exported input makes no call.
    A failed request (an error line, a status other than 200, an unreadable
    reply) is reported in the summary and the others are recorded all the
    same; export the missing pairs again to retry them.

    Args:
        results_paths: The downloaded output and error files (one path or several).
        retriever_or_judge: The retriever (or its ``judge``) that exported the batch.
        mapping: The export's :class:`BatchMapping`, its ``mapping.jsonl``,
            or the export directory.

    Returns:
        What was recorded and what failed.

    Raises:
        BatchError: When a results file cannot be read, the judge has no
            verdict cache, or it is not the judge the batch was exported with
            (another model identity, prompt or verdict format).
    """
    if isinstance(results_paths, str | Path):
        results_paths = [results_paths]
    judge = _judge_of(retriever_or_judge)
    if not isinstance(mapping, BatchMapping):
        mapping = BatchMapping.load(mapping)
    _check_judge(mapping, judge)
    summary = ImportSummary(requests=len(mapping))
    recorded: set[str] = set()
    failed: dict[str, RequestFailure] = {}
    for where, data in _results_lines(results_paths):
        if isinstance(data, str):
            summary.failures.append(RequestFailure(custom_id="", error=data, where=where))
            continue
        cid = data["custom_id"]
        entry = mapping.entries.get(cid)
        if entry is None:
            summary.unknown.append(cid)
            continue
        if cid in recorded:
            summary.duplicates += 1
            continue
        error = _record(judge, entry, data, summary)
        if error is None:
            recorded.add(cid)
            failed.pop(cid, None)
        else:
            failed[cid] = RequestFailure(cid, error, entry.input_id, entry.rule_id, where)
    summary.failures.extend(failed.values())
    summary.missing = [cid for cid in mapping.entries if cid not in recorded and cid not in failed]
    return summary


def _record(judge: Any, entry: BatchEntry, data: Mapping[str, Any], summary: ImportSummary) -> str | None:
    """Record one results line's reply; return why it could not be, or ``None``."""
    reply = _reply(data)
    if isinstance(reply, str):
        return reply
    judgment = judge.record(
        entry.pair_request(),
        reply.text,
        reply.logprobs,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
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


class BatchResultsModel(BaseChatModel):
    """A judge model that only answers from the verdict cache: named as the batch's model, it never calls one.

    Give it to the retriever that exports and imports a batch, so the cache
    keys name the batch's model. A judgment that is not in the cache (its
    request failed or is missing from the results) fails with a
    :class:`BatchError` naming it, and is reported as a failed judgment.

    Attributes:
        model_name: The batch's model, e.g. ``"gpt-4o-mini"`` (its identity in cache keys).
    """

    model_name: str

    @property
    def _llm_type(self) -> str:
        return "langchain-tag-batch-results"

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise BatchError(
            f"no reply from batch model {self.model_name!r} for this pair: its request failed or is missing "
            "from the imported results (export it again)"
        )
