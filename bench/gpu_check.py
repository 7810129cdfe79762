#!/usr/bin/env python3
"""The GPU check: tune every template on the GPU with a small budget, measure the same configs a
second time, hold the simulator's model against the measurements, and print one table. Headless
(no Qt), one command, inside ``--time-limit`` seconds (default 300) on one GPU.

    python bench/gpu_check.py --report docs/gpu-results.md   # on a CUDA machine: sessions in resources/sessions/
    python bench/gpu_check.py --backend sim --out /tmp/check # a dry run on the simulator (labelled)
    python bench/gpu_check.py --dry-run                      # CPU side only: compile, inputs, references, verification

Per template: whether the default config passed verification; the best config's latency, GB/s and
GFLOP/s; its share of the measured device-to-device copy bandwidth (memory-bound templates) or of
peak FP32 (compute-bound ones); its speed against the library baseline (>1 = faster than the
library: cupy.sum / CUB, cupy.matmul / cuBLAS with TF32 off); its speed against the template's own
default config; the repeatability (up to ``--repeat`` measured configs timed again by a fresh
backend: Spearman of the two rankings); the simulator's agreement (Spearman of the model's latency
for the device's GPU description against the measured one, over the same configs); and failures
by status. Sessions are written as ``<template>_<device>.json``, where ``bench/strategies.py``
finds recordings; an existing file is kept unless ``--force`` is given. Simulated numbers are
labelled as such.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # sim_calibration: the model comparison

from workbench.backends.base import BackendSpec, EvalLimits, backend_class  # noqa: E402
from workbench.core.domain.objective import rank  # noqa: E402
from workbench.core.domain.session import Session  # noqa: E402
from workbench.core.domain.templates import kernels_dir, load_templates  # noqa: E402
from workbench.core.errors import WorkbenchError  # noqa: E402
from workbench.runner.plan import make_backend_spec  # noqa: E402
from workbench.runner.controller import RunRequest, run_to_end  # noqa: E402

#: Templates whose best is held against peak FP32 rather than the copy bandwidth.
COMPUTE_BOUND = {"sgemm", "conv2d"}
#: The check's targets: (template, what its best is held against, the least ratio that passes).
#: ``copy``: achieved GB/s over the measured copy bandwidth; ``library``: the library call's latency
#: over the best config's.
TARGETS = (("vector_add", "copy", 0.90), ("gelu", "copy", 0.90), ("transpose", "copy", 0.90),
           ("reduce_sum", "library", 1.00), ("sgemm", "library", 0.50))
#: Least Spearman correlation between two measurements of the same configs.
REPEAT_TARGET = 0.95
#: Seconds kept back from the time limit for the measurements after each run (repeat, model).
AFTER_RUN_RESERVE_S = 6.0
#: No template's run gets less than this, whatever is left of the time limit.
MIN_RUN_S = 8.0


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


@dataclass
class TemplateResult:
    """What one template's check measured (NaN: not measured)."""

    name: str
    trials: int
    seconds: float
    default_ok: bool
    best: dict[str, float] = field(default_factory=dict)
    baseline: dict[str, Any] | None = None
    copy_gbs: float = math.nan
    vs_default: float = math.nan
    repeat_spearman: float = math.nan
    repeat_pairs: int = 0
    repeat_median_ratio: float = math.nan
    model_spearman: float = math.nan
    model_pairs: int = 0
    model_gpu: str = ""
    failures: dict[str, int] = field(default_factory=dict)
    finish: str = ""
    note: str = ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])  # the first paragraph, whole
    parser.add_argument("--backend", default="cuda", choices=("cuda", "sim"))
    parser.add_argument("--budget", type=int, default=24, help="evaluations per template (default config included)")
    parser.add_argument("--strategy", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernel", action="append", default=[], help="only these templates (repeatable)")
    parser.add_argument("--out", default=None, help="folder for sessions (default resources/sessions/)")
    parser.add_argument("--force", action="store_true", help="replace sessions already in --out (kept as .bak)")
    parser.add_argument("--report", default=None, help="also write the table, versions and targets as Markdown here")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds for the whole check (default 300)")
    parser.add_argument("--repeat", type=int, default=10,
                        help="measured configs per template timed again for repeatability (0: none)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds a candidate may run")
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: compile each default config, build inputs and references, time the verification")
    parser.add_argument("--arch", default="sm_90",
                        help="architecture the dry run compiles for, and the order of the templates is timed on")
    args = parser.parse_args(argv)

    templates = load_templates(str(kernels_dir()))
    unknown = sorted(set(args.kernel) - set(templates))
    if unknown:
        print(f"gpu_check: unknown template {', '.join(unknown)} (known: {', '.join(sorted(templates))})",
              file=sys.stderr)
        return 2
    if args.dry_run:
        return dry_run([templates[n] for n in (args.kernel or sorted(templates))], args.arch, args.seed)
    names = quickest_first(args.kernel or sorted(templates), templates, args.arch)
    simulated = args.backend == "sim"
    versions = environment() if not simulated else {"python": platform.python_version()}
    for key, value in versions.items():
        print(f"  {key}: {value}", file=sys.stderr, flush=True)
    folder = Path(args.out) if args.out else ROOT / "resources" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    deadline = started + args.time_limit
    results: list[TemplateResult] = []
    device: Mapping[str, Any] = {}
    for position, name in enumerate(names):
        left = deadline - time.monotonic()
        if left < 1.0:
            results.append(TemplateResult(name, 0, 0.0, False, finish="not run: the time limit was spent"))
            continue
        share = min(left, max(MIN_RUN_S, left / (len(names) - position) - AFTER_RUN_RESERVE_S))
        t0 = time.monotonic()
        try:
            spec = make_backend_spec(name, args.backend, seed=args.seed, noise=True)
            result, session = check_template(name, spec, args, share, folder)
        except WorkbenchError as exc:  # e.g. a session already there without --force: this template only
            print(f"  {name}: {exc}", file=sys.stderr, flush=True)
            results.append(TemplateResult(name, 0, time.monotonic() - t0, False, finish=f"not run: {exc}"))
            continue
        except Exception as exc:  # noqa: BLE001 - one template's breakage must not lose the others' report
            print(f"  {name}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            results.append(TemplateResult(name, 0, time.monotonic() - t0, False,
                                          finish=f"error: {type(exc).__name__}: {exc}"))
            continue
        device = session.device or device
        if args.repeat > 0 and deadline - time.monotonic() > 1.0:
            measure_again(result, spec, session, args.repeat, deadline)
        if deadline - time.monotonic() > 1.0:
            model_agreement(result, name, spec, session)
        result.seconds = time.monotonic() - t0
        results.append(result)
        print(f"  {name}: {result.trials} trials in {result.seconds:.1f}s ({result.finish})", file=sys.stderr,
              flush=True)
        if args.report:  # after every template: a check stopped from outside still leaves its report
            Path(args.report).write_text(format_report(results, device, versions, args,
                                                       time.monotonic() - started, simulated))
    text = format_report(results, device, versions, args, time.monotonic() - started, simulated)
    print(text, end="")
    if args.report and any(r.trials for r in results):  # never replace a report with one that measured nothing
        Path(args.report).write_text(text)
    return 0 if results and all(r.default_ok for r in results) else 1


