"""A PEP 8 retrieval benchmark whose gold rule sets come from pycodestyle.

The rule set has one rule per pycodestyle check code (:data:`PEP8_CHECKS`,
:func:`pep8_rules`); the inputs are Python snippets; the gold rule set of a
snippet is the set of codes pycodestyle reports for it
(:func:`pycodestyle_codes`). Any retriever (similarity top-k, the LLM
applicability judge) can then be scored with
:func:`langchain_tag.bench.metrics.score_retrieval` against that gold, with no
LLM grader.

Inputs (:func:`load_pep8_items`) are the HumanEval problems, each as
``prompt + canonical_solution`` (group ``"canonical"``), plus variants broken
by program (group ``"variant"``): :data:`TRANSFORMS` are small named
source-to-source rewrites (re-indent with two spaces, drop the spaces around
an operator, join two statements with ``;``, ...) that keep the code parsable;
:func:`make_variants` applies one to three of them at random, deterministically
for a given seed.

Which checks are in the rule set:

* Every code pycodestyle can emit for syntactically valid Python 3 code,
  including the checks pycodestyle switches off by default (E121, E123, E126,
  E226, E241, E242, E704). pycodestyle is run with nothing ignored but W503
  and W504, so the gold is exactly "what pycodestyle reports with every check
  on". The rules of the default-off checks carry the tag ``"off by default"``
  so a run can drop them from the rule set and the gold alike.
* Left out: W503 and W504 (line break before / after a binary operator: they
  contradict each other, so any wrapped expression would break one of them;
  both are off by default); E133 (only with ``--hang-closing``, which inverts
  E123); W505 (only with ``--max-doc-length``, unset by default); E112 and
  E113 (an unindented block body or an unexpected indent: not valid Python,
  so pycodestyle only reports them next to a syntax error); E901 and E902
  (syntax and I/O errors, not style).

Every check carries a small valid example that triggers it; the unit tests run
pycodestyle on each one.
"""

from __future__ import annotations

import ast
import io
import keyword
import random
import tokenize
import warnings
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from langchain_tag.rules import Rule

__all__ = [
    "DEFAULT_OFF",
    "DOCUMENT_ID",
    "EXCLUDED_CODES",
    "FAMILIES",
    "GROUPS",
    "MAX_LINE_LENGTH",
    "PEP8_CHECKS",
    "TRANSFORMS",
    "Pep8Check",
    "Pep8Item",
    "Transform",
    "apply_transform",
    "check_by_code",
    "gold_summary",
    "load_pep8_items",
    "make_variants",
    "pep8_rules",
    "pycodestyle_codes",
]

MAX_LINE_LENGTH = 79
"""Line length limit pycodestyle is run with (its default)."""

DOCUMENT_ID = "pycodestyle-checks"
"""``document_id`` of every rule from :func:`pep8_rules`."""

GROUPS: tuple[str, ...] = ("canonical", "variant")
"""Item groups: the unchanged HumanEval snippet, and a variant broken by :data:`TRANSFORMS`."""

DEFAULT_OFF: frozenset[str] = frozenset({"E121", "E123", "E126", "E226", "E241", "E242", "E704"})
"""Codes in the rule set that pycodestyle ignores unless told otherwise (kept here, tagged)."""

EXCLUDED_CODES: dict[str, str] = {
    "W503": "line break before a binary operator: contradicts W504; off by default",
    "W504": "line break after a binary operator: contradicts W503; off by default",
    "E133": "closing bracket missing indentation: only with --hang-closing, which inverts E123",
    "W505": "doc line too long: only with --max-doc-length, which is unset by default",
    "E112": "expected an indented block: only on code that does not compile",
    "E113": "unexpected indentation: only on code that does not compile",
    "E901": "syntax error: not a style check",
    "E902": "I/O error: not a style check",
}
"""pycodestyle codes left out of the rule set, with the reason."""

FAMILIES: dict[str, str] = {
    "E1": "indentation",
    "W1": "indentation",
    "E2": "whitespace",
    "W2": "whitespace",
    "E3": "blank lines",
    "W3": "blank lines",
    "E4": "imports",
    "E5": "line length",
    "E7": "statements",
    "W6": "deprecation",
}
"""Check family by code prefix (pycodestyle's own grouping)."""

_IGNORED = ("W503", "W504")


# --------------------------------------------------------------------------
# The checks.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Pep8Check:
    """One pycodestyle check, stated as a rule.

    Attributes:
        code: The pycodestyle code, e.g. ``"E501"``.
        name: A short name (three to eight words).
        condition: A property of a Python snippet, checkable by reading it.
        action: What to change so the snippet no longer has that property.
        message: pycodestyle's one-line message for the code.
        example: A small valid snippet for which pycodestyle reports the code.
    """

    code: str
    name: str
    condition: str
    action: str
    message: str
    example: str

    @property
    def family(self) -> str:
        """The check's family, e.g. ``"whitespace"`` (see :data:`FAMILIES`)."""
        return FAMILIES[self.code[:2]]

    @property
    def default_off(self) -> bool:
        """Whether pycodestyle skips this check unless it is selected."""
        return self.code in DEFAULT_OFF


_C = Pep8Check

