"""``langchain-tag match --inputs F --cascade``: the bulk job as a cascade with a guarantee.

The options (:func:`add_cascade_options`) and the run (:func:`run_cascade`) of
:func:`~langchain_tag.scale.cascade_job.cascade_corpus` on the command line: the packaged MiniLM proxy by
default, a cheap LLM judge as a feature with ``--cheap-model``, one JSON line per input, the report on stderr
(and as JSON with ``--cascade-report``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = ["CASCADE_EPILOG", "add_cascade_options", "embeddings_spec", "load_embeddings", "run_cascade"]

CASCADE_EPILOG = """\
with --cascade, a strong-judge label budget of pairs drawn at random (seeded) fixes proxy thresholds such
that, with probability >= 1 - delta, the job keeps >= --target-recall of the pairs the judge alone would
say YES to (and, with --target-precision, that share of its YES are the judge's YES); only the pairs the
proxy cannot clear go to the judge. Each "matched" entry then carries "judge": "strong" or "proxy".
Recall and precision are measured against the judge's YES, not against the truth. The default --draw
stratified labels a small uniform pilot, then spends the rest of the budget among the lowest-scoring
pairs: to skip them, the labels must show they hide few judge YES, which needs labels there rather than
~22 judge YES among the labels (what --draw uniform needs for recall 0.9 at delta 0.1, so about 22/p
labels at a YES rate p). It is the default because, of the draws tried with a bound that keeps the
guarantee (uniform, SUPG's importance sampling, BARGAIN-style adaptive sampling), it saved the most on a
synthetic job with 3 % YES and an informative proxy (8,000 pairs, budget 600: 43-53 % of the judge's calls,
median of 200 seeds; uniform 0 %, importance 0 %, adaptive 36 %). On the recorded demo, ruff and PEP 8
jobs (468-1,056 pairs) no draw that keeps the guarantee saved more than 5 %: the MiniLM cosine
separates the judge's YES too weakly there (benchmarks/results/cascade.md). --draw uniform can save
more when the judge says YES often and the proxy is weak. With a precision target the job draws
uniformly. When the proxy can decide no pair, the report says why and what would.
"""


def _unit(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def _open_unit(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    return value


def _budget(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def add_cascade_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--cascade`` and its options to the ``match`` parser."""
    group = parser.add_argument_group("cascade (with --inputs)")
    group.add_argument(
        "--cascade",
        action="store_true",
        help="decide the pairs a cheap proxy is sure of without the judge, with a stated guarantee (see below)",
    )
    group.add_argument(
        "--target-recall",
        type=_unit,
        metavar="R",
        help="least share of the judge's YES kept (default 0.95 unless only --target-precision is given)",
    )
    group.add_argument("--target-precision", type=_unit, metavar="P", help="least share of YES that are the judge's")
    group.add_argument(
        "--delta", type=_open_unit, default=0.05, help="chance a target does not hold (default: %(default)s)"
    )
    group.add_argument(
        "--label-budget", type=_budget, default=400, help="pairs the judge labels first (default: %(default)s)"
    )
    group.add_argument(
        "--proxy",
        choices=("cosine", "learned"),
        default="cosine",
        help="cosine of the packaged MiniLM embeddings (default), or a logistic regression on it (and on "
        "--cheap-model's log-odds) fitted on half the labels",
    )
    group.add_argument(
        "--cheap-model",
        metavar="MODEL",
        help="a cheap judge whose P(YES) is a feature of --proxy learned: a model name at the configured "
        "endpoint, or 0.5b / 1.5b for an embedded model",
    )
    group.add_argument(
        "--embeddings",
        type=embeddings_spec,
        metavar="SPEC",
        help="the embeddings of the cosine: minilm (default: the packaged all-MiniLM-L6-v2, the embeddings "
        "extra), openai:MODEL (an embedding model at the configured endpoint), or MODULE:NAME (a LangChain "
        "Embeddings, or a class or function returning one, imported from your own code)",
    )
    group.add_argument(
        "--draw",
        choices=("stratified", "uniform"),
        default="stratified",
        help="how the labels are drawn: a pilot, then the lowest-scoring pairs (default: certifies recall with "
        "few labels when the judge's YES are rare), or uniformly (see below)",
    )
    group.add_argument("--seed", type=int, default=0, help="seed of the label draw (default: %(default)s)")
    group.add_argument("--cascade-report", metavar="FILE", help="also write the cascade's report here (JSON)")


def run_cascade(args: argparse.Namespace, items: list[Any], retriever: Any) -> int:
    """Run the cascade job over ``items`` with ``retriever`` as the strong judge; write the records and report.

    Returns:
        0, or 3 when some strong judgments failed (as ``match --inputs``).
    """
    from langchain_tag.cli.output import write_records
    from langchain_tag.scale.cascade_job import CascadeTargets, cascade_corpus

    recall = args.target_recall
    if recall is None and args.target_precision is None:
        recall = 0.95
    if args.cheap_model and args.proxy != "learned":
        raise ValueError("--cheap-model adds a feature to the learned proxy: give --proxy learned too")
    targets = CascadeTargets(
        target_recall=recall,
        target_precision=args.target_precision,
        delta=args.delta,
        label_budget=args.label_budget,
        proxy=args.proxy,
        seed=args.seed,
        draw=args.draw,
    )
    cheap = _cheap_retriever(args, retriever) if args.cheap_model else None
    embeddings = load_embeddings(args.embeddings or "minilm")
    records, report = cascade_corpus(
        items, retriever, embeddings, targets=targets, cheap=cheap, all_pairs=args.all_pairs
    )
    where = write_records(records, args.output, unlocked=getattr(args, "unlocked_output", False))
    if args.cascade_report:
        Path(args.cascade_report).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    matched = sum(len(r["matched"]) for r in records)
    print(report.summary(), file=sys.stderr)
    print(f"{len(items)} inputs, {matched} matched rules; wrote {where}", file=sys.stderr)
    return 3 if report.failed else 0


def embeddings_spec(text: str) -> str:
    """An argparse type: ``minilm``, ``openai:MODEL`` or ``MODULE:NAME`` (checked for its form only)."""
    spec = text.strip()
    if spec == "minilm":
        return spec
    head, sep, tail = spec.partition(":")
    if sep and head and tail and (head == "openai" or all(part.isidentifier() for part in f"{head}.{tail}".split("."))):
        return spec
    raise argparse.ArgumentTypeError(
        f"expected minilm, openai:MODEL, or MODULE:NAME (e.g. mypkg.embed:make), got {text!r}"
    )


def load_embeddings(spec: str) -> Embeddings:
    """The embeddings ``--embeddings SPEC`` names (:func:`embeddings_spec`).

    Raises:
        ValueError: When ``MODULE:NAME`` cannot be imported or is not (and does not make) LangChain ``Embeddings``.
        MissingExtraError: When the extra the embeddings need is not installed.
    """
    from langchain_core.embeddings import Embeddings

    if spec == "minilm":
        from langchain_tag.local.models import get_embeddings

        return get_embeddings()
    head, _, tail = spec.partition(":")
    if head == "openai":
        return _openai_embeddings(tail)
    try:
        module = importlib.import_module(head)
    except ImportError as exc:
        raise ValueError(f"--embeddings {spec}: cannot import {head} ({exc})") from exc
    if not hasattr(module, tail):
        raise ValueError(f"--embeddings {spec}: {head} has no {tail}")
    found = getattr(module, tail)
    if not isinstance(found, Embeddings) and callable(found):
        try:
            found = found()
        except Exception as exc:
            raise ValueError(f"--embeddings {spec}: calling it failed ({type(exc).__name__}: {exc})") from exc
    if not isinstance(found, Embeddings):
        raise ValueError(
            f"--embeddings {spec}: {type(found).__name__} is not a LangChain Embeddings (nor makes one when called)"
        )
    return found


def _openai_embeddings(model: str) -> Embeddings:
    """An embedding model at the configured OpenAI-compatible endpoint, with its key."""
    from langchain_tag.errors import require_extra
    from langchain_tag.local.models import ModelConfig

    require_extra("langchain_openai", "openai")
    from langchain_openai import OpenAIEmbeddings
    from pydantic import SecretStr

    cfg = ModelConfig.from_env()
    key = SecretStr(cfg.api_key) if cfg.api_key else None
    return OpenAIEmbeddings(model=model, base_url=cfg.base_url, api_key=key, max_retries=cfg.max_retries)


def _cheap_retriever(args: argparse.Namespace, strong: Any) -> Any:
    """The strong retriever's settings with the ``--cheap-model`` judge (the embedded one for 0.5b/1.5b)."""
    from langchain_tag.local.models import LOCAL_MODELS, ModelConfig, get_chat_model

    cfg = ModelConfig.from_env()
    if cfg.provider == "local" or args.cheap_model in LOCAL_MODELS:
        if args.cheap_model not in LOCAL_MODELS:
            raise ValueError(f"--cheap-model: the embedded models are {', '.join(LOCAL_MODELS)}")
        cfg = dataclasses.replace(cfg, provider="local", local_model=args.cheap_model)
    else:
        cfg = dataclasses.replace(cfg, judge_model=args.cheap_model)
    return strong.model_copy(update={"llm": get_chat_model(cfg, role="judge")})
