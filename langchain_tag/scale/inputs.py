"""The inputs of a bulk job: a JSONL file of texts read into :class:`InputItem` objects.

:func:`read_inputs` reads an inputs file (a JSON string, or an object with
``"text"`` and an optional ``"id"``, per line) and names the file and line of
anything it cannot use; :func:`as_input_items` gives in-memory inputs the same
shape. :func:`~langchain_tag.scale.bulk.match_corpus` and
:func:`~langchain_tag.scale.batch_api.export_openai_batch` take either.

Example:
    >>> as_input_items(["first input", InputItem(id="doc-7", text="second input")])[0]
    InputItem(id='1', text='first input', line=None, fields={})
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_tag.errors import TagError
from langchain_tag.jsonl import JsonLineError, json_lines

__all__ = ["InputItem", "InputsError", "as_input_items", "read_inputs"]


class InputsError(TagError, ValueError):
    """The inputs of a bulk job are not usable: the message names the file and the line at fault.

    Args:
        message: What is wrong, naming the file and the line.
        path: The inputs file, when the inputs came from one.
        line: The 1-based line at fault, when one is.

    Attributes:
        path: The inputs file, when the inputs came from one.
        line: The 1-based line at fault, when one is.
    """

    def __init__(self, message: str, *, path: Path | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


@dataclass(frozen=True)
class InputItem:
    """One input of a bulk job.

    Attributes:
        id: Its id: the ``"id"`` of its line, else the 1-based line number as a string.
        text: The input text.
        line: The line of the inputs file it came from, if any.
        fields: The other fields of its line's object, as given.
    """

    id: str
    text: str
    line: int | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)


def read_inputs(path: str | Path) -> list[InputItem]:
    """Read a JSONL inputs file: each line a JSON string, or an object with ``"text"`` and an optional ``"id"``.

    Blank lines are skipped. An id may be a string or an integer (kept as its
    string); a line without one gets its 1-based line number as its id. The
    object's other fields are kept in :attr:`InputItem.fields`.

    Args:
        path: The JSONL file.

    Returns:
        The inputs in file order (an empty list for a file with none).

    Raises:
        InputsError: When the file cannot be read, or a line is not JSON, has
            no text, an empty text, a bad id or an id seen before (the
            message names the file and line).
    """
    path = Path(path)
    items: list[InputItem] = []
    seen: dict[str, int] = {}
    try:
        with path.open(encoding="utf-8-sig") as handle:
            for number, data in json_lines(handle, str(path)):
                item = _item_of(data, path, number)
                if item.id in seen:
                    raise InputsError(
                        f"{path}:{number}: duplicate id {item.id!r} (first on line {seen[item.id]}); "
                        "every input needs its own id",
                        path=path,
                        line=number,
                    )
                seen[item.id] = number
                items.append(item)
    except UnicodeDecodeError as exc:
        raise InputsError(f"{path}: not UTF-8 text ({exc.reason})", path=path) from exc
    except OSError as exc:
        raise InputsError(f"{path}: cannot read inputs ({exc.strerror or exc})", path=path) from exc
    return items


def _item_of(data: Any, path: Path, number: int) -> InputItem:
    """One input from one non-blank line's JSON value."""
    where = f"{path}:{number}"
    if isinstance(data, JsonLineError):
        raise InputsError(
            f'{data}; write one JSON string or {{"id": ..., "text": ...}} per line', path=path, line=number
        ) from data
    if isinstance(data, str):
        return _item(str(number), data, number, {}, where, path)
    if not isinstance(data, dict):
        raise InputsError(
            f'{where}: expected a JSON string or an object with "text", got {_json_type(data)}', path=path, line=number
        )
    text = data.get("text")
    if not isinstance(text, str):
        got = "no text" if "text" not in data else f"a text that is {_json_type(text)}"
        raise InputsError(f'{where}: expected a "text" string, got {got}', path=path, line=number)
    raw_id = data.get("id")
    if raw_id is None:
        item_id = str(number)
    elif isinstance(raw_id, str) and raw_id.strip():
        item_id = raw_id
    elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
        item_id = str(raw_id)
    else:
        raise InputsError(
            f'{where}: "id" must be a non-empty string or an integer, got {json.dumps(raw_id)}',
            path=path,
            line=number,
        )
    extra = {k: v for k, v in data.items() if k not in ("id", "text")}
    return _item(item_id, text, number, extra, where, path)


def _item(item_id: str, text: str, number: int, extra: dict[str, Any], where: str, path: Path) -> InputItem:
    if not text.strip():
        raise InputsError(f"{where}: the text of input {item_id!r} is empty", path=path, line=number)
    return InputItem(id=item_id, text=text, line=number, fields=extra)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def as_input_items(inputs: Iterable[InputItem | str]) -> list[InputItem]:
    """Inputs as :class:`InputItem` objects: a bare string gets its 1-based position as its id.

    Raises:
        InputsError: On an empty text or an id given twice.
    """
    items: list[InputItem] = []
    seen: set[str] = set()
    for position, value in enumerate(inputs, start=1):
        item = value if isinstance(value, InputItem) else InputItem(id=str(position), text=value)
        if not item.text.strip():
            raise InputsError(f"input {item.id!r} (number {position}) is empty")
        if item.id in seen:
            raise InputsError(f"duplicate input id {item.id!r} (input number {position})")
        seen.add(item.id)
        items.append(item)
    return items
