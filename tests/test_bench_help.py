"""Every benchmark script answers ``--help`` with its usage and a whole first paragraph, and runs nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p for p in (ROOT / "bench").glob("*.py") if '__name__ == "__main__"' in p.read_text())


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_prints_the_usage_and_a_whole_description(script: Path) -> None:
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 0 and done.stdout.startswith("usage:"), done.stdout + done.stderr
    paragraphs = done.stdout.split("\n\n")
    description = " ".join(paragraphs[1].split())
    assert not paragraphs[1].startswith(("options:", "optional arguments:")), done.stdout
    assert description.endswith((".", "?", ")")), description  # not cut mid-sentence