PEP8_CHECKS: tuple[Pep8Check, ...] = (
    # ---------------------------------------------------------- indentation
    _C(
        "E101",
        "indentation mixes tabs and spaces",
        "Some line's indentation mixes tab and space characters, or uses a different indentation character "
        "than the rest of the code.",
        "Re-indent the affected lines with spaces only, four per level.",
        "indentation contains mixed spaces and tabs",
        "if True:\n\tx = 1\nif True:\n    y = 2\n",
    ),
    _C(
        "E111",
        "indentation not a multiple of four",
        "A statement is indented by a number of columns that is not a multiple of four (for example two or "
        "six spaces).",
        "Indent every block level by exactly four spaces.",
        "indentation is not a multiple of 4",
        "if True:\n  x = 1\n",
    ),
    _C(
        "E114",
        "comment indentation not a multiple of four",
        "A line holding only a comment is indented by a number of columns that is not a multiple of four.",
        "Indent the comment by a multiple of four spaces, at the level of the code it describes.",
        "indentation is not a multiple of 4 (comment)",
        "if True:\n    x = 1\n  # note\n",
    ),
    _C(
        "E115",
        "comment not indented under block header",
        "A comment-only line right after a line that opens a block (a line ending in a colon) is not indented "
        "deeper than that line.",
        "Indent the comment to the level of the block body that follows it.",
        "expected an indented block (comment)",
        "if True:\n# note\n    x = 1\n",
    ),
    _C(
        "E116",
        "comment with unexpected extra indentation",
        "A comment-only line is indented deeper than the statement before it although no new block was opened.",
        "Dedent the comment to the indentation of the surrounding code.",
        "unexpected indentation (comment)",
        "x = 1\n    # note\n",
    ),
    _C(
        "E117",
        "block body indented too far",
        "The body of a block is indented by more than one level (more than four spaces, or more than one tab) "
        "relative to the line that opens the block.",
        "Indent the block body by exactly one level, four spaces.",
        "over-indented",
        "if True:\n        x = 1\n",
    ),
    _C(
        "E121",
        "hanging indent indented too little",
        "A continuation line inside brackets whose opening line ends right after the bracket (a hanging "
        "indent) is indented by fewer than four spaces relative to the opening line.",
        "Indent hanging continuation lines by four spaces relative to the line with the opening bracket.",
        "continuation line under-indented for hanging indent",
        "x = (\n  1)\n",
    ),
    _C(
        "E122",
        "continuation line missing indentation",
        "A continuation line inside brackets is not indented beyond the start of its statement, or is dedented "
        "further left.",
        "Indent the continuation line: four extra spaces for a hanging indent, or align it with the first item "
        "after the opening bracket.",
        "continuation line missing indentation or outdented",
        "x = (\n1)\n",
    ),
    _C(
        "E123",
        "closing bracket indented like hanging items",
        "In a hanging-indent construct, a closing bracket on its own line is indented like the items instead "
        "of lining up with the start of the line that holds the opening bracket.",
        "Dedent the closing bracket to the indentation of the line with the opening bracket.",
        "closing bracket does not match indentation of opening bracket's line",
        "x = [\n    1,\n    ]\n",
    ),
    _C(
        "E124",
        "closing bracket off the visual alignment",
        "The items inside brackets are aligned with the first item after the opening bracket, and a closing "
        "bracket that starts a line is not in that aligned column.",
        "Put the closing bracket at the end of the last item's line, or in the column of the aligned items.",
        "closing bracket does not match visual indentation",
        "x = foo(1,\n        2\n)\n",
    ),
    _C(
        "E125",
        "wrapped header indented like its body",
        "A continuation line of a block header (an if, while, def or similar line that is wrapped inside "
        "brackets) is indented to the same column as the body of that block.",
        "Indent the header's continuation lines one more level (eight spaces) so they stand apart from the body.",
        "continuation line with same indent as next logical line",
        "if (\n    True):\n    pass\n",
    ),
    _C(
        "E126",
        "hanging indent indented too far",
        "A hanging-indent continuation line inside brackets is indented by more than four spaces relative to "
        "the line with the opening bracket.",
        "Indent hanging continuation lines by exactly four spaces relative to the line with the opening bracket.",
        "continuation line over-indented for hanging indent",
        "x = (\n        1)\n",
    ),
    _C(
        "E127",
        "visual continuation indented too far",
        "Inside brackets whose first item follows the opening bracket on the same line, a continuation line "
        "starts to the right of that first item's column.",
        "Align the continuation line with the first item after the opening bracket.",
        "continuation line over-indented for visual indent",
        "x = foo(1,\n          2)\n",
    ),
    _C(
        "E128",
        "visual continuation indented too little",
        "Inside brackets whose first item follows the opening bracket on the same line, a continuation line "
        "starts to the left of that first item's column.",
        "Align the continuation line with the first item after the opening bracket.",
        "continuation line under-indented for visual indent",
        "x = foo(1,\n    2)\n",
    ),
    _C(
        "E129",
        "aligned header continuation matches body",
        "A block header wrapped inside brackets has a continuation line aligned with the first item after the "
        "bracket, and that column is the same as the indentation of the block body.",
        "Indent the wrapped condition further, or add a comment line, so it does not line up with the body.",
        "visually indented line with same indent as next logical line",
        "if (True or\n    False):\n    pass\n",
    ),
    _C(
        "E131",
        "hanging continuation lines not aligned",
        "Within one bracket using a hanging indent, a later continuation line is indented differently from the "
        "earlier ones and lines up with nothing above it.",
        "Indent all continuation lines of the bracket to the same column.",
        "continuation line unaligned for hanging indent",
        "x = [\n    1,\n      2]\n",
    ),
    # ----------------------------------------------------------- whitespace
    _C(
        "E201",
        "whitespace after opening bracket",
        "A space or tab directly follows an opening parenthesis, square bracket or brace.",
        "Delete the whitespace right after the opening bracket.",
        "whitespace after '('",
        "f( 1)\n",
    ),
    _C(
        "E202",
        "whitespace before closing bracket",
        "A space or tab directly precedes a closing parenthesis, square bracket or brace.",
        "Delete the whitespace right before the closing bracket.",
        "whitespace before ')'",
        "f(1 )\n",
    ),
    _C(
        "E203",
        "whitespace before comma, colon or semicolon",
        "Whitespace directly precedes a comma, a semicolon or a colon.",
        "Delete the whitespace before the comma, semicolon or colon.",
        "whitespace before ','",
        "x = [1 , 2]\n",
    ),
    _C(
        "E204",
        "whitespace after decorator at sign",
        "A decorator has whitespace between the @ sign and the decorator expression.",
        "Write the decorator name right after the @ sign.",
        "whitespace after decorator '@'",
        "@ staticmethod\ndef f():\n    pass\n",
    ),
    _C(
        "E211",
        "whitespace before call or subscript bracket",
        "Whitespace separates a name or expression from the opening parenthesis of its call or the opening "
        "square bracket of its subscript, as in print (x) or items [0].",
        "Delete the whitespace so the bracket directly follows what is called or indexed.",
        "whitespace before '('",
        "print (1)\n",
    ),
    _C(
        "E221",
        "several spaces before an operator",
        "More than one space precedes an operator, for example to line up the = signs of several assignments.",
        "Leave exactly one space before the operator.",
        "multiple spaces before operator",
        "x  = 1\n",
    ),
    _C(
        "E222",
        "several spaces after an operator",
        "More than one space follows an operator.",
        "Leave exactly one space after the operator.",
        "multiple spaces after operator",
        "x =  1\n",
    ),
    _C(
        "E223",
        "tab character before an operator",
        "A tab character, rather than a space, precedes an operator.",
        "Replace the tab before the operator with a single space.",
        "tab before operator",
        "x\t= 1\n",
    ),
    _C(
        "E224",
        "tab character after an operator",
        "A tab character, rather than a space, follows an operator.",
        "Replace the tab after the operator with a single space.",
        "tab after operator",
        "x =\t1\n",
    ),
    _C(
        "E225",
        "missing spaces around an operator",
        "An assignment, augmented assignment, comparison or boolean operator is not surrounded by whitespace "
        "on both sides, as in x=1, n +=1 or a==b.",
        "Put one space on each side of the operator.",
        "missing whitespace around operator",
        "x=1\n",
    ),
    _C(
        "E226",
        "missing spaces around arithmetic operator",
        "A binary arithmetic operator (+, -, *, /, //, **, @) has no whitespace on either side, as in a+b.",
        "Put one space on each side of the arithmetic operator.",
        "missing whitespace around arithmetic operator",
        "x = 1+2\n",
    ),
    _C(
        "E227",
        "missing spaces around bitwise operator",
        "A bitwise or shift operator (|, &, ^, <<, >>) has no whitespace on either side, as in a|b.",
        "Put one space on each side of the bitwise or shift operator.",
        "missing whitespace around bitwise or shift operator",
        "x = 1|2\n",
    ),
    _C(
        "E228",
        "missing spaces around modulo operator",
        "The % operator has no whitespace on either side, as in a%b or fmt%args.",
        "Put one space on each side of the % operator.",
        "missing whitespace around modulo operator",
        "x = 5%2\n",
    ),
    _C(
        "E231",
        "missing space after comma or colon",
        "A comma, semicolon or colon is directly followed by another character instead of whitespace, as in "
        "[1,2] or {'a':1} (slices and trailing commas before a closing bracket aside).",
        "Put one space after the comma, semicolon or colon.",
        "missing whitespace after ','",
        "x = [1,2]\n",
    ),
    _C(
        "E241",
        "several spaces after a comma",
        "More than one space follows a comma, semicolon or colon.",
        "Leave exactly one space after the comma, semicolon or colon.",
        "multiple spaces after ','",
        "x = [1,  2]\n",
    ),
    _C(
        "E242",
        "tab character after a comma",
        "A tab character follows a comma, semicolon or colon.",
        "Replace the tab after the comma, semicolon or colon with one space.",
        "tab after ','",
        "x = [1,\t2]\n",
    ),
    _C(
        "E251",
        "spaces around keyword argument equals",
        "A keyword argument in a call, or a default value of a parameter without a type annotation, has "
        "whitespace around its = sign, as in f(a = 1) or def f(a = 1).",
        "Delete the spaces around the = of the keyword argument or default value.",
        "unexpected spaces around keyword / parameter equals",
        "f(a = 1)\n",
    ),
    _C(
        "E252",
        "missing spaces around annotated default",
        "A parameter with a type annotation and a default value has no space on one or both sides of its = "
        "sign, as in def f(a: int=1).",
        "Put one space on each side of the = of an annotated parameter's default.",
        "missing whitespace around parameter equals",
        "def f(a: int=1):\n    pass\n",
    ),
    _C(
        "E261",
        "inline comment too close to code",
        "A comment that follows code on the same line is separated from the code by fewer than two spaces.",
        "Put at least two spaces between the code and the # of the inline comment.",
        "at least two spaces before inline comment",
        "x = 1 # note\n",
    ),
    _C(
        "E262",
        "inline comment not starting with hash-space",
        "A comment that follows code on the same line does not start with a single # followed by one space, "
        "as in #note or #  note.",
        "Start the inline comment with # and one space.",
        "inline comment should start with '# '",
        "x = 1  #note\n",
    ),
    _C(
        "E265",
        "block comment not starting with hash-space",
        "A comment on a line of its own starts with # directly followed by text, as in #note (a first-line "
        "#! line aside).",
        "Put a space after the # of the block comment.",
        "block comment should start with '# '",
        "#note\nx = 1\n",
    ),
    _C(
        "E266",
        "block comment with several hash signs",
        "A comment on a line of its own starts with two or more # characters followed by text, as in ## note.",
        "Start the block comment with a single # and one space.",
        "too many leading '#' for block comment",
        "## note\nx = 1\n",
    ),
    _C(
        "E271",
        "several spaces after a keyword",
        "More than one space follows a keyword such as and, or, in, not, if, return or import.",
        "Leave exactly one space after the keyword.",
        "multiple spaces after keyword",
        "x = a and  b\n",
    ),
    _C(
        "E272",
        "several spaces before a keyword",
        "More than one space precedes a keyword such as and, or, in, if or else.",
        "Leave exactly one space before the keyword.",
        "multiple spaces before keyword",
        "x = a  and b\n",
    ),
    _C(
        "E273",
        "tab character after a keyword",
        "A tab character follows a keyword.",
        "Replace the tab after the keyword with one space.",
        "tab after keyword",
        "x = a and\tb\n",
    ),
    _C(
        "E274",
        "tab character before a keyword",
        "A tab character precedes a keyword.",
        "Replace the tab before the keyword with one space.",
        "tab before keyword",
        "x = a\tand b\n",
    ),
    _C(
        "E275",
        "missing space after a keyword",
        "A keyword is directly followed by an opening bracket or other character without whitespace, as in "
        "if(x): or not(x) or import(a).",
        "Put one space after the keyword.",
        "missing whitespace after keyword",
        "if(True):\n    pass\n",
    ),
    # ---------------------------------------------------------- blank lines
    _C(
        "E301",
        "missing blank line before method",
        "Inside a class body, a method or nested definition directly follows other code of the class with no "
        "blank line between them.",
        "Put one blank line before the method definition.",
        "expected 1 blank line, found 0",
        "class A:\n    x = 1\n    def f(self):\n        pass\n",
    ),
    _C(
        "E302",
        "missing two blank lines before definition",
        "A top-level function or class definition (with its decorators and leading comments) follows other "
        "code with fewer than two blank lines between them.",
        "Put exactly two blank lines before the top-level function or class definition.",
        "expected 2 blank lines, found 1",
        "x = 1\n\ndef f():\n    pass\n",
    ),
    _C(
        "E303",
        "too many consecutive blank lines",
        "More than two blank lines follow each other, or more than one inside an indented block.",
        "Reduce the run of blank lines to at most two at top level and at most one inside a block.",
        "too many blank lines (3)",
        "x = 1\n\n\n\ny = 2\n",
    ),
    _C(
        "E304",
        "blank line after a decorator",
        "A blank line separates a decorator from the definition it decorates.",
        "Delete the blank lines between the decorator and the def or class line.",
        "blank lines found after function decorator",
        "@staticmethod\n\ndef f():\n    pass\n",
    ),
    _C(
        "E305",
        "missing blank lines after definition",
        "Top-level code that follows a function or class definition is separated from it by fewer than two "
        "blank lines.",
        "Put two blank lines between the end of the definition and the following top-level code.",
        "expected 2 blank lines after class or function definition, found 0",
        "def f():\n    pass\nx = 1\n",
    ),
    _C(
        "E306",
        "missing blank line before nested definition",
        "Inside a function body, a nested def or class directly follows other statements with no blank line before it.",
        "Put one blank line before the nested definition.",
        "expected 1 blank line before a nested definition, found 0",
        "def f():\n    x = 1\n    def g():\n        pass\n",
    ),
    # -------------------------------------------------------------- imports
    _C(
        "E401",
        "several modules imported on one line",
        "A single import statement imports more than one module, separated by commas, as in import os, sys.",
        "Write one import statement per module, each on its own line.",
        "multiple imports on one line",
        "import os, sys\n",
    ),
    _C(
        "E402",
        "module import after other code",
        "A module-level import statement comes after other module-level code, such as an assignment or a "
        "function definition, rather than at the top of the file.",
        "Move the import to the top of the file, after the module docstring and comments.",
        "module level import not at top of file",
        "x = 1\nimport os\n",
    ),
    # ---------------------------------------------------------- line length
    _C(
        "E501",
        "line longer than 79 characters",
        "A line is longer than 79 characters.",
        "Wrap or shorten the line so it is at most 79 characters, preferably using brackets for continuation.",
        "line too long (80 > 79 characters)",
        "x = '" + "a" * 80 + "'\n",
    ),
    _C(
        "E502",
        "redundant backslash inside brackets",
        "A line ends with a backslash continuation although it is already inside parentheses, brackets or "
        "braces, where the line break needs no backslash.",
        "Delete the backslash at the end of the line.",
        "the backslash is redundant between brackets",
        "x = (1 + \\\n     2)\n",
    ),
    # ----------------------------------------------------------- statements
    _C(
        "E701",
        "block body on header line",
        "A block statement such as if, for, while, with, try, else or class has its body on the same line, "
        "after the colon.",
        "Move the body to the following line, indented by four spaces.",
        "multiple statements on one line (colon)",
        "if True: x = 1\n",
    ),
    _C(
        "E702",
        "statements joined with a semicolon",
        "Two or more statements share one line, separated by semicolons.",
        "Put each statement on its own line and delete the semicolons.",
        "multiple statements on one line (semicolon)",
        "x = 1; y = 2\n",
    ),
    _C(
        "E703",
        "statement ending with a semicolon",
        "A statement ends with a needless semicolon.",
        "Delete the trailing semicolon.",
        "statement ends with a semicolon",
        "x = 1;\n",
    ),
    _C(
        "E704",
        "function body on def line",
        "A function definition has its body on the same line as the def header, as in def f(x): return x.",
        "Move the function body to the following line, indented by four spaces.",
        "statement on same line as def",
        "def f(x): return x\n",
    ),
    _C(
        "E711",
        "comparison to None with equality",
        "A value is compared with None using == or != instead of is or is not.",
        "Compare with None using is or is not.",
        "comparison to None should be 'if cond is None:'",
        "if x == None:\n    pass\n",
    ),
    _C(
        "E712",
        "comparison to True or False",
        "A value is compared with True or False using == or !=.",
        "Test the value's truth directly (if x: / if not x:), or use is when the exact bool is required.",
        "comparison to True should be 'if cond is True:' or 'if cond:'",
        "if x == True:\n    pass\n",
    ),
    _C(
        "E713",
        "negated membership written as not x in y",
        "A membership test is negated by putting not before the whole test, as in not x in y.",
        "Write the negated membership test with the not in operator: x not in y.",
        "test for membership should be 'not in'",
        "if not x in y:\n    pass\n",
    ),
    _C(
        "E714",
        "negated identity written as not x is y",
        "An identity test is negated by putting not before the whole test, as in not x is y.",
        "Write the negated identity test with the is not operator: x is not y.",
        "test for object identity should be 'is not'",
        "if not x is y:\n    pass\n",
    ),
    _C(
        "E721",
        "type comparison with equality",
        "Types are compared with == or !=, as in type(a) == type(b) or type(a) == int.",
        "Use isinstance() for type checks, or is / is not for an exact type match.",
        "do not compare types, for exact checks use `is` / `is not`, for instance checks use `isinstance()`",
        "if type(x) == type(y):\n    pass\n",
    ),
    _C(
        "E722",
        "bare except clause",
        "An except clause names no exception class (a bare except:), so it catches every exception.",
        "Name the exception classes to catch, or at least catch Exception.",
        "do not use bare 'except'",
        "try:\n    pass\nexcept:\n    pass\n",
    ),
    _C(
        "E731",
        "lambda assigned to a name",
        "A lambda expression is assigned directly to a variable, as in f = lambda x: x + 1.",
        "Define the function with a def statement instead.",
        "do not assign a lambda expression, use a def",
        "f = lambda x: x\n",
    ),
    _C(
        "E741",
        "ambiguous single-letter variable name",
        "A variable, parameter, loop target or other bound name is the single letter l, O or I, which is "
        "easily confused with 1 or 0.",
        "Rename the variable to a longer, descriptive name.",
        "ambiguous variable name 'l'",
        "l = 1\n",
    ),
    _C(
        "E742",
        "ambiguous single-letter class name",
        "A class is named with the single letter l, O or I.",
        "Rename the class to a descriptive name.",
        "ambiguous class definition 'I'",
        "class I:\n    pass\n",
    ),
    _C(
        "E743",
        "ambiguous single-letter function name",
        "A function is named with the single letter l, O or I.",
        "Rename the function to a descriptive name.",
        "ambiguous function definition 'l'",
        "def l():\n    pass\n",
    ),
    # ------------------------------------------------------------- warnings
    _C(
        "W191",
        "indentation uses tab characters",
        "Some line is indented with tab characters.",
        "Indent with spaces only, four per level.",
        "indentation contains tabs",
        "if True:\n\tx = 1\n",
    ),
    _C(
        "W291",
        "trailing whitespace on a line",
        "A line with content ends with spaces or tabs.",
        "Delete the whitespace at the end of the line.",
        "trailing whitespace",
        "x = 1 \n",
    ),
    _C(
        "W292",
        "no newline at end of file",
        "The last line of the code is not terminated by a newline character.",
        "End the file with a single newline character.",
        "no newline at end of file",
        "x = 1",
    ),
    _C(
        "W293",
        "whitespace on a blank line",
        "A line that is otherwise empty contains spaces or tabs.",
        "Delete the whitespace so the blank line is empty.",
        "blank line contains whitespace",
        "x = 1\n    \ny = 2\n",
    ),
    _C(
        "W391",
        "blank lines at end of file",
        "The code ends with one or more blank lines after its last line of content.",
        "Delete the blank lines at the end so the file ends with one newline.",
        "blank line at end of file",
        "x = 1\n\n",
    ),
    _C(
        "W605",
        "invalid escape sequence in string",
        "A string literal that is not raw contains a backslash escape Python does not define, such as \\d or "
        "\\. in a regular expression.",
        "Make the string raw (r'...') or double the backslash.",
        "invalid escape sequence '\\d'",
        "pattern = '\\d'\n",
    ),
)
"""The rule set: one entry per pycodestyle code kept (see the module docstring)."""

