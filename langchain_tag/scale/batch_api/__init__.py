"""Provider batch APIs: judgments written out as OpenAI Batch API input files, and their results read back.

The OpenAI Batch API runs chat-completion requests offline, within 24 hours,
at about half the price. The flow:

1. :func:`export_openai_batch` renders every (input, rule) pair, plus the
   calibration's reference judgments (once), into Batch API input files
   (``batch-0001.jsonl``, ...; at most 50,000 requests and 200 MB each) and
   writes ``mapping.jsonl`` beside them, which ties each ``custom_id`` back
   to its pair and verdict-cache key. A ``custom_id`` ends with the digest
   of its request (model, prompt, input text and rule). Pairs already in the
   verdict cache, and requests asked twice (the same input text twice), are
   left out.
2. :func:`~langchain_tag.scale.batch_api.client.submit_openai_batch` uploads
   each file and creates its batch (once: ``batches.json`` records them),
   :func:`~langchain_tag.scale.batch_api.client.openai_batch_status` follows
   them and :func:`~langchain_tag.scale.batch_api.client.fetch_openai_batch`
   downloads their output (and error) files (``langchain-tag batch submit``,
   ``status``, ``fetch``).
3. :func:`import_openai_batch` reads those files and records each reply in
   the judge's verdict cache (:meth:`ChatJudge.record`), reporting the
   requests that failed without losing the others. A reply that does not
   answer its pair's current request (another export's, or one to an input
   or rule edited since) is refused, and two different replies to one
   request are a conflict: neither is recorded.
4. ``retriever.match(input)`` (or :func:`~langchain_tag.scale.bulk.match_corpus`)
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
        inputs = read_inputs("inputs.jsonl")
        files = export_openai_batch((retriever, inputs), "batch", model_name="gpt-4o-mini")
        # ... run the batches, download the output files ...
        summary = import_openai_batch(["out-1.jsonl"], retriever, "batch/mapping.jsonl", inputs=inputs)
"""

from typing import TYPE_CHECKING

from langchain_tag.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tag.scale.batch_api.export import export_openai_batch
    from langchain_tag.scale.batch_api.ids import (
        BATCH_URL,
        CUSTOM_ID_MAX_CHARS,
        MAPPING_FILE,
        MAX_BYTES,
        MAX_REQUESTS,
        REFERENCE_PREFIX,
        BatchError,
        custom_id,
        parse_custom_id,
        request_digest,
        split_custom_id,
    )
    from langchain_tag.scale.batch_api.mapping import BatchEntry, BatchMapping, batch_mapping
    from langchain_tag.scale.batch_api.results import (
        BatchRequestFailure,
        BatchResultsModel,
        ImportSummary,
        import_openai_batch,
    )

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
    "BatchRequestFailure",
    "BatchResultsModel",
    "ImportSummary",
    "batch_mapping",
    "custom_id",
    "export_openai_batch",
    "import_openai_batch",
    "parse_custom_id",
    "request_digest",
    "split_custom_id",
]

_MODULES = {
    "export_openai_batch": "export",
    "BATCH_URL": "ids",
    "BatchError": "ids",
    "CUSTOM_ID_MAX_CHARS": "ids",
    "MAPPING_FILE": "ids",
    "MAX_BYTES": "ids",
    "MAX_REQUESTS": "ids",
    "REFERENCE_PREFIX": "ids",
    "custom_id": "ids",
    "parse_custom_id": "ids",
    "request_digest": "ids",
    "split_custom_id": "ids",
    "BatchEntry": "mapping",
    "BatchMapping": "mapping",
    "batch_mapping": "mapping",
    "BatchRequestFailure": "results",
    "BatchResultsModel": "results",
    "ImportSummary": "results",
    "import_openai_batch": "results",
}
"""Where each public name lives: imported on first use, so the CLI's parser (which needs two limits) does not
import the export and import machinery."""

__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
