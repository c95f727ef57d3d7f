"""Task-Aligned Retrieval (TAG) for LangChain and LangGraph.

Retrieve the rules whose condition holds for an input, not the most similar
text: extract atomic condition -> action rules from a document offline
(:class:`RuleDocumentTransformer`), judge each (input, rule) pair at query time
(:class:`ApplicabilityRetriever`, with a chat model or a LangChain decision
model as the judge), and give the executor only the matched actions
(:func:`build_tag_graph`). :class:`ChatDecisionModel` offers TAG's judge as a
LangChain decision model.
"""

from typing import TYPE_CHECKING

from langchain_tag.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tag.errors import InputTooLongError, ProviderError, RuleFileError, TagError
    from langchain_tag.extraction import RuleDocumentTransformer
    from langchain_tag.graph import build_tag_graph
    from langchain_tag.judging.chat_decision_model import ChatDecisionModel
    from langchain_tag.judging.results import JudgmentsFailedError
    from langchain_tag.retrievers import AllRulesRetriever, ApplicabilityRetriever, RelevanceRetriever
    from langchain_tag.rules import Rule, load_rules, save_rules

__version__ = "0.1.0"

__all__ = [
    "AllRulesRetriever",
    "ApplicabilityRetriever",
    "ChatDecisionModel",
    "InputTooLongError",
    "JudgmentsFailedError",
    "ProviderError",
    "RelevanceRetriever",
    "Rule",
    "RuleDocumentTransformer",
    "RuleFileError",
    "TagError",
    "build_tag_graph",
    "load_rules",
    "save_rules",
]

_MODULES = {
    "AllRulesRetriever": "retrievers",
    "ApplicabilityRetriever": "retrievers",
    "ChatDecisionModel": "judging.chat_decision_model",
    "InputTooLongError": "errors",
    "JudgmentsFailedError": "judging.results",
    "ProviderError": "errors",
    "RelevanceRetriever": "retrievers",
    "Rule": "rules",
    "RuleDocumentTransformer": "extraction",
    "RuleFileError": "errors",
    "TagError": "errors",
    "build_tag_graph": "graph",
    "load_rules": "rules",
    "save_rules": "rules",
}
"""Where each public name lives: imported on first use, so a module of the package (a Ray worker's, the
CLI's) does not pay for the graph and extraction it does not use."""


__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
