"""The safe restriction language.

Restrictions such as ``block_size * items_per_thread <= 4096`` or
``strategy != "atomic" or block_size >= 128`` are parsed with :mod:`ast` and compiled to a tree
of Python closures over a whitelist: numbers, strings, booleans, names (slots and problem
parameters), arithmetic (``+ - * / // % **``), comparisons (chained), ``and``/``or``/``not``,
``in``/``not in`` over literal tuples/lists, conditional expressions, and calls to ``min``,
``max``, ``abs``. Anything else is refused with a :class:`RestrictionError` that names the
offending part and its column. User text is never passed to ``eval``.

Contract:

- ``compile_restriction(text: str, known_names: Iterable[str]) -> Restriction``
- ``Restriction.text``, ``Restriction.names`` (frozenset of names it reads),
  ``Restriction(values: Mapping[str, Value]) -> bool``.

Evaluation follows Python semantics (``and``/``or`` return an operand, ``/`` is true division,
``//`` and ``%`` floor). Arithmetic that cannot produce a sensible number (division by zero, an
enormous power, a float overflow) makes :meth:`Restriction.__call__` return ``False``: the config
is invalid, the search goes on. Arithmetic on text is a mistake in the restriction and raises
:class:`RestrictionError` (at compile time when the kinds of the names are known).
"""

from __future__ import annotations

import ast
import difflib
import operator
import re
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from workbench.core.domain import pysyntax
from workbench.core.errors import RestrictionError, character_name, hidden_character, printable

Value = int | float | bool | str
Env = Mapping[str, Any]
Node = Callable[[Env], Any]

#: Names that may be called, and how many positional arguments each takes (min, max).
CALLS: dict[str, tuple[int, int]] = {"min": (2, 64), "max": (2, 64), "abs": (1, 1)}
#: Longest restriction text accepted (a restriction is a line, not a program).
MAX_TEXT = 2000
#: Deepest expression nesting accepted (keeps closure evaluation far from the recursion limit).
MAX_DEPTH = 60
#: Integer powers whose result would need more bits than this are refused (config invalid).
MAX_POW_BITS = 1024
#: Any integer an evaluation produces (or a literal) beyond this many bits makes the config invalid:
#: the cost of one evaluation stays bounded (no product of huge powers costs milliseconds).
MAX_INT_BITS = 1024

#: Kinds used by the static check: a slot or parameter is ``"num"`` (int, float, bool) or ``"str"``.
KIND_NUM = "num"
KIND_STR = "str"
KIND_ANY = "any"


class EvaluationError(ArithmeticError):
    """Arithmetic that has no sensible result for this config (the config is then invalid)."""


def kind_of(value: Any) -> str:
    """Static kind of a value: ``"str"`` for text, ``"num"`` for int/float/bool."""
    return KIND_STR if isinstance(value, str) else KIND_NUM


# --------------------------------------------------------------------------------------------
# guarded operators


def _num(value: Any, text: str) -> Any:
    if isinstance(value, str):
        raise RestrictionError(f'restriction "{text}": arithmetic on text ({value!r}) is not allowed')
    return value


def _zero_or_one(base: Any) -> bool:
    """Whether every value of ``base`` (a number, or an array in a reference expression) is 0 or
    +-1, whose powers stay finite whatever the exponent."""
    return bool(np.all((np.abs(base) == 0) | (np.abs(base) == 1)))


def _pow(base: Any, exp: Any) -> Any:
    if isinstance(base, int) and isinstance(exp, int) and exp > 0:
        bits = abs(int(base)).bit_length()
        if bits > 1 and (bits - 1) * exp > MAX_POW_BITS:
            raise EvaluationError(f"{base} ** {exp} is too large")
    elif isinstance(exp, (int, float)) and abs(exp) > 1e6 and not _zero_or_one(base):
        # float powers overflow to OverflowError or underflow to 0: neither is meaningful
        shown = f"an array of {np.size(base)} values" if np.ndim(base) else base
        raise EvaluationError(f"{shown} ** {exp} is too large")
    result = base**exp
    if isinstance(result, complex):  # negative base, fractional exponent
        raise EvaluationError(f"{base} ** {exp} is not a real number")
    return result


