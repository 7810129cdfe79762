"""The safe restriction language: what it accepts, what it refuses and how, and that it agrees
with Python's own semantics on the expressions it accepts."""

from __future__ import annotations

import ast
import builtins
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core.errors import RestrictionError, WorkbenchError
from workbench.core.domain.expr import compile_restriction

NAMES = ("block_size", "items_per_thread", "tile_x", "vector_width", "strategy")
KINDS = {"block_size": "num", "items_per_thread": "num", "tile_x": "num", "vector_width": "num", "strategy": "str"}


def check(text: str, **values) -> bool:
    return compile_restriction(text, NAMES, KINDS)(values)


def test_issue_examples_evaluate() -> None:
    assert check("block_size * items_per_thread <= 4096", block_size=256, items_per_thread=16)
    assert not check("block_size * items_per_thread <= 4096", block_size=512, items_per_thread=16)
    assert check("tile_x % vector_width == 0", tile_x=8, vector_width=4)
    assert not check("tile_x % vector_width == 0", tile_x=6, vector_width=4)
    text = 'strategy != "atomic" or block_size >= 128'
    assert check(text, strategy="tree", block_size=32)
    assert not check(text, strategy="atomic", block_size=64)
    assert check(text, strategy="atomic", block_size=128)


def test_names_are_exactly_what_is_read() -> None:
    r = compile_restriction("min(block_size, 64) > tile_x if vector_width in (1, 2) else True", NAMES)
    assert r.names == frozenset({"block_size", "tile_x", "vector_width"})
    assert r.text.startswith("min(")


@pytest.mark.parametrize(
    "text, values, expected",
    [
        ("1 < tile_x <= 4 < block_size", {"tile_x": 4, "block_size": 5}, True),
        ("1 < tile_x <= 4 < block_size", {"tile_x": 4, "block_size": 4}, False),
        ("tile_x not in [3, 5, -7]", {"tile_x": -7}, False),
        ("strategy in ('atomic', 'tree')", {"strategy": "tree"}, True),
        ("not tile_x", {"tile_x": 0}, True),
        ("abs(-tile_x) == max(tile_x, 1, -2)", {"tile_x": 3}, True),
        ("tile_x / 2 == 1.5", {"tile_x": 3}, True),
        ("tile_x // 2 == 1 and tile_x % 2 == 1", {"tile_x": 3}, True),
        ("-tile_x // 2 == -2", {"tile_x": 3}, True),  # floor division, as in Python
        ("2 ** tile_x == 8", {"tile_x": 3}, True),
        ("+tile_x == 3.0", {"tile_x": 3}, True),
        ("True", {}, True),
        ("block_size if tile_x else 0", {"block_size": 7, "tile_x": 0}, False),
    ],
)
def test_semantics(text: str, values: dict, expected: bool) -> None:
    assert compile_restriction(text, NAMES)(values) is expected


def test_and_or_return_operands_like_python() -> None:
    assert compile_restriction("tile_x or block_size", NAMES).evaluate({"tile_x": 0, "block_size": 9}) == 9
    assert compile_restriction("tile_x and block_size", NAMES).evaluate({"tile_x": 0, "block_size": 9}) == 0


@pytest.mark.parametrize(
    "text",
    ["tile_x % vector_width == 0", "block_size / vector_width > 1", "block_size // (tile_x - 4) > 0", "0 ** -1 > 0"],
)
def test_division_by_zero_makes_config_invalid(text: str) -> None:
    values = {"tile_x": 4, "vector_width": 0, "block_size": 64}
    assert compile_restriction(text, NAMES)(values) is False


@pytest.mark.parametrize(
    "text",
    ["2 ** block_size > 0", "block_size ** block_size ** block_size > 1", "2.5 ** block_size > 0", "(-8) ** 0.5 > 0"],
)
def test_enormous_or_complex_powers_are_refused_not_computed(text: str) -> None:
    # 2 ** 10**9 would take gigabytes; it must be refused quickly and count as "not satisfied".
    assert compile_restriction(text, NAMES)({"block_size": 10**9}) is False


def test_small_powers_still_work() -> None:
    assert compile_restriction("2 ** block_size == 1024", NAMES)({"block_size": 10})
    assert compile_restriction("1 ** block_size == 1", NAMES)({"block_size": 10**12})


ISSUE_MESSAGE = (
    "restriction \"__import__('os').system('x')\": function calls other than min, max, abs are not allowed "
    "(col 1: __import__(...))"
)


def test_issue_error_message_exactly() -> None:
    with pytest.raises(RestrictionError) as info:
        compile_restriction("__import__('os').system('x')", NAMES)
    assert str(info.value) == ISSUE_MESSAGE
    assert isinstance(info.value, WorkbenchError)


