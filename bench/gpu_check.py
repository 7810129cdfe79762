#!/usr/bin/env python3
"""The GPU check: verify every template's default config, tune each with a fixed budget, record the
sessions and print one table. Headless (no Qt), one command, under 6 minutes on one GPU.

    python bench/gpu_check.py                       # on a CUDA machine: records resources/sessions/<gpu>/
    python bench/gpu_check.py --backend sim --out /tmp/check   # a dry run on the simulator (labelled)
    python bench/gpu_check.py --dry-run             # CPU side only: compile, inputs, references, verification

Columns: template, best latency, GB/s and GFLOP/s of the best config, percent of the measured copy
bandwidth (memory-bound templates) or of peak FP32 (sgemm), the ratio to the library baseline
(>1 = faster than the library), and failures by status. Simulated numbers are labelled as such.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.backends.base import EvalLimits  # noqa: E402
from workbench.core.domain.objective import rank  # noqa: E402
from workbench.core.domain.templates import kernels_dir, load_templates  # noqa: E402
from workbench.runner.plan import make_backend_spec  # noqa: E402
from workbench.runner.controller import RunRequest, run_to_end  # noqa: E402

COMPUTE_BOUND = {"sgemm", "conv2d"}


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])  # the first paragraph, whole
    parser.add_argument("--backend", default="cuda", choices=("cuda", "sim"))
    parser.add_argument("--budget", type=int, default=24, help="evaluations per template (default config included)")
    parser.add_argument("--strategy", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernel", action="append", default=[], help="only these templates (repeatable)")
    parser.add_argument("--out", default=None, help="folder for sessions (default resources/sessions/<gpu>/)")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: compile each default config, build inputs and references, time the verification")
    parser.add_argument("--arch", default="sm_90", help="architecture the dry run compiles for")
    args = parser.parse_args(argv)

    templates = load_templates(str(kernels_dir()))
    if args.dry_run:
        return dry_run([templates[n] for n in (args.kernel or sorted(templates))], args.arch, args.seed)
    names = args.kernel or sorted(templates)
    rows = []
    started = time.monotonic()
    device_name = "?"
    for name in names:
        spec = make_backend_spec(name, args.backend, seed=args.seed, noise=True)
        request = RunRequest(spec=spec, strategy=args.strategy, seed=args.seed, budget=args.budget,
                             run_timeout_s=args.timeout)
        t0 = time.monotonic()
        session, _ = run_to_end(request, None)
        device_name = session.device.get("name", "?")
        folder = Path(args.out) if args.out else ROOT / "resources" / "sessions" / slug(device_name)
        folder.mkdir(parents=True, exist_ok=True)
        from workbench.core.domain.session import save_session

        save_session(session, folder / f"{name}.json")
        rows.append(summarise(name, session, time.monotonic() - t0))
        print(f"  {name}: {len(session.trials)} trials in {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True)
    simulated = args.backend == "sim"
    print(f"\nGPU check on {device_name}{' (SIMULATED: modelled timings, not measurements)' if simulated else ''}, "
          f"{time.strftime('%Y-%m-%d')}, budget {args.budget} per template, {time.monotonic() - started:.0f} s total\n")
    header = ["template", "default ok", "best ms", "GB/s", "GFLOP/s", "% of ref", "vs baseline", "failures"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0 if all(r[1] == "yes" for r in rows) else 1


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
        compiled = compile_cuda(template.render(config, problem), arch=arch, options=template.compile_options)
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


def summarise(name: str, session, seconds: float) -> list[str]:
    trials = list(session.trials)
    ranking = rank(trials, session.constraints, session.weights)
    default_id = session.default_config.id if session.default_config is not None else None
    default_ok = any(t.config.id == default_id and t.ok for t in trials) if default_id else False
    failures: dict[str, int] = {}
    for t in trials:
        if not t.ok:
            failures[t.status.value] = failures.get(t.status.value, 0) + 1
    fail_text = ", ".join(f"{k} {v}" for k, v in sorted(failures.items())) or "none"
    if ranking.best is None:
        return [name, "yes" if default_ok else "NO", "-", "-", "-", "-", "-", fail_text]
    best = trials[ranking.best]
    m = best.measurement.metrics
    baseline = best.measurement.details.get("baseline") if best.measurement.details else None
    vs = "-"
    if baseline and baseline.get("latency_ms"):
        vs = f"{baseline['latency_ms'] / m['latency_ms']:.2f}x {baseline.get('name', '')}".strip()
    ref = m.get("pct_of_peak")
    return [
        name,
        "yes" if default_ok else "NO",
        f"{m['latency_ms']:.4g}",
        f"{m.get('throughput_gbs', float('nan')):.0f}",
        f"{m.get('gflops', float('nan')):.0f}",
        f"{ref:.0f}%" if ref is not None else "-",
        vs,
        fail_text,
    ]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