def quickest_first(names: list[str], templates: Mapping[str, Any], arch: str) -> list[str]:
    """The templates in order of their default config's compile time, quickest first: the time
    limit is shared among the templates still to run, so those whose every candidate takes
    seconds to compile (unrolled loops) come last and inherit what the quick ones leave."""
    from workbench.core.model.compiler import compile_cuda

    seconds = {}
    for name in names:
        template = templates[name]
        problem = template.resolve_problem(None)
        space = template.space(problem)
        config = space.default_config() or next(iter(space))  # a template without defaults: its first config
        began = time.perf_counter()
        compile_cuda(template.render(config, problem), arch=arch, options=template.nvrtc_options, use_cache=False)
        seconds[name] = time.perf_counter() - began
    return sorted(names, key=lambda name: (seconds[name], name))


def environment() -> dict[str, str]:
    """Driver, CUDA runtime, CuPy, NVRTC and binding versions, for the record (never raises)."""
    out = {"python": platform.python_version()}
    try:
        import cupy

        rt = cupy.cuda.runtime
        out["cupy"] = f"{cupy.__version__} ({_distribution_of(cupy)})"
        out["driver"] = _cuda_version(rt.driverGetVersion())
        out["cuda runtime"] = _cuda_version(rt.runtimeGetVersion())
        out["cupy nvrtc"] = ".".join(str(v) for v in cupy.cuda.nvrtc.getVersion())
    except Exception as exc:  # noqa: BLE001 - recorded, the run itself says what stops it
        out["cupy"] = f"not usable ({type(exc).__name__}: {exc})"
    try:
        import cuda.bindings

        from workbench.core.model.compiler import nvrtc_version

        out["compiler"] = f"{nvrtc_version()} through cuda-bindings {cuda.bindings.__version__}"
    except Exception as exc:  # noqa: BLE001
        out["compiler"] = f"not usable ({type(exc).__name__}: {exc})"
    try:
        import pynvml

        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
        out["nvidia driver"] = driver.decode() if isinstance(driver, bytes) else str(driver)
    except Exception:  # noqa: BLE001 - NVML is optional
        pass
    import numpy

    out["numpy"] = numpy.__version__
    return out


