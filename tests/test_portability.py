"""The portability report: each GPU's best config on every other GPU, and the max-min pick.

The recorded part imports the Kernel Tuner caches of one convolution kernel measured on five GPUs
(``../shared/landscapes``) with ``import-kt`` and checks ``show --portability --json`` against
figures computed here straight from the cache files. Those files are required: without them the
test fails and says where it looked.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from workbench.backends.base import EvalLimits, backend_class
from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.objective import Constraints
from workbench.core.domain.portability import (
    FAILED,
    MEASURED,
    MISSING,
    PREDICTED,
    SIMULATED,
    format_report,
    max_min_pick,
    portability_report,
)
from workbench.core.domain.session import Session
from workbench.core.io.interop import KT_READING
from workbench.core.domain.space import SearchSpace, Slot
from workbench.runner.plan import make_backend_spec, new_session, open_target
from workbench.runner.portability import simulator_predictors

ROOT = Path(__file__).resolve().parents[1]
LANDSCAPES = ROOT.parent / "shared" / "landscapes"
CACHES = {
    "A100": LANDSCAPES / "convolution_A100.json",
    "A4000": LANDSCAPES / "more" / "convolution_A4000.json.gz",
    "A6000": LANDSCAPES / "more" / "convolution_A6000.json.gz",
    "W6600": LANDSCAPES / "more" / "convolution_W6600.json.gz",
    "W7800": LANDSCAPES / "more" / "convolution_W7800.json.gz",
}


# --- the max-min pick -------------------------------------------------------------------------------


def test_max_min_prefers_the_best_worst_case_over_the_best_mean() -> None:
    a = {"x": 1.0, "y": 0.7, "z": 0.9}
    b = {"x": 0.3, "y": 0.7, "z": 0.69}
    # x has the best mean (0.65) but a worst case of 0.3; y's worst case 0.7 beats z's 0.69
    assert max_min_pick([a, b], ["x", "y", "z"]) == ("y", 0.7, 0.7)
    # ties on the worst case go to the higher mean, then to the earlier evaluation
    assert max_min_pick([{"p": 0.5, "q": 0.5}, {"p": 0.5, "q": 0.9}], ["p", "q"])[0] == "q"
    assert max_min_pick([{"p": 0.5, "q": 0.5}, {"p": 0.5, "q": 0.5}], ["q", "p"])[0] == "q"
    # only keys known everywhere compete; a config failing somewhere (0) is never the pick
    assert max_min_pick([{"p": 1.0, "q": 0.2}, {"q": 0.2}], ["p", "q"])[0] == "q"
    assert max_min_pick([{"p": 1.0}, {"p": 0.0}], ["p"]) is None
    assert max_min_pick([{"p": 1.0}, {"q": 1.0}], ["p", "q"]) is None


# --- small made-up sessions -------------------------------------------------------------------------

SPACE = SearchSpace([Slot("block", (32, 64, 128), "launch"), Slot("tile", (1, 2), "memory")])


def recorded(device: str, latencies: dict[tuple[int, int], float | None], kernel: str = "k") -> Session:
    """A recording on ``device``: config (block, tile) -> latency, None for a failed run."""
    session = Session(kernel=kernel, kind="recording", space=SPACE, device={"name": device, "recorded": True},
                      problem={"n": 1000})
    for i, ((block, tile), latency) in enumerate(latencies.items()):
        config = SPACE.config({"block": block, "tile": tile})
        if latency is None:
            measurement = Measurement.failure(Status.RUNTIME_ERROR, "launch failed")
        else:
            measurement = Measurement(Status.OK, {"latency_ms": latency})
        session.add(Trial(i, config, measurement))
    return session


def test_matrix_and_pick_on_made_up_recordings() -> None:
    a = recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.25, (128, 2): 2.0, (64, 2): 1.1})
    b = recorded("GPU B", {(32, 1): 4.0, (64, 1): 2.5, (128, 2): 2.0, (64, 2): None})
    report = portability_report([a, b], ["a.json", "b.json"])
    assert report.devices == ["GPU A", "GPU B"]
    assert [best.config["block"] for best in report.bests] == [32, 128]
    # A's best (32,1) on B: 2.0 / 4.0; B's best (128,2) on A: 1.0 / 2.0
    assert report.matrix[0][1].fraction == pytest.approx(0.5) and report.matrix[0][1].source == MEASURED
    assert report.matrix[1][0].fraction == pytest.approx(0.5)
    assert report.matrix[0][0].fraction == pytest.approx(1.0)
    # (64,1): 1/1.25 = 0.8 on A, 2/2.5 = 0.8 on B -> worst 0.8; (64,2) fails on B
    assert report.portable is not None
    assert report.portable.config == SPACE.config({"block": 64, "tile": 1})
    assert report.portable.worst == pytest.approx(0.8)
    assert report.portable.candidates == 3
    text = "\n".join(format_report(report))
    assert "80.0%" in text and "GPU B" in text
    # recordings are labelled as such, as show labels them (only simulated devices were)
    assert "[1]  GPU A [recorded]" in text and "[2]  GPU B [recorded]" in text
    assert report.to_dict()["provenance"] == {"GPU A": "recorded", "GPU B": "recorded"}
    b.device = {"name": "GPU B"}  # measured here: no label
    again = portability_report([a, b], ["a.json", "b.json"])
    assert again.to_dict()["provenance"] == {"GPU A": "recorded"}
    assert "[2]  GPU B\n" in "\n".join(format_report(again)) + "\n"


def test_trials_on_pending_estimates_are_noted() -> None:
    """A simulated session saved before its compiles landed holds figures a refinement can move:
    the report counts them per device and names the command that refines."""
    import dataclasses

    a = recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.25})
    b = recorded("GPU B", {(32, 1): 2.0, (64, 1): 2.5})
    assert not any("estimated" in n for n in portability_report([a, b], ["a.json", "b.json"]).notes)
    trial = b.trials[0]
    b.trials[0] = dataclasses.replace(trial, measurement=dataclasses.replace(
        trial.measurement, details={"estimated": True, "resources_pending": True}))
    notes = portability_report([a, b], ["a.json", "b.json"]).notes
    assert any("(1 on GPU B)" in n and "--refine-only" in n for n in notes), notes


def test_recordings_read_under_different_latency_rules_are_noted() -> None:
    """A cache imported before latency became the median of the repetitions (no reading recorded,
    no kt_time_ms) against one imported now: a mean against a median, which the report says."""
    old = recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.25})
    new = recorded("GPU B", {(32, 1): 2.0, (64, 1): 2.5})
    new.device["kt_reading"] = KT_READING
    for trial in new.trials:
        trial.measurement.metrics["kt_time_ms"] = trial.metric("latency_ms")
    notes = portability_report([old, new], ["a.json", "b.json"]).notes
    assert any("read under different rules" in n and "a.json: Kernel Tuner's time" in n
               and f"b.json: {KT_READING}" in n for n in notes), notes
    other = recorded("GPU C", {(32, 1): 2.0, (64, 1): 2.0})
    other.device["kt_reading"] = KT_READING
    assert not any("different rules" in n for n in portability_report([new, other], ["b.json", "c.json"]).notes)


def test_failures_count_as_zero_and_unmeasured_configs_are_missing() -> None:
    a = recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.1})
    b = recorded("GPU B", {(32, 1): None, (128, 2): 1.0})
    report = portability_report([a, b])
    assert report.matrix[0][1].source == FAILED and report.matrix[0][1].fraction == 0.0
    assert report.matrix[1][0].source == MISSING and report.matrix[1][0].fraction is None
    assert report.portable is None  # nothing is known to work on both
    assert any(note.startswith("1 cell is missing") for note in report.notes)  # not "1 cells are"
    assert report.to_dict()["portable"] is None


def test_constraints_in_force_decide_the_optimum() -> None:
    a = recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.25})
    b = recorded("GPU B", {(32, 1): 1.0, (64, 1): 1.25})
    for session in (a, b):  # memory as reported: A's fastest config needs too much
        session.trials = [Trial(t.index, t.config, Measurement(Status.OK, {
            "latency_ms": t.metric("latency_ms"),
            "memory_mb": 900.0 if session is a and t.index == 0 else 100.0})) for t in session.trials]
    report = portability_report([a, b], constraints=Constraints(max_memory_mb=500.0))
    assert report.bests[0].config["block"] == 64  # the faster one uses too much memory on A
    assert report.matrix[1][0].source == "infeasible" and report.matrix[1][0].fraction == 0.0


def test_sessions_of_different_kernels_spaces_or_problems_refuse() -> None:
    a = recorded("GPU A", {(32, 1): 1.0})
    with pytest.raises(WorkbenchError, match="differs from"):
        portability_report([a, recorded("GPU B", {(32, 1): 1.0}, kernel="other")])
    other = recorded("GPU B", {(32, 1): 1.0})
    other.problem = {"n": 2000}
    with pytest.raises(WorkbenchError, match="compare sessions of one problem"):
        portability_report([a, other])
    with pytest.raises(WorkbenchError, match="at least two GPUs"):
        portability_report([a, recorded("GPU A", {(64, 1): 1.0})])



def test_sessions_of_other_code_or_other_slots_are_refused_by_every_feature_that_pools_them() -> None:
    """A dispatch pooled a session with a slot the other lacked into one header, and an export
    ranked two different python benchmarks named alike as one device's trials."""
    from workbench.core.domain.portability import check_one_kernel
    from workbench.core.io.dispatch import plan_dispatch
    from workbench.core.io.export import plan_export

    a = recorded("GPU A", {(32, 1): 1.0})
    wider = recorded("GPU B", {(32, 1): 1.0})
    wider.space = SearchSpace([*SPACE.slots, Slot("dummy", (0, 1))])
    with pytest.raises(WorkbenchError, match=r"session 2: its slots \(block, dummy, tile\) differ"):
        check_one_kernel([a, wider], ["session 1", "session 2"], "x")
    def benchmark(path: str, source_hash: str) -> Session:
        session = recorded("GPU B", {(32, 1): 1.0})
        session.kind, session.source_hash = "python", source_hash
        session.backend = {"kind": "python", "options": {"path": path}}
        return session

    template = recorded("GPU A", {(32, 1): 1.0})
    template.kind = "template"
    bench = benchmark("/a/bench.py", "b5c9")
    with pytest.raises(WorkbenchError, match="a python session beside session 1's template one of the same name"):
        check_one_kernel([template, bench], ["session 1", "session 2"], "x")
    other_bench = benchmark("/b/bench.py", "5cb8")
    with pytest.raises(WorkbenchError, match="its benchmark is another file than session 1's, of other code"):
        check_one_kernel([bench, other_bench], ["session 1", "session 2"], "x")
    with pytest.raises(WorkbenchError, match="its benchmark is another file"):
        plan_export([bench, other_bench])
    # what may be one benchmark is taken as one: its replay (a recording), the same file hashed by an
    # earlier version or edited since (tune --resume takes it so), a hash not recorded
    for same in (a, benchmark("/a/bench.py", "a3b3"), benchmark("/b/bench.py", "")):
        check_one_kernel([bench, same], ["session 1", "session 2"], "x")
    with pytest.raises(WorkbenchError, match="its slots .* differ"):
        plan_dispatch([a, wider])


