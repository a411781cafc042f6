"""``--where "<expression over the games table>"``: a small, safe filter language (never Python ``eval``).

Example: ``min(black_rank, white_rank) >= 5d and handicap = 0 and not (black_is_bot or white_is_bot)
and year >= 2015``. Grammar (keywords case-insensitive)::

    expr    := and ("or" and)*            and := not ("and" not)*          not := "not" not | cmp
    cmp     := sum [("=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">=") sum]
             | sum "is" ["not"] "null"  | sum ["not"] "in" "(" literal ("," literal)* ")"
    sum     := term (("+" | "-") term)*   term := unary (("*" | "/") unary)*   unary := "-" unary | atom
    atom    := NUMBER | RANK (5d, 3k, 2p: the rank scale of gotk.sgf.metadata) | 'string' | "string"
             | true | false | null | COLUMN | FUNC "(" expr ("," expr)* ")" | "(" expr ")"
    FUNC    := min | max | abs | coalesce

Nulls follow SQL: a comparison with a null is null, ``and``/``or`` are three-valued, and a game is kept
only when the whole expression is true (a game with an unknown rank fails ``black_rank >= 5``).

One expression compiles to both a Python predicate over a game's metadata dict (:meth:`Where.matches`,
used while scanning SGF) and a pyarrow expression over ``games.parquet`` (:meth:`Where.arrow`, used by
the loader and ``gotk stats``); both give the same answer. A parse error or an unknown column raises
:class:`WhereError` before any work starts, listing the columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gotk.sgf.metadata import rank_value


class WhereError(ValueError):
    """A ``--where`` expression that does not parse or names an unknown column."""


class _Rank(int):
    """A rank literal (``5d``): its rank-scale number, shown as written in reasons."""

    text: str

    def __new__(cls, value: int, text: str) -> _Rank:
        obj = super().__new__(cls, value)
        obj.text = text
        return obj

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


_TOKEN = re.compile(r"""\s*(?:
    (?P<rank>\d{1,2}[kdp])(?![\w.])
  | (?P<num>\d+(?:\.\d*)?|\.\d+)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><=|>=|==|!=|<>|[=<>(),+\-*/])
)""", re.VERBOSE)
_KEYWORDS = {"and", "or", "not", "is", "null", "true", "false", "in"}
_FUNCS = {"min", "max", "abs", "coalesce"}
_CMP = {"=": "==", "==": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _tokenize(text: str) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise WhereError(f"cannot read {text[pos:].strip()[:20]!r} at character {pos + 1}")
        pos = m.end()
        kind = m.lastgroup
        raw = m.group(kind)
        if kind == "rank":
            out.append(("lit", _Rank(rank_value(raw.lower()), raw.lower())))
        elif kind == "num":
            out.append(("lit", float(raw) if "." in raw else int(raw)))
        elif kind == "str":
            out.append(("lit", re.sub(r"\\(.)", r"\1", raw[1:-1])))
        elif kind == "name" and raw.lower() in _KEYWORDS:
            low = raw.lower()
            out.append(("lit", {"true": True, "false": False, "null": None}[low]) if low in ("true", "false", "null")
                       else ("kw", low))
        else:
            out.append((kind, raw))
    return out


# AST nodes: ("lit", v) ("col", name) ("fn", name, args) ("neg", x) ("bin", op, a, b) ("cmp", op, a, b)
# ("and", a, b) ("or", a, b) ("not", x) ("isnull", x, negated) ("in", x, values, negated)

class _Parser:
    def __init__(self, text: str, columns: set[str]) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.columns = columns

    def peek(self, kind: str | None = None, value: object = None) -> bool:
        if self.i >= len(self.toks):
            return False
        k, v = self.toks[self.i]
        return (kind is None or k == kind) and (value is None or v == value)

    def take(self, kind: str, value: object = None):
        if not self.peek(kind, value):
            got = repr(self.toks[self.i][1]) if self.i < len(self.toks) else "the end"
            raise WhereError(f"expected {value or kind!r}, found {got}")
        self.i += 1
        return self.toks[self.i - 1][1]

    def parse(self):
        if not self.toks:
            raise WhereError("empty expression")
        node = self.expr()
        if self.i != len(self.toks):
            raise WhereError(f"unexpected {self.toks[self.i][1]!r}")
        return node

    def expr(self):
        node = self.conj()
        while self.peek("kw", "or"):
            self.i += 1
            node = ("or", node, self.conj())
        return node

    def conj(self):
        node = self.neg()
        while self.peek("kw", "and"):
            self.i += 1
            node = ("and", node, self.neg())
        return node

    def neg(self):
        if self.peek("kw", "not"):
            self.i += 1
            return ("not", self.neg())
        return self.cmp()

    def cmp(self):
        left = self.sum()
        if self.peek("op") and self.toks[self.i][1] in _CMP:
            op = _CMP[self.take("op")]
            return ("cmp", op, left, self.sum())
        if self.peek("kw", "is"):
            self.i += 1
            negated = self.peek("kw", "not")
            self.i += negated
            if self.take("lit") is not None:
                raise WhereError("expected 'is null' or 'is not null'")
            return ("isnull", left, negated)
        negated = self.peek("kw", "not") and self.i + 1 < len(self.toks) and self.toks[self.i + 1] == ("kw", "in")
        self.i += negated
        if self.peek("kw", "in"):
            self.i += 1
            self.take("op", "(")
            values = [self.take("lit")]
            while self.peek("op", ","):
                self.i += 1
                values.append(self.take("lit"))
            self.take("op", ")")
            return ("in", left, values, negated)
        return left

    def sum(self):
        node = self.term()
        while self.peek("op", "+") or self.peek("op", "-"):
            node = ("bin", self.take("op"), node, self.term())
        return node

    def term(self):
        node = self.unary()
        while self.peek("op", "*") or self.peek("op", "/"):
            node = ("bin", self.take("op"), node, self.unary())
        return node

    def unary(self):
        if self.peek("op", "-"):
            self.i += 1
            return ("neg", self.unary())
        return self.atom()

    def atom(self):
        if self.peek("lit"):
            return ("lit", self.take("lit"))
        if self.peek("op", "("):
            self.i += 1
            node = self.expr()
            self.take("op", ")")
            return node
        if self.peek("name"):
            name = self.take("name")
            if self.peek("op", "("):
                if name.lower() not in _FUNCS:
                    raise WhereError(f"unknown function {name!r}; functions: {', '.join(sorted(_FUNCS))}")
                self.i += 1
                args = [self.expr()]
                while self.peek("op", ","):
                    self.i += 1
                    args.append(self.expr())
                self.take("op", ")")
                if name.lower() == "abs" and len(args) != 1:
                    raise WhereError("abs() takes one argument")
                return ("fn", name.lower(), args)
            if name not in self.columns:
                raise WhereError(f"unknown column {name!r}; columns: {', '.join(sorted(self.columns))}")
            return ("col", name)
        got = repr(self.toks[self.i][1]) if self.i < len(self.toks) else "the end"
        raise WhereError(f"expected a value, a column or '(', found {got}")


# --- evaluation on one row (three-valued, None = null) ------------------------------------------------

_PY_CMP: dict[str, Callable] = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
                                "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_PY_BIN: dict[str, Callable] = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
                                "/": lambda a, b: a / b if b else None}


def _eval(node, row: Mapping):
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "col":
        return row.get(node[1])
    if kind == "and":
        a, b = _eval(node[1], row), _eval(node[2], row)
        return False if a is False or b is False else None if a is None or b is None else True
    if kind == "or":
        a, b = _eval(node[1], row), _eval(node[2], row)
        return True if a is True or b is True else None if a is None or b is None else False
    if kind == "not":
        v = _eval(node[1], row)
        return None if v is None else not v
    if kind == "isnull":
        return (_eval(node[1], row) is None) != node[2]
    if kind == "in":
        v = _eval(node[1], row)
        return None if v is None else (v in node[2]) != node[3]
    if kind == "neg":
        v = _eval(node[1], row)
        return None if v is None else -v
    if kind == "fn":
        args = [_eval(a, row) for a in node[2]]
        name = node[1]
        if name == "coalesce":
            return next((a for a in args if a is not None), None)
        if any(a is None for a in args):
            return None
        return abs(args[0]) if name == "abs" else (min if name == "min" else max)(args)
    a, b = _eval(node[2], row), _eval(node[3], row)
    if a is None or b is None:
        return None
    try:
        return (_PY_CMP if kind == "cmp" else _PY_BIN)[node[1]](a, b)
    except TypeError:
        return None  # e.g. a string compared with a number: not true


def _arrow(node):
    import pyarrow.compute as pc

    kind = node[0]
    if kind == "lit":
        return pc.scalar(int(node[1]) if isinstance(node[1], _Rank) else node[1])
    if kind == "col":
        return pc.field(node[1])
    if kind == "and":
        return pc.and_kleene(_arrow(node[1]), _arrow(node[2]))
    if kind == "or":
        return pc.or_kleene(_arrow(node[1]), _arrow(node[2]))
    if kind == "not":
        return pc.invert(_arrow(node[1]))
    if kind == "isnull":
        e = pc.is_null(_arrow(node[1]))
        return pc.invert(e) if node[2] else e
    if kind == "in":
        e = pc.is_in(_arrow(node[1]), value_set=_value_set(node[2]))
        e = pc.if_else(pc.is_null(_arrow(node[1])), pc.scalar(_null_bool()), e)
        return pc.invert(e) if node[3] else e
    if kind == "neg":
        return pc.negate(_arrow(node[1]))
    if kind == "fn":
        args = [_arrow(a) for a in node[2]]
        if node[1] == "abs":
            return pc.abs(args[0])
        if node[1] == "coalesce":
            return pc.coalesce(*args)
        fn = pc.min_element_wise if node[1] == "min" else pc.max_element_wise
        return fn(*args, skip_nulls=False)
    a, b = _arrow(node[2]), _arrow(node[3])
    if kind == "bin":
        if node[1] == "/":  # true division, as in Python (pyarrow divides integers as integers)
            return pc.divide(a.cast("float64"), b.cast("float64"))
        return {"+": pc.add, "-": pc.subtract, "*": pc.multiply}[node[1]](a, b)
    return {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
            ">=": pc.greater_equal}[node[1]](a, b)


def _null_bool():
    import pyarrow as pa

    return pa.scalar(None, pa.bool_())


def _value_set(values: list):
    import pyarrow as pa

    return pa.array([int(v) if isinstance(v, _Rank) else v for v in values if v is not None])


def _text(node) -> str:
    """The canonical text of a node (used as the reason a game was filtered out)."""
    kind = node[0]
    if kind == "lit":
        v = node[1]
        return "null" if v is None else str(v).lower() if isinstance(v, bool) else repr(v) if isinstance(v, str) \
            else f"{v:g}" if isinstance(v, float) else str(v)
    if kind == "col":
        return node[1]
    if kind in ("and", "or"):
        return f"({_text(node[1])} {kind} {_text(node[2])})"
    if kind == "not":
        return f"not {_text(node[1])}"
    if kind == "isnull":
        return f"{_text(node[1])} is {'not ' if node[2] else ''}null"
    if kind == "in":
        return f"{_text(node[1])} {'not ' if node[3] else ''}in ({', '.join(_text(('lit', v)) for v in node[2])})"
    if kind == "neg":
        return f"-{_text(node[1])}"
    if kind == "fn":
        return f"{node[1]}({', '.join(_text(a) for a in node[2])})"
    op = "=" if node[1] == "==" else node[1]
    return f"{_text(node[2])} {op} {_text(node[3])}"


def _conjuncts(node) -> list:
    return _conjuncts(node[1]) + _conjuncts(node[2]) if node[0] == "and" else [node]


@dataclass(frozen=True)
class Where:
    """A compiled ``--where`` expression: :meth:`matches` a metadata dict, :meth:`reason` (the first
    top-level ``and`` term a game fails, as text), :meth:`arrow` (a pyarrow compute expression),
    :meth:`filter_table`."""

    text: str
    tree: tuple
    columns: frozenset

    def matches(self, row: Mapping) -> bool:
        """True when the expression is true for ``row`` (null counts as false)."""
        return _eval(self.tree, row) is True

    def reason(self, row: Mapping) -> str | None:
        """None when ``row`` is kept; else the first top-level ``and`` term that is not true."""
        for term in _conjuncts(self.tree):
            if _eval(term, row) is not True:
                return _text(term)
        return None

    def arrow(self):
        """The expression as a ``pyarrow.compute.Expression`` (rows where it is null are dropped by filters)."""
        return _arrow(self.tree)

    def filter_table(self, table):
        """The rows of a pyarrow Table (with the referenced columns) the expression keeps."""
        return table.filter(self.arrow())

    def used_columns(self) -> set[str]:
        out: set[str] = set()

        def walk(node):
            if node[0] == "col":
                out.add(node[1])
            for x in node[1:]:
                if isinstance(x, tuple):
                    walk(x)
                elif isinstance(x, list):
                    for y in x:
                        if isinstance(y, tuple):
                            walk(y)

        walk(self.tree)
        return out


def compile_where(text: str, columns: Iterable[str]) -> Where:
    """Parse ``text`` against the allowed ``columns``; :class:`WhereError` (with the column list) when it
    does not parse or names an unknown column."""
    cols = frozenset(columns)
    try:
        tree = _Parser(text, set(cols)).parse()
    except WhereError as e:
        msg = str(e)
        if "columns:" not in msg:
            msg += f" (in --where {text!r}); columns: {', '.join(sorted(cols))}"
        raise WhereError(msg) from None
    return Where(text, tree, cols)
