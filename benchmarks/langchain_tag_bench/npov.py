"""The NPOV (neutral point of view) benchmark: cases, executor replies and judge scores.

Each case is one biased sentence and a one-sentence description of how it
breaks the policy. An executor rewrites the sentence (given matched rules,
all rules or retrieved chunks, depending on the method) and an LLM judge
scores the rewrite:

* **VFR** (violation fully fixed): 0 or 1.
* **Remediation, Preservation, Tone, Fluency**: integers from 1 to 5.

Pass-through is blocked before the judge is called: a rewrite whose
character similarity to the original exceeds :data:`AUTO_FAIL_SIMILARITY`
scores VFR 0 with no judge call. Character similarity is rapidfuzz's
normalized Indel similarity, ``fuzz.ratio(a, b) / 100`` on the two strings
with surrounding whitespace stripped: ``1 - (insertions + deletions) /
(len(a) + len(b))``, so one substituted character in a 120-character
sentence gives ``1 - 2 / 240 ≈ 0.992``.

Judge replies are read leniently (fenced or embedded JSON, ``"true"`` /
``"yes"`` strings, numbers given as strings, scores clamped to 1..5). An
unreadable reply or a provider error is retried once; after that the case is
marked ``judge_failed`` and counts as VFR 0. Nothing here raises on a bad
reply.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from rapidfuzz import fuzz

from langchain_tag.calls._replies import message_text, parse_json_object
from langchain_tag.errors import ParseError
from langchain_tag_bench.data import BenchDataError
from langchain_tag_bench.prompts import npov_judge_messages

__all__ = [
    "AUTO_FAIL_SIMILARITY",
    "SCORE_NAMES",
    "NpovCase",
    "NpovRewrite",
    "NpovScores",
    "NpovSummary",
    "ajudge_rewrite",
    "ajudge_rewrites",
    "char_similarity",
    "is_pass_through",
    "judge_rewrite",
    "judge_rewrites",
    "load_cases",
    "parse_judge_reply",
    "parse_rewrite",
    "summarize_npov",
]

AUTO_FAIL_SIMILARITY = 0.98
"""A rewrite more similar than this to the original scores VFR 0 without a judge call."""

SCORE_NAMES = ("remediation", "preservation", "tone", "fluency")
"""The judge's 1-5 scores, in report order."""


# --------------------------------------------------------------------------
# Cases.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class NpovCase:
    """One benchmark case.

    Attributes:
        case_id: Unique id within its file (the 1-based line or row number
            when the file gives none).
        sentence: The biased sentence to rewrite.
        violation: One sentence describing how it breaks the policy.
    """

    case_id: str
    sentence: str
    violation: str

    @property
    def key(self) -> str:
        """A stable id for reports and caches (the case id)."""
        return self.case_id


_ID_FIELDS = ("id", "case_id")


def _case_from_record(record: Any, number: int, where: str, seen: dict[str, str]) -> NpovCase:
    if not isinstance(record, dict):
        kind = type(record).__name__
        raise BenchDataError(f"{where}: expected an object with 'sentence' and 'violation', got {kind}")
    fields: dict[str, str] = {}
    for name in ("sentence", "violation"):
        value = record.get(name)
        if value is None:
            raise BenchDataError(f"{where}: missing field {name!r}")
        if not isinstance(value, str):
            raise BenchDataError(f"{where}: field {name!r} must be a string, got {type(value).__name__}")
        if not value.strip():
            raise BenchDataError(f"{where}: field {name!r} is empty")
        fields[name] = value.strip()
    raw_id = next((record[k] for k in _ID_FIELDS if record.get(k) not in (None, "")), None)
    case_id = str(raw_id).strip() if raw_id is not None else str(number)
    if not case_id:
        case_id = str(number)
    if case_id in seen:
        raise BenchDataError(f"{where}: duplicate id {case_id!r} (first at {seen[case_id]})")
    seen[case_id] = where
    return NpovCase(case_id=case_id, sentence=fields["sentence"], violation=fields["violation"])


