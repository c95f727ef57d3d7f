"""The bulk job as a cascade: the stated recall of the strong judge's YES holds, strong calls stay in budget, resumes.

A synthetic corpus whose inputs share words with the rules they trigger: rule ``R-k`` applies when the input
uses topic ``k``'s library, and the fake strong judge (answering from the prompt text) says YES exactly then.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule, save_rules
from langchain_tag.scale.cascade_job import CascadeTargets, acascade_corpus, cascade_corpus
from langchain_tag.scale.inputs import InputItem
from langchain_tag.testing import FakeChatModel, HashingEmbeddings, judged_rule_id

TOPICS = [
    ("requests", "sends an HTTP request with the requests library", "requests.get(url, timeout=5)"),
    ("pandas", "loads or transforms a table with pandas", "pandas.read_csv(path).groupby('key')"),
    ("sqlite", "queries a database through sqlite3", "sqlite3.connect(db).execute('select 1')"),
    ("logging", "writes log messages with the logging module", "logging.getLogger(name).warning('x')"),
    ("pickle", "serialises objects with pickle", "pickle.dumps(state)"),
    ("subprocess", "runs a shell command with subprocess", "subprocess.run(['ls'], check=True)"),
    ("threading", "starts a thread with threading", "threading.Thread(target=work).start()"),
    ("regex", "matches text with a regular expression from re", "re.compile(r'\\d+').findall(text)"),
    ("datetime", "computes dates with datetime", "datetime.date.today() - datetime.timedelta(days=1)"),
    ("random", "draws random numbers with random", "random.choice(items)"),
]
FILLER = ["total = 0", "for item in items:", "    total += item", "return total", "x = compute(y)", "print(x)"]


def corpus(inputs: int = 60, seed: int = 7) -> tuple[list[InputItem], list[Rule], dict[int, set[str]]]:
    """Inputs (each ``docN`` with 0-2 topic lines among filler), one rule per topic, and which rules apply."""
    rng = random.Random(seed)
    rules = [
        Rule(
            rule_id=f"R-{k}", rule_name=f"{name} use", condition=f"The code {what}.", action=f"Review the {name} call."
        )
        for k, (name, what, _) in enumerate(TOPICS)
    ]
    items, applies = [], {}
    for n in range(inputs):
        topics = rng.sample(range(len(TOPICS)), rng.choice([0, 1, 1, 2]))
        lines = [f"# doc{n}", *rng.sample(FILLER, 3), *(TOPICS[k][2] for k in topics)]
        items.append(InputItem(id=f"doc{n}", text="\n".join(lines)))
        applies[n] = {f"R-{k}" for k in topics}
    return items, rules, applies


def strong_judge(applies: dict[int, set[str]]) -> FakeChatModel:
    """YES (P = 0.9) exactly for the rules an input triggers, NO (P = 0.1) otherwise, read from the prompt."""

    def respond(prompt: str) -> tuple[str, float]:
        found = re.search(r"# doc(\d+)", prompt)
        yes = found is not None and judged_rule_id(prompt) in applies[int(found.group(1))]
        return ("YES", 0.9) if yes else ("NO", 0.1)

    return FakeChatModel(respond=respond, with_logprobs=True)


def retriever(llm: Any, rules: list[Rule], cache: Any) -> ApplicabilityRetriever:
    return ApplicabilityRetriever(llm=llm, rules=rules, calibration=None, cache=cache, max_concurrency=4)


def kept_recall(records: list[dict[str, Any]], applies: dict[int, set[str]]) -> float:
    said = {(r["id"], m["rule_id"]) for r in records for m in r["matched"]}
    truth = {(f"doc{n}", rule_id) for n, ids in applies.items() for rule_id in ids}
    return len(said & truth) / len(truth)


def test_the_cascade_keeps_the_target_recall_within_budget_and_resumes_with_no_strong_call(tmp_path: Path) -> None:
    items, rules, applies = corpus()
    targets = CascadeTargets(target_recall=0.9, delta=0.1, label_budget=250, draw="uniform")
    cache = SQLiteVerdictCache(tmp_path / "v.sqlite")
    llm = strong_judge(applies)

    records, report = cascade_corpus(items, retriever(llm, rules, cache), HashingEmbeddings(), targets=targets)

    assert kept_recall(records, applies) >= 0.9
    assert report.pairs == 600 and report.labels == 250 and report.failed == 0
    assert llm.calls == report.strong_judgments == report.labels + report.sent <= targets.label_budget + report.sent
    assert report.sent < report.pairs - report.labels  # the proxy decided some pairs without the strong judge
    assert report.proxy_no > 0 and report.proxy_yes == 0 and report.t_low is not None and report.t_high is None
    assert {m["judge"] for r in records for m in r["matched"]} == {"strong"}  # YES only ever from the judge
    assert report.observed_recall is not None and report.observed_recall >= 0.9

    rerun = strong_judge(applies)
    again, report_again = cascade_corpus(
        items, retriever(rerun, rules, SQLiteVerdictCache(tmp_path / "v.sqlite")), HashingEmbeddings(), targets=targets
    )
    assert rerun.calls == 0  # every label and every sent pair is in the verdict cache
    assert again == records and report_again == report


def test_a_precision_target_lets_the_proxy_say_yes_and_the_async_twin_agrees() -> None:
    items, rules, applies = corpus()
    targets = CascadeTargets(target_recall=0.8, target_precision=0.8, delta=0.2, label_budget=300, seed=3)
    llm = strong_judge(applies)

    records, report = cascade_corpus(items, retriever(llm, rules, None), HashingEmbeddings(), targets=targets)
    twin, twin_report = asyncio.run(
        acascade_corpus(items, retriever(strong_judge(applies), rules, None), HashingEmbeddings(), targets=targets)
    )

    assert (twin, twin_report) == (records, report)
    assert report.t_high is not None or report.proxy_yes == 0
    if report.proxy_yes:
        assert any(m["judge"] == "proxy" and m["score"] is None for r in records for m in r["matched"])


def test_a_learned_proxy_takes_a_cheap_judges_log_odds_and_fits_on_half_the_labels() -> None:
    items, rules, applies = corpus(inputs=100)
    # Half the labels fit the proxy, half test it: the test half needs 22 strong YES for recall 0.9 at delta 0.1.
    targets = CascadeTargets(target_recall=0.9, delta=0.1, label_budget=600, proxy="learned", draw="uniform")
    cheap_llm = strong_judge(applies)  # a cheap judge as good as the strong one: its log-odds separate the pairs

    records, report = cascade_corpus(
        items,
        retriever(strong_judge(applies), rules, None),
        HashingEmbeddings(),
        targets=targets,
        cheap=retriever(cheap_llm, rules, None),
        all_pairs=True,
    )

    assert report.proxy == "learned" and cheap_llm.calls == 1000
    assert report.positive_labels >= 44 and report.t_low is not None
    # A perfect cheap feature: only the strong YES pairs (above t_low) are sent, and every one is kept.
    assert report.sent < report.pairs - report.labels and kept_recall(records, applies) == 1.0
    pair = records[0]["pairs"][0]
    assert set(pair) == {"rule_id", "applies", "p_yes", "score", "judge", "proxy_score"}


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="target_recall, target_precision or both"):
        CascadeTargets(target_recall=None)
    with pytest.raises(ValueError, match="label_budget"):
        CascadeTargets(label_budget=0)
    items, rules, applies = corpus(inputs=3)
    strong = retriever(strong_judge(applies), rules, None)
    with pytest.raises(ValueError, match="same rules"):
        cascade_corpus(items, strong, HashingEmbeddings(), cheap=retriever(strong_judge(applies), rules[:2], None))


def test_max_concurrency_is_checked_with_the_one_message() -> None:
    items, rules, applies = corpus(inputs=3)
    strong = retriever(strong_judge(applies), rules, None)
    with pytest.raises(ValueError, match=re.escape("max_concurrency must be a whole number >= 1, got 0")):
        cascade_corpus(items, strong, HashingEmbeddings(), max_concurrency=0)
    with pytest.raises(ValueError, match=re.escape("max_concurrency must be a whole number >= 1, got 0")):
        asyncio.run(acascade_corpus(items, strong, HashingEmbeddings(), max_concurrency=0))


def test_cli_cascade_writes_records_and_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``match --inputs F --cascade``: records with the deciding judge, the report on stderr and as JSON."""
    import langchain_tag.local.models as models
    from langchain_tag.cli.main import main

    items, rules, applies = corpus()
    llm = strong_judge(applies)
    monkeypatch.setattr(models, "get_chat_model", lambda *a, **kw: llm)
    monkeypatch.setattr(models, "get_embeddings", lambda: HashingEmbeddings())
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("".join(json.dumps({"id": item.id, "text": item.text}) + "\n" for item in items))
    argv = ["match", "--inputs", str(inputs), "--rules", str(save_rules(rules, tmp_path / "rules.jsonl")), "--raw"]
    argv += ["--cascade", "--target-recall", "0.9", "--delta", "0.1", "--label-budget", "250", "--draw", "uniform"]
    argv += ["-o", str(tmp_path / "out.jsonl"), "--verdicts", str(tmp_path / "v.sqlite")]

    assert main([*argv, "--cascade-report", str(tmp_path / "report.json")]) == 0

    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    report = json.loads((tmp_path / "report.json").read_text())
    assert kept_recall(records, applies) >= 0.9
    assert report["labels"] == 250 and report["strong_judgments"] == llm.calls < 600
    assert report["target_recall"] == 0.9 and report["delta"] == 0.1


