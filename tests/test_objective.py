"""Constraints, weights, score, Pareto front and recommendation (workbench.core.domain.objective)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.objective import (
    Bound,
    Constraints,
    MetricTable,
    Weights,
    normalise,
    pareto_front,
    rank,
    trial_cost,
)
from workbench.core.domain.space import Config


def ok(index: int, **metrics: float) -> Trial:
    return Trial(index, Config({"x": index}), Measurement(Status.OK, metrics))


def failed(index: int, status: Status = Status.COMPILE_ERROR, message: str = "nvrtc: boom") -> Trial:
    return Trial(index, Config({"x": index}), Measurement.failure(status, message))


# --- Bound ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("latency_ms<=2", Bound("latency_ms", "<=", 2.0)),
        ("  occupancy >= 0.5 ", Bound("occupancy", ">=", 0.5)),
        ("memory_mb =< 1e3", Bound("memory_mb", "<=", 1000.0)),
        ("memory_mb <= 512 MB", Bound("memory_mb", "<=", 512.0)),
        ("throughput_gbs >= 900 GB/s", Bound("throughput_gbs", ">=", 900.0)),
        ("gflops >= 5000 GFLOP/s", Bound("gflops", ">=", 5000.0)),  # the registry's unit, Kernel Tuner's name
        ("power_w<=-.5", Bound("power_w", "<=", -0.5)),
    ],
)
def test_bound_parse(text: str, expected: Bound) -> None:
    assert Bound.parse(text) == expected
    assert Bound.parse(expected.label) == expected


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("latency_ms < 2", "use <= or >="),
        ("latency_ms == 2", "use <= or >="),
        ("latency", "not of the form"),
        ("2 >= latency_ms", "not of the form"),
        ("latency_ms <= fast", "not of the form"),
        ("memory_mb <= 2 GB", "unit 'GB' does not match"),
        ("latency_ms <= 1 s", "unit 's' does not match latency_ms, whose unit is ms (give the value in its own unit)"),
        ("occupancy >= 50%", "unit '%' does not match occupancy, a share from 0 to 1 (give 0.5 for 50%)"),
        ("registers <= 64 regs", "unit 'regs' does not match registers, a plain number (it has no unit)"),
        # bits are an eighth of the bytes: read as GB/s, 3000 Gb/s was a limit eight times too high
        ("throughput_gbs >= 3000 Gb/s", "unit 'Gb/s' counts bits; throughput_gbs counts bytes (GB/s)"),
        ("memory_mb <= 512 Mb", "unit 'Mb' counts bits"),
        ("onchip_kb_per_sm <= 200 MB", "does not match onchip_kb_per_sm, whose unit is KiB"),
        ("__import__('os') <= 1", "not of the form"),
        ("", "not of the form"),
        ("GFLOP/s >= 300", "metric 'GFLOP/s': not a metric name (metrics are recorded under names like 'gflops')"),
        ("lätenz <= 2", "metric 'lätenz': not a metric name"),  # a letter outside ASCII: named, not "the form"
    ],
)
def test_bound_parse_rejects_with_one_line(text: str, fragment: str) -> None:
    with pytest.raises(WorkbenchError) as info:
        Bound.parse(text)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_a_descriptive_figure_takes_the_unit_the_views_write() -> None:
    """The card and the columns write on-chip storage in KiB, and a bound naming it was refused
    without saying which unit the metric takes. A metric of one's own that counts bits takes bits."""
    assert Bound.parse("link_mbps >= 300 Mbps") == Bound("link_mbps", ">=", 300.0)
    assert Bound.parse("onchip_kb_per_sm <= 200 KiB") == Bound("onchip_kb_per_sm", "<=", 200.0)
    assert Bound.parse("dram_mb <= 5 MB") == Bound("dram_mb", "<=", 5.0)


def test_bound_nan_never_satisfies() -> None:
    b = Bound("latency_ms", "<=", 2)
    assert b.satisfied(np.array([1.0, 2.0, 3.0, np.nan])).tolist() == [True, True, False, False]
    assert Bound("quality", ">=", 0.9).satisfied(np.array([0.95, 0.5, np.nan])).tolist() == [True, False, False]


# --- Constraints and weights ---------------------------------------------------------------------


def test_constraints_bounds_and_round_trip() -> None:
    c = Constraints(max_latency_ms=2, max_memory_mb=100, min_quality=0.99, extra=("occupancy >= 0.5",))
    assert [b.label for b in c.bounds()] == [
        "latency_ms <= 2",
        "memory_mb <= 100",
        "quality >= 0.99",
        "occupancy >= 0.5",
    ]
    assert Constraints.from_dict(c.to_dict()) == c
    assert Constraints.from_dict(None) == Constraints()
    c.check_possible()


