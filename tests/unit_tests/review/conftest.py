"""Shared fixtures of the review tests: the demo's policy and rules, and verdicts made by a graded fake judge."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from importlib.resources import files
from pathlib import Path

import pytest

from langchain_tag import ApplicabilityRetriever, load_rules
from langchain_tag.scale.bulk import match_corpus, read_inputs, write_results
from langchain_tag.testing import FakeChatModel, judged_rule_id

DATA = files("langchain_tag") / "data"

# Words of an input that make the graded judge fairly sure a demo rule applies.
CUES = {
    "R-001": "=[]",
    "R-002": "def ",
    "R-003": "except:",
    "R-004": "try:",
    "R-005": "pass",
    "R-006": "import *",
    "R-007": "import os, sys",
    "R-008": "%",
    "R-009": "print(",
    "R-010": "password",
}

DEMO_INPUTS = [
    "def add(x, xs=[]):\n    xs.append(x)\n    return xs",
    "try:\n    run()\nexcept:\n    pass",
    "from os import *\nprint('%d items' % n)",
    "import os, sys\n\ndef main():\n    return 0",
    'PASSWORD = "hunter2"  # the password for the test server',
    "def total(items):\n    return sum(items)",
    "x = 1",
    "try:\n    load()\nexcept OSError:\n    log.warning('no file')",
    "FAIL-ME: a reply the judge cannot give",
    "print(f'{name} has {count} items')",
]


def _input_of(prompt: str) -> str:
    return prompt.split("INPUT:\n<<<\n", 1)[-1].split("\n>>>", 1)[0]


def graded_reply(prompt: str) -> str | tuple[str, float]:
    """A P(YES) from the input's words and a hash of the pair, so scores spread on both sides of the threshold."""
    rule_id = judged_rule_id(prompt)
    text = _input_of(prompt)
    if rule_id is None or ("FAIL-ME" in text and rule_id in {"R-002", "R-005"}):
        return "I cannot tell."
    jitter = int(hashlib.sha256(f"{rule_id}|{text}".encode()).hexdigest()[:4], 16) / 0xFFFF
    p = 0.62 + 0.35 * jitter if CUES.get(rule_id, "\x00") in text else 0.03 + 0.55 * jitter
    return ("YES" if p >= 0.5 else "NO", p)


@pytest.fixture
def demo_policy() -> Path:
    return Path(str(DATA / "demo_policy.md"))


@pytest.fixture
def demo_rules() -> Path:
    return Path(str(DATA / "demo_rules.jsonl"))


MakeVerdicts = Callable[..., tuple[Path, Path]]


@pytest.fixture
def make_verdicts(tmp_path: Path, demo_rules: Path) -> MakeVerdicts:
    """Write an inputs file and the bulk job's verdicts on it (the graded fake judge, threshold 0.5)."""

    def make(
        texts: Sequence[str] = DEMO_INPUTS, *, all_pairs: bool = True, name: str = "verdicts"
    ) -> tuple[Path, Path]:
        inputs = tmp_path / f"{name}-inputs.jsonl"
        inputs.write_text(
            "".join(json.dumps({"id": f"in-{i:02d}", "text": t}) + "\n" for i, t in enumerate(texts, 1)),
            encoding="utf-8",
        )
        rules = [r.to_document() for r in load_rules(demo_rules)]
        judge = FakeChatModel(respond=graded_reply, with_logprobs=True)
        retriever = ApplicabilityRetriever(llm=judge, rules=rules, threshold=0.5, calibration=None)
        out = tmp_path / f"{name}.jsonl"
        write_results(match_corpus(read_inputs(inputs), retriever, all_pairs=all_pairs, show_progress=False), out)
        return inputs, out

    return make
