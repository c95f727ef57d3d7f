"""The batch mapping: which pair and verdict-cache key each exported ``custom_id`` stands for.

:func:`plan_requests` turns a source (``{input_id: requests}`` or ``(retriever,
inputs)``) into the requests to export, each once and under a unique
``custom_id``, with the :class:`BatchMapping` that names them;
:meth:`BatchMapping.save` and :meth:`BatchMapping.load` keep it in
``mapping.jsonl`` beside the batch input files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_tag.jsonl import JsonLineError, json_lines
from langchain_tag.judging._pairs import PairRequest
from langchain_tag.judging.chat import chat_judge
from langchain_tag.scale.batch_api.ids import (
    MAPPING_FILE,
    MAPPING_FORMAT,
    MAPPING_VERSION,
    REFERENCE_PREFIX,
    BatchError,
    custom_id,
    request_digest,
    split_custom_id,
)
from langchain_tag.scale.bulk import retriever_rules
from langchain_tag.scale.inputs import InputItem, as_input_items

__all__ = ["BatchEntry", "BatchMapping", "BatchSource", "ExportPlan", "batch_mapping", "plan_requests"]


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

    @property
    def digest(self) -> str:
        """The digest of its request (of :attr:`key`), as its ``custom_id`` ends."""
        return request_digest(self.key)

    def pair_request(self) -> PairRequest:
        """The request as :meth:`ChatJudge.record` takes it (without messages: reading a reply needs none)."""
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
            BatchError: When the file is missing, not a mapping, of another
                format version, or an entry's ``custom_id`` does not end with
                its key's digest (naming the line at fault).
        """
        path = Path(path)
        if path.is_dir():
            path = path / MAPPING_FILE
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
        except OSError as exc:
            raise BatchError(f"{path}: cannot read the batch mapping ({exc.strerror or exc})") from exc
        first = next(json_lines(lines[:1], str(path)), (1, JsonLineError(str(path), 1, "an empty first line")))
        header = _json_object(first[1], path, 1)
        if header.get("format") != MAPPING_FORMAT:
            raise BatchError(f"{path}:1: not a batch mapping written by export_openai_batch")
        if header.get("version") != MAPPING_VERSION:
            raise BatchError(
                f"{path}:1: batch mapping format version {header.get('version')!r}, this version reads "
                f"{MAPPING_VERSION} (custom_ids that end with their request's digest): export the batch again"
            )
        mapping = cls(
            model_name=header.get("model_name"),
            model_identity=header.get("model_identity"),
            predicate=header.get("predicate"),
            prompt_versions=tuple(header.get("prompt_versions") or ()),
            verdict_format=header.get("verdict_format"),
            files=list(header.get("files") or []),
        )
        for number, data in json_lines(lines, str(path)):
            if number == 1:
                continue
            data = _json_object(data, path, number)
            try:
                entry = BatchEntry(**data)
            except TypeError as exc:
                raise BatchError(f"{path}:{number}: not a mapping entry ({exc})") from exc
            if split_custom_id(entry.custom_id)[1] != entry.digest:
                raise BatchError(
                    f"{path}:{number}: custom_id {entry.custom_id!r} does not end with its key's digest "
                    f"{entry.digest!r}: the mapping was edited"
                )
            mapping.entries[entry.custom_id] = entry
        return mapping


def _json_object(data: Any, path: Path, number: int) -> dict[str, Any]:
    if isinstance(data, JsonLineError):
        raise BatchError(str(data)) from data
    if not isinstance(data, dict):
        raise BatchError(f"{path}:{number}: expected a JSON object")
    return data


# ---------------------------------------------------------------------------------------------------------------
# Planning: which requests, under which custom_id
# ---------------------------------------------------------------------------------------------------------------

BatchSource = Mapping[str, Sequence[PairRequest]] | tuple[Any, Iterable[InputItem | str]]
"""What to export: ``{input_id: requests}``, or ``(retriever, inputs)``."""


@dataclass
class ExportPlan:
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
    judge = chat_judge(retriever.judge, "a Batch API export", BatchError)
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


def plan_requests(source: BatchSource, *, model_name: str | None, skip_cached: bool) -> ExportPlan:
    """Every request once (by verdict-cache key), in input order, each under a unique ``custom_id``."""
    by_input, judge = _requests_by_input(source)
    cache = judge.settings.cache if skip_cached and judge is not None else None
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
    return ExportPlan(requests, mapping)


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
        verdict_format=judge.settings.verdict_format,
    )


def batch_mapping(source: BatchSource, *, model_name: str | None = None) -> BatchMapping:
    """The mapping :func:`~langchain_tag.scale.batch_api.export.export_openai_batch` writes for ``source``.

    It names every request, cached ones too. The ``custom_id`` of a request
    depends only on its input id, rule, prompt version and half, and the
    digest of the request (:func:`~langchain_tag.scale.batch_api.ids.request_digest`),
    so this rebuilds a lost ``mapping.jsonl`` from the same retriever and
    inputs; rebuilt from inputs or rules edited since the export, it names
    the edited pairs by other ``custom_id`` values, and the import refuses
    the replies to the old ones.
    """
    return plan_requests(source, model_name=model_name, skip_cached=False).mapping
