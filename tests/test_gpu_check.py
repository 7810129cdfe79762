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
    report = tmp_path / "report.md"
    first = _run("--backend", "sim", "--budget", "3", "--kernel", "vector_add", "--out", str(tmp_path), "--repeat", "0",
                 "--report", str(report))
    assert first.returncode == 0, first.stderr
    kept, reported = (tmp_path / "vector_add_H200.json").read_bytes(), report.read_text()
    again = _run("--backend", "sim", "--budget", "4", "--kernel", "vector_add", "--out", str(tmp_path), "--repeat", "0",
                 "--report", str(report))
    assert again.returncode == 1 and "vector_add:" in again.stderr and "Traceback" not in again.stderr
    assert (tmp_path / "vector_add_H200.json").read_bytes() == kept
    assert report.read_text() == reported  # a check that measured nothing leaves the last report alone
    assert "- not run: vector_add" in again.stdout and "every run ended" not in again.stdout
    forced = _run("--backend", "sim", "--budget", "4", "--kernel", "vector_add", "--out", str(tmp_path), "--repeat", "0",
                  "--force")
    assert forced.returncode == 0, forced.stderr
    assert "| vector_add | yes | 4 |" in forced.stdout


def test_gpu_check_runs_templates_slow_to_compile_last(tmp_path: Path) -> None:
    """The time limit is shared among the templates still to run: conv2d's unrolled configs
    compile for seconds each, so it runs after vector_add and inherits what that one leaves."""
    result = _run("--backend", "sim", "--budget", "2", "--kernel", "conv2d", "--kernel", "vector_add",
                  "--out", str(tmp_path), "--repeat", "0")
    assert result.returncode == 0, result.stderr
    ran = [line.split(":")[0].strip() for line in result.stderr.splitlines() if " trials in " in line]
    assert ran == ["vector_add", "conv2d"]
    rows = [line.split("|")[1].strip() for line in result.stdout.splitlines() if line.startswith("| ")][1:]
    assert rows == ["conv2d", "vector_add"]  # the report reads in name order


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
