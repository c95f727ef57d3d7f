"""The RuleArena NBA benchmark: problems and the rule catalog.

The data is read from a directory the caller passes (it is never bundled):

* ``comp_0.json``, ``comp_1.json``, ``comp_2.json``: problems of complexity
  levels 0, 1 and 2, each a JSON list of records with ``team_situations``,
  ``player_situations``, ``operations``, ``answer``, ``illegal_operation``,
  ``problematic_team`` and ``relevant_rules`` (gold rule ids).
* ``rule_catalog_from_micro_evaluation.json``: a list of
  ``{"rule_id", "description"}`` entries, turned into :class:`Rule` objects.

Retrieval is scored against the gold ids directly (see
:mod:`langchain_tag_bench.metrics`); no LLM grades the output.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_tag.rules import Rule
from langchain_tag_bench.data import BenchDataError
from langchain_tag_bench.metrics import NbaVerdict

__all__ = [
    "CATALOG_FILE",
    "LEVELS",
    "QUERY_MODES",
    "RULE_TEXTS",
    "GoldCoverage",
    "NbaDataError",
    "NbaProblem",
    "catalog_rules",
    "gold_coverage",
    "gold_in_catalog",
    "load_problems",
    "problem_text",
    "query_text",
    "rule_name_from_id",
    "tags_from_id",
]

LEVELS: tuple[int, ...] = (0, 1, 2)
"""Complexity levels of the benchmark (files ``comp_<level>.json``)."""

CATALOG_FILE = "rule_catalog_from_micro_evaluation.json"
"""File name of the rule catalog inside the data directory."""

CATALOG_DOCUMENT_ID = "rulearena-nba-catalog"
"""``document_id`` given to catalog rules."""

QUERY_MODES: tuple[str, ...] = ("text", "lines", "operations")
"""Similarity queries: the titled scenario text, its lines without titles, or the operations only."""

RULE_TEXTS: tuple[str, ...] = ("document", "condition")
"""What similarity search embeds per rule: the rule document's text, or the condition alone
(see :class:`~langchain_tag_bench.task.BenchTask`)."""

_RULE_NAME_WORDS = 8
_CONNECTIVES = frozenset({"and", "or", "in", "of", "to", "for", "at", "with"})


class NbaDataError(BenchDataError, FileNotFoundError):
    """The NBA data directory or one of its files is missing or malformed."""


def _problem_file(data_dir: Path, level: int) -> Path:
    return data_dir / f"comp_{level}.json"


def _check_dir(data_dir: str | Path) -> Path:
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        raise NbaDataError(
            f"NBA data directory not found: {path}. Pass the path of a RuleArena NBA directory "
            f"(holding comp_0.json, comp_1.json, comp_2.json and {CATALOG_FILE})."
        )
    return path


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise NbaDataError(
            f"NBA data file not found: {path}. Pass the path of a RuleArena NBA directory that contains it."
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise NbaDataError(f"{path} is not valid JSON: {exc}") from exc


# --------------------------------------------------------------------------
# Problems.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class NbaProblem:
    """One NBA scenario with its gold labels.

    Attributes:
        level: Complexity level (0, 1 or 2).
        index: Position of the record in ``comp_<level>.json``.
        text: The scenario as the task input: team situations, player
            situations, then the operations.
        gold: Gold rule ids (``relevant_rules``), repeats removed, file order kept.
        verdict: Gold answer, illegal operation and problematic team.
        team_situations: The record's team situation lines.
        player_situations: The record's player situation lines.
        operations: The record's operation lines (``"A. Team A signs ..."``).
    """

    level: int
    index: int
    text: str
    gold: tuple[str, ...]
    verdict: NbaVerdict = field(default_factory=lambda: NbaVerdict(answer=None))
    team_situations: tuple[str, ...] = ()
    player_situations: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """A stable id such as ``"L1-007"``."""
        return f"L{self.level}-{self.index:03d}"


def problem_text(record: dict[str, Any]) -> str:
    """Render a problem record as the scenario text.

    Args:
        record: A RuleArena NBA record.

    Returns:
        Three titled blocks, one line per item: ``Team situations:``,
        ``Player situations:`` and ``Operations:``.
    """
    blocks = [
        ("Team situations:", record.get("team_situations") or []),
        ("Player situations:", record.get("player_situations") or []),
        ("Operations:", record.get("operations") or []),
    ]
    return "\n\n".join(title + "\n" + "\n".join(str(line).strip() for line in lines) for title, lines in blocks)


def _unique(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ids))


def _problem(level: int, index: int, record: Any, path: Path) -> NbaProblem:
    if not isinstance(record, dict) or "relevant_rules" not in record or "operations" not in record:
        raise NbaDataError(f"{path}: record {index} is not an NBA problem (needs operations and relevant_rules)")
    return NbaProblem(
        level=level,
        index=index,
        text=problem_text(record),
        gold=_unique(str(r) for r in record["relevant_rules"]),
        verdict=NbaVerdict.from_record(record),
        team_situations=_lines(record.get("team_situations")),
        player_situations=_lines(record.get("player_situations")),
        operations=_lines(record.get("operations")),
    )


def _lines(value: Any) -> tuple[str, ...]:
    return tuple(str(line).strip() for line in value or ())


def query_text(problem: NbaProblem, mode: str = "text") -> str:
    """The text a similarity search uses as its query.

    Args:
        problem: The problem.
        mode: ``"text"``: the titled scenario (:attr:`NbaProblem.text`);
            ``"lines"``: every situation and operation line, without titles;
            ``"operations"``: the operation lines only.

    Raises:
        ValueError: On an unknown mode.
    """
    if mode == "text":
        return problem.text
    if mode == "lines":
        return "\n".join(problem.team_situations + problem.player_situations + problem.operations)
    if mode == "operations":
        return "\n".join(problem.operations)
    raise ValueError(f"unknown query mode {mode!r}; choose one of: {', '.join(QUERY_MODES)}")


def load_problems(data_dir: str | Path, levels: Iterable[int] = LEVELS, limit: int | None = None) -> list[NbaProblem]:
    """Load the problems of the given levels, dropping exact duplicates.

    A record identical (as JSON, key order aside) to one already loaded, at
    any level, is skipped; the first occurrence is kept.

    Args:
        data_dir: The RuleArena NBA data directory.
        levels: Levels to load, in this order.
        limit: At most this many problems per level (after deduplication).

    Returns:
        Problems, level by level, in file order.

    Raises:
        NbaDataError: When the directory or a level file is missing or malformed.
        ValueError: On an unknown level or a negative limit.
    """
    path = _check_dir(data_dir)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    seen: set[str] = set()
    problems: list[NbaProblem] = []
    for level in levels:
        if level not in LEVELS:
            raise ValueError(f"unknown NBA level {level!r}; levels are {', '.join(map(str, LEVELS))}")
        file = _problem_file(path, level)
        records = _read_json(file)
        if not isinstance(records, list):
            raise NbaDataError(f"{file} should hold a JSON list of problems")
        kept = 0
        for index, record in enumerate(records):
            if limit is not None and kept >= limit:
                break
            fingerprint = json.dumps(record, sort_keys=True)
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
            problems.append(_problem(level, index, record, file))
            kept += 1
    return problems


# --------------------------------------------------------------------------
# The rule catalog.
# --------------------------------------------------------------------------
def rule_name_from_id(rule_id: str, max_words: int = _RULE_NAME_WORDS) -> str:
    """``"sign_and_trade_3_to_4_year"`` -> ``"sign and trade 3 to 4 year"`` (at most ``max_words`` words)."""
    words = [w for w in rule_id.split("_") if w]
    return " ".join(words[:max_words]) or rule_id


def tags_from_id(rule_id: str) -> list[str]:
    """One category tag from the id's leading words.

    The tag is the first two content words of the id, with any connective
    between them (``and``, ``or``, ``in``, ...) kept, e.g.
    ``sign_and_trade_3_to_4_year`` -> ``["sign and trade"]`` and
    ``maximum_salary_for_player_7_to_9_year_service`` -> ``["maximum salary"]``.
    """
    words = [w for w in rule_id.split("_") if w]
    taken: list[str] = []
    content = 0
    for word in words:
        if word in _CONNECTIVES and not content:
            continue
        taken.append(word)
        if word not in _CONNECTIVES:
            content += 1
        if content == 2:
            break
    while taken and taken[-1] in _CONNECTIVES:
        taken.pop()
    return [" ".join(taken)] if taken else []


def catalog_rules(data_dir: str | Path) -> list[Rule]:
    """The rule catalog as :class:`Rule` objects.

    Each rule's condition, action and source text are the catalog
    description; the name is the id with underscores as spaces, cut to eight
    words; the tag comes from the id's leading words (:func:`tags_from_id`).

    Args:
        data_dir: The RuleArena NBA data directory.

    Returns:
        Rules in catalog order.

    Raises:
        NbaDataError: When the catalog is missing, malformed or repeats an id.
    """
    file = _check_dir(data_dir) / CATALOG_FILE
    entries = _read_json(file)
    if not isinstance(entries, list):
        raise NbaDataError(f"{file} should hold a JSON list of rules")
    rules: list[Rule] = []
    seen: set[str] = set()
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("rule_id") or not entry.get("description"):
            raise NbaDataError(f"{file}: entry {position} needs a rule_id and a description")
        rule_id, description = str(entry["rule_id"]).strip(), " ".join(str(entry["description"]).split())
        if rule_id in seen:
            raise NbaDataError(f"{file}: rule id {rule_id!r} appears twice")
        seen.add(rule_id)
        rules.append(
            Rule(
                rule_id=rule_id,
                rule_name=rule_name_from_id(rule_id),
                condition=description,
                action=description,
                source_text=description,
                category_tags=tags_from_id(rule_id),
                document_id=CATALOG_DOCUMENT_ID,
            )
        )
    return rules


def gold_in_catalog(problem: NbaProblem, catalog_ids: Collection[str]) -> tuple[str, ...]:
    """The problem's gold ids that the catalog holds (the others cannot be retrieved)."""
    return tuple(g for g in problem.gold if g in catalog_ids)


@dataclass(frozen=True)
class GoldCoverage:
    """How much of the gold the catalog covers.

    Attributes:
        n_gold: Gold ids over all problems (repeats within a problem counted once).
        n_missing: Of those, ids absent from the catalog.
        missing_ids: Distinct absent ids, sorted.
        problems_affected: Problems with at least one absent gold id.
    """

    n_gold: int
    n_missing: int
    missing_ids: tuple[str, ...]
    problems_affected: int


def gold_coverage(problems: Iterable[NbaProblem], catalog_ids: Collection[str]) -> GoldCoverage:
    """Count the gold ids that :func:`gold_in_catalog` drops."""
    n_gold = n_missing = affected = 0
    missing: set[str] = set()
    for problem in problems:
        absent = [g for g in problem.gold if g not in catalog_ids]
        n_gold += len(problem.gold)
        n_missing += len(absent)
        affected += bool(absent)
        missing.update(absent)
    return GoldCoverage(
        n_gold=n_gold, n_missing=n_missing, missing_ids=tuple(sorted(missing)), problems_affected=affected
    )
