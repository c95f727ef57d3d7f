"""What several commands share: option types, the verdict-cache and judging options, the retriever they configure."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, overload

from langchain_tag.judging.prompts import JUDGE_PROMPTS
from langchain_tag.ranges import THRESHOLD

__all__ = [
    "LazyChoices",
    "add_cache_options",
    "add_judge_options",
    "add_lazy_choice",
    "int_at_least",
    "judging_retriever",
    "non_negative_int",
    "positive_int",
    "read_input",
    "unit_float",
    "verdict_cache",
    "verdicts_path",
]


class LazyChoices(Sequence[str]):
    """An option's choices read on first use, so building the parser imports no module they live in.

    ``argparse`` reads choices to check a value given to the option and to print its command's help, and to
    check the option's metavar when it is added: give the option a ``metavar``, and list the choices in its
    help with ``%(choices)s``.

    >>> choices = LazyChoices(lambda: ["b", "a"])
    >>> "a" in choices, "c" in choices, list(choices)
    (True, False, ['b', 'a'])
    """

    def __init__(self, load: Callable[[], Iterable[str]]) -> None:
        self._load = load

    @cached_property
    def _names(self) -> tuple[str, ...]:
        return tuple(self._load())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names[index]

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __contains__(self, value: object) -> bool:
        return value in self._names


def add_lazy_choice(
    parser: argparse.ArgumentParser, flag: str, load: Callable[[], Iterable[str]], *, default: str, about: str
) -> None:
    """Add ``flag``, whose choices ``load`` gives on first use (:class:`LazyChoices`), listed in its help."""
    parser.add_argument(
        flag,
        choices=LazyChoices(load),
        default=default,
        metavar=flag.lstrip("-").upper(),
        help=f"{about}: %(choices)s (default: %(default)s)",
    )


def read_input(value: str) -> str:
    """The input text given on the command line, or standard input's for ``"-"``; refused when blank.

    Standard input is read as UTF-8 bytes, whatever the locale; bytes that are not UTF-8 are refused naming the
    line (``stdin:2: not UTF-8 ...``), as an inputs file's are. An input that names an existing file is judged as
    the text given, with a note on how to judge the file's contents instead.

    Raises:
        ValueError: On a blank input, or standard input that is not UTF-8 (an ``InputsError``).
    """
    if value == "-":
        text = _stdin_text()
    else:
        text = value
        if "\n" not in value and os.path.isfile(value):
            print(
                f"langchain-tag: note: {value} names a file; the text {value!r} itself is judged "
                f"(to judge the file's contents: langchain-tag match - < {value})",
                file=sys.stderr,
            )
    if not text.strip():
        raise ValueError("the input is empty")
    return text


def _stdin_text() -> str:
    """Standard input's bytes as UTF-8 text, read as an inputs file's lines are (its text layer when it has none).

    Raises:
        InputsError: When the bytes are not UTF-8, naming the line.
    """
    from langchain_tag.scale.inputs import text_lines

    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        return sys.stdin.read()
    data: bytes = buffer.read()
    return "".join(text_lines(data.splitlines(keepends=True), "stdin"))


def int_at_least(minimum: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum``, named ``what`` in the usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value

    return parse


positive_int = int_at_least(1, "a positive integer")


non_negative_int = int_at_least(0, "a non-negative integer")


unit_float = THRESHOLD.argument()
"""The argparse type of ``--threshold``: :meth:`THRESHOLD.argument() <langchain_tag.ranges.Range.argument>`.

Anything but a number within [0, 1] is a usage error (exit 2) with the one message every front gives."""


def add_cache_options(p: argparse.ArgumentParser) -> None:
    """``--verdicts FILE`` and ``--no-cache``: where the judge's verdicts are kept (:func:`verdict_cache`)."""
    p.add_argument(
        "--verdicts",
        metavar="FILE",
        help="SQLite verdict cache kept across runs (default: verdicts.sqlite in the cache directory)",
    )
    p.add_argument("--no-cache", action="store_true", help="keep verdicts for this run only")


def add_judge_options(p: argparse.ArgumentParser) -> None:
    """The options that decide which judgments are asked and how they are scored (as in ``match``)."""
    p.add_argument("--predicate", choices=sorted(JUDGE_PROMPTS), default="applicability")
    p.add_argument(
        "--threshold", type=unit_float, help="calibrated score needed (default: the calibration's, else 0.5)"
    )
    p.add_argument("--calibration", help="a calibration JSON file (Calibration.save); default: the model family's")
    p.add_argument("--raw", action="store_true", help="no calibration: threshold raw P(YES)")
    p.add_argument(
        "--reference-inputs", metavar="FILE", help="JSONL sample of your own unlabelled inputs (as in match)"
    )
    add_cache_options(p)


def verdicts_path(args: argparse.Namespace) -> Path:
    """The verdict cache's file: ``--verdicts FILE``, else ``verdicts.sqlite`` in the cache directory."""
    from langchain_tag.local.weights import default_cache_dir

    return Path(args.verdicts) if args.verdicts else default_cache_dir() / "verdicts.sqlite"


def verdict_cache(args: argparse.Namespace) -> Any:
    """The judge's verdict cache: the SQLite file of :func:`verdicts_path`.

    Kept across runs, so a calibration's reference judgments and any pair
    judged before cost no call; ``--no-cache`` keeps verdicts for this run only.
    """
    from langchain_tag.judging.verdict_cache import InMemoryVerdictCache, SQLiteVerdictCache

    if args.no_cache:
        return InMemoryVerdictCache()
    return SQLiteVerdictCache(verdicts_path(args))


def judging_retriever(args: argparse.Namespace, llm: Any, rules: list[Any], context_tokens: int | None = None) -> Any:
    """An applicability retriever configured by the judging options (predicate, calibration, cache, ...)."""
    from langchain_tag.judging.calibration.defaults import load_reference_inputs
    from langchain_tag.judging.calibration.model import Calibration
    from langchain_tag.retrievers import ApplicabilityRetriever

    return ApplicabilityRetriever(
        llm=llm,
        context_tokens=context_tokens,
        rules=rules,
        predicate=args.predicate,
        threshold=args.threshold,
        calibration=None if args.raw else (Calibration.load(args.calibration) if args.calibration else "default"),
        reference_inputs=load_reference_inputs(args.reference_inputs) if args.reference_inputs else None,
        max_concurrency=args.max_concurrency,
        cache=verdict_cache(args),
    )