def _load_jsonl(path: Path, limit: int | None) -> list[NpovCase]:
    cases: list[NpovCase] = []
    seen: dict[str, str] = {}
    with path.open(encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, 1):
            if limit is not None and len(cases) >= limit:
                break
            if not line.strip():
                continue
            where = f"{path}, line {number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BenchDataError(f"{where}: not valid JSON ({exc.msg})") from exc
            cases.append(_case_from_record(record, number, where, seen))
    return cases


def _load_table(path: Path, limit: int | None, delimiter: str) -> list[NpovCase]:
    cases: list[NpovCase] = []
    seen: dict[str, str] = {}
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        header = [name.strip() for name in reader.fieldnames or []]
        missing = [name for name in ("sentence", "violation") if name not in header]
        if missing:
            raise BenchDataError(f"{path}, line 1: header lacks column(s) {', '.join(map(repr, missing))}")
        reader.fieldnames = header
        for number, row in enumerate(reader, 1):
            if limit is not None and len(cases) >= limit:
                break
            where = f"{path}, row {number} (line {reader.line_num})"
            if None in row:
                raise BenchDataError(f"{where}: more fields than the header has")
            if all(not (value or "").strip() for value in row.values()):
                continue
            cases.append(_case_from_record(row, number, where, seen))
    return cases


def load_cases(path: str | Path, limit: int | None = None) -> list[NpovCase]:
    """Load NPOV cases from a JSONL, CSV or TSV file.

    JSONL (any suffix other than ``.csv``/``.tsv``): one JSON object per line
    with ``sentence`` and ``violation`` and optionally ``id`` or ``case_id``;
    blank lines are skipped. CSV/TSV: a header row naming the same columns.
    A case without an id gets its 1-based line number (JSONL) or data-row
    number (CSV/TSV, header not counted).

    Args:
        path: The file.
        limit: Read at most this many cases (from the top).

    Returns:
        The cases in file order.

    Raises:
        BenchDataError: When the file is missing, or a line is not a JSON
            object, lacks a field, has an empty sentence or violation, or
            repeats an id. The message names the path and the line or row.
    """
    file = Path(path)
    if not file.is_file():
        raise BenchDataError(f"{file}: NPOV cases file not found")
    suffix = file.suffix.lower()
    if suffix == ".csv":
        return _load_table(file, limit, ",")
    if suffix == ".tsv":
        return _load_table(file, limit, "\t")
    return _load_jsonl(file, limit)


# --------------------------------------------------------------------------
# Pass-through check.
# --------------------------------------------------------------------------
def char_similarity(a: str, b: str) -> float:
    """Character-level similarity of two strings, in [0, 1].

    This is rapidfuzz's normalized Indel similarity, ``fuzz.ratio(a, b) /
    100``, computed after stripping surrounding whitespace from both strings:
    ``1 - (insertions + deletions) / (len(a) + len(b))``. A substitution
    costs one deletion plus one insertion. Two empty strings are identical
    (1.0).

    Args:
        a: One string (usually the original sentence).
        b: The other (usually the rewrite).
    """
    return fuzz.ratio(a.strip(), b.strip()) / 100.0


def is_pass_through(original: str, rewrite: str) -> bool:
    """Whether a rewrite is too close to the original to count (similarity > :data:`AUTO_FAIL_SIMILARITY`)."""
    return char_similarity(original, rewrite) > AUTO_FAIL_SIMILARITY


# --------------------------------------------------------------------------
# Executor replies.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class NpovRewrite:
    """An executor reply read as the NPOV three-line format.

    Attributes:
        applied_rules: Rule (or passage) ids from the ``Applied rules:`` line;
            empty for ``NONE``.
        reasoning: The ``Reasoning:`` line, or ``""``.
        rewrite: The rewritten sentence.
        parsed: ``False`` when the ``Rewrite:`` line was missing and the
            rewrite is a fallback (last plain line, or the original).
    """

    applied_rules: tuple[str, ...]
    reasoning: str
    rewrite: str
    parsed: bool


