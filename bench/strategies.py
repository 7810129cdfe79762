"""How few evaluations each strategy needs: the literature metric on replayed landscapes.

For each landscape and each strategy, run the strategy on the replay of the landscape: it asks for
one config at a time and is told the recorded result (that is exactly what the replay backend does,
minus the worker processes, so thousands of runs take minutes). The landscapes:

- real GPU measurements: Kernel Tuner cache files in ``../shared/landscapes/`` and its ``more/``
  folder (plain, gzipped or left unterminated by a crash, read in place) and sessions recorded on
  a real GPU under ``resources/sessions/``;
- simulated landscapes of our own templates, named ``sim_<GPU>_<template>`` (``--sim``,
  ``--sim-gpu``): every valid config of the template's space for its default problem, evaluated
  once by the sim backend's performance model (no noise, estimated resources; predicted launch
  refusals and wrong results are failures). They are model predictions, not GPU measurements; see
  ``bench/landscapes_sim.py``. Built in the parent process and cached on disk (keyed by template
  source, GPU and a hash of the model's source), so reruns load them at once.

Metric (Schoonhoven et al. 2022; Kernel Tuner's strategy studies): best = the lowest latency among
valid configs in the first B distinct evaluations (failures count as evaluations); fraction of
optimum = optimum / best (0 when nothing valid was found). Mean over seeds, B = 25, 50, 100, 200.
Mean ± standard error per landscape; a summary over the measured landscapes (mean, and on how
many each strategy is within one standard error of the best); the default's misses against
Kernel Tuner. Overhead = the strategy's own time (ask + tell) per proposed config over a
1,000-trial run on the largest measured landscape the run selects (without one, the largest
simulated one).

Usage::

    python bench/strategies.py                       # every strategy, 20 seeds, table on stdout
    python bench/strategies.py --strategies agents,tpe --seeds 30 --markdown docs/bench.md
    python bench/strategies.py --kt                  # also Kernel Tuner's strategies (needs kernel_tuner)
    python bench/strategies.py --kt --cache-dir ~/ktw-bench   # keep every run: reruns are incremental
    python bench/strategies.py --kt --cache-dir ~/ktw-bench --cached-only   # tables of what is cached
    python bench/strategies.py --strategies agents --seeds 50 --first-seed 50   # fresh seeds 50-99 (ours only)
    python bench/strategies.py --sim none            # only the real landscapes
    python bench/strategies.py --sim sgemm --sim-gpu A100_SXM --strategies random,local
"""

from __future__ import annotations

import argparse
import copy
import glob
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable

# One BLAS thread per process: the benchmark runs several processes, and oversubscribed threads
# would inflate the overhead figures of strategies that do small linear algebra.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from workbench.core.domain.measurement import LATENCY, Measurement, Status, Trial  # noqa: E402
from workbench.core.domain.space import Config, SearchSpace, Slot, SpaceError  # noqa: E402
from workbench.core.domain.templates import load_templates  # noqa: E402
from workbench.core.errors import WorkbenchError  # noqa: E402
from workbench.search.base import STRATEGIES, create_strategy, strategy_class  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from landscapes_sim import data_digest, landscape_name, simulate, write_kt_cache  # noqa: E402

LANDSCAPE_DIR = os.path.join(ROOT, "..", "shared", "landscapes")
#: Kernel Tuner cache files under LANDSCAPE_DIR (read in place, gzipped ones too).
KT_FILE_PATTERNS = ("*.json", "*.json.gz", "more/*.json", "more/*.json.gz")
SESSION_DIR = os.path.join(ROOT, "resources", "sessions")
BUDGETS = (25, 50, 100, 200)
#: A recorded session is a landscape only with at least this many configs: twice the largest
#: budget, so that a strategy still chooses (a GPU check's short runs are not landscapes).
MIN_SESSION_CONFIGS = 2 * max(BUDGETS)
#: Templates whose simulated landscapes are in the default run: the ones where random search does not
#: find the optimum at once (sim H200, random B=25: sgemm 0.79, conv2d 0.89, transpose 0.97; the other
#: templates are 0.98-1.0, too flat to separate strategies).
SIM_DEFAULT = ("sgemm", "conv2d", "transpose")

#: Kernel Tuner 1.5.0's best strategy per budget on these files (../shared/landscapes/SOURCES.md).
KT_PUBLISHED = {
    "convolution_A100": (0.669, 0.753, 0.859, 0.961),
    "pnpoly_RTX_3090": (0.949, 0.978, 0.989, 1.000),
}
KT_RANDOM = {
    "convolution_A100": (0.617, 0.653, 0.709, 0.769),
    "pnpoly_RTX_3090": (0.875, 0.916, 0.952, 0.961),
}

# Concern of a Kernel Tuner parameter, guessed from its name (cache files carry no groups).
_GROUP_HINTS = (
    ("block_size", "launch"), ("grid", "launch"), ("threads", "launch"), ("items_per", "launch"),
    ("tile", "memory"), ("shmem", "memory"), ("shared", "memory"), ("padding", "memory"),
    ("read_only", "memory"), ("vector", "memory"), ("cmem", "memory"),
    ("unroll", "compute"), ("method", "compute"), ("fast", "compute"),
    ("reduc", "reduction"), ("atomic", "reduction"), ("sync", "reduction"),
)


