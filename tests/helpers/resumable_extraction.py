"""Run one extraction with a store and a slow fake extractor that logs every prompt it is sent.

Usage: ``python -m tests.helpers.resumable_extraction DOC STORE LOG OUT``. Each
call appends the SHA-256 of its prompt text to LOG (flushed at once), then
sleeps a little, so a test can kill the process mid-run. The rules go to OUT.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

from langchain_core.documents import Document

from langchain_tag.extraction import RuleDocumentTransformer
from langchain_tag.rules import save_rules
from langchain_tag.testing import FakeChatModel, fake_extraction_reply


def main(doc: str, store: str, log: str, out: str) -> None:
    """Extract the rules of ``doc`` with ``store``, logging prompt hashes to ``log``."""
    with open(log, "a", encoding="utf-8") as sink:

        def respond(text: str) -> str:
            sink.write(hashlib.sha256(text.encode()).hexdigest() + "\n")
            sink.flush()
            time.sleep(0.03)
            return fake_extraction_reply(text)

        transformer = RuleDocumentTransformer(
            FakeChatModel(respond=respond), max_concurrency=1, store=store, units_per_call=2
        )
        result = transformer.extract([Document(page_content=Path(doc).read_text(encoding="utf-8"), id="policy")])
    save_rules(result.rules, out)


if __name__ == "__main__":
    main(*sys.argv[1:5])