_CHECKS_BY_CODE: dict[str, Pep8Check] = {check.code: check for check in PEP8_CHECKS}


def check_by_code(code: str) -> Pep8Check:
    """The check with the given code.

    Raises:
        KeyError: When the code is not in the rule set.
    """
    return _CHECKS_BY_CODE[code]


def pep8_rules() -> list[Rule]:
    """The checks of :data:`PEP8_CHECKS` as :class:`Rule` objects.

    Like the NBA catalog rules, the rules have no source span: the source text
    is pycodestyle's own message for the code. The rule id is the code
    (``"E501"``); the tags are ``"pep8"``, the family (``"whitespace"``, ...)
    and, for checks pycodestyle skips by default, ``"off by default"``.

    Returns:
        One rule per check, in table order.
    """
    rules: list[Rule] = []
    for check in PEP8_CHECKS:
        tags = ["pep8", check.family] + (["off by default"] if check.default_off else [])
        rules.append(
            Rule(
                rule_id=check.code,
                rule_name=check.name,
                condition=check.condition,
                action=check.action,
                source_text=f"pycodestyle {check.code}: {check.message}",
                category_tags=tags,
                document_id=DOCUMENT_ID,
            )
        )
    return rules


# --------------------------------------------------------------------------
# Gold: what pycodestyle reports.
# --------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _style_options() -> Any:
    try:
        import pycodestyle
    except ImportError as exc:  # pragma: no cover - the bench extra installs it
        raise ImportError("the PEP 8 benchmark needs pycodestyle: pip install 'langchain-tag[bench]'") from exc
    # Every option that changes what is reported is set here, so a user or
    # project configuration file cannot change the gold.
    guide = pycodestyle.StyleGuide(
        quiet=True,
        select=[],
        ignore=list(_IGNORED),
        max_line_length=MAX_LINE_LENGTH,
        max_doc_length=None,
        hang_closing=False,
        indent_size=4,
        verbose=0,
    )
    return guide.options