def test_spaces_and_marks_of_written_text_are_no_hidden_characters() -> None:
    """A no-break space pasted from a web page, a right-to-left mark or a tab in a comment are
    text: a restriction saved with one must still load. A bidi override in a reference expression
    is refused as in a restriction."""
    for text in ("tile_x > 1  # at most 4\u00a0KB", "tile_x >\t1", "tile_x > 1  # \u05d0\u200f"):
        assert compile_restriction(text, NAMES, KINDS).names == frozenset({"tile_x"})
    from workbench.core.domain.array_expr import compile_array_expression

    with pytest.raises(RestrictionError, match="RIGHT-TO-LEFT OVERRIDE"):
        compile_array_expression("a + b  # \u202e 1 *", ["a", "b"])


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("block_size.bit_length() > 3", "(col 1: block_size.bit_length(...))"),
        ("tile_x.real > 3", "attribute access is not allowed (col 1: tile_x.real)"),
        ("tile_x[0] > 3", "subscripts are not allowed (col 1: tile_x[0])"),
        ("(lambda: 1)() > 0", "function calls other than min, max, abs"),
        ("(lambda: 1) == 0", "lambdas are not allowed (col 2: lambda: 1)"),
        ("[x for x in (1, 2)] == 0", "comprehensions are not allowed (col 1:"),
        ("any(x for x in (1, 2))", "function calls other than min, max, abs"),
        ("(n := 3) > 1", "assignment expressions (:=) are not allowed (col 2: n := 3)"),
        ("f'{tile_x}' == '1'", "f-strings are not allowed (col 1:"),
        ("tile_y > 1", "unknown name 'tile_y'; did you mean 'tile_x'?"),
        ("eval('1')", "function calls other than min, max, abs are not allowed (col 1: eval(...))"),
        ("open('/etc/passwd')", "(col 1: open(...))"),
        ("tile_x > 1 and exec('x')", "(col 16: exec(...))"),
        ("min(tile_x)", "min() needs at least 2 arguments"),
        ("abs(tile_x, 2)", "abs() needs one argument"),
        ("max(tile_x, 2, key=abs)", "takes no keyword arguments"),
        ("tile_x & 1", "bitwise operators (& | ^ << >>) are not allowed; conditions combine with and, or, not"),
        ("tile_x << 2", "bitwise operators"),
        ("tile_x @ 2", "only the arithmetic operators + - * / // % ** are allowed (besides comparisons, and, or, not"),
        ("~tile_x", "bitwise operators (~) are not allowed; a condition is negated with not"),
        ("tile_x is 1", "'is' comparisons are not allowed"),
        ("tile_x in block_size", "'in' needs a literal tuple or list"),
        ("tile_x in (block_size, 2)", "may hold only number and text literals (col 12: block_size)"),
        ("tile_x in {1, 2}", "'in' needs a literal tuple or list"),
        ("(tile_x, 1) == 1", "tuples are only allowed after 'in'"),
        ("None == tile_x", "only number, text and True/False literals"),
        ("b'x' == tile_x", "only number, text and True/False literals"),
        ("1j == tile_x", "only number, text and True/False literals"),
        ("{1: 2} == tile_x", "dict literals are not allowed"),
        ("tile_x > ", "syntax error"),
        # a text that ends too soon: the error is at its end, not at column 1 over what is right
        ("tile_x > 1 and", "syntax error: invalid syntax (col 15: end of text)"),
        ("import os", "syntax error"),
        ("tile_x = 1", "syntax error"),
        ("", "restriction is empty"),
        ("tile_x > 1\nimport os", "single line"),
        ("tile_x > 1 # \u202e 0 < x_elit", "U+202E RIGHT-TO-LEFT OVERRIDE (col 14: \\u202e)"),  # bidi override
        ("tile_x\x1b[2J > 1", "invisible character U+001B control character (col 7: \\x1b)"),
        ("strategy * 2 == 'aa'", "arithmetic (*) on text is not allowed"),
        ("strategy < 3", "cannot order text against a number"),
        ("strategy == 1", "compares text with a number"),
        ("abs(strategy) == 1", "abs() of text is not allowed"),
        ("min(strategy, 1) == 1", "min() mixes text and numbers"),
        ("-strategy == 1", "arithmetic on text is not allowed"),
        ("min > 1", "min may only be called"),
        ("-" * 80 + "tile_x > 1", "nested deeper than"),
        ("tile_x > 1 " + "and tile_x > 1 " * 200, "longer than 2000 characters"),
    ],
)
def test_refused_with_part_and_column(text: str, fragment: str) -> None:
    with pytest.raises(RestrictionError) as info:
        compile_restriction(text, NAMES, KINDS)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_text_must_be_text() -> None:
    with pytest.raises(RestrictionError, match="must be text"):
        compile_restriction(lambda v: True, NAMES)  # type: ignore[arg-type]