def test_cli_cascade_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from langchain_tag.cli.main import main

    rules = str(save_rules(corpus(inputs=1)[1], tmp_path / "rules.jsonl"))
    with pytest.raises(SystemExit) as one:
        main(["match", "x = 1", "--rules", rules, "--cascade"])
    (tmp_path / "in.jsonl").write_text('"x = 1"\n')
    with pytest.raises(SystemExit) as ray:
        main(["match", "--inputs", str(tmp_path / "in.jsonl"), "--rules", rules, "--cascade", "--engine", "ray"])
    assert one.value.code == ray.value.code == 2
    err = capsys.readouterr().err
    assert "--cascade go with --inputs FILE" in err and "not with --engine ray" in err


def test_an_input_none_of_whose_pairs_could_be_judged_gets_the_bulk_jobs_error() -> None:
    from tests.unit_tests.faults import server_error

    items, rules, applies = corpus(inputs=10)
    judge = strong_judge(applies)

    def respond(prompt: str) -> Any:
        return server_error() if "# doc3\n" in prompt else judge.respond(prompt)

    llm = FakeChatModel(respond=respond, with_logprobs=True)
    targets = CascadeTargets(target_recall=0.9, delta=0.1, label_budget=60)  # every pair labelled by the judge
    records, report = cascade_corpus(items, retriever(llm, rules, None), HashingEmbeddings(), targets=targets)

    failed = next(r for r in records if r["id"] == "doc3")
    assert len(failed["failed"]) == len(rules) and "HTTP 503" in failed["error"]
    assert all(f["error"] in failed["error"] for f in failed["failed"])
    assert all("error" not in r for r in records if r["id"] != "doc3") and report.failed == len(rules)


