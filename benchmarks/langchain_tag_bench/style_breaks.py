"""Style-breaking transforms: program-made PEP 8 violations for the benchmark.

:data:`TRANSFORMS` are small named source-to-source rewrites (re-indent with
two spaces, drop the spaces around an operator, join two statements with
``;``, ...) that keep the code parsable; each names the pycodestyle codes it
is meant to produce on clean code. :func:`apply_transform` applies one;
:func:`make_variants` applies one to three of them at random, deterministically
for a given seed and snippet.
"""

from __future__ import annotations

import ast
import io
import keyword
import random
import tokenize
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise

from langchain_tag_bench.pep8_checks import MAX_LINE_LENGTH

__all__ = ["TRANSFORMS", "Transform", "apply_transform", "make_variants"]

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
    """Ast's UTF-8 byte column as a character column."""
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
