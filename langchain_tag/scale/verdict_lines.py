"""A verdicts file's line, defined once: the bulk jobs write it, the review page reads it.

A verdicts file (``langchain-tag match --inputs ... -o verdicts.jsonl``) holds one JSON object per input::

    {"id": "in-1", "matched": [{"rule_id", "score", "p_yes"}], "failed": [{"rule_id", "error"}]}

plus ``"error"`` when none of the input's pairs could be judged, and ``"pairs"`` (every pair's
``rule_id``, ``applies``, ``p_yes`` and ``score``, in rule order) with ``--all-pairs``. A cascade job's
entries also say which judge decided (``"judge"``: ``"strong"`` or ``"proxy"``) and, in ``pairs``, the
proxy's score (``"proxy_score"``). A line also says which rules it judged (``"judged"``: the judge prompt's
name and each rule's fingerprint, :func:`~langchain_tag.judging.verdict_cache.rule_fingerprint`), so a reader
can tell verdicts made for rules changed since; a line written before it did has none (:attr:`VerdictLine.judged`
is ``None``: unverified). :meth:`VerdictLine.to_line` writes that object and
:meth:`VerdictLine.from_line` reads it back, refusing a bad line with a message naming where it is.

Example:
    >>> line = VerdictLine("in-1", matched=[VerdictPair("R1", True, 0.9, 0.8)], failed={"R2": "no reply"})
    >>> line.to_line()
    {'id': 'in-1', 'matched': [{'rule_id': 'R1', 'score': 0.9, 'p_yes': 0.8}],
     'failed': [{'rule_id': 'R2', 'error': 'no reply'}]}
    >>> VerdictLine.from_line(line.to_line(), "verdicts.jsonl:1") == line
    True
    >>> VerdictLine.from_line({"id": "in-2"}, "verdicts.jsonl:2")
    Traceback (most recent call last):
    ...
    langchain_tag.scale.verdict_lines.VerdictLineError: verdicts.jsonl:2: not a verdicts record ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_tag.errors import TagError

__all__ = ["JudgedRules", "VerdictLine", "VerdictLineError", "VerdictPair"]


class VerdictLineError(TagError, ValueError):
    """A line of a verdicts file that is not a verdicts record: the message names the file and the line."""


@dataclass(frozen=True)
class VerdictPair:
    """One (input, rule) judgment as a verdicts line records it.

    Attributes:
        rule_id: The rule.
        applies: Whether the rule was matched (every ``matched`` entry was).
        score: The calibrated score the threshold was applied to (``None``: not recorded, or no logprobs).
        p_yes: The judge's raw P(YES), when recorded.
        judge: Which judge decided, in a cascade job's line (``"strong"`` or ``"proxy"``); else ``None``.
        proxy_score: The cascade proxy's score of the pair, in a cascade job's ``pairs``; else ``None``.
    """

    rule_id: str
    applies: bool
    score: float | None
    p_yes: float | None
    judge: str | None = None
    proxy_score: float | None = None

    def _extras(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.judge is not None:
            found["judge"] = self.judge
        if self.proxy_score is not None:
            found["proxy_score"] = self.proxy_score
        return found

    def matched_entry(self) -> dict[str, Any]:
        """The pair as a ``matched`` entry: ``{"rule_id", "score", "p_yes"}`` (and who decided it)."""
        return {"rule_id": self.rule_id, "score": self.score, "p_yes": self.p_yes, **self._extras()}

    def pair_entry(self) -> dict[str, Any]:
        """The pair as a ``pairs`` entry: ``{"rule_id", "applies", "p_yes", "score"}`` (and the cascade's fields)."""
        entry = {"rule_id": self.rule_id, "applies": self.applies, "p_yes": self.p_yes, "score": self.score}
        return {**entry, **self._extras()}

    @classmethod
    def from_entry(cls, item: Any, where: str, *, applies: bool | None) -> VerdictPair:
        """Read a ``matched`` (``applies=True``) or ``pairs`` (``applies=None``: the entry says) entry.

        Raises:
            VerdictLineError: Naming ``where``, when the entry is not such a pair.
        """
        if not isinstance(item, dict) or _text(item.get("rule_id")) is None:
            raise VerdictLineError(f"{where}: expected an object with a rule_id, got {item!r}")
        decided = item.get("applies", applies)
        if not isinstance(decided, bool):
            raise VerdictLineError(f"{where}: expected applies to be true or false, got {decided!r}")
        return cls(
            str(item["rule_id"]),
            decided,
            _number(item.get("score"), where),
            _number(item.get("p_yes"), where),
            judge=_text(item.get("judge")),
            proxy_score=_number(item.get("proxy_score"), where),
        )


@dataclass(frozen=True)
class JudgedRules:
    """What rules a verdicts line judged: ``{"prompt": name, "rules": {rule_id: fingerprint}}`` in the line.

    Attributes:
        prompt: The judge prompt's registry name (its version is in each fingerprint).
        rules: Rule id -> the fingerprint of the rule as judged
            (:func:`~langchain_tag.judging.verdict_cache.rule_fingerprint`), in rule order.
    """

    prompt: str
    rules: dict[str, str]

    def to_entry(self) -> dict[str, Any]:
        """The line's ``judged`` object."""
        return {"prompt": self.prompt, "rules": dict(self.rules)}

    @classmethod
    def from_entry(cls, value: Any, where: str) -> JudgedRules:
        """Read a line's ``judged`` object.

        Raises:
            VerdictLineError: Naming ``where``, when it is not such an object.
        """
        rules = value.get("rules") if isinstance(value, dict) else None
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("prompt"), str)
            or not isinstance(rules, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in rules.items())
        ):
            raise VerdictLineError(f'{where}: judged must be {{"prompt": name, "rules": {{rule_id: fingerprint}}}}')
        return cls(value["prompt"], dict(rules))