def test_arithmetic_on_text_without_kinds_fails_at_evaluation() -> None:
    r = compile_restriction("strategy * 1000000000 == tile_x", NAMES)  # no kinds: not caught statically
    with pytest.raises(RestrictionError, match="arithmetic on text"):
        r({"strategy": "atomic", "tile_x": 1})


def test_missing_value_is_reported() -> None:
    r = compile_restriction("tile_x > 1", NAMES)
    with pytest.raises(RestrictionError, match="no value for 'tile_x'"):
        r({})


def test_never_uses_eval_or_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    real_compile = builtins.compile
    calls: list[str] = []

    def forbidden(*args, **kwargs):
        calls.append("eval/exec")
        raise AssertionError("eval/exec called")

    def parse_only(source, filename, mode, flags=0, *args, **kwargs):
        if not flags & ast.PyCF_ONLY_AST:  # ast.parse is fine; compiling to bytecode is not
            calls.append("compile")
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    monkeypatch.setattr(builtins, "compile", parse_only)
    r = compile_restriction("block_size * items_per_thread <= 4096 and tile_x in (1, 2)", NAMES)
    ok = r({"block_size": 64, "items_per_thread": 4, "tile_x": 2})
    monkeypatch.undo()
    assert ok and not calls


def test_pickles_by_text() -> None:
    r = compile_restriction("tile_x % vector_width == 0", NAMES, KINDS)
    clone = pickle.loads(pickle.dumps(r))
    assert clone == r and clone.text == r.text and clone.names == r.names
    assert clone({"tile_x": 8, "vector_width": 4}) and not clone({"tile_x": 6, "vector_width": 4})


# ---------------------------------------------------------------- agreement with Python semantics

VARS = ("a", "b", "c")


@st.composite
def _exprs(draw: st.DrawFn, depth: int = 0) -> str:
    """A random expression of the safe language over ints, fully parenthesised."""
    if depth >= 4 or draw(st.integers(0, 4)) == 0:
        return draw(st.one_of(st.sampled_from(VARS), st.integers(-20, 20).map(str), st.sampled_from(["True", "False"])))
    sub = lambda: draw(_exprs(depth + 1))  # noqa: E731
    form = draw(st.sampled_from(["binop", "binop", "binop", "pow", "cmp", "bool", "not", "neg", "if", "call", "abs", "in"]))
    if form == "binop":
        return f"({sub()} {draw(st.sampled_from(['+', '-', '*', '/', '//', '%']))} {sub()})"
    if form == "pow":
        return f"({sub()} ** {draw(st.integers(0, 3))})"
    if form == "cmp":
        ops = draw(st.lists(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), min_size=1, max_size=3))
        return "(" + sub() + "".join(f" {op} {sub()}" for op in ops) + ")"
    if form == "bool":
        return f"({sub()} {draw(st.sampled_from(['and', 'or']))} {sub()})"
    if form == "not":
        return f"(not {sub()})"
    if form == "neg":
        return f"(-{sub()})"
    if form == "if":
        return f"({sub()} if {sub()} else {sub()})"
    if form == "call":
        return f"{draw(st.sampled_from(['min', 'max']))}({', '.join(sub() for _ in range(draw(st.integers(2, 3))))})"
    if form == "abs":
        return f"abs({sub()})"
    items = draw(st.lists(st.integers(-5, 5), max_size=4))
    return f"({sub()} {draw(st.sampled_from(['in', 'not in']))} ({''.join(f'{x}, ' for x in items)}))"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_exprs(), a=st.integers(-50, 50), b=st.integers(-50, 50), c=st.integers(-3, 3))
def test_agrees_with_python(text: str, a: int, b: int, c: int) -> None:
    env = {"a": a, "b": b, "c": c}
    try:
        expected = eval(text, {"__builtins__": {"min": min, "max": max, "abs": abs}}, dict(env))  # test oracle only
    except ArithmeticError as exc:
        expected = exc
    restriction = compile_restriction(text, VARS)
    if isinstance(expected, ArithmeticError):
        with pytest.raises(ArithmeticError):
            restriction.evaluate(env)
        assert restriction(env) is False
        return
    got = restriction.evaluate(env)
    assert got == expected and type(got) is type(expected)
    assert restriction(env) is bool(expected)