def test_a_config_outside_a_devices_space_is_missing_there_not_predicted() -> None:
    """A device whose session's space lacks a config (a narrowed or hand-edited space, another
    template's) gave it "0.0% (predicted)", and made it that device's worst case."""
    h200 = sim_session("vector_add", "H200", 8, seed=1)
    t4 = sim_session("vector_add", "T4", 8, seed=2)
    predictors, _notes = simulator_predictors([h200, t4])
    best_h200 = portability_report([h200, t4], predictors=predictors).bests[0].config
    narrowed = [s for s in t4.space.slots]
    slot = next(s for s in narrowed if best_h200[s.name] in s.values and len(s.values) > 1)
    t4.space = SearchSpace([Slot(s.name, tuple(v for v in s.values if v != best_h200[s.name]), s.group)
                            if s is slot else s for s in narrowed])
    t4.trials = [t for t in t4.trials if t.config[slot.name] != best_h200[slot.name]]
    report = portability_report([h200, t4], predictors=predictors)
    assert report.matrix[0][1].source == MISSING and report.matrix[0][1].fraction is None


# --- simulated GPUs: predictions fill what was not measured --------------------------------------


def sim_session(kernel: str, gpu: str, n: int, seed: int) -> Session:
    spec = make_backend_spec(kernel, "sim", gpu_model=gpu, seed=seed, extra={"compile": "estimate"})
    target = open_target(spec)
    session = new_session(spec, target, strategy="random", seed=seed)
    backend = backend_class("sim")(spec)
    backend.prepare()
    for i, config in enumerate(target.space.sample(np.random.default_rng(seed), n)):
        session.add(Trial(i, config, backend.evaluate(config, EvalLimits()), started_at=float(i), finished_at=float(i)))
    return session


