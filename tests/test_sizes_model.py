"""Trials that carry their own problem (size sweeps): round trips, journal, validation, grouping."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from workbench.core.errors import SessionFormatError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import Journal, Session, load_session, problem_key, save_session
from workbench.core.domain.sizes import problems_of, trials_by_problem

from tests.test_session import assert_same_session, make_session

SMALL = {"n": 1024, "dtype": "float32"}
LARGE = {"dtype": "float32", "n": 1 << 24}


def sweep_session() -> Session:
    """Trials 0-3 at the session's problem, 4-7 at SMALL, 8-11 at LARGE (same configs)."""
    session = make_session(4)
    configs = [t.config for t in session.trials]
    for k, problem in enumerate((SMALL, LARGE)):
        for i, config in enumerate(configs):
            index = 4 * (k + 1) + i
            m = Measurement(Status.OK, {"latency_ms": 0.1 * (index + 1)})
            session.add(Trial(index, config, m, 1.0, 2.0, problem=problem))
    return session


def test_problem_key_is_canonical() -> None:
    assert problem_key({"n": 1, "m": 2}) == problem_key({"m": 2, "n": 1})
    assert problem_key({"n": 1}) != problem_key({"n": 2})
    assert problem_key({"n": 1}) != problem_key({"n": 1.5})


def test_round_trip_keeps_per_trial_problems(tmp_path: Path) -> None:
    session = sweep_session()
    path = save_session(session, tmp_path / "s.json")
    loaded = load_session(path)
    assert_same_session(session, loaded)
    assert [t.problem for t in loaded.trials[:4]] == [None] * 4
    assert loaded.trials[5].problem == SMALL and loaded.trials[9].problem == LARGE
    records = json.loads(path.read_text())["trials"]
    assert "problem" not in records[0]  # old-style trials stay as they were
    assert records[4]["problem"] == SMALL


def test_old_files_load_unchanged(tmp_path: Path) -> None:
    session = make_session(6)
    path = save_session(session, tmp_path / "old.json")
    assert '"problem"' not in "".join(path.read_text().split('"trials"')[1:])
    loaded = load_session(path)
    assert all(t.problem is None for t in loaded.trials)
    assert problems_of(loaded) == [session.problem]


def test_journal_recovers_per_trial_problems(tmp_path: Path) -> None:
    session = sweep_session()
    path = tmp_path / "run.json"
    with Journal(path) as journal:
        journal.start(Session(**{**session.__dict__, "trials": session.trials[:6]}))
        for trial in session.trials[6:]:
            journal.append(trial)
    loaded = load_session(path)  # rebuilt from the journal alone
    assert [t.problem for t in loaded.trials] == [t.problem for t in session.trials]


def test_grouping_and_measured_ids_per_problem() -> None:
    session = sweep_session()
    groups = trials_by_problem(session)
    assert list(groups) == [problem_key(session.problem), problem_key(SMALL), problem_key(LARGE)]
    assert [len(g) for g in groups.values()] == [4, 4, 4]
    assert problems_of(session) == [session.problem, SMALL, LARGE]
    assert session.problem_of(session.trials[0]) == session.problem
    assert session.problem_of(session.trials[9]) == LARGE
    assert [t.index for t in session.trials_at(SMALL)] == [4, 5, 6, 7]
    assert [t.index for t in session.trials_at()] == [0, 1, 2, 3]
    # a config measured at one size is new at a size where it was not measured
    session.trials = [t for t in session.trials if t.index != 9]
    assert session.trials[8].config.id not in session.measured_ids(LARGE) - {session.trials[8].config.id}
    assert session.trials[1].config.id not in session.measured_ids(LARGE)
    assert session.trials[1].config.id in session.measured_ids()
    assert session.trials[1].config.id in session.measured_ids(SMALL)


def test_cache_key_includes_the_trials_problem() -> None:
    session = sweep_session()
    own, small = session.trials[0], session.trials[4]
    assert own.config == small.config
    assert session.cache_key(own) == session.cache_key(own.config)
    assert session.cache_key(small) != session.cache_key(own)
    assert session.cache_key(small) == session.cache_key(small.config, SMALL)
    assert session.cache_key(small.config, dict(reversed(list(SMALL.items())))) == session.cache_key(small)


