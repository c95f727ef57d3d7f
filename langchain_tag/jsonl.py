"""The package's one JSON Lines reader: every file of rules, inputs, references or batch lines goes through it.

A line that is not JSON is reported in one wording, ``FILE:LINE: not JSON (why at column N)``;
each caller turns it into its own error class (a rule file's, an inputs file's)
and may add a hint of what a line should hold.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["JsonLineError", "json_lines"]


class JsonLineError(ValueError):
    """A line of a JSON Lines file that is not JSON.

    Args:
        where: The file (or stream) name.
        number: The 1-based line number.
        reason: The JSON decoder's message.
    """

    def __init__(self, where: str, number: int, reason: str) -> None:
        self.where = where
        self.number = number
        self.reason = reason
        super().__init__(f"{where}:{number}: not JSON ({reason})")


def json_lines(lines: Iterable[str], where: str) -> Iterator[tuple[int, Any | JsonLineError]]:
    """Each non-blank line's number and JSON value; a line that is not JSON gives a :class:`JsonLineError`.

    The error is yielded, not raised, so a caller may report a bad line and go on; most raise it.

    >>> [(n, v) for n, v in json_lines(['{"a": 1}', "", '"x"'], "f.jsonl")]
    [(1, {'a': 1}), (3, 'x')]
    >>> str(next(json_lines(["{oops"], "f.jsonl"))[1])
    'f.jsonl:1: not JSON (Expecting property name enclosed in double quotes at column 2)'
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, JsonLineError(where, number, _reason(exc))
        except RecursionError:
            yield number, JsonLineError(where, number, "nested too deeply to read")


def _reason(exc: json.JSONDecodeError) -> str:
    """The decoder's message with the column it points at (some messages, "... at", need it to read whole).

    >>> _reason(json.JSONDecodeError("Expecting value", '{"a": }', 6))
    'Expecting value at column 7'
    """
    where = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
    reason = f"{exc.msg} {where}" if exc.msg.endswith(" at") else f"{exc.msg} at {where}"
    if exc.msg.startswith("Invalid control character"):
        reason += r"; a tab or line break inside a string is written \t or \n"
    return reason
