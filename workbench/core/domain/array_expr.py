"""Array expressions: the restriction language widened just enough to write a NumPy reference.

A declarative template's reference is one expression per output, e.g. ``alpha * x + y`` or
``0.5 * u + 0.25 * (roll(u, 1) + roll(u, -1))``. It is parsed with :mod:`ast` and compiled to
closures by the same walker as restrictions (:mod:`workbench.core.domain.expr`), with two additions: calls
to a fixed list of NumPy functions (:data:`FUNCTIONS`) and subscripts with integer indices and
slices (``u[1:-1]``). Attribute access, comprehensions, lambdas and every other call stay refused,
so a reference typed by someone else can compute, never act. Names are the kernel's input
arguments (float64 arrays or scalars) and the problem parameters.
"""

from __future__ import annotations

import ast
import math
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from workbench.core.domain import pysyntax
from workbench.core.errors import RestrictionError
from workbench.core.domain.expr import (
    BINARY_OPERATORS,
    COMPARISONS,
    KIND_NUM,
    KIND_STR,
    MAX_INT_BITS,
    MAX_TEXT,
    EvaluationError,
    ExpressionCompiler,
    refuse_hidden_characters,
    syntax_position,
)

#: NumPy functions a reference may call, with the (min, max) number of positional arguments.
FUNCTIONS: dict[str, tuple[Callable[..., Any] | None, int, int]] = {  # None: special-cased below
    "sqrt": (np.sqrt, 1, 1), "exp": (np.exp, 1, 1), "log": (np.log, 1, 1), "log2": (np.log2, 1, 1),
    "sin": (np.sin, 1, 1), "cos": (np.cos, 1, 1), "tanh": (np.tanh, 1, 1), "erf": (None, 1, 1),
    "abs": (np.abs, 1, 1), "floor": (np.floor, 1, 1), "ceil": (np.ceil, 1, 1),
    "minimum": (np.minimum, 2, 2), "maximum": (np.maximum, 2, 2), "where": (np.where, 3, 3),
    "clip": (np.clip, 3, 3), "roll": (np.roll, 2, 3), "sum": (np.sum, 1, 2), "max": (np.max, 1, 2),
    "min": (np.min, 1, 2), "mean": (np.mean, 1, 2), "cumsum": (np.cumsum, 1, 2),
    "matmul": (np.matmul, 2, 2), "transpose": (np.transpose, 1, 1), "pad": (None, 2, 2),
    "arange": (np.arange, 1, 3), "zeros_like": (np.zeros_like, 1, 1), "copy": (np.copy, 1, 1),
}


#: The most elements any array a reference makes may hold (from numbers: ``arange``, ``pad``; by
#: broadcasting: ``(n, 1) * (1, n)``), as a multiple of its largest input or output, and at least
#: ``MIN_MADE`` (256 MiB of float64: a pairwise intermediate of a few thousand points, as an
#: n-body or distance reference sums over). A reference computes outputs the size of its inputs,
#: while ``arange(4e9)`` or a broadcast of two long vectors typed into a spec would take the
#: memory of the window that checks it.
MADE_PER_INPUT = 4
MIN_MADE = 1 << 25


#: The key under which :class:`ArrayExpression` passes its output's size to the checks (not an
#: identifier: no name of an expression can be it).
_OUTPUT_ELEMENTS = "output elements"


def _largest(env: Mapping[str, Any]) -> int:
    """Elements of the largest input or output (see :class:`ArrayExpression`)."""
    largest = max((int(np.size(v)) for v in env.values() if isinstance(v, np.ndarray)), default=0)
    return max(largest, int(env.get(_OUTPUT_ELEMENTS, 0)))


def _made_limit(env: Mapping[str, Any]) -> int:
    return max(MIN_MADE, MADE_PER_INPUT * _largest(env))


#: The most multiply-adds one ``matmul`` may take: ``MATMUL_PER_SIZE`` x (largest input or output
#: elements) ** 1.5, what a product of such inputs into such an output takes at most (a square
#: GEMM of n x n matrices: n ** 3), and at least ``MIN_MATMUL_WORK``. Products of intermediates,
#: each within the limit above, could otherwise hold the checking window for minutes.
MATMUL_PER_SIZE = 2
MIN_MATMUL_WORK = 1 << 30


def _bounded(text: str, env: Mapping[str, Any], *values: Any) -> None:
    """Refuse, before computing it, an element-wise result of ``values`` (broadcast together)
    larger than the reference may make (:func:`_made_limit`): inputs of shapes ``(n, 1)`` and
    ``(1, n)`` broadcast to ``n x n``, gigabytes from a few hundred kilobytes of inputs, in the
    process that checks the template (the window's own, for the editor). Shapes that do not
    broadcast are left to NumPy's own error."""
    try:
        shape = np.broadcast_shapes(*(np.shape(v) for v in values))
    except ValueError:
        return
    _refuse_size(text, env, shape, "would make")