def _with_trial_problem(tmp_path: Path, problem: object) -> Path:
    session = make_session(2)
    path = save_session(session, tmp_path / "bad.json")
    data = json.loads(path.read_text())
    data["trials"][1]["problem"] = problem
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    "problem, fragment",
    [
        ("n=5", "trials[1].problem: expected an object, got str"),
        ({"n": "x\ny", "dtype": "float32"}, "trials[1].problem.n: 'x\\ny' holds a line break"),
        ({"n": [1, 2], "dtype": "float32"}, "trials[1].problem.n: [1, 2] is not a number, bool or string"),
        ({"n": {"deep": 1}, "dtype": "float32"}, "is not a number, bool or string"),
        ({"n": 1}, "trials[1].problem: has no value for problem parameter 'dtype'"),
        ({"n": 1, "dtype": "float32", "evil": 1}, "trials[1].problem: 'evil' is not a parameter"),
        ({f"p{i}": 1 for i in range(100)}, "100 parameters is more than"),
        ({"n": "a" * 300, "dtype": "float32"}, "longer than the 200 allowed"),
    ],
)
def test_hostile_trial_problems_are_refused_in_one_line(tmp_path: Path, problem: object, fragment: str) -> None:
    path = _with_trial_problem(tmp_path, problem)
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message and message.startswith(str(path))


def test_nan_trial_problem_is_refused(tmp_path: Path) -> None:
    path = _with_trial_problem(tmp_path, {"n": 7777, "dtype": "float32"})
    path.write_text(path.read_text().replace('"n": 7777', '"n": NaN'))
    with pytest.raises(SessionFormatError, match=r"trials\[1\]\.problem\.n: nan is not a finite number"):
        load_session(path)