@pytest.mark.parametrize(
    "constraints, fragment",
    [
        (Constraints(min_quality=1.5), "min quality"),
        (Constraints(max_latency_ms=-1), "max latency"),
        (Constraints(max_memory_mb=-5), "max memory"),
        (Constraints(max_latency_ms=1, extra=("latency_ms >= 2",)), "cannot both hold"),
        (Constraints(extra=("registers <= -1",)), "cannot be negative"),
        # a share of a whole, as quality is: a bound above 1 was accepted and made nothing feasible
        (Constraints(extra=("occupancy >= 1.5",)), r"^constraint occupancy >= 1.5: occupancy is a share, at most 1, "),
        # a percentile of the kernel time at 0, as the median's (the named max latency) is refused
        (Constraints(extra=("latency_p80_ms <= 0",)), r"^constraint latency_p80_ms <= 0: latency_p80_ms is a kernel "
                                                     "time, which is positive, so it cannot hold"),
        (Constraints(extra=("latency_ms <= 0",)), "is a kernel time"),
    ],
)
def test_impossible_constraints(constraints: Constraints, fragment: str) -> None:
    with pytest.raises(WorkbenchError, match=fragment):
        constraints.check_possible()


@pytest.mark.parametrize(
    "data",
    [{"max_latency_ms": "fast"}, {"max_latency_ms": float("nan")}, {"bogus": 1}, {"extra": "latency_ms<=1"}, [1]],
)
def test_constraints_from_bad_dict(data) -> None:
    with pytest.raises(WorkbenchError):
        Constraints.from_dict(data)


def test_weights_defaults_and_validation() -> None:
    w = Weights()
    assert w.get("latency_ms") == 1.0 and w.get("memory_mb") == 0.0
    assert w.active() == {"latency_ms": 1.0}
    assert Weights({"latency_ms": 0, "memory_mb": 0}).active() == {"latency_ms": 1.0}
    assert Weights.from_dict(w.with_weight("memory_mb", 2).to_dict()).active() == {"latency_ms": 1.0, "memory_mb": 2.0}
    assert hash(Weights({"a": 1.0, "b": 2.0})) == hash(Weights({"b": 2.0, "a": 1.0}))
    assert hash(Constraints(extra=("a <= 1",))) == hash(Constraints(extra=(Bound("a", "<=", 1),)))
    with pytest.raises(WorkbenchError, match="negative"):
        Weights({"latency_ms": -1})
    with pytest.raises(WorkbenchError, match="not a number"):
        Weights({"latency_ms": "heavy"})


# --- normalisation and score ---------------------------------------------------------------------


def test_normalise_directions_and_zero_best() -> None:
    ok_mask = np.array([True, True, True, False])
    assert normalise(np.array([1.0, 2.0, 4.0, 0.5]), ok_mask, -1).tolist()[:3] == [1.0, 0.5, 0.25]
    assert math.isnan(normalise(np.array([1.0, 2.0, 4.0, 0.5]), ok_mask, -1)[3])
    assert normalise(np.array([100.0, 50.0, 25.0, 1e9]), ok_mask, +1).tolist()[:3] == [1.0, 0.5, 0.25]
    # zero spills is best; the next value scores 0.5 after the shift
    spills = normalise(np.array([0.0, 8.0, 24.0, 0.0]), ok_mask, -1)
    assert spills.tolist()[:3] == [1.0, 0.5, 0.25]
    assert np.isnan(normalise(np.array([np.nan] * 4), ok_mask, -1)).all()


