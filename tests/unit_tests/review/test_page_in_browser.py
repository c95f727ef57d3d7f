"""The review page opened in a real headless browser: Debian's chromium, driven by Playwright.

No browser is downloaded: Playwright launches the system's ``/usr/bin/chromium`` (``.ci/run`` installs it
with apt-get). Without it these tests are skipped, unless ``LANGCHAIN_TAG_REQUIRE_BROWSER=1`` (set by CI)
makes a missing browser a failure. The page is opened from disk; any request that is not for a local file is
refused and fails the test. A screenshot of the demo page goes to ``LANGCHAIN_TAG_SCREENSHOTS`` (a directory)
when set, else to the test's temporary directory; its path is printed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_tag.review import render_review
from langchain_tag.rules import load_rules

from .conftest import MakeCorpus, MakeVerdicts

CHROMIUM = Path(os.environ.get("LANGCHAIN_TAG_CHROMIUM", "/usr/bin/chromium"))
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
THRESHOLD = 0.5


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        if os.environ.get("LANGCHAIN_TAG_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium; .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


class _Opened:
    """A page opened from disk, with every console error, page error and non-local request it caused."""

    def __init__(self, browser: Any, path: Path, *, javascript: bool = True) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=javascript)
        self.problems: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on(
            "console", lambda m: self.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None
        )
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.goto(path.resolve().as_uri())

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        else:
            self.problems.append(f"network request: {url}")
            route.abort()

    def in_view(self, selector: str) -> bool:
        box = self.page.locator(selector).bounding_box()
        viewport = self.page.viewport_size
        # Scrolled to an anchor, its element's top sits at the viewport's top, give or take a sub-pixel.
        return box is not None and -2 <= box["y"] < viewport["height"] and box["y"] + box["height"] > 0

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def demo_page(tmp_path: Path, demo_rules: Path, demo_policy: Path, make_verdicts: MakeVerdicts) -> Path:
    inputs, verdicts = make_verdicts()
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "".join(
            json.dumps({"id": i, "rule_ids": r}) + "\n"
            for i, r in [("in-01", ["R-001", "R-002"]), ("in-02", ["R-003", "R-005"]), ("in-05", ["R-010"])]
        ),
        encoding="utf-8",
    )
    return render_review(
        demo_rules,
        demo_policy,
        tmp_path / "review.html",
        verdicts=verdicts,
        inputs=inputs,
        gold=gold,
        threshold=THRESHOLD,
    )


def test_demo_page_opens_clean_with_every_span_highlighted(browser: Any, demo_page: Path, demo_rules: Path) -> None:
    opened = _Opened(browser, demo_page)
    try:
        page = opened.page
        with_span = [r for r in load_rules(demo_rules) if r.source_text.strip()]
        refs = page.locator("#source a.span-ref")
        assert refs.count() == len(with_span) == 10
        assert sorted(refs.evaluate_all("els => els.map(e => e.dataset.rule)")) == sorted(r.rule_id for r in with_span)
        # Each label is followed by highlighted text, and the highlight is painted.
        colours = page.locator("#source a.span-ref + mark.hl").evaluate_all(
            "els => els.map(e => getComputedStyle(e).backgroundColor)"
        )
        assert len(colours) == 10 and all(c not in ("rgba(0, 0, 0, 0)", "transparent") for c in colours)
        assert page.locator("#source").inner_text().startswith("# Northwind Python Code Review Policy")
        assert opened.problems == []
    finally:
        opened.close()


def test_each_card_link_lands_on_its_span_and_back(browser: Any, demo_page: Path, demo_rules: Path) -> None:
    opened = _Opened(browser, demo_page)
    try:
        page = opened.page
        for rule in load_rules(demo_rules):
            card = f"#rule-{rule.rule_id}"
            page.locator(f"{card} a.to-span").click()
            page.wait_for_function(f"location.hash === '#span-{rule.rule_id}'")
            assert opened.in_view(f"#span-{rule.rule_id}"), rule.rule_id
            page.locator(f"#span-{rule.rule_id}").click()
            page.wait_for_function(f"location.hash === '#rule-{rule.rule_id}'")
            assert opened.in_view(card), rule.rule_id
        assert opened.problems == []
    finally:
        opened.close()


def _line_value(page: Any, prefix: str, line: str = "threshold") -> float:
    """Where a vertical line of a plot sits, read off the drawing: 0 at the axes' left edge, 1 at the right."""
    line_box = page.locator(f"#{prefix}-{line}").bounding_box()
    axes_box = page.locator(f"#{prefix}-axes").bounding_box()
    assert line_box is not None and axes_box is not None and axes_box["width"] > 50
    centre = line_box["x"] + line_box["width"] / 2
    return float((centre - axes_box["x"]) / axes_box["width"])


