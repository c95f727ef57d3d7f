"""End-to-end quality: policy -> rules -> every labelled input judged against every rule -> P / R / F1.

A quality set is a policy, the policy's own statements (verbatim sentences, each with an id; several entries may
share one text) and labelled cases (an input and the statements it violates, on a ``dev`` or ``test`` split). The
rules are extracted from the policy by :class:`~langchain_tag.extraction.RuleDocumentTransformer` (or read from a
rule file); each method then selects units per case, and a unit counts for policy statements:

* a rule counts for the statements whose text its ``source_text`` overlaps by at least half of the statement's
  characters or half of the source's characters (a rule mapping to no statement is a *non-rule*);
* a 500/100-character chunk counts for every statement at least half inside it.

Precision, recall and F1 are micro-averaged over (case, statement) pairs against the cases' ``violates``, per split.

Methods (rows): ``tag`` (the shipped default: ``calibration="default"``, matched = calibrated score >= threshold),
``tag-raw`` (the same judgments, matched = raw P(YES) >= 0.5, no calls of its own), ``tag-calibrated:FILE`` (a
saved :class:`~langchain_tag.judging.calibration.Calibration`; its pairs come from the shared verdict cache, so only its
reference inputs cost calls), ``tag-fitted`` (each rule's mean log-odds over
:data:`~langchain_tag.judging.calibration.defaults.TYPICAL_INPUTS` subtracted, then Platt and the threshold fitted on
the run's own dev cases and applied to test: how a default calibration for a new judge model or judge prompt is
made; written to
``OUT/fitted-calibration.json``), ``all_rules``, ``rules_similarity@K`` (K = 1, 3, 5) and ``chunks_similarity@K``
(K = 1, 2, 3, 5), top-K by embedding similarity in an in-memory Chroma; and LangChain's own LLM compressors over
the same rule documents (:mod:`~langchain_tag_bench.peers`): ``llm_filter`` (``LLMChainFilter``, one call per rule)
and ``listwise@K`` (``LLMListwiseRerank``, one call per case, the first K of its ranking; K = 1, 3, 5), run on a
``peer_llm`` (the judge's model as an ordinary chat model) with their calls and tokens counted by a callback handler.

Each (method, case) is one JSON line in ``OUT/records.jsonl`` (:class:`~langchain_tag_bench.runlog.RunLog`), the
judged ones with every judgment (rule id, raw P(YES), calibrated score), so a rerun resumes and makes no call it made
before; judgments also go to a SQLite verdict cache in ``OUT``. A record made with other rules, another judge or
another calibration is redone. :func:`quality_table` renders the markdown.
"""

from __future__ import annotations

import hashlib
import json
import logging
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.vectorstores import VectorStore

from langchain_tag.calls._identity import model_identity
from langchain_tag.judging._logodds import sigmoid
from langchain_tag.judging.calibration.defaults import MIN_DOMAIN_REFERENCES, TYPICAL_INPUTS
from langchain_tag.judging.calibration.model import (
    Calibration,
    CalibrationError,
    expected_calibration_error,
    fit_calibration,
)
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule, load_rules, save_rules
from langchain_tag_bench.data import BenchDataError, read_json
from langchain_tag_bench.runlog import RunLog

__all__ = [
    "CHUNK_KS",
    "DEFAULT_QUALITY_METHODS",
    "FITTED_FILE",
    "QUALITY_SETS",
    "RULE_KS",
    "ExtractionQuality",
    "QualityMethod",
    "QualityRow",
    "QualityRun",
    "QualitySet",
    "chunk_statements",
    "load_quality_set",
    "parse_quality_methods",
    "polarity_proxy",
    "quality_table",
    "rule_span",
    "rule_statements",
    "run_quality",
    "score_pairs",
    "spread",
    "statement_spans",
]

logger = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
QUALITY_SETS = ("demo", "ruff", "pep8", "nba", "wnc")
SPLITS = ("dev", "test")
RULE_KS = (1, 3, 5)
CHUNK_KS = (1, 2, 3, 5)
DEFAULT_QUALITY_METHODS = "tag-domain,tag,tag-raw,all_rules,rules_similarity,chunks_similarity"
RECORDS_FILE = "records.jsonl"
FITTED_FILE = "fitted-calibration.json"
FITTED_REFERENCE = Calibration(method="identity", reference_inputs=TYPICAL_INPUTS)
"""What ``tag-fitted`` judges with: each rule's mean log-odds over the typical inputs subtracted, nothing else."""
MIN_SHARE = 0.5
"""A unit counts for a statement it covers by at least this share (of the statement, or of a rule's source)."""

Kind = Literal[
    "tag",
    "tag-domain",
    "tag-raw",
    "tag-calibrated",
    "tag-fitted",
    "all_rules",
    "rules_similarity",
    "chunks_similarity",
    "llm_filter",
    "listwise",
]
LISTWISE_KS = (1, 3, 5)
"""The K of ``listwise`` without ``@K``; every K reads the one ranking recorded per case."""
DOMAIN_REFERENCES = 12
"""How many development inputs (unlabelled, spread over the split) ``tag-domain`` takes as its reference sample."""


# --------------------------------------------------------------------------
# The data.
# --------------------------------------------------------------------------
@dataclass
class QualitySet:
    """A policy, its statements and the labelled cases.

    Attributes:
        name: Short name (``demo``, ``ruff`` or the directory name).
        policy_path: Where the policy was read from (``None`` when it came from package data).
        policy_text: The policy.
        policy_id: The policy document's id (extraction prompts and rule provenance).
        statements: ``{"id", "text", ...}`` dicts; ``text`` is a verbatim passage of the policy.
        cases: ``{"id", "code" or "text", "violates", "split"}`` dicts.
        domain: Domain named in the extraction prompts.
        task_input: What the rules are applied to.
        demo_settings: Extract with the demo's settings (:func:`langchain_tag.cli.demo.demo_transformer`).
    """

    name: str
    policy_path: Path | None
    policy_text: str
    policy_id: str
    statements: list[dict[str, Any]]
    cases: list[dict[str, Any]]
    domain: str = "policy"
    task_input: str | None = None
    demo_settings: bool = False

    @property
    def policy(self) -> Document:
        """The policy as a document (what extraction and chunking read)."""
        return Document(page_content=self.policy_text, id=self.policy_id, metadata={"source": self.policy_id})

    def case_text(self, case: Mapping[str, Any]) -> str:
        """The input of a case: its ``code`` or its ``text``."""
        return str(case.get("code") if case.get("code") is not None else case.get("text", ""))


def _read_cases(path: Path) -> list[dict[str, Any]]:
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            cases.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise BenchDataError(f"{path} line {number}: not JSON ({exc.msg})") from exc
    return cases


def _one(directory: Path, patterns: Sequence[str], what: str) -> Path:
    for pattern in patterns:
        found = sorted(directory.glob(pattern))
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            names = ", ".join(p.name for p in found)
            raise BenchDataError(f"{directory}: several {what} files ({names}); keep one")
    raise BenchDataError(f"{directory}: no {what} file ({' or '.join(patterns)})")


