"""Reading what the review page shows: the bulk job's verdicts, a gold file and an extraction report.

Every bad line is refused with an error naming the file and the line; a
verdicts or gold file that names rules the rule file does not hold is refused
with a message naming both files, and so are verdicts made for rules changed
since (their fingerprints, :func:`check_judged_rules`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_tag.calls._secrets import mask_secrets
from langchain_tag.errors import TagError
from langchain_tag.jsonl import JsonLineError, json_lines
from langchain_tag.judging.judge import resolve_judge_prompt
from langchain_tag.judging.verdict_cache import rule_fingerprint
from langchain_tag.rules import Rule
from langchain_tag.scale.verdict_lines import JudgedRules, VerdictLine, VerdictLineError, VerdictPair

__all__ = [
    "GOLD_KEYS",
    "Pair",
    "ReportView",
    "ReviewError",
    "UncoveredSpan",
    "VerdictRecord",
    "check_judged_rules",
    "check_rule_ids",
    "read_gold",
    "read_report",
    "read_source",
    "read_verdicts",
]

GOLD_KEYS = ("rule_ids", "relevant_rules", "violates")
"""The keys a gold line may give its rule ids under (the first found is used)."""


class ReviewError(TagError, ValueError):
    """A file given to the review cannot be used: the message names the file (and the line) at fault."""


Pair = VerdictPair
"""One (input, rule) judgment as a verdicts file records it (the one schema's :class:`VerdictPair`)."""


@dataclass
class VerdictRecord:
    """One input's line of a verdicts file (``langchain-tag match --inputs ... -o verdicts.jsonl``).

    Attributes:
        id: The input's id.
        line: The line of the verdicts file.
        matched: The matched rules' judgments, best score first.
        failed: Rule id -> the error of its failed judgment.
        pairs: Every pair's judgment, in rule order, when the job wrote them (``--all-pairs``); else ``None``.
        error: Why none of the input's pairs could be judged, if so.
        judged: The rules the line says it judged (``None``: a line written before lines said so).
    """

    id: str
    line: int
    matched: list[Pair] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    pairs: list[Pair] | None = None
    error: str | None = None
    judged: JudgedRules | None = None

    @classmethod
    def of(cls, verdict: VerdictLine, line: int) -> VerdictRecord:
        """The record of a verdicts line read from line ``line`` of its file.

        Its error texts pass through the one masker (:func:`~langchain_tag.calls._secrets.mask_secrets`): a file
        written before errors were masked, or by another tool, never puts a key on the page.
        """
        failed = {rule_id: mask_secrets(error) for rule_id, error in verdict.failed.items()}
        error = mask_secrets(verdict.error) if verdict.error is not None else None
        return cls(verdict.id, line, verdict.matched, failed, verdict.pairs, error, verdict.judged)

    def rule_ids(self) -> set[str]:
        """Every rule id the record names."""
        ids = {p.rule_id for p in self.matched} | set(self.failed)
        return ids | {p.rule_id for p in self.pairs or ()}


@dataclass(frozen=True)
class UncoveredSpan:
    """A sentence the extraction labelled normative but no surviving rule covers (from its report).

    Attributes:
        span_id: The span's id.
        text: Its verbatim text.
        document_id: The document it came from.
        start: Its recorded start offset.
        end: Its recorded end offset.
        normative_type: The label phase 1 gave it.
    """

    span_id: str
    text: str
    document_id: str
    start: int | None
    end: int | None
    normative_type: str


@dataclass
class ReportView:
    """What the page takes from an extraction report.

    Attributes:
        uncovered: The normative spans no rule covers.
        merged: Merged-away rule id -> the rule id it was merged into.
        conflicts: Rule id -> ids of the rules it was flagged as conflicting with.
        reviews: Rule id -> ids of the rules a person was asked to look at beside it.
        summary: The report's headline figures.
    """

    uncovered: list[UncoveredSpan] = field(default_factory=list)
    merged: dict[str, str] = field(default_factory=dict)
    conflicts: dict[str, list[str]] = field(default_factory=dict)
    reviews: dict[str, list[str]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def _lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line's number and JSON value; a line that is not JSON or not UTF-8 raises."""
    try:
        with path.open(encoding="utf-8-sig") as handle:
            for number, value in json_lines(handle, str(path)):
                if isinstance(value, JsonLineError):
                    raise ReviewError(str(value))
                yield number, value
    except UnicodeDecodeError as exc:
        raise ReviewError(f"{path}: not UTF-8 text ({exc.reason})") from None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else (str(value) if isinstance(value, int) else None)


def read_verdicts(path: str | Path) -> list[VerdictRecord]:
    """Read a verdicts file the bulk job wrote: ``{"id", "matched", "failed"[, "pairs"][, "error"]}`` per line.

    Raises:
        ReviewError: On a line that is not such a record, or an input id given twice.
        FileNotFoundError: When the file does not exist.
    """
    path = Path(path)
    records: list[VerdictRecord] = []
    first: dict[str, int] = {}
    for number, data in _lines(path):
        where = f"{path}:{number}"
        try:
            record = VerdictRecord.of(VerdictLine.from_line(data, where), number)
        except VerdictLineError as exc:
            raise ReviewError(str(exc)) from None
        if record.id in first:
            raise ReviewError(f"{where}: input id {record.id!r} given twice (first on line {first[record.id]})")
        first[record.id] = number
        records.append(record)
    return records


def check_rule_ids(records: Iterable[VerdictRecord], rule_ids: Collection[str], *, verdicts: Path, rules: Path) -> None:
    """Refuse verdicts made for another rule set: a rule id the rule file lacks, or (with pairs) one never judged.

    Raises:
        ReviewError: Naming both files, the first line at fault and the rule ids.
    """
    known = set(rule_ids)
    judged: set[str] = set()
    with_pairs = False
    for record in records:
        unknown = sorted(record.rule_ids() - known)
        if unknown:
            raise ReviewError(
                f"{verdicts}:{record.line}: judges rule {', '.join(map(repr, unknown[:3]))}"
                f"{' and others' if len(unknown) > 3 else ''}, which {rules} does not hold: these verdicts were made "
                f"with another rule file; review them with that one"
            )
        if record.pairs is not None and record.error is None:
            with_pairs = True
            judged.update(p.rule_id for p in record.pairs)
    missing = sorted(known - judged)
    if with_pairs and missing:
        raise ReviewError(
            f"{verdicts} judges none of {', '.join(map(repr, missing[:3]))}"
            f"{' and others' if len(missing) > 3 else ''} of {rules}: these verdicts were made with another rule file"
        )


def check_judged_rules(
    records: Sequence[VerdictRecord], rules: Sequence[Rule], *, verdicts: Path, rules_path: Path
) -> str | None:
    """Refuse verdicts made for rules changed since: a rule whose fingerprint is not the one a line judged.

    Each line names the judge prompt and the fingerprint of every rule it judged
    (:func:`~langchain_tag.scale._bulk_job.judged_rules`); the rules of ``rules`` with those ids are fingerprinted
    again the same way. Lines written before lines said so (or judged with a prompt of one's own, which cannot
    be looked up by name) cannot be checked: they are read, and a note saying so is returned for the page.

    Returns:
        The note on the lines that could not be checked, or ``None``.

    Raises:
        ReviewError: Naming both files, the first line at fault and the rules changed since.
    """
    by_id = {r.rule_id: r for r in rules}
    unverified = 0
    known: dict[str, dict[str, str]] = {}  # prompt name -> rule id -> its fingerprint now
    for record in records:
        judged = record.judged
        if judged is None or (judged.prompt not in known and _fingerprints(judged.prompt, rules, known) is None):
            unverified += 1
            continue
        now = known[judged.prompt]
        changed = [rule_id for rule_id, found in judged.rules.items() if rule_id in by_id and now[rule_id] != found]
        if changed:
            raise ReviewError(
                f"{verdicts}:{record.line}: judged rule {', '.join(map(repr, changed[:3]))}"
                f"{' and others' if len(changed) > 3 else ''} as it was before: its condition (or the "
                f"{judged.prompt!r} judge prompt) changed since, in {rules_path}; judge the inputs again"
            )
    if not unverified:
        return None
    lines = f"the {unverified} lines" if unverified == len(records) else f"{unverified} lines"
    return (
        f"unverified: {lines} of {verdicts} do not say which rules they judged (written before verdicts files "
        "did, or with a judge prompt of one's own): the rules may have changed since"
    )


def _fingerprints(prompt_name: str, rules: Sequence[Rule], known: dict[str, dict[str, str]]) -> dict[str, str] | None:
    """Every rule's fingerprint under the judge prompt named ``prompt_name`` (kept in ``known``); ``None``: unknown."""
    try:
        prompt = resolve_judge_prompt(prompt_name)
    except ValueError:
        return None
    version = prompt.scoring_version
    found = {r.rule_id: rule_fingerprint(prompt_version=version, rule_text=prompt.render_rule(r)) for r in rules}
    known[prompt_name] = found
    return found


def read_gold(path: str | Path, rule_ids: Collection[str], *, rules: Path) -> dict[str, set[str]]:
    """Read a gold file: ``{"id": ..., "rule_ids": [...]}`` per line (``relevant_rules`` or ``violates`` too).

    Returns:
        Input id -> the rule ids that should match it.

    Raises:
        ReviewError: On a bad line, an id given twice, or a rule id the rule file lacks (naming both files).
    """
    path = Path(path)
    known = set(rule_ids)
    gold: dict[str, set[str]] = {}
    for number, data in _lines(path):
        where = f"{path}:{number}"
        key = next((k for k in GOLD_KEYS if isinstance(data, dict) and k in data), None)
        if not isinstance(data, dict) or _text(data.get("id")) is None or key is None:
            raise ReviewError(f'{where}: not a gold record (expected {{"id": ..., "rule_ids": [...]}})')
        ids = data[key]
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ReviewError(f"{where}: {key} must be a list of rule ids")
        input_id = str(data["id"])
        if input_id in gold:
            raise ReviewError(f"{where}: input id {input_id!r} given twice")
        unknown = sorted(set(ids) - known)
        if unknown:
            raise ReviewError(
                f"{where}: names rule {', '.join(map(repr, unknown[:3]))}, which {rules} does not hold: "
                "this gold was written for another rule file"
            )
        gold[input_id] = set(ids)
    return gold


def _offset(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _relations(items: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in items or []:
        if isinstance(item, dict) and _text(item.get("rule_a")) and _text(item.get("rule_b")):
            a, b = str(item["rule_a"]), str(item["rule_b"])
            out.setdefault(a, []).append(b)
            out.setdefault(b, []).append(a)
    return out


def read_report(path: str | Path) -> ReportView:
    """Read an extraction report (``langchain-tag extract --report report.json``).

    Raises:
        ReviewError: When the file is not JSON or not such a report.
        FileNotFoundError: When the file does not exist.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise ReviewError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise ReviewError(f"{path}: not UTF-8 text ({exc.reason})") from None
    if not isinstance(data, dict) or not isinstance(data.get("uncovered_spans", []), list):
        raise ReviewError(f"{path}: not an extraction report (langchain-tag extract --report writes one)")
    uncovered: list[UncoveredSpan] = []
    for item in data.get("uncovered_spans") or []:
        if not isinstance(item, dict) or not _text(item.get("text")):
            raise ReviewError(f"{path}: an uncovered span without text: {item!r}")
        uncovered.append(
            UncoveredSpan(
                span_id=str(item.get("span_id") or f"S?{len(uncovered) + 1}"),
                text=str(item["text"]),
                document_id=str(item.get("document_id") or ""),
                start=_offset(item.get("start")),
                end=_offset(item.get("end")),
                normative_type=str(item.get("normative_type") or "normative"),
            )
        )
    merged = data.get("merged") or {}
    summary = {
        key: data[key] for key in ("faithfulness", "coverage", "independence", "counts") if data.get(key) is not None
    }
    return ReportView(
        uncovered=uncovered,
        merged={str(k): str(v) for k, v in merged.items()} if isinstance(merged, dict) else {},
        conflicts=_relations(data.get("conflicts")),
        reviews=_relations(data.get("reviews")),
        summary=summary,
    )


def read_source(path: str | Path) -> str:
    """The source document's text, as the extraction read it (HTML and PDF through the package's loaders).

    Raises:
        ReviewError: When a text file is not UTF-8.
        FileNotFoundError: When the file does not exist.
    """
    path = Path(path)
    if path.suffix.lower() in {".pdf", ".html", ".htm"}:
        from langchain_tag.integrations.loaders import load_document

        return load_document(path).page_content
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReviewError(f"{path}: not UTF-8 text ({exc.reason}, byte {exc.start})") from None
