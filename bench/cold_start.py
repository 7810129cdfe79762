"""First-run speed on a fresh machine: simulated results with an empty compiler cache.

Every run gets a new, empty compile cache (``KERNEL_WORKBENCH_CACHE_DIR`` in a new temporary
folder) and runs in its own process, as a new user's first command would. Each scenario runs with
the shipped resource table and without it (``KERNEL_WORKBENCH_RESOURCE_TABLES`` pointing at an
empty folder), ``--repeats`` times; the table shows medians and the load average measured before
each run (the machine may be shared), and the median CPU seconds of the run's processes (what
the run costs whatever else the machine does; for the GUI the whole probe: start-up included).
Scenarios:

- ``tune vector_add --backend sim --gpu-model H200 --strategy random --budget 2000`` (the whole
  space, 534 configs), end to end;
- ``tune conv2d --backend sim --budget 40``, end to end (fully unrolled: seconds per compile; the
  run waits ``--refine-wait`` (5 s) after its last evaluation for compiles, best configs first);
- a GUI run (offscreen window, simulated H200, random search): seconds from Start to the first
  point in the window's model, for ``--gui-kernels``.

    python bench/cold_start.py [--repeats 3] [--skip-without | --only-without] [--scenarios cli_vector_add,cli_conv2d,gui]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLI_SCENARIOS = {
    "cli_vector_add": ["tune", "vector_add", "--backend", "sim", "--gpu-model", "H200", "--strategy", "random",
                       "--budget", "2000"],
    "cli_conv2d": ["tune", "conv2d", "--backend", "sim", "--budget", "40"],
}


def _environment(folder: Path, table: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["KERNEL_WORKBENCH_CACHE_DIR"] = str(folder / "cubin")
    env["QT_QPA_PLATFORM"] = "offscreen"
    if table:
        env.pop("KERNEL_WORKBENCH_RESOURCE_TABLES", None)
    else:
        (folder / "no-tables").mkdir()
        env["KERNEL_WORKBENCH_RESOURCE_TABLES"] = str(folder / "no-tables")
    return env


def _sources(session_path: Path) -> dict[str, object]:
    """How the run's trials got their resource figures (table, nvrtc, cache, refined, estimate),
    and for the refined ones how far the estimate was: median and range of estimated / compiled
    latency, and whether the best trial was refined."""
    counts: dict[str, object] = {}
    ratios: list[float] = []
    trials = json.loads(session_path.read_text())["trials"]
    for trial in trials:
        details = trial.get("details") or {}
        key = "refined" if details.get("refined_from_estimate") else str(details.get("resource_source", "-"))
        if details.get("resources_pending"):
            key = "estimate (unrefined)"
        counts[key] = int(counts.get(key, 0)) + 1  # type: ignore[call-overload]
        latency = (trial.get("metrics") or {}).get("latency_ms")
        if details.get("refined_from_estimate") and latency and details.get("estimated_latency_ms"):
            ratios.append(float(details["estimated_latency_ms"]) / float(latency))
    if ratios:
        ratios.sort()
        counts["estimate/compiled"] = (f"median {statistics.median(ratios):.2f}, "
                                       f"{ratios[0]:.2f}-{ratios[-1]:.2f}")
    timed = [t for t in trials if (t.get("metrics") or {}).get("latency_ms")]
    if timed:
        best = min(timed, key=lambda t: t["metrics"]["latency_ms"])
        counts["best is"] = "estimated" if (best.get("details") or {}).get("resources_pending") else "compiled"
    return counts


def run_cli(name: str, table: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="cold-start-") as tmp:
        folder = Path(tmp)
        out = folder / "session.json"
        load = os.getloadavg()[0]
        cpu_before = _children_cpu_s()
        began = time.perf_counter()
        proc = subprocess.run([sys.executable, str(ROOT / "main.py"), *CLI_SCENARIOS[name], "--out", str(out)],
                              env=_environment(folder, table), capture_output=True, text=True, cwd=ROOT)
        seconds = time.perf_counter() - began
        if proc.returncode != 0:
            raise SystemExit(f"{name} failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
        return {"seconds": seconds, "cpu": _children_cpu_s() - cpu_before, "load": load, "sources": _sources(out)}


def _children_cpu_s() -> float:
    """CPU seconds (user + system) of the finished child processes so far: what a run costs, which
    the machine's other work does not change as much as it changes the wall clock."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


