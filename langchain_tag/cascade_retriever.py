"""The cascade as a retriever: a cheap retriever's judge decides the clear pairs, a strong one's the rest.

:class:`CascadeRetriever` puts two :class:`~langchain_tag.retrievers.ApplicabilityRetriever` objects in a
row through a :class:`~langchain_tag.judging.cascade.CascadeJudge`: the cheap one judges every (input, rule)
pair; a pair whose calibrated score lies outside the band ``[low, high]`` keeps the cheap verdict; the pairs
inside it (and those the cheap judge could not score) are judged again by the strong retriever's judge, for
those rules only, and its verdicts replace the cheap ones. Each returned document says which judge decided it
(metadata ``tag_judge``: ``"cheap"`` or ``"strong"``) and what share of the input's pairs went to the strong
judge (``tag_strong_share``). The band comes from the user, or from development data through
:func:`~langchain_tag.judging.cascade.choose_band`.

Example:
    .. code-block:: python

        cheap = ApplicabilityRetriever(llm=small_llm, rules=rules, calibration=small_calibration)
        strong = ApplicabilityRetriever(llm=big_llm, rules=rules, calibration=big_calibration)
        band = choose_band(dev_cheap_scores, dev_strong_verdicts,
                           threshold=cheap.judge.decision_threshold, target_agreement=0.95)
        retriever = CascadeRetriever(cheap=cheap, strong=strong, low=band.low, high=band.high)
        docs = retriever.invoke(code)  # each doc: metadata["tag_judge"] in {"cheap", "strong"}
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun, Callbacks
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, Field, PrivateAttr, model_validator
from typing_extensions import Self, override

from langchain_tag.judging.cascade import CHEAP, JUDGE_KEY, STRONG_SHARE_KEY, CascadeJudge, CascadeResult
from langchain_tag.ranges import THRESHOLD
from langchain_tag.retrievers import FAILED_EVENT, ApplicabilityRetriever
from langchain_tag.rules import Rule, rule_documents, rules_from_documents

__all__ = ["CascadeRetriever"]


class CascadeRetriever(BaseRetriever):
    """Retrieve the applicable rules with a cheap judge, asking a strong judge only about uncertain pairs.

    Every candidate rule is judged by ``cheap``. A pair whose calibrated score lies outside ``[low, high]``
    keeps the cheap verdict. The pairs inside the band, and the pairs the cheap judge gave no score (failed, or
    no logprobs), are judged by ``strong``'s judge for those rules only, with its calibration and threshold; its
    verdicts replace the cheap ones. Verdict caches, calibrations and concurrency are each retriever's own.

    Returned documents are the matched rules (highest score first; the two judges' scores are each their own
    calibrated scale), each with ``tag_judge`` (``"cheap"`` or ``"strong"``) and ``tag_strong_share`` in its
    metadata, besides the ``ApplicabilityRetriever`` metadata. :meth:`match` returns the full
    :class:`CascadeResult`; :attr:`last_match` keeps the latest retrieval's. Callbacks reach both judges, tagged
    ``tag_cascade:cheap`` and ``tag_cascade:strong``.

    Attributes:
        cheap: The retriever that judges every pair.
        strong: The retriever whose judge decides the pairs in the band. It must know every rule the cheap one
            judges (same ``rule_id``); its own rule text is what it judges.
        low: Lowest cheap score sent to the strong judge, in ``[0, 1]``.
        high: Highest cheap score sent to the strong judge, in ``[0, 1]``, at least ``low``.
        k: Optional cap on the number of documents returned.
        fallback: When a strong judgment fails, keep the cheap verdict for that pair (``True``, default) instead
            of counting it as NO. With the strong retriever's ``strict=True`` the failure raises either way.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    cheap: ApplicabilityRetriever
    strong: ApplicabilityRetriever
    low: float = Field(ge=0.0, le=1.0)
    high: float = Field(ge=0.0, le=1.0)
    k: int | None = Field(default=None, ge=0)
    fallback: bool = True

    _strong_rules: dict[str, Rule] = PrivateAttr(default_factory=dict)
    _cheap_rules: dict[str, Rule] = PrivateAttr(default_factory=dict)
    _last_match: CascadeResult | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _setup(self) -> Self:
        if self.low > self.high:
            raise ValueError(f"the band's low bound {self.low} is above its high bound {self.high}")
        if self.cheap is self.strong:
            raise ValueError("cheap and strong are the same retriever: a cascade needs two judges")
        self._strong_rules = {r.rule_id: r for r in rules_from_documents(rule_documents(self.strong.rules))}
        self._cheap_rules = {r.rule_id: r for r in rules_from_documents(rule_documents(self.cheap.rules))}
        missing = sorted(set(self._cheap_rules) - set(self._strong_rules)) if self._strong_rules else []
        if missing:
            raise ValueError(
                f"the strong retriever lacks rule(s) the cheap one judges: {', '.join(missing[:10])}"
                + (" ..." if len(missing) > 10 else "")
            )
        calibration = self.strong.judge.calibration
        if calibration is not None and calibration.centre_per_input:
            warnings.warn(
                "the strong retriever's calibration centres each input on its median over the rules judged "
                "(centre_per_input): in a cascade it judges only the band's rules, so its scores there differ from "
                "the strong judge run on every rule; use a calibration without centre_per_input to keep them equal",
                UserWarning,
                stacklevel=2,
            )
        return self

    @property
    def last_match(self) -> CascadeResult | None:
        """The latest retrieval's :class:`CascadeResult` (``None`` before the first); see :meth:`match`."""
        return self._last_match

    @property
    def judge(self) -> CascadeJudge:
        """The cascade's judge as the next call will use it: the two retrievers' judges and the band."""
        return self._cascade_judge()

    def _cascade_judge(self, threshold: float | None = None) -> CascadeJudge:
        """The cascade's judge, its cheap judge deciding YES at ``threshold`` when given (one call's option)."""
        THRESHOLD.check_optional(threshold)
        return CascadeJudge(
            self.cheap.judge if threshold is None else self.cheap.judge_for(threshold=threshold),
            self.strong.judge,
            self.low,
            self.high,
            fallback=self.fallback,
            strong_rules=self._strong_rules,
        )

    @property
    def rules(self) -> list[Any]:
        """The cheap retriever's rules (every pair starts there)."""
        return list(self.cheap.rules)

    @property
    def candidates(self) -> int | None:
        """The cheap retriever's ``candidates`` (its rules drawn from a vector store, when set)."""
        return self.cheap.candidates

    @property
    def max_concurrency(self) -> int:
        """The cheap retriever's cap on judgments in flight."""
        return self.cheap.max_concurrency

    def match(self, query: str, *, callbacks: Callbacks = None) -> CascadeResult:
        """Judge every rule with the cheap retriever and the band's rules with the strong one.

        Args:
            query: The input.
            callbacks: Callbacks (or a callback manager) passed to both judges.

        Returns:
            The combined result, with the route of every pair.
        """
        return self.judge.route(query, self.cheap.rules_for(query), callbacks=callbacks)

    async def amatch(self, query: str, *, callbacks: Callbacks = None) -> CascadeResult:
        """Async twin of :meth:`match`."""
        return await self.judge.aroute(query, await self.cheap.arules_for(query), callbacks=callbacks)

    def documents(self, result: CascadeResult, *, k: int | None = None) -> list[Document]:
        """The documents a retrieval returns for a cascade result: matched rules, highest score first.

        Args:
            result: A :meth:`match` result.
            k: Cap (default: the retriever's ``k``, else every matched rule).

        Returns:
            Copies of the cheap retriever's rule documents with the verdict metadata of
            :meth:`ApplicabilityRetriever.documents`, plus ``tag_judge`` and ``tag_strong_share``.
        """
        if k is not None and k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        cap = self.k if k is None else k
        docs = self.cheap.documents(result.result, k=len(result.result.judgments) if cap is None else cap)
        share = round(result.strong_share, 6)
        for judgment, doc in zip(result.result.matched, docs, strict=False):  # the same order; docs may be capped
            doc.metadata[JUDGE_KEY] = result.routes.get(judgment.rule_id, CHEAP)
            doc.metadata[STRONG_SHARE_KEY] = share
        return docs

    @override
    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Retrieve the rules that apply to ``input``.

        Args:
            input: The query.
            config: A runnable config.
            **kwargs: Per-call options: ``k`` (cap on the documents) and ``threshold`` (the calibrated score
                the cheap judge needs for YES on the pairs it decides; the band and the strong judge's own
                threshold are unchanged).

        Raises:
            TypeError: For any other per-call option, naming the supported ones.
        """
        _check_options(kwargs)
        return super().invoke(input, config, **kwargs)

    @override
    async def ainvoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Async twin of :meth:`invoke`."""
        _check_options(kwargs)
        return await super().ainvoke(input, config, **kwargs)

    @override
    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        threshold: float | None = None,
    ) -> list[Document]:
        result = self._last_match = self._cascade_judge(threshold).route(
            query,
            self.cheap.rules_for(query),
            callbacks=run_manager.get_child("tag_cascade:cheap"),
            strong_callbacks=run_manager.get_child("tag_cascade:strong"),
        )
        if result.failed:
            run_manager.get_child().on_custom_event(FAILED_EVENT, _failure_event(result))
        return self.documents(result, k=k)

    @override
    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        threshold: float | None = None,
    ) -> list[Document]:
        result = self._last_match = await self._cascade_judge(threshold).aroute(
            query,
            await self.cheap.arules_for(query),
            callbacks=run_manager.get_child("tag_cascade:cheap"),
            strong_callbacks=run_manager.get_child("tag_cascade:strong"),
        )
        if result.failed:
            await run_manager.get_child().on_custom_event(FAILED_EVENT, _failure_event(result))
        return self.documents(result, k=k)


PER_CALL_OPTIONS = ("k", "threshold")
"""The options ``CascadeRetriever.invoke`` takes per call."""


def _check_options(options: dict[str, Any]) -> None:
    unknown = sorted(set(options) - set(PER_CALL_OPTIONS))
    if unknown:
        raise TypeError(
            f"CascadeRetriever.invoke got unsupported per-call option(s) {', '.join(unknown)}: it takes "
            f"{' and '.join(PER_CALL_OPTIONS)} per call (set max_concurrency, calibration and the rest on the "
            "cheap and strong retrievers, the band on the cascade)"
        )


def _failure_event(result: CascadeResult) -> dict[str, Any]:
    """The ``tag_judgments_failed`` event's data, with the judge of each failed pair."""
    return result.result.failure_event(judges={j.rule_id: result.routes.get(j.rule_id, CHEAP) for j in result.failed})