def test_save_refuses_a_trial_problem_load_would_refuse(tmp_path: Path) -> None:
    session = make_session(2)
    session.trials[1] = dataclasses.replace(session.trials[1], problem={"m": 3})
    with pytest.raises(Exception, match="trials\\[1\\].problem"):
        save_session(session, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


# --- the size view's numbers (core/domain/size_analysis.py) --------------------------------------------


def _analysis_session() -> Session:
    """Three sizes (given out of order), configs A, B, C with known latencies; B never measured at n=8."""
    from workbench.core.domain.space import Config

    a, b, c = Config({"x": 1}), Config({"x": 2}), Config({"x": 3})
    table = {  # n -> {config: latency}
        1 << 20: {a: 4.0, b: 2.0, c: 8.0},
        8: {a: 1.0, c: 1.25},
        1 << 10: {a: 1.0, b: 2.0},
    }
    session = Session(kernel="k", problem={"n": 8, "dtype": "f32"})
    index = 0
    for n, row in table.items():
        for config, latency in row.items():
            session.add(Trial(index, config, Measurement(Status.OK, {"latency_ms": latency}),
                              problem={"n": n, "dtype": "f32"}))
            index += 1
    session.add(Trial(index, c, Measurement.failure(Status.RUNTIME_ERROR, "boom"), problem={"n": 1 << 10, "dtype": "f32"}))
    return session


def test_size_rows_are_ordered_by_size_with_their_best() -> None:
    from workbench.core.domain.size_analysis import size_layout, size_rows

    rows = size_rows(_analysis_session())
    assert [r.problem["n"] for r in rows] == [8, 1 << 10, 1 << 20]
    assert [r.label for r in rows] == ["n=8", "n=1024", "n=1048576"]
    assert [r.best.config["x"] for r in rows] == [1, 1, 2]
    assert [r.best_latency for r in rows] == [1.0, 1.0, 2.0]
    layout = size_layout(rows)
    assert layout.x_name == "n" and list(layout.x) == [8.0, 1024.0, 1048576.0]
    assert layout.series == ((0, 1, 2),) and layout.series_labels == ("",)


def test_a_grid_sweep_is_drawn_as_one_series_per_value_of_the_other_parameter() -> None:
    """rows x cols: along the parameter with more values, one series per value of the other, so no
    two sizes share a point (along the product, rows=2^10, cols=2^12 and rows=2^14, cols=2^8 did)."""
    from types import SimpleNamespace

    from workbench.core.domain.size_analysis import size_layout

    problems = [{"rows": r, "cols": c} for r in (1024, 16384) for c in (256, 1024, 4096)]
    rows = [SimpleNamespace(problem=p) for p in problems]
    layout = size_layout(rows)  # type: ignore[arg-type]
    assert layout.x_name == "cols" and layout.series_names == ("rows",)
    assert layout.parameters == ("rows", "cols")
    assert layout.series == ((0, 1, 2), (3, 4, 5))
    assert layout.series_labels == ("rows=1024", "rows=16384")
    points = {(s, float(layout.x[i])) for s, members in enumerate(layout.series) for i in members}
    assert len(points) == len(problems)  # every size a point of its own
    # the parameter with more values goes along x, whichever is named first
    layout = size_layout([SimpleNamespace(problem={"a": a, "b": b}) for a in (1, 2, 3) for b in (5, 6)])  # type: ignore[arg-type]
    assert layout.x_name == "a" and layout.series_labels == ("b=5", "b=6")
    assert layout.series == ((0, 2, 4), (1, 3, 5))


def test_a_sizes_best_meets_the_objectives_constraints() -> None:
    """Under a latency limit a size's best is its best config within the limit, and a size with
    nothing within it has none (a config missing the limit was shown as that size's best)."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective
    from workbench.core.domain.size_analysis import size_rows

    rows = size_rows(_analysis_session(), Objective(Constraints(max_latency_ms=1.1)))
    assert [r.best.config["x"] if r.best else None for r in rows] == [1, 1, None]
    rows = size_rows(_analysis_session(), Objective(Constraints(max_latency_ms=3.0)))
    assert [r.best_latency for r in rows] == [1.0, 1.0, 2.0]


def test_winner_bands_and_the_cross_matrix() -> None:
    import numpy as np

    from workbench.core.domain.size_analysis import cross_matrix, missing_cells, size_rows, winner_bands

    rows = size_rows(_analysis_session())
    bands = winner_bands(rows)
    assert [(b.config["x"], b.first, b.last) for b in bands] == [(1, 0, 1), (2, 2, 2)]
    m = cross_matrix(rows)
    # rows: best of n=8 (A), best of n=1024 (A), best of n=2^20 (B); columns: the sizes
    expected = np.array([[1.0, 1.0, 0.5],
                         [1.0, 1.0, 0.5],
                         [np.nan, 0.5, 1.0]])
    np.testing.assert_allclose(m, expected)
    cells = missing_cells(rows)
    assert [(p["n"], c["x"]) for p, c in cells] == [(8, 2)]


def test_a_config_that_failed_at_a_size_scores_zero_there() -> None:
    from workbench.core.domain.size_analysis import cross_matrix, size_rows
    from workbench.core.domain.space import Config

    session = _analysis_session()
    session.add(Trial(99, Config({"x": 2}), Measurement.failure(Status.RUNTIME_ERROR, "boom"),
                      problem={"n": 8, "dtype": "f32"}))
    assert cross_matrix(size_rows(session))[2, 0] == 0.0


def test_a_zero_latency_built_in_memory_does_not_break_the_cross_matrix() -> None:
    """0 ms is refused when measured or loaded; a session built in memory can still hold one, and
    the matrix reads it as tying with the optimum rather than dividing by it."""
    from workbench.core.domain.size_analysis import cross_matrix, size_rows
    from workbench.core.domain.space import Config

    session = _analysis_session()
    session.add(Trial(99, Config({"x": 1}), Measurement(Status.OK, {"latency_ms": 0.0}),
                      problem={"n": 8, "dtype": "f32"}))
    m = cross_matrix(size_rows(session))
    assert m[0, 0] == 1.0 and m.shape == (3, 3)


# --- one rule for what tells sizes apart (core/domain/sizes.py telling_parameters) ------------------


def test_the_parameters_that_tell_sizes_apart_include_switches_text_and_missing_names() -> None:
    from workbench.core.domain.sizes import size_parameters, telling_parameters

    problems = [{"n": 4096, "flag": False, "dtype": "f32", "a": 2.0},
                {"n": 4096, "flag": True, "dtype": "f16", "a": 2.0},
                {"n": 65536, "flag": False, "dtype": "f32", "a": 2.0, "extra": 1}]
    assert telling_parameters(problems) == ["n", "flag", "dtype", "extra"]  # a, the same everywhere, is not
    assert size_parameters(problems) == ["n"]  # the numbers every size has: the axes
    assert telling_parameters([{"n": 1}, {"n": 1.0}]) == ["n"]  # two keys, so two names
    assert telling_parameters([{"b": True}, {"b": 1}]) == ["b"]
    assert telling_parameters([{"n": 1, "m": 2}]) == []


def test_a_size_value_is_written_as_typed_and_a_switch_typed_as_1_or_0_is_the_switch() -> None:
    import numpy as np

    from workbench.core.domain.sizes import size_value_text, typed_like

    assert [size_value_text(v) for v in (True, 1e-05, np.float64(2.5), 4096, "f16")] == ["true", "1e-05", "2.5",
                                                                                      "4096", "f16"]
    assert typed_like({"fast": False, "n": 4}, {"fast": 1, "n": 4.0}) == {"fast": True, "n": 4}
    assert typed_like({"fast": False}, {"fast": 2}) == {"fast": 2}  # no switch: left for the caller to refuse


def test_a_sweep_over_a_switch_names_each_size_apart_and_draws_a_series_per_value() -> None:
    """A sweep over n and a switch named two sizes ``n=4096``: only numbers named sizes."""
    from workbench.core.domain.size_analysis import size_layout, size_rows
    from workbench.core.domain.space import Config

    session = Session(kernel="k", problem={"n": 4096, "flag": False})
    index = 0
    for n in (65536, 4096):
        for flag in (True, False):
            for x in (1, 2):
                session.add(Trial(index, Config({"x": x}), Measurement(Status.OK, {"latency_ms": 1.0 + x + flag}),
                                  problem={"n": n, "flag": flag}))
                index += 1
    rows = size_rows(session)
    assert [r.label for r in rows] == ["n=4096, flag=false", "n=4096, flag=true",
                                       "n=65536, flag=false", "n=65536, flag=true"]
    layout = size_layout(rows)
    assert layout.x_name == "n" and layout.series_names == ("flag",)
    assert layout.series_labels == ("flag=false", "flag=true")
    assert layout.series == ((0, 2), (1, 3))


def test_a_file_without_a_problem_of_its_own_has_its_trials_problems_checked_against_the_first(tmp_path: Path) -> None:
    """With ``"problem": {}`` nothing was checked: ``n`` as 1 in one trial and 1.0 in another made two
    sizes that every place named ``n=1``, and a name some trials lacked made sizes named alike."""
    session = make_session(4)
    path = save_session(session, tmp_path / "s.json")
    data = json.loads(path.read_text())
    data["problem"] = {}
    for record, problem in zip(data["trials"], ({"n": 1}, {"n": 1}, {"n": 1.0}, {"n": 2})):
        record["problem"] = problem
    path.write_text(json.dumps(data))
    loaded = load_session(path)
    assert [dict(p) for p in problems_of(loaded)] == [{"n": 1}, {"n": 2}]  # 1.0 read as the 1 of the first
    data["trials"][2]["problem"] = {"n": 1, "dtype": "f16"}
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFormatError, match=r"trials\[2\]\.problem: 'dtype' is not a parameter of the first "
                                                 r"trial's problem"):
        load_session(path)
    data["trials"][2]["problem"] = {"n": "1"}
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFormatError, match=r"trials\[2\]\.problem\.n: '1' is text, where the first trial's"):
        load_session(path)
