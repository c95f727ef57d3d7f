from __future__ import annotations

import pytest

from langchain_tag.extraction._sections import split_paragraphs, split_sections

DOC = """Intro line before any heading.

Imports
=======

Imports should usually be on separate lines.

Wildcard imports should be avoided.

## Whitespace

Avoid extraneous whitespace.
"""


def test_splits_on_rst_and_markdown_headings_with_exact_offsets() -> None:
    sections = split_sections(DOC, document_id="d")
    assert [s.title for s in sections] == ["", "Imports", "Whitespace"]
    for s in sections:
        assert DOC[s.start : s.end] == s.text
    assert "Wildcard imports" in sections[1].text and sections[1].document_id == "d"


def test_long_sections_are_cut_by_size_on_paragraph_boundaries() -> None:
    paragraph = "Every rule must be followed in all cases here. " * 6
    text = "\n\n".join(f"{i} {paragraph}" for i in range(40))
    sections = split_sections(text, document_id="d", max_chars=1000)
    assert len(sections) > 5
    assert all(len(s.text) <= 1000 for s in sections)
    assert all(text[s.start : s.end] == s.text for s in sections)
    assert "".join("".join(s.text for s in sections).split()) == "".join(text.split())  # nothing lost


def test_one_huge_paragraph_is_cut_at_sentences() -> None:
    text = "This must be done. " * 2000
    sections = split_sections(text, document_id="d", max_chars=700)
    assert all(len(s.text) <= 700 for s in sections)
    assert all(s.text.endswith(".") for s in sections)


def test_paragraphs_keep_document_offsets() -> None:
    section = split_sections(DOC, document_id="d")[1]
    paras = split_paragraphs(section)
    assert [DOC[start : start + len(t)] == t for start, t in paras] == [True, True]


def test_tiny_max_chars_is_refused() -> None:
    with pytest.raises(ValueError):
        split_sections(DOC, document_id="d", max_chars=10)


def test_short_sections_are_joined_within_max_chars() -> None:
    text = "".join(f"## Part {i}\n\nRule {i} must hold for every input we see here.\n\n" for i in range(10))
    sections = split_sections(text, document_id="d", min_chars=200, max_chars=400)
    assert 1 < len(sections) < 10
    assert all(text[s.start : s.end] == s.text and len(s.text) <= 400 for s in sections)
    assert sections[0].title.startswith("Part 0 / Part 1")
    assert [s.section_id for s in sections] == [f"d#{i}" for i in range(1, len(sections) + 1)]


RST_WITH_CODE = """Whitespace
==========

Avoid extraneous whitespace in the following situations:

- Immediately inside parentheses, brackets or braces:

  .. code-block::
     :class: bad

     # Wrong:
     spam( ham[ 1 ], { eggs: 2 } )

- Immediately before a comma.

Don't write this::

    if x == 4 : print(x , y)

Never compare to None with ``==``.
"""

MD_WITH_CODE = """# Style

Do not use wildcard imports.

```python
# Wrong: never do this.
from os import *
```

Always name what you import.
"""


def _sentences(text: str) -> list[str]:
    from langchain_tag.extraction._sections import split_sentences

    return [text[a:b] for section in split_sections(text, document_id="d") for a, b in split_sentences(section)]


def test_code_examples_are_not_sentences_rst() -> None:
    found = _sentences(RST_WITH_CODE)
    assert found == [
        "Avoid extraneous whitespace in the following situations:",
        "- Immediately inside parentheses, brackets or braces:",
        "- Immediately before a comma.",
        "Don't write this::",
        "Never compare to None with ``==``.",
    ]


def test_code_examples_are_not_sentences_markdown() -> None:
    assert _sentences(MD_WITH_CODE) == ["Do not use wildcard imports.", "Always name what you import."]


def test_code_regions_cover_the_code_and_keep_the_prose() -> None:
    from langchain_tag.extraction._sections import code_regions

    regions = code_regions(RST_WITH_CODE)
    code = "".join(RST_WITH_CODE[a:b] for a, b in regions)
    assert "spam(" in code and ".. code-block::" in code and "print(x , y)" in code
    assert "Immediately before a comma" not in code and "Don't write this" not in code
    assert code_regions("No code here.\n") == []
