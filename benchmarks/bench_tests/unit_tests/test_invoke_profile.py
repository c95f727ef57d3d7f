"""The invoke profile counts the package functions each judge's plain ``invoke`` runs."""

from __future__ import annotations

import pytest

from langchain_tag_bench.invoke_profile import JUDGES, main, profile_invoke

pytestmark = pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")

RUNS = {
    "chat": ("judging/chat.py", "ChatJudge._call"),
    "decision": ("judging/decision_judge.py", "DecisionJudge._call"),
    "chat-decision": ("judging/_pairs.py", "render_questions"),
    "chat-decision-invoke": ("judging/chat_decision_model.py", "ChatDecisionModel._classify"),
}


@pytest.mark.parametrize("judge", JUDGES)
def test_each_judge_is_profiled_on_its_own_path(judge: str) -> None:
    calling, everywhere = profile_invoke(judge=judge)
    assert RUNS[judge] in calling
    assert set(calling) <= set(everywhere)
    assert not any(module == "testing.py" for module, _ in everywhere)


def test_main_prints_every_judge(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    printed = capsys.readouterr().out
    assert [line.split()[1].rstrip(":") for line in printed.splitlines() if line.startswith("judge ")] == list(JUDGES)
    assert printed.count("all threads: distinct functions") == len(JUDGES)


MOST_FUNCTIONS = 35
"""The most distinct package functions one fresh ``invoke`` may run on any judge's path (the chat judge's count)."""


@pytest.mark.parametrize(
    "judge",
    [
        "chat",
        "decision",
        "chat-decision",
        "chat-decision-invoke",
    ],
)
def test_a_fresh_invoke_runs_at_most_as_many_functions_as_the_chat_judge(judge: str) -> None:
    _, everywhere = profile_invoke(judge=judge)
    assert len(everywhere) <= MOST_FUNCTIONS, sorted(everywhere)
