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

from .conftest import MakeVerdicts

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
