"""The package's one JSON Lines reader: every file of rules, inputs, references or batch lines goes through it.

A line that is not JSON is reported in one wording, ``FILE:LINE: not JSON (why)``;
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
    'f.jsonl:1: not JSON (Expecting property name enclosed in double quotes)'
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, JsonLineError(where, number, exc.msg)