def test_latency_only_ranking_orders_by_latency() -> None:
    trials = [ok(0, latency_ms=3.0), failed(1), ok(2, latency_ms=1.5), ok(3, latency_ms=6.0)]
    r = rank(trials, Constraints(), Weights(), default=trials[0].config.id)
    assert r.order.tolist() == [2, 0, 3]
    assert r.best == 2 and r.n_feasible == 3 and r.n_ok == 3
    assert math.isnan(r.score[1]) and not r.feasible[1]
    assert r.score[2] == 1.0 and r.score[0] == pytest.approx(0.5)
    assert r.explain(2) == "lowest latency among 3 feasible configs; 2.0x faster than the default"
    assert r.explain(0).startswith("2nd lowest latency among 3 feasible configs (2.00x slower than the best)")
    assert r.explain(0).endswith("this is the default config")
    assert r.explain(1) == "failed (compile_error): nvrtc: boom"
    # a gain under 10% is written in percent, never as "1.0x faster"
    close = [ok(0, latency_ms=1.03), ok(1, latency_ms=1.0)]
    assert rank(close, default=close[0].config.id).explain(1).endswith("; 3.0% faster than the default")
    # a ratio past the largest float is no figure: never "infx faster" (nor an overflow warning)
    far = [ok(0, latency_ms=1e308), ok(1, latency_ms=1e-3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "inf" not in rank(far, default=far[0].config.id).explain(1)


def test_a_default_config_stopped_early_is_not_called_a_failure() -> None:
    """'the default config failed (aborted)' where aborted candidates are documented as not failures."""
    aborted = Trial(0, Config({"x": 0}), Measurement(Status.ABORTED, {"latency_bound_ms": 9.0}))
    trials = [aborted, ok(1, latency_ms=1.0)]
    assert rank(trials, default=aborted.config.id).explain(1).endswith(
        "; the default config was stopped early as hopeless under the latency limit")


def test_weighted_score_trades_latency_for_memory() -> None:
    trials = [ok(0, latency_ms=1.0, memory_mb=400.0), ok(1, latency_ms=1.25, memory_mb=100.0)]
    assert rank(trials).best == 0
    r = rank(trials, weights=Weights({"latency_ms": 1.0, "memory_mb": 1.0}))
    # trial 0: (1 + 0.25)/2 = 0.625; trial 1: (0.8 + 1)/2 = 0.9
    assert r.score.tolist() == pytest.approx([0.625, 0.9])
    assert r.best == 1
    assert "highest score 0.900 among 2 feasible configs" in r.explain(1)


def test_ranked_by_one_metric_other_than_latency_the_why_gives_its_value() -> None:
    """The summaries print the latency beside the why; ranked by another figure (Kernel Tuner's
    mean time, GFLOP/s) that alone did not say what decided."""
    trials = [ok(0, latency_ms=1.0, kt_time_ms=3.5), ok(1, latency_ms=2.0, kt_time_ms=2.25)]
    r = rank(trials, weights=Weights({"kt_time_ms": 1.0}))
    assert r.explain(1) == "lowest kt_time_ms (2.25) among 2 feasible configs"
    assert r.explain(0).startswith("2nd lowest kt_time_ms (3.5) among 2 feasible configs")
    assert rank(trials).explain(0) == "lowest latency among 2 feasible configs"  # shown beside it already


def test_trial_missing_a_weighted_metric_scores_zero_on_that_term() -> None:
    trials = [ok(0, latency_ms=1.0, quality=1.0), ok(1, latency_ms=1.0)]
    r = rank(trials, weights=Weights({"latency_ms": 1.0, "quality": 1.0}))
    assert r.score.tolist() == pytest.approx([1.0, 0.5])
    # a weighted metric nobody reports is left out rather than zeroing everyone
    r = rank(trials, weights=Weights({"latency_ms": 1.0, "power_w": 3.0}))
    assert r.score.tolist() == pytest.approx([1.0, 1.0])


def test_constraints_feasibility_and_exclusion_counts() -> None:
    trials = [
        ok(0, latency_ms=1.0, memory_mb=500.0, quality=1.0),
        ok(1, latency_ms=2.0, memory_mb=100.0, quality=0.5),
        ok(2, latency_ms=3.0, memory_mb=100.0, quality=1.0),
        ok(3, latency_ms=9.0, memory_mb=50.0),
        failed(4),
    ]
    c = Constraints(max_latency_ms=5, max_memory_mb=200, min_quality=0.9)
    r = rank(trials, c)
    assert r.feasible.tolist() == [False, False, True, False, False]
    assert r.best == 2 and r.n_feasible == 1
    assert r.excluded_by == {"latency_ms <= 5": 1, "memory_mb <= 200": 1, "quality >= 0.9": 2}
    assert r.most_excluding == "quality >= 0.9"
    assert r.explain(3) == "infeasible: latency_ms 9 violates latency_ms <= 5; quality not reported violates quality >= 0.9"
    nothing = rank(trials, Constraints(max_latency_ms=0.5))
    assert nothing.best is None and nothing.n_feasible == 0
    assert nothing.most_excluding == "latency_ms <= 0.5"
    assert "no feasible config among 4 successful trials" in nothing.summary()
    assert r.explain(2) == "lowest latency among 1 feasible config"


def test_nothing_feasible_names_every_constraint_that_excludes_a_trial() -> None:
    """Relaxing the constraint that excludes the most can leave nothing feasible still, when
    another excludes the rest: the line names each, the most excluding first."""
    trials = [ok(0, latency_ms=1.0, registers=200.0), ok(1, latency_ms=2.0, registers=150.0),
              ok(2, latency_ms=6.0, registers=100.0)]
    r = rank(trials, Constraints(max_latency_ms=5, extra=(Bound("registers", "<=", 128.0),)))
    assert r.best is None and r.most_excluding == "registers <= 128"
    assert r.why_none() == ("no feasible config among 3 successful trials; "
                            "registers <= 128 excludes 2, latency_ms <= 5 excludes 1")
    one = rank(trials[:1], Constraints(max_latency_ms=0.5))
    assert one.why_none() == "no feasible config among 1 successful trial; latency_ms <= 0.5 excludes 1"


def test_nothing_to_score_is_said_truthfully_without_any_constraint() -> None:
    """Only an unreported metric weighted: no trial has a score, so nothing is feasible although no
    constraint excludes anything; the line says so instead of naming a constraint (there is none)."""
    trials = [ok(0, latency_ms=1.0), ok(1, latency_ms=2.0), failed(2)]
    r = rank(trials, weights=Weights({"latency_ms": 0.0, "quality": 5.0}))
    assert r.best is None and r.most_excluding is None and r.unscored.tolist() == [True, True, False]
    assert r.summary() == r.why_none() == (
        "no feasible config among 2 successful trials; 2 report none of the weighted metrics (quality)")
    assert r.explain(0) == "infeasible: reports none of the weighted metrics (quality), so it has no score"
    # with a constraint too: both reasons, each with its count
    both = rank(trials, Constraints(max_latency_ms=1.5), Weights({"latency_ms": 0.0, "quality": 5.0}))
    assert both.summary() == ("no feasible config among 2 successful trials; latency_ms <= 1.5 excludes 1; "
                              "1 within the constraints reports none of the weighted metrics (quality)")
    assert both.explain(1) == "infeasible: latency_ms 2 violates latency_ms <= 1.5"
    # a NaN latency (a null in a file) on the only successful trial: nothing to rank by
    nan = rank([ok(0, latency_ms=math.nan, memory_mb=1.0)])
    assert nan.summary().endswith("1 reports none of the weighted metrics (latency_ms)")
    # a feasible trial that reports none of several weighted metrics scores 0, and says why
    mixed = rank([ok(0, latency_ms=1.0), ok(1, memory_mb=2.0)], weights=Weights({"latency_ms": 1.0, "quality": 1.0}))
    assert mixed.explain(1) == "2nd highest score 0.000 among 2 feasible configs (it reports none of the weighted metrics)"


def test_failed_trials_are_never_feasible_even_with_metrics() -> None:
    bad = Trial(0, Config({"x": 0}), Measurement(Status.WRONG_RESULT, {"latency_ms": 0.1}))
    r = rank([bad, ok(1, latency_ms=5.0)])
    assert r.feasible.tolist() == [False, True]
    assert r.best == 1
    assert r.excluded_by == {}


def test_pareto_front() -> None:
    lat = np.array([1.0, 2.0, 3.0, 2.5, 4.0, np.nan])
    mem = np.array([300.0, 200.0, 100.0, 250.0, 100.0, 1.0])
    front = pareto_front(lat, mem, np.ones(6, dtype=bool))
    assert front.tolist() == [0, 1, 2]
    assert pareto_front(lat, np.full(6, np.nan), np.ones(6, dtype=bool)).tolist() == [0]
    trials = [ok(i, latency_ms=float(a), memory_mb=float(b)) for i, (a, b) in enumerate(zip(lat[:5], mem[:5]))]
    r = rank(trials, Constraints(max_memory_mb=250))
    assert r.pareto.tolist() == [0, 1, 2]
    assert r.pareto_feasible.tolist() == [1, 2]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 100), st.floats(0, 1000)), min_size=1, max_size=40))