def _check(quality_set: QualitySet) -> QualitySet:
    ids = [str(s.get("id", "")) for s in quality_set.statements]
    if not ids or any(not i for i in ids) or len(set(ids)) != len(ids):
        raise BenchDataError(f"{quality_set.name}: statements need unique, non-empty ids")
    known = set(ids)
    seen: set[str] = set()
    for case in quality_set.cases:
        cid = str(case.get("id", ""))
        if not cid or cid in seen:
            raise BenchDataError(f"{quality_set.name}: case ids must be unique and non-empty (got {cid!r})")
        seen.add(cid)
        if case.get("split") not in SPLITS:
            raise BenchDataError(f"{quality_set.name}: case {cid} has split {case.get('split')!r}, not dev or test")
        unknown = sorted(set(case.get("violates") or ()) - known)
        if unknown:
            raise BenchDataError(f"{quality_set.name}: case {cid} violates unknown statement(s) {', '.join(unknown)}")
        if not quality_set.case_text(case).strip():
            raise BenchDataError(f"{quality_set.name}: case {cid} has no code or text")
    statement_spans(quality_set)  # every statement must be verbatim in the policy
    return quality_set


def pep8_policy_text(path: str | Path | None = None) -> str:
    """The ``pep8`` set's policy: excerpts of PEP 8 (:func:`~langchain_tag_bench.pep8_cases.pep8_policy`)."""
    from langchain_tag_bench.pep8_cases import pep8_policy

    return pep8_policy(path)


def load_quality_set(
    name_or_dir: str | Path,
    *,
    cache_dir: str | Path | None = None,
    pep8_path: str | Path | None = None,
    data_path: str | Path | None = None,
) -> QualitySet:
    """A quality set by name (``demo``, ``ruff``, ``pep8``, ``nba``, ``wnc``) or from a directory.

    * ``demo``: the package's demo policy with ``benchmarks/data/demo`` (hand-written statements and cases).
    * ``ruff``: ``benchmarks/data/ruff`` (policy and statements); the cases are cut out of the running
      interpreter's standard library and labelled by ruff (:mod:`~langchain_tag_bench.ruff_cases`), built on first
      use into ``cache_dir`` (default: the package cache directory).
    * ``pep8``: excerpts of PEP 8 (read from ``pep8_path``, default the shared ``pep8/pep-0008.rst``) with
      ``benchmarks/data/pep8`` (statements and their pycodestyle codes); the cases are standard-library functions
      labelled by pycodestyle (:mod:`~langchain_tag_bench.pep8_cases`), built on first use into ``cache_dir``.
    * ``nba``: RuleArena's NBA rule catalog as the policy (one statement per gold rule id) and its problems as the
      cases, labelled with their gold rules (:mod:`~langchain_tag_bench.nba_cases`), read from ``data_path``
      (default the shared ``rulearena-nba``).
    * ``wnc``: the benchmark's neutral-wording policy (``benchmarks/examples/npov_policy.md``) against real Wikipedia
      sentences before and after a neutralising edit (:mod:`~langchain_tag_bench.wnc_cases`), read from
      ``data_path`` (default the shared ``wnc-sample``), labelled in ``benchmarks/data/wnc``.
    * a directory holding one policy (``*policy*.md`` / ``.txt``), one ``*statements*.json`` and one
      ``*cases*.jsonl``, and optionally ``set.json`` with the extraction ``domain`` and ``task_input``.

    Raises:
        BenchDataError: When a file is missing or malformed, or a statement is not verbatim in the policy.
    """
    if str(name_or_dir) == "demo":
        from langchain_tag.cli.demo import DEMO_DOMAIN, DEMO_TASK_INPUT, demo_policy

        policy = demo_policy()
        data = DATA_DIR / "demo"
        if not data.is_dir():
            raise BenchDataError(f"{data} not found: the demo set's data lives in the benchmarks source tree")
        return _check(
            QualitySet(
                name="demo",
                policy_path=None,
                policy_text=policy.page_content,
                policy_id=str(policy.id),
                statements=read_json(data / "demo_statements.json"),
                cases=_read_cases(data / "demo_cases.jsonl"),
                domain=DEMO_DOMAIN,
                task_input=DEMO_TASK_INPUT,
                demo_settings=True,
            )
        )
    if str(name_or_dir) == "ruff":
        from langchain_tag_bench import ruff_cases

        if cache_dir is None:
            from langchain_tag.local.weights import default_cache_dir

            cache_dir = default_cache_dir()
        cases_path = ruff_cases.cached_cases(Path(cache_dir))
        return _from_dir(DATA_DIR / "ruff", "ruff", cases_path)
    if str(name_or_dir) == "pep8":
        from langchain_tag_bench import pep8_cases

        if cache_dir is None:
            from langchain_tag.local.weights import default_cache_dir

            cache_dir = default_cache_dir()
        settings = read_json(DATA_DIR / "pep8" / "set.json")
        return _check(
            QualitySet(
                name="pep8",
                policy_path=None,
                policy_text=pep8_policy_text(pep8_path),
                policy_id="pep-0008-excerpts.rst",
                statements=read_json(pep8_cases.STATEMENTS_PATH),
                cases=_read_cases(pep8_cases.cached_cases(Path(cache_dir))),
                domain=str(settings["domain"]),
                task_input=settings["task_input"],
            )
        )
    if str(name_or_dir) == "nba":
        from langchain_tag_bench import nba_cases
        from langchain_tag_bench.nba import catalog_rules

        data_dir = nba_cases.nba_data_dir(data_path)
        catalog = catalog_rules(data_dir)
        return _check(
            QualitySet(
                name="nba",
                policy_path=None,
                policy_text=nba_cases.nba_policy(catalog),
                policy_id=nba_cases.NBA_POLICY_ID,
                statements=nba_cases.nba_statements(catalog),
                cases=nba_cases.nba_cases(data_dir, {r.rule_id for r in catalog}),
                domain=nba_cases.NBA_DOMAIN,
                task_input=nba_cases.NBA_TASK_INPUT,
            )
        )
    if str(name_or_dir) == "wnc":
        from langchain_tag_bench import wnc_cases

        return _check(
            QualitySet(
                name="wnc",
                policy_path=wnc_cases.POLICY_PATH,
                policy_text=wnc_cases.POLICY_PATH.read_text(encoding="utf-8"),
                policy_id=wnc_cases.POLICY_PATH.name,
                statements=read_json(wnc_cases.STATEMENTS_PATH),
                cases=wnc_cases.wnc_cases(wnc_cases.wnc_data_dir(data_path)),
                domain=wnc_cases.WNC_DOMAIN,
                task_input=wnc_cases.WNC_TASK_INPUT,
            )
        )
    directory = Path(name_or_dir).expanduser()
    if not directory.is_dir():
        raise BenchDataError(f"quality set {str(name_or_dir)!r}: not demo, ruff, pep8, nba, wnc or a directory")
    return _from_dir(directory, directory.name, None)


