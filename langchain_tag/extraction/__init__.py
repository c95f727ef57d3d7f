"""Offline rule extraction: five phases from documents to verified rules."""

from typing import TYPE_CHECKING

from langchain_tag.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tag.extraction.report import ExtractionReport, ExtractionResult
    from langchain_tag.extraction.transformer import RuleDocumentTransformer

__all__ = ["ExtractionReport", "ExtractionResult", "RuleDocumentTransformer"]

_MODULES = {
    "ExtractionReport": "report",
    "ExtractionResult": "report",
    "RuleDocumentTransformer": "transformer",
}
"""Where each public name lives: imported on first use, so a module that needs one phase's helpers (the review
page's) does not import the whole pipeline."""

__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
