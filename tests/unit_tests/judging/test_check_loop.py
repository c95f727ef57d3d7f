from __future__ import annotations

import pytest

from langchain_tag.judging._check_loop import CheckLoop
from langchain_tag.judging.chat import ChatJudge
from langchain_tag.ranges import CHECK_ROUNDS
from langchain_tag.rules import Rule
from langchain_tag.testing import fake_judge

RULES = [
    Rule(rule_id=f"R{i}", rule_name=f"rule {i}", condition=f"the text says flag:{i}", action=f"remove flag:{i}")
    for i in (1, 2, 3)
]


def _judge() -> ChatJudge:
    return ChatJudge(fake_judge({"R1", "R3"}), calibration=None)


def test_the_check_judges_the_revision_against_the_rules_given_only() -> None:
    result = CheckLoop(rounds=1).check(_judge(), "revised", RULES[:2])
    assert result.query == "revised" and [j.rule_id for j in result.judgments] == ["R1", "R2"]
    assert [j.rule_id for j in result.matched] == ["R1"]  # what still holds


async def test_the_async_check_judges_as_the_sync_one() -> None:
    result = await CheckLoop(rounds=1).acheck(_judge(), "revised", RULES)
    assert [j.rule_id for j in result.matched] == ["R1", "R3"]


def test_no_rules_given_means_no_call_and_nothing_holding() -> None:
    llm = fake_judge({"R1"})
    result = CheckLoop().check(ChatJudge(llm, calibration=None), "revised", [])
    assert result.judgments == [] and result.query == "revised" and llm.calls == 0


@pytest.mark.parametrize(
    ("rounds", "holding", "ran", "again"),
    [
        (1, ["R1"], 1, True),  # one more round after the first
        (1, ["R1"], 2, False),  # the extra round ran
        (1, [], 1, False),  # nothing holds
        (2, ["R1"], 2, True),
        (2, ["R1"], 3, False),
        (0, ["R1"], 1, False),  # no check rounds
    ],
)
def test_the_revision_goes_back_while_rules_hold_and_rounds_are_left(
    rounds: int, holding: list[str], ran: int, again: bool
) -> None:
    assert CheckLoop(rounds=rounds).again(holding, ran) is again


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_check_rounds_is_a_whole_number_from_zero(bad: object) -> None:
    with pytest.raises(ValueError) as raised:
        CheckLoop(rounds=bad)  # type: ignore[arg-type]
    assert str(raised.value) == CHECK_ROUNDS.message(bad) == f"check_rounds must be a whole number >= 0, got {bad!r}"
