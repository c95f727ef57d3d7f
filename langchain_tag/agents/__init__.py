"""TAG for LangChain agents: :class:`TagMiddleware` gives the agent's model only the rules whose condition holds.

Needs the ``agents`` extra (``pip install "langchain-tag[agents]"``, which brings ``langchain``).

How :class:`TagMiddleware` behaves:

**Once per input.** The matches are kept in the agent's state with a digest of the input they belong to, so
the later model calls of a tool-calling loop on the same input reuse them and call no judge; the retriever's
verdict cache also answers a pair judged before. A loop of many model calls costs one judgment per rule per
new input. After a failed judgment the next call asks again, once (the cache answers the judgments that
worked); after that the failure stands for this input, so a rule that keeps failing is not asked on every call.
Messages LangChain marks as its own (``lc_source``: ``SummarizationMiddleware``'s summary) are never judged;
when the input was summarised away, its matched rules stand for the rest of the turn.

**The first input's cost.** A calibration with reference inputs (the shipped default of a known judge model,
or your own) judges each rule once on each reference input, at the first input that meets the rule: that
input takes several times the judge calls of the later ones. The middleware logs the number (INFO) before
those calls; ``calibration=None``, or a calibration without reference inputs, avoids them.

**State.** ``tag_matches``: the rules the model was told to follow, each ``{"rule_id", "score", "action"}``
(``score`` is the judge's calibrated score); ``tag_failures``: the judgments that failed (``{"rule_id",
"error"}``), counted as NO. Both are in the agent's output; ``state_schema`` is
:class:`~langchain_tag.agents._state.TagAgentState`.

**Several policies in one agent.** Each middleware needs a ``name`` (as LangChain tells middlewares apart) and
keeps its state under it: ``name="security"`` keeps ``tag_security_matches``, ``tag_security_failures`` and
``tag_security_check`` (:attr:`keys`); a subclass without ``name=`` uses its class name.

**Internal calls.** The judge's calls run under the model call's run (a trace shows them), tagged
``nostream`` and marked with LangChain's internal-call metadata (``lc_source="tag_rules"``), so
``stream_mode="messages"`` and ``run.messages`` carry none of their tokens.

**Failures** follow the retriever's ``strict``: with ``strict=False`` (the default) the agent goes on with
the rules that were judged and the failure is recorded in ``tag_failures``, logged, and sent to callbacks as
the retriever sends it (the custom event ``tag_judgments_failed``); with ``strict=True``
the call raises :class:`~langchain_tag.judging.results.JudgmentsFailedError`.
**An outage** (every judgment of the input failed: the endpoint down or hanging, an error page) follows
``on_outage``: ``"continue"`` (the default without ``strict``) goes on without rules and records every rule
in ``tag_failures``, with the warning and the event; ``"error"`` (the default with ``strict=True``) raises
the judge's :class:`~langchain_tag.errors.ProviderError`. An outage is not asked again for the same input.

**Configuration** is checked when the middleware is built: the retriever's kind, the rules (``Rule``
objects, rule documents, or mappings of a rule's fields), the retriever options' ranges, the texts.

**Check** (``check=True``, off by default): after a final answer (no tool calls), the judge reads the
answer against the matched rules; when it reads some as still holding, the middleware asks the model once,
for this input, to revise, naming those rules with the judge's score and saying how reliable such readings
are (``check_note``). The reading of the last answer is kept under ``tag_check``. It is the judge's reading,
not a fact: a small judge is near chance at it.

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