def test_pareto_front_matches_brute_force(points) -> None:
    lat = np.array([p[0] for p in points])
    mem = np.array([p[1] for p in points])
    front = set(pareto_front(lat, mem, np.ones(len(points), dtype=bool)).tolist())
    for i in range(len(points)):
        dominated = any(
            lat[j] <= lat[i] and mem[j] <= mem[i] and (lat[j] < lat[i] or mem[j] < mem[i]) for j in range(len(points))
        )
        if dominated:
            assert i not in front
    # every non-dominated distinct point is represented on the front
    for i in range(len(points)):
        if not any(lat[j] <= lat[i] and mem[j] <= mem[i] and (lat[j], mem[j]) != (lat[i], mem[i]) for j in range(len(points))):
            assert any((lat[j], mem[j]) == (lat[i], mem[i]) for j in front)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0.001, 1e4)), min_size=1, max_size=50), st.floats(0.001, 1e4))
def test_ranking_properties(latencies, limit) -> None:
    trials = [failed(i) if v is None else ok(i, latency_ms=v) for i, v in enumerate(latencies)]
    r = rank(trials, Constraints(max_latency_ms=limit))
    expected = [i for i, v in enumerate(latencies) if v is not None and v <= limit]
    assert sorted(r.order.tolist()) == expected
    assert r.n_feasible == len(expected)
    if expected:
        assert latencies[r.best] == min(latencies[i] for i in expected)
        assert all(0 < r.score[i] <= 1 for i in expected)
        assert np.all(np.diff(r.score[r.order]) <= 0)
    else:
        assert r.best is None
    assert np.isnan(r.score[[i for i, v in enumerate(latencies) if v is None]]).all()


