"""The ``nba`` quality set: RuleArena's NBA rule catalog as the policy, its problems as cases, its gold rules as labels.

RuleArena labels each NBA problem with the ids of the rules that govern it (``relevant_rules``), and its rule
catalog gives each id one sentence of the NBA Collective Bargaining Agreement. This set turns that into an
end-to-end quality set:

* the policy is the catalog's sentences, verbatim, one paragraph each, under headings named after the ids'
  leading words (a topic shared by two or more ids gets its own heading; the rest sit under *Other rules*);
* each catalog entry is a statement (its id, its sentence);
* each problem is a case: its scenario text (:func:`~langchain_tag_bench.nba.problem_text`) as the input and its
  gold ids that the catalog holds as the statements it "violates" -- for this set, the statements whose
  condition holds for the problem, which is what the TAG judge is asked;
* problems alternate between the development and the test split in load order (duplicates dropped), so both
  splits hold every complexity level.

The data is read from the RuleArena NBA directory (``--data``, default the shared ``rulearena-nba``); nothing is
copied into the repository. Extraction from the full CBA excerpts (``reference_rules.txt``, ~16.6K words) would
be the paper's setting, but its rules cannot be scored: no mapping from gold ids to passages of that text
exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_tag.rules import Rule
from langchain_tag_bench.data import default_data_path
from langchain_tag_bench.nba import gold_in_catalog, load_problems

__all__ = ["NBA_DOMAIN", "NBA_POLICY_ID", "NBA_TASK_INPUT", "nba_cases", "nba_data_dir", "nba_policy", "nba_statements"]

NBA_DOMAIN = "NBA salary cap (Collective Bargaining Agreement)"
NBA_TASK_INPUT = "a description of NBA teams' and players' situations and the transactions the teams propose"
NBA_POLICY_ID = "rulearena-nba-catalog.md"
_TITLE = "# NBA salary cap rules"
_INTRO = (
    "These are sentences of the NBA Collective Bargaining Agreement, one rule of the salary cap system each, "
    "as RuleArena's rule catalog lists them."
)
_OTHER = "Other rules"


def nba_data_dir(path: str | Path | None = None) -> Path:
    """The RuleArena NBA directory: ``path``, or the shared ``rulearena-nba``."""
    return Path(path).expanduser() if path is not None else default_data_path("rulearena-nba", "--data")


def _sections(rules: Sequence[Rule]) -> list[tuple[str, list[Rule]]]:
    groups: dict[str, list[Rule]] = {}
    for rule in rules:
        groups.setdefault(rule.category_tags[0] if rule.category_tags else "", []).append(rule)
    sections = [(tag, members) for tag, members in groups.items() if tag and len(members) >= 2]
    rest = [r for tag, members in groups.items() if not tag or len(members) < 2 for r in members]
    if rest:
        sections.append((_OTHER, rest))
    return sections


def nba_policy(rules: Sequence[Rule]) -> str:
    """The policy text: a title, one line of background, then the catalog sentences under topic headings."""
    parts = [_TITLE, _INTRO]
    for title, members in _sections(rules):
        parts.append(f"## {title[:1].upper()}{title[1:]}")
        parts += [r.source_text for r in members]
    return "\n\n".join(parts) + "\n"


def nba_statements(rules: Sequence[Rule]) -> list[dict[str, Any]]:
    """One statement per catalog entry: ``{"id": rule id, "text": its sentence}``."""
    return [{"id": r.rule_id, "text": r.source_text} for r in rules]


def nba_cases(data_dir: str | Path, catalog_ids: set[str]) -> list[dict[str, Any]]:
    """Every problem as a case; problems alternate dev, test in load order (levels 0, 1, 2; duplicates dropped)."""
    cases = []
    for position, problem in enumerate(load_problems(data_dir)):
        cases.append(
            {
                "id": problem.key,
                "text": problem.text,
                "violates": list(gold_in_catalog(problem, catalog_ids)),
                "split": "dev" if position % 2 == 0 else "test",
                "level": problem.level,
            }
        )
    return cases