def test_threshold_line_sits_at_the_configured_value(browser: Any, demo_page: Path, demo_rules: Path) -> None:
    opened = _Opened(browser, demo_page)
    try:
        page = opened.page
        prefixes = ["plot-all"] + [f"plot-{r.rule_id}" for r in load_rules(demo_rules)]
        for prefix in prefixes:
            page.locator(f"#{prefix}-axes").scroll_into_view_if_needed()
            assert _line_value(page, prefix) == pytest.approx(THRESHOLD, abs=0.01), prefix
        suggested = float(page.locator("#suggested-threshold").get_attribute("data-threshold") or "nan")
        assert _line_value(page, "plot-all", "suggested") == pytest.approx(suggested, abs=0.01)
        assert opened.problems == []
    finally:
        opened.close()


def test_page_reads_without_javascript_and_filters_with_it(browser: Any, demo_page: Path) -> None:
    plain = _Opened(browser, demo_page, javascript=False)
    try:
        assert plain.page.locator("article.card:visible").count() == 10
        assert plain.page.locator("#rule-filter").is_visible() is False  # no dead search box
        assert plain.page.locator("article.input:visible").count() == 10
    finally:
        plain.close()
    opened = _Opened(browser, demo_page)
    try:
        page = opened.page
        page.locator("#rule-filter").fill("exception")
        visible = page.locator("article.card:visible").evaluate_all("els => els.map(e => e.dataset.rule)")
        assert visible and set(visible) <= {"R-003", "R-004", "R-005"}
        page.locator("#rule-filter").fill("")
        assert page.locator("article.card:visible").count() == 10
        page.locator("#input-filter").fill("R-010")
        assert page.locator("article.input:visible").count() >= 1
        assert opened.problems == []
    finally:
        opened.close()


def test_unaligned_span_is_shown_and_linked(browser: Any, tmp_path: Path, demo_rules: Path, demo_policy: Path) -> None:
    edited = tmp_path / "policy.md"
    edited.write_text(
        demo_policy.read_text(encoding="utf-8").replace("Put each imported module on its own `import` line.", ""),
        encoding="utf-8",
    )
    opened = _Opened(browser, render_review(demo_rules, edited, tmp_path / "edited.html"))
    try:
        page = opened.page
        assert page.locator("#source a.span-ref").count() == 9
        page.locator("#rule-R-007 a.to-span").click()
        page.wait_for_function("location.hash === '#unaligned-R-007'")
        assert opened.in_view("#unaligned-R-007")
        assert "Put each imported module" in page.locator("#unaligned-R-007").inner_text()
        assert opened.problems == []
    finally:
        opened.close()


