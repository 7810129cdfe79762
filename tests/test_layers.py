"""The house rules, checked by tools: Qt stays in the GUI, imports flow one way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent



def test_import_linter_contracts_hold() -> None:
    """import-linter's forbidden (Qt) and layers contracts from pyproject.toml."""
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("import-linter is not installed")
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_headless_module_imports() -> None:
    """Every module outside the GUI imports (found by walking the packages, not from a list), with
    Qt and CuPy unavailable: a module moved without its importers, or one that reaches for CuPy at
    import time, fails here."""
    script = (
        "import pkgutil, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('PySide6', 'pyqtgraph', 'cupy', 'cupyx'):\n"
        "            raise ImportError('blocked for the test: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import workbench\n"
        "names = [m.name for m in pkgutil.walk_packages(workbench.__path__, 'workbench.')]\n"
        "names = [n for n in names if n != 'workbench.gui' and not n.startswith('workbench.gui.')]\n"
        "for m in names:\n"
        "    __import__(m)\n"
        "print('ok', len(names))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr
    assert int(result.stdout.split()[-1]) > 40, result.stdout  # the walk found the packages