def _from_dir(directory: Path, name: str, cases_path: Path | None) -> QualitySet:
    policy_path = _one(directory, ("*policy*.md", "*policy*.txt"), "policy")
    statements_path = _one(directory, ("*statements*.json",), "statements")
    cases_path = cases_path or _one(directory, ("*cases*.jsonl",), "cases")
    settings = read_json(directory / "set.json") if (directory / "set.json").exists() else {}
    return _check(
        QualitySet(
            name=name,
            policy_path=policy_path,
            policy_text=policy_path.read_text(encoding="utf-8"),
            policy_id=policy_path.name,
            statements=read_json(statements_path),
            cases=_read_cases(cases_path),
            domain=str(settings.get("domain") or "policy"),
            task_input=settings.get("task_input"),
        )
    )


# --------------------------------------------------------------------------
# Units -> statements.
# --------------------------------------------------------------------------
def statement_spans(quality_set: QualitySet) -> dict[str, tuple[int, int]]:
    """Each statement's character span in the policy (statements sharing a text share a span).

    Raises:
        BenchDataError: When a statement's text is not found verbatim in the policy.
    """
    spans = {}
    for statement in quality_set.statements:
        start = quality_set.policy_text.find(statement["text"])
        if start < 0:
            raise BenchDataError(f"{quality_set.name}: statement {statement['id']} is not verbatim in the policy")
        spans[str(statement["id"])] = (start, start + len(statement["text"]))
    return spans


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def _find_loose(text: str, needle: str) -> tuple[int, int] | None:
    """Where ``needle`` is in ``text`` if whitespace runs may differ; ``None`` if it is not."""
    words = needle.split()
    if not words:
        return None
    flat: list[str] = []
    positions: list[int] = []
    for index, char in enumerate(text):
        if char.isspace():
            if flat and flat[-1] != " ":
                flat.append(" ")
                positions.append(index)
        else:
            flat.append(char)
            positions.append(index)
    start = "".join(flat).find(" ".join(words))
    if start < 0:
        return None
    end = start + len(" ".join(words)) - 1
    return positions[start], positions[end] + 1


def rule_span(rule: Rule, policy: str) -> tuple[int, int] | None:
    """The span of the policy a rule came from: its verified offsets, else where its ``source_text`` is."""
    start, end = rule.source_start, rule.source_end
    if start is not None and end is not None and 0 <= start < end <= len(policy):
        return start, end
    source = rule.source_text.strip()
    if not source:
        return None
    found = policy.find(source)
    if found >= 0:
        return found, found + len(source)
    return _find_loose(policy, source)


def rule_statements(rules: Sequence[Rule], spans: Mapping[str, tuple[int, int]], policy: str) -> dict[str, set[str]]:
    """Each rule's statements: its source overlaps the statement by half the statement's or half its own length."""
    mapped: dict[str, set[str]] = {}
    for rule in rules:
        span = rule_span(rule, policy)
        found: set[str] = set()
        if span is not None:
            for sid, statement in spans.items():
                shared = _overlap(span, statement)
                if shared and (
                    shared >= MIN_SHARE * (statement[1] - statement[0]) or shared >= MIN_SHARE * (span[1] - span[0])
                ):
                    found.add(sid)
        mapped[rule.rule_id] = found
    return mapped


def chunk_statements(chunks: Sequence[Document], spans: Mapping[str, tuple[int, int]]) -> dict[str, set[str]]:
    """Each chunk's statements: those with at least half of their text inside the chunk."""
    mapped: dict[str, set[str]] = {}
    for chunk in chunks:
        start = int(chunk.metadata["start_index"])
        span = (start, start + len(chunk.page_content))
        mapped[str(chunk.metadata["chunk_id"])] = {
            sid
            for sid, statement in spans.items()
            if _overlap(span, statement) >= MIN_SHARE * (statement[1] - statement[0])
        }
    return mapped


def score_pairs(
    predicted: Mapping[str, Iterable[str]], gold: Mapping[str, Iterable[str]]
) -> tuple[float, float, float]:
    """Micro precision, recall and F1 over (case, statement) pairs; cases are the keys of ``gold``."""
    tp = fp = fn = 0
    for case_id, wanted in gold.items():
        found, truth = set(predicted.get(case_id, ())), set(wanted)
        tp, fp, fn = tp + len(found & truth), fp + len(found - truth), fn + len(truth - found)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


# --------------------------------------------------------------------------
# Methods.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class QualityMethod:
    """One row of the quality table.

    Attributes:
        name: As given (``tag``, ``tag-raw``, ``tag-calibrated:FILE``, ``rules_similarity@3``, ...).
        kind: What it does.
        k: Top-k of the similarity rows.
        calibration_file: The calibration of ``tag-calibrated``.
    """

    name: str
    kind: Kind
    k: int | None = None
    calibration_file: str | None = None

    @property
    def record_method(self) -> str | None:
        """The records this row reads.

        ``tag-raw`` reads ``tag``'s, ``listwise@K`` the ``listwise`` ranking; ``all_rules`` needs none.
        """
        if self.kind == "all_rules":
            return None
        if self.kind == "listwise":
            return "listwise"
        return "tag" if self.kind == "tag-raw" else self.name

    @property
    def peer(self) -> bool:
        """Whether the row runs one of LangChain's LLM compressors (on the ``peer_llm``)."""
        return self.kind in ("llm_filter", "listwise")

    @property
    def judged(self) -> bool:
        """Whether the row is read from pairwise judgments."""
        return self.kind in ("tag", "tag-domain", "tag-raw", "tag-calibrated", "tag-fitted")

    @property
    def label(self) -> str:
        """Row label."""
        if self.kind == "tag":
            return "TAG, shipped default, typical references (`tag`)"
        if self.kind == "tag-domain":
            return "TAG, shipped default, dev inputs as references (`tag-domain`)"
        if self.kind == "tag-raw":
            return "TAG, raw P(YES) >= 0.5 (`tag-raw`)"
        if self.kind == "tag-calibrated":
            return f"TAG, calibration {Path(self.calibration_file or '').name} (`tag-calibrated`)"
        if self.kind == "tag-fitted":
            return "TAG, fitted on dev (`tag-fitted`)"
        if self.kind == "all_rules":
            return "all rules"
        if self.kind == "llm_filter":
            return "LangChain `LLMChainFilter` (`llm_filter`)"
        if self.kind == "listwise":
            return f"LangChain `LLMListwiseRerank` top-{self.k} (`listwise@{self.k}`)"
        units = "rules" if self.kind == "rules_similarity" else "chunks"
        return f"{units} + similarity top-{self.k}"