def test_screenshot_for_a_person(browser: Any, demo_page: Path, tmp_path: Path) -> None:
    target = Path(os.environ.get("LANGCHAIN_TAG_SCREENSHOTS") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    opened = _Opened(browser, demo_page)
    try:
        shot = target / "review-demo.png"
        opened.page.screenshot(path=str(shot))
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert (width, height) == (1280, 900) and len(data) > 20_000  # a painted page, not a blank one
        print(f"screenshot of the review page: {shot}")
        assert opened.problems == []
    finally:
        opened.close()


def _visible_cards(page: Any, words: str) -> list[str]:
    page.locator("#rule-filter").fill(words)
    return list(page.locator("article.card:visible").evaluate_all("els => els.map(e => e.dataset.rule)"))


def test_rule_filter_reads_only_the_cards_own_text(
    browser: Any, demo_page: Path, tmp_path: Path, demo_rules: Path, demo_policy: Path
) -> None:
    bare = _Opened(browser, render_review(demo_rules, demo_policy, tmp_path / "bare.html"))
    try:
        without = {words: _visible_cards(bare.page, words) for words in ("except", "print")}
    finally:
        bare.close()
    assert [len(v) for v in without.values()] == [3, 1]
    opened = _Opened(browser, demo_page)
    try:
        # The inputs quoted in a card's verdicts (its nearest inputs) are not the card's text.
        assert {words: _visible_cards(opened.page, words) for words in without} == without
        assert opened.problems == []
    finally:
        opened.close()


def test_matched_pairs_show_on_a_log_scale(browser: Any, tmp_path: Path, demo_rules: Path, demo_policy: Path) -> None:
    rule_ids = [r.rule_id for r in load_rules(demo_rules)]
    verdicts = tmp_path / "v.jsonl"
    lines = []
    for i in range(1000):
        scores = {r: 0.9 if r == "R-001" and i < 3 else 0.05 + (i % 7) / 100 for r in rule_ids}
        matched = [{"rule_id": r, "score": s, "p_yes": s} for r, s in scores.items() if s >= 0.5]
        pairs = [{"rule_id": r, "applies": s >= 0.5, "score": s, "p_yes": s} for r, s in scores.items()]
        lines.append(json.dumps({"id": f"c{i}", "matched": matched, "failed": [], "pairs": pairs}) + "\n")
    verdicts.write_text("".join(lines), encoding="utf-8")
    opened = _Opened(
        browser, render_review(demo_rules, demo_policy, tmp_path / "log.html", verdicts=verdicts, threshold=0.5)
    )
    try:
        page = opened.page
        page.locator("#plot-R-001-axes").scroll_into_view_if_needed()
        heights = {
            side: page.locator(f"#plot-R-001 .{side}").evaluate_all(
                "els => els.map(e => e.getBoundingClientRect().height)"
            )
            for side in ("matched", "other")
        }
        # 3 matched pairs against up to 143 unmatched ones per bin: on a linear scale the matched bar is 2% as tall.
        assert heights["matched"] and heights["other"]
        assert max(heights["matched"]) >= 0.2 * max(heights["other"]), heights
        assert opened.problems == []
    finally:
        opened.close()


def _column(page: Any, table: str, index: int) -> list[str]:
    return list(
        page.locator(f"{table} tbody tr").evaluate_all(f"rows => rows.map(r => r.cells[{index}].textContent.trim())")
    )


def test_tables_sort_by_the_column_clicked(browser: Any, demo_page: Path) -> None:
    opened = _Opened(browser, demo_page)
    try:
        page = opened.page
        table = "#verdicts table.counts"
        before = _column(page, table, 0)
        page.locator(f"{table} th", has_text="matched").click()
        matched = [int(x) for x in _column(page, table, 2)]
        assert matched == sorted(matched, reverse=True) and sorted(_column(page, table, 0)) == sorted(before)
        page.locator(f"{table} th", has_text="matched").click()
        assert [int(x) for x in _column(page, table, 2)] == sorted(matched)
        page.locator(f"{table} th", has_text="rule").first.click()
        assert _column(page, table, 0) == sorted(before)
        gold = "#gold table.counts"
        page.locator(f"{gold} th", has_text="FN").click()
        fn = [int(x) for x in _column(page, gold, 7)]
        assert fn == sorted(fn, reverse=True)
        assert page.locator(f"{gold} tr.total").count() == 1  # the total row stays out of the sort
        assert opened.problems == []
    finally:
        opened.close()


def test_page_fits_a_narrow_screen(browser: Any, demo_page: Path) -> None:
    opened = _Opened(browser, demo_page)
    try:
        page = opened.page
        page.set_viewport_size({"width": 420, "height": 900})
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{overflow} px wider than the screen"
        assert opened.problems == []
    finally:
        opened.close()


def test_a_rules_false_negatives_lead_to_their_inputs(
    browser: Any, tmp_path: Path, demo_rules: Path, demo_policy: Path, make_verdicts: MakeVerdicts
) -> None:
    inputs, verdicts = make_verdicts()
    gold = {"in-01": {"R-001", "R-009"}, "in-06": {"R-003", "R-009"}, "in-07": {"R-003"}, "in-10": {"R-009"}}
    gold_file = tmp_path / "gold.jsonl"
    gold_file.write_text("".join(json.dumps({"id": i, "rule_ids": sorted(r)}) + "\n" for i, r in gold.items()))
    missed: dict[str, list[str]] = {}
    for record in map(json.loads, verdicts.read_text().splitlines()):
        for rule_id in sorted(gold.get(record["id"], set()) - {m["rule_id"] for m in record["matched"]}):
            missed.setdefault(rule_id, []).append(f"input-{record['id']}")
    assert missed["R-003"] == ["input-in-06", "input-in-07"] and missed["R-009"] == ["input-in-01", "input-in-06"]
    page_path = render_review(
        demo_rules, demo_policy, tmp_path / "fn.html", verdicts=verdicts, inputs=inputs, gold=gold_file, threshold=0.5
    )
    opened = _Opened(browser, page_path)
    try:
        page = opened.page
        assert page.locator("nav").inner_text().split(" · ") == ["Document and rules", "Verdicts", "Inputs", "Gold"]
        for rule_id, ids in missed.items():
            link = page.locator(f"#gold a.fn-inputs[data-rule='{rule_id}']")
            assert link.inner_text() == str(len(ids))
            link.click()
            assert page.locator("article.input:visible").evaluate_all("els => els.map(e => e.id)") == ids
            assert opened.in_view("#inputs")
        assert opened.problems == []
    finally:
        opened.close()


def test_a_large_pages_plain_rule_ids_are_linked_by_its_script(
    browser: Any, tmp_path: Path, demo_policy: Path, make_corpus: MakeCorpus
) -> None:
    corpus = make_corpus(400, 40)
    out = render_review(
        corpus["rules"],
        demo_policy,
        tmp_path / "large.html",
        verdicts=corpus["verdicts"],
        inputs=corpus["inputs"],
        gold=corpus["gold"],
        threshold=0.5,
    )
    records = [json.loads(line) for line in corpus["verdicts"].read_text().splitlines()]
    matches = sum(len(r["matched"]) for r in records)
    assert 'class="match"' not in out.read_text(encoding="utf-8")  # written plainly: the page's script links them
    opened = _Opened(browser, out)
    try:
        page = opened.page
        assert page.locator("#inputs .matches a[href^='#rule-']").count() == matches
        first = page.locator("#inputs .matches a").first
        target = str(first.get_attribute("href"))
        first.click()
        page.wait_for_function(f"location.hash === '{target}'")
        assert opened.in_view(target)
        link = page.locator("#gold a.fn-inputs").first
        count = int(link.inner_text())
        link.click()
        assert page.locator("article.input:visible").count() == count
        assert opened.problems == []
    finally:
        opened.close()