# ---------------------------------------------------------------- vectorised evaluation

GRID = np.array(np.meshgrid(np.arange(-4, 5), np.arange(-4, 5), np.arange(-2, 3), indexing="ij")).reshape(3, -1)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_exprs(), scale=st.sampled_from([1, 7, 1000]))
def test_mask_agrees_with_scalar_evaluation(text: str, scale: int) -> None:
    restriction = compile_restriction(text, VARS)
    arrays = {"a": GRID[0] * scale, "b": GRID[1], "c": GRID[2]}
    mask = restriction.mask(arrays)
    if mask is None:  # this batch needs the scalar path; allowed, but see the next test
        return
    expected = [restriction({k: int(v[i]) for k, v in arrays.items()}) for i in range(GRID.shape[1])]
    assert np.broadcast_to(mask, GRID.shape[1:]).tolist() == expected


@pytest.mark.parametrize(
    "text",
    [
        "block_size * items_per_thread <= 4096",
        "tile_x % vector_width == 0",
        'strategy != "atomic" or block_size >= 128',
        "strategy in ('atomic', 'tree') and not tile_x > 4",
        "64 <= (block_size // tile_x) * (items_per_thread // vector_width) <= 1024",
        "max(tile_x, vector_width) / min(tile_x, vector_width) < 4",
        "block_size * tile_x * 4 * (2 if vector_width > 1 else 1) <= 49152",
        "2 ** tile_x <= block_size",
        "abs(tile_x - vector_width) != 1",
    ],
)
def test_typical_restrictions_vectorise_exactly(text: str) -> None:
    rng = np.random.default_rng(0)
    arrays = {
        "block_size": rng.choice([32, 64, 128, 256, 512, 1024], 500),
        "items_per_thread": rng.integers(1, 17, 500),
        "tile_x": rng.integers(0, 9, 500),
        "vector_width": rng.choice([0, 1, 2, 4], 500),
        "strategy": rng.choice(["atomic", "tree", "warp"], 500),
    }
    restriction = compile_restriction(text, NAMES, KINDS)
    mask = restriction.mask(arrays)
    assert mask is not None
    rows = [{k: v[i].item() for k, v in arrays.items()} for i in range(500)]
    assert mask.tolist() == [restriction(row) for row in rows]


def test_mask_leaves_inexact_cases_to_python() -> None:
    big = compile_restriction("tile_x * tile_x > 0", NAMES)
    assert big.mask({"tile_x": np.array([2**40])}) is None  # product beyond 2**53
    floaty = compile_restriction("tile_x % 0.7 < 0.5", NAMES)
    assert floaty.mask({"tile_x": np.array([-3.0])}) is None  # float % rounds differently in NumPy


@pytest.mark.parametrize(("text", "hint"), [
    ("tile && rows", "write 'and' for '&&'"),
    ("tile || rows", "write 'or' for '||'"),
    ("tile ? rows : 1", "write 'x if c else y' for 'c ? x : y'"),
    ("!tile", "write 'not' for '!'"),
    ("tile > 1 && !rows", "write 'and' for '&&', 'not' for '!'"),
])
def test_a_restriction_in_cs_operators_is_told_what_to_write(text: str, hint: str) -> None:
    """A kernel author writes the condition as in the source: "invalid syntax (col 6: & rows)" did
    not say that restrictions are Python expressions, nor what to write."""
    with pytest.raises(RestrictionError) as caught:
        compile_restriction(text, ["tile", "rows"])
    assert str(caught.value).endswith(f"{hint} (restrictions are Python expressions)")


@pytest.mark.parametrize("text", ["tile != rows +", 'kind == "a!" and tile >', "'what?' == kind +"])
def test_a_syntax_error_without_cs_operators_gets_no_hint(text: str) -> None:
    """(nor one whose "!" or "?" is inside quoted text)"""
    with pytest.raises(RestrictionError) as caught:
        compile_restriction(text, ["tile", "rows", "kind"])
    assert "write" not in str(caught.value)


@pytest.mark.parametrize("text", ["'abc'", "algo", "'tree' if n > 1 else 'warp'"])
def test_a_restriction_that_is_text_is_refused_not_true_for_every_config(text: str) -> None:
    """``'abc'`` checked clean as a restriction and held for every config: a condition left unwritten."""
    with pytest.raises(RestrictionError, match=r"is text, not a condition; compare it"):
        compile_restriction(text, ["algo", "n"], {"algo": "str", "n": "num"})
    assert compile_restriction("algo == 'tree'", ["algo", "n"], {"algo": "str", "n": "num"})({"algo": "tree", "n": 1})