def test_simulated_gpus_predict_the_configs_they_did_not_measure() -> None:
    h200 = sim_session("vector_add", "H200", 8, seed=1)
    t4 = sim_session("vector_add", "T4", 8, seed=2)
    without = portability_report([h200, t4])
    predictors, notes = simulator_predictors([h200, t4])
    assert set(predictors) == {h200.device["name"], t4.device["name"]} and not notes
    report = portability_report([h200, t4], predictors=predictors)
    t4_ids = {t.config.id for t in t4.trials}
    best_h200 = report.bests[0].config
    cell = report.matrix[0][1]
    if best_h200.id in t4_ids:
        assert cell.source == SIMULATED  # the model's figure of a config the T4 run tried, not a measurement
    else:
        assert without.matrix[0][1].source == MISSING
        assert cell.source == PREDICTED and cell.fraction is not None and cell.fraction > 0
        predict = predictors[t4.device["name"]]
        assert cell.fraction == pytest.approx(predict(report.bests[1].config) / predict(best_h200))
        assert "(predicted)" in cell.text()
    assert report.simulated == sorted([h200.device["name"], t4.device["name"]])
    # with predictions every config measured somewhere is known everywhere
    assert report.portable is not None and report.portable.candidates >= len(t4_ids | {t.config.id for t in h200.trials}) - 2
    # a portable config chosen on a prediction says so, and that an export (measured only) may differ
    says = [note for note in report.notes if "never measured on" in note]
    assert bool(says) == report.portable.predicted
    if report.portable.predicted:
        assert "export chooses" in says[0]
    # a recorded session never gets a predictor
    assert simulator_predictors([recorded("GPU A", {(32, 1): 1.0})]) == ({}, [])