def _refuse_size(text: str, env: Mapping[str, Any], shape: tuple[int, ...], what: str) -> None:
    size, limit = math.prod(shape), _made_limit(env)
    if size > limit:
        raise RestrictionError(f'expression "{text}": {what} {size:,} elements (shape {shape}), more than {limit:,} '
                               f"({MADE_PER_INPUT} x the largest input or output): a reference computes arrays the size of "
                               "its inputs and outputs")


def _bounded_matmul(text: str, env: Mapping[str, Any], a: Any, b: Any) -> Any:
    """``matmul(a, b)`` once its result and its work are known to be within bounds (see :func:`_bounded`)."""
    left, right = np.shape(a), np.shape(b)
    if not left or not right:
        return np.matmul(a, b)  # (NumPy refuses a scalar in words)
    lhs = (1, *left) if len(left) == 1 else left
    rhs = (*right, 1) if len(right) == 1 else right
    try:
        batch = np.broadcast_shapes(lhs[:-2], rhs[:-2])
    except ValueError:
        return np.matmul(a, b)  # (NumPy says which shapes do not match)
    _refuse_size(text, env, (*batch, lhs[-2], rhs[-1]), "matmul() would make")
    work = math.prod((*batch, lhs[-2], lhs[-1], rhs[-1]))
    limit = max(MIN_MATMUL_WORK, int(MATMUL_PER_SIZE * _largest(env) ** 1.5))
    if work > limit:
        raise RestrictionError(f'expression "{text}": matmul() would take {work:,} multiply-adds, more than '
                               f"{limit:,} (what a product of inputs and outputs of these sizes takes)")
    return np.matmul(a, b)


def _member(a: Any, listed: Any) -> Any:
    return np.isin(a, list(listed))


def _not_member(a: Any, listed: Any) -> Any:
    return np.isin(a, list(listed), invert=True)


#: Functions whose arguments broadcast together element by element (see :func:`_bounded`).
_BROADCASTING = frozenset({"minimum", "maximum", "where", "clip"})


def _arange_size(*bounds: Any) -> int:
    start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
    if not step or not all(np.isfinite(float(b)) for b in (start, stop, step)):
        return 0  # NumPy's own error (a zero step, a nan) says what is wrong
    return max(0, int(np.ceil((float(stop) - float(start)) / float(step))))


def _pad_size(x: Any, width: Any) -> int:
    shape = np.shape(x)
    grow = 2 * max(0, int(width))
    return int(np.prod([n + grow for n in shape])) if shape else 1


#: Functions whose result's size comes from numbers, not only from their array arguments.
_MADE_SIZE: dict[str, Callable[..., int]] = {"arange": _arange_size, "pad": _pad_size}


def _erf(x: Any) -> Any:
    from math import erf  # NumPy has no erf; vectorise the stdlib one

    return np.vectorize(erf, otypes=[np.float64])(x)


def _pad(x: Any, width: Any) -> Any:
    return np.pad(x, int(width), mode="edge")


_SPECIAL: dict[str, Callable[..., Any]] = {"erf": _erf, "pad": _pad}


class ArrayExpression:
    """A compiled reference expression: call it with a mapping of names to arrays/scalars."""

    def __init__(self, text: str, names: frozenset[str], fn: Callable[[Mapping[str, Any]], Any]) -> None:
        self.text = text
        self.names = names
        self._fn = fn

    def __call__(self, values: Mapping[str, Any], output_shape: Iterable[int] = ()) -> np.ndarray:
        """The expression's value; a :class:`RestrictionError` quoting it when NumPy cannot compute
        it for these inputs (a zero slice step, shapes that do not broadcast, an index out of range),
        which only the inputs can tell, so it is found when the reference first runs.
        ``output_shape``: the output it computes, which may be larger than any input (an outer
        product): arrays up to a multiple of the larger of the two are made (see :func:`_bounded`)."""
        env = {**values, _OUTPUT_ELEMENTS: math.prod(output_shape)} if output_shape else values
        try:
            with np.errstate(all="ignore"):
                return np.asarray(self._fn(env), dtype=np.float64)
        except RestrictionError:
            raise
        except MemoryError:
            raise RestrictionError(f'expression "{self.text}": needs more memory than there is') from None
        except (ArithmeticError, LookupError, TypeError, ValueError) as exc:
            raise RestrictionError(f'expression "{self.text}": cannot be computed: {exc}') from None