_BINOPS: dict[type, tuple[Callable[[Any, Any], Any], str]] = {
    ast.Add: (operator.add, "+"),
    ast.Sub: (operator.sub, "-"),
    ast.Mult: (operator.mul, "*"),
    ast.Div: (operator.truediv, "/"),
    ast.FloorDiv: (operator.floordiv, "//"),
    ast.Mod: (operator.mod, "%"),
    ast.Pow: (_pow, "**"),
}

_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
#: The operators an expression may use, by operator node type, for the array expressions'
#: compiler (which evaluates them per element): binary ones as (function, symbol), comparisons.
BINARY_OPERATORS = _BINOPS
COMPARISONS = _CMPOPS

_REFUSED: dict[type, str] = {
    ast.Attribute: "attribute access is not allowed",
    ast.Subscript: "subscripts are not allowed",
    ast.Lambda: "lambdas are not allowed",
    ast.ListComp: "comprehensions are not allowed",
    ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed",
    ast.GeneratorExp: "comprehensions are not allowed",
    ast.NamedExpr: "assignment expressions (:=) are not allowed",
    ast.JoinedStr: "f-strings are not allowed",
    ast.FormattedValue: "f-strings are not allowed",
    ast.Starred: "starred expressions are not allowed",
    ast.Dict: "dict literals are not allowed",
    ast.Set: "set literals are not allowed",
    ast.Await: "await is not allowed",
    ast.Yield: "yield is not allowed",
    ast.YieldFrom: "yield is not allowed",
    ast.Slice: "slices are not allowed",
}


class Restriction:
    """A compiled restriction: call it with a mapping of names to values to get ``True``/``False``."""

    __slots__ = ("text", "names", "_fn", "_known", "_kinds", "_vector")

    def __init__(
        self, text: str, names: frozenset[str], fn: Node, known: tuple[str, ...], kinds: dict[str, str] | None
    ) -> None:
        self.text = text
        self.names = names
        self._fn = fn
        self._known = known
        self._kinds = kinds
        self._vector: VNode | None = None

    def mask(self, arrays: Mapping[str, np.ndarray]) -> np.ndarray | None:
        """Vectorised ``__call__``: which elements of the (broadcast) arrays satisfy the restriction.

        Returns None when this batch cannot be evaluated with NumPy exactly as Python would
        (integers beyond 2**53, float ``//`` or ``%``, text arithmetic, NaNs...): the caller then
        checks those configs one at a time. Division by zero and the other arithmetic failures are
        masked out per element, with Python's short-circuit rules, as in ``__call__``.
        """
        if self._vector is None:
            self._vector = _VectorCompiler().compile(pysyntax.parse(self.text, mode="eval").body)
        try:
            with np.errstate(all="ignore"):
                value, err = self._vector(arrays)
                ok = _truthy(value)
                if err is not None:
                    ok = ok & ~err
                return np.asarray(ok, dtype=bool)
        except _Unvectorisable:
            return None

    def evaluate(self, values: Env) -> Any:
        """The raw value of the expression (Python semantics); arithmetic errors propagate."""
        try:
            return self._fn(values)
        except KeyError as exc:
            raise RestrictionError(f'restriction "{self.text}": no value for {exc.args[0]!r}') from None
        except TypeError as exc:
            raise RestrictionError(f'restriction "{self.text}": {exc}') from None

    def __call__(self, values: Env) -> bool:
        """True when the values satisfy the restriction; arithmetic failures count as not satisfied."""
        try:
            return bool(self.evaluate(values))
        except ArithmeticError:  # ZeroDivisionError, OverflowError, EvaluationError
            return False

    def __repr__(self) -> str:
        return f"Restriction({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Restriction) and other.text == self.text and other._known == self._known

    def __hash__(self) -> int:
        return hash(self.text)

    def __reduce__(self) -> tuple[Callable[..., Restriction], tuple[Any, ...]]:  # closures do not pickle; recompile from the text instead
        return (compile_restriction, (self.text, self._known, self._kinds))


