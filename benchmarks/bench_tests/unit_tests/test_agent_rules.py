"""The agent benchmark: what each method hands the agent's model, its records, and ruff's count of what is left."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage

from langchain_tag.agents import TagMiddleware
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, fake_judge
from langchain_tag_bench.agent_rules import HEADING, SYSTEM, rules_prompt, run, run_one, score, table
from langchain_tag_bench.runlog import RunLog

RULES = [
    Rule(rule_id="R-001", rule_name="mutable default", condition="a list default", action="default to None"),
    Rule(rule_id="R-009", rule_name="print call", condition="the code prints", action="log instead of printing"),
]
BAD = "def add(tag, tags=[]):\n    print(tag)\n    return tags\n"
FIXED = "def add(tag, tags=None):\n    return tags or []\n"


def _fixer(prompt: str) -> AIMessage:
    """Fixes the mutable default only when told R-001, and reports a token count like a server would."""
    code = FIXED if "R-001" in prompt else BAD
    return AIMessage(content=f"```python\n{code}```", usage_metadata={"input_tokens": len(prompt.split()),
                                                                      "output_tokens": 9, "total_tokens": 9})  # fmt: skip


def test_every_method_hands_the_rules_as_the_middlewares_block() -> None:
    assert rules_prompt([]) == SYSTEM
    assert rules_prompt(RULES) == f"{SYSTEM}\n\n{HEADING}\n- R-001: default to None\n- R-009: log instead of printing"


def test_run_one_reads_the_answer_tokens_rules_and_judge_calls() -> None:
    judge = fake_judge({"R-001"}, with_logprobs=True)
    agent = create_agent(FakeChatModel(respond=_fixer), system_prompt=SYSTEM,
                         middleware=[TagMiddleware(rules=RULES, judge=judge, heading=HEADING)])  # fmt: skip
    record = run_one(agent, BAD)
    assert record["output"] == FIXED  # unfenced
    assert record["given_by_tag"] == ["R-001"] and record["judge_calls"] == len(RULES) == judge.calls
    assert record["model_calls"] == 1 and record["prompt_tokens"][0] > 0


def test_run_appends_records_resumes_and_scores_with_ruff(tmp_path: Path) -> None:
    built: list[str] = []

    def builders(given: list[Rule]) -> Any:
        def build(code: str) -> tuple[Any, list[str]]:
            built.append(code)
            return create_agent(FakeChatModel(respond=_fixer), system_prompt=rules_prompt(given)), [
                r.rule_id for r in given
            ]

        return build

    methods = {"none": builders([]), "all_rules": builders(RULES)}
    log = run([BAD], methods, ["none", "all_rules"], RunLog(tmp_path / "records.jsonl"))
    assert len(built) == 2
    run([BAD], methods, ["none", "all_rules"], RunLog(tmp_path / "records.jsonl"))
    assert len(built) == 2  # a rerun skips what is recorded
    rows = score(log.records(), [BAD], {"R-001": ("B006",), "R-009": ("T201",)})
    by_method = {row["method"]: row for row in rows}
    assert by_method["none"]["violations_in_inputs"] == 2 and by_method["none"]["violations_left"] == 2
    assert by_method["all_rules"]["violations_left"] == 0 and by_method["all_rules"]["rules_given"] == 2
    assert "| none | 2 -> 2 |" in table(rows)