def parse_quality_methods(text: str) -> list[QualityMethod]:
    """Parse ``--methods``.

    The names: ``tag``, ``tag-raw``, ``tag-calibrated:FILE``, ``tag-fitted``, ``all_rules``,
    ``rules_similarity[@K]``, ``chunks_similarity[@K]`` (without ``@K``: K in 1, 3, 5 and 1, 2, 3, 5),
    ``llm_filter``, ``listwise[@K]`` (without ``@K``: K in 1, 3, 5), ``all`` (the default rows; not the peers).

    Raises:
        ValueError: On an unknown name, a bad K or a missing calibration file.
    """
    methods: dict[str, QualityMethod] = {}

    def add(method: QualityMethod) -> None:
        methods.setdefault(method.name, method)

    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part == "all":
            for name in DEFAULT_QUALITY_METHODS.split(","):
                for method in parse_quality_methods(name):
                    add(method)
        elif part in ("tag", "tag-domain", "tag-raw", "tag-fitted", "all_rules", "llm_filter"):
            add(QualityMethod(part, part))  # type: ignore[arg-type]
        elif part.startswith("tag-calibrated:"):
            path = part.partition(":")[2]
            if not path or not Path(path).expanduser().is_file():
                raise ValueError(f"method {part!r}: calibration file {path!r} not found")
            add(QualityMethod(part, "tag-calibrated", calibration_file=str(Path(path).expanduser())))
        else:
            base, _, k_text = part.partition("@")
            if base not in ("rules_similarity", "chunks_similarity", "listwise"):
                raise ValueError(
                    f"unknown method {part!r}; choose from tag, tag-domain, tag-raw, tag-calibrated:FILE, tag-fitted, "
                    "all_rules, rules_similarity[@K], chunks_similarity[@K], llm_filter, listwise[@K], all"
                )
            if k_text:
                if not k_text.isdigit() or int(k_text) < 1:
                    raise ValueError(f"method {part!r}: K must be a positive integer")
                ks: tuple[int, ...] = (int(k_text),)
            else:
                ks = {"rules_similarity": RULE_KS, "chunks_similarity": CHUNK_KS, "listwise": LISTWISE_KS}[base]
            for k in ks:
                add(QualityMethod(f"{base}@{k}", base, k=k))  # type: ignore[arg-type]
    if not methods:
        raise ValueError("no method given")
    return list(methods.values())


# --------------------------------------------------------------------------
# The run.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class QualityRow:
    """One method on one split.

    Attributes:
        method: The method.
        split: ``dev`` or ``test``.
        n: Cases scored.
        precision: Micro precision over (case, statement) pairs.
        recall: Micro recall.
        f1: Micro F1.
        units: Mean units (rules or chunks) selected per case.
        statements: Mean statements predicted per case.
        ece: Expected calibration error (10 bins) of the row's score over (case, rule) pairs of rules that map to
            a statement; ``None`` for unjudged rows.
        judge_calls: Judge calls made for the row's records (``None``: the row made none of its own).
        seconds: Mean seconds per case (``None``: as ``judge_calls``).
        calls: Mean model calls per case (``None``: as ``judge_calls``).
        prompt_tokens: Mean prompt tokens per case, as the model reported them (``None``: as ``judge_calls``).
        failures: Cases whose record holds an error (a peer that raised, or a judgment that failed).
    """

    method: QualityMethod
    split: str
    n: int
    precision: float
    recall: float
    f1: float
    units: float
    statements: float
    ece: float | None
    judge_calls: int | None
    seconds: float | None
    calls: float | None = None
    prompt_tokens: float | None = None
    failures: int = 0


@dataclass(frozen=True)
class ExtractionQuality:
    """How well the rule set covers the policy's statements.

    Attributes:
        rules: Rules in the set.
        non_rules: Ids of rules that map to no statement.
        statements: Distinct statements.
        covered: Statements some rule maps to.
        correct_polarity: Statements covered by a rule whose mean raw P(YES) on the dev cases violating the
            statement exceeds its mean on the other dev cases (``None``: no dev judgments to tell).
    """

    rules: int
    non_rules: list[str]
    statements: int
    covered: list[str]
    correct_polarity: list[str] | None

    @property
    def non_rules_per_20(self) -> float:
        """Non-rules per 20 rules."""
        return 20 * len(self.non_rules) / self.rules if self.rules else 0.0