def test_a_cascade_that_saves_nothing_says_why_and_what_would() -> None:
    """Too few judge YES among the labels to show the target: it says how many it needs and what budget would do."""
    from langchain_tag.judging.guarantee import min_positive_labels

    items, rules, applies = corpus()
    targets = CascadeTargets(target_recall=0.9, delta=0.1, label_budget=100, draw="uniform")
    _, report = cascade_corpus(
        items, retriever(strong_judge(applies), rules, None), HashingEmbeddings(), targets=targets
    )

    need = min_positive_labels(0.9, 0.1)
    assert need == 22 and 0 < report.positive_labels < need
    assert report.proxy_no == report.proxy_yes == 0 and report.strong_judgments == report.pairs
    assert report.needed_positive_labels == need
    rate = report.positive_labels / report.labels
    assert report.suggested_label_budget is not None and report.suggested_label_budget >= need / rate
    assert report.suggested_label_budget <= 3 * need / rate
    text = report.summary()
    assert f"{report.positive_labels} judge YES" in text and f"needs at least {need}" in text
    assert f"--label-budget {report.suggested_label_budget}" in text
    assert "against the judge's YES, not against the truth" in text
    assert report.to_dict()["suggested_label_budget"] == report.suggested_label_budget


def test_a_cascade_that_saves_says_nothing_of_a_budget_but_what_recall_is_measured_against() -> None:
    items, rules, applies = corpus()
    targets = CascadeTargets(target_recall=0.9, delta=0.1, label_budget=250, draw="uniform")
    _, report = cascade_corpus(
        items, retriever(strong_judge(applies), rules, None), HashingEmbeddings(), targets=targets
    )
    assert report.proxy_no > 0 and report.suggested_label_budget is None
    text = report.summary()
    assert "--label-budget" not in text and "against the judge's YES, not against the truth" in text


def test_a_budget_beyond_the_job_says_the_job_is_too_small_for_the_target() -> None:
    items, rules, applies = corpus(inputs=12)
    targets = CascadeTargets(target_recall=0.95, delta=0.05, label_budget=40, draw="uniform")
    _, report = cascade_corpus(
        items, retriever(strong_judge(applies), rules, None), HashingEmbeddings(), targets=targets
    )
    assert report.proxy_no == 0 and report.suggested_label_budget is not None
    assert report.suggested_label_budget > report.pairs
    assert "more pairs than the job has" in report.summary()
