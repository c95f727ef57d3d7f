"""The inputs of a bulk job: a JSONL file of texts read into :class:`InputItem` objects.

:func:`read_inputs` reads an inputs file (a JSON string, or an object with
``"text"`` and an optional ``"id"``, per line) and names the file and line of
anything it cannot use; :func:`read_inputs_from` reads the same lines from a
stream (standard input); :func:`as_input_items` gives in-memory inputs the same
shape, and :func:`encoding_error` says when an input's text cannot be sent.
:func:`~langchain_tag.scale.bulk.match_corpus` and
:func:`~langchain_tag.scale.batch_api.export_openai_batch` take either.

Example:
    >>> as_input_items(["first input", InputItem(id="doc-7", text="second input")])[0]
    InputItem(id='1', text='first input', line=None, fields={})
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_tag.errors import TagError
from langchain_tag.jsonl import JsonLineError, json_lines

__all__ = [
    "InputItem",
    "InputsError",
    "as_input_items",
    "encoding_error",
    "read_inputs",
    "read_inputs_from",
    "text_lines",
]


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

    Blank lines are skipped, and a UTF-8 byte order mark before the first line
    is dropped. An id may be a string or an integer (kept as its string); a
    line without one gets its 1-based line number as its id. The object's
    other fields are kept in :attr:`InputItem.fields`.

    Args:
        path: The JSONL file.

    Returns:
        The inputs in file order (an empty list for a file with none).

    Raises:
        InputsError: When the file cannot be read, or a line is not UTF-8, not
            JSON, has no text, an empty text, a bad id or an id seen before
            (the message names the file and line).
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            return _read_lines(handle, str(path), path)
    except OSError as exc:
        raise InputsError(f"{path}: cannot read inputs ({exc.strerror or exc})", path=path) from exc


def read_inputs_from(lines: Iterable[bytes | str], name: str = "stdin") -> list[InputItem]:
    """Read inputs, as :func:`read_inputs` does, from an open stream or any iterable of lines.

    Byte lines (``sys.stdin.buffer``) are decoded as UTF-8, whatever the
    locale, so standard input reads as a file does.

    Args:
        lines: The lines, bytes or text (e.g. ``sys.stdin.buffer``).
        name: What the errors call the stream, in place of a file name.

    Returns:
        The inputs in order (an empty list when no line holds one).

    Raises:
        InputsError: As :func:`read_inputs`, naming ``name`` and the line.
    """
    try:
        return _read_lines(lines, name, None)
    except OSError as exc:
        raise InputsError(f"{name}: cannot read inputs ({exc.strerror or exc})") from exc


def _read_lines(lines: Iterable[bytes | str], where: str, path: Path | None) -> list[InputItem]:
    items: list[InputItem] = []
    seen: dict[str, int] = {}
    for number, data in json_lines(text_lines(lines, where, path), where):
        item = _item_of(data, where, path, number)
        if item.id in seen:
            raise InputsError(
                f"{where}:{number}: duplicate id {item.id!r} (first on line {seen[item.id]}); "
                "every input needs its own id",
                path=path,
                line=number,
            )
        seen[item.id] = number
        items.append(item)
    return items


def text_lines(lines: Iterable[bytes | str], where: str, path: Path | None = None) -> Iterator[str]:
    """The lines as text: bytes decoded from UTF-8 (a bad byte names its line), a leading byte order mark dropped."""
    for number, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = line[exc.start : exc.start + 1].hex()
                raise InputsError(
                    f"{where}:{number}: not UTF-8 text (0x{byte}, byte {exc.start + 1} of the line: {exc.reason})",
                    path=path,
                    line=number,
                ) from None
        else:
            text = line
        yield text.removeprefix("\ufeff") if number == 1 else text


def _item_of(data: Any, name: str, path: Path | None, number: int) -> InputItem:
    """One input from one non-blank line's JSON value."""
    where = f"{name}:{number}"
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
    bad = _unencodable(item_id)
    if bad is not None:
        raise InputsError(
            f'{where}: "id" holds {bad}, which UTF-8 cannot encode (a lone surrogate)', path=path, line=number
        )
    extra = {k: v for k, v in data.items() if k not in ("id", "text")}
    return _item(item_id, text, number, extra, where, path)


def _item(item_id: str, text: str, number: int, extra: dict[str, Any], where: str, path: Path | None) -> InputItem:
    if not text.strip():
        raise InputsError(f"{where}: the text of input {item_id!r} is empty", path=path, line=number)
    return InputItem(id=item_id, text=text, line=number, fields=extra)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _unencodable(text: str) -> str | None:
    """The first character of ``text`` UTF-8 cannot encode (a lone surrogate), escaped with its position; else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        escaped = text[exc.start : exc.end].encode("unicode_escape").decode("ascii")
        return f"{escaped} at character {exc.start + 1}"
    return None


def encoding_error(item: InputItem) -> str | None:
    r"""Why ``item``'s text cannot be judged (no prompt or cache key holds it), naming the input; ``None`` when it can.

    A JSON line may spell a character UTF-8 cannot encode (a lone surrogate
    such as ``"\ud800"``); such an input fails alone, as any input no pair
    of which could be judged.

    Example:
        >>> encoding_error(InputItem(id="a", text="x" + chr(0xD800), line=3))
        "input 'a' (line 3): its text holds \\ud800 at character 2, which UTF-8 cannot encode (a lone surrogate)"
    """
    bad = _unencodable(item.text)
    if bad is None:
        return None
    line = f" (line {item.line})" if item.line is not None else ""
    return f"input {item.id!r}{line}: its text holds {bad}, which UTF-8 cannot encode (a lone surrogate)"


def as_input_items(inputs: Iterable[InputItem | str | Mapping[str, Any]]) -> list[InputItem]:
    """Inputs as :class:`InputItem` objects: a bare string gets its 1-based position as its id.

    A mapping is read as an inputs file's line is (``{"id": ..., "text": ...}``, other keys kept as fields), and
    named ``inputs:N`` in its errors.

    Raises:
        InputsError: On an empty text, an id given twice, a mapping without a text, or another kind of value.
    """
    items: list[InputItem] = []
    seen: set[str] = set()
    for position, value in enumerate(inputs, start=1):
        if isinstance(value, Mapping):
            value = _item_of(dict(value), "inputs", None, position)
        elif not isinstance(value, (InputItem, str)):
            got = type(value).__name__
            raise InputsError(f"inputs:{position}: expected a string, an InputItem or a mapping with a text, got {got}")
        item = value if isinstance(value, InputItem) else InputItem(id=str(position), text=value)
        if not item.text.strip():
            raise InputsError(f"input {item.id!r} (number {position}) is empty")
        if item.id in seen:
            raise InputsError(f"duplicate input id {item.id!r} (input number {position})")
        seen.add(item.id)
        items.append(item)
    return items