class _ArrayCompiler(ExpressionCompiler):
    """The restriction walker plus whitelisted NumPy calls and subscripts."""

    def fail(self, node: ast.AST, problem: str, snippet: str | None = None) -> RestrictionError:
        error = super().fail(node, problem, snippet)
        return RestrictionError(str(error).replace("restriction \"", "expression \"", 1))

    def _Call(self, node: ast.Call, depth: int) -> tuple[Any, str]:
        func = node.func
        if not isinstance(func, ast.Name) or func.id not in FUNCTIONS:
            callee = ast.get_source_segment(self.text, func) or "call"
            allowed = ", ".join(sorted(FUNCTIONS))
            raise self.fail(node, f"only these functions may be called: {allowed}", f"{callee}(...)")
        if node.keywords:
            raise self.fail(node.keywords[0].value, f"{func.id}() takes no keyword arguments", f"{func.id}(...)")
        listed, low, high = FUNCTIONS[func.id]
        fn: Callable[..., Any] = listed if listed is not None else _SPECIAL[func.id]
        if not low <= len(node.args) <= high:
            raise self.fail(node, f"{func.id}() takes {low} to {high} arguments", f"{func.id}(...)")
        args = tuple(self.compile(arg, depth)[0] for arg in node.args)
        if func.id in ("roll", "sum", "max", "min", "mean", "cumsum") and len(args) > 1:
            head, rest = args[0], args[1:]
            return (lambda env: fn(head(env), *(int(a(env)) for a in rest))), KIND_NUM
        if func.id in _MADE_SIZE:
            size_of, name, text = _MADE_SIZE[func.id], func.id, self.text

            def made(env: Mapping[str, Any]) -> Any:
                values = [a(env) for a in args]
                size, limit = size_of(*values), _made_limit(env)
                if size > limit:
                    raise RestrictionError(f'expression "{text}": {name}() would make {size:,} elements, more than '
                                           f"{limit:,} ({MADE_PER_INPUT} x the largest input or output): a reference computes "
                                           "arrays the size of its inputs and outputs")
                return fn(*values)

            return made, KIND_NUM
        text = self.text
        if func.id == "matmul":
            first, second = args
            return (lambda env: _bounded_matmul(text, env, first(env), second(env))), KIND_NUM
        if func.id in _BROADCASTING:
            def broadcast(env: Mapping[str, Any]) -> Any:
                values = [a(env) for a in args]
                _bounded(text, env, *values)
                return fn(*values)

            return broadcast, KIND_NUM
        return (lambda env: fn(*(a(env) for a in args))), KIND_NUM

    def _BinOp(self, node: ast.BinOp, depth: int) -> tuple[Any, str]:
        entry = BINARY_OPERATORS.get(type(node.op))
        if entry is None:
            raise self.fail(node, self.refused_operator(node.op))
        op, symbol = entry
        (left, lkind), (right, rkind) = self.compile(node.left, depth), self.compile(node.right, depth)
        if KIND_STR in (lkind, rkind):
            raise self.fail(node, f"arithmetic ({symbol}) on text is not allowed")
        text = self.text

        def binop(env: Mapping[str, Any]) -> Any:
            a, b = left(env), right(env)
            _bounded(text, env, a, b)  # (before NumPy allocates what they broadcast to)
            result = op(a, b)
            if type(result) is int and result.bit_length() > MAX_INT_BITS:
                raise EvaluationError(f"an intermediate integer beyond {MAX_INT_BITS} bits")
            return result

        return binop, KIND_NUM

    def _Compare(self, node: ast.Compare, depth: int) -> tuple[Any, str]:
        """Comparisons per element; a chain (``0 < u < 1``) holds where each of its links does, and
        ``in`` / ``not in`` a literal list is membership per element."""
        left, _ = self.compile(node.left, depth)
        links: list[tuple[Callable[[Any, Any], Any], Callable[[Mapping[str, Any]], Any]]] = []
        for op, comparator in zip(node.ops, node.comparators):
            if isinstance(op, (ast.Is, ast.IsNot)):
                raise self.fail(node, "'is' comparisons are not allowed; use == or !=")
            if isinstance(op, (ast.In, ast.NotIn)):
                right = self._literal_sequence(comparator)
                links.append((_not_member if isinstance(op, ast.NotIn) else _member, right))
            else:
                links.append((COMPARISONS[type(op)], self.compile(comparator, depth)[0]))
        text = self.text

        def compare(env: Mapping[str, Any]) -> Any:
            a, held = left(env), None
            for cmp, right_fn in links:
                b = right_fn(env)
                _bounded(text, env, a, b, *(() if held is None else (held,)))
                link = cmp(a, b)
                held = link if held is None else np.logical_and(held, link)
                a = b
            return held

        return compare, KIND_NUM

    # Conditions apply per element, as NumPy's comparisons do: Python's own ``and``, ``or``, ``not``
    # and ``x if c else y`` ask an array for one truth value and fail when the reference runs
    # ("the truth value of an array ... is ambiguous. Use a.any()", advice no expression can
    # follow), though the check let them through. Per element they mean what they mean for
    # numbers: ``a and b`` is b where a holds, else a. A condition that is one number (a problem
    # parameter) decides as Python does, computing only what it picks: ``x[1:] if n > 4 else x``
    # and ``x[n] if n < 8 else 0`` hold a branch that cannot be computed when not picked.
    def _BoolOp(self, node: ast.BoolOp, depth: int) -> tuple[Any, str]:
        parts = tuple(self.compile(value, depth)[0] for value in node.values)
        text, conjunction = self.text, isinstance(node.op, ast.And)

        def combined(env: Mapping[str, Any]) -> Any:
            value = parts[0](env)
            for part in parts[1:]:
                if np.ndim(value) == 0:
                    if bool(value) != conjunction:  # (False for and, True for or: decided)
                        return value
                    value = part(env)
                    continue
                following = part(env)
                _bounded(text, env, value, following)
                value = np.where(value, following, value) if conjunction else np.where(value, value, following)
            return value

        return combined, KIND_NUM

    def _UnaryOp(self, node: ast.UnaryOp, depth: int) -> tuple[Any, str]:
        if isinstance(node.op, ast.Not):
            operand, _ = self.compile(node.operand, depth)
            return (lambda env: np.logical_not(operand(env))), KIND_NUM
        return super()._UnaryOp(node, depth)

    def _IfExp(self, node: ast.IfExp, depth: int) -> tuple[Any, str]:
        test, _ = self.compile(node.test, depth)
        body, _ = self.compile(node.body, depth)
        orelse, _ = self.compile(node.orelse, depth)
        text = self.text

        def choose(env: Mapping[str, Any]) -> Any:
            condition = test(env)
            if np.ndim(condition) == 0:
                return body(env) if condition else orelse(env)
            values = condition, body(env), orelse(env)
            _bounded(text, env, *values)
            return np.where(*values)

        return choose, KIND_NUM

    def refused_operator(self, op: ast.operator) -> str:
        if isinstance(op, ast.MatMult):
            return "@ is not allowed; use matmul(a, b)"
        return super().refused_operator(op)

    def _Subscript(self, node: ast.Subscript, depth: int) -> tuple[Any, str]:
        value, _ = self.compile(node.value, depth)
        index = self._index(node.slice, depth)
        return (lambda env: value(env)[index(env)]), KIND_NUM

    def _index(self, node: ast.AST, depth: int) -> Callable[[Mapping[str, Any]], Any]:
        if isinstance(node, ast.Tuple):
            parts = tuple(self._index(elt, depth) for elt in node.elts)
            return lambda env: tuple(p(env) for p in parts)
        if isinstance(node, ast.Slice):
            bounds = [self._int_part(part, depth) for part in (node.lower, node.upper, node.step)]
            return lambda env: slice(*(b(env) for b in bounds))
        return self._int_part(node, depth)

    def _int_part(self, node: ast.AST | None, depth: int) -> Callable[[Mapping[str, Any]], Any]:
        if node is None:
            return lambda env: None
        fn, _ = self.compile(node, depth)
        return lambda env: int(fn(env))

    def _Tuple(self, node: ast.Tuple, depth: int) -> tuple[Any, str]:
        raise self.fail(node, "tuples are only allowed as subscripts, e.g. a[1:-1, 0]")


def compile_array_expression(text: str, known_names: Iterable[str]) -> ArrayExpression:
    """Parse and check a reference expression; a :class:`RestrictionError` names the bad part and column."""
    shown = (text or "").strip()
    if not shown:
        raise RestrictionError("reference expression is empty")
    if len(shown) > MAX_TEXT or "\n" in shown:
        raise RestrictionError(f'expression "{shown[:40]}": must be one line of at most {MAX_TEXT} characters')
    refuse_hidden_characters("expression", shown)
    try:
        tree = pysyntax.parse(shown, mode="eval")
    except SyntaxError as exc:
        col, snippet = syntax_position(exc, shown)
        raise RestrictionError(f'expression "{shown}": syntax error: {exc.msg} (col {col}: {snippet})') from None
    known = frozenset(known_names)
    compiler = _ArrayCompiler(shown, known, None)
    fn, _ = compiler.compile(tree.body, 0)
    return ArrayExpression(shown, frozenset(compiler.names), fn)


__all__ = ["ArrayExpression", "FUNCTIONS", "compile_array_expression"]