def test_metric_table_appends_incrementally_and_matches_from_trials() -> None:
    trials = [ok(i, latency_ms=float(i + 1)) for i in range(100)] + [failed(100)]
    trials.append(ok(101, latency_ms=0.5, power_w=30.0))  # a metric first seen late
    trials[50] = ok(50, latency_ms=51.0, energy_j=2.0)  # one trial's metric, amid trials without it
    table = MetricTable(capacity=4)
    for t in trials:
        table.append(t)
    whole = MetricTable.from_trials(trials)
    assert len(table) == len(whole) == 102
    for name in ("latency_ms", "power_w", "energy_j"):
        np.testing.assert_array_equal(table.column(name), whole.column(name))
    assert np.isnan(table.column("power_w")[:101]).all()
    energy = whole.column("energy_j")
    assert energy[50] == 2.0 and np.isnan(np.delete(energy, 50)).all()
    assert whole.column("latency_ms")[100] != whole.column("latency_ms")[100]  # the failure: NaN
    assert whole.metrics == ["latency_ms", "energy_j", "power_w"]  # in order of first report
    assert whole.ids == [t.config.id for t in trials] and whole.index.tolist() == [t.index for t in trials]
    assert table.ok.tolist() == whole.ok.tolist()
    assert rank(table).best == rank(trials).best == 101
    assert table.position(trials[5].config.id) == 5 and table.position("nope") is None


def test_metric_table_of_many_sparse_metrics_matches_one_trial_at_a_time() -> None:
    """Trials that each report a metric of their own (a recording's user metrics) are placed value
    by value; the table is the one appending them one by one builds."""
    trials = [ok(i, latency_ms=1.0 + i, **{f"m{i}": float(i)}) for i in range(40)] + [failed(40)]
    trials.append(ok(41, latency_ms=0.5, m3=None))  # a null read back from a file: NaN
    whole = MetricTable.from_trials(trials)
    table = MetricTable(capacity=2)
    for trial in trials:
        table.append(trial)
    assert whole.metrics == table.metrics == ["latency_ms", *(f"m{i}" for i in range(40))]
    for name in whole.metrics:
        np.testing.assert_array_equal(whole.column(name), table.column(name))
    m3 = whole.column("m3")
    assert m3[3] == 3.0 and np.isnan(np.delete(m3, 3)).all()


def test_the_default_row_is_the_default_configs_latest_successful_trial() -> None:
    """A default config aborted and then measured again in full is compared as measured, not as
    "the default config failed"; one that never succeeded is its latest failure."""
    default = Config({"x": 0})
    aborted = Trial(0, default, Measurement.failure(Status.ABORTED, "over the latency limit"))
    again = Trial(2, default, Measurement(Status.OK, {"latency_ms": 4.0}))
    later_failure = Trial(3, default, Measurement.failure(Status.RUNTIME_ERROR, "flaky"))
    trials = [aborted, ok(1, latency_ms=2.0), again, later_failure]
    ranking = rank(trials, default=default.id)
    assert ranking.default_row == 2 and ranking.explain(1).endswith("2.0x faster than the default")
    assert rank(trials[:2], default=default.id).default_row == 0
    assert rank([aborted, ok(1, latency_ms=2.0), later_failure], default=default.id).default_row == 2


def test_trial_cost() -> None:
    cost = trial_cost(Constraints(max_latency_ms=5))
    assert cost(ok(0, latency_ms=2.0)) == 2.0
    assert 2.0 < cost(ok(0, latency_ms=6.0)) < cost(ok(0, latency_ms=9.0)) < math.inf  # graded, behind feasible
    assert cost(failed(1)) == math.inf
    mixed = trial_cost(weights=Weights({"latency_ms": 1, "throughput_gbs": 1}))
    assert mixed(ok(0, latency_ms=1.0, throughput_gbs=200.0)) < mixed(ok(1, latency_ms=1.0, throughput_gbs=100.0))


@pytest.mark.parametrize("direction", [-1, +1])
def test_values_at_or_below_zero_keep_their_order_in_the_score(direction: int) -> None:
    """Clipped at 0 before: every negative value (an error in dB, a margin) tied, and the
    recommendation was whichever came first, not the best."""
    values = np.array([-25.0, -60.0, -35.0, 3.0, 0.0])
    score = normalise(values, np.ones(5, dtype=bool), direction)
    order = np.argsort(-score, kind="stable")
    assert order.tolist() == (np.argsort(values) if direction < 0 else np.argsort(-values)).tolist()
    assert score.max() == 1.0 and np.all(score > 0) and len(set(score.tolist())) == 5


def test_a_larger_is_better_zero_still_scores_zero() -> None:
    assert normalise(np.array([0.0, 50.0, 100.0]), np.ones(3, dtype=bool), +1).tolist() == [0.0, 0.5, 1.0]


def test_negative_values_close_together_score_close_together() -> None:
    """Shifted by the smallest gap, -60 and -59.9999 dB scored 1 and 0.5, and one more trial
    elsewhere could reorder a weighted ranking."""
    score = normalise(np.array([-60.0, -59.9999, -25.0]), np.ones(3, dtype=bool), -1)
    assert score[0] == 1.0 and score[1] == pytest.approx(1.0, abs=1e-5) and score[2] == pytest.approx(0.5)


