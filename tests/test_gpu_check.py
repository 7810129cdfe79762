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
    report = tmp_path / "report.md"
    result = _run("--backend", "sim", "--budget", "6", "--kernel", "vector_add", "--kernel", "reduce_sum",
                  "--out", str(tmp_path), "--report", str(report), "--repeat", "4")
    assert result.returncode == 0, result.stderr
    assert "SIMULATED" in result.stdout
    rows = {line.split("|")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("| ")}
    assert rows["vector_add"].startswith("| vector_add | yes | 6 |") and rows["reduce_sum"].startswith("| reduce_sum | yes |")
    # measured again by a fresh backend (4 configs), and held against the model of the matched GPU
    assert "(4 configs, median ratio" in rows["vector_add"] and "model H200)" in rows["vector_add"]
    # where bench/strategies.py looks for recordings: <template>_<device>.json
    assert (tmp_path / "vector_add_H200.json").exists() and (tmp_path / "reduce_sum_H200.json").exists()
    assert report.read_text() == result.stdout
    assert "Targets:" in result.stdout and "repeatability: lowest Spearman" in result.stdout


def test_gpu_check_keeps_a_session_already_there_unless_forced(tmp_path: Path) -> None:
    first = _run("--backend", "sim", "--budget", "3", "--kernel", "vector_add", "--out", str(tmp_path), "--repeat", "0")
    assert first.returncode == 0, first.stderr
    kept = (tmp_path / "vector_add_H200.json").read_bytes()
    again = _run("--backend", "sim", "--budget", "4", "--kernel", "vector_add", "--out", str(tmp_path), "--repeat", "0")
    assert again.returncode == 1 and "vector_add:" in again.stderr and "Traceback" not in again.stderr
    assert (tmp_path / "vector_add_H200.json").read_bytes() == kept
    forced = _run("--backend", "sim", "--budget", "4", "--kernel", "vector_add", "--out", str(tmp_path), "--repeat", "0",
                  "--force")
    assert forced.returncode == 0, forced.stderr
    assert "| vector_add | yes | 4 |" in forced.stdout


def test_gpu_check_refuses_an_unknown_template_in_one_line(tmp_path: Path) -> None:
    result = _run("--backend", "sim", "--kernel", "no_such_kernel", "--out", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "no_such_kernel" in result.stderr


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