def test_a_session_of_a_folders_template_named_like_a_shipped_one_is_not_predicted_with_the_shipped_code(
        tmp_path: Path) -> None:
    """Predictions for it came from the shipped namesake's model: another kernel's figures."""
    h200 = sim_session("vector_add", "H200", 8, seed=1)
    t4 = sim_session("vector_add", "T4", 8, seed=2)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "vector_add.py").write_text((Path(__file__).resolve().parents[1] / "kernels" / "vector_add.py").read_text())
    (mine / "vector_add.cu").write_text("// my own vector_add\n")
    t4.backend = {**t4.backend, "options": {**t4.backend["options"], "kernel_dirs": [str(mine)]}}
    predictors, notes = simulator_predictors([h200, t4])
    assert set(predictors) == {h200.device["name"]}
    assert notes == [f"{t4.device['name']}: no prediction (its template comes from {mine}, which is "
                     f"not loaded; use --kernel-dir {mine})"]

def test_a_prediction_above_the_runs_best_is_explained_and_simulated_cells_are_not_called_measured() -> None:
    """"100.5%" of an optimum read as an error to a student, and "predicted cells are the
    simulator's figures, not measurements" implied the other cells were measured when every
    session was simulated."""
    a = recorded("GPU A", {(32, 1): 1.0, (64, 1): 2.0})
    b = recorded("GPU B", {(64, 1): 1.0, (128, 2): 3.0})
    for session in (a, b):
        session.device = {"name": session.device["name"], "simulated": True}
    predictors = {"GPU B": lambda config: 0.9 if config["block"] == 32 else 1.0,  # beats B's best of its run
                  "GPU A": lambda config: 1.0}
    report = portability_report([a, b], predictors=predictors)
    cell = report.matrix[0][1]
    assert cell.source == PREDICTED and cell.fraction == pytest.approx(1.0 / 0.9)
    note = next(n for n in report.notes if n.startswith("predicted cells"))
    assert note.startswith("predicted cells are predictions for configs that GPU's run did not try")
    assert "1 shown above 100%: the model expects the config to beat the best its run found there" in note
    # counted as shown: 100.002% is written 100.0%, and is not above
    barely = {"GPU B": lambda config: 0.99998 if config["block"] == 32 else 1.0, "GPU A": lambda config: 1.0}
    note = next(n for n in portability_report([a, b], predictors=barely).notes if n.startswith("predicted cells"))
    assert "above 100%" not in note
    # a prediction above 100% on the portable line alone is explained too
    a = recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.5, (128, 1): 1.1})
    b = recorded("GPU B", {(64, 1): 1.0, (32, 1): 1.2})
    for session in (a, b):
        session.device = {"name": session.device["name"], "simulated": True}
    report = portability_report([a, b], predictors={"GPU B": lambda config: 0.5 if config["block"] == 128 else 1.0,
                                                    "GPU A": lambda config: 1.0})
    assert report.portable is not None and report.portable.cells["GPU B"].source == PREDICTED
    assert report.portable.cells["GPU B"].fraction == pytest.approx(2.0)
    assert not any(c.source == PREDICTED for row in report.matrix for c in row)  # the portable line alone
    assert any("1 shown above 100%" in n for n in report.notes), report.notes
    a.device, b.device = {"name": "GPU A", "recorded": True}, {"name": "GPU B", "simulated": True}
    note = next(n for n in portability_report([a, b], predictors=predictors).notes if n.startswith("predicted"))
    assert "the simulator's figures, not measurements" in note