_LABELS = {
    "applied rules": "applied",
    "applied rule": "applied",
    "rules applied": "applied",
    "reasoning": "reasoning",
    "reason": "reasoning",
    "rewrite": "rewrite",
    "rewritten sentence": "rewrite",
    "revised sentence": "rewrite",
}
_LABEL_LINE = re.compile(
    r"^[\s>#*_-]*(" + "|".join(sorted(_LABELS, key=len, reverse=True)) + r")[\s*_]*:[\s*_]*(.*?)\s*$",
    re.IGNORECASE,
)
_FENCE_LINE = re.compile(r"^\s*(```|~~~)")
_NONE_WORDS = {"none", "n/a", "na", "-", "no rules", "no rule", "nothing", "(none)"}
_UNCHANGED = {"none", "unchanged", "(unchanged)", "no change", "no changes", "n/a", "same as input"}
_ID_SPLIT = re.compile(r"[,;\s]+")
_QUOTES = {'"': '"', "“": "”", "'": "'"}


def _label(line: str) -> tuple[str, str] | None:
    found = _LABEL_LINE.match(line)
    if found is None:
        return None
    return _LABELS[found.group(1).lower()], found.group(2)


def _clean_value(text: str) -> str:
    text = text.strip()
    if text.endswith("**") and text.count("**") == 1:
        text = text[:-2].rstrip()
    return text


def _unquote(text: str, original: str) -> str:
    close = _QUOTES.get(text[:1])
    if close and len(text) >= 2 and text.endswith(close) and not original.strip().startswith(text[0]):
        return text[1:-1].strip()
    return text


def _rule_ids(text: str) -> tuple[str, ...]:
    value = _clean_value(text).strip().strip(".")
    if value.lower() in _NONE_WORDS:
        return ()
    ids = (token.strip("[]().`*'\"") for token in _ID_SPLIT.split(value))
    out = tuple(dict.fromkeys(t for t in ids if t and t.lower() not in _NONE_WORDS and t.lower() != "and"))
    return out


def parse_rewrite(reply: str, original: str) -> NpovRewrite:
    """Read an executor reply in the three-line NPOV format.

    The format is ``Applied rules: <ids or NONE>`` / ``Reasoning: <one
    sentence>`` / ``Rewrite: <sentence>``. Labels are matched case-insensitively
    and may be wrapped in ``**bold**`` or preceded by list or heading marks;
    code-fence lines and blank lines are ignored. A rewrite that continues
    over several lines is joined with single spaces, up to the next label or
    blank line. ``Rewrite: unchanged`` (or ``NONE``) means the original.

    When the ``Rewrite:`` line is missing or empty, the rewrite falls back to
    the last non-empty line that is not a label, with ``parsed=False``; if
    there is none, it is the original sentence (which then fails the
    pass-through check), also with ``parsed=False``.

    Args:
        reply: The executor's reply text.
        original: The sentence that was to be rewritten.

    Returns:
        The parsed reply.
    """
    lines = [line for line in reply.splitlines() if not _FENCE_LINE.match(line)]
    applied: tuple[str, ...] = ()
    reasoning = ""
    rewrite: str | None = None
    plain: list[str] = []
    index = 0
    while index < len(lines):
        labelled = _label(lines[index])
        index += 1
        if labelled is None:
            text = _clean_value(lines[index - 1])
            if any(ch.isalnum() for ch in text):
                plain.append(text)
            continue
        kind, value = labelled
        if kind == "applied":
            applied = _rule_ids(value)
        elif kind == "reasoning":
            reasoning = _clean_value(value)
        else:
            parts = [_clean_value(value)] if value.strip() else []
            while index < len(lines) and _label(lines[index]) is None:
                text = lines[index].strip()
                if not text and parts:
                    break
                if text:
                    parts.append(_clean_value(text))
                index += 1
            joined = " ".join(p for p in parts if p)
            if joined:
                rewrite = joined
    if rewrite is not None:
        rewrite = _unquote(rewrite, original)
        if rewrite.strip().lower().strip(".") in _UNCHANGED:
            rewrite = original
        return NpovRewrite(applied, reasoning, rewrite, True)
    fallback = _unquote(plain[-1], original) if plain else original
    return NpovRewrite(applied, reasoning, fallback, False)