@dataclass
class VerdictLine:
    """One input's line of a verdicts file.

    Attributes:
        id: The input's id.
        matched: The matched rules' judgments, best score first.
        failed: Rule id -> the error of its failed judgment (counted NO), in rule order.
        pairs: Every pair's judgment, in rule order, when the job wrote them (``--all-pairs``); else ``None``.
        error: Why none of the input's pairs could be judged, if so.
        judged: Which rules were judged, by their fingerprints; ``None`` in a line written before lines said so.
    """

    id: str
    matched: list[VerdictPair] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    pairs: list[VerdictPair] | None = None
    error: str | None = None
    judged: JudgedRules | None = None

    def to_line(self) -> dict[str, Any]:
        """The line's JSON-ready object (keys in the order the file has them)."""
        line: dict[str, Any] = {
            "id": self.id,
            "matched": [p.matched_entry() for p in self.matched],
            "failed": [{"rule_id": rule_id, "error": error} for rule_id, error in self.failed.items()],
        }
        if self.error is not None:
            line["error"] = self.error
        if self.pairs is not None:
            line["pairs"] = [p.pair_entry() for p in self.pairs]
        if self.judged is not None:
            line["judged"] = self.judged.to_entry()
        return line

    @classmethod
    def from_line(cls, data: Any, where: str) -> VerdictLine:
        """Read a line's JSON value.

        Args:
            data: The line's JSON value.
            where: ``FILE:LINE``, for the messages.

        Raises:
            VerdictLineError: Naming ``where``, when the value is not a verdicts record.
        """
        if not isinstance(data, dict) or _text(data.get("id")) is None or not isinstance(data.get("matched"), list):
            raise VerdictLineError(
                f'{where}: not a verdicts record (expected {{"id", "matched", "failed"}}, '
                "as langchain-tag match --inputs writes)"
            )
        line = cls(id=str(data["id"]))
        line.matched = [VerdictPair.from_entry(item, where, applies=True) for item in data["matched"]]
        for item in data.get("failed") or []:
            if not isinstance(item, dict) or _text(item.get("rule_id")) is None:
                raise VerdictLineError(f"{where}: a failed judgment lacks its rule_id: {item!r}")
            line.failed[str(item["rule_id"])] = str(item.get("error") or "failed")
        if data.get("pairs") is not None:
            if not isinstance(data["pairs"], list):
                raise VerdictLineError(f"{where}: pairs must be a list")
            line.pairs = [VerdictPair.from_entry(item, where, applies=None) for item in data["pairs"]]
        line.error = _text(data.get("error"))
        if data.get("judged") is not None:
            line.judged = JudgedRules.from_entry(data["judged"], where)
        return line


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else (str(value) if isinstance(value, int) else None)


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise VerdictLineError(f"{where}: expected a number or null, got {value!r}")
    return float(value)