def _cuda_version(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"


def _distribution_of(module: Any) -> str:
    from importlib import metadata

    for name in ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy"):
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return "unknown wheel"


def check_template(name: str, spec: BackendSpec, args: argparse.Namespace, seconds: float,
                   folder: Path) -> tuple[TemplateResult, Session]:
    """Tune one template within ``seconds`` and summarise the session the controller saved."""
    request = RunRequest(spec=spec, strategy=args.strategy, seed=args.seed, budget=args.budget,
                         run_timeout_s=args.timeout, time_limit_s=seconds)
    t0 = time.monotonic()
    device_name = spec.options.get("gpu_model") or _device_name(spec)
    session, finished = run_to_end(request, folder / f"{name}_{slug(device_name)}.json", force=args.force)
    result = summarise(name, session, time.monotonic() - t0)
    result.finish = finished.reason if not finished.message else f"{finished.reason}: {finished.message}"
    return result, session


def _device_name(spec: BackendSpec) -> str:
    target = backend_class(spec.kind).target(spec)
    return str(target.device.get("name", spec.kind))


def summarise(name: str, session: Session, seconds: float) -> TemplateResult:
    trials = list(session.trials)
    ranking = rank(trials, session.constraints, session.weights)
    default_id = session.default_config.id if session.default_config is not None else None
    defaults = [t for t in trials if default_id and t.config.id == default_id and t.ok]
    result = TemplateResult(name, len(trials), seconds, bool(defaults))
    for t in trials:
        if not t.ok:
            result.failures[t.status.value] = result.failures.get(t.status.value, 0) + 1
    if ranking.best is None:
        return result
    best = trials[ranking.best]
    result.best = dict(best.measurement.metrics)
    details = best.measurement.details or {}
    result.baseline = details.get("baseline")
    result.copy_gbs = float(details.get("copy_bandwidth_gbs") or math.nan)
    if defaults:
        result.vs_default = defaults[0].metric("latency_ms") / result.best["latency_ms"]
    return result


def measure_again(result: TemplateResult, spec: BackendSpec, session: Session, count: int, deadline: float) -> None:
    """Time up to ``count`` measured configs again with a fresh backend in this process (spread over
    the ranking, the best included) and compare the two rankings: a tuner whose second look
    reorders its candidates is choosing by noise."""
    import numpy as np

    measured = sorted((t for t in session.trials if t.ok), key=lambda t: t.metric("latency_ms"))
    if len(measured) < 3:
        result.note = "too few valid configs to compare rankings"
        return
    picks = sorted(set(np.linspace(0, len(measured) - 1, min(count, len(measured))).round().astype(int).tolist()))
    backend = None
    first, second = [], []
    try:
        backend = backend_class(spec.kind)(spec)
        backend.prepare()
        for index in picks:
            if time.monotonic() > deadline:
                break
            trial = measured[index]
            again = backend.evaluate(trial.config, EvalLimits())
            if again.ok:
                first.append(trial.metric("latency_ms"))
                second.append(again.metric("latency_ms"))
    except Exception as exc:  # noqa: BLE001 - the check reports it and goes on with the next template
        result.note = f"repeat stopped: {type(exc).__name__}: {exc}"
    finally:
        if backend is not None:
            _release(backend)
    from sim_calibration import spearman

    result.repeat_pairs = len(first)
    if len(first) >= 3:
        result.repeat_spearman = spearman(np.asarray(first), np.asarray(second))
        result.repeat_median_ratio = float(np.median(np.asarray(second) / np.asarray(first)))


def _release(backend: Any) -> None:
    """Drop a backend's device buffers now, so the next template's worker has the memory."""
    try:
        backend.close()
    except Exception:  # noqa: BLE001 - the buffers below are dropped all the same
        pass
    cupy = getattr(backend, "cp", None)
    for name in ("buffers", "expected", "launch_args", "_flush", "host_inputs"):
        if hasattr(backend, name):
            setattr(backend, name, None)
    gc.collect()
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()


def model_agreement(result: TemplateResult, name: str, spec: BackendSpec, session: Session) -> None:
    """Spearman of the simulator's latency (the GPU description a pruned run on this device would
    model, resources from the same compiler) against the measured latency, over the valid configs."""
    import numpy as np

    from sim_calibration import model_evaluations, spearman
    from workbench.runner.costmodel import gpu_model_for

    measured = [t for t in session.trials if t.ok]
    if len(measured) < 3:
        return
    problem = dict(session.problem) if session.problem else None
    try:
        gpu = gpu_model_for(spec, session.device.get("name"), session.device.get("compute_capability")).spec.name
        result.model_gpu = gpu
        modelled, _ = model_evaluations(name, gpu, [dict(t.config) for t in measured], "nvrtc", problem)
    except Exception as exc:  # noqa: BLE001
        result.note = (result.note + "; " if result.note else "") + f"model: {type(exc).__name__}: {exc}"
        return
    real = np.asarray([t.metric("latency_ms") for t in measured])
    keep = np.isfinite(modelled)
    result.model_pairs = int(keep.sum())
    if result.model_pairs >= 3:
        result.model_spearman = spearman(real[keep], modelled[keep])


def target_lines(results: list[TemplateResult]) -> list[str]:
    """Each target of ``TARGETS`` and ``REPEAT_TARGET``, met or missed and by how much."""
    by_name = {r.name: r for r in results}
    lines = []
    for name, against, least in TARGETS:
        r = by_name.get(name)
        if r is None or not r.best:
            lines.append(f"{name}: not measured")
            continue
        if against == "copy":
            ratio = r.best.get("throughput_gbs", math.nan) / r.copy_gbs
            what = f"{r.best.get('throughput_gbs', math.nan):.0f} GB/s of {r.copy_gbs:.0f} copy"
        else:
            library = (r.baseline or {}).get("latency_ms")
            ratio = library / r.best["latency_ms"] if library else math.nan
            what = f"library {_cell(library or math.nan, '.4g')} ms, best {r.best['latency_ms']:.4g} ms"
        if not math.isfinite(ratio):
            lines.append(f"{name}: no {'copy bandwidth' if against == 'copy' else 'library time'} measured")
            continue
        verdict = "met" if ratio >= least else "MISSED"
        lines.append(f"{name} {against} ratio {_cell(ratio, '.2f')} (target >= {least:.2f}; {what}): {verdict}")
    repeats = [r for r in results if r.repeat_pairs >= 3]
    if repeats:
        worst = min(repeats, key=lambda r: r.repeat_spearman if math.isfinite(r.repeat_spearman) else -2.0)
        met = all(math.isfinite(r.repeat_spearman) and r.repeat_spearman >= REPEAT_TARGET for r in repeats)
        lines.append(f"repeatability: lowest Spearman {_cell(worst.repeat_spearman, '.3f')} ({worst.name}; target "
                     f">= {REPEAT_TARGET}): {'met' if met else 'MISSED'}")
    crashed = [r.name for r in results if r.finish.startswith("error")]
    skipped = [r.name for r in results if r.finish.startswith("not run")]
    if crashed:
        lines.append(f"runs that ended on an error: {', '.join(crashed)}")
    if skipped:
        lines.append(f"not run: {', '.join(skipped)}")
    if not crashed and not skipped:
        lines.append("every run ended by its budget or time limit")
    return lines


def _cell(value: float, fmt: str) -> str:
    return "-" if value is None or not math.isfinite(value) else format(value, fmt)


def format_report(results: list[TemplateResult], device: Mapping[str, Any], versions: dict[str, str],
                  args: argparse.Namespace, seconds: float, simulated: bool) -> str:
    """The check as Markdown: what ran where, one row per template, and the targets."""
    name = device.get("name", "?")
    lines = [f"GPU check on {name}{' (SIMULATED: modelled timings, not measurements)' if simulated else ''}, "
             f"{time.strftime('%Y-%m-%d')}, budget {args.budget} per template, strategy "
             f"{args.strategy or 'default'}, seed {args.seed}, {seconds:.0f} s total", ""]
    facts = dict(versions)
    if device:
        facts["device"] = (f"{name}, compute capability {device.get('compute_capability', '?')}, "
                           f"{device.get('sm_count', '?')} SMs")
    copy_gbs = next((r.copy_gbs for r in results if math.isfinite(r.copy_gbs)), math.nan)
    if math.isfinite(copy_gbs):
        facts["measured copy bandwidth"] = f"{copy_gbs:.0f} GB/s (device to device, read + write, 1 GiB)"
    lines += [f"- {key}: {value}" for key, value in facts.items()] + [""]
    header = ["template", "default ok", "trials", "best ms", "GB/s", "GFLOP/s", "% of ref", "vs library",
              "vs default", "repeat Spearman", "model Spearman", "failures", "ended"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for r in sorted(results, key=lambda r: r.name):
        m = r.best
        vs_library = "-"
        if r.baseline and r.baseline.get("latency_ms") and m.get("latency_ms"):
            vs_library = f"{r.baseline['latency_ms'] / m['latency_ms']:.2f}x {r.baseline.get('name', '')}".strip()
        elif r.baseline and r.baseline.get("error"):
            vs_library = f"library failed: {r.baseline['error']}"
        repeat = "-" if not r.repeat_pairs else (f"{_cell(r.repeat_spearman, '.3f')} ({r.repeat_pairs} configs, "
                                                  f"median ratio {_cell(r.repeat_median_ratio, '.3f')})")
        model = "-" if not r.model_pairs else (f"{_cell(r.model_spearman, '.2f')} ({r.model_pairs} configs, "
                                                f"model {r.model_gpu})")
        failures = ", ".join(f"{k} {v}" for k, v in sorted(r.failures.items())) or "none"
        lines.append("| " + " | ".join([
            r.name, "yes" if r.default_ok else "NO", str(r.trials), _cell(m.get("latency_ms", math.nan), ".4g"),
            _cell(m.get("throughput_gbs", math.nan), ".0f"), _cell(m.get("gflops", math.nan), ".0f"),
            _cell(m.get("pct_of_peak", math.nan), ".0f") + ("%" if m.get("pct_of_peak") else ""),
            vs_library, _cell(r.vs_default, ".2f") + ("x" if math.isfinite(r.vs_default) else ""), repeat, model,
            failures, r.finish + (f"; {r.note}" if r.note else ""),
        ]) + " |")
    lines += ["", "Targets:", ""] + [f"- {line}" for line in target_lines(results)]
    lines += ["", "% of ref: share of the measured copy bandwidth (memory-bound templates) or of peak FP32 "
              f"({', '.join(sorted(COMPUTE_BOUND))}). vs library / vs default: the best config's speed "
              "against the library call and against the template's default config (>1 = faster)."]
    return "\n".join(lines) + "\n"


def dry_run(templates: list, arch: str, seed: int) -> int:
    """Everything a GPU check does on the CPU, timed, per template: compile the default config,
    build the inputs and the float64 reference of the default problem, and verify a correct output
    (the reference rounded to the output's type) with the same chunked code the backend runs on the
    device. Verification here runs with NumPy on the host, an upper bound of the device's time."""
    import numpy as np

    from workbench.core.model.compiler import compile_cuda
    from workbench.core.model.verify import verify_outputs

    limits = EvalLimits()
    started, cpu_started = time.monotonic(), time.process_time()
    print(f"GPU check, CPU DRY RUN (no GPU; compiled for {arch}; verification with NumPy on the host), "
          f"{time.strftime('%Y-%m-%d')}\n")
    header = ["template", "compile s", "inputs s", "reference s", "verify s", "verify limit s", "elements", "ok"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    ok_all = True
    for template in templates:
        problem = template.resolve_problem(None)
        config = template.space(problem).config(template.default) if template.default else template.space(problem).default_config()
        t0 = time.perf_counter()
        compiled = compile_cuda(template.render(config, problem), arch=arch, options=template.nvrtc_options)
        t1 = time.perf_counter()
        inputs = template.make_inputs(problem, np.random.default_rng(seed))
        t2 = time.perf_counter()
        expected = template.reference(inputs, problem)
        t3 = time.perf_counter()
        dtypes = {a.name: a.dtype for a in template.args}
        outputs = {name: np.asarray(ref).astype(dtypes[name]) for name, ref in expected.items()}
        rtol, atol = template.tolerance
        t4 = time.perf_counter()
        verdict = verify_outputs(np, outputs, expected, rtol, atol)
        t5 = time.perf_counter()
        ok = compiled.ok and not verdict.wrong and t5 - t4 < limits.verify_timeout_s and t1 - t0 < limits.compile_timeout_s
        ok_all &= ok
        cells = [template.name, f"{t1 - t0:.2f}", f"{t2 - t1:.2f}", f"{t3 - t2:.2f}", f"{t5 - t4:.2f}",
                 f"{limits.verify_timeout_s:g}", f"{verdict.checked:,}", "yes" if ok else f"NO {compiled.error or verdict.message}"]
        print("| " + " | ".join(cells) + " |", flush=True)
        del inputs, expected, outputs
    print(f"\n{time.monotonic() - started:.1f} s in all, {time.process_time() - cpu_started:.1f} s of CPU time "
          f"(compile limit {limits.compile_timeout_s:g} s per config)")
    return 0 if ok_all else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    try:
        sys.exit(main())
    except WorkbenchError as exc:  # no device, a bad argument: one line, not a traceback
        print(f"gpu_check: {exc}", file=sys.stderr)
        sys.exit(2)