def test_named_limits_fold_to_the_tightest_bound_and_keep_the_others() -> None:
    """One rule for the command line and the window: a bound on latency (<=), memory (<=) or
    quality (>=) is that named limit, the tightest of its bounds and its start value wins, and a
    bound on another metric or side, or one the caller refuses, stays a bound."""
    from workbench.core.domain.objective import Bound, fold_named_limits

    bounds = [Bound.parse(t) for t in ("latency_ms<=0.8", "latency_ms<=0.5", "quality>=0.9", "latency_ms>=0.1",
                                        "registers<=64", "memory_mb<=-1")]
    named, rest = fold_named_limits(bounds, start={"max_latency_ms": 0.6, "min_quality": 0.95})
    assert named == {"max_latency_ms": 0.5, "min_quality": 0.95, "max_memory_mb": -1}
    assert [b.label for b in rest] == [Bound.parse("latency_ms>=0.1").label, Bound.parse("registers<=64").label]
    named, rest = fold_named_limits(bounds, accept=lambda field, value: value >= 0)
    assert named == {"max_latency_ms": 0.5, "min_quality": 0.9}
    assert Bound.parse("memory_mb<=-1").label in [b.label for b in rest]


def test_a_bounds_label_reads_back_to_the_same_value() -> None:
    """Labels are stored in session files and re-parsed by the window's field: written with six
    digits, ``latency_p20_ms <= 3.3374549243584903`` came back as ``<= 3.33745`` and excluded the
    one config it had been set to admit."""
    from workbench.core.domain.objective import Bound

    for text in ("latency_p20_ms<=3.3374549243584903", "registers<=1234567", "quality>=0.999999999", "x<=1e-300",
                 "latency_ms<=0.8", "memory_mb<=64"):
        bound = Bound.parse(text)
        assert Bound.parse(bound.label).value == bound.value
    assert Bound.parse("registers<=64").label == "registers <= 64"
    assert Bound.parse("latency_ms<=0.8").label == "latency_ms <= 0.8"


def test_rate_and_efficiency_names_are_larger_is_better_and_units_smaller() -> None:
    """Imported metric names lose their slash: ``Mpoints/s`` -> ``mpoints_s``. A trailing ``_s``
    was read as seconds, so rates were minimised and the slowest config recommended; ``perf/W``
    likewise. What precedes the unit decides: work makes it a rate, time or anything else a unit."""
    from workbench.core.domain.metrics import known_direction

    larger = ["mpoints_s", "gpoints_s", "items_s", "perf_w", "bytes_j", "samples_per_joule", "energy_efficiency",
              "gflops_w", "gflop_s", "gb_s", "tflop_s", "flops_per_joule", "speedup"]
    smaller = ["ns_flop", "time_per_flop", "j_per_op", "compile_time_s", "energy_j", "power_w", "latency_s",
               "kt_time_ms", "registers", "memory_mb", "bytes", "tokens_latency_s", "bytes_copy_time_s",
               "mb_transfer_time_s", "items_elapsed_s", "wall_s", "board_w", "total_j",
               "work_gflop", "flop", "mflop"]  # an amount of work, not a rate (the simulator's was maximised)
    assert {n: known_direction(n) for n in larger} == dict.fromkeys(larger, 1)
    assert {n: known_direction(n) for n in smaller} == dict.fromkeys(smaller, -1)
    assert known_direction("margin") is None


def test_metric_values_near_the_float_limit_still_rank() -> None:
    """Values of +-1e308 overflowed the shift of a signed metric to inf: every score was NaN, and
    the ranking said no trial reported the metric."""
    import warnings

    from workbench.core.domain.objective import normalise

    values = np.array([-1e308, -1e307, 1e307, 1e308])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        smaller = normalise(values, np.ones(4, dtype=bool), -1)
        larger = normalise(values, np.ones(4, dtype=bool), +1)
    assert np.all(np.isfinite(smaller)) and np.all(np.isfinite(larger))
    assert smaller[0] == 1.0 and list(np.argsort(-smaller)) == [0, 1, 2, 3]
    assert larger[3] == 1.0 and list(np.argsort(larger)) == [0, 1, 2, 3]


def test_sentences_write_a_bound_in_the_fewest_digits_that_read_back_as_it():
    """Sentences wrote bounds to six significant digits: copied from the card or ``show`` and typed
    back, ``memory_mb <= 63.9132`` was a tighter limit than the 63.91320761904762 in force, and
    excluded the configs it had admitted. Short where six digits are the value."""
    limit = 63.91320761904762
    trials = [ok(0, latency_ms=1.0, memory_mb=67.109), ok(1, latency_ms=2.0, memory_mb=67.37125)]
    ranking = rank(trials, Constraints(max_memory_mb=limit))
    label = ranking.most_excluding
    assert label == f"memory_mb <= {limit!r}" and Bound.parse(label).value == limit  # exact, read back
    assert ranking.shown(label) == f"memory_mb <= {limit!r}"
    assert Bound.parse(ranking.shown(label)).value == limit
    assert f"memory_mb <= {limit!r} excludes 2" in ranking.why_none()
    assert ranking.explain(1) == f"infeasible: memory_mb 67.3713 violates memory_mb <= {limit!r}"
    assert Bound("registers", "<=", 64.0).shown == "registers <= 64"
    assert Bound("latency_ms", "<=", 0.25).shown == "latency_ms <= 0.25"
    assert Bound("gain", ">=", -1.234567e-06).shown == "gain >= -1.234567e-06"


