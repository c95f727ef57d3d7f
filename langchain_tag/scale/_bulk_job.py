"""The bulk job's work on one input: claim its pairs, judge them, and make its verdicts line.

:func:`~langchain_tag.scale.bulk.match_corpus` runs one :class:`Job` over all its inputs; the records it makes
are :class:`~langchain_tag.scale.verdict_lines.VerdictLine` objects (:func:`result_record`, :func:`failure_record`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from langchain_tag.calls._recorded import RecordedReplies
from langchain_tag.errors import ProviderError, TagError
from langchain_tag.judging.cascade import CascadeResult
from langchain_tag.judging.results import JudgmentsFailedError
from langchain_tag.judging.verdict_cache import (
    Claims,
    ClaimWaitError,
    SQLiteVerdictCache,
    VerdictCacheError,
    VerdictStore,
    rule_fingerprint,
)
from langchain_tag.rules import Rule, rule_documents, rules_from_documents
from langchain_tag.scale._bulk_progress import PairRecorder, Progress
from langchain_tag.scale.inputs import InputItem, InputsError, encoding_error
from langchain_tag.scale.verdict_lines import JudgedRules, VerdictLine, VerdictPair

if TYPE_CHECKING:
    from langchain_tag.cascade_retriever import CascadeRetriever
    from langchain_tag.judging.results import Judgment, MatchResult
    from langchain_tag.retrievers import ApplicabilityRetriever

__all__ = ["Job", "Judged", "failure_record", "judged_rules", "result_record", "retriever_rules"]

Judged = Union["ApplicabilityRetriever", "CascadeRetriever"]
"""What the bulk job runs: a retriever (any judge behind it), or a cascade of two."""


def retriever_rules(retriever: Judged) -> list[Rule]:
    """The rules a retriever judges every input against (none when it draws candidates from a vector store)."""
    return rules_from_documents(rule_documents(retriever.rules))


def judged_rules(retriever: Judged, rules: Sequence[Rule]) -> JudgedRules | None:
    """What a verdicts line says it judged: the judge prompt's name and each rule's fingerprint (none without rules).

    A fingerprint is over the rule as the judge prompt renders it and that prompt's scoring version
    (:func:`~langchain_tag.judging.verdict_cache.rule_fingerprint`).
    """
    if not rules:
        return None
    prompt = retriever.judge.prompt
    version = prompt.scoring_version
    found = {r.rule_id: rule_fingerprint(prompt_version=version, rule_text=prompt.render_rule(r)) for r in rules}
    return JudgedRules(prompt.name, found)


def _p_yes(judgment: Judgment) -> float | None:
    """A judgment's raw P(YES) (named ``probability`` before ``p_yes``)."""
    value = getattr(judgment, "p_yes", None)
    return value if value is not None else getattr(judgment, "probability", None)


def result_record(
    item: InputItem, result: MatchResult, *, all_pairs: bool = False, judged: JudgedRules | None = None
) -> dict[str, Any]:
    """One input's JSON-ready result: its id, the matched rules (best score first) and the failed pairs.

    Only what the verdicts determine goes in (no call or token counts, no
    cache flags), so a resumed job writes the same bytes as a fresh one.

    Args:
        item: The input.
        result: Its match result.
        all_pairs: Also give every pair's decision, raw P(YES) and score, in rule order.
        judged: The rules judged (:func:`judged_rules`), for the line to say so.
    """
    line = VerdictLine(
        item.id,
        matched=[VerdictPair(j.rule_id, True, j.score, _p_yes(j)) for j in result.matched],
        failed={j.rule_id: j.error for j in result.failed if j.error is not None},
        judged=judged,
    )
    if all_pairs:
        line.pairs = [VerdictPair(j.rule_id, j.applies, j.score, _p_yes(j)) for j in result.judgments]
    return line.to_line()


def failure_record(
    item: InputItem, rules: Sequence[Rule], error: str, *, all_pairs: bool, judged: JudgedRules | None = None
) -> dict[str, Any]:
    """The result of an input none of whose pairs could be judged: every rule failed with ``error``."""
    line = VerdictLine(item.id, failed={r.rule_id: error for r in rules}, error=error, judged=judged)
    if all_pairs:
        line.pairs = [VerdictPair(r.rule_id, False, None, None) for r in rules]
    return line.to_line()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


