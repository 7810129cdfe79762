"""How long the window waits for slot importance (offscreen): the Importance tab's GUI-thread cost.

The importance view computes on a background thread; this prints, per session size, the time the
computation itself takes (what ``refresh`` cost the GUI thread when it computed in place), the time
``refresh`` now blocks the caller, how long until the result is drawn, and the longest stretch the
GUI thread's event loop went without running while the computation was going (the window's
responsiveness; it also counts waiting for a core on a busy machine). Each repeat asks for another
objective, so every refresh computes. The first row of a fresh process includes importing Optuna.
Run: ``python bench/importance_refresh.py [--trials 50,4000] [--repeat 5] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np


def synthetic_trials(n: int, seed: int) -> tuple[list, dict[str, list]]:
    """``n`` trials over a 6-slot space (the size of a recorded convolution's), ~7% failures."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.space import Config

    rng = np.random.default_rng(seed)
    domains = {"block_x": [16, 32, 64, 128, 256], "block_y": [1, 2, 4, 8], "tile_x": [1, 2, 4, 8],
               "tile_y": [1, 2, 4, 8], "shmem": [0, 1], "padding": [0, 1]}
    trials = []
    for i in range(n):
        config = {name: values[int(rng.integers(len(values)))] for name, values in domains.items()}
        if rng.random() < 0.07:
            measurement = Measurement.failure(Status.COMPILE_ERROR, "synthetic failure")
        else:
            latency = (abs(np.log2(config["block_x"]) - 6) + 0.3 * config["tile_y"] - 0.2 * config["shmem"] + 3
                       ) * float(rng.lognormal(0, 0.1))
            measurement = Measurement(Status.OK, {"latency_ms": latency, "memory_mb": float(rng.uniform(8, 96))})
        trials.append(Trial(i, Config(config), measurement))
    return trials, domains


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", default="50,4000", help="session sizes, comma separated")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    from workbench.core.domain.objective import Constraints, Weights
    from workbench.gui.importance_view import ImportanceView, _compute, _Request

    print(f"{'trials':>6}  {'repeat':<6} {'compute (was blocking) ms':>26} {'refresh() blocks ms':>20} "
          f"{'result drawn after ms':>22} {'longest event-loop gap ms':>26}")
    first = True
    for n in (int(part) for part in args.trials.split(",")):
        trials, domains = synthetic_trials(n, args.seed)
        weight = {"w": 1.0}
        view = ImportanceView(lambda: trials, objective=lambda: (Constraints(), Weights({"latency_ms": 1.0,
                                                                                        "memory_mb": weight["w"]})),
                              domains=domains)
        view.resize(600, 600)
        view.show()
        rows: list[tuple[float, float, float, float]] = []
        for k in range(args.repeat + (1 if first else 0)):
            weight["w"] = 0.1 * (k + 1)  # another objective: the score's importance is computed again
            start = time.perf_counter()
            view.refresh()
            blocked = time.perf_counter() - start
            gap, last = 0.0, time.perf_counter()
            while view.computing and time.perf_counter() - start < 120:
                app.processEvents()
                now = time.perf_counter()
                gap, last = max(gap, now - last), now
                time.sleep(0.002)
            drawn = time.perf_counter() - start
            t0 = time.perf_counter()  # the same computation in place: what refresh() blocked for before
            _compute(_Request(trials, list(domains), domains, view.target, view._objective()))
            compute = time.perf_counter() - t0
            rows.append((compute * 1000, blocked * 1000, drawn * 1000, gap * 1000))
        if first:  # a fresh process: the first computation also imports Optuna
            compute, blocked, drawn, gap = rows.pop(0)
            print(f"{n:>6}  {'cold':<6} {'(import)':>26} {blocked:>20.1f} {drawn:>22.0f} {gap:>26.0f}")
            first = False
        medians = [statistics.median(column) for column in zip(*rows)]
        print(f"{n:>6}  {'median':<6} {medians[0]:>26.0f} {medians[1]:>20.1f} {medians[2]:>22.0f} {medians[3]:>26.0f}")
        view.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
