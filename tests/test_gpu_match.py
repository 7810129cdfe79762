"""Device names to GPU descriptions: exact matches, the same-architecture stand-in, and the
calibration bench's command-line contract on a small Kernel Tuner cache of the conv2d kernel."""

from __future__ import annotations

import gzip
import math
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from workbench.backends.base import BackendSpec
from workbench.core.model.gpus import list_gpus, load_gpu, match_gpu
from workbench.runner.costmodel import sim_predictor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize(
    ("device", "model"),
    [
        ("NVIDIA GeForce RTX 2080 Ti", "RTX2080TI"),
        ("NVIDIA RTX A6000", "RTX_A6000"),
        ("NVIDIA RTX A4000", "RTX_A4000"),
        ("A100-PCIE-40GB", "A100_PCIE"),
        ("NVIDIA A100-SXM4-80GB", "A100_SXM"),
        ("NVIDIA TITAN RTX", "TITAN_RTX"),
        ("NVIDIA GeForce RTX 3090", "RTX3090"),
        ("NVIDIA GeForce RTX 3080", "RTX3080"),
        ("NVIDIA GeForce RTX 4080", "RTX4080"),
        ("NVIDIA GeForce RTX 4090", "RTX4090"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("Tesla T4", "T4"),
    ],
)
def test_driver_device_names_find_their_own_description(device: str, model: str) -> None:
    match = match_gpu(device)
    assert match.exact and match.spec.name == model and match.note == ""
    assert load_gpu(device).name == model


def test_new_descriptions_are_consistent_with_their_architecture() -> None:
    for name in ("RTX_A4000", "RTX_A6000", "RTX3090", "RTX3080", "TITAN_RTX", "RTX2080TI", "RTX4080", "L4", "L40S"):
        assert name in list_gpus()
        gpu = load_gpu(name)
        assert gpu.peak_flops / 1e12 == pytest.approx(gpu.fp32_tflops, rel=0.01)
        lanes = {"sm_75": 64, "sm_86": 128, "sm_89": 128}[gpu.arch]
        threads = {"sm_75": 1024, "sm_86": 1536, "sm_89": 1536}[gpu.arch]
        assert gpu.fp32_lanes_per_sm == lanes and gpu.max_threads_per_sm == threads
        assert tuple(gpu.compute_capability) == (int(gpu.arch[3]), int(gpu.arch[4]))


def test_an_unknown_device_is_modelled_by_the_nearest_description_of_its_architecture() -> None:
    match = match_gpu("NVIDIA GeForce RTX 3070")
    assert not match.exact and match.spec.arch == "sm_86" and match.spec.name == "RTX3080"
    assert "RTX 3070" in match.note and "RTX3080" in match.note and "sm_86" in match.note
    assert match_gpu("NVIDIA GeForce RTX 4070 Ti").spec.arch == "sm_89"
    assert match_gpu("Quadro RTX 6000").spec.arch == "sm_75"
    # the driver's compute capability decides over the name
    assert match_gpu("Some Future Board", compute_capability=(8, 6)).spec.arch == "sm_86"
    fallback = match_gpu("Tesla V100-SXM2-16GB")
    assert fallback.spec.name == "H200" and "sm_70" in fallback.note and "default" in fallback.note


def test_the_cost_model_of_a_real_device_models_that_device_and_says_when_it_stands_in() -> None:
    own = sim_predictor(BackendSpec("cuda", {"kernel": "vector_add"}), "NVIDIA GeForce RTX 2080 Ti")
    assert own.gpu.spec.name == "RTX2080TI" and own.gpu.exact
    stand_in = sim_predictor(BackendSpec("cuda", {"kernel": "vector_add"}), "NVIDIA RTX A5000")
    assert stand_in.gpu.spec.arch == "sm_86" and "A5000" in stand_in.gpu.note
    by_capability = sim_predictor(BackendSpec("cuda", {"kernel": "vector_add"}), "Some Future Board", "8.9")
    assert by_capability.gpu.spec.arch == "sm_89" and not by_capability.gpu.exact


# --- bench/sim_calibration.py contract ---------------------------------------------------------


def _bench():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import sim_calibration
    finally:
        sys.path.pop(0)
    return sim_calibration


def _conv_cache(path, shmem_slot: bool) -> None:
    """A small Kernel Tuner cache of the convolution kernel, gzipped and left unterminated as an
    interrupted run leaves it; with ``shmem_slot`` False the kernel always stages in shared memory."""
    keys = ["block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "read_only", "use_padding"]
    keys += ["use_shmem"] if shmem_slot else []
    keys += ["filter_height"]
    records = {}
    for i, (bx, by, tx, ty) in enumerate([(32, 4, 1, 3), (64, 2, 1, 2), (128, 1, 1, 1), (16, 16, 1, 1), (32, 1, 2, 4),
                                          (48, 8, 1, 1), (64, 4, 2, 2), (256, 1, 1, 1), (16, 1, 1, 1), (32, 2, 2, 2),
                                          (96, 2, 1, 3), (128, 2, 2, 1)]):
        values = [bx, by, tx, ty, 1, 0] + ([1] if shmem_slot else []) + [15]
        record = dict(zip(keys, values))
        record["time"] = 0.5 + 0.1 * i if i != 5 else "RuntimeFailedConfig"
        records[",".join(map(str, values))] = record
    body = json.dumps({"device_name": "NVIDIA GeForce RTX 3070", "kernel_name": "convolution_kernel",
                       "problem_size": [4096, 4096], "tune_params_keys": keys,
                       "tune_params": {k: sorted({r[k] for r in records.values()}) for k in keys},
                       "objective": "time", "cache": records}, indent=0)
    unterminated = body.rstrip()[:-4].rstrip() + ","  # an interrupted run: no closing braces
    path.write_bytes(gzip.compress(unterminated.encode()))


def test_calibration_bench_json_contract_with_fix_and_device_name(tmp_path, capsys) -> None:
    cache = tmp_path / "conv.json.gz"
    _conv_cache(cache, shmem_slot=False)
    bench = _bench()
    assert bench.main(["--landscape", str(cache), "--template", "conv2d", "--fix", "use_shmem=1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["configs"] == 11  # one real failure
    for key in ("spearman", "pick_fraction", "top10_overlap", "top1pct_kept_at_25pct"):
        assert isinstance(out[key], float) and -1.0 <= out[key] <= 1.0
    assert 0.0 < out["pick_fraction"] <= 1.0
    assert out["model_pick"]["use_shmem"] == 1
    assert out["gpu_model"] == "RTX3080" and "sm_86" in out["gpu_note"]  # the cache's device name, matched
    assert bench.main(["--landscape", str(cache), "--template", "conv2d", "--fix", "use_shmem=1",
                       "--gpu-model", "A100_PCIE", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu_model"] == "A100_PCIE"


def test_calibration_bench_refuses_bad_input_in_one_line(tmp_path, capsys) -> None:
    cache = tmp_path / "conv.json.gz"
    _conv_cache(cache, shmem_slot=False)
    bench = _bench()
    assert bench.main(["--landscape", str(cache), "--template", "conv2d", "--json"]) == 2
    assert "use_shmem" in capsys.readouterr().err  # the slot the recording lacks, and how to set it
    _conv_cache(cache, shmem_slot=True)
    assert bench.main(["--landscape", str(cache), "--template", "conv2d", "--fix", "use_shmem=1"]) == 2
    assert "--fix only sets slots it lacks" in capsys.readouterr().err
    assert bench.main(["--landscape", str(cache), "--gpu-model", "NoSuchGPU"]) == 2
    assert bench.main(["--landscape", str(tmp_path / "missing.json")]) == 2


def test_calibration_bench_holds_the_model_against_a_session_measured_on_a_gpu(tmp_path, capsys) -> None:
    """The GPU check's sessions (resources/sessions/) are landscapes too: the template is the
    session's kernel, the GPU its device; a simulated session is refused (nothing measured)."""
    bench = _bench()
    recorded = os.path.join(ROOT, "resources", "sessions", "sgemm_NVIDIA_H200.json")
    assert bench.main(["--landscape", recorded, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["configs"] == 24 and out["gpu_model"] == "H200" and -1.0 <= out["spearman"] <= 1.0
    simulated = tmp_path / "sim.json"
    assert subprocess.run([sys.executable, os.path.join(ROOT, "main.py"), "tune", "vector_add", "--backend", "sim",
                           "--budget", "3", "--out", str(simulated), "--quiet"], capture_output=True).returncode == 0
    assert bench.main(["--landscape", str(simulated)]) == 2
    assert "simulated session" in capsys.readouterr().err


def test_a_pruned_run_records_which_gpu_its_cost_model_stands_for(tmp_path) -> None:
    from workbench.runner.controller import RunRequest, prepare_run

    run = prepare_run(RunRequest(kernel="vector_add", backend="sim", gpu_model="RTX_A4000", budget=2, prune_keep=0.5,
                                 backend_options={"compile": "estimate"}), None, tmp_path / "s.json")
    try:
        assert run.session.extra["cost_model"] == {"gpu_model": "RTX_A4000", "exact": True, "note": ""}
    finally:
        if run.lock is not None:
            run.lock.release()


def test_calibration_bench_pairs_configs_that_differ_in_one_slot(tmp_path, capsys) -> None:
    bench = _bench()
    configs = [{"a": a, "b": b, "c": c} for a in (1, 2, 4) for b in (0, 1) for c in (0, 1)]
    # real: a 1 -> 2 halves the time where b = 0 only; the model halves it everywhere
    real = np.array([(0.5 if cfg["a"] >= 2 and cfg["b"] == 0 else 1.0) * (1 + cfg["c"]) for cfg in configs])
    model = np.array([(0.5 if cfg["a"] >= 2 else 1.0) * (1 + cfg["c"]) for cfg in configs])
    real[-1] = math.nan  # a failed run leaves its pair out
    comparison = bench.Comparison("rec", "dev", "gpu", "", "tpl", configs, real, model, 0.0)
    rows = bench.paired_ratios(comparison, "a", by="b")
    first = {r["group"]: r for r in rows if (r["from"], r["to"]) == (1, 2)}
    assert first[0]["real_ratio"] == pytest.approx(0.5) and first[1]["real_ratio"] == pytest.approx(1.0)
    assert first[0]["model_ratio"] == first[1]["model_ratio"] == pytest.approx(0.5)
    assert first[1]["pairs"] == 2
    last = {r["group"]: r for r in rows if (r["from"], r["to"]) == (2, 4)}
    assert last[1]["pairs"] == 1  # (4, 1, 1) failed
    only = bench.paired_ratios(comparison, "a", where={"c": 0})
    assert [r["pairs"] for r in only] == [2, 2]
    assert "a 1 -> 2: real" in bench.format_pairs(only)
    with pytest.raises(bench.WorkbenchError, match="no slot 'z'"):
        bench.paired_ratios(comparison, "z")
    cache = tmp_path / "conv.json.gz"
    _conv_cache(cache, shmem_slot=True)
    assert bench.main(["--landscape", str(cache), "--by", "tile_size_y"]) == 2
    assert "--pairs" in capsys.readouterr().err
    assert bench.main(["--landscape", str(cache), "--pairs", "nosuch"]) == 2
    assert bench.main(["--landscape", str(cache), "--pairs", "block_size_x", "--json"]) == 0
    (pair,) = json.loads(capsys.readouterr().out.splitlines()[-1])["pairs"]  # 128x1 and 256x1, 1x1 tiles
    assert (pair["from"], pair["to"], pair["pairs"]) == (128, 256, 1) and pair["model_ratio"] > 0


def test_calibration_bench_pairs_show_the_size_of_steps_that_go_both_ways(tmp_path, capsys) -> None:
    """A slot whose step doubles some configs and halves as many others has a median ratio of 1; its
    spread (median |log ratio|) says the step is large, which the ratio alone hides."""
    bench = _bench()
    configs = [{"a": a, "b": b} for a in (0, 1) for b in range(4)]
    real = np.array([1.0] * 4 + [2.0, 0.5, 2.0, 0.5])  # a 0 -> 1: x2 or x0.5
    model = np.ones(8)  # the model sees no step at all
    comparison = bench.Comparison("rec", "dev", "gpu", "", "tpl", configs, real, model, 0.0)
    (row,) = bench.paired_ratios(comparison, "a")
    assert row["real_ratio"] == pytest.approx(1.25)  # the median of 0.5, 0.5, 2, 2 under numpy's midpoint rule
    assert row["real_spread"] == pytest.approx(math.log(2.0)) and row["model_spread"] == pytest.approx(0.0)
    assert "size |log| real 0.693 / model 0.000" in bench.format_pairs([row])


def test_calibration_bench_groups_residuals_by_the_pipe_the_model_says_binds(tmp_path, capsys) -> None:
    """Configs the model calls compute-bound run 2x slower for real than it says, the others as it
    says: the compute group's mean log residual is log 2 above the rest (centred on the median)."""
    bench = _bench()
    configs = [{"a": a} for a in range(6)]
    real = np.array([2.0, 2.0, 1.0, 1.0, 1.0, math.nan])
    model = np.ones(6)
    bounds = ["compute", "compute", "shared memory", "shared memory", "memory", "memory"]
    comparison = bench.Comparison("rec", "dev", "gpu", "", "tpl", configs, real, model, 0.0, bounds)
    rows = {r["bound"]: r for r in bench.residuals_by_bound(comparison)}
    assert rows["compute"]["mean_residual"] == pytest.approx(math.log(2.0)) and rows["compute"]["configs"] == 2
    assert rows["shared memory"]["mean_residual"] == pytest.approx(0.0) and rows["memory"]["configs"] == 1  # a failed run
    assert [r["configs"] for r in bench.residuals_by_bound(comparison, {"a": 0})] == [1]
    assert "compute +0.69 (2)" in bench.format_bounds(bench.residuals_by_bound(comparison))
    with pytest.raises(bench.WorkbenchError, match="no such slot"):
        bench.residuals_by_bound(comparison, {"z": 1})
    cache = tmp_path / "conv.json.gz"
    _conv_cache(cache, shmem_slot=True)
    assert bench.main(["--landscape", str(cache), "--where", "use_shmem=1"]) == 2  # --where needs --pairs or --bounds
    assert "--bounds" in capsys.readouterr().err
    assert bench.main(["--landscape", str(cache), "--bounds", "--where", "use_shmem=1", "--json"]) == 0
    groups = json.loads(capsys.readouterr().out.splitlines()[-1])["bounds"]
    assert groups and all(g["configs"] > 0 for g in groups)
