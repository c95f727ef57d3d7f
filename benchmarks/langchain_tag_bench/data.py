"""Where benchmark data lives, and the error raised when it is missing or malformed.

Nothing is downloaded: every loader takes a path. When no path is given,
:func:`default_data_path` looks for the shared data directory next to the
working directory (``../shared/data/<name>``) and the repository
(``<repo>/../shared/data/<name>``), and otherwise asks for the path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_tag.errors import TagError

__all__ = ["BenchDataError", "default_data_path", "read_json"]

_SHARED = Path("shared") / "data"


class BenchDataError(TagError, ValueError):
    """Benchmark data (a directory, a file or one of its records) is missing or malformed.

    The message names the path and, where it applies, the line or record.
    """


def default_data_path(name: str, option: str = "--data") -> Path:
    """The default location of a benchmark data set.

    Args:
        name: The data set's directory under the shared data directory, e.g.
            ``"rulearena-nba"`` or ``"humaneval/HumanEval.jsonl.gz"``.
        option: The command-line option that overrides it, named in the
            error.

    Returns:
        The first existing candidate path.

    Raises:
        BenchDataError: When no candidate exists.
    """
    candidates = [
        Path.cwd().parent / _SHARED / name,
        Path.cwd() / _SHARED / name,
        Path(__file__).resolve().parents[2].parent / _SHARED / name,
    ]
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise BenchDataError(
        f"no {name} data found (looked in {', '.join(str(c) for c in candidates)}); pass its path with {option}"
    )


def read_json(path: Path) -> Any:
    """A benchmark data file's JSON.

    Raises:
        BenchDataError: When the file cannot be read or is not JSON; the message names the path.
    """
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BenchDataError(f"{path}: cannot read JSON ({exc})") from exc