# --------------------------------------------------------------------------
# Judge scores.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class NpovScores:
    """The judge's scores for one rewrite.

    Attributes:
        vfr: 1 if the judge found the violation fully fixed, else 0 (also 0
            when auto-failed or when the judge failed).
        remediation: 1-5, how fully the described violation is removed.
        preservation: 1-5, how much factual content is kept with nothing added.
        tone: 1-5, how neutral and encyclopedic the rewrite reads.
        fluency: 1-5, how grammatical and natural it is.
        similarity: Character similarity of rewrite and original (see
            :func:`char_similarity`).
        auto_failed: The rewrite was a pass-through; the judge was not called.
        judge_failed: No readable judgment after the retry (or the provider
            kept failing); scores are ``None``.
        judge_reply: The last judge reply, or the provider error text.
        prompt_tokens: Judge input tokens over all attempts (from
            ``usage_metadata``; 0 when the provider gives none).
        completion_tokens: Judge output tokens over all attempts.
        reason: The judge's one-sentence reason, when it gave one.
        attempts: Judge calls made (0 when auto-failed).
    """

    vfr: int
    remediation: int | None
    preservation: int | None
    tone: int | None
    fluency: int | None
    similarity: float
    auto_failed: bool
    judge_failed: bool
    judge_reply: str
    prompt_tokens: int
    completion_tokens: int
    reason: str = ""
    attempts: int = 0

    @property
    def judged(self) -> bool:
        """Whether the scores come from a readable judgment."""
        return not (self.auto_failed or self.judge_failed)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)


_TRUE = {"true", "yes", "y", "1", "fixed", "fully fixed"}
_FALSE = {"false", "no", "n", "0", "not fixed", "partially", "partial"}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _judge_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".\"'").lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def _judge_score(value: Any) -> int | None:
    number: float | None = None
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        found = _NUMBER.search(value)
        number = float(found.group(0)) if found else None
    if number is None or math.isnan(number):
        return None
    return min(5, max(1, round(number)))


def parse_judge_reply(reply: str) -> dict[str, Any]:
    """Read a judge reply into ``violation_fixed``, the four scores and ``reason``.

    Accepts fenced, embedded or slightly malformed JSON (via
    :func:`~langchain_tag.calls._replies.parse_json_object`), booleans written as
    ``"true"``/``"yes"``/``1``, and scores written as strings (``"4"``,
    ``"4/5"``); scores are rounded and clamped to 1..5. Keys are matched
    case-insensitively.

    Args:
        reply: The judge's reply text.

    Returns:
        ``{"violation_fixed": bool, "remediation": int, ..., "reason": str}``.

    Raises:
        ParseError: When there is no object, or ``violation_fixed`` or any of
            the four scores is missing or unreadable.
    """
    obj = parse_json_object(reply.replace("**", ""), expect_key=None)
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    fixed = _judge_bool(lowered.get("violation_fixed", lowered.get("vfr")))
    if fixed is None:
        raise ParseError(f"judge reply has no readable violation_fixed: {reply[:160]!r}")
    out: dict[str, Any] = {"violation_fixed": fixed}
    for name in SCORE_NAMES:
        score = _judge_score(lowered.get(name))
        if score is None:
            raise ParseError(f"judge reply has no readable {name} score: {reply[:160]!r}")
        out[name] = score
    reason = lowered.get("reason", "")
    out["reason"] = reason if isinstance(reason, str) else json.dumps(reason)
    return out


@dataclass
class _Pending:
    """Mutable bookkeeping for one judged rewrite."""

    case: NpovCase
    rewrite: str
    similarity: float
    reply: str = ""
    parsed: dict[str, Any] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 0

    def messages(self) -> list[BaseMessage]:
        return npov_judge_messages(sentence=self.case.sentence, violation=self.case.violation, rewrite=self.rewrite)

    def absorb(self, reply: Any) -> bool:
        """Record one reply; return whether it gave a readable judgment."""
        self.attempts += 1
        if isinstance(reply, BaseException):
            self.reply = f"{type(reply).__name__}: {reply}"
            return False
        if isinstance(reply, AIMessage) and reply.usage_metadata:
            self.prompt_tokens += reply.usage_metadata.get("input_tokens", 0)
            self.completion_tokens += reply.usage_metadata.get("output_tokens", 0)
        self.reply = message_text(reply)
        try:
            self.parsed = parse_judge_reply(self.reply)
        except ParseError:
            return False
        return True

    def scores(self) -> NpovScores:
        p = self.parsed or {}
        return NpovScores(
            vfr=int(bool(p.get("violation_fixed", False))),
            remediation=p.get("remediation"),
            preservation=p.get("preservation"),
            tone=p.get("tone"),
            fluency=p.get("fluency"),
            similarity=self.similarity,
            auto_failed=False,
            judge_failed=self.parsed is None,
            judge_reply=self.reply,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            reason=str(p.get("reason", "")),
            attempts=self.attempts,
        )


