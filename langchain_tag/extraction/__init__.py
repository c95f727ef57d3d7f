"""Offline rule extraction: five phases from documents to verified rules."""

from langchain_tag.extraction.report import ExtractionReport, ExtractionResult
from langchain_tag.extraction.transformer import RuleDocumentTransformer

__all__ = ["ExtractionReport", "ExtractionResult", "RuleDocumentTransformer"]