# --- recorded: five GPUs, one convolution kernel ----------------------------------------------------


@pytest.fixture
def landscapes(landscape: Callable[[str], Path]) -> dict[str, Path]:
    """The recorded caches; missing, a clear failure (or a skip with the opt-out, see conftest)."""
    return {gpu: landscape(str(path.relative_to(LANDSCAPES))) for gpu, path in CACHES.items()}


def read_cache(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:  # type: ignore[operator]
        return json.load(handle)


def times_of(cache: dict[str, Any]) -> dict[tuple[Any, ...], float]:
    """config (values in tune_params_keys order) -> latency, for configs that ran: the median of
    the record's repetitions, as the import reads it (Kernel Tuner's ``time`` without them)."""
    keys = cache["tune_params_keys"]
    out = {}
    for record in cache["cache"].values():
        time = record.get("time")
        if isinstance(time, (int, float)) and math.isfinite(time) and "__error__" not in record:
            repeated = record.get("times")
            out[tuple(record[k] for k in keys)] = float(np.median(repeated)) if repeated else float(time)
    return out


def test_portability_report_on_recorded_convolution_landscapes(cli, landscapes: dict[str, Path], tmp_path: Path) -> None:
    sessions = []
    for name, cache in landscapes.items():
        out = tmp_path / f"{name}.json"
        result = cli("import-kt", str(cache), "--out", str(out))
        assert result.returncode == 0, result.stderr
        sessions.append(str(out))
    result = cli("show", "--portability", *sessions, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)

    # independently, from the cache files
    caches = {name: read_cache(path) for name, path in landscapes.items()}
    keys = caches["A100"]["tune_params_keys"]
    times = {name: times_of(c) for name, c in caches.items()}
    names = list(caches)
    assert report["devices"] == [caches[n]["device_name"] for n in names]
    optimum = {n: min(times[n].values()) for n in names}
    best = {n: min(times[n], key=times[n].__getitem__) for n in names}
    for row, n in zip(report["bests"], names):
        assert tuple(row["config"][k] for k in keys) == best[n]
        assert row["latency_ms"] == pytest.approx(optimum[n])
        for m in names:
            cell = row["on"][caches[m]["device_name"]]
            if best[n] in times[m]:
                assert cell["source"] == "measured"
                assert cell["fraction"] == pytest.approx(optimum[m] / times[m][best[n]], rel=1e-9)
            else:
                assert cell["source"] == "failed" and cell["fraction"] == 0.0

    # brute force max-min over every config that ran on all five GPUs
    common = set.intersection(*(set(times[n]) for n in names))
    worst = {c: min(optimum[n] / times[n][c] for n in names) for c in common}
    pick = max(worst.values())
    portable = report["portable"]
    assert portable["worst"] == pytest.approx(pick, rel=1e-9)
    assert worst[tuple(portable["config"][k] for k in keys)] == pytest.approx(pick, rel=1e-9)
    assert portable["candidates"] == len(common)
    assert portable["predicted"] is False and report["simulated"] == []
    # the point of it: no device's own best is as safe as the portable pick on these GPUs
    assert all(row["worst"] < portable["worst"] for row in report["bests"])

    text = cli("show", "--portability", *sessions)
    assert text.returncode == 0 and f"worst {100 * pick:.1f}%" in text.stdout


def test_show_portability_bad_input_is_one_line(cli, tmp_path: Path) -> None:
    result = cli("show", "--portability", str(tmp_path / "nope.json"), str(tmp_path / "nope2.json"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    result = cli("show")
    assert result.returncode == 2 and "show needs a session file" in result.stderr
    # one file twice: its device's trials were pooled with themselves, without a word
    from workbench.core.domain.session import save_session

    save_session(recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.25}), tmp_path / "a.json")
    save_session(recorded("GPU B", {(32, 1): 2.0, (64, 1): 1.5}), tmp_path / "b.json")
    result = cli("show", "--portability", tmp_path / "a.json", tmp_path / "a.json", tmp_path / "b.json")
    assert result.returncode == 2 and "a.json is given twice; give each session once" in result.stderr


def test_sessions_storing_different_objectives_are_said_to_be_ranked_by_the_first_files(cli, tmp_path: Path) -> None:
    """Which file came first decided the answer without a word: its stored constraints ranked every
    GPU, and listing the files the other way round gave another portable config."""
    from workbench.core.domain.session import save_session

    a = recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.25, (128, 2): 2.0})
    b = recorded("GPU B", {(32, 1): 4.0, (64, 1): 2.5, (128, 2): 2.0})
    save_session(a, tmp_path / "a.json")
    save_session(b, tmp_path / "b.json")
    alike = cli("show", "--portability", tmp_path / "a.json", tmp_path / "b.json")
    assert alike.returncode == 0 and "stores another objective" not in alike.stdout, alike.stderr
    # stored apart but ranking alike: a weight of 0, a named limit beside the same bound written out
    from workbench.core.domain.objective import Bound, Weights

    a.constraints, a.weights = Constraints(max_latency_ms=3.0), Weights({"latency_ms": 1.0, "memory_mb": 0.0})
    b.constraints = Constraints(extra=(Bound("latency_ms", "<=", 3.0),))
    save_session(a, tmp_path / "a.json")
    save_session(b, tmp_path / "b.json")
    alike = cli("show", "--portability", tmp_path / "a.json", tmp_path / "b.json")
    assert alike.returncode == 0 and "stores another objective" not in alike.stdout, alike.stdout
    # a weighted metric's direction is part of the objective, and said with it
    for session, direction in ((a, 1), (b, -1)):
        for trial in session.trials:
            trial.measurement.metrics["merit"] = 1.0 + trial.index
        session.constraints = Constraints()
        session.weights = Weights({"latency_ms": 0.0, "merit": 1.0}, directions={"merit": direction})
        save_session(session, tmp_path / f"{'a' if session is a else 'b'}.json")
    shown = cli("show", "--portability", tmp_path / "a.json", tmp_path / "b.json", "--json")
    (note,) = [n for n in json.loads(shown.stdout)["notes"] if "stores another objective" in n]
    assert "(weights merit=1 (minimized))" in note and "(weights merit=1 (maximized))" in note, note
    a.weights = b.weights = Weights()
    # bounds compared as they rank, exactly: a slider's limit and one typed to six digits differ
    a.constraints, b.constraints = Constraints(max_latency_ms=3.0000000001), Constraints(max_latency_ms=3.0)
    save_session(a, tmp_path / "a.json")
    save_session(b, tmp_path / "b.json")
    shown = cli("show", "--portability", tmp_path / "a.json", tmp_path / "b.json", "--json")
    assert [n for n in json.loads(shown.stdout)["notes"] if "stores another objective" in n], shown.stdout
    a.constraints = Constraints()
    save_session(a, tmp_path / "a.json")
    b.constraints = Constraints(max_latency_ms=3.0)
    save_session(b, tmp_path / "b.json")
    shown = cli("show", "--portability", tmp_path / "a.json", tmp_path / "b.json", "--json")
    assert shown.returncode == 0, shown.stderr
    (note,) = [n for n in json.loads(shown.stdout)["notes"] if "stores another objective" in n]
    assert note == (f"{tmp_path / 'b.json'} stores another objective (weights latency_ms=1; constraints "
                    f"latency_ms <= 3) than {tmp_path / 'a.json'} (weights latency_ms=1); the first file's, "
                    "with the objective flags over it, ranks every GPU here")
    # an export of several sessions picks by the first file's objective too, and said so it was not
    exported = cli("export", tmp_path / "a.json", tmp_path / "b.json", "--format", "json", "--out", "-")
    assert exported.returncode == 0, exported.stderr
    assert (f"note: {tmp_path / 'b.json'} stores another objective (weights latency_ms=1; constraints latency_ms <= 3) "
            f"than {tmp_path / 'a.json'} (weights latency_ms=1); the first file's, with the objective flags over it, "
            "picks every device's config here") in exported.stderr.splitlines(), exported.stderr
    refused = cli("export", tmp_path / "a.json", tmp_path / "b.json", "--format", "json", "--tolerance", "0.1",
                  "--out", "-")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr  # a refusal: one line


