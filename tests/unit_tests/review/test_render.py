"""The review page, rendered from the demo's rules and fake-judge verdicts, read back as HTML."""

from __future__ import annotations

import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from langchain_tag.errors import MissingExtraError, RuleFileError, TagError
from langchain_tag.extraction._dedup import Relation
from langchain_tag.extraction._span_detection import Span
from langchain_tag.extraction.report import ExtractionReport
from langchain_tag.review import ReviewError, render_review
from langchain_tag.rules import load_rules, save_rules

from .conftest import MakeCorpus, MakeVerdicts


class _Page(HTMLParser):
    """Ids, links, classes and text of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[tuple[str, str | None]] = []  # (href, id of the link)
        self.classes: dict[str, int] = {}
        self.external: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        for name in str(a.get("class") or "").split():
            self.classes[name] = self.classes.get(name, 0) + 1
        if tag == "a" and a.get("href"):
            self.links.append((str(a["href"]), a.get("id")))
        for key in ("src", "href"):
            value = str(a.get(key) or "")
            if value.startswith(("http:", "https:", "//")) or (tag in {"link", "img", "script"} and value):
                self.external.append(value)
        self.scripts += tag == "script"


def _read(path: Path) -> tuple[str, _Page]:
    html = path.read_text(encoding="utf-8")
    page = _Page()
    page.feed(html)
    return html, page


def test_demo_page_links_every_span_and_card_both_ways(tmp_path: Path, demo_rules: Path, demo_policy: Path) -> None:
    out = render_review(demo_rules, demo_policy, tmp_path / "review.html")
    html, page = _read(out)
    rules = load_rules(demo_rules)
    assert len(page.ids) == len(set(page.ids)), "ids are unique"
    assert page.classes.get("span-ref") == len(rules) == 10
    links = dict(page.links)
    for rule in rules:
        assert f"span-{rule.rule_id}" in page.ids and f"rule-{rule.rule_id}" in page.ids
        assert (f"#rule-{rule.rule_id}", f"span-{rule.rule_id}") in page.links  # the span links to its card
        assert f"#span-{rule.rule_id}" in links  # and the card to its span
    assert all(href[1:] in page.ids for href, _ in page.links if href.startswith("#")), "no dangling link"
    assert page.external == [] and page.scripts == 1  # self-contained: nothing fetched
    assert "unaligned</b>" not in html or "<b>0</b> unaligned" in html
    # The document's text is all there, in order, escaped.
    assert "Never write a bare `except:` clause." in html
    assert "Passwords, API keys and tokens must never appear" in html


def test_an_edited_document_shows_the_lost_span_as_unaligned(
    tmp_path: Path, demo_rules: Path, demo_policy: Path
) -> None:
    text = demo_policy.read_text(encoding="utf-8")
    edited = tmp_path / "policy.md"
    edited.write_text(
        "A new first line moves every offset.\n\n"
        + text.replace("Put each imported module on its own `import` line.", "Imports go one per line."),
        encoding="utf-8",
    )
    html, page = _read(render_review(demo_rules, edited, tmp_path / "review.html"))
    assert page.classes.get("span-ref") == 9  # the others are found again at their new offsets
    assert "span-R-007" not in page.ids
    assert "unaligned-R-007" in page.ids and ("#unaligned-R-007", None) in page.links
    assert "Put each imported module on its own `import` line." in html  # the lost span is quoted, not dropped
    assert "<b>1</b> unaligned" in html
    assert "moved: found away from its recorded offsets" in html


def test_report_marks_normative_sentences_no_rule_covers(tmp_path: Path, demo_rules: Path, demo_policy: Path) -> None:
    text = demo_policy.read_text(encoding="utf-8")
    sentence = "Reviewers are volunteers from every product group."
    start = text.index(sentence)
    written = ExtractionReport(
        faithfulness=1.0,
        coverage=0.9,
        merged={"R-011": "R-003"},
        conflicts=[Relation("R-004", "R-005", "conflict", "")],
        uncovered_spans=[
            Span("S-099", "demo_policy.md", "x", sentence, "requirement", "", start, start + len(sentence))
        ],
    )
    report = tmp_path / "report.json"  # as langchain-tag extract --report writes it
    report.write_text(json.dumps(written.to_dict(), indent=1, default=str), encoding="utf-8")
    html, page = _read(render_review(demo_rules, demo_policy, tmp_path / "review.html", report=report))
    assert "uncovered-S-099" in page.ids and "uncovered-S-099-text" in page.ids
    assert page.classes.get("uncov-ref") == 1
    assert "merged duplicates: R-011" in html
    assert "conflicts with R-005" in html and "conflicts with R-004" in html
    assert "coverage 90.0%" in html


def test_verdicts_give_counts_plots_nearest_inputs_and_failures(
    tmp_path: Path, demo_rules: Path, demo_policy: Path, make_verdicts: MakeVerdicts
) -> None:
    inputs, verdicts = make_verdicts()
    records = [json.loads(line) for line in verdicts.read_text().splitlines()]
    html, page = _read(
        render_review(demo_rules, demo_policy, tmp_path / "r.html", verdicts=verdicts, inputs=inputs, threshold=0.5)
    )
    assert len(page.ids) == len(set(page.ids))
    assert all(href[1:] in page.ids for href, _ in page.links if href.startswith("#"))
    # Each rule's plot has its threshold line; each input lists the rules it matched.
    for rule in load_rules(demo_rules):
        assert f'id="plot-{rule.rule_id}-threshold"' in html
        matched = sum(any(m["rule_id"] == rule.rule_id for m in r["matched"]) for r in records)
        assert f"<p><b>{matched}</b> of " in html.split(f'id="rule-{rule.rule_id}"')[1]
    for record in records:
        block = html.split(f'id="input-{record["id"]}"')[1].split("</article>")[0]
        shown = [seg.split('"')[0] for seg in block.split('class="match" href="#rule-')[1:]]
        assert shown == [m["rule_id"] for m in record["matched"]]
        assert ("no rule matched" in block) == (not record["matched"] and not record.get("error"))
    # The failed judgments (the fake judge cannot answer two pairs of in-09) are listed on their rules and input.
    failing = next(r for r in records if r["failed"])
    assert {f["rule_id"] for f in failing["failed"]} == {"R-002", "R-005"}
    assert "<b>2</b> failed judgments" in html
    for rule_id in ("R-002", "R-005"):
        card = html.split(f'id="rule-{rule_id}"')[1].split("</article>")[0]
        assert '1 failed judgments</summary><ul>\n<li><a href="#input-in-09">in-09</a>' in card
    assert 'data-threshold="0.5"' in html
    # Inputs on each side: the closest matched score and the closest unmatched one for R-001.
    pairs = [
        (p["score"], r["id"]) for r in records for p in r["pairs"] if p["rule_id"] == "R-001" and p["score"] is not None
    ]
    below = max((p for p in pairs if p[0] < 0.5), default=None)
    above = min((p for p in pairs if p[0] >= 0.5), default=None)
    card = html.split('id="rule-R-001"')[1].split("</article>")[0]
    assert below is not None and above is not None
    assert f'<tr class="below"><td>not matched</td><td>{below[0]:.3f}</td><td><a href="#input-{below[1]}">' in card
    assert f'<tr class="above"><td>matched</td><td>{above[0]:.3f}</td><td><a href="#input-{above[1]}">' in card


def test_threshold_is_inferred_and_said_so_when_not_given(
    tmp_path: Path, demo_rules: Path, demo_policy: Path, make_verdicts: MakeVerdicts
) -> None:
    _, verdicts = make_verdicts(all_pairs=False)
    lowest = min(m["score"] for line in verdicts.read_text().splitlines() for m in json.loads(line)["matched"])
    html, _ = _read(render_review(demo_rules, demo_policy, tmp_path / "r.html", verdicts=verdicts))
    assert f'data-threshold="{lowest}"' in html
    assert "no threshold was given" in html and "without --all-pairs" in html
    assert "No inputs file was given" in html


def test_verdicts_without_scores_render_without_plots(tmp_path: Path, demo_rules: Path, demo_policy: Path) -> None:
    verdicts = tmp_path / "v.jsonl"
    record = {"id": "a", "matched": [{"rule_id": "R-003", "score": None, "p_yes": None}], "failed": []}
    verdicts.write_text(json.dumps(record) + "\n", encoding="utf-8")
    html, page = _read(render_review(demo_rules, demo_policy, tmp_path / "my review.html", verdicts=verdicts))
    assert "<svg" not in html and "hold no scores" in html
    assert [href for href, _ in page.links if href == "#rule-R-003"]


def test_verdicts_for_rules_whose_conditions_changed_since_are_refused_naming_them(
    tmp_path: Path, demo_rules: Path, demo_policy: Path, make_verdicts: MakeVerdicts
) -> None:
    _, verdicts = make_verdicts()
    html, _ = _read(render_review(demo_rules, demo_policy, tmp_path / "same.html", verdicts=verdicts))
    assert "unverified" not in html  # the rules the verdicts judged, unchanged
    negated = tmp_path / "negated-rules.jsonl"
    rules = load_rules(demo_rules)
    save_rules([r.model_copy(update={"condition": f"it is not the case that {r.condition}"}) for r in rules], negated)
    with pytest.raises(ReviewError) as caught:
        render_review(negated, demo_policy, tmp_path / "r.html", verdicts=verdicts)
    message = str(caught.value)
    assert f"{verdicts}:1" in message and str(negated) in message
    assert "'R-001', 'R-002', 'R-003' and others" in message and "changed since" in message
    assert not (tmp_path / "r.html").exists()


def test_verdicts_written_before_rule_fingerprints_are_read_and_marked_unverified(
    tmp_path: Path, demo_rules: Path, demo_policy: Path, make_verdicts: MakeVerdicts
) -> None:
    _, verdicts = make_verdicts()
    lines = [json.loads(line) for line in verdicts.read_text(encoding="utf-8").splitlines()]
    assert all("judged" in line for line in lines)
    verdicts.write_text("".join(json.dumps({k: v for k, v in line.items() if k != "judged"}) + "\n" for line in lines))
    html, _ = _read(render_review(demo_rules, demo_policy, tmp_path / "r.html", verdicts=verdicts))
    assert f"unverified: the {len(lines)} lines of {verdicts} do not say which rules they judged" in html


def test_verdicts_for_other_rules_are_refused_naming_both_files(
    tmp_path: Path, demo_rules: Path, demo_policy: Path, make_verdicts: MakeVerdicts
) -> None:
    _, verdicts = make_verdicts()
    other = tmp_path / "other-rules.jsonl"
    rules = load_rules(demo_rules)
    save_rules([r.model_copy(update={"rule_id": r.rule_id.replace("R-", "P-")}) for r in rules], other)
    with pytest.raises(ReviewError) as caught:
        render_review(other, demo_policy, tmp_path / "r.html", verdicts=verdicts)
    message = str(caught.value)
    assert str(verdicts) in message and str(other) in message and "'R-001'" in message
    assert isinstance(caught.value, TagError)
    # A rule file with more rules than the verdicts judged is refused too (every pair was written).
    save_rules([*rules, rules[0].model_copy(update={"rule_id": "R-099"})], other)
    with pytest.raises(ReviewError, match=r"judges none of 'R-099'"):
        render_review(other, demo_policy, tmp_path / "r.html", verdicts=verdicts)
    assert not (tmp_path / "r.html").exists()


def test_huge_inputs_are_cut_with_a_link_to_their_full_text(
    tmp_path: Path, demo_rules: Path, demo_policy: Path, make_verdicts: MakeVerdicts
) -> None:
    huge = "def f():\n    return 1\n" * 2000
    inputs, verdicts = make_verdicts(["x = 1", huge])
    out = render_review(
        demo_rules, demo_policy, tmp_path / "my page.html", verdicts=verdicts, inputs=inputs, cut_at=500
    )
    html, page = _read(out)
    assert huge[:500] in html and huge[:501] not in html
    block = html.split('id="input-in-02"')[1].split("</article>")[0]
    link = next(href for href, _ in page.links if href.startswith("my%20page_files/"))
    assert f'href="{link}"' in block and f"of {len(huge)} characters" in block
    assert (tmp_path / unquote(link)).read_text(encoding="utf-8") == huge
    assert "page_files" not in html.split('id="input-in-01"')[1].split("</article>")[0]


def test_gold_scores_and_the_suggested_threshold(
    tmp_path: Path, demo_rules: Path, demo_policy: Path, make_verdicts: MakeVerdicts
) -> None:
    inputs, verdicts = make_verdicts()
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps({"id": "in-01", "rule_ids": ["R-001"]}) + "\n" + json.dumps({"id": "in-02", "violates": ["R-003"]}),
        encoding="utf-8",
    )
    html, page = _read(
        render_review(
            demo_rules, demo_policy, tmp_path / "r.html", verdicts=verdicts, inputs=inputs, gold=gold, threshold=0.5
        )
    )
    assert "overall-f1" in page.ids and "suggested-threshold" in page.ids
    assert "Suggestion (not applied)" in html
    assert "with verdicts but no gold line not scored" in html
    bad = tmp_path / "bad-gold.jsonl"
    bad.write_text(json.dumps({"id": "in-01", "rule_ids": ["Q-1"]}) + "\n", encoding="utf-8")
    with pytest.raises(ReviewError, match=rf"{bad}:1: .*'Q-1'.*{demo_rules}"):
        render_review(demo_rules, demo_policy, tmp_path / "r.html", verdicts=verdicts, gold=bad)
    with pytest.raises(ReviewError, match="give the verdicts file"):
        render_review(demo_rules, demo_policy, tmp_path / "r.html", gold=gold)


def test_bad_files_name_the_file_and_line(tmp_path: Path, demo_rules: Path, demo_policy: Path) -> None:
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text('{"id": "a", "matched": [], "failed": []}\n\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(ReviewError, match=rf"{verdicts}:3: not a verdicts record"):
        render_review(demo_rules, demo_policy, tmp_path / "r.html", verdicts=verdicts)
    verdicts.write_text('{"id": "a", "matched": []}\n{"id": "a", "matched": []}\n', encoding="utf-8")
    with pytest.raises(ReviewError, match=rf"{verdicts}:2: input id 'a' given twice"):
        render_review(demo_rules, demo_policy, tmp_path / "r.html", verdicts=verdicts)
    verdicts.write_text("{oops\n", encoding="utf-8")
    with pytest.raises(ReviewError, match=rf"{verdicts}:1: not JSON"):
        render_review(demo_rules, demo_policy, tmp_path / "r.html", verdicts=verdicts)
    rules = tmp_path / "rules.jsonl"
    rules.write_text('{"rule_id": "R"}\n', encoding="utf-8")
    with pytest.raises(RuleFileError, match=rf"{rules}:1"):
        render_review(rules, demo_policy, tmp_path / "r.html")
    with pytest.raises(ReviewError, match=r"\[0, 1\]"):
        render_review(demo_rules, demo_policy, tmp_path / "r.html", threshold=2.0)


def test_text_from_the_files_is_escaped(tmp_path: Path, demo_rules: Path, demo_policy: Path) -> None:
    rules = load_rules(demo_rules)
    hostile = rules[0].model_copy(update={"rule_name": "<script>alert(1)</script>", "rule_id": "R <1>"})
    path = save_rules([hostile, *rules[1:]], tmp_path / "rules.jsonl")
    html, page = _read(render_review(path, demo_policy, tmp_path / "r.html"))
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert page.scripts == 1 and "rule-rule1" in page.ids and "span-rule1" in page.ids  # an id unsafe as an anchor


def test_repeated_ids_are_refused_or_kept_apart(tmp_path: Path, demo_rules: Path, demo_policy: Path) -> None:
    rules = load_rules(demo_rules)
    with pytest.raises(ReviewError, match=r"the given rules: duplicate rule_id 'R-001' \(rules 1 and \d+\)"):
        render_review([*rules, rules[0]], demo_policy, tmp_path / "r.html")
    sentences = ["Reviewers are volunteers from every product group.", "Put each imported module on its own"]
    text = demo_policy.read_text(encoding="utf-8")
    spans = [
        Span("S-1", "demo_policy.md", "x", s, "requirement", "", text.index(s), text.index(s) + len(s))
        for s in sentences
    ]
    report = tmp_path / "report.json"
    report.write_text(json.dumps(ExtractionReport(uncovered_spans=spans).to_dict()), encoding="utf-8")
    html, page = _read(render_review(rules, demo_policy, tmp_path / "r.html", report=report))
    assert page.classes.get("uncov-ref") == 2 and len(page.ids) == len(set(page.ids))  # one span id, two spans
    assert "the given rules" in html


def test_missing_extra_is_named(
    tmp_path: Path, demo_rules: Path, demo_policy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "jinja2", None)
    with pytest.raises(MissingExtraError, match=r"langchain-tag\[review\]"):
        render_review(demo_rules, demo_policy, tmp_path / "r.html")


def test_a_large_corpus_page_stays_small(tmp_path: Path, demo_policy: Path, make_corpus: MakeCorpus) -> None:
    corpus = make_corpus(1000, 200)
    out = render_review(
        corpus["rules"],
        demo_policy,
        tmp_path / "big.html",
        verdicts=corpus["verdicts"],
        inputs=corpus["inputs"],
        gold=corpus["gold"],
        threshold=0.5,
    )
    size = out.stat().st_size
    assert size < 1_500_000, f"{size:,} bytes"
    html, page = _read(out)
    assert html.count('<svg id="plot-') == 201 and len(page.ids) == len(set(page.ids))
    assert all(href[1:] in page.ids for href, _ in page.links if href.startswith("#"))


def _gold_for(tmp_path: Path, rows: list[tuple[str, list[str]]]) -> Path:
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"id": i, "rule_ids": r}) + "\n" for i, r in rows), encoding="utf-8")
    return gold


def test_each_input_shows_the_gold_rules_missed_and_wrongly_matched(
    tmp_path: Path, demo_rules: Path, demo_policy: Path, make_verdicts: MakeVerdicts
) -> None:
    inputs, verdicts = make_verdicts()
    records = {r["id"]: r for r in map(json.loads, verdicts.read_text().splitlines())}
    wanted = {"in-01": ["R-001", "R-002"], "in-02": ["R-003", "R-004", "R-009"], "in-06": []}
    gold = _gold_for(tmp_path, list(wanted.items()))
    html, _ = _read(
        render_review(
            demo_rules, demo_policy, tmp_path / "r.html", verdicts=verdicts, inputs=inputs, gold=gold, threshold=0.5
        )
    )
    order = [r.rule_id for r in load_rules(demo_rules)]
    for input_id, rule_ids in wanted.items():
        matched = {m["rule_id"] for m in records[input_id]["matched"]}
        block = html.split(f'id="input-{input_id}"')[1].split("</article>")[0]
        missed = [r for r in order if r in rule_ids and r not in matched]
        wrong = [r for r in order if r in matched and r not in rule_ids]
        assert 'class="gold-diff' in block, input_id
        if missed:
            assert (
                re.findall(r'<a href="#rule-([^"]+)">', block.split('class="missed')[1].split("</span>")[0]) == missed
            )
        if wrong:
            assert re.findall(r'<a href="#rule-([^"]+)">', block.split('class="wrong')[1].split("</span>")[0]) == wrong
        if not missed and not wrong:
            assert "agrees with the gold" in block
    # An input the gold does not hold has no diff.
    assert 'class="gold-diff' not in html.split('id="input-in-03"')[1].split("</article>")[0]


def test_no_threshold_is_suggested_when_none_does_better(tmp_path: Path, demo_rules: Path, demo_policy: Path) -> None:
    verdicts = tmp_path / "v.jsonl"
    rule_ids = [r.rule_id for r in load_rules(demo_rules)]
    rows = [("a", 0.95, True), ("b", 0.92, True), ("c", 0.3, False), ("d", 0.1, False)]
    verdicts.write_text(
        "".join(
            json.dumps(
                {
                    "id": i,
                    "matched": [{"rule_id": "R-003", "score": s, "p_yes": s}] if s >= 0.92 else [],
                    "failed": [],
                    "pairs": [
                        {"rule_id": r, "applies": r == "R-003" and s >= 0.92, "score": s if r == "R-003" else 0.01}
                        for r in rule_ids
                    ],
                }
            )
            + "\n"
            for i, s, _ in rows
        ),
        encoding="utf-8",
    )
    gold = _gold_for(tmp_path, [(i, ["R-003"] if g else []) for i, _, g in rows])
    html, page = _read(
        render_review(demo_rules, demo_policy, tmp_path / "r.html", verdicts=verdicts, gold=gold, threshold=0.92)
    )
    assert "would give F1" not in html and "Suggestion (not applied)" not in html
    assert "suggested-threshold" not in page.ids and 'id="plot-all-suggested"' not in html
    assert "no threshold does better on this gold than 0.920 (F1 100.0%)" in html


def test_rules_without_recorded_offsets_are_not_flagged_moved(
    tmp_path: Path, demo_rules: Path, demo_policy: Path
) -> None:
    rules = [r.model_copy(update={"source_start": None, "source_end": None}) for r in load_rules(demo_rules)]
    html, page = _read(render_review(rules, demo_policy, tmp_path / "r.html"))
    assert "moved" not in html
    assert page.classes.get("span-ref") == 10 and page.classes.get("flagged") is None


def test_a_key_an_old_verdicts_file_holds_is_never_rendered(tmp_path: Path) -> None:
    from importlib.resources import files

    data = files("langchain_tag") / "data"
    key = "sk-proj-Zq8v3LmN0pXr7Ty2Wb5c"
    verdicts = tmp_path / "verdicts.jsonl"
    line = {
        "id": "a",
        "matched": [],
        "failed": [{"rule_id": "R-001", "error": f"HTTP 401: Incorrect API key provided: {key}"}],
        "error": None,
    }
    verdicts.write_text(json.dumps(line) + "\n", encoding="utf-8")
    out = tmp_path / "review.html"
    render_review(str(data / "demo_rules.jsonl"), str(data / "demo_policy.md"), out, verdicts=verdicts)
    html = out.read_text(encoding="utf-8")
    assert "HTTP 401" in html and key not in html