@dataclass
class QualityRun:
    """The outcome of :func:`run_quality`.

    Attributes:
        quality_set: The set.
        rules: The rule set judged.
        rules_from: Where the rules came from (a file, or the extraction).
        methods: The rows, in table order.
        cases: The cases scored (the chosen splits, after ``limit``).
        log: Every record of the run directory.
        out_dir: The run directory.
        rule_map: Rule id -> statements.
        chunk_map: Chunk id -> statements.
        judge_model: The judge's identity (``None`` without a judge).
        judge_prompt: The judge prompt's version, when judged.
        peer_model: The identity of the peer rows' model, when they are chosen.
        threshold: The ``tag`` row's decision threshold, when judged.
        new_records: Records written by this call.
        judge_calls: Judge calls made by this call, the calibration's reference judgments included.
        seconds: Wall time of this call.
        notes: Remarks for the table.
    """

    quality_set: QualitySet
    rules: list[Rule]
    rules_from: str
    methods: list[QualityMethod]
    cases: list[dict[str, Any]]
    log: RunLog
    out_dir: Path
    rule_map: dict[str, set[str]]
    chunk_map: dict[str, set[str]]
    judge_model: str | None = None
    judge_prompt: str | None = None
    peer_model: str | None = None
    threshold: float | None = None
    new_records: int = 0
    judge_calls: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    _fitted: tuple[Calibration | None] | None = field(default=None, repr=False)

    def record(self, method: str, case_id: str) -> dict[str, Any] | None:
        """The record of ``(method, case)``."""
        return self.log.get(method, case_id)

    def _units(self, method: QualityMethod, case_id: str) -> list[str] | None:
        if method.kind == "all_rules":
            return [r.rule_id for r in self.rules]
        record = self.record(method.record_method or "", case_id)
        if record is None:
            return None
        if method.kind == "tag-raw":
            return [j["rule_id"] for j in record["judgments"] if _raw_yes(j)]
        if method.kind == "tag-fitted":
            fitted = self.fitted()
            if fitted is None:
                return None
            threshold = fitted.threshold if fitted.threshold is not None else 0.5
            return [j["rule_id"] for j in record["judgments"] if _fitted_score(fitted, j) >= threshold]
        if method.kind == "listwise":
            return list(record["units"])[: method.k or 1]
        return list(record["units"])

    def fitted(self) -> Calibration | None:
        """The ``tag-fitted`` calibration: Platt over the dev pairs, threshold with the best dev F1.

        The threshold is the midpoint between the best-scoring dev cut and the next lower dev score.

        Fitted once from the ``tag-fitted`` records of the dev cases (pairs of rules that map to a statement;
        label: the case violates it) and written to ``OUT/fitted-calibration.json``, where ``tag-calibrated:FILE``
        and :meth:`~langchain_tag.judging.calibration.Calibration.load` read it. ``None`` (with a note) when the dev
        split has no such records, or only one kind of label.
        """
        if self._fitted is not None:
            return self._fitted[0]
        dev = [c for c in self.cases if c["split"] == "dev"]
        records = {c["id"]: self.record("tag-fitted", c["id"]) for c in dev}
        features, labels = [], []
        for case in dev:
            record = records[case["id"]]
            violated = set(case.get("violates") or ())
            for judgment in record["judgments"] if record else ():
                mapped = self.rule_map.get(judgment["rule_id"])
                if mapped and judgment.get("feature") is not None:
                    features.append(float(judgment["feature"]))
                    labels.append(bool(mapped & violated))
        try:
            platt = fit_calibration(features, labels, method="platt")
        except CalibrationError as exc:
            self.notes.append(f"`tag-fitted` not fitted: {exc}")
            self._fitted = (None,)
            return None
        gold = {c["id"]: set(c.get("violates") or ()) for c in dev if records[c["id"]] is not None}

        def predicted(threshold: float) -> dict[str, set[str]]:
            found = {}
            for case_id in gold:
                judgments = records[case_id]["judgments"]  # type: ignore[index]
                units = [j["rule_id"] for j in judgments if _fitted_score(platt, j) >= threshold]
                found[case_id] = set().union(*(self.rule_map.get(u, set()) for u in units))
            return found

        candidates = {_fitted_score(platt, j) for cid in gold for j in records[cid]["judgments"]}  # type: ignore[index]
        best, best_f1 = best_threshold(candidates, lambda cut: score_pairs(predicted(cut), gold)[2])
        fitted = Calibration(
            method="platt",
            slope=round(platt.slope, 4),
            intercept=round(platt.intercept, 4),
            reference_inputs=FITTED_REFERENCE.reference_inputs,
            threshold=best,
            model=self.judge_model,
            prompt_version=self.judge_prompt,
            note=(
                f"fitted on the dev split of quality set {self.quality_set.name!r} ({len(gold)} cases, "
                f"{len(features)} pairs): reference over TYPICAL_INPUTS, Platt, threshold with the best dev F1"
            ),
        )
        fitted.save(self.out_dir / FITTED_FILE)
        self.notes.append(
            f"`tag-fitted`: Platt slope {fitted.slope:.2f}, intercept {fitted.intercept:.2f}, threshold "
            f"{best:.3f} (dev F1 {best_f1:.2f}), fitted on {len(features)} dev pairs; its dev row is in-sample; "
            f"saved to {self.out_dir / FITTED_FILE}"
        )
        self._fitted = (fitted,)
        return fitted

    def predicted(self, method: QualityMethod, case_id: str) -> set[str] | None:
        """The statements a method predicts for a case (``None``: not recorded)."""
        units = self._units(method, case_id)
        if units is None:
            return None
        table = self.chunk_map if method.kind == "chunks_similarity" else self.rule_map
        return set().union(*(table.get(u, set()) for u in units))

    def rows(self) -> list[QualityRow]:
        """One row per method and split (splits with no scored case are left out)."""
        rows = []
        for method in self.methods:
            for split in SPLITS:
                cases = [c for c in self.cases if c["split"] == split]
                if not cases:
                    continue
                predicted, gold, units = {}, {}, []
                for case in cases:
                    found = self._units(method, case["id"])
                    if found is None:
                        continue
                    predicted[case["id"]] = self.predicted(method, case["id"]) or set()
                    gold[case["id"]] = set(case.get("violates") or ())
                    units.append(len(found))
                if not gold:
                    continue
                precision, recall, f1 = score_pairs(predicted, gold)
                records = [self.record(method.record_method, cid) for cid in gold] if method.record_method else []
                records = [r for r in records if r]
                own = method.kind not in ("tag-raw", "all_rules")
                rows.append(
                    QualityRow(
                        method=method,
                        split=split,
                        n=len(gold),
                        precision=precision,
                        recall=recall,
                        f1=f1,
                        units=statistics.mean(units),
                        statements=statistics.mean(len(s) for s in predicted.values()),
                        ece=self._ece(method, list(gold)) if method.judged else None,
                        judge_calls=sum(int(r.get("calls", 0)) for r in records) if own else None,
                        seconds=statistics.mean(float(r.get("seconds", 0.0)) for r in records) if own else None,
                        calls=statistics.mean(int(r.get("calls", 0)) for r in records) if own else None,
                        prompt_tokens=(
                            statistics.mean(int(r.get("prompt_tokens") or 0) for r in records) if own else None
                        ),
                        failures=sum(1 for r in records if _failed(r)),
                    )
                )
        return rows

    def _ece(self, method: QualityMethod, case_ids: Sequence[str]) -> float | None:
        scores, labels = [], []
        for case_id in case_ids:
            record = self.record(method.record_method or "", case_id)
            violated = set(next(c for c in self.cases if c["id"] == case_id).get("violates") or ())
            for judgment in record["judgments"] if record else ():
                mapped = self.rule_map.get(judgment["rule_id"])
                if method.kind == "tag-fitted":
                    fitted = self.fitted()
                    value = _fitted_score(fitted, judgment) if fitted is not None else None
                else:
                    value = judgment["p_yes"] if method.kind == "tag-raw" else judgment["score"]
                if mapped and value is not None:
                    scores.append(float(value))
                    labels.append(bool(mapped & violated))
        return expected_calibration_error(scores, labels, bins=10) if scores else None

    def extraction(self) -> ExtractionQuality:
        """Statements covered, covered with the right polarity (judge-based proxy on dev), non-rules."""
        statements = [str(s["id"]) for s in self.quality_set.statements]
        covered = [s for s in statements if any(s in mapped for mapped in self.rule_map.values())]
        judged = next((m.record_method for m in self.methods if m.judged), None)
        dev = [c for c in self.cases if c["split"] == "dev"]
        polarity = None
        if judged is not None and dev:
            p_yes: dict[str, dict[str, float]] = {}
            for case in dev:
                record = self.record(judged, case["id"])
                if record is not None:
                    p_yes[case["id"]] = {
                        j["rule_id"]: j["p_yes"] for j in record["judgments"] if j["p_yes"] is not None
                    }
            if p_yes:
                gold = {c["id"]: set(c.get("violates") or ()) for c in dev if c["id"] in p_yes}
                polarity = polarity_proxy(self.rule_map, p_yes, gold)
        return ExtractionQuality(
            rules=len(self.rules),
            non_rules=[rid for rid, mapped in self.rule_map.items() if not mapped],
            statements=len(statements),
            covered=covered,
            correct_polarity=polarity,
        )