def _auto_failed(similarity: float) -> NpovScores:
    return NpovScores(
        vfr=0,
        remediation=None,
        preservation=None,
        tone=None,
        fluency=None,
        similarity=similarity,
        auto_failed=True,
        judge_failed=False,
        judge_reply="",
        prompt_tokens=0,
        completion_tokens=0,
    )


def _rewrite_text(rewrite: str | NpovRewrite) -> str:
    return rewrite.rewrite if isinstance(rewrite, NpovRewrite) else rewrite


def _prepare(
    cases: Sequence[NpovCase], rewrites: Sequence[str | NpovRewrite]
) -> tuple[list[NpovScores | None], dict[int, _Pending]]:
    if len(cases) != len(rewrites):
        raise ValueError(f"{len(rewrites)} rewrites for {len(cases)} cases")
    results: list[NpovScores | None] = [None] * len(cases)
    pending: dict[int, _Pending] = {}
    for index, (case, rewrite) in enumerate(zip(cases, rewrites, strict=True)):
        text = _rewrite_text(rewrite)
        similarity = char_similarity(case.sentence, text)
        if similarity > AUTO_FAIL_SIMILARITY:
            results[index] = _auto_failed(similarity)
        else:
            pending[index] = _Pending(case, text, similarity)
    return results, pending


def _absorb(pending: dict[int, _Pending], todo: list[int], replies: Sequence[Any]) -> list[int]:
    return [index for index, reply in zip(todo, replies, strict=True) if not pending[index].absorb(reply)]


def _finish(results: list[NpovScores | None], pending: dict[int, _Pending]) -> list[NpovScores]:
    for index, item in pending.items():
        results[index] = item.scores()
    return [r for r in results if r is not None]


def _config(max_concurrency: int, callbacks: Callbacks) -> RunnableConfig:
    return RunnableConfig(max_concurrency=max_concurrency, callbacks=callbacks, run_name="tag_npov_judge")


def judge_rewrites(
    llm: BaseChatModel,
    cases: Sequence[NpovCase],
    rewrites: Sequence[str | NpovRewrite],
    *,
    max_concurrency: int = 2,
    max_attempts: int = 2,
    callbacks: Callbacks = None,
) -> list[NpovScores]:
    """Score many rewrites with the judge model, in input order.

    Pass-through rewrites (similarity > :data:`AUTO_FAIL_SIMILARITY`) are
    auto-failed without a call. The rest are sent with ``llm.batch`` under
    ``max_concurrency``; unreadable replies and provider errors are retried,
    up to ``max_attempts`` calls per rewrite, then marked ``judge_failed``.

    Args:
        llm: The judge model (temperature 0 recommended).
        cases: The cases.
        rewrites: One rewrite per case: the sentence, or a parsed executor reply.
        max_concurrency: Most judge calls in flight at once.
        max_attempts: Calls per rewrite before it is marked ``judge_failed``.
        callbacks: Passed to every call.

    Returns:
        One :class:`NpovScores` per case, in the same order.

    Raises:
        ValueError: When ``cases`` and ``rewrites`` differ in length.
    """
    results, pending = _prepare(cases, rewrites)
    todo = list(pending)
    for _ in range(max_attempts):
        if not todo:
            break
        replies = llm.batch(
            [pending[i].messages() for i in todo], config=_config(max_concurrency, callbacks), return_exceptions=True
        )
        todo = _absorb(pending, todo, replies)
    return _finish(results, pending)


