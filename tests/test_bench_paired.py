"""The paired comparison of a strategy's variants (``bench/paired.py``): its statistics, its runs, its refusals."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import objective  # noqa: E402
import paired  # noqa: E402
import strategies  # noqa: E402


def test_the_difference_is_taken_seed_by_seed_and_its_standard_error_is_of_the_differences() -> None:
    # The base is far apart from seed to seed, the variant a steady +0.1 / +0.3 above it: a paired
    # comparison sees the small spread of the differences, not the large spread of the means.
    base = {("a", 0): [0.2, 0.5], ("a", 1): [0.8, 0.5], ("b", 0): [1.0, 1.0], ("b", 1): [1.0, 1.0]}
    variant = {("a", 0): [0.3, 0.5], ("a", 1): [1.1, 0.4], ("b", 0): [1.0, 0.8], ("b", 1): [1.0, 1.0]}
    rows = paired.paired(base, variant, ["a", "b"], [0, 1], 2)
    a25, a50 = rows["a"]
    assert a25.mean == pytest.approx(0.7) and a25.diff == pytest.approx(0.2)
    assert a25.se == pytest.approx(0.1)  # differences 0.1 and 0.3: sd 0.1414, / sqrt(2)
    assert a50.diff == pytest.approx(-0.05) and a50.se == pytest.approx(0.05)
    assert rows["b"][0].diff == 0 and rows["b"][0].se == 0 and rows["b"][1].diff == pytest.approx(-0.1)
    (d25, se25), (d50, se50) = paired.summary(rows, ["a", "b"])
    assert d25 == pytest.approx(0.1) and se25 == pytest.approx(math.sqrt(0.1**2 + 0) / 2)
    assert d50 == pytest.approx((-0.05 - 0.1) / 2) and se50 == pytest.approx(math.sqrt(0.05**2 + 0.1**2) / 2)
    # the summary line is over the names given (simulated landscapes are left out of it in that mode)
    text = paired.table(rows, ["b"], ["a"], (25, 50), "measured landscape")
    assert "| b (simulated) |" in text and "| mean over the 1 measured landscapes | +0.2000 ± 0.1000 | -0.0500 ± 0.0500 |" in text


def test_each_side_is_the_strategys_own_runs_on_the_same_seeds() -> None:
    land = strategies._probe_landscape()
    seeds = [0, 1, 2]
    same = paired.run_landscapes([land], "agents", {}, seeds, jobs=1)
    variant = paired.run_landscapes([land], "agents", {"patience": "2", "init": "4"}, seeds, jobs=1)
    for seed in seeds:
        values, _ = strategies.run_once(land, "agents", seed, max(strategies.BUDGETS), {"patience": "2", "init": "4"})
        assert variant[("probe", seed)] == strategies.fractions(values, land.optimum)
    rows = paired.paired(same, same, ["probe"], seeds, len(strategies.BUDGETS))
    assert all(p.diff == 0 and p.se == 0 for p in rows["probe"])
    assert paired.paired(same, variant, ["probe"], seeds, len(strategies.BUDGETS))["probe"] != rows["probe"]


@pytest.mark.parametrize("argv, said", [
    (["--variant", "patience=abc"], "option patience='abc' must be a whole number"),
    (["--variant", "nope=1"], "has no option 'nope'"),
    (["--variant", "patience"], "expected NAME=VALUE"),
    ([], "at least one option that differs"),
    (["--base", "patience=4", "--variant", "patience=4"], "at least one option that differs"),
    (["--variant", "patience=4", "--seeds", "1"], "at least 2"),
    (["--variant", "patience=4", "--strategy", "random", "--constrained"], "agents only"),
    (["--variant", "patience=4", "--landscapes", "no-such-landscape"], "no landscape matches"),
])
def test_what_cannot_run_is_one_line_before_any_run(argv: list[str], said: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        paired.main(argv)
    assert exit_.value.code == 2
    assert said in capsys.readouterr().err


def test_the_constrained_cases_are_built_again_with_the_options_of_each_call(monkeypatch, tmp_path: Path) -> None:
    # A paired comparison builds the cases twice in one process: the second call's agents must not
    # keep the first call's options, nor its cases.
    monkeypatch.setattr(objective, "SIM_TEMPLATES", ())
    monkeypatch.setattr(objective, "LANDSCAPE_DIR", str(tmp_path))
    objective._CASES["left over"] = None  # type: ignore[assignment]
    objective._init(None, {"patience": "4"})
    assert objective.METHODS["agents"] == ("agents", {"patience": "4"}) and not objective._CASES
    objective._init(None, None)
    assert objective.METHODS["agents"] == ("agents", {})


def _fake_landscape(monkeypatch, tmp_path: Path) -> None:
    """The constrained benchmark over one made-up recorded landscape (its 4 cases), loaded at once."""
    land = strategies._probe_landscape()
    records = {}
    for k, config in enumerate(land.space):
        latency = land.latency[config.id]
        records[config.id] = None if latency is None else {
            "latency_ms": latency, "compile_time_ms": 100.0 + (k * 37) % 50, "time_spread": 0.01 * (k % 7)}
    fake = objective.Landscape("fake_GPU", land.space, records, simulated=False)
    monkeypatch.setattr(objective, "SIM_TEMPLATES", ())
    monkeypatch.setattr(objective.glob, "glob", lambda pattern: ["fake.json"])
    monkeypatch.setattr(objective, "load_kt", lambda path: fake)


def test_a_case_name_with_its_comma_selects_that_case_only(monkeypatch, tmp_path: Path) -> None:
    _fake_landscape(monkeypatch, tmp_path)
    objective._init(None)
    names = list(objective._CASES)
    limit = next(n for n in names if ", compile_time_ms <=" in n)
    assert len(names) == 4 and "min latency," in limit
    objective._init(objective.case_filters([limit]))
    assert list(objective._CASES) == [limit]  # split at its comma it picked every "min latency" case
    objective._init(objective.case_filters(["compile_time,time_spread"]))
    assert len(objective._CASES) == 4
    assert objective.case_filters([]) is None


@pytest.mark.parametrize("argv, said", [
    (["--cases", "sim_sgemm"], "no case name contains any of these"),
    (["--methods", "agents,tpe"], "no method tpe"),
])
def test_the_constrained_benchmark_refuses_a_selection_of_nothing_instead_of_an_empty_table(
        argv: list[str], said: str, monkeypatch, tmp_path: Path, capsys) -> None:
    _fake_landscape(monkeypatch, tmp_path)  # cases exist; the selection names none of them
    with pytest.raises(SystemExit) as exit_:
        objective.main(argv)
    assert exit_.value.code == 2 and said in capsys.readouterr().err