def best_threshold(scores: Iterable[float], f1_at: Callable[[float], float]) -> tuple[float, float]:
    """The decision threshold with the best F1 over the candidate cuts ``scores``, and that F1.

    Each distinct score is tried as a cut (matched: score >= cut); the first best wins, scanning upwards. The
    threshold goes midway into the gap below the best cut, not onto a development score.
    """
    cuts = sorted(set(scores))
    best_f1, best = -1.0, 0.5
    for i, cut in enumerate(cuts):
        f1 = f1_at(cut)
        if f1 > best_f1 + 1e-9:
            best_f1, best = f1, (cut + cuts[i - 1]) / 2 if i else cut
    return best, best_f1


def _fitted_score(calibration: Calibration, judgment: Mapping[str, Any]) -> float:
    """A ``tag-fitted`` judgment's calibrated score (0 for a failed judgment)."""
    feature = judgment.get("feature")
    if feature is None:
        return 0.0
    return sigmoid(calibration.slope * float(feature) + calibration.intercept)


def _failed(record: Mapping[str, Any]) -> bool:
    """Whether a record holds an error: a peer that raised, or a judgment that failed."""
    return bool(record.get("error")) or any(j.get("error") for j in record.get("judgments") or ())


def _raw_yes(judgment: Mapping[str, Any]) -> bool:
    if judgment.get("p_yes") is not None:
        return float(judgment["p_yes"]) >= 0.5
    return bool(judgment.get("applies")) and not judgment.get("error")  # no logprobs: the verdict itself


def polarity_proxy(
    rule_map: Mapping[str, set[str]],
    p_yes: Mapping[str, Mapping[str, float]],
    gold: Mapping[str, set[str]],
) -> list[str]:
    """Statements covered by a rule of correct polarity, judged by the judge (a proxy).

    A (rule, statement) pair has the right polarity when the rule's mean raw P(YES) over the cases that violate
    the statement is higher than over the cases that do not. Cases of one kind only: not counted.

    Args:
        rule_map: Rule id -> the statements it maps to.
        p_yes: Case id -> rule id -> raw P(YES) (the dev cases).
        gold: Case id -> the statements the case violates.

    Returns:
        The statements, sorted.
    """
    found: set[str] = set()
    for rule_id, statements in rule_map.items():
        for sid in statements:
            hit = [p[rule_id] for cid, p in p_yes.items() if rule_id in p and sid in gold.get(cid, set())]
            miss = [p[rule_id] for cid, p in p_yes.items() if rule_id in p and sid not in gold.get(cid, set())]
            if hit and miss and statistics.mean(hit) > statistics.mean(miss):
                found.add(sid)
    return sorted(found)


