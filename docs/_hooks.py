"""MkDocs hooks: the benchmark's Markdown pages become pages of the site, and repository links point at them.

The pages in ``docs/`` link the benchmark's pages as the repository lays them out (``../benchmarks/results/x.md``),
so the links work on GitHub. Here those pages are added to the site under ``benchmarks/``, and each relative
link a page holds is read as a repository path and rewritten to where that file sits in the site. A link to a
repository file that is neither a docs page nor a benchmark page is left as written, so a strict build fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK_PAGES = ("benchmarks/README.md", "benchmarks/EXPERIMENTS.md", "benchmarks/results/*.md")
DIRECTORY_PAGES = {"benchmarks/results": "benchmarks.md"}
"""A repository directory linked as a whole, and the page of the site that lists its pages."""
_LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)


def _benchmark_files() -> list[str]:
    found: list[str] = []
    for pattern in BENCHMARK_PAGES:
        found += sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern))
    return found


def on_files(files: Files, config: Any) -> Files:
    """Add the benchmark's pages to the site, each at its repository path (``benchmarks/...``)."""
    for path in _benchmark_files():
        files.append(File.generated(config, path, abs_src_path=str(ROOT / path)))
    return files


def _repository_path(src_uri: str) -> str:
    """Where a page of the site sits in the repository."""
    return src_uri if src_uri.startswith("benchmarks/") else f"docs/{src_uri}"


def _site_path(repository_path: str) -> str | None:
    """Where a repository file sits in the site, or None when the site does not hold it."""
    if repository_path.startswith("docs/"):
        return repository_path.removeprefix("docs/")
    if repository_path in _benchmark_files():
        return repository_path
    return DIRECTORY_PAGES.get(repository_path.rstrip("/"))


def _rewrite(text: str, src_uri: str) -> str:
    here = posixpath.dirname(_repository_path(src_uri))
    page_dir = posixpath.dirname(src_uri)

    def link(match: re.Match[str]) -> str:
        target = match.group(2)
        if "://" in target or target.startswith(("/", "mailto:")):
            return match.group(0)
        site = _site_path(posixpath.normpath(posixpath.join(here, target)))
        if site is None:
            return match.group(0)
        relative = posixpath.relpath(site, page_dir or ".")
        return f"{match.group(1)}{relative}{match.group(3) or ''}{match.group(4)}"

    pieces, last = [], 0
    for fence in _FENCE.finditer(text):  # links inside code blocks are code, not links
        pieces += [_LINK.sub(link, text[last : fence.start()]), fence.group(0)]
        last = fence.end()
    pieces.append(_LINK.sub(link, text[last:]))
    return "".join(pieces)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Rewrite a page's repository links to the site's paths."""
    return _rewrite(markdown, page.file.src_uri)