def guess_group(name: str) -> str:
    for hint, group in _GROUP_HINTS:
        if hint in name.lower():
            return group
    return "compute"


@dataclass
class Landscape:
    """A recorded space: the configs and what each one measured (None = failed)."""

    name: str
    space: SearchSpace
    latency: dict[str, float | None]  # config id -> latency_ms, or None for a failure
    metrics: dict[str, dict[str, float]]
    simulated: bool = False  # predicted by the sim backend's model, not measured on a GPU
    kt_meta: dict[str, Any] | None = None  # device_name, kernel_name, problem_size for a Kernel Tuner cache file
    source: str = ""  # the Kernel Tuner cache file it was read from, if any

    @property
    def optimum(self) -> float:
        return min(v for v in self.latency.values() if v is not None)

    def measure(self, index: int, config: Config) -> Trial:
        value = self.latency[config.id]
        if value is None:
            m = Measurement.failure(Status.RUNTIME_ERROR, "recorded failure")
        else:
            m = Measurement(Status.OK, {LATENCY: value, **self.metrics.get(config.id, {})})
        return Trial(index=index, config=config, measurement=m)


def _record_values(data: dict[str, Any], key: str, record: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """A record's parameter values: its own fields, else parsed from its cache key (some files carry only the key)."""
    keys = data["tune_params_keys"]
    parts = key.split(",")
    out = {}
    for name in names:
        if name in record:
            out[name] = record[name]
            continue
        by_text = {str(v): v for v in data["tune_params"][name]}
        text = parts[keys.index(name)] if len(parts) == len(keys) else None
        if text not in by_text:
            raise ValueError(f"cache[{key!r}]: no value for parameter {name!r} (not in the record, and the key's "
                             f"{text!r} is none of tune_params' values)")
        out[name] = by_text[text]
    return out


def _value_key(value: Any) -> str:
    """Tells values apart by type too (1, 1.0 and True are equal in Python, not to Kernel Tuner)."""
    return json.dumps(value, sort_keys=True)


def load_kt_cache(path: str) -> Landscape:
    """Read a Kernel Tuner cache file in place: plain, gzipped or unfinished (parameters with one value are dropped).

    A config's latency here is its record's ``time``, the figure Kernel Tuner optimised, so the
    optimum and every fraction compare with Kernel Tuner's own runs; an import (``import-kt``, a
    replay of the file) stores the median of the repetitions as ``latency_ms`` and ``time`` as
    ``kt_time_ms``. A record is a failure where the importer reads one: an error name in
    ``__error__``, or no ``time`` above 0 (an error name in ``time`` or, Kernel Tuner up to 1.3, in
    the objective's field with no time). Where the importer refuses a file (a ``time`` of ``null``
    or ``"46.27"``) this reads a failure: the benchmark needs only the configs that ran. Values the
    records hold and ``tune_params`` does not declare join their parameter's values, as on import."""
    from workbench.core.io.interop import read_kt_cache_data

    data = read_kt_cache_data(path)
    keys = data["tune_params_keys"]
    tunable = [k for k in keys if len(data["tune_params"][k]) > 1]
    recorded: list[tuple[dict[str, Any], float | None, dict[str, float]]] = []
    for key, record in data["cache"].items():
        time_ = record.get("time")
        error = record.get("__error__")
        ok = (not (isinstance(error, str) and error) and isinstance(time_, (int, float))
              and not isinstance(time_, bool) and math.isfinite(time_) and time_ > 0)
        gflops = record.get("GFLOP/s")
        extra = {"gflops": float(gflops)} if ok and isinstance(gflops, (int, float)) else {}
        recorded.append((_record_values(data, key, record, tunable), float(time_) if ok else None, extra))
    slots, symbols = [], {}
    for k in tunable:
        values = {_value_key(v): v for v in data["tune_params"][k]}
        undeclared = {_value_key(p[k]): p[k] for p, _, _ in recorded if _value_key(p[k]) not in values}
        domain = [*values.values(), *undeclared.values()]
        if undeclared and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in domain):
            domain.sort()  # neighbours stay adjacent values
        try:
            slots.append(Slot(k, tuple(domain), group=guess_group(k)))
        except SpaceError:
            # values a slot cannot hold ("unsigned int", "cub::BLOCK_LOAD_DIRECT", ints mixed with
            # text, 1 beside 1.0): the search needs only to tell them apart, so each stands for a name
            symbols[k] = {_value_key(v): f"v{i}" for i, v in enumerate(domain)}
            slots.append(Slot(k, tuple(symbols[k].values()), group=guess_group(k)))
    for point, _, _ in recorded:
        for k, named in symbols.items():
            point[k] = named[_value_key(point[k])]
    space = SearchSpace.explicit(slots, [point for point, _, _ in recorded])
    latency: dict[str, float | None] = {}
    metrics: dict[str, dict[str, float]] = {}
    for point, value, extra in recorded:
        config_id = space.config(point).id  # as the space stores it (an int of a float slot is a float)
        latency[config_id] = value
        if extra:
            metrics[config_id] = extra
    if not any(v is not None for v in latency.values()):
        raise ValueError(f"{path}: no successful record (every config failed): no optimum to compare with")
    name = os.path.basename(path).split(".json")[0]
    return Landscape(name, space, latency, metrics, source=path)