def refuse_hidden_characters(what: str, text: str) -> None:
    """Raise a :class:`RestrictionError` naming the first character of ``text`` that hides what it
    says (:func:`hidden_character`): a bidi override after ``#`` shows the text in another order
    than it is read (Trojan Source); an ESC or a line break has no place in one line either."""
    at = hidden_character(text)
    if at is not None:
        raise RestrictionError(f'{what} "{printable(text)}": holds the invisible character '
                               f"{character_name(text[at])} (col {at + 1}: {printable(text[at])}); delete it")


#: C and CUDA operators a restriction written as in the kernel's source may use, and what this
#: language (Python's expression syntax) writes instead.
_C_OPERATORS = (("&&", "&&", "and"), ("||", "||", "or"), ("?", "c ? x : y", "x if c else y"))


def c_syntax_hint(text: str) -> str:
    """``; write 'and' for '&&'``, for a restriction that fails to parse where it uses C's operators
    (a kernel author's habit: the error alone, "invalid syntax (col 11: & block_rows)", did not say
    what to write instead); "" when it uses none. ``!`` alone is not C's ``not`` when it is ``!=``."""
    bare = re.sub(r""""[^"]*"|'[^']*'""", "", text)  # what quoted text holds is no operator ("a!")
    used = [f"'{ours}' for '{theirs}'" for trigger, theirs, ours in _C_OPERATORS if trigger in bare]
    if "!" in bare.replace("!=", ""):
        used.append("'not' for '!'")
    return f"; write {', '.join(used)} (restrictions are Python expressions)" if used else ""


def syntax_position(exc: SyntaxError, shown: str) -> tuple[int, str]:
    """Where a syntax error of ``shown`` is (1-based column) and the text from there. Python places
    an error of a text that ends too soon (``x <= 4096 and``, ``a * x +``) nowhere (offset 0): it is
    at the end, not at column 1 over text that is right."""
    if not exc.offset:  # at the end of the code, before a comment after it (which restrictions allow)
        code = shown.split("#", 1)[0].rstrip() if "#" in shown and not {'"', "'"} & set(shown) else shown
        return len(code) + 1, "end of text"
    col = exc.offset
    return col, shown[max(col - 1, 0): col + 19] or "end of text"


