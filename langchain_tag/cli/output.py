"""Where the bulk commands' records go: a JSONL file written whole, or standard output line by line."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["write_records"]


def write_records(records: Iterable[Mapping[str, Any]], output: str | None, *, unlocked: bool = False) -> str:
    """Write one JSON line per record to ``output`` (``None`` or ``"-"``: stdout); return where, for a summary.

    A file appears whole or not at all (:func:`~langchain_tag.scale.bulk.write_results`); ``unlocked``: written
    after a warning where it cannot be locked (``--unlocked-output``), rather than refused.
    """
    from langchain_tag.scale.bulk import write_results

    if output in (None, "-"):
        for record in records:
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        return "stdout"
    write_results(records, output, unlocked=unlocked)
    return output
