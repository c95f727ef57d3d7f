"""The ``wnc`` quality set: real Wikipedia sentences, before and after a neutralising edit, against a wording policy.

The Wiki Neutrality Corpus pairs a biased Wikipedia sentence with the same sentence after an editor neutralised
it. This set puts such pairs against the benchmark's short neutral-wording policy
(``benchmarks/examples/npov_policy.md``, ten statements):

* each labelled pair gives two cases: the sentence as written, labelled with the statements its edit enforces,
  and the edited sentence, which breaks none of them;
* the labels (``benchmarks/data/wnc/wnc_labels.json``) name pairs by line number and statements by id; a pair is
  labelled only when the words its edit removed or replaced fit a statement's trigger (pairs whose edit is about
  spelling, markup or facts, or fits no statement, are left out), so the sentences themselves are read from the
  corpus directory and never copied into the repository;
* labelled pairs alternate between the development and the test split in line order; both sentences of a pair
  sit in the same split.

The sentences are as the corpus gives them: lower-cased and tokenised ("children ' s hospital").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_tag_bench.data import BenchDataError, default_data_path, read_json

__all__ = ["WNC_DOMAIN", "WNC_TASK_INPUT", "wnc_cases", "wnc_data_dir"]

WNC_DOMAIN = "encyclopedia neutral-wording policy"
WNC_TASK_INPUT = "one sentence of an encyclopedia article"
_DATA = Path(__file__).resolve().parent.parent / "data" / "wnc"
LABELS_PATH = _DATA / "wnc_labels.json"
STATEMENTS_PATH = _DATA / "wnc_statements.json"
POLICY_PATH = Path(__file__).resolve().parent.parent / "examples" / "npov_policy.md"


def wnc_data_dir(path: str | Path | None = None) -> Path:
    """The Wiki Neutrality Corpus sample directory: ``path``, or the shared ``wnc-sample``."""
    return Path(path).expanduser() if path is not None else default_data_path("wnc-sample", "--data")


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        raise BenchDataError(f"{path} not found: the wnc set needs the corpus's pre.test and post.test (--data DIR)")
    return path.read_text(encoding="utf-8").splitlines()


def wnc_cases(data_dir: str | Path, labels_path: str | Path = LABELS_PATH) -> list[dict[str, Any]]:
    """Two cases per labelled pair, the biased sentence and its neutralised edit; pairs alternate dev, test.

    Raises:
        BenchDataError: When a corpus file is missing, the two files differ in length, the labels file is not
            ``{"labels": {line: [ids]}}``, or a label names a line the files do not have.
    """
    directory = Path(data_dir)
    pre, post = _lines(directory / "pre.test"), _lines(directory / "post.test")
    if len(pre) != len(post):
        raise BenchDataError(f"{directory}: pre.test has {len(pre)} lines, post.test {len(post)}; they must align")
    data = read_json(Path(labels_path))
    labels = data.get("labels") if isinstance(data, dict) else None
    if not isinstance(labels, dict) or not all(k.isdigit() and isinstance(v, list) for k, v in labels.items()):
        raise BenchDataError(f'{labels_path}: expected {{"labels": {{"<line number>": [statement ids]}}}}')
    cases: list[dict[str, Any]] = []
    for position, line in enumerate(sorted(labels, key=int)):
        number = int(line)
        if not 0 <= number < len(pre):
            raise BenchDataError(f"{labels_path}: line {number} is not in {directory}/pre.test ({len(pre)} lines)")
        split = "dev" if position % 2 == 0 else "test"
        cases.append(
            {"id": f"wnc-{number:03d}-biased", "text": pre[number], "violates": list(labels[line]), "split": split}
        )
        cases.append({"id": f"wnc-{number:03d}-edited", "text": post[number], "violates": [], "split": split})
    return cases