def load_session_landscape(path: str) -> Landscape | None:
    """A session recorded on a real GPU, as a landscape over its measured configs (None if simulated)."""
    from workbench.core.domain.session import load_session

    session = load_session(path)
    if session.device.get("simulated", True) or not session.trials:
        return None
    points, latency, metrics = [], {}, {}
    for trial in session.trials:
        if trial.config.id in latency:
            continue
        points.append(trial.config)
        value = trial.metric(LATENCY) if trial.ok else math.nan
        latency[trial.config.id] = value if math.isfinite(value) and value > 0 else None  # no latency: a failure here
        metrics[trial.config.id] = {k: float(v) for k, v in trial.measurement.metrics.items() if k != LATENCY}
    if not any(v is not None for v in latency.values()):
        return None
    if len(points) < MIN_SESSION_CONFIGS:
        print(f"skipping {path}: {len(points)} configs, fewer than {MIN_SESSION_CONFIGS} (every strategy would "
              "see most of it)", file=sys.stderr)
        return None
    space = SearchSpace.explicit(session.space.slots, points)
    return Landscape(os.path.splitext(os.path.basename(path))[0], space, latency, metrics)


def simulated_landscape(template: str, gpu: str = "H200") -> Landscape:
    """Every valid config of a template in ``kernels/``, as the simulator predicts it on ``gpu`` (cached on disk)."""
    rec = simulate(template, gpu)
    meta = {"device_name": rec.device_name, "kernel_name": template, "problem_size": None}
    return Landscape(rec.name, rec.space, rec.latency, rec.metrics, simulated=True, kt_meta=meta)


def wanted(name: str, selected: list[str] | None) -> bool:
    return not selected or any(s in name for s in selected)


def landscapes(selected: list[str] | None = None) -> list[Landscape]:
    files = [p for pattern in KT_FILE_PATTERNS for p in sorted(glob.glob(os.path.join(LANDSCAPE_DIR, pattern)))]
    out = []
    for path in files:
        if not wanted(os.path.basename(path).split(".json")[0], selected):
            continue
        try:
            out.append(load_kt_cache(path))
        except Exception as exc:  # noqa: BLE001 - one unreadable cache must not stop the benchmark
            print(f"skipping {path}: {exc}", file=sys.stderr)
    for path in sorted(glob.glob(os.path.join(SESSION_DIR, "*.json"))):
        try:
            land = load_session_landscape(path)
        except Exception as exc:  # noqa: BLE001 - a broken example session must not stop the benchmark
            print(f"skipping {path}: {exc}", file=sys.stderr)
            continue
        if land is not None:
            out.append(land)
    return [land for land in out if wanted(land.name, selected)]


def run_once(land: Landscape, strategy: str, seed: int, budget: int, options: dict[str, Any],
             progress: Callable[[int, float], None] | None = None) -> tuple[list[float], float]:
    """Latencies (inf for failures) of the first ``budget`` distinct evaluations, and strategy seconds.
    ``progress(evaluations, strategy seconds)`` is called after each distinct evaluation (the
    seconds so far, this evaluation's ask included, its tell not)."""
    strat = create_strategy(strategy, land.space, seed=seed, **options)
    seen: set[str] = set()
    values: list[float] = []
    spent = 0.0
    while len(values) < budget:
        t0 = time.perf_counter()
        configs = strat.ask(1)
        spent += time.perf_counter() - t0
        if not configs:
            break
        trials = []
        for config in configs:
            if config.id in seen:  # the engine would drop it; the metric counts distinct configs
                continue
            seen.add(config.id)
            trial = land.measure(len(values), config)
            v = land.latency[config.id]
            values.append(math.inf if v is None else v)
            trials.append(trial)
            if progress is not None:
                progress(len(values), spent)
        t0 = time.perf_counter()
        strat.tell(trials)
        spent += time.perf_counter() - t0
    return values, spent


def fractions(values: list[float], optimum: float, budgets=BUDGETS) -> list[float]:
    out = []
    for b in budgets:
        best = min(values[:b], default=math.inf)
        out.append(optimum / best if math.isfinite(best) else 0.0)
    return out


def _probe_landscape() -> Landscape:
    """A small made-up landscape with concerns, ordered and categorical slots, a failing corner and
    a hole (the largest blocks with many rows were not recorded), so that mechanisms which act only
    where the recorded space or its restrictions keep values out change the probe's runs too."""
    slots = [Slot("block", (32, 64, 128, 256, 512, 1024), group="launch"), Slot("rows", (1, 2, 4, 8), group="launch"),
             Slot("tile", (1, 2, 3, 4, 6, 8), group="memory"), Slot("shared", (False, True), group="memory"),
             Slot("method", (0, 1, 2, 3), group="compute"), Slot("unroll", (1, 2, 4, 8), group="compute")]
    space = SearchSpace(slots)
    latency: dict[str, float | None] = {}
    for config in space:
        b, r, t = config["block"], config["rows"], config["tile"]
        value = (1.0 + abs(math.log2(b * r / 256.0)) * 0.2 + abs(t - 4) * 0.1) * (1.0, 1.6, 1.1, 1.25)[config["method"]]
        value *= (0.8 if t >= 4 else 1.3) if config["shared"] else 1.0
        latency[config.id] = None if b * r >= 2048 and t >= 6 else value * (1.0 + 0.05 * abs(config["unroll"] - 2))
    recorded = [c for c in space if c["block"] * c["rows"] <= 512]
    return Landscape("probe", SearchSpace.explicit(slots, recorded), {c.id: latency[c.id] for c in recorded}, {})


