"""Shared fixtures of the review tests: the demo's policy and rules, and verdicts made by a graded fake judge."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from importlib.resources import files
from pathlib import Path

import pytest

from langchain_tag import ApplicabilityRetriever, load_rules
from langchain_tag.rules import save_rules
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


MakeCorpus = Callable[..., dict[str, Path]]


@pytest.fixture
def make_corpus(tmp_path: Path, demo_rules: Path) -> MakeCorpus:
    """Write a synthetic corpus: the demo's rules repeated to ``n_rules``, every pair's seeded score, and a gold.

    Scores come from a seeded Beta(0.6, 2.5), as ``match --all-pairs`` writes them (threshold 0.5); the gold is each
    pair's score plus seeded noise, over 0.5. The inputs' texts are the demo inputs, cycled.
    """

    def make(n_inputs: int, n_rules: int, *, seed: int = 7) -> dict[str, Path]:
        base = load_rules(demo_rules)
        rules = [
            base[i] if i < len(base) else base[i % len(base)].model_copy(update={"rule_id": f"R-{i + 1:03d}"})
            for i in range(n_rules)
        ]
        rng = random.Random(seed)
        inputs: list[dict[str, object]] = []
        verdicts: list[dict[str, object]] = []
        gold: list[dict[str, object]] = []
        for i in range(n_inputs):
            input_id = f"case-{i + 1:04d}"
            inputs.append({"id": input_id, "text": DEMO_INPUTS[i % len(DEMO_INPUTS)]})
            scores = [(rule.rule_id, rng.betavariate(0.6, 2.5)) for rule in rules]
            pairs = [{"rule_id": r, "applies": p >= 0.5, "p_yes": p, "score": p} for r, p in scores]
            matched = [
                {"rule_id": r, "score": p, "p_yes": p} for r, p in sorted(scores, key=lambda q: -q[1]) if p >= 0.5
            ]
            verdicts.append({"id": input_id, "matched": matched, "failed": [], "pairs": pairs})
            gold.append({"id": input_id, "rule_ids": [r for r, p in scores if p + rng.gauss(0, 0.15) > 0.5]})
        paths = {"rules": save_rules(rules, tmp_path / "corpus-rules.jsonl")}
        for name, rows in (("inputs", inputs), ("verdicts", verdicts), ("gold", gold)):
            paths[name] = tmp_path / f"corpus-{name}.jsonl"
            paths[name].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return paths

    return make
