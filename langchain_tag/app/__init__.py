"""The TAG graph as a LangGraph application: served by ``langgraph dev``, configured per run, reviewed by a person.

``langgraph.json`` names :func:`make_graph` (``"langchain_tag.app:make_graph"``); LangGraph calls it with the
run's configuration and serves the graph it returns. Per-run settings are the run's context
(:class:`~langchain_tag.app._context.TagContext`); the models come from the package's ``LANGCHAIN_TAG_*``
environment variables (the embedded model by default). In Python, :func:`build_app_graph` takes models of
your own; :func:`~langchain_tag.graph.build_tag_graph` stays the pipeline's Python entry point.

Which checkpointer: ``langgraph dev`` keeps threads in memory and writes them to its ``.langgraph_api`` folder
only every ten seconds, so a thread waiting for review is lost when the dev server is killed before it writes;
it is for trying the graph, not for keeping reviews. A deployment keeps its threads in a database: the
LangGraph server's Postgres checkpointer (``langgraph up``, or LangGraph Platform), or, for one process of
your own, :func:`build_app_graph` with the SQLite checkpointer of ``langgraph-checkpoint-sqlite``
(``SqliteSaver``), where an interrupted thread resumes after a restart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from langchain_tag.app._context import ContextError, RunSettings, TagContext, check_context_keys, settings_from_context
from langchain_tag.app._graph import BELOW_THE_LINE, InputError, build_app_graph
from langchain_tag.app._models import AppModels, env_models
from langchain_tag.app._progress import PROGRESS_EVENT, JudgingProgress
from langchain_tag.app._review import REVIEW_KIND, ReviewError, apply_decision
from langchain_tag.app._schemas import (
    ReviewRecord,
    ReviewRequest,
    ReviewRule,
    RuleInput,
    RuleRef,
    RuleSource,
    TagInput,
    TagOutput,
)

if TYPE_CHECKING:
    from langgraph_sdk.runtime import ServerRuntime

__all__ = [
    "BELOW_THE_LINE",
    "PROGRESS_EVENT",
    "REVIEW_KIND",
    "AppModels",
    "ContextError",
    "InputError",
    "JudgingProgress",
    "ReviewError",
    "ReviewRecord",
    "ReviewRequest",
    "ReviewRule",
    "RuleInput",
    "RuleRef",
    "RuleSource",
    "RunSettings",
    "TagContext",
    "TagInput",
    "TagOutput",
    "apply_decision",
    "build_app_graph",
    "env_models",
    "make_graph",
    "settings_from_context",
]


def make_graph(
    config: RunnableConfig, runtime: ServerRuntime[Any] | None = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The graph LangGraph serves (``"graphs": {"tag": "langchain_tag.app:make_graph"}`` in ``langgraph.json``).

    LangGraph calls it for each run with the run's configuration and the server's runtime; building the graph
    is cheap (no model is made until a node needs one), and the per-run settings are read from the run's
    context, not from ``config``. The server brings the checkpointer.

    The server drops the context keys the graph's context schema does not name before the run sees them;
    the runtime holds the context as the client sent it, so a key that is no setting (a misspelt
    ``"treshold"``) fails the run here, naming it, instead of running on the defaults.

    Args:
        config: The run's configuration (unused: the settings are the context's).
        runtime: The server's runtime (``langgraph_sdk.runtime.ServerRuntime``); for a run, it holds the
            context as sent.

    Returns:
        The compiled graph, with the models of :func:`env_models`.

    Raises:
        ContextError: When the run's context holds a key that is no setting.
    """
    execution = runtime.execution_runtime if runtime is not None else None
    if execution is not None:
        check_context_keys(execution.context)
    return build_app_graph(env_models())
