"""Every Python parse of the package goes through one lock (see workbench/core/domain/pysyntax.py)."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

from workbench.core.domain import pysyntax

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"


def _raw_parse_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "parse"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "ast"]


def test_no_module_but_pysyntax_calls_ast_parse() -> None:
    offenders = {str(path.relative_to(PACKAGE)): lines for path in sorted(PACKAGE.rglob("*.py"))
                 if path.name != "pysyntax.py" and (lines := _raw_parse_calls(path))}
    assert offenders == {}, f"parse through workbench.core.domain.pysyntax.parse instead: {offenders}"


def test_a_parse_waits_while_another_thread_holds_the_lock() -> None:
    done = threading.Event()
    with pysyntax._PARSE_LOCK:
        thread = threading.Thread(target=lambda: (pysyntax.parse("a + 1", mode="eval"), done.set()))
        thread.start()
        assert not done.wait(0.2)
    thread.join(5)
    assert done.is_set()


def test_parse_returns_the_same_tree_as_ast() -> None:
    text = "block_size_x * tile_size_x <= 1024 and use_shmem in (0, 1)"
    assert ast.dump(pysyntax.parse(text, mode="eval")) == ast.dump(ast.parse(text, mode="eval"))
    assert isinstance(pysyntax.parse("x = 1"), ast.Module)
