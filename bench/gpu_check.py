#!/usr/bin/env python3
"""The GPU check: verify every template's default config, tune each with a fixed budget, record the
sessions and print one table. Headless (no Qt), one command, under 6 minutes on one GPU.

    python bench/gpu_check.py                       # on a CUDA machine: records resources/sessions/<gpu>/
    python bench/gpu_check.py --backend sim --out /tmp/check   # a dry run on the simulator (labelled)

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

from workbench.core.objective import rank  # noqa: E402
from workbench.core.templates import kernels_dir, load_templates  # noqa: E402
from workbench.runner.plan import make_backend_spec  # noqa: E402
from workbench.runner.controller import RunRequest, run_to_end  # noqa: E402

COMPUTE_BOUND = {"sgemm", "conv2d"}


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda", choices=("cuda", "sim"))
    parser.add_argument("--budget", type=int, default=24, help="evaluations per template (default config included)")
    parser.add_argument("--strategy", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernel", action="append", default=[], help="only these templates (repeatable)")
    parser.add_argument("--out", default=None, help="folder for sessions (default resources/sessions/<gpu>/)")
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args(argv)

    templates = load_templates(str(kernels_dir()))
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
        from workbench.core.session import save_session

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
