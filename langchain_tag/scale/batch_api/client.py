"""The OpenAI Batch API round trip of an export: upload and create the batches, follow them, fetch their results.

An export directory (:func:`~langchain_tag.scale.batch_api.export.export_openai_batch`)
holds the request files and ``mapping.jsonl``. :func:`submit_openai_batch`
uploads each request file (Files API, purpose ``batch``) and creates its batch,
recording both ids in ``batches.json`` beside them, so a rerun submits only
what is not submitted yet. :func:`openai_batch_status` reads each batch's state;
:func:`fetch_openai_batch` downloads the output and error files of the finished
ones into the directory, ready for
:func:`~langchain_tag.scale.batch_api.results.import_openai_batch`. The calls go
through the ``openai`` client the package already depends on, so any
OpenAI-compatible Files and Batches endpoint works (``base_url``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_tag.scale.batch_api.ids import BATCH_URL, MAPPING_FILE, BatchError
from langchain_tag.scale.batch_api.mapping import BatchMapping

__all__ = ["BATCHES_FILE", "SubmittedBatch", "fetch_openai_batch", "openai_batch_status", "submit_openai_batch"]

BATCHES_FILE = "batches.json"
"""The file in an export directory that records each request file's uploaded file id and batch id."""

FINISHED = frozenset({"completed", "failed", "expired", "cancelled"})
"""Batch states that do not change any more."""


@dataclass
class SubmittedBatch:
    """One request file of an export, as submitted.

    Attributes:
        file: The request file's name in the export directory.
        input_file_id: The uploaded file's id.
        batch_id: The batch's id.
        status: The batch's last known state (``validating``, ``in_progress``, ``completed``, ...).
        output_file_id: The results file's id, once there is one.
        error_file_id: The errors file's id, once there is one.
        counts: The batch's request counts (``total``, ``completed``, ``failed``), as last read.
    """

    file: str
    input_file_id: str
    batch_id: str
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] | None = None


def _client(client: Any, base_url: str | None, api_key: str | None) -> Any:
    if client is not None:
        return client
    import openai

    return openai.OpenAI(base_url=base_url, api_key=api_key)


def _load(export_dir: Path) -> dict[str, SubmittedBatch]:
    path = export_dir / BATCHES_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {item["file"]: SubmittedBatch(**item) for item in data}
    except (ValueError, KeyError, TypeError) as exc:
        raise BatchError(f"{path}: not a record of submitted batches ({exc})") from exc


def _save(export_dir: Path, batches: dict[str, SubmittedBatch]) -> None:
    path = export_dir / BATCHES_FILE
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps([asdict(b) for b in batches.values()], indent=1) + "\n", encoding="utf-8")
    partial.replace(path)


def _mapping(export_dir: Path) -> BatchMapping:
    if not (export_dir / MAPPING_FILE).exists():
        raise BatchError(f"{export_dir}: no {MAPPING_FILE}: not a batch export directory (langchain-tag batch export)")
    return BatchMapping.load(export_dir / MAPPING_FILE)


def submit_openai_batch(
    export_dir: str | Path,
    *,
    client: Any = None,
    base_url: str | None = None,
    api_key: str | None = None,
    completion_window: str = "24h",
) -> list[SubmittedBatch]:
    """Upload each request file of an export and create its batch; a file submitted before is not sent again.

    Args:
        export_dir: The export directory (with ``mapping.jsonl`` and the request files).
        client: An ``openai.OpenAI`` client (default: one for ``base_url`` and ``api_key``, else the
            ``OPENAI_*`` environment).
        base_url: The OpenAI-compatible endpoint.
        api_key: Its key.
        completion_window: The batches' completion window.

    Returns:
        Every request file's batch, in the export's order.

    Raises:
        BatchError: When the directory is not an export, or a request file is missing.
    """
    out = Path(export_dir)
    mapping = _mapping(out)
    api = _client(client, base_url, api_key)
    batches = _load(out)
    for name in mapping.files:
        if name in batches:
            continue
        path = out / name
        if not path.is_file():
            raise BatchError(f"{path}: the export's request file is missing")
        with path.open("rb") as handle:
            uploaded = api.files.create(file=handle, purpose="batch")
        batch = api.batches.create(input_file_id=uploaded.id, endpoint=BATCH_URL, completion_window=completion_window)
        batches[name] = SubmittedBatch(file=name, input_file_id=uploaded.id, batch_id=batch.id, status=batch.status)
        _save(out, batches)  # each batch recorded as soon as it exists: a rerun never creates it twice
    return [batches[name] for name in mapping.files]


def openai_batch_status(
    export_dir: str | Path, *, client: Any = None, base_url: str | None = None, api_key: str | None = None
) -> list[SubmittedBatch]:
    """Read the state of every submitted batch of an export (and record it in ``batches.json``).

    Raises:
        BatchError: When nothing of the export was submitted.
    """
    out = Path(export_dir)
    batches = _load(out)
    if not batches:
        raise BatchError(f"{out}: no batch submitted yet (langchain-tag batch submit {out})")
    api = _client(client, base_url, api_key)
    for batch in batches.values():
        if batch.status in FINISHED and batch.counts is not None:
            continue
        found = api.batches.retrieve(batch.batch_id)
        batch.status = found.status
        batch.output_file_id = found.output_file_id
        batch.error_file_id = found.error_file_id
        counts = getattr(found, "request_counts", None)
        if counts is not None:
            batch.counts = {k: int(getattr(counts, k, 0) or 0) for k in ("total", "completed", "failed")}
    _save(out, batches)
    return list(batches.values())


def fetch_openai_batch(
    export_dir: str | Path, *, client: Any = None, base_url: str | None = None, api_key: str | None = None
) -> list[Path]:
    """Download the output and error files of every finished batch into the export directory.

    A file already downloaded is kept. Files are named after their request file
    (``batch-0001.output.jsonl``, ``batch-0001.errors.jsonl``).

    Returns:
        The results files there now (the downloaded ones and those from before), in the export's order.

    Raises:
        BatchError: When nothing was submitted.
    """
    out = Path(export_dir)
    api = _client(client, base_url, api_key)
    found: list[Path] = []
    for batch in openai_batch_status(out, client=api):
        stem = Path(batch.file).stem
        for kind, file_id in (("output", batch.output_file_id), ("errors", batch.error_file_id)):
            if batch.status not in FINISHED or not file_id:
                continue
            target = out / f"{stem}.{kind}.jsonl"
            if not target.exists():
                content = api.files.content(file_id)
                partial = target.with_name(target.name + ".partial")
                partial.write_bytes(content.content if hasattr(content, "content") else bytes(content))
                partial.replace(target)
            found.append(target)
    return found