def test_a_templates_folder_named_with_kernel_dir_lets_simulated_gpus_predict_it(cli, tmp_path: Path) -> None:
    """A template of one's own folder was never predicted (only shipped ones), and ``show`` took no
    ``--kernel-dir`` to name the folder; the note did not say how to get the predictions."""
    folder = tmp_path / "mine"
    folder.mkdir()
    spec = (ROOT / "kernels" / "vector_add.py").read_text().replace('name="vector_add"', 'name="my_add"')
    (folder / "my_add.py").write_text(spec)
    (folder / "my_add.cu").write_text((ROOT / "kernels" / "vector_add.cu").read_text())
    paths = []
    for gpu, seed in (("H200", 1), ("T4", 2)):
        paths.append(tmp_path / f"{gpu}.json")
        done = cli("tune", "my_add", "--kernel-dir", folder, "--backend", "sim", "--gpu-model", gpu, "--resources",
                   "estimated", "--budget", "6", "--seed", seed, "--workers", "1", "--quiet", "--out", paths[-1])
        assert done.returncode == 0, done.stderr
    without = cli("show", "--portability", *paths)
    assert without.returncode == 0 and "(predicted)" not in without.stdout
    assert "no prediction (unknown template 'my_add'" in without.stdout and f"use --kernel-dir {folder}" in without.stdout
    named = cli("show", "--portability", *paths, "--kernel-dir", folder, "--json")
    assert named.returncode == 0, named.stderr
    report = json.loads(named.stdout)
    assert not any("no prediction" in note for note in report["notes"])
    refused = cli("show", paths[0], "--kernel-dir", folder)  # nothing to predict without --portability
    assert refused.returncode == 2 and "--kernel-dir applies to show --portability" in refused.stderr
    typo = cli("show", "--portability", *paths, "--kernel-dir", tmp_path / "nope")  # one line, as tune says it
    assert typo.returncode == 2 and typo.stderr.count("\n") == 1 and "kernel template folder not found" in typo.stderr


