"""The version-independent dump behind a Python spec's identity (templates, sessions and shipped
compiler tables must stay matched when the interpreter is upgraded)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from workbench.core.domain import templates as templates_module
from workbench.core.domain.pysyntax import stable_dump
from workbench.core.domain.templates import kernels_dir, load_template, load_templates


def test_the_dump_names_each_node_with_the_fields_that_hold_something() -> None:
    """Pinned: a change here is a new identity of every Python spec (sessions and the shipped
    compiler tables would have to be re-stamped), so it must be deliberate."""
    tree = ast.parse("def f(x, *, y=None):\n    return x + 2 ** 70 if y else 'é'\n")
    assert stable_dump(tree) == (
        "Module(body=[FunctionDef(name=s\"f\",args=arguments(args=[arg(arg=s\"x\",),],kwonlyargs=[arg(arg=s\"y\",),],"
        "kw_defaults=[Constant(value=None,kind=None,),],),body=[Return(value=IfExp(test=Name(id=s\"y\",ctx=Load(),),"
        "body=BinOp(left=Name(id=s\"x\",ctx=Load(),),op=Add(),right=BinOp(left=Constant(value=0x2,kind=None,),"
        "op=Pow(),right=Constant(value=0x46,kind=None,),),),orelse=Constant(value=s\"\\u00e9\",kind=None,),),),],),],)")


def test_what_python_versions_parse_differently_dumps_alike() -> None:
    """3.12 parses an f-string with a nested format spec into split and empty text parts where
    3.11 does not, and adds fields (``type_params``) that are empty in code that does not use them;
    text is escaped whatever the Unicode database's idea of printable."""
    as_311 = ast.JoinedStr(values=[ast.FormattedValue(value=ast.Name(id="x", ctx=ast.Load()), conversion=-1,
                                                      format_spec=ast.JoinedStr(values=[
                                                          ast.Constant(value="<"),
                                                          ast.FormattedValue(value=ast.Name(id="w", ctx=ast.Load()), conversion=-1)]))])
    as_312 = ast.JoinedStr(values=[ast.FormattedValue(value=ast.Name(id="x", ctx=ast.Load()), conversion=-1,
                                                      format_spec=ast.JoinedStr(values=[
                                                          ast.Constant(value=""), ast.Constant(value="<"),
                                                          ast.FormattedValue(value=ast.Name(id="w", ctx=ast.Load()), conversion=-1),
                                                          ast.Constant(value="")]))])
    assert stable_dump(as_311) == stable_dump(as_312)
    assert stable_dump(ast.parse('f"{x:<{w}}"').body[0].value) == stable_dump(as_311)  # type: ignore[attr-defined]
    node = ast.parse("def g(): pass").body[0]
    before = stable_dump(node)
    node._fields = (*node._fields, "type_params")  # a field a later version has, empty here
    node.type_params = []  # type: ignore[attr-defined]
    assert stable_dump(node) == before
    assert stable_dump(ast.Constant(value="\U000e01f0")) == 'Constant(value=s"\\udb40\\uddf0",kind=None,)'


def test_a_chain_too_deep_for_ast_dump_is_no_recursion_error() -> None:
    tree = ast.parse("x = " + " + ".join(["1"] * 1_500))
    with pytest.raises(RecursionError):
        ast.dump(tree)
    assert stable_dump(tree).count("BinOp(") == 1_499


def test_a_session_measured_under_the_ast_dump_identity_is_still_the_templates(tmp_path: Path) -> None:
    """A user's Python spec was identified by this interpreter's ``ast.dump``; such a session
    continues (and takes the current hash), and a shipped template's 3.11 hash is listed."""
    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copy(kernels_dir() / "vector_add.py", folder / "vector_add.py")
    shutil.copy(kernels_dir() / "vector_add.cu", folder / "vector_add.cu")
    template = load_template(folder / "vector_add.py")
    assert template is not None
    # (sessions hashed then counted the .cu as written, comments and all)
    dumped = template._hash_with(templates_module._python_spec_identity_dumped((folder / "vector_add.py").read_bytes()),
                                 code=template.source)
    assert dumped != template.source_hash() and dumped in template.earlier_hashes()
    shipped = load_templates(kernels_dir())
    for name, t in shipped.items():
        as_311 = t._hash_with(templates_module._python_spec_identity_dumped(Path(t.path).read_bytes()), code=t.source)
        assert as_311 in t.earlier_hashes() or pytest.fail(f"{name}: the 3.11 identity is not listed")
