"""Judging (input, rule) pairs: the judges, their settings and prompts, their results, and the verdict caches.

What a user imports from here; the steps inside (rendering pairs, reading replies, log-odds, the context window)
are internal modules.

Example:
    >>> from langchain_tag.judging import JUDGE_PROMPTS, JudgeSettings
    >>> JudgeSettings(threshold=0.7).threshold, "applicability" in JUDGE_PROMPTS
    (0.7, True)
"""

from typing import TYPE_CHECKING

from langchain_tag.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tag.judging.chat import ChatJudge, configure_judge
    from langchain_tag.judging.chat_decision_model import ChatDecisionModel
    from langchain_tag.judging.decision_judge import DecisionJudge
    from langchain_tag.judging.judge import Judge
    from langchain_tag.judging.prompts import JUDGE_PROMPTS, JudgePrompt
    from langchain_tag.judging.results import Judgment, JudgmentsFailedError, MatchResult
    from langchain_tag.judging.settings import JudgeSettings
    from langchain_tag.judging.verdict_cache import InMemoryVerdictCache, SQLiteVerdictCache, VerdictCache

__all__ = [
    "JUDGE_PROMPTS",
    "ChatDecisionModel",
    "ChatJudge",
    "DecisionJudge",
    "InMemoryVerdictCache",
    "Judge",
    "JudgePrompt",
    "JudgeSettings",
    "Judgment",
    "JudgmentsFailedError",
    "MatchResult",
    "SQLiteVerdictCache",
    "VerdictCache",
    "configure_judge",
]

_MODULES = {
    "JUDGE_PROMPTS": "prompts",
    "ChatDecisionModel": "chat_decision_model",
    "ChatJudge": "chat",
    "DecisionJudge": "decision_judge",
    "InMemoryVerdictCache": "verdict_cache",
    "Judge": "judge",
    "JudgePrompt": "prompts",
    "JudgeSettings": "settings",
    "Judgment": "results",
    "JudgmentsFailedError": "results",
    "MatchResult": "results",
    "SQLiteVerdictCache": "verdict_cache",
    "VerdictCache": "verdict_cache",
    "configure_judge": "chat",
}
"""Where each public name lives: imported on first use, so importing one judging module imports no other."""

__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
