"""Task-Aligned Retrieval (TAG) for LangChain and LangGraph.

Retrieve the rules whose condition holds for an input, not the most similar
text: extract atomic condition -> action rules from a document offline
(:class:`RuleDocumentTransformer`), judge each (input, rule) pair at query time
(:class:`ApplicabilityRetriever`), and give the executor only the matched
actions (:func:`build_tag_graph`).
"""

from langchain_tag.calls.verdict_cache import InMemoryVerdictCache, SQLiteVerdictCache, VerdictCache
from langchain_tag.errors import (
    DocumentLoadError,
    InputTooLongError,
    JudgmentsFailedError,
    MissingExtraError,
    ParseError,
    ProviderError,
    RuleFileError,
    TagError,
)
from langchain_tag.executors import executor_chain
from langchain_tag.extraction import ExtractionReport, ExtractionResult, RuleDocumentTransformer
from langchain_tag.graph import build_tag_graph
from langchain_tag.judging.chat import ChatJudge
from langchain_tag.judging.results import Judgment, MatchResult
from langchain_tag.retrievers import AllRulesRetriever, ApplicabilityRetriever, RelevanceRetriever
from langchain_tag.rules import (
    Rule,
    load_rules,
    rule_documents,
    rules_from_documents,
    rules_to_documents,
    save_rules,
)

__version__ = "0.1.0"

__all__ = [
    "AllRulesRetriever",
    "ApplicabilityRetriever",
    "ChatJudge",
    "DocumentLoadError",
    "ExtractionReport",
    "ExtractionResult",
    "InMemoryVerdictCache",
    "InputTooLongError",
    "Judgment",
    "JudgmentsFailedError",
    "MatchResult",
    "MissingExtraError",
    "ParseError",
    "ProviderError",
    "RelevanceRetriever",
    "Rule",
    "RuleDocumentTransformer",
    "RuleFileError",
    "SQLiteVerdictCache",
    "TagError",
    "VerdictCache",
    "build_tag_graph",
    "executor_chain",
    "load_rules",
    "rule_documents",
    "rules_from_documents",
    "rules_to_documents",
    "save_rules",
]