#: The search package, whose source is part of a cached run's key (:func:`search_version`).
SEARCH_SOURCES = Path(__file__).resolve().parents[1] / "workbench" / "search"


def search_version(strategy: str, options: dict[str, Any]) -> str:
    """What a cached run of one of our strategies is keyed by: its options, its code and its behaviour.

    The behaviour is the sequence of configs it proposes in two seeded runs on a made-up landscape
    (:func:`_probe_landscape`). It alone did not tell two versions apart whose runs differ only on
    the recorded landscapes (a change of how late-run probes are ranked proposed the same configs
    on the probe), and the stale runs were tabulated as the new version's; so the source of the
    search package is part of the key too (a refactor there reruns the strategies: they are fast).
    """
    resolved = strategy_class(strategy).validate_options(options)  # an explicit default is the default
    digest = hashlib.sha256(json.dumps([strategy, resolved], sort_keys=True, default=str).encode())
    for source in sorted(Path(SEARCH_SOURCES).glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    probe = _probe_landscape()
    for seed in (0, 1):
        strat = create_strategy(strategy, probe.space, seed=seed, **options)
        told = 0
        while told < 150:
            configs = strat.ask(1 + seed)
            if not configs:
                break
            digest.update("\n".join(c.id for c in configs).encode())
            strat.tell([probe.measure(told + i, c) for i, c in enumerate(configs)])
            told += len(configs)
    return digest.hexdigest()[:16]


def landscape_key(land: Landscape) -> str:
    """Name, size, failures, optimum and a digest of every config's latency: a landscape that
    changes anywhere gets new cache entries. (A simulated landscape whose model changed away from
    its optimum keeps that optimum, so the optimum alone would reuse runs made on other values.)"""
    failed = sum(v is None for v in land.latency.values())
    return f"{land.name}/{land.space.count()}/{failed}/{land.optimum:.9g}/{data_digest(land.latency)}"


class RunCache:
    """Finished runs (latencies of the first B distinct evaluations) in an append-only JSON-lines file.

    Keyed by (strategy, its code version, landscape, seed, budget), so an interrupted or repeated
    benchmark only runs what is missing. No directory: nothing is cached.
    """

    def __init__(self, directory: str = "") -> None:
        self.path = os.path.join(directory, "runs.jsonl") if directory else ""
        if directory:  # made now: the first finished run is appended there, after minutes of work
            os.makedirs(directory, exist_ok=True)
        self.runs: dict[str, list[float]] = {}
        if self.path and os.path.exists(self.path):
            with open(self.path) as fh:
                for line in fh:
                    try:
                        entry = json.loads(line)
                        self.runs[entry["key"]] = [math.inf if v is None else float(v) for v in entry["values"]]
                    except (ValueError, KeyError, TypeError):
                        continue  # a line cut by a kill: that run is simply redone

    @staticmethod
    def key(strategy: str, version: str, land: str, seed: int, budget: int) -> str:
        return f"{strategy}|{version}|{land}|{seed}|{budget}"

    def add(self, key: str, values: list[float]) -> None:
        self.runs[key] = values
        if self.path:
            line = json.dumps({"key": key, "values": [v if math.isfinite(v) else None for v in values]})
            with open(self.path, "a") as fh:
                fh.write(line + "\n")


def _job(args: tuple) -> list[tuple[str, list[float] | str]]:
    """Run ``strategy`` on one landscape for some seeds: (cache key, latencies or an error line) each."""
    kind, land_name, strategy, seeds, options, keys = args
    land = _LANDS[land_name]
    out: list[tuple[str, list[float] | str]] = []
    for seed, key in zip(seeds, keys):
        if kind == "ours":  # a failure of our own strategies is a defect: it ends the benchmark, never shrinks a row
            values = run_once(land, strategy, seed, max(BUDGETS), options)[0]
        else:
            try:
                values = run_kt(_KT_FILES[land_name], strategy, seed, max(BUDGETS))
            except Exception as exc:  # noqa: BLE001 - Kernel Tuner 1.5.0 has seed-dependent crashes; counted, never hidden
                out.append((key, f"{type(exc).__name__}: {exc}"))
                continue
        out.append((key, values))
    return out


def _overhead_job(args: tuple) -> tuple[str, float]:
    land_name, strategy, options = args
    land = _LANDS[land_name]
    values, spent = run_once(land, strategy, 0, 1000, options)
    return strategy, 1000.0 * spent / max(len(values), 1)


_LANDS: dict[str, Landscape] = {}
_KT_FILES: dict[str, str] = {}


def _init(selected: list[str] | None, extra: tuple[Landscape, ...] | list[Landscape] = (),
          kt_files: dict[str, str] | None = None) -> None:
    """Load the recorded landscapes; ``extra`` (the simulated ones) come built from the parent."""
    for land in [*landscapes(selected), *extra]:
        _LANDS[land.name] = land
    _KT_FILES.update(kt_files or {})


# --- Kernel Tuner in simulation mode (optional extra) -------------------------------------------
#: Kernel Tuner 1.5.0's strategies as run here. ``+fill``: run with a larger ``max_fevals`` until B
#: distinct configs were evaluated (dual_annealing spends part of max_fevals on repeats and
#: simulated_annealing stops at 0.75 of it); ``+fail``: bayes_opt told failures with the value it
#: recognises as invalid (it fits Kernel Tuner's own failure value as a measurement otherwise).
KT_STRATEGIES = (
    "random_sample", "genetic_algorithm", "dual_annealing+fill", "simulated_annealing+fill", "greedy_ils",
    "bayes_opt+fail", "pso", "hybrid_vndx",
)
KT_VARIANTS = ("dual_annealing", "simulated_annealing", "bayes_opt")  # the unpatched ones, on request


def kt_plain_file(land: Landscape, directory: str) -> str:
    """A Kernel Tuner-readable (uncompressed, terminated) copy of a gzipped or unfinished cache file, outside the repo."""
    from workbench.core.io.interop import read_kt_cache_data

    path = os.path.join(directory, land.name + ".json")
    if not os.path.exists(path):
        data = read_kt_cache_data(land.source)
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    return path


def _kt_tune(data: dict[str, Any], path: str, strategy: str, seed: int, max_fevals: int) -> list[dict[str, Any]]:
    import random
    import warnings

    import kernel_tuner

    warnings.filterwarnings("ignore")
    np.random.seed(seed)  # Kernel Tuner's strategies use the global generators
    random.seed(seed)
    keys = data["tune_params_keys"]
    recorded = {tuple(str(part) for part in k.split(",")) for k in data["cache"]}

    def in_recording(p: dict) -> bool:  # the space is the recorded configs (restrictions were applied before)
        return tuple(str(p[k]) for k in keys) in recorded

    _memoise_kt(path)
    results, _ = kernel_tuner.tune_kernel(
        data["kernel_name"], "// simulated", data["problem_size"], [np.zeros(1, np.float32)], dict(data["tune_params"]),
        restrictions=in_recording, cache=path, simulation_mode=True, strategy=strategy,
        strategy_options={"max_fevals": max_fevals}, quiet=True, verbose=False,
    )
    return results


_KT_DATA: dict[str, dict[str, Any]] = {}
_KT_MEMO: dict[tuple[str, str], Any] = {}


def _memoise_kt(path: str) -> None:
    """Build Kernel Tuner's search space and read its cache file once per file and process.

    Each ``tune_kernel`` call otherwise re-reads the cache file and re-checks every config of the
    Cartesian product against the restriction (seconds per run on the larger files, most of the
    benchmark's time). Every run gets a deep copy of a pristine search space (strategies fill caches
    in it that change later runs) and the records are copied by the simulation runner, so the
    results are those of unshared runs (checked seed by seed against them).
    """
    import kernel_tuner.interface as kt_interface
    import kernel_tuner.util as kt_util

    if not hasattr(kt_util, "_bench_read_cache"):
        kt_util._bench_read_cache = kt_util.read_cache
        kt_interface._bench_searchspace = kt_interface.Searchspace

        def read_cache(cachefile: str, open_cache: bool = True) -> dict[str, Any]:
            key = ("cache", os.path.abspath(cachefile))
            if key not in _KT_MEMO:
                _KT_MEMO[key] = kt_util._bench_read_cache(cachefile, open_cache)
            data = _KT_MEMO[key]
            return {**data, "cache": dict(data["cache"])}

        def searchspace(*args: Any, **kwargs: Any) -> Any:
            key = ("space", _KT_CURRENT[0])
            if key not in _KT_MEMO:
                _KT_MEMO[key] = kt_interface._bench_searchspace(*args, **kwargs)
            return copy.deepcopy(_KT_MEMO[key])  # strategies fill its caches: every run gets a pristine one

        kt_util.read_cache = read_cache
        kt_interface.Searchspace = searchspace
    _KT_CURRENT[0] = os.path.abspath(path)


_KT_CURRENT = [""]


def run_kt(path: str, strategy: str, seed: int, budget: int) -> list[float]:
    """Kernel Tuner's own strategy on the same file in simulation mode, cut at ``budget`` distinct configs.

    ``path`` must be a plain, terminated cache file (``kt_plain_file``). Variants: see KT_STRATEGIES.
    """
    if path not in _KT_DATA:
        with open(path) as fh:
            _KT_DATA[path] = json.load(fh)
    data = _KT_DATA[path]
    base, _, variant = strategy.partition("+")
    keys = data["tune_params_keys"]

    def distinct(results: list[dict[str, Any]]) -> list[float]:
        values, seen = [], set()
        for r in results:
            key = tuple(str(r[k]) for k in keys)
            if key in seen:
                continue
            seen.add(key)
            t = r.get("time")
            values.append(float(t) if isinstance(t, (int, float)) and math.isfinite(t) else math.inf)
            if len(values) >= budget:
                break
        return values

    if variant == "fail":
        import functools

        from kernel_tuner.strategies import bayes_opt as kt_bo

        original = kt_bo.CostFunc
        kt_bo.CostFunc = functools.partial(original, invalid_value=1e20)  # the value bayes_opt treats as invalid
        try:
            return distinct(_kt_tune(data, path, base, seed, budget))
        finally:
            kt_bo.CostFunc = original
    if variant == "fill":
        values: list[float] = []
        for factor in (3, 6, 12, 24):
            values = distinct(_kt_tune(data, path, base, seed, budget * factor))
            if len(values) >= budget:
                break
        return values
    return distinct(_kt_tune(data, path, base, seed, budget))


def summarise(fr: list[list[float]]) -> tuple[list[float], list[float]]:
    """Mean and standard error over seeds, per budget."""
    a = np.asarray(fr, dtype=float)
    mean = a.mean(axis=0)
    se = a.std(axis=0, ddof=1) / math.sqrt(len(a)) if len(a) > 1 else np.full(a.shape[1], math.nan)
    return list(mean), list(se)


def within_one_se(mean: float, se: float, best_mean: float, best_se: float) -> bool:
    """Not behind the best by more than one standard error of the difference of the two means."""
    return best_mean - mean <= math.sqrt(se * se + best_se * best_se) + 1e-12


def tables(stats: dict[str, dict[str, tuple[list[float], list[float], int]]], overhead: dict[str, float],
           lands: dict[str, Landscape], default: str) -> list[str]:
    """Per-landscape tables (mean ± SE) and the summary over the real landscapes."""
    lines: list[str] = []
    for name, rows in stats.items():
        land = lands[name]
        failed = sum(v is None for v in land.latency.values())
        kind = "simulated" if land.simulated else "measured"
        lines += ["", f"#### {name} ({land.space.count():,} configs, {failed} failed, {kind})", ""]
        lines += ["| strategy | seeds | " + " | ".join(f"B={b}" for b in BUDGETS) + " | overhead ms/config |",
                  "|" + "---|" * (len(BUDGETS) + 3)]
        best = [max(rows.values(), key=lambda r, i=i: r[0][i])[0][i] for i in range(len(BUDGETS))]
        for strat, (mean, se, n) in sorted(rows.items(), key=lambda kv: -sum(kv[1][0])):
            cells = []
            for i, (m, e) in enumerate(zip(mean, se)):
                cell = f"{m:.3f} ± {e:.3f}"
                cells.append(f"**{cell}**" if m == best[i] else cell)
            oh = f"{overhead[strat]:.2f}" if strat in overhead else ""
            lines.append(f"| {strat} | {n} | " + " | ".join(cells) + f" | {oh} |")
    real = [n for n in stats if not lands[n].simulated]
    strategies_everywhere = [s for s in {s for n in real for s in stats[n]} if all(s in stats[n] for n in real)]
    if real and strategies_everywhere:
        lines += ["", f"#### Summary over the {len(real)} measured landscapes", "",
                  ("Mean fraction of optimum (± SE of that mean); in brackets, on how many landscapes the strategy is "
                   "within one standard error of the best strategy there."), "",
                  "| strategy | " + " | ".join(f"B={b}" for b in BUDGETS) + " |", "|" + "---|" * (len(BUDGETS) + 1)]
        summary = {}
        for strat in strategies_everywhere:
            cells, total = [], []
            for i in range(len(BUDGETS)):
                means = [stats[n][strat][0][i] for n in real]
                ses = [stats[n][strat][1][i] for n in real]
                wins = 0
                for n in real:
                    bm, bs = max(((r[0][i], r[1][i]) for r in stats[n].values()), key=lambda t: t[0])
                    wins += within_one_se(stats[n][strat][0][i], stats[n][strat][1][i], bm, bs)
                mean = float(np.mean(means))
                total.append(mean)
                cells.append(f"{mean:.3f} ± {math.sqrt(sum(e * e for e in ses)) / len(real):.3f} ({wins}/{len(real)})")
            summary[strat] = (total, cells)
        for strat, (total, cells) in sorted(summary.items(), key=lambda kv: -sum(kv[1][0])):
            lines.append(f"| {strat} | " + " | ".join(cells) + " |")
        kt = [s for s in strategies_everywhere if s.startswith("kt:")]
        if default in summary and kt:
            lines += ["", (f"Targets for `{default}` against Kernel Tuner (B = 25, 50, 100; behind by more than one SE "
                           "of the difference is a miss):"), ""]
            misses = []
            for n in real:
                for i, b in enumerate(BUDGETS[:3]):
                    m, e, _ = stats[n][default]
                    for k in kt:
                        if k in stats[n]:
                            km, ke, _ = stats[n][k]
                            if not within_one_se(m[i], e[i], km[i], ke[i]):
                                misses.append(f"- {n}, B={b}: {m[i]:.3f} ± {e[i]:.3f} < {k} {km[i]:.3f} ± {ke[i]:.3f} "
                                              f"(by {km[i] - m[i]:.3f})")
            lines += misses or ["- none"]
            for i, b in enumerate(BUDGETS[:2]):
                best_kt = max(kt, key=lambda k: summary[k][0][i])
                gap = summary[default][0][i] - summary[best_kt][0][i]
                lines.append(f"- all measured landscapes, B={b}: {default} {summary[default][0][i]:.3f} vs best Kernel Tuner "
                             f"{best_kt} {summary[best_kt][0][i]:.3f}: {gap:+.3f} (target +0.030)")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strategies", default=",".join(s for s in STRATEGIES if s != "grid"))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="our strategies run seeds first..first+seeds-1 (fresh seeds for a confirmation; Kernel Tuner's start at 0)")
    ap.add_argument("--landscapes", default="", help="comma-separated name filters")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--options", default="{}", help="JSON options passed to every strategy")
    ap.add_argument("--no-overhead", action="store_true")
    ap.add_argument("--kt", action="store_true", help="also run Kernel Tuner's strategies (simulation mode)")
    ap.add_argument("--kt-seeds", type=int, default=0, help="seeds for --kt (default: --seeds)")
    ap.add_argument("--kt-strategies", default=",".join(KT_STRATEGIES),
                    help="Kernel Tuner strategies for --kt (+fill, +fail: the variants described in KT_STRATEGIES)")
    ap.add_argument("--kt-seeds-of", default="",
                    help="fewer seeds for slow Kernel Tuner strategies, e.g. 'bayes_opt+fail=10' (comma-separated)")
    ap.add_argument("--cached-only", action="store_true",
                    help="run nothing: tabulate what the cache holds (for a table while a long run is going)")
    ap.add_argument("--cache-dir", default="",
                    help="keep every finished run here (outside the repository) and reuse it: reruns are incremental")
    ap.add_argument("--default", default="agents", help="the strategy the targets are checked for")
    ap.add_argument("--sim", default=",".join(SIM_DEFAULT),
                    help="templates to add as simulated landscapes (comma-separated; 'none' for none)")
    ap.add_argument("--sim-gpu", default="H200", help="GPU model of the simulated landscapes")
    ap.add_argument("--markdown", default="", help="also write the table as Markdown to this file")
    args = ap.parse_args(argv)
    if args.markdown and not os.path.isdir(os.path.dirname(os.path.abspath(args.markdown))):
        ap.error(f"--markdown {args.markdown}: its folder does not exist")  # said now, not after the runs
    if args.cache_dir and os.path.exists(args.cache_dir) and not os.path.isdir(args.cache_dir):
        ap.error(f"--cache-dir {args.cache_dir}: exists and is not a folder")
    few = [item for item in args.kt_seeds_of.split(",") if item.partition("=")[2].strip() in ("0", "1")]
    if args.seeds < 2 or (args.kt and args.kt_seeds == 1) or few:
        ap.error("--seeds, --kt-seeds, --kt-seeds-of: at least 2 (a standard error, and so the tables' comparisons, "
                 "need two)")
    if args.kt and _kt_version() == "none":  # (--cached-only too: the cached rows are keyed by its version)
        ap.error("--kt runs Kernel Tuner's strategies, and Kernel Tuner is not installed here: pip install '.[kt]'")
    if args.first_seed < 0 or args.jobs < 1 or args.kt_seeds < 0:
        ap.error("--first-seed and --kt-seeds are 0 or more, --jobs 1 or more")
    selected = [s for s in args.landscapes.split(",") if s] or None
    strategies = [s for s in args.strategies.split(",") if s]
    kt_strategies = [s for s in args.kt_strategies.split(",") if s] if args.kt else []
    unknown = [s for s in strategies if s not in STRATEGIES] + [s for s in kt_strategies if s not in KT_STRATEGIES]
    if unknown:
        ap.error(f"unknown strategies {', '.join(unknown)}; ours: {', '.join(STRATEGIES)}; "
                 f"Kernel Tuner's: {', '.join(KT_STRATEGIES)}")
    try:
        options = json.loads(args.options)
        if not isinstance(options, dict):
            raise ValueError("a JSON object of option names and values")
        for strategy in strategies:
            strategy_class(strategy).validate_options(options)
    except (ValueError, WorkbenchError) as exc:
        ap.error(f"--options {args.options}: {exc}")
    sim_templates = [t for t in args.sim.split(",") if t and t != "none"]
    shipped = load_templates()
    missing = [t for t in sim_templates if t not in shipped]
    if missing:
        ap.error(f"--sim: no template {', '.join(missing)}; the shipped ones: {', '.join(sorted(shipped))}")
    if not os.path.isdir(LANDSCAPE_DIR):
        print(f"warning: {os.path.normpath(LANDSCAPE_DIR)} is missing: only the simulated landscapes run "
              "(the recorded ones are read from ../shared/landscapes beside the checkout)", file=sys.stderr)
    sims = []
    for template in sim_templates:  # built (or loaded from the cache) once, here; workers get them pickled
        if wanted(landscape_name(template, args.sim_gpu), selected):
            t0 = time.perf_counter()
            sims.append(simulated_landscape(template, args.sim_gpu))
            print(f"{sims[-1].name}: {sims[-1].space.count()} configs, "
                  f"{sum(v is None for v in sims[-1].latency.values())} failures ({time.perf_counter() - t0:.1f} s)",
                  file=sys.stderr)
    _init(selected, sims)
    names = list(_LANDS)
    if not names:
        ap.error(f"--landscapes {args.landscapes}: no landscape matches (recorded ones in "
                 f"{os.path.normpath(LANDSCAPE_DIR)}, simulated ones from --sim)")
    budget = max(BUDGETS)
    cache = RunCache(args.cache_dir)
    t0 = time.perf_counter()
    versions = {s: search_version(s, options) for s in strategies}
    kt_version = "kt-" + _kt_version()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    kt_seeds = list(range(args.kt_seeds or args.seeds))
    kt_limit = {k: int(v) for k, _, v in (item.partition("=") for item in args.kt_seeds_of.split(",") if item)}
    wanted_runs: dict[tuple[str, str], list[str]] = {}  # (landscape, row label) -> cache keys
    todo = []
    for n in names:
        lk = landscape_key(_LANDS[n])
        for s in strategies:
            keys = [cache.key(s, versions[s], lk, seed, budget) for seed in seeds]
            wanted_runs[(n, s)] = keys
            missing = [(seed, k) for seed, k in zip(seeds, keys) if k not in cache.runs]
            for i in range(0, len(missing), 10):
                chunk = missing[i:i + 10]
                todo.append((chunk[0][0], ("ours", n, s, [c[0] for c in chunk], options, [c[1] for c in chunk])))
        for s in kt_strategies:
            keys = [cache.key(s, kt_version, lk, seed, budget) for seed in kt_seeds[: kt_limit.get(s, len(kt_seeds))]]
            wanted_runs[(n, "kt:" + s)] = keys
            todo += [(seed, ("kt", n, s, [seed], {}, [k])) for seed, k in zip(kt_seeds, keys) if k not in cache.runs]
    todo.sort(key=lambda t: t[0])  # seed-major: an interrupted run leaves every row with about as many seeds
    errors: dict[str, str] = {}
    kt_files: dict[str, str] = {}
    overhead: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="kt-files-") as tmp:
        if kt_strategies and not args.cached_only:
            kt_dir = os.path.join(args.cache_dir, "kt-files") if args.cache_dir else tmp
            os.makedirs(kt_dir, exist_ok=True)
            for n in names:
                land = _LANDS[n]
                if land.source:
                    kt_files[n] = kt_plain_file(land, kt_dir)
                elif land.simulated:  # Kernel Tuner reads cache files: write the simulated landscapes as ones
                    kt_files[n] = os.path.join(kt_dir, n + ".json")
                    write_kt_cache(land, kt_files[n], **land.kt_meta)
        if not args.cached_only and todo:
            with ProcessPoolExecutor(args.jobs, initializer=_init, initargs=(selected, sims, kt_files)) as pool:
                futures = [pool.submit(_job, job) for _, job in todo if job[0] == "ours" or job[1] in kt_files]
                for done, future in enumerate(as_completed(futures), 1):
                    for key, result in future.result():
                        if isinstance(result, str):
                            errors[key] = result
                        else:
                            cache.add(key, result)
                    if done % 50 == 0:
                        print(f"{done}/{len(futures)} jobs ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        if not args.no_overhead and names and strategies and not args.cached_only:
            # one at a time, so strategies do not slow each other down; on the largest measured landscape
            measured = [n for n in names if not _LANDS[n].simulated] or names
            big = max(measured, key=lambda n: _LANDS[n].space.count())
            overhead = dict(_overhead_job((big, s, options)) for s in strategies)
    stats: dict[str, dict[str, tuple[list[float], list[float], int]]] = {}
    no_row: list[str] = []
    for (n, label), keys in wanted_runs.items():
        fr = [fractions(cache.runs[k], _LANDS[n].optimum) for k in keys if k in cache.runs]
        crashed = sum(k in errors for k in keys)
        if crashed:
            label += f" ({crashed} seeds crashed in Kernel Tuner: {next(errors[k] for k in keys if k in errors)[:60]})"
        if fr:
            mean, se = summarise(fr)
            stats.setdefault(n, {})[label] = (mean, se, len(fr))
        elif crashed:  # no row to show: said below the tables, never dropped silently
            no_row.append(f"- {n}: {label}")
    lines = [("Mean fraction of optimum ± standard error over seeds (optimum / best latency in the first B distinct "
              "evaluations, failures count as evaluations); best per column in bold.")]
    lines += tables(stats, overhead, _LANDS, args.default)
    if no_row:
        lines += ["", "Crashed on every seed (no row above):", "", *no_row]
    if any(_LANDS[n].simulated for n in names):
        lines += ["", f"sim_* landscapes are simulated ({args.sim_gpu} performance model, no noise), not GPU measurements."]
    lines += ["", f"({time.perf_counter() - t0:.0f} s, {args.jobs} processes)"]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(text + "\n")
    return 0


def _kt_version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("kernel_tuner")
        except PackageNotFoundError:
            return "none"
    except ImportError:  # not installed: only cached Kernel Tuner rows can be shown
        return "none"


if __name__ == "__main__":
    raise SystemExit(main())
