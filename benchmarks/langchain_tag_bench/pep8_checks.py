"""The PEP 8 rule set: one rule per pycodestyle check code.

:data:`PEP8_CHECKS` is the check table: for each pycodestyle code kept, a
short name, a condition and an action stated as a rule, pycodestyle's message
and a small example that triggers the code. :func:`pep8_rules` turns the table
into :class:`~langchain_tag.rules.Rule` objects; :func:`check_by_code` looks up
one check.

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

from dataclasses import dataclass

from langchain_tag.rules import Rule

__all__ = [
    "DEFAULT_OFF",
    "DOCUMENT_ID",
    "EXCLUDED_CODES",
    "FAMILIES",
    "MAX_LINE_LENGTH",
    "PEP8_CHECKS",
    "Pep8Check",
    "check_by_code",
    "pep8_rules",
]

MAX_LINE_LENGTH = 79
"""Line length limit pycodestyle is run with (its default)."""

DOCUMENT_ID = "pycodestyle-checks"
"""``document_id`` of every rule from :func:`pep8_rules`."""

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