def test_a_pareto_front_from_the_tables_sort_is_the_one_sorted_anew() -> None:
    """rank() reads the front from the table's kept sort (a slider move sorted every row twice):
    the same rows, in the same order, ties and unknown figures included."""
    from workbench.core.domain.objective import MetricTable, pareto_front

    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(0, 30))
        trials = [ok(i, latency_ms=float(rng.choice([0.5, 1.0, 2.0])), memory_mb=float(rng.choice([1.0, 2.0, 5.0])))
                  if rng.random() < 0.8 else failed(i) for i in range(n)]
        table = MetricTable.from_trials(trials)
        latency, memory = table.column("latency_ms"), table.column("memory_mb")
        mask = rng.random(n) < 0.7
        assert pareto_front(latency, memory, mask, table.pareto_order()).tolist() == \
            pareto_front(latency, memory, mask).tolist()


def test_a_weighted_metric_without_a_direction_is_left_out_of_the_score_and_said() -> None:
    """A file's weight whose direction is missing: ranked as smaller-is-better, the window
    recommended the config with the least merit without anyone having said that is good."""
    trials = [ok(0, latency_ms=1.0, merit=0.0), ok(1, latency_ms=1.1, merit=9.0), ok(2, latency_ms=1.2, merit=4.0)]
    r = rank(trials, weights=Weights({"latency_ms": 1.0, "merit": 5.0}))
    assert r.undirected == ("merit",) and list(r.weights) == ["latency_ms"]
    assert list(r.order) == [0, 1, 2]  # by latency alone
    assert "merit is weighted but has no direction, so it does not count" in r.explain(0)
    chosen = rank(trials, weights=Weights({"latency_ms": 1.0, "merit": 5.0}, {"merit": 1}))
    assert chosen.undirected == () and chosen.best == 1 and "direction" not in chosen.explain(1)
    alone = rank(trials, weights=Weights({"latency_ms": 0.0, "merit": 1.0}))
    assert alone.best is None and "merit is weighted but has no direction" in alone.why_none()
    assert "merit is weighted but has no direction" in alone.explain(0)
    # a direction the naming conventions give counts as given
    assert rank([ok(0, latency_ms=1.0, gflops_w=2.0)], weights=Weights({"gflops_w": 1.0})).undirected == ()


def test_a_weight_on_a_metric_every_trial_reports_alike_is_said_to_rank_nothing() -> None:
    """A memory weight on configs of one footprint moved every score and no ranking, unexplained."""
    trials = [ok(0, latency_ms=1.0, memory_mb=134.2), ok(1, latency_ms=2.0, memory_mb=134.2)]
    r = rank(trials, weights=Weights({"latency_ms": 1.0, "memory_mb": 0.5}))
    assert r.constant == ("memory_mb",) and list(r.order) == [0, 1]
    assert r.explain(0).endswith("; memory_mb is the same for every successful trial, so its weight ranks nothing")
    varied = rank([*trials, ok(2, latency_ms=3.0, memory_mb=50.0)], weights=Weights({"latency_ms": 1.0, "memory_mb": 0.5}))
    assert varied.constant == () and "ranks nothing" not in varied.explain(0)
    alone = rank(trials, weights=Weights({"memory_mb": 1.0}))  # the only weight: nothing beside it to say it of
    assert alone.constant == ()
    # but the pick is then the tie-break's, the fastest: it said "lowest memory (134.2) among 2"
    assert alone.explain(0) == ("fastest among 2 feasible configs: memory_mb is the same for every successful "
                                "trial, so its weight ranks nothing and latency decides")
    assert alone.explain(1).startswith("2nd fastest among 2 feasible configs: memory_mb is the same")
    # a config measured again is one config, at its own place: it read "4th fastest among 3"
    again = [*trials, ok(2, latency_ms=1.5, memory_mb=134.2), ok(3, latency_ms=0.9, memory_mb=134.2)]
    again[3] = Trial(3, again[0].config, again[3].measurement)
    places = rank(again, weights=Weights({"memory_mb": 1.0}))
    assert [places.explain(row).split(" among")[0] for row in range(4)] == \
        ["fastest", "3rd fastest", "2nd fastest", "fastest"], [places.explain(row) for row in range(4)]
    # each config at its fastest measurement's place, and two of one latency share it
    twice = [ok(0, latency_ms=1.0, memory_mb=8.0), ok(1, latency_ms=0.95, memory_mb=8.0)]
    twice.append(Trial(2, twice[0].config, Measurement(Status.OK, {"latency_ms": 0.9, "memory_mb": 8.0})))
    places = rank(twice, weights=Weights({"memory_mb": 1.0}))
    assert [places.explain(row).split(" among")[0] for row in range(3)] == ["fastest", "2nd fastest", "fastest"]
    level = [ok(0, latency_ms=1.0, memory_mb=8.0), ok(1, latency_ms=1.0, memory_mb=8.0), ok(2, latency_ms=2.0, memory_mb=8.0)]
    places = rank(level, weights=Weights({"memory_mb": 1.0}))
    assert [places.explain(row).split(" among")[0] for row in range(3)] == ["fastest", "fastest", "3rd fastest"]
    # and the notes said beside a ranking are said here too (a weight with no direction)
    undirected = [ok(0, latency_ms=1.0, memory_mb=8.0, merit=1.0), ok(1, latency_ms=2.0, memory_mb=8.0, merit=2.0)]
    said = rank(undirected, weights=Weights({"memory_mb": 1.0, "merit": 1.0})).explain(0)
    assert said.startswith("fastest among 2") and "merit is weighted but has no direction" in said, said
    # one successful trial, or every weighted metric alike: nothing ranks, and saying that one of
    # them "ranks nothing" would be said at the first trial of every run
    assert rank(trials[:1], weights=Weights({"latency_ms": 1.0, "memory_mb": 0.5})).constant == ()
    same = [ok(0, latency_ms=1.0, memory_mb=8.0), ok(1, latency_ms=1.0, memory_mb=8.0)]
    assert rank(same, weights=Weights({"latency_ms": 1.0, "memory_mb": 0.5})).constant == ()