@dataclass
class Job:
    """What every input of one bulk job shares."""

    retriever: Judged
    rules: list[Rule]
    per_input: int
    """Judgments per input (pairs, or halves of a contrast prompt's pairs)."""
    requests_per_input: int
    """Requests per input: one per judgment, or per question batch of a decision model."""
    all_pairs: bool
    progress: Progress

    to_judge: dict[str, int]
    """Input id -> its judgments the verdict cache lacked when the job started (only with a progress bar)."""

    claims: Claims | None = None
    """With a SQLite verdict cache: the pairs this job judges, so another job on the same file waits for them."""

    inputs: int = 0
    """How many inputs the job judges."""

    finished: int = 0
    """How many inputs are judged so far."""

    judged: JudgedRules | None = None
    """What every line says it judged (:func:`judged_rules`)."""

    @classmethod
    def start(cls, retriever: Judged, items: Sequence[InputItem], *, all_pairs: bool, show: bool | None) -> Job:
        rules = retriever_rules(retriever)
        halves = 2 if retriever.judge.prompt.negation is not None else 1
        count = len(rules) if rules else (retriever.candidates or 0)
        per_input = count * halves
        show = sys.stderr.isatty() if show is None else show
        to_judge = _not_cached(retriever, items, rules) if show and rules else {}
        total = len(items) * per_input
        cached = total - sum(to_judge.values()) if to_judge else 0
        progress = Progress(total, show, cached=cached)
        cache = retriever.judge.settings.cache
        claims = Claims(cache) if isinstance(cache, SQLiteVerdictCache) else None
        requests = retriever.judge.requests_for(per_input)
        judged = judged_rules(retriever, rules)
        return cls(
            retriever, rules, per_input, requests, all_pairs, progress, to_judge, claims, len(items), judged=judged
        )

    @contextmanager
    def running(self) -> Iterator[None]:
        """The job's lifetime: its claims count while it runs, and are dropped when it ends.

        However it ends (an interrupt too), the verdicts the cache holds back are committed.
        """
        cache = self.retriever.judge.settings.cache
        store = VerdictStore(cache) if cache is not None else None
        try:
            with self.claims if self.claims is not None else contextlib.nullcontext():
                yield
        except BaseException:
            if store is not None:
                with contextlib.suppress(Exception):  # the error on its way out says more
                    store.flush()
            raise
        else:
            if store is not None:
                store.flush()
        finally:
            self.progress.close()

    def recorder(self, item: InputItem) -> PairRecorder:
        if item.id in self.to_judge:
            return PairRecorder(self.to_judge[item.id], self.progress)
        requests = self.retriever.judge.requests(item.text, self.rules) if self.rules else []
        return PairRecorder(len(requests), self.progress)

    def finish(self, item: InputItem, outcome: MatchResult | BaseException, recorder: PairRecorder) -> dict[str, Any]:
        recorder.settle()
        self.finished += 1  # the first input is judged alone: nothing races this count for it
        if (
            self.finished == 1
            and self.inputs > 1
            and isinstance(outcome, ProviderError)
            and len(outcome.errors) == 1
            and not isinstance(getattr(self.retriever, "llm", None), RecordedReplies)  # no endpoint: every miss says
        ):
            raise ProviderError(
                f"the first input's requests all failed the same way, so the job stops before sending the other "
                f"{self.inputs - 1} inputs' (nothing was written): {outcome}",
                errors=outcome.errors,
            ) from outcome  # an endpoint that is down, or a wrong model or key, would fail every input alike
        if isinstance(outcome, JudgmentsFailedError):
            outcome = outcome.result
        if isinstance(outcome, BaseException):
            return failure_record(item, self.rules, _one_line(outcome), all_pairs=self.all_pairs, judged=self.judged)
        return result_record(item, outcome, all_pairs=self.all_pairs, judged=self.judged)

    def keys(self, item: InputItem) -> list[str]:
        """The verdict cache keys of ``item``'s pairs (none to claim without claims or rules)."""
        if self.claims is None or not self.rules:
            return []
        return [r.key for r in self.retriever.judge.requests(item.text, self.rules)]

    def unsendable(self, item: InputItem) -> dict[str, Any] | None:
        """The failure record of an input whose text cannot be sent (UTF-8 cannot encode it), else ``None``."""
        error = encoding_error(item)
        return None if error is None else self.finish(item, InputsError(error), PairRecorder(0, self.progress))

    def run(self, item: InputItem) -> dict[str, Any]:
        if (failed := self.unsendable(item)) is not None:
            return failed
        recorder = self.recorder(item)
        keys = self.keys(item)
        try:
            if self.claims is not None:
                self.claims.wait(keys)  # pairs another job is judging are read from the cache once it stored them
            outcome: MatchResult | BaseException = _combined(self.retriever.match(item.text, callbacks=[recorder]))
        except (VerdictCacheError, ClaimWaitError):
            raise  # verdicts that cannot be kept, pairs another job holds too long: the job stops, output unwritten
        except TagError as exc:
            outcome = exc
        finally:
            if self.claims is not None:
                self.claims.release(keys)
        return self.finish(item, outcome, recorder)

    async def arun(self, item: InputItem) -> dict[str, Any]:
        if (failed := self.unsendable(item)) is not None:
            return failed
        recorder = self.recorder(item)
        keys = self.keys(item)
        try:
            if self.claims is not None:
                await self.claims.await_(keys)
            found = await self.retriever.amatch(item.text, callbacks=[recorder])
            outcome: MatchResult | BaseException = _combined(found)
        except (VerdictCacheError, ClaimWaitError):
            raise
        except TagError as exc:
            outcome = exc
        finally:
            if self.claims is not None:
                self.claims.release(keys)
        return self.finish(item, outcome, recorder)


def _combined(found: MatchResult | CascadeResult) -> MatchResult:
    """A retriever's match result; a cascade's combined one."""
    return found.result if isinstance(found, CascadeResult) else found


def _not_cached(retriever: Judged, items: Sequence[InputItem], rules: Sequence[Rule]) -> dict[str, int]:
    """Per input id, how many of its judgments the verdict cache lacks (a resumed job's bar starts past the rest)."""
    judge = retriever.judge
    store = VerdictStore(judge.settings.cache) if judge.settings.cache is not None else None
    counts: dict[str, int] = {}
    for item in items:
        if encoding_error(item) is not None:  # judged by no request: it fails alone
            counts[item.id] = 0
            continue
        requests = judge.requests(item.text, rules)
        counts[item.id] = len(requests) if store is None else sum(store.get(r.key) is None for r in requests)
    return counts