def compile_restriction(
    text: str, known_names: Iterable[str], kinds: Mapping[str, str] | None = None
) -> Restriction:
    """Parse and check ``text`` and compile it to a :class:`Restriction`.

    ``known_names`` are the slot and problem-parameter names it may read. ``kinds`` (optional,
    name -> ``"num"`` or ``"str"``) enables the static check that refuses arithmetic on text and
    ordering text against numbers before any config is evaluated.
    """
    if not isinstance(text, str):
        raise RestrictionError(f"restriction {text!r}: a restriction must be text")
    shown = text.strip()
    if not shown:
        raise RestrictionError("restriction is empty")
    if len(shown) > MAX_TEXT:
        raise RestrictionError(f'restriction "{shown[:40]}...": longer than {MAX_TEXT} characters')
    if "\n" in shown or "\r" in shown:
        raise RestrictionError(f'restriction "{shown.splitlines()[0]}...": must be a single line')
    refuse_hidden_characters("restriction", shown)
    try:
        tree = pysyntax.parse(shown, mode="eval")
    except SyntaxError as exc:
        col, snippet = syntax_position(exc, shown)
        raise RestrictionError(f'restriction "{shown}": syntax error: {exc.msg} (col {col}: {snippet})'
                               f"{c_syntax_hint(shown)}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise RestrictionError(f'restriction "{shown}": cannot be parsed ({type(exc).__name__})') from None
    known = tuple(sorted(set(known_names)))
    compiler = ExpressionCompiler(shown, frozenset(known), dict(kinds) if kinds is not None else None)
    fn, kind = compiler.compile(tree.body, 0)
    if kind == KIND_STR:  # ('abc', or a text slot alone: true for every config, a condition left unwritten)
        raise RestrictionError(f'restriction "{shown}": is text, not a condition; compare it '
                               f"(algo == 'tree') or leave it out")
    return Restriction(shown, frozenset(compiler.names), fn, known, dict(kinds) if kinds is not None else None)


class ExpressionCompiler:
    """Walks a parsed expression once: checks it against the whitelist and builds closures."""

    def __init__(self, text: str, known: frozenset[str], kinds: dict[str, str] | None) -> None:
        self.text = text
        self.known = known
        self.kinds = kinds
        self.names: set[str] = set()

    # -- errors ---------------------------------------------------------------------------------
    def fail(self, node: ast.AST, problem: str, snippet: str | None = None) -> RestrictionError:
        col = getattr(node, "col_offset", 0) + 1
        if snippet is None:
            snippet = ast.get_source_segment(self.text, node) or type(node).__name__
        if len(snippet) > 40:
            snippet = snippet[:37] + "..."
        return RestrictionError(f'restriction "{self.text}": {problem} (col {col}: {snippet})')

    # -- compilation ----------------------------------------------------------------------------
    def compile(self, node: ast.AST, depth: int) -> tuple[Node, str]:
        """Closure for ``node`` and its static kind (``num``, ``str`` or ``any``)."""
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nested deeper than {MAX_DEPTH} levels")
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            problem = _REFUSED.get(type(node), f"{type(node).__name__} expressions are not allowed")
            raise self.fail(node, problem)
        return method(node, depth + 1)

    def _Constant(self, node: ast.Constant, depth: int) -> tuple[Node, str]:
        value = node.value
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
            raise self.fail(node, f"an integer literal beyond {MAX_INT_BITS} bits", f"{value.bit_length()}-bit number")
        if isinstance(value, bool) or (isinstance(value, (int, float)) and not isinstance(value, complex)):
            return (lambda env, v=value: v), KIND_NUM
        if isinstance(value, str):
            return (lambda env, v=value: v), KIND_STR
        raise self.fail(node, f"only number, text and True/False literals are allowed, not {type(value).__name__}")

    def _Name(self, node: ast.Name, depth: int) -> tuple[Node, str]:
        name = node.id
        if name not in self.known:
            if name in CALLS:
                raise self.fail(node, f"{name} may only be called, e.g. {name}(a, b)")
            close = difflib.get_close_matches(name, sorted(self.known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(sorted(self.known)) or "none"
            raise self.fail(node, f"unknown name {name!r}{hint} (known: {known})", name)
        self.names.add(name)
        kind = self.kinds.get(name, KIND_ANY) if self.kinds is not None else KIND_ANY
        return operator.itemgetter(name), kind

    def _UnaryOp(self, node: ast.UnaryOp, depth: int) -> tuple[Node, str]:
        operand, kind = self.compile(node.operand, depth)
        text = self.text
        if isinstance(node.op, ast.Not):
            return (lambda env: not operand(env)), KIND_NUM
        if isinstance(node.op, (ast.USub, ast.UAdd)):
            if kind == KIND_STR:
                raise self.fail(node, "arithmetic on text is not allowed")
            if isinstance(node.op, ast.USub):
                return (lambda env: -_num(operand(env), text)), KIND_NUM
            return (lambda env: +_num(operand(env), text)), KIND_NUM
        raise self.fail(node, "bitwise operators (~) are not allowed; a condition is negated with not")

    def refused_operator(self, op: ast.operator) -> str:
        """Why a binary operator outside :data:`_BINOPS` is refused, with what to write instead."""
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)):
            return "bitwise operators (& | ^ << >>) are not allowed; conditions combine with and, or, not"
        return ("only the arithmetic operators + - * / // % ** are allowed (besides comparisons, and, or, not, "
                "and x if c else y)")

    def _BinOp(self, node: ast.BinOp, depth: int) -> tuple[Node, str]:
        entry = _BINOPS.get(type(node.op))
        if entry is None:
            raise self.fail(node, self.refused_operator(node.op))
        op, symbol = entry
        left, lkind = self.compile(node.left, depth)
        right, rkind = self.compile(node.right, depth)
        if KIND_STR in (lkind, rkind):
            raise self.fail(node, f"arithmetic ({symbol}) on text is not allowed")
        text = self.text

        def binop(env: Env) -> Any:
            result = op(_num(left(env), text), _num(right(env), text))
            if type(result) is int and result.bit_length() > MAX_INT_BITS:
                raise EvaluationError(f"an intermediate integer beyond {MAX_INT_BITS} bits")
            return result

        return binop, KIND_NUM

    def _BoolOp(self, node: ast.BoolOp, depth: int) -> tuple[Node, str]:
        parts = [self.compile(v, depth) for v in node.values]
        fns = tuple(fn for fn, _ in parts)
        kinds = {kind for _, kind in parts}
        kind = kinds.pop() if len(kinds) == 1 else KIND_ANY
        if isinstance(node.op, ast.And):

            def and_(env: Env) -> Any:
                value: Any = True
                for fn in fns:
                    value = fn(env)
                    if not value:
                        return value
                return value

            return and_, kind

        def or_(env: Env) -> Any:
            value: Any = False
            for fn in fns:
                value = fn(env)
                if value:
                    return value
            return value

        return or_, kind

    def _IfExp(self, node: ast.IfExp, depth: int) -> tuple[Node, str]:
        test, _ = self.compile(node.test, depth)
        body, bkind = self.compile(node.body, depth)
        orelse, okind = self.compile(node.orelse, depth)
        kind = bkind if bkind == okind else KIND_ANY
        return (lambda env: body(env) if test(env) else orelse(env)), kind

    def _Call(self, node: ast.Call, depth: int) -> tuple[Node, str]:
        func = node.func
        if not isinstance(func, ast.Name) or func.id not in CALLS:
            inner = node
            probe: ast.AST = func
            while isinstance(probe, (ast.Attribute, ast.Call, ast.Subscript)):
                if isinstance(probe, ast.Call):
                    inner = probe
                    probe = probe.func
                else:
                    probe = probe.value
            callee = ast.get_source_segment(self.text, inner.func) or "call"
            raise self.fail(inner, "function calls other than min, max, abs are not allowed", f"{callee}(...)")
        if node.keywords:
            raise self.fail(node.keywords[0].value, f"{func.id}() takes no keyword arguments", f"{func.id}(...)")
        low, high = CALLS[func.id]
        if not low <= len(node.args) <= high:
            want = "one argument" if low == high == 1 else f"at least {low} arguments"
            raise self.fail(node, f"{func.id}() needs {want}", f"{func.id}(...)")
        parts = [self.compile(arg, depth) for arg in node.args]
        fns = tuple(fn for fn, _ in parts)
        kinds = {kind for _, kind in parts}
        text = self.text
        if func.id == "abs":
            if KIND_STR in kinds:
                raise self.fail(node, "abs() of text is not allowed", "abs(...)")
            only = fns[0]
            return (lambda env: abs(_num(only(env), text))), KIND_NUM
        if kinds == {KIND_NUM, KIND_STR}:
            raise self.fail(node, f"{func.id}() mixes text and numbers", f"{func.id}(...)")
        builtin = min if func.id == "min" else max
        kind = kinds.pop() if len(kinds) == 1 else KIND_ANY
        return (lambda env: builtin([fn(env) for fn in fns])), kind

    def _Compare(self, node: ast.Compare, depth: int) -> tuple[Node, str]:
        left, lkind = self.compile(node.left, depth)
        steps: list[tuple[Callable[[Any, Any], bool], Node]] = []
        for op, comparator in zip(node.ops, node.comparators):
            if isinstance(op, (ast.Is, ast.IsNot)):
                raise self.fail(node, "'is' comparisons are not allowed; use == or !=")
            if isinstance(op, (ast.In, ast.NotIn)):
                right = self._literal_sequence(comparator)
                rkind = KIND_ANY
            else:
                right, rkind = self.compile(comparator, depth)
                if {lkind, rkind} == {KIND_NUM, KIND_STR}:
                    if isinstance(op, _ORDERING):
                        raise self.fail(node, "cannot order text against a number")
                    raise self.fail(node, "compares text with a number (always unequal)")
            steps.append((_CMPOPS[type(op)], right))
            lkind = rkind
        if len(steps) == 1:
            (cmp, right), = steps
            return (lambda env: cmp(left(env), right(env))), KIND_NUM

        def chain(env: Env) -> bool:
            a = left(env)
            for cmp, right_fn in steps:
                b = right_fn(env)
                if not cmp(a, b):
                    return False
                a = b
            return True

        return chain, KIND_NUM

    def _literal_sequence(self, node: ast.AST) -> Node:
        """The right side of ``in``: a tuple or list of literals (possibly negated numbers)."""
        if not isinstance(node, (ast.Tuple, ast.List)):
            raise self.fail(node, "'in' needs a literal tuple or list on its right, e.g. x in (1, 2, 4)")
        items: list[Any] = []
        for elt in node.elts:
            value: Any
            if isinstance(elt, ast.Constant) and isinstance(elt.value, (int, float, str)):
                value = elt.value
            elif (
                isinstance(elt, ast.UnaryOp)
                and isinstance(elt.op, ast.USub)
                and isinstance(elt.operand, ast.Constant)
                and isinstance(elt.operand.value, (int, float))
                and not isinstance(elt.operand.value, bool)
            ):
                value = -elt.operand.value
            else:
                raise self.fail(elt, "the list after 'in' may hold only number and text literals")
            items.append(value)
        frozen = tuple(items)
        return lambda env: frozen

    def _Tuple(self, node: ast.Tuple, depth: int) -> tuple[Node, str]:
        raise self.fail(node, "tuples are only allowed after 'in'")

    def _List(self, node: ast.List, depth: int) -> tuple[Node, str]:
        raise self.fail(node, "lists are only allowed after 'in'")


# --------------------------------------------------------------------------------------------
# vectorised evaluation (counting big spaces): same semantics, NumPy arrays instead of scalars

#: Integers at or beyond this magnitude leave the vector path (float64 no longer exact).
SAFE_INT = 2**53

VResult = tuple[np.ndarray, "np.ndarray | None"]  # (values, error mask or None)
VNode = Callable[[Mapping[str, np.ndarray]], VResult]


class _Unvectorisable(Exception):
    """This batch must be evaluated config by config (NumPy would not match Python exactly)."""


def _truthy(v: np.ndarray) -> np.ndarray:
    kind = v.dtype.kind
    if kind == "b":
        return v
    if kind in "iuf":
        return v != 0
    if kind == "U":
        return v != ""
    raise _Unvectorisable


def _numeric(v: np.ndarray) -> np.ndarray:
    kind = v.dtype.kind
    if kind == "b":
        return v.astype(np.int64)
    if kind in "iu":
        if v.size and int(np.abs(v).max()) >= SAFE_INT:
            raise _Unvectorisable
        return v
    if kind == "f":
        if np.isnan(v).any():
            raise _Unvectorisable
        return v
    raise _Unvectorisable


def _is_int(v: np.ndarray) -> bool:
    return v.dtype.kind in "iu"


def _checked_int(v: np.ndarray) -> np.ndarray:
    if v.size and int(np.abs(v).max()) >= SAFE_INT:
        raise _Unvectorisable
    return v


def _merge(*errs: np.ndarray | None) -> np.ndarray | None:
    out = None
    for err in errs:
        if err is not None:
            out = err if out is None else (out | err)
    return out


def _same_family(a: np.ndarray, b: np.ndarray) -> None:
    if (a.dtype.kind == "U") != (b.dtype.kind == "U"):
        raise _Unvectorisable


def _v_binop(op: type, a: np.ndarray, b: np.ndarray) -> VResult:
    a, b = _numeric(a), _numeric(b)
    ints = _is_int(a) and _is_int(b)
    if op is ast.Add:
        return (_checked_int(a + b) if ints else a + b), None
    if op is ast.Sub:
        return (_checked_int(a - b) if ints else a - b), None
    if op is ast.Mult:
        if ints:
            if np.abs(a.astype(np.float64) * b.astype(np.float64)).max(initial=0) >= SAFE_INT:
                raise _Unvectorisable
        return a * b, None
    zero = b == 0
    safe_b = np.where(zero, 1, b)
    err = zero if zero.any() else None
    if op is ast.Div:
        return np.true_divide(a, safe_b), err
    if not ints:  # float // and % round differently in NumPy and Python
        raise _Unvectorisable
    if op is ast.FloorDiv:
        return np.floor_divide(a, safe_b), err
    if op is ast.Mod:
        return np.remainder(a, safe_b), err
    raise _Unvectorisable  # pragma: no cover - ** has its own function


def _v_pow(a: np.ndarray, b: np.ndarray) -> VResult:
    a, b = _numeric(a), _numeric(b)
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    if _is_int(a) and _is_int(b):
        if (b >= 0).all():
            if np.max(np.abs(fa) ** fb, initial=0) >= SAFE_INT:
                raise _Unvectorisable  # exact big integers (and the size guard) are Python's job
            return a**b, None
        if (b >= 0).any():
            raise _Unvectorisable  # int and float results mixed: leave it to Python
        # every exponent negative: Python computes in floats, as below
    bad = (np.abs(fb) > 1e6) & (np.abs(fa) != 0) & (np.abs(fa) != 1)  # the scalar size guard
    bad = bad | ((fa == 0) & (fb < 0))  # ZeroDivisionError
    bad = bad | ((fa < 0) & (fb != np.floor(fb)))  # complex result
    result = np.power(fa, np.where(bad, 1.0, fb))
    bad = bad | (np.isinf(result) & np.isfinite(fa) & np.isfinite(fb))  # OverflowError
    return result, (bad if bad.any() else None)


_V_CMP = {
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
}


class _VectorCompiler:
    """Builds NumPy closures for an expression the scalar compiler already accepted."""

    def compile(self, node: ast.AST) -> VNode:
        return getattr(self, "_" + type(node).__name__)(node)

    def _Constant(self, node: ast.Constant) -> VNode:
        value = np.asarray(node.value)
        return lambda env: (value, None)

    def _Name(self, node: ast.Name) -> VNode:
        name = node.id
        return lambda env: (np.asarray(env[name]), None)

    def _UnaryOp(self, node: ast.UnaryOp) -> VNode:
        operand = self.compile(node.operand)
        if isinstance(node.op, ast.Not):

            def not_(env: Mapping[str, np.ndarray]) -> VResult:
                value, err = operand(env)
                return ~_truthy(value), err

            return not_
        negate = isinstance(node.op, ast.USub)

        def sign(env: Mapping[str, np.ndarray]) -> VResult:
            value, err = operand(env)
            value = _numeric(value)
            return (-value if negate else +value), err

        return sign

    def _BinOp(self, node: ast.BinOp) -> VNode:
        left, right, op = self.compile(node.left), self.compile(node.right), type(node.op)

        def binop(env: Mapping[str, np.ndarray]) -> VResult:
            a, ea = left(env)
            b, eb = right(env)
            value, err = _v_pow(a, b) if op is ast.Pow else _v_binop(op, a, b)
            return value, _merge(ea, eb, err)

        return binop

    def _BoolOp(self, node: ast.BoolOp) -> VNode:
        parts = [self.compile(v) for v in node.values]
        is_and = isinstance(node.op, ast.And)

        def boolop(env: Mapping[str, np.ndarray]) -> VResult:
            value, err = parts[0](env)
            for part in parts[1:]:
                nxt, nerr = part(env)
                _same_family(value, nxt)
                truth = _truthy(value)
                go_on = truth if is_and else ~truth  # where the next operand is evaluated
                value = np.where(go_on, nxt, value)
                if nerr is not None:
                    err = _merge(err, go_on & nerr)
            return value, err

        return boolop

    def _IfExp(self, node: ast.IfExp) -> VNode:
        test, body, orelse = self.compile(node.test), self.compile(node.body), self.compile(node.orelse)

        def ifexp(env: Mapping[str, np.ndarray]) -> VResult:
            t, et = test(env)
            b, eb = body(env)
            o, eo = orelse(env)
            _same_family(b, o)
            truth = _truthy(t)
            return np.where(truth, b, o), _merge(
                et, None if eb is None else truth & eb, None if eo is None else ~truth & eo
            )

        return ifexp

    def _Call(self, node: ast.Call) -> VNode:
        args = [self.compile(a) for a in node.args]
        name = node.func.id  # type: ignore[attr-defined]

        def call(env: Mapping[str, np.ndarray]) -> VResult:
            results = [arg(env) for arg in args]
            values = [_numeric(v) for v, _ in results]
            err = _merge(*(e for _, e in results))
            if name == "abs":
                return np.abs(values[0]), err
            reduce = np.minimum if name == "min" else np.maximum
            out = values[0]
            for v in values[1:]:
                out = reduce(out, v)
            return out, err

        return call

    def _Compare(self, node: ast.Compare) -> VNode:
        left = self.compile(node.left)
        steps: list[tuple[str, Any, Any]] = []  # ("in", negated, values) or ("cmp", ufunc, operand)
        for op, comparator in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                items = []
                for elt in comparator.elts:  # type: ignore[attr-defined]
                    items.append(-elt.operand.value if isinstance(elt, ast.UnaryOp) else elt.value)  # type: ignore[attr-defined]
                steps.append(("in", isinstance(op, ast.NotIn), items))
            else:
                steps.append(("cmp", _V_CMP[type(op)], self.compile(comparator)))

        def compare(env: Mapping[str, np.ndarray]) -> VResult:
            a, err = left(env)
            result: np.ndarray | None = None
            for kind, how, what in steps:
                evaluated = result  # the next comparison runs only where all before held
                if kind == "in":
                    if a.dtype.kind == "U":
                        pool = [x for x in what if isinstance(x, str)]
                    else:
                        _numeric(a)
                        pool = [x for x in what if not isinstance(x, str)]
                    step = np.isin(a, pool) if pool else np.zeros(np.shape(a), dtype=bool)
                    if how:
                        step = ~step
                    b, berr = a, None
                else:
                    b, berr = what(env)
                    _same_family(a, b)
                    if a.dtype.kind != "U":
                        _numeric(a), _numeric(b)
                    step = how(a, b)
                if berr is not None:
                    err = _merge(err, berr if evaluated is None else evaluated & berr)
                result = step if result is None else (result & step)
                a = b
            assert result is not None  # a comparison has at least one operator
            return result, err

        return compare