GUI_PROBE = r"""
import json, sys, time
from PySide6.QtCore import QEventLoop, QSettings, QTimer
from PySide6.QtWidgets import QApplication
app = QApplication.instance() or QApplication([])
from workbench.gui.main_window import MainWindow
settings = QSettings(sys.argv[2], QSettings.Format.IniFormat)
window = MainWindow(interactive=False, settings=settings)
opened = window.toolbar.kernel.currentText()
loop = QEventLoop()
first = []
# The window's own refresh timer pulls trials into its model and redraws: a point is on screen
# when the model has announced it.
window.model.trials_added.connect(lambda *_: first or (first.append(time.perf_counter() - began), loop.quit()))
QTimer.singleShot(120_000, loop.quit)
began = time.perf_counter()
window.start_run({"kernel": sys.argv[1], "backend": "sim", "gpu_model": "H200", "strategy": "random",
                  "budget": 20, "seed": 0})
loop.exec()
window.stop_run()
window.wait_for_run(120)
print(json.dumps({"first_s": first[0] if first else None, "opened_on": opened}))
"""

def run_gui(kernel: str, table: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="cold-start-") as tmp:
        folder = Path(tmp)
        env = _environment(folder, table)
        env["KERNEL_WORKBENCH_AUTOSAVE_DIR"] = str(folder / "autosave")  # never the user's folder
        load = os.getloadavg()[0]
        cpu_before = _children_cpu_s()
        proc = subprocess.run([sys.executable, "-c", GUI_PROBE, kernel, str(folder / "settings.ini")], env=env,
                              capture_output=True, text=True, cwd=ROOT)
        cpu = _children_cpu_s() - cpu_before
        if proc.returncode != 0:
            raise SystemExit(f"gui {kernel} failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-3:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        return {"seconds": result["first_s"], "cpu": cpu, "load": load, "sources": {"opened on": result["opened_on"]}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenarios", default="cli_vector_add,cli_conv2d,gui")
    parser.add_argument("--gui-kernels", default="vector_add,conv2d")
    parser.add_argument("--skip-without", action="store_true", help="only the runs with the shipped table")
    parser.add_argument("--only-without", action="store_true", help="only the runs without it")
    args = parser.parse_args()
    jobs: list[tuple[str, str, object]] = []
    for scenario in args.scenarios.split(","):
        if scenario == "gui":
            jobs += [(f"gui first point {k}", k, run_gui) for k in args.gui_kernels.split(",")]
        else:
            jobs.append((scenario, scenario, run_cli))
    print(f"{os.cpu_count()} CPUs; {args.repeats} runs each, empty compile cache every run; seconds are medians")
    print(f"{'scenario':28s} {'table':6s} {'median s':>9s} {'runs s':24s} {'CPU s':>6s} {'load':>10s}  "
          "resources of the trials (last run)")
    for title, key, runner in jobs:
        for table in ((True,) if args.skip_without else (False,) if args.only_without else (True, False)):
            runs = [runner(key, table) for _ in range(args.repeats)]  # type: ignore[operator]
            seconds = [float(r["seconds"]) if r["seconds"] is not None else float("nan") for r in runs]
            loads = [float(r["load"]) for r in runs]
            cpu = statistics.median(float(r["cpu"]) for r in runs)  # type: ignore[arg-type]
            print(f"{title:28s} {'yes' if table else 'no':6s} {statistics.median(seconds):9.2f} "
                  f"{', '.join(f'{s:.1f}' for s in seconds):24s} {cpu:6.1f} {min(loads):4.1f}-{max(loads):4.1f}  "
                  f"{runs[-1]['sources']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