def test_the_comparison_with_the_default_says_when_the_constraints_exclude_it() -> None:
    """"0.7% slower than the default" read as if the tuned pick were worse than a usable default."""
    trials = [ok(0, latency_ms=1.0, registers=144.0), ok(1, latency_ms=1.007, registers=96.0)]
    default = trials[0].config.id
    r = rank(trials, Constraints(extra=("registers <= 128",)), default=default)
    assert r.explain(1).endswith("; 0.7% slower than the default, which the constraints exclude")
    assert rank(trials, default=trials[1].config.id).explain(0).endswith("; 0.7% faster than the default")


def test_a_metric_named_as_kernel_tuner_records_it_is_told_our_name() -> None:
    """``--objectives latency_ms,GFLOP/s`` got the generic "no trial reports it", where a weight or
    a constraint so named was told the name the figures are recorded under."""
    from workbench.core.domain.metrics import check_metrics

    with pytest.raises(WorkbenchError, match=r"metric 'GFLOP/s': no trial reports it .* \(metrics are recorded under "
                                             r"names like 'gflops'\)"):
        check_metrics(["latency_ms", "GFLOP/s"], ["latency_ms", "gflops"])


def test_the_explanation_counts_a_config_measured_twice_once() -> None:
    """Two sessions of one GPU pooled (an import and a replay of it) said "among 4260 feasible
    configs", 4201 + 59, though the 59 were among the 4201: rows were counted, not configs."""
    again = Trial(3, Config({"x": 1}), Measurement(Status.OK, {"latency_ms": 2.1}))
    ranking = rank([ok(0, latency_ms=1.0), ok(1, latency_ms=2.0), ok(2, latency_ms=3.0), again])
    assert ranking.n_feasible == 4 and ranking.feasible_configs() == 3
    assert ranking.explain(ranking.best) == "lowest latency among 3 feasible configs"


def test_among_equal_scores_the_faster_config_is_recommended_then_the_earlier() -> None:
    """A score of metrics other than latency ties between configs of very different speed (the
    most accurate ones): the earliest evaluated was recommended, a 1.8 ms config beside one of
    1.0 ms with the same score."""
    trials = [ok(0, latency_ms=1.8, quality=1.0), ok(1, latency_ms=3.0, quality=0.5),
              ok(2, latency_ms=1.0, quality=1.0), ok(3, latency_ms=1.0, quality=1.0)]
    r = rank(trials, Constraints(), Weights({"latency_ms": 0, "quality": 1}))
    assert r.score[0] == r.score[2] == r.score[3]
    assert r.order.tolist() == [2, 3, 0, 1] and r.best == 2


def test_one_bound_as_text_and_a_row_outside_the_ranking_are_said_not_misread() -> None:
    """``Constraints(extra="latency_ms <= 2")`` was read letter by letter ("constraint 'l'"), and
    ``Ranking.explain(-1)`` explained the last trial as if asked for it."""
    from workbench.core.domain.objective import Bound, Constraints, rank
    from workbench.core.errors import WorkbenchError

    assert Constraints(extra="latency_ms <= 2").extra == (Bound("latency_ms", "<=", 2.0),)
    assert Constraints(extra=Bound("registers", "<=", 32.0)).extra == (Bound("registers", "<=", 32.0),)
    trials = [ok(0, latency_ms=1.0), ok(1, latency_ms=2.0)]
    ranking = rank(trials)
    assert ranking.explain(1).startswith("2nd lowest latency")
    for row in (-1, 2):
        with pytest.raises(WorkbenchError, match=rf"row {row}: the ranking has rows 0 to 1"):
            ranking.explain(row)
