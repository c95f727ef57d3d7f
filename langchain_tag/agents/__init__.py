"""TAG for LangChain agents: :class:`TagMiddleware` gives the agent's model only the rules whose condition holds.

Needs the ``agents`` extra (``pip install "langchain-tag[agents]"``, which brings ``langchain``).

Example:
    .. code-block:: python

        from langchain.agents import create_agent
        from langchain_tag.agents import TagMiddleware

        agent = create_agent(model, tools, middleware=[TagMiddleware(retriever)])
        state = agent.invoke({"messages": [{"role": "user", "content": code}]})
        state["tag_matches"]  # [{"rule_id": ..., "score": ..., "action": ...}, ...]: what the model was told

        # two policies in one agent: each named, each with its own state keys (tag_security_matches, ...)
        middleware = [TagMiddleware(security, name="security"), TagMiddleware(style, name="style")]
"""

from langchain_tag.errors import require_extra

require_extra("langchain.agents", "agents")

from langchain_tag.agents._middleware import TagMiddleware  # noqa: E402
from langchain_tag.agents._state import (  # noqa: E402
    CHECK_KEY,
    FAILURES_KEY,
    MATCHES_KEY,
    CheckReading,
    JudgeFailure,
    RuleMatch,
    StateKeys,
    TagAgentState,
)

__all__ = [
    "CHECK_KEY",
    "FAILURES_KEY",
    "MATCHES_KEY",
    "CheckReading",
    "JudgeFailure",
    "RuleMatch",
    "StateKeys",
    "TagAgentState",
    "TagMiddleware",
]