async def ajudge_rewrites(
    llm: BaseChatModel,
    cases: Sequence[NpovCase],
    rewrites: Sequence[str | NpovRewrite],
    *,
    max_concurrency: int = 2,
    max_attempts: int = 2,
    callbacks: Callbacks = None,
) -> list[NpovScores]:
    """Async twin of :func:`judge_rewrites` (uses ``llm.abatch``)."""
    results, pending = _prepare(cases, rewrites)
    todo = list(pending)
    for _ in range(max_attempts):
        if not todo:
            break
        replies = await llm.abatch(
            [pending[i].messages() for i in todo], config=_config(max_concurrency, callbacks), return_exceptions=True
        )
        todo = _absorb(pending, todo, replies)
    return _finish(results, pending)


def judge_rewrite(
    llm: BaseChatModel,
    case: NpovCase,
    rewrite: str | NpovRewrite,
    *,
    max_attempts: int = 2,
    callbacks: Callbacks = None,
) -> NpovScores:
    """Score one rewrite (see :func:`judge_rewrites`).

    Args:
        llm: The judge model.
        case: The case.
        rewrite: The rewritten sentence, or a parsed executor reply.
        max_attempts: Calls before the judgment is marked ``judge_failed``.
        callbacks: Passed to every call.

    Returns:
        The scores; never raises on a bad reply or a provider error.
    """
    return judge_rewrites(llm, [case], [rewrite], max_concurrency=1, max_attempts=max_attempts, callbacks=callbacks)[0]


async def ajudge_rewrite(
    llm: BaseChatModel,
    case: NpovCase,
    rewrite: str | NpovRewrite,
    *,
    max_attempts: int = 2,
    callbacks: Callbacks = None,
) -> NpovScores:
    """Async twin of :func:`judge_rewrite`."""
    scores = await ajudge_rewrites(
        llm, [case], [rewrite], max_concurrency=1, max_attempts=max_attempts, callbacks=callbacks
    )
    return scores[0]


# --------------------------------------------------------------------------
# Summary.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class NpovSummary:
    """Benchmark-level NPOV scores.

    Attributes:
        n: Cases.
        vfr: VFR in percent: mean ``vfr`` x 100 over all ``n`` cases
            (auto-fails and judge failures count as 0); ``None`` when ``n`` is 0.
        remediation: Mean remediation over judged cases; ``None`` if none.
        preservation: Mean preservation over judged cases.
        tone: Mean tone over judged cases.
        fluency: Mean fluency over judged cases.
        n_judged: Cases with a readable judgment.
        n_auto_failed: Pass-through rewrites (no judge call).
        n_judge_failed: Cases whose judge failed after the retry.
        mean_similarity: Mean character similarity of rewrite to original.
        prompt_tokens: Judge input tokens, summed.
        completion_tokens: Judge output tokens, summed.
    """

    n: int
    vfr: float | None
    remediation: float | None
    preservation: float | None
    tone: float | None
    fluency: float | None
    n_judged: int
    n_auto_failed: int
    n_judge_failed: int
    mean_similarity: float | None
    prompt_tokens: int
    completion_tokens: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize_npov(scores: Sequence[NpovScores]) -> NpovSummary:
    """Summarize per-case scores.

    Args:
        scores: One entry per case.

    Returns:
        VFR % over every case and mean 1-5 scores over judged cases only.
    """
    judged = [s for s in scores if s.judged]

    def mean_of(name: str) -> float | None:
        return _mean([getattr(s, name) for s in judged if getattr(s, name) is not None])

    n = len(scores)
    return NpovSummary(
        n=n,
        vfr=100.0 * sum(s.vfr for s in scores) / n if n else None,
        remediation=mean_of("remediation"),
        preservation=mean_of("preservation"),
        tone=mean_of("tone"),
        fluency=mean_of("fluency"),
        n_judged=len(judged),
        n_auto_failed=sum(1 for s in scores if s.auto_failed),
        n_judge_failed=sum(1 for s in scores if s.judge_failed),
        mean_similarity=_mean([s.similarity for s in scores]),
        prompt_tokens=sum(s.prompt_tokens for s in scores),
        completion_tokens=sum(s.completion_tokens for s in scores),
    )