def spread(items: Sequence[Any], limit: int | None) -> list[Any]:
    """At most ``limit`` of ``items``, evenly spaced and in order (all of them when ``limit`` is ``None``)."""
    if limit is None or limit >= len(items):
        return list(items)
    return [items[i * len(items) // limit] for i in range(limit)]


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


def _progress(total: int, done: int, desc: str, show: bool | None) -> Any:
    from tqdm.auto import tqdm

    disable = (not sys.stderr.isatty()) if show is None else not show
    return tqdm(total=total, initial=done, desc=desc, unit="case", disable=disable, leave=True)


class _CallCounter:
    """Counts the judge's calls, the reference judgments (which take no callbacks) included."""

    def __init__(self, llm: BaseChatModel) -> None:
        self.llm = llm
        self.calls = 0
        self._lock = threading.Lock()

    def wrap(self) -> BaseChatModel:
        """Count every call of the model: each one, batched or not, is one ``invoke`` or ``ainvoke``."""
        counter = self
        original, aoriginal = self.llm.invoke, self.llm.ainvoke

        def counted(*args: Any, **kwargs: Any) -> Any:
            with counter._lock:
                counter.calls += 1
            return original(*args, **kwargs)

        async def acounted(*args: Any, **kwargs: Any) -> Any:
            with counter._lock:
                counter.calls += 1
            return await aoriginal(*args, **kwargs)

        object.__setattr__(self.llm, "invoke", counted)
        object.__setattr__(self.llm, "ainvoke", acounted)
        return self.llm

    def unwrap(self) -> None:
        """Give the model back its own methods."""
        for name in ("invoke", "ainvoke"):
            object.__delattr__(self.llm, name)


def _extract(
    quality_set: QualitySet,
    extractor: BaseChatModel | Callable[[], BaseChatModel],
    store: Path | None,
    max_concurrency: int,
) -> list[Rule]:
    llm = extractor if isinstance(extractor, BaseChatModel) else extractor()
    if quality_set.demo_settings:
        from langchain_tag.cli.demo import demo_transformer

        transformer = demo_transformer(llm, store=store)
    else:
        from langchain_tag.extraction import RuleDocumentTransformer

        transformer = RuleDocumentTransformer(
            llm,
            domain=quality_set.domain,
            task_input=quality_set.task_input,
            max_concurrency=max_concurrency,
            units_per_call=1,  # the demo's setting: one statement per phase-3 call suits small models
            store=store,
        )
    result = transformer.extract([quality_set.policy])
    logger.info("extraction: %s", result.report.summary().replace("\n", "; "))
    return list(result.rules)


def run_quality(
    quality_set: QualitySet,
    *,
    judge: BaseChatModel | None = None,
    peer_llm: BaseChatModel | None = None,
    extractor: BaseChatModel | Callable[[], BaseChatModel] | None = None,
    rules: Sequence[Rule] | str | Path | None = None,
    embeddings: Embeddings | Callable[[], Embeddings] | None = None,
    splits: Sequence[str] = SPLITS,
    out_dir: str | Path,
    methods: Sequence[QualityMethod] | str = DEFAULT_QUALITY_METHODS,
    limit: int | None = None,
    cache_dir: str | Path | None = None,
    threshold: float | None = None,
    judge_prompt: str = "applicability",
    max_concurrency: int = 1,
    show_progress: bool | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> QualityRun:
    """Judge and select for every case, one record per (method, case), resuming what ``out_dir`` holds.

    Args:
        quality_set: The set (:func:`load_quality_set`).
        judge: The pairwise judge (needed by the ``tag`` rows).
        peer_llm: The chat model of the ``llm_filter`` and ``listwise`` rows: the judge's model as an ordinary
            chat model (LangChain's compressors parse a free reply and a structured output, which the judge's
            one-token setting cannot give).
        extractor: The extraction model, or a factory called only when extraction runs; used when ``rules`` is
            not given.
        rules: The rule set (rules, or a JSONL rule file) instead of extracting.
        embeddings: Embeddings (or a factory) for the similarity rows; default: the packaged local embeddings.
        splits: The splits to score.
        out_dir: Run directory: ``records.jsonl``, ``rules.jsonl``, ``verdicts.sqlite``.
        methods: The rows (:func:`parse_quality_methods` or its text).
        limit: At most N cases per split, spread evenly over the split in file order (:func:`spread`), so a
            small run still samples every part of a set ordered by statement.
        cache_dir: Where the extraction store lives (``extraction-store.sqlite``; ``None``: no store).
        threshold: The ``tag`` row's threshold (``None``: the calibration's, else 0.5).
        judge_prompt: The judge prompt of every judged row (a name in
            :data:`~langchain_tag.judging.prompts.JUDGE_PROMPTS`); the shipped default calibration exists for
            ``"applicability"`` only, so compare other prompts on ``tag-fitted``.
        max_concurrency: Judgments (and extraction calls) in flight.
        show_progress: Progress bars (default: when stderr is a terminal).
        on_record: Called with each new record.

    Raises:
        ValueError: Without rules or an extractor, without a judge for judged rows, without a ``peer_llm`` for the
            peer rows, or with an empty rule set.
    """
    from langchain_tag.judging.verdict_cache import SQLiteVerdictCache

    start = time.perf_counter()
    chosen = parse_quality_methods(methods) if isinstance(methods, str) else list(methods)
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown or not splits:
        raise ValueError(f"splits must be among dev, test; got {', '.join(splits) or 'none'}")
    if any(m.judged for m in chosen) and judge is None:
        raise ValueError("a judge model is needed for the tag rows: " + ", ".join(m.name for m in chosen if m.judged))
    if any(m.peer for m in chosen) and peer_llm is None:
        raise ValueError("a peer_llm is needed for the LangChain rows: " + ", ".join(m.name for m in chosen if m.peer))
    if any(m.kind == "tag-raw" for m in chosen) and not any(m.kind == "tag" for m in chosen):
        chosen.insert(0, QualityMethod("tag", "tag"))  # tag-raw reads tag's judgments

    if rules is not None:
        rule_list = load_rules(rules) if isinstance(rules, (str, Path)) else list(rules)
        rules_from = f"rule file {rules}" if isinstance(rules, (str, Path)) else "rules given"
    elif extractor is not None:
        store_path = Path(cache_dir) / "extraction-store.sqlite" if cache_dir is not None else None
        rule_list = _extract(quality_set, extractor, store_path, max_concurrency)
        rules_from = "extracted" + (f" (finished calls kept in {store_path})" if store_path else "")
    else:
        raise ValueError("pass rules= (or --rules FILE) or an extractor")
    if not rule_list:
        raise ValueError(f"{quality_set.name}: the rule set is empty")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_rules(rule_list, out / "rules.jsonl")
    spans = statement_spans(quality_set)
    rule_map = rule_statements(rule_list, spans, quality_set.policy_text)
    from langchain_tag.integrations.similarity import chunk_documents

    chunks = chunk_documents([quality_set.policy])
    chunk_map = chunk_statements(chunks, spans)

    cases: list[dict[str, Any]] = []
    for split in (s for s in SPLITS if s in splits):
        cases += spread([c for c in quality_set.cases if c["split"] == split], limit)
    log = RunLog(out / RECORDS_FILE)
    rules_key = _fingerprint([r.model_dump(mode="json") for r in rule_list])
    rules_by_id = {r.rule_id: r for r in rule_list}
    run = QualityRun(
        quality_set=quality_set,
        rules=rule_list,
        rules_from=rules_from,
        methods=chosen,
        cases=cases,
        log=log,
        out_dir=out,
        rule_map=rule_map,
        chunk_map=chunk_map,
    )

    counter = _CallCounter(judge) if judge is not None else None
    cache = SQLiteVerdictCache(out / "verdicts.sqlite") if judge is not None else None
    embedder: list[Embeddings] = []
    # Names the embeddings in the similarity records' fingerprint without building them.
    embeddings_name = type(embeddings).__name__ if isinstance(embeddings, Embeddings) else "default"
    stores: dict[str, VectorStore] = {}
    # The listwise rows share one ranking per case, recorded once under ``listwise``.
    passes: list[QualityMethod] = []
    for method in chosen:
        if method.kind == "listwise":
            if not any(p.name == "listwise" for p in passes):
                passes.append(QualityMethod("listwise", "listwise"))
        elif method.record_method == method.name:
            passes.append(method)
    peer_documents = rule_documents_for_peers(rule_list) if any(m.peer for m in passes) else []

    def embed() -> Embeddings:
        if not embedder:
            if embeddings is None:
                from langchain_tag.local.models import get_embeddings

                embedder.append(get_embeddings())
            else:
                embedder.append(embeddings if isinstance(embeddings, Embeddings) else embeddings())
        return embedder[0]

    def store(kind: str) -> VectorStore:
        if kind not in stores:
            from langchain_tag.integrations.similarity import in_memory_chroma

            docs = [r.to_document(content="search") for r in rule_list] if kind == "rules_similarity" else chunks
            stores[kind] = in_memory_chroma(docs, embed())
        return stores[kind]

    if judge is not None:
        run.judge_model = model_identity(judge)
    redone = 0
    try:
        if counter is not None:
            counter.wrap()
        for method in passes:
            retriever: ApplicabilityRetriever | None = None
            if method.judged:
                assert judge is not None
                calibration: Calibration | str = "default"
                if method.calibration_file:
                    calibration = Calibration.load(method.calibration_file)
                elif method.kind == "tag-fitted":
                    calibration = FITTED_REFERENCE
                references = None
                if method.kind == "tag-domain":
                    dev = spread([c for c in quality_set.cases if c["split"] == "dev"], limit)
                    references = [quality_set.case_text(c) for c in spread(dev, DOMAIN_REFERENCES)]
                    if len({r for r in references if r.strip()}) < MIN_DOMAIN_REFERENCES:
                        run.notes.append(
                            f"`tag-domain` left out: it takes its references from the dev inputs, and the dev split "
                            f"has fewer than {MIN_DOMAIN_REFERENCES} distinct ones"
                        )
                        continue
                retriever = ApplicabilityRetriever(
                    llm=judge,
                    rules=rule_list,
                    predicate=judge_prompt,
                    calibration=calibration,  # type: ignore[arg-type]
                    threshold=threshold if method.kind == "tag" else None,
                    max_concurrency=max_concurrency,
                    cache=cache,
                    reference_inputs=references,
                )
                calibrated = retriever.judge.calibration
                run.judge_prompt = retriever.judge.prompt.scoring_version
                if method.kind == "tag":
                    run.threshold = retriever.judge.decision_threshold
                key = _fingerprint(
                    rules_key,
                    run.judge_model,
                    retriever.judge.prompt.scoring_version,
                    calibrated.to_dict() if calibrated else None,
                    retriever.judge.decision_threshold,
                )
            elif method.peer:
                assert peer_llm is not None
                run.peer_model = model_identity(peer_llm)
                key = _fingerprint(rules_key, run.peer_model, method.kind, _classic_version())
            else:
                source = rules_key if method.kind == "rules_similarity" else quality_set.policy_text
                key = _fingerprint(source, embeddings_name, method.k)
            todo = []
            for case in cases:
                old = log.get(method.name, case["id"])
                if old is None or old.get("fingerprint") != key:
                    todo.append(case)
                    redone += old is not None
            with _progress(
                len(cases), len(cases) - len(todo), f"{quality_set.name} {method.name}", show_progress
            ) as bar:
                for case in todo:
                    if method.peer:
                        assert peer_llm is not None
                        record = _peer_select(method, case, quality_set.case_text(case), peer_llm, peer_documents, key)
                    else:
                        record = _select(method, case, quality_set.case_text(case), retriever, store, key, rules_by_id)
                    log.append(record)
                    run.new_records += 1
                    if on_record is not None:
                        on_record(record)
                    bar.update(1)
    finally:
        if counter is not None:
            counter.unwrap()
            run.judge_calls = counter.calls
    if redone:
        run.notes.append(f"{redone} records were redone: made with other rules, another judge or calibration")
    run.seconds = time.perf_counter() - start
    return run


def rule_documents_for_peers(rules: Sequence[Rule]) -> list[Document]:
    """The rule documents the peers receive (those the ``rules_similarity`` rows search)."""
    from langchain_tag_bench.peers import rule_documents

    return rule_documents(rules)


def _classic_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("langchain-classic")
    except PackageNotFoundError:  # pragma: no cover - a source checkout
        return "unknown"


def _peer_select(
    method: QualityMethod,
    case: Mapping[str, Any],
    text: str,
    llm: BaseChatModel,
    documents: Sequence[Document],
    key: str,
) -> dict[str, Any]:
    from langchain_tag_bench.peers import filter_rules, listwise_rank

    outcome = (filter_rules if method.kind == "llm_filter" else listwise_rank)(llm, documents, text)
    record: dict[str, Any] = {
        "method": method.name,
        "key": case["id"],
        "split": case["split"],
        "fingerprint": key,
        "units": outcome.rule_ids,
        "calls": outcome.calls,
        "prompt_tokens": outcome.prompt_tokens,
        "completion_tokens": outcome.completion_tokens,
    }
    if outcome.error:
        record["error"] = outcome.error
    record["seconds"] = round(outcome.seconds, 3)
    return record


def _select(
    method: QualityMethod,
    case: Mapping[str, Any],
    text: str,
    retriever: ApplicabilityRetriever | None,
    store: Callable[[str], VectorStore],
    key: str,
    rules_by_id: Mapping[str, Rule],
) -> dict[str, Any]:
    began = time.perf_counter()
    record: dict[str, Any] = {"method": method.name, "key": case["id"], "split": case["split"], "fingerprint": key}
    if retriever is not None:
        result = retriever.match(text)
        judge = retriever.judge
        judgments = []
        for j in result.judgments:
            entry: dict[str, Any] = {
                "rule_id": j.rule_id,
                "p_yes": j.p_yes,
                "score": j.score,
                "applies": j.applies,
            }
            if method.kind in ("tag-fitted", "tag-domain") and j.p_yes is not None and j.error is None:
                reference, spread = judge.reference_log_odds(rules_by_id[j.rule_id])
                if reference is not None:
                    entry["feature"] = round(judge.calibration.feature(j.p_yes, reference, spread), 6)  # type: ignore[union-attr]
            if j.error:
                entry["error"] = j.error
            judgments.append(entry)
        record.update(
            threshold=retriever.judge.decision_threshold,
            units=[j.rule_id for j in result.matched],
            judgments=judgments,
            calls=result.calls,
            cache_hits=result.cache_hits,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
        )
    else:
        id_key = "rule_id" if method.kind == "rules_similarity" else "chunk_id"
        found = store(method.kind).similarity_search(text, k=method.k or 1)
        record["units"] = [str(d.metadata[id_key]) for d in found]
    record["seconds"] = round(time.perf_counter() - began, 3)
    return record


# --------------------------------------------------------------------------
# The table.
# --------------------------------------------------------------------------
def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def quality_table(run: QualityRun) -> str:
    """The markdown: one row per method and split, then the rule set's coverage of the policy, then notes."""
    qs = run.quality_set
    n_dev = sum(c["split"] == "dev" for c in run.cases)
    lines = [
        f"Quality set `{qs.name}`: {len(qs.statements)} statements, {len(run.cases)} cases scored "
        f"({n_dev} dev, {len(run.cases) - n_dev} test); {len(run.rules)} rules ({run.rules_from})"
        + (f"; judge {run.judge_model}, `tag` threshold {run.threshold:.2f}" if run.threshold is not None else "")
        + (f"; LangChain rows on {run.peer_model}" if run.peer_model else "")
        + ".",
        "",
        "| method | split | cases | P | R | F1 | units per case | statements per case | ECE | judge calls "
        "| s per case | calls per case | prompt tokens per case | failed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in run.rows():
        calls = "-" if row.judge_calls is None else f"{row.judge_calls:,}"
        lines.append(
            f"| {row.method.label} | {row.split} | {row.n} | {row.precision:.2f} | {row.recall:.2f} | {row.f1:.2f} | "
            f"{row.units:.2f} | {row.statements:.2f} | {_num(row.ece, 3)} | {calls} | {_num(row.seconds, 1)} | "
            f"{_num(row.calls, 1)} | {_num(row.prompt_tokens, 0)} | {row.failures} |"
        )
    ext = run.extraction()
    polarity = "-" if ext.correct_polarity is None else f"{len(ext.correct_polarity)}/{ext.statements}"
    lines += [
        "",
        "| rules | non-rules | non-rules per 20 rules | statements covered | covered with correct polarity (proxy) |",
        "|---|---|---|---|---|",
        f"| {ext.rules} | {len(ext.non_rules)} | {ext.non_rules_per_20:.1f} | {len(ext.covered)}/{ext.statements} | "
        f"{polarity} |",
        "",
        "Notes:",
        "- A rule counts for the statements its source text overlaps by at least half (of the statement or of the "
        "source); a chunk (500/100 characters) for the statements at least half inside it. P/R/F1 are micro over "
        "(case, statement) pairs.",
        "- ECE: 10 bins, over (case, rule) pairs of rules that map to a statement; label: the case violates it.",
        "- `tag-raw` reuses the `tag` judgments (no calls of its own). Judge calls count the pairs judged for each "
        "row's records; the reference judgments of a calibration are made once per rule on top "
        f"(this call made {run.judge_calls:,} judge calls in all).",
        "- Calls, prompt tokens and seconds are per case, from the records; `listwise@K` rows share one ranking call "
        "per case. A failed case (an error in its record) counts as selecting nothing.",
        "- Correct polarity is a judge-based proxy, not a reading of the rule: a statement counts when a rule mapping "
        "to it has a higher mean raw P(YES) on the dev cases that violate the statement than on the other dev cases.",
    ]
    if ext.non_rules:
        lines.append(f"- Non-rules (map to no statement): {', '.join(ext.non_rules)}.")
    missing = [s for s in (str(s["id"]) for s in qs.statements) if s not in ext.covered]
    if missing:
        lines.append(f"- Statements no rule maps to: {', '.join(missing)}.")
    lines += [f"- {note}" for note in run.notes]
    return "\n".join(lines) + "\n"
