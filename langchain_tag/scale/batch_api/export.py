"""Export: every judgment of a source written as OpenAI Batch API input files, with their mapping.

:func:`export_openai_batch` renders each planned request as one
``/v1/chat/completions`` line, splits the lines into ``batch-0001.jsonl``, ...
within the Batch API's limits, and saves the
:class:`~langchain_tag.scale.batch_api.mapping.BatchMapping` beside them for
:func:`~langchain_tag.scale.batch_api.results.import_openai_batch`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from langchain_tag.judging._pairs import PairRequest
from langchain_tag.scale.batch_api.ids import BATCH_URL, MAPPING_FILE, MAX_BYTES, MAX_REQUESTS, BatchError
from langchain_tag.scale.batch_api.mapping import BatchEntry, BatchSource, plan_requests

__all__ = ["export_openai_batch"]

_BATCH_FILE = "batch-{:04d}.jsonl"


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
    (:class:`~langchain_tag.scale.batch_api.mapping.BatchMapping`) is written
    beside them; keep it for
    :func:`~langchain_tag.scale.batch_api.results.import_openai_batch`.

    Args:
        source: ``(retriever, inputs)`` (an
            :class:`~langchain_tag.retrievers.ApplicabilityRetriever` with
            ``rules=``, and :class:`~langchain_tag.scale.inputs.InputItem` objects or
            strings), or ``{input_id: [PairRequest, ...]}`` rendered by a judge
            (:meth:`ChatJudge.requests`).
        out_dir: The directory to write to (created if missing; it must not
            hold an earlier export).
        model_name: The model named in every request. For the imported
            verdicts to serve later judgments, the retriever's model identity
            should be this name
            (:class:`~langchain_tag.scale.batch_api.results.BatchResultsModel` is).
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
    plan = plan_requests(source, model_name=model_name, skip_cached=skip_cached)
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