def test_the_multi_device_header_falls_back_to_the_max_min_config() -> None:
    from workbench.core.io.export import export_text, plan_export

    # (32,1): 1.0 on A, 0.4 on B -> mean 0.7, worst 0.4; (64,1): 0.625 on A, 0.625 on B -> worst 0.625
    a = recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.6, (128, 2): 3.0})
    b = recorded("GPU B", {(32, 1): 2.5, (64, 1): 1.6, (128, 2): 1.0})
    plan = plan_export([a, b], sources=["a.json", "b.json"])
    assert plan.portable is not None
    assert plan.portable.trial.config == SPACE.config({"block": 64, "tile": 1})
    assert plan.portable.score == pytest.approx(0.625)
    report = portability_report([a, b])
    assert report.portable is not None and report.portable.config == plan.portable.trial.config
    header = export_text(plan, "header")
    fallback = header.split("#else")[1]
    # recordings (imported from Kernel Tuner) keep their parameter names, as the kernel reads them
    assert "#define block 64" in fallback and "best worst-case" in fallback


def test_only_the_sessions_own_problem_is_compared() -> None:
    a = recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.25})
    b = recorded("GPU B", {(32, 1): 2.0, (64, 1): 1.0})
    # a size sweep keeps other sizes' trials in the session: there (64,1) would win on A
    a.add(Trial(9, SPACE.config({"block": 64, "tile": 1}), Measurement(Status.OK, {"latency_ms": 0.1}),
                problem={"n": 8000}))
    report = portability_report([a, b])
    assert report.bests[0].config["block"] == 32 and report.bests[0].trials == 2


def test_sweeps_compare_at_a_chosen_size() -> None:
    a = recorded("GPU A", {(32, 1): 1.0, (64, 1): 1.25})
    b = recorded("GPU B", {(32, 1): 2.0, (64, 1): 1.0})
    for session, fast in ((a, 64), (b, 64)):  # at n=8000 block 64 wins on both
        for i, block in enumerate((32, 64)):
            latency = 0.5 if block == fast else 1.0
            session.add(Trial(10 + i, SPACE.config({"block": block, "tile": 1}),
                              Measurement(Status.OK, {"latency_ms": latency}), problem={"n": 8000}))
    report = portability_report([a, b], at={"n": 8000})
    assert report.problem == {"n": 8000}
    assert [best.config["block"] for best in report.bests] == [64, 64]
    # the sessions' spaces are of their own problem (n=1000): at n=8000 a restriction reading the
    # size could make another space, so no count is compared (it said "2 of 6" of a full sweep size)
    assert not [note for note in report.notes if "session measured" in note]
    assert [note for note in portability_report([a, b]).notes if "session measured" in note]  # n=1000: 2 of 6
    assert report.portable is not None and report.portable.worst == pytest.approx(1.0)
    with pytest.raises(WorkbenchError, match="no trials at problem"):
        portability_report([a, b], at={"n": 9})
    with pytest.raises(WorkbenchError, match="--at m: not a problem parameter"):
        portability_report([a, b], at={"m": 9})