def pycodestyle_codes(code: str) -> tuple[str, ...]:
    """The rule-set codes pycodestyle reports for a snippet.

    pycodestyle runs in process on the snippet's lines (nothing is printed)
    with every check on except W503 and W504, and a 79-character line limit.

    Args:
        code: Python source text.

    Returns:
        Sorted unique codes, only those in :data:`PEP8_CHECKS`.
    """
    import pycodestyle

    options = _style_options()
    found: set[str] = set()

    class _Collect(pycodestyle.BaseReport):  # type: ignore[misc]
        def error(self, line_number: int, offset: int, text: str, check: Any) -> Any:
            result = super().error(line_number, offset, text, check)
            if result:
                found.add(result)
            return result

    lines = io.StringIO(code, newline=None).readlines()
    pycodestyle.Checker(lines=lines, options=options, report=_Collect(options)).check_all()
    return tuple(sorted(found & _CHECKS_BY_CODE.keys()))


# --------------------------------------------------------------------------
# Style-breaking transforms.
# --------------------------------------------------------------------------
TransformFn = Callable[[str, random.Random], "str | None"]


@dataclass(frozen=True)
class Transform:
    """A named rewrite that breaks one style rule and keeps the code parsable.

    Attributes:
        name: Short id, used in variant names.
        codes: Codes the rewrite is meant to produce on clean code.
        description: What the rewrite does.
        fn: ``fn(source, rng)`` returns the rewritten source, or ``None``
            when the rewrite does not apply (it picks a site with ``rng``).
    """

    name: str
    codes: tuple[str, ...]
    description: str
    fn: TransformFn


