"""How the suite runs: its longest-first order names files that exist (a renamed file would
silently drop out), and a test process leaves no folder of its own behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from suite_order import LONGEST_FILES


def test_every_longest_file_is_a_test_file_of_the_suite() -> None:
    here = Path(__file__).parent
    files = {path.name for path in here.rglob("test_*.py")}  # the order goes by file name, in any folder
    missing = [name for name in LONGEST_FILES if name not in files]
    assert missing == [], f"LONGEST_FILES in tests/suite_order.py lists files that are gone: {missing}"


def test_a_test_process_removes_its_settings_sandbox_when_it_ends(tmp_path: Path) -> None:
    """Each test process made a folder for settings and autosaves in /tmp and left it there: one
    per process of every run of the suite."""
    tests = Path(__file__).parent
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    code = ("import os, sys; sys.path.insert(0, sys.argv[1]); import conftest; "
            "assert os.path.isdir(os.environ['KERNEL_WORKBENCH_CONFIG_DIR'].rsplit('/', 1)[0]); print(conftest._SANDBOX)")
    done = subprocess.run([sys.executable, "-c", code, str(tests)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    sandbox = Path(done.stdout.strip())
    assert sandbox.parent == tmp_path and not sandbox.exists()