def test_two_sweeps_started_at_different_sizes_are_pointed_to_a_size_both_measured(cli, tmp_path: Path) -> None:
    """Two sweeps over the same sizes, each started at another of them, were refused as "compare
    sessions of one problem" without a word of --at, which compares them at a shared size."""
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for out, own, gpu in ((first, "n=1024", "H200"), (second, "n=4096", "A100")):
        assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--gpu-model", gpu,
                   "--set", own, "--sizes", "n=1024,4096", "--budget", "2", "--quiet", "--executor", "inline",
                   "--out", str(out)).returncode == 0
    refused = cli("show", "--portability", str(first), str(second))
    assert refused.returncode == 2 and refused.stderr.endswith(
        "compare sessions of one problem, or one size both measured with --at n=1024\n"), refused.stderr
    assert cli("show", "--portability", str(first), str(second), "--at", "n=1024").returncode == 0
    # an export of the two (a header for several GPUs) is pointed there the same way
    refused = cli("export", str(first), str(second), "--format", "header", "--out", tmp_path / "g.h")
    assert refused.returncode == 2 and refused.stderr.endswith(
        "an export serves one problem, or one size both measured with --at n=1024\n"), refused.stderr
    assert cli("export", str(first), str(second), "--format", "header", "--out", tmp_path / "g.h",
               "--at", "n=1024").returncode == 0


def test_an_optimum_of_a_partly_measured_gpu_is_said_to_be_the_best_measured() -> None:
    """A replay of 60 of 4,362 recorded configs had its best called the optimum, and the worst
    case over the GPUs was computed against it, with no word that it is an upper bound."""
    every = {(b, t): 1.0 + 0.1 * i for i, (b, t) in enumerate((b, t) for b in (32, 64, 128) for t in (1, 2))}
    a = recorded("GPU A", every)
    b = recorded("GPU B", {key: value for key, value in list(every.items())[:3]})
    report = portability_report([a, b], ["a.json", "b.json"])
    (note,) = [n for n in report.notes if "best config its session measured" in n]
    assert "GPU B 3 of 6" in note and "GPU A" not in note and "upper bounds" in note
    one = recorded("GPU D", dict(list(every.items())[:1]))
    assert "best worst case of 1 config worked on every GPU" in "\n".join(format_report(portability_report([a, one])))
    whole = recorded("GPU C", every)  # every valid config measured on both: nothing to say
    assert not [n for n in portability_report([a, whole], ["a.json", "c.json"]).notes if "session measured" in n]


def test_configs_known_only_by_prediction_are_counted_apart_and_simulated_cells_say_so() -> None:
    """"best worst case of 28 configs known to work on every GPU" counted 26 that one GPU only
    predicted, and a simulated GPU's own cells were tagged "measured" in --json."""
    h200 = sim_session("vector_add", "H200", 8, seed=1)
    t4 = sim_session("vector_add", "T4", 8, seed=2)
    predictors, _ = simulator_predictors([h200, t4])
    report = portability_report([h200, t4], predictors=predictors)
    pick = report.portable
    assert pick is not None
    both = {t.config.id for t in h200.trials} & {t.config.id for t in t4.trials}
    ran = pick.candidates - pick.candidates_predicted
    assert pick.candidates_predicted > 0 and ran <= len(both)
    assert pick.candidates_text() == (f"{pick.candidates} configs: {ran} worked on every GPU, "
                                      f"{pick.candidates_predicted} predicted on some")
    assert f"best worst case of {pick.candidates_text()}" in "\n".join(format_report(report))
    assert report.matrix[0][0].source == SIMULATED and report.to_dict()["bests"][0]["on"][h200.device["name"]]["source"] == "simulated"
    assert report.to_dict()["portable"]["candidates_predicted"] == pick.candidates_predicted


def test_the_sampled_note_never_waits_for_a_space_that_is_slow_to_count() -> None:
    """A space of three linked 3,000-value slots took 39 s to count (and failed) on every report,
    the window's Portability tab included: a count not known and not quick is left out."""
    from workbench.core.domain.portability import COUNT_AT_MOST, _cheap_count

    big = SearchSpace([Slot(name, tuple(range(100))) for name in ("a", "b", "c")],
                      restrictions=["a + b + c <= 150"])
    assert 100 ** 3 > COUNT_AT_MOST and big.known_count is None
    assert _cheap_count(big) is None and big.known_count is None  # not counted
    big.count()
    assert _cheap_count(big) == big.known_count  # counted before (the slots panel): taken
    assert _cheap_count(SPACE) == 6 and _cheap_count(None) is None


def test_a_session_tuned_on_an_earlier_version_of_a_shipped_template_is_still_predicted() -> None:
    """The check that a folder's template of the name is not the session's code also stopped the
    predictions of every simulated session older than the shipped template's last change."""
    h200 = sim_session("vector_add", "H200", 8, seed=1)
    t4 = sim_session("vector_add", "T4", 8, seed=2)
    t4.source_hash = "0123456789abcdef"  # (an earlier version's)
    predictors, notes = simulator_predictors([h200, t4])
    assert set(predictors) == {h200.device["name"], t4.device["name"]} and not notes