def _parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _tree(source: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    try:
        return list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return []


def _lines(source: str) -> list[str]:
    return source.splitlines(keepends=True)


Edit = tuple[tuple[int, int], tuple[int, int], str]


def _splice(source: str, edits: Iterable[Edit]) -> str:
    """Apply edits ``((row, col), (row, col), text)`` (1-based rows, character columns)."""
    lines = _lines(source)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(pos: tuple[int, int]) -> int:
        row, col = pos
        return starts[min(row - 1, len(lines))] + col

    out = source
    for start, end, text in sorted(edits, key=lambda e: (offset(e[0]), offset(e[1])), reverse=True):
        out = out[: offset(start)] + text + out[offset(end) :]
    return out


def _char_col(line: str, byte_col: int) -> int:
    """ast's UTF-8 byte column as a character column."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _segment(lines: Sequence[str], node: ast.AST) -> tuple[int, int, int] | None:
    """``(row, start_col, end_col)`` in characters of a node on a single line, else ``None``."""
    row, end_row = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if row is None or row != end_row or row > len(lines):
        return None
    line = lines[row - 1]
    return row, _char_col(line, node.col_offset), _char_col(line, node.end_col_offset or 0)  # type: ignore[attr-defined]


def _is_fstring_part(token: tokenize.TokenInfo) -> bool:
    return tokenize.tok_name.get(token.type, "").startswith(("FSTRING", "TSTRING"))


def _code_tokens(tokens: Sequence[tokenize.TokenInfo]) -> Iterator[tuple[int, tokenize.TokenInfo, list[str]]]:
    """Yield ``(index, token, open_brackets)`` for tokens outside f-strings."""
    stack: list[str] = []
    fdepth = 0
    for index, token in enumerate(tokens):
        name = tokenize.tok_name.get(token.type, "")
        if name in ("FSTRING_START", "TSTRING_START"):
            fdepth += 1
        elif name in ("FSTRING_END", "TSTRING_END"):
            fdepth -= 1
        if fdepth or _is_fstring_part(token):
            continue
        if token.type == tokenize.OP and token.string in "([{":
            yield index, token, list(stack)
            stack.append(token.string)
            continue
        if token.type == tokenize.OP and token.string in ")]}" and stack:
            stack.pop()
        yield index, token, list(stack)


_OPERAND_TYPES = (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)


def _is_operand_end(token: tokenize.TokenInfo) -> bool:
    if token.type == tokenize.NAME:
        return not keyword.iskeyword(token.string) or token.string in ("True", "False", "None")
    return token.type in _OPERAND_TYPES or token.string in (")", "]", "}")


def _is_operand_start(token: tokenize.TokenInfo) -> bool:
    if token.type == tokenize.NAME:
        return not keyword.iskeyword(token.string) or token.string in ("True", "False", "None")
    return token.type in _OPERAND_TYPES or token.string in ("(", "[", "{")


def _spaced_op(tokens: Sequence[tokenize.TokenInfo], index: int) -> bool:
    """Whether tokens[index] has exactly one space on each side, on one line."""
    if index == 0 or index + 1 >= len(tokens):
        return False
    prev, tok, nxt = tokens[index - 1], tokens[index], tokens[index + 1]
    row = tok.start[0]
    if prev.end[0] != row or nxt.start[0] != row:
        return False
    line = tok.line
    return (
        prev.end[1] == tok.start[1] - 1
        and nxt.start[1] == tok.end[1] + 1
        and line[tok.start[1] - 1] == " "
        and line[tok.end[1]] == " "
    )


def _tighten(source: str, rng: random.Random, ops: frozenset[str], *, top_level: bool, binary: bool) -> str | None:
    tokens = _tokens(source)
    sites = []
    for index, token, stack in _code_tokens(tokens):
        if token.type != tokenize.OP or token.string not in ops or not _spaced_op(tokens, index):
            continue
        if top_level and stack:
            continue
        if binary and not (_is_operand_end(tokens[index - 1]) and _is_operand_start(tokens[index + 1])):
            continue
        sites.append(index)
    if not sites:
        return None
    index = rng.choice(sites)
    return _splice(source, [(tokens[index - 1].end, tokens[index + 1].start, tokens[index].string)])


def _t_tight_assignment(source: str, rng: random.Random) -> str | None:
    return _tighten(source, rng, frozenset({"="}), top_level=True, binary=False)


def _t_tight_comparison(source: str, rng: random.Random) -> str | None:
    return _tighten(source, rng, frozenset({"==", "!=", "<", ">", "<=", ">="}), top_level=False, binary=True)


def _t_tight_arithmetic(source: str, rng: random.Random) -> str | None:
    return _tighten(source, rng, frozenset({"+", "-", "*", "/", "//"}), top_level=False, binary=True)


def _t_no_space_after_comma(source: str, rng: random.Random) -> str | None:
    tokens = _tokens(source)
    sites = []
    for index, token, _ in _code_tokens(tokens):
        if token.string != "," or token.type != tokenize.OP or index + 1 >= len(tokens):
            continue
        nxt = tokens[index + 1]
        if nxt.start[0] == token.end[0] and nxt.start[1] == token.end[1] + 1 and nxt.string not in ")]}":
            sites.append(index)
    if not sites:
        return None
    index = rng.choice(sites)
    return _splice(source, [(tokens[index].end, tokens[index + 1].start, "")])


def _t_spaces_inside_brackets(source: str, rng: random.Random) -> str | None:
    tokens = _tokens(source)
    opened: list[int] = []
    pairs: list[tuple[int, int]] = []
    for index, token, _ in _code_tokens(tokens):
        if token.type != tokenize.OP:
            continue
        if token.string in "([{":
            opened.append(index)
        elif token.string in ")]}" and opened:
            start = opened.pop()
            open_tok, first, last = tokens[start], tokens[start + 1], tokens[index - 1]
            if (
                index - start > 1
                and open_tok.start[0] == token.start[0]
                and first.start == open_tok.end
                and last.end == token.start
            ):
                pairs.append((start, index))
    if not pairs:
        return None
    start, end = rng.choice(pairs)
    return _splice(source, [(tokens[start].end, tokens[start].end, " "), (tokens[end].start, tokens[end].start, " ")])


def _t_space_before_paren(source: str, rng: random.Random) -> str | None:
    tokens = _tokens(source)
    sites = []
    for index, token, _ in _code_tokens(tokens):
        if token.type != tokenize.NAME or index + 1 >= len(tokens) or index == 0:
            continue
        nxt = tokens[index + 1]
        if (
            nxt.string == "("
            and nxt.start == token.end
            and not keyword.iskeyword(token.string)
            and not keyword.issoftkeyword(token.string)
            and tokens[index - 1].string not in ("def", "class")
        ):
            sites.append(index)
    if not sites:
        return None
    index = rng.choice(sites)
    return _splice(source, [(tokens[index].end, tokens[index].end, " ")])


def _t_keyword_equals_spaces(source: str, rng: random.Random) -> str | None:
    tokens = _tokens(source)
    sites = []
    for index, token, stack in _code_tokens(tokens):
        if token.string != "=" or token.type != tokenize.OP or not stack or stack[-1] != "(":
            continue
        prev, nxt = tokens[index - 1], tokens[index + 1]
        if prev.type == tokenize.NAME and prev.end == token.start and nxt.start == token.end:
            sites.append(index)
    if not sites:
        return None
    index = rng.choice(sites)
    return _splice(source, [(tokens[index].start, tokens[index].end, " = ")])


def _t_tab_before_operator(source: str, rng: random.Random) -> str | None:
    tokens = _tokens(source)
    sites = [
        index
        for index, token, stack in _code_tokens(tokens)
        if token.string == "=" and token.type == tokenize.OP and not stack and _spaced_op(tokens, index)
    ]
    if not sites:
        return None
    index = rng.choice(sites)
    return _splice(source, [(tokens[index - 1].end, tokens[index].start, "\t")])


def _line_depths(source: str) -> dict[int, int]:
    """Block depth of each row where a token (other than a line end) starts or a multi-line string goes on."""
    depths: dict[int, int] = {}
    depth = 0
    for token in _tokens(source):
        if token.type == tokenize.INDENT:
            depth += 1
        elif token.type == tokenize.DEDENT:
            depth -= 1
        elif token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER):
            # Rows inside a multi-line string (a docstring) move with the code around them.
            for row in range(token.start[0], token.end[0] + 1):
                depths.setdefault(row, depth)
    return depths


def _reindent(source: str, new_unit: str) -> str | None:
    """Replace each leading four-space level of every code and docstring row by ``new_unit``."""
    lines = _lines(source)
    changed = False
    for row, depth in _line_depths(source).items():
        line = lines[row - 1]
        if depth and line.startswith(" " * (4 * depth)):
            lines[row - 1] = new_unit * depth + line[4 * depth :]
            changed = True
    return "".join(lines) if changed else None


def _t_indent_two_spaces(source: str, rng: random.Random) -> str | None:
    return _reindent(source, "  ")


def _t_indent_tabs(source: str, rng: random.Random) -> str | None:
    return _reindent(source, "\t")


def _content_rows(source: str) -> list[int]:
    """Rows with content that do not end in a backslash."""
    return [
        row
        for row, line in enumerate(_lines(source), start=1)
        if line.strip() and not line.rstrip("\r\n").endswith("\\")
    ]


def _t_trailing_whitespace(source: str, rng: random.Random) -> str | None:
    rows = _content_rows(source)
    if not rows:
        return None
    row = rng.choice(rows)
    lines = _lines(source)
    body = lines[row - 1].rstrip("\r\n")
    lines[row - 1] = body + " " * rng.randint(1, 3) + lines[row - 1][len(body) :]
    return "".join(lines)


def _t_whitespace_blank_line(source: str, rng: random.Random) -> str | None:
    lines = _lines(source)
    rows = [row for row, line in enumerate(lines, start=1) if line in ("\n", "\r\n") and row < len(lines)]
    if not rows:
        return None
    row = rng.choice(rows)
    lines[row - 1] = " " * (4 * rng.randint(1, 2)) + lines[row - 1]
    return "".join(lines)


def _t_missing_final_newline(source: str, rng: random.Random) -> str | None:
    stripped = source.rstrip("\r\n")
    if stripped == source or not stripped.strip() or stripped.endswith("\\"):
        return None
    return stripped


def _t_trailing_blank_line(source: str, rng: random.Random) -> str | None:
    if not source.endswith("\n") or not source.strip():
        return None
    return source + "\n" * rng.randint(1, 2)


_COMPOUND = (
    (
        ast.If,
        ast.For,
        ast.AsyncFor,
        ast.While,
        ast.With,
        ast.AsyncWith,
        ast.Try,
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.ClassDef,
    )
    + ((ast.Match,) if hasattr(ast, "Match") else ())
    + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _bodies(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


def _simple_line_stmts(source: str, tree: ast.Module) -> list[tuple[ast.stmt, int, int, int]]:
    """Simple one-line statements that start their line and end it (no comment after)."""
    lines = _lines(source)
    found = []
    for body in _bodies(tree):
        for stmt in body:
            if isinstance(stmt, _COMPOUND) or _is_docstring(stmt):
                continue
            seg = _segment(lines, stmt)
            if seg is None:
                continue
            row, start, end = seg
            line = lines[row - 1]
            if line[:start].strip() or line[end:].strip():
                continue
            found.append((stmt, row, start, end))
    return found


def _t_semicolon_join(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    if tree is None:
        return None
    simple = {id(stmt): (row, start, end) for stmt, row, start, end in _simple_line_stmts(source, tree)}
    pairs = []
    for body in _bodies(tree):
        for first, second in pairwise(body):
            a, b = simple.get(id(first)), simple.get(id(second))
            if a and b and b[0] == a[0] + 1:
                pairs.append((a, b))
    if not pairs:
        return None
    (row, _, end), (row2, start2, _) = rng.choice(pairs)
    return _splice(source, [((row, end), (row2, start2), "; ")])


def _t_trailing_semicolon(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    sites = _simple_line_stmts(source, tree) if tree else []
    if not sites:
        return None
    _, row, _, end = rng.choice(sites)
    return _splice(source, [((row, end), (row, end), ";")])


def _t_long_line(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    sites = _simple_line_stmts(source, tree) if tree else []
    if not sites:
        return None
    _, row, _, end = rng.choice(sites)
    line = _lines(source)[row - 1]
    words = ("note:", "this", "step", "keeps", "the", "result", "in", "the", "same", "order", "as", "the", "input")
    comment = "  #"
    target = MAX_LINE_LENGTH + rng.randint(5, 30)
    index = 0
    while end + len(comment) <= target:
        comment += " " + words[index % len(words)]
        index += 1
    return _splice(source, [((row, end), (row, len(line.rstrip("\r\n"))), comment)])


def _t_compound_one_line(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    if tree is None:
        return None
    lines = _lines(source)
    sites = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.If, ast.For, ast.While)) or node.orelse or len(node.body) != 1:
            continue
        body = node.body[0]
        if isinstance(body, _COMPOUND) or body.lineno != node.lineno + 1:
            continue
        seg = _segment(lines, body)
        header = lines[node.lineno - 1].rstrip("\r\n")
        if seg is None or not header.rstrip().endswith(":") or lines[seg[0] - 1][seg[2] :].strip():
            continue
        sites.append((node.lineno, len(header.rstrip()), seg))
    if not sites:
        return None
    row, header_end, (body_row, start, _) = rng.choice(sites)
    return _splice(source, [((row, header_end), (body_row, start), " ")])


def _top_level_defs(tree: ast.Module) -> list[tuple[int, ast.stmt]]:
    defs: list[tuple[int, ast.stmt]] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs.append((min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)]), stmt))
    return defs


def _t_collapse_blank_lines(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    if tree is None:
        return None
    lines = _lines(source)
    sites = []
    for start, stmt in _top_level_defs(tree):
        if stmt is tree.body[0]:
            continue
        blanks = []
        row = start - 1
        while row >= 1 and (not lines[row - 1].strip() or lines[row - 1].lstrip().startswith("#")):
            if not lines[row - 1].strip():
                blanks.append(row)
            row -= 1
        if blanks and row >= 1:
            sites.append(blanks)
    if not sites:
        return None
    drop = set(rng.choice(sites))
    return "".join(line for row, line in enumerate(lines, start=1) if row not in drop)


def _t_extra_blank_lines(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    if tree is None:
        return None
    lines = _lines(source)
    rows = set()
    for body in _bodies(tree):
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.decorator_list:
                continue
            row = stmt.lineno
            line = lines[row - 1]
            if not line[: _char_col(line, stmt.col_offset)].strip() and stmt.col_offset > 0 and row > 1:
                above = lines[row - 2].strip()
                if not above.startswith("#") and not above.endswith("\\"):
                    rows.add(row)
    if not rows:
        return None
    row = rng.choice(sorted(rows))
    return _splice(source, [((row, 0), (row, 0), "\n\n")])


def _t_backslash_in_brackets(source: str, rng: random.Random) -> str | None:
    tokens = _tokens(source)
    opened: list[int] = []
    sites = []
    for index, token, _ in _code_tokens(tokens):
        if token.type != tokenize.OP:
            continue
        if token.string in "([{":
            opened.append(index)
        elif token.string in ")]}" and opened:
            opened.pop()
        elif token.string == "," and opened:
            open_tok, first, nxt = tokens[opened[-1]], tokens[opened[-1] + 1], tokens[index + 1]
            if (
                open_tok.start[0] == token.start[0]
                and first.start[0] == token.start[0]
                and nxt.start == (token.end[0], token.end[1] + 1)
                and nxt.string not in ")]}"
            ):
                sites.append((index, first.start[1]))
    if not sites:
        return None
    index, column = rng.choice(sites)
    return _splice(source, [(tokens[index].end, tokens[index + 1].start, " \\\n" + " " * column)])


def _t_none_equality(source: str, rng: random.Random) -> str | None:
    tokens = _tokens(source)
    sites = []
    for index, token, _ in _code_tokens(tokens):
        if token.string != "is" or token.type != tokenize.NAME or index + 2 >= len(tokens):
            continue
        if tokens[index + 1].string == "None":
            sites.append((token.start, token.end, "=="))
        elif tokens[index + 1].string == "not" and tokens[index + 2].string == "None":
            sites.append((token.start, tokens[index + 1].end, "!="))
    if not sites:
        return None
    return _splice(source, [rng.choice(sites)])


def _t_bool_equality(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    if tree is None:
        return None
    lines = _lines(source)
    sites = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.If, ast.While)):
            continue
        test, value = node.test, "True"
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, value = test.operand, "False"
        if not isinstance(test, (ast.Name, ast.Attribute)):
            continue
        outer, inner = _segment(lines, node.test), _segment(lines, test)
        if outer and inner:
            row, start, end = outer
            text = lines[row - 1][inner[1] : inner[2]]
            sites.append(((row, start), (row, end), f"{text} == {value}"))
    if not sites:
        return None
    return _splice(source, [rng.choice(sites)])


_NEGATION_LEFT = frozenset({"(", "[", "{", ",", "=", ":", "if", "elif", "while", "return", "and", "or", "assert"})


def _negate(source: str, rng: random.Random, operator: tuple[str, str]) -> str | None:
    tokens = _tokens(source)
    sites = []
    for index, token, _ in _code_tokens(tokens):
        if index == 0 or index + 2 >= len(tokens) or not _is_operand_start(token) or token.string in "([{":
            continue
        first, second = tokens[index + 1], tokens[index + 2]
        if (first.string, second.string) != operator or tokens[index - 1].string not in _NEGATION_LEFT:
            continue
        keyword_text = "in" if operator[1] == "in" else "is"
        sites.append((token.start, second.end, f"not {token.string} {keyword_text}"))
    if not sites:
        return None
    return _splice(source, [rng.choice(sites)])


def _t_negated_membership(source: str, rng: random.Random) -> str | None:
    return _negate(source, rng, ("not", "in"))


def _t_negated_identity(source: str, rng: random.Random) -> str | None:
    return _negate(source, rng, ("is", "not"))


def _t_bare_except(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    if tree is None:
        return None
    lines = _lines(source)
    sites = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ExceptHandler) or node.type is None or node.name is not None:
            continue
        if node.type.end_lineno != node.lineno:
            continue
        line = lines[node.lineno - 1]
        start = _char_col(line, node.col_offset)
        colon = line.find(":", _char_col(line, node.type.end_col_offset or 0))
        if line.startswith("except", start) and colon > 0:
            sites.append(((node.lineno, start + len("except")), (node.lineno, colon), ""))
    if not sites:
        return None
    return _splice(source, [rng.choice(sites)])


def _lambda_from_def(source: str, tree: ast.Module) -> list[list[Edit]]:
    lines = _lines(source)
    sites = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or node.decorator_list or getattr(node, "type_params", None):
            continue
        if len(node.body) != 1 or not isinstance(node.body[0], ast.Return) or node.body[0].value is None:
            continue
        value = ast.get_source_segment(source, node.body[0].value)
        end_line = lines[(node.end_lineno or node.lineno) - 1]
        if value is None or "\n" in value or end_line[_char_col(end_line, node.end_col_offset or 0) :].strip():
            continue
        args = node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                arg.annotation = None
        params = ast.unparse(args)
        line = lines[node.lineno - 1]
        indent = line[: _char_col(line, node.col_offset)]
        if indent.strip():
            continue
        text = f"{indent}{node.name} = lambda{' ' + params if params else ''}: {value}\n"
        sites.append([((node.lineno, 0), ((node.end_lineno or node.lineno) + 1, 0), text)])
    return sites


def _lambda_hoisted(source: str, tree: ast.Module) -> list[list[Edit]]:
    lines = _lines(source)
    names = {token.string for token in _tokens(source) if token.type == tokenize.NAME}
    sites = []
    for body in _bodies(tree):
        for stmt in body:
            if isinstance(stmt, _COMPOUND):
                continue
            line = lines[stmt.lineno - 1]
            indent = line[: _char_col(line, stmt.col_offset)]
            if indent.strip():
                continue
            for node in ast.walk(stmt):
                if not isinstance(node, ast.Call):
                    continue
                for kw in node.keywords:
                    seg = _segment(lines, kw.value) if isinstance(kw.value, ast.Lambda) else None
                    name = f"{kw.arg}_fn"
                    if seg is None or kw.arg is None or name in names:
                        continue
                    row, start, end = seg
                    text = lines[row - 1][start:end]
                    sites.append(
                        [
                            ((row, start), (row, end), name),
                            ((stmt.lineno, 0), (stmt.lineno, 0), f"{indent}{name} = {text}\n"),
                        ]
                    )
    return sites


def _t_lambda_assignment(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    if tree is None:
        return None
    sites = _lambda_from_def(source, tree)
    tree = _tree(source)  # _lambda_from_def edits annotations in place
    sites += _lambda_hoisted(source, tree) if tree else []
    if not sites:
        return None
    return _splice(source, rng.choice(sites))


def _import_text(node: ast.Import) -> list[str]:
    return [alias.name + (f" as {alias.asname}" if alias.asname else "") for alias in node.names]


def _t_multiple_imports(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    if tree is None:
        return None
    lines = _lines(source)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    sites: list[list[Edit]] = []
    for body in _bodies(tree):
        plain = [s for s in body if isinstance(s, ast.Import) and s.lineno == s.end_lineno]
        for first, second in pairwise(plain):
            if second.lineno == first.lineno + 1 and first.col_offset == second.col_offset:
                indent = lines[first.lineno - 1][: first.col_offset]
                names = ", ".join(_import_text(first) + _import_text(second))
                sites.append([((first.lineno, 0), (second.lineno + 1, 0), f"{indent}import {names}\n")])
        for node in plain:
            extra = [m for m in ("os", "sys", "re") if m not in imported]
            line = lines[node.lineno - 1]
            end = _char_col(line, node.end_col_offset or 0)
            if extra and len(node.names) == 1 and not line[end:].strip():
                sites.append([((node.lineno, end), (node.lineno, end), f", {extra[0]}")])
    if not sites:
        return None
    return _splice(source, rng.choice(sites))


def _t_import_not_at_top(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    if tree is None:
        return None
    lines = _lines(source)
    defs = _top_level_defs(tree)
    sites = []
    for stmt in tree.body:
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)) or stmt.lineno != stmt.end_lineno:
            continue
        later = [d for _, d in defs if d.lineno > stmt.lineno]
        if later and not lines[stmt.lineno - 1][_char_col(lines[stmt.lineno - 1], stmt.end_col_offset or 0) :].strip():
            sites.append((stmt, later[0]))
    if not sites:
        return None
    stmt, target = rng.choice(sites)
    text = lines[stmt.lineno - 1].strip()
    drop_end = stmt.lineno + 1
    if stmt is tree.body[0]:
        while drop_end <= len(lines) and not lines[drop_end - 1].strip():
            drop_end += 1
    after = (target.end_lineno or target.lineno) + 1
    return _splice(
        source,
        [((after, 0), (after, 0), f"\n\n{text}\n"), ((stmt.lineno, 0), (drop_end, 0), "")],
    )


def _t_ambiguous_name(source: str, rng: random.Random) -> str | None:
    tree = _tree(source)
    tokens = _tokens(source)
    if tree is None or not tokens:
        return None
    names = {token.string for token in tokens if token.type == tokenize.NAME}
    new = next((n for n in ("l", "I", "O") if n not in names), None)
    targets = sorted(
        {node.target.id for node in ast.walk(tree) if isinstance(node, ast.For) and isinstance(node.target, ast.Name)}
    )
    if new is None or not targets:
        return None
    old = rng.choice(targets)
    edits: list[Edit] = []
    for index, token, stack in _code_tokens(tokens):
        if token.type != tokenize.NAME or token.string != old:
            continue
        prev = tokens[index - 1].string if index else ""
        nxt = tokens[index + 1].string if index + 1 < len(tokens) else ""
        if prev == "." or (nxt == "=" and stack and stack[-1] == "("):
            continue
        edits.append((token.start, token.end, new))
    return _splice(source, edits)


def _t_block_comment_no_space(source: str, rng: random.Random) -> str | None:
    sites = [
        token
        for token in _tokens(source)
        if token.type == tokenize.COMMENT
        and token.string.startswith("# ")
        and not token.line[: token.start[1]].strip()
        and len(token.string.strip()) > 1
    ]
    if not sites:
        return None
    token = rng.choice(sites)
    return _splice(source, [(token.start, (token.start[0], token.start[1] + 2), "#")])


_T = Transform

TRANSFORMS: tuple[Transform, ...] = (
    _T("indent_two_spaces", ("E111",), "Indent blocks by two spaces per level instead of four.", _t_indent_two_spaces),
    _T("indent_tabs", ("W191",), "Indent blocks with one tab per level.", _t_indent_tabs),
    _T("tight_assignment", ("E225",), "Drop the spaces around an assignment =.", _t_tight_assignment),
    _T("tight_comparison", ("E225",), "Drop the spaces around a comparison operator.", _t_tight_comparison),
    _T("tight_arithmetic", ("E226",), "Drop the spaces around a binary + - * / or //.", _t_tight_arithmetic),
    _T("no_space_after_comma", ("E231",), "Drop the space after a comma.", _t_no_space_after_comma),
    _T(
        "spaces_inside_brackets",
        ("E201", "E202"),
        "Add a space inside both ends of a one-line bracket pair.",
        _t_spaces_inside_brackets,
    ),
    _T("space_before_paren", ("E211",), "Add a space between a called name and its (.", _t_space_before_paren),
    _T(
        "keyword_equals_spaces",
        ("E251",),
        "Add spaces around the = of a keyword argument or default.",
        _t_keyword_equals_spaces,
    ),
    _T("tab_before_operator", ("E223",), "Put a tab before an assignment =.", _t_tab_before_operator),
    _T("trailing_whitespace", ("W291",), "Add spaces at the end of a line.", _t_trailing_whitespace),
    _T("whitespace_blank_line", ("W293",), "Put spaces on an empty line.", _t_whitespace_blank_line),
    _T("missing_final_newline", ("W292",), "Drop the newline at the end of the file.", _t_missing_final_newline),
    _T("trailing_blank_line", ("W391",), "Add blank lines at the end of the file.", _t_trailing_blank_line),
    _T("semicolon_join", ("E702",), "Join two consecutive simple statements with ; on one line.", _t_semicolon_join),
    _T("trailing_semicolon", ("E703",), "End a simple statement with ;.", _t_trailing_semicolon),
    _T(
        "compound_one_line",
        ("E701",),
        "Put the one-statement body of an if/for/while on the header line.",
        _t_compound_one_line,
    ),
    _T(
        "collapse_blank_lines",
        ("E302",),
        "Remove the blank lines before a top-level def or class.",
        _t_collapse_blank_lines,
    ),
    _T(
        "extra_blank_lines",
        ("E303",),
        "Insert two blank lines before a statement inside a block.",
        _t_extra_blank_lines,
    ),
    _T("long_line", ("E501",), "Add an inline comment that makes a line longer than 79 characters.", _t_long_line),
    _T(
        "backslash_in_brackets",
        ("E502",),
        "Break a line after a comma inside brackets with a backslash.",
        _t_backslash_in_brackets,
    ),
    _T("none_equality", ("E711",), "Write is None / is not None as == None / != None.", _t_none_equality),
    _T("bool_equality", ("E712",), "Write if x: / if not x: as if x == True: / if x == False:.", _t_bool_equality),
    _T("negated_membership", ("E713",), "Write x not in y as not x in y.", _t_negated_membership),
    _T("negated_identity", ("E714",), "Write x is not y as not x is y.", _t_negated_identity),
    _T("bare_except", ("E722",), "Drop the exception class of an except clause.", _t_bare_except),
    _T(
        "lambda_assignment",
        ("E731",),
        "Turn a one-return def into a lambda assignment, or move a keyword lambda into a variable.",
        _t_lambda_assignment,
    ),
    _T(
        "multiple_imports",
        ("E401",),
        "Join two import lines into one, or add a second module to an import.",
        _t_multiple_imports,
    ),
    _T(
        "import_not_at_top",
        ("E402",),
        "Move a module-level import below the first following definition.",
        _t_import_not_at_top,
    ),
    _T("ambiguous_name", ("E741",), "Rename a for-loop variable to l, I or O.", _t_ambiguous_name),
    _T(
        "block_comment_no_space",
        ("E265",),
        "Drop the space after the # of a block comment.",
        _t_block_comment_no_space,
    ),
)
"""The style-breaking rewrites, each with the codes it is meant to produce."""

_TRANSFORMS_BY_NAME: dict[str, Transform] = {t.name: t for t in TRANSFORMS}


def _run(transform: Transform, source: str, rng: random.Random) -> str | None:
    try:
        out = transform.fn(source, rng)
    except (SyntaxError, ValueError, IndexError, tokenize.TokenError):
        return None
    if out is None or out == source or not _parses(out):
        return None
    return out


def apply_transform(transform: str | Transform, source: str, *, seed: int = 0) -> str | None:
    """Apply one transform to a snippet.

    Args:
        transform: A transform or the name of one in :data:`TRANSFORMS`.
        source: Python source text.
        seed: Seed for the choice of site when several apply.

    Returns:
        The rewritten source, or ``None`` when the transform does not apply,
        changes nothing, or its result does not parse.

    Raises:
        KeyError: On an unknown transform name.
    """
    chosen = _TRANSFORMS_BY_NAME[transform] if isinstance(transform, str) else transform
    return _run(chosen, source, random.Random(seed))


def make_variants(source: str, *, seed: int, n: int = 3) -> list[tuple[str, str]]:
    """Style-broken variants of a snippet, generated by program.

    Each variant applies one to three transforms picked at random; a
    transform that does not apply, or whose result does not parse, is
    skipped. The choices depend only on ``seed`` and ``source``.

    Args:
        source: Python source text that parses.
        seed: Random seed.
        n: Number of variants wanted.

    Returns:
        Up to ``n`` pairs ``(name, code)``, ``name`` being the applied
        transform names joined by ``"+"``; all codes differ from the source
        and from each other. Fewer than ``n`` when too few transforms apply.
    """
    if n <= 0:
        return []
    rng = random.Random(zlib.crc32(source.encode("utf-8")) * 1_000_003 + seed)
    variants: list[tuple[str, str]] = []
    seen = {source}
    for _ in range(n * 10):
        if len(variants) >= n:
            break
        wanted = rng.randint(1, 3)
        order = list(TRANSFORMS)
        rng.shuffle(order)
        code, applied = source, list[str]()
        for transform in order:
            if len(applied) >= wanted:
                break
            out = _run(transform, code, rng)
            if out is not None:
                code = out
                applied.append(transform.name)
        if applied and code not in seen:
            seen.add(code)
            variants.append(("+".join(applied), code))
    return variants


# --------------------------------------------------------------------------
# Items.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Pep8Item:
    """One benchmark input with its gold codes.

    Attributes:
        key: ``"HumanEval/0"`` for a canonical snippet, ``"HumanEval/0#v1"``
            for its first variant.
        code: The Python snippet.
        gold: Codes pycodestyle reports for it (:func:`pycodestyle_codes`).
        group: ``"canonical"`` or ``"variant"``.
        transforms: Names of the transforms applied (empty for canonical).
    """

    key: str
    code: str
    gold: tuple[str, ...]
    group: str
    transforms: tuple[str, ...] = ()


def load_pep8_items(
    humaneval_path: str | Path, *, limit: int | None = None, variants: int = 2, seed: int = 0
) -> list[Pep8Item]:
    """The benchmark items built from HumanEval.

    For each of the first ``limit`` problems: the snippet ``prompt +
    canonical_solution`` (group ``"canonical"``), then up to ``variants``
    style-broken variants of it (group ``"variant"``, see
    :func:`make_variants`). Gold codes come from :func:`pycodestyle_codes`.

    Args:
        humaneval_path: ``HumanEval.jsonl.gz`` (or an uncompressed ``.jsonl``).
        limit: At most this many problems; all when ``None``.
        variants: Variants per problem.
        seed: Seed for the variants.

    Returns:
        Items in file order, each canonical item followed by its variants.

    Raises:
        BenchDataError: When the file is missing, unreadable or has a bad
            record (the message names the path and line).
        ValueError: On a negative ``limit`` or ``variants``.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if variants < 0:
        raise ValueError(f"variants must be >= 0, got {variants}")
    from langchain_tag.bench.code import load_humaneval

    items: list[Pep8Item] = []
    for problem in load_humaneval(Path(humaneval_path).expanduser(), limit=limit):
        task_id, snippet = problem.task_id, problem.prompt + problem.canonical_solution
        items.append(Pep8Item(task_id, snippet, pycodestyle_codes(snippet), "canonical"))
        for number, (name, code) in enumerate(make_variants(snippet, seed=seed, n=variants), start=1):
            items.append(
                Pep8Item(f"{task_id}#v{number}", code, pycodestyle_codes(code), "variant", tuple(name.split("+")))
            )
    return items


def _group_summary(items: Sequence[Pep8Item]) -> dict[str, Any]:
    sizes = [len(item.gold) for item in items]
    return {
        "items": len(items),
        "empty_gold": sum(1 for size in sizes if size == 0),
        "mean_gold_size": round(sum(sizes) / len(sizes), 3) if sizes else 0.0,
        "max_gold_size": max(sizes, default=0),
    }


def gold_summary(items: Iterable[Pep8Item]) -> dict[str, Any]:
    """Counts that describe the gold of a list of items.

    Args:
        items: Benchmark items.

    Returns:
        ``items``, ``empty_gold`` (items whose gold is empty),
        ``mean_gold_size``, ``max_gold_size``, ``distinct_codes``,
        ``code_counts`` (in how many items each code is gold, most frequent
        first), ``transform_counts`` (how often each transform was applied)
        and ``by_group`` (the size counts per group).
    """
    items = list(items)
    codes = Counter(code for item in items for code in item.gold)
    transforms = Counter(name for item in items for name in item.transforms)
    summary = _group_summary(items)
    summary["distinct_codes"] = len(codes)
    summary["code_counts"] = dict(sorted(codes.items(), key=lambda kv: (-kv[1], kv[0])))
    summary["transform_counts"] = dict(sorted(transforms.items(), key=lambda kv: (-kv[1], kv[0])))
    summary["by_group"] = {
        group: _group_summary([item for item in items if item.group == group])
        for group in GROUPS
        if any(item.group == group for item in items)
    }
    return summary
