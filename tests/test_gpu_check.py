"""The GPU check script: a dry run on the simulator everywhere, the real thing on a GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    return subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env=env)


def test_gpu_check_dry_run_on_the_simulator_labels_and_records(tmp_path: Path) -> None:
    result = _run("--backend", "sim", "--budget", "3", "--kernel", "vector_add", "--kernel", "reduce_sum",
                  "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "SIMULATED" in result.stdout
    assert "| vector_add | yes |" in result.stdout and "| reduce_sum | yes |" in result.stdout
    assert (tmp_path / "vector_add.json").exists() and (tmp_path / "reduce_sum.json").exists()


def test_gpu_check_cpu_dry_run_compiles_builds_references_and_times_the_verification() -> None:
    result = _run("--dry-run", "--kernel", "vector_add", "--kernel", "reduce_sum")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "CPU DRY RUN" in result.stdout and "verify limit s" in result.stdout
    rows = {line.split("|")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("| ")}
    assert rows["vector_add"].endswith("| yes |") and rows["reduce_sum"].endswith("| yes |")
    assert "| 16,777,216 |" in rows["vector_add"]  # every element of the default problem verified


@pytest.mark.gpu
def test_gpu_check_on_a_real_device(tmp_path: Path) -> None:
    result = _run("--backend", "cuda", "--budget", "4", "--kernel", "vector_add", "--out", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SIMULATED" not in result.stdout
