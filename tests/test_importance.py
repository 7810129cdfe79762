"""Slot importance (PED-ANOVA through Optuna) and per-value latency distributions.

Trials are generated from known latency laws over a real search space, so the expected ordering
of the slots is known in advance: a slot that drives latency must outrank one that does not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.core.domain.importance import (
    MIN_TRIALS,
    SCORE,
    session_importance,
    slot_importance,
    value_distributions,
)
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.objective import Constraints
from workbench.core.domain.session import Session
from workbench.core.domain.space import SearchSpace, Slot

SPACE = SearchSpace([
    Slot("block", (32, 64, 128, 256, 512, 1024), "launch"),
    Slot("vec", (1, 2, 4), "memory"),
    Slot("unroll", (False, True), "compute"),
    Slot("mode", ("tree", "atomic", "warp"), "reduction"),
])
NAMES = list(SPACE.names)
DOMAINS = {s.name: list(s.values) for s in SPACE.slots}


def law(config, rng: np.random.Generator) -> float:
    """block matters a lot (best at 256), vec somewhat, unroll and mode not at all (noise only)."""
    block = abs(math.log2(config["block"]) - 8) * 0.6
    vec = {1: 0.3, 2: 0.1, 4: 0.0}[config["vec"]]
    return float(np.exp(block + vec) * (1 + 0.01 * rng.standard_normal()))


def make_trials(n: int, seed: int = 0, fail=None, memory=None) -> list[Trial]:
    rng = np.random.default_rng(seed)
    configs = [SPACE.config({name: s.values[rng.integers(len(s.values))] for name, s in zip(NAMES, SPACE.slots)})
               for _ in range(n)]
    trials = []
    for i, config in enumerate(configs):
        if fail is not None and fail(config):
            measurement = Measurement.failure(Status.LAUNCH_ERROR, "too many resources requested")
        else:
            metrics = {"latency_ms": law(config, rng)}
            if memory is not None:
                metrics["memory_mb"] = memory(config)
            measurement = Measurement(Status.OK, metrics)
        trials.append(Trial(i, config, measurement))
    return trials


def test_the_slot_that_drives_latency_ranks_first_and_noise_slots_last() -> None:
    trials = make_trials(300)
    for target in (SCORE, "latency_ms"):
        imp = slot_importance(trials, NAMES, target=target, domains=DOMAINS)
        assert imp.available and imp.reason == ""
        assert sum(imp.shares.values()) == pytest.approx(1.0)
        order = list(imp.shares)
        assert order[0] == "block"
        assert imp.shares["block"] > imp.shares["vec"] > max(imp.shares["unroll"], imp.shares["mode"])
        assert imp.n_trials == 300


def test_importance_is_deterministic() -> None:
    trials = make_trials(400, seed=5)
    a = slot_importance(trials, NAMES, domains=DOMAINS)
    b = slot_importance(list(reversed(trials)), NAMES, domains=DOMAINS)
    assert a.shares == pytest.approx(b.shares, abs=1e-9)
    assert slot_importance(trials, NAMES, domains=DOMAINS).shares == a.shares


def test_too_few_trials_give_no_figures_and_say_why() -> None:
    imp = slot_importance(make_trials(MIN_TRIALS - 1), NAMES)
    assert not imp.available and imp.shares == {}
    assert f"at least {MIN_TRIALS}" in imp.reason
    # failures do not count towards the latency minimum (but do for the score)
    trials = make_trials(60, fail=lambda c: c["block"] != 256)
    ok = sum(t.ok for t in trials)
    assert 2 <= ok < MIN_TRIALS
    imp = slot_importance(trials, NAMES, target="latency_ms")
    assert not imp.available and imp.n_trials == ok and "successful" in imp.reason
    assert slot_importance(trials, NAMES, target=SCORE).n_trials == 60


def test_failures_count_as_worst_for_the_score_and_are_left_out_for_latency() -> None:
    # mode == "atomic" always fails: it matters for getting a usable config, not for latency
    trials = make_trials(400, seed=2, fail=lambda c: c["mode"] == "atomic")
    score = slot_importance(trials, NAMES, target=SCORE, domains=DOMAINS)
    latency = slot_importance(trials, NAMES, target="latency_ms", domains=DOMAINS)
    assert score.n_trials == 400 and latency.n_trials == sum(t.ok for t in trials)
    assert score.shares["mode"] > 2 * latency.shares["mode"]
    assert latency.shares["mode"] < latency.shares["block"]


def test_constraints_shape_the_score_importance() -> None:
    # unroll doubles memory; with a memory ceiling only unroll=False is feasible, so unroll matters for the score
    trials = make_trials(400, seed=3, memory=lambda c: 200.0 if c["unroll"] else 100.0)
    free = slot_importance(trials, NAMES, target=SCORE, domains=DOMAINS)
    capped = slot_importance(trials, NAMES, target=SCORE, domains=DOMAINS,
                             constraints=Constraints(max_memory_mb=150.0))
    assert capped.shares["unroll"] > 3 * free.shares["unroll"]


def test_nothing_feasible_gives_a_reason() -> None:
    trials = make_trials(100, seed=4, memory=lambda c: 500.0)
    imp = slot_importance(trials, NAMES, constraints=Constraints(max_memory_mb=1.0))
    assert not imp.available and "feasible" in imp.reason


@pytest.mark.parametrize("n, feasible", [(100, 7), (200, 14), (82, 7), (100, 9)])
def test_a_feasible_count_that_rounds_up_in_floating_point_still_makes_the_top_group(n: int, feasible: int) -> None:
    """7 feasible of 100 gave no figures ("no slot separates the best trials"): the top group was
    handed to Optuna as the quantile 7 / 100, of which it keeps ceil(0.07 * 100) = 8 trials, the
    8th an infeasible one scored 0 and tied with every other: all 100 were "the best"."""
    trials = make_trials(n, seed=1)
    latencies = sorted(t.metric("latency_ms") for t in trials)
    limit = (latencies[feasible - 1] + latencies[feasible]) / 2
    imp = slot_importance(trials, NAMES, target=SCORE, domains=DOMAINS, constraints=Constraints(max_latency_ms=limit))
    assert imp.available and imp.reason == "", imp.reason
    assert sum(imp.shares.values()) == pytest.approx(1.0) and max(imp.shares.values()) > 0


def test_large_sessions_are_subsampled() -> None:
    """How long this takes is bench/core_speed.py's row ``importance``."""
    trials = make_trials(5000, seed=6)
    imp = slot_importance(trials, NAMES, domains=DOMAINS, max_trials=2000)
    assert imp.n_trials == 2000 and list(imp.shares)[0] == "block"
    # said wherever the shares are ("2000 trials" of 5000 read as all of them)
    assert imp.sampled_from == 5000 and imp.counted == "2000 trials (a seeded sample of the 5000)"
    assert imp.to_dict()["sampled_from"] == 5000
    whole = slot_importance(trials[:300], NAMES, domains=DOMAINS)
    assert whole.sampled_from is None and whole.counted == "300 trials"


def test_value_distributions_per_slot_value() -> None:
    trials = make_trials(200, seed=7, fail=lambda c: c["block"] == 1024 and c["vec"] == 4)
    dists = value_distributions(trials, NAMES, DOMAINS)
    assert set(dists) == set(NAMES)
    blocks = dists["block"]
    assert [s.value for s in blocks] == [v for v in DOMAINS["block"] if any(t.config["block"] == v for t in trials)]
    for stats in blocks:
        rows = [t for t in trials if t.config["block"] == stats.value]
        assert stats.n_trials == len(rows)
        assert stats.n_failed == sum(t.status.is_failure for t in rows)
        lat = np.array([t.metric("latency_ms") for t in rows if t.ok])
        assert stats.n_ok == lat.size
        if lat.size:
            assert stats.quartiles() == pytest.approx(tuple(np.percentile(lat, [25, 50, 75])))
    best = min((s for s in blocks if s.n_ok), key=lambda s: s.quartiles()[1])
    assert best.value == 256


def test_aborted_trials_are_counted_apart_from_failures_per_value() -> None:
    """The box plot's labels said "3 failed" for candidates only stopped early under the latency
    limit, beside a Failures tab that said 0 failed."""
    trials = make_trials(60, seed=8, fail=lambda c: c["vec"] == 4)
    for i, t in enumerate(trials):
        if t.ok and t.config["block"] == 1024:
            trials[i] = Trial(t.index, t.config, Measurement(Status.ABORTED, {"latency_bound_ms": 9.0}, "aborted above 9 ms"))
    for stats in value_distributions(trials, NAMES, DOMAINS)["block"]:
        rows = [t for t in trials if t.config["block"] == stats.value]
        assert stats.n_aborted == sum(t.status is Status.ABORTED for t in rows)
        assert stats.n_failed == sum(t.status.is_failure for t in rows)
        assert stats.n_ok + stats.n_failed + stats.n_aborted == stats.n_trials
    assert any(s.n_aborted for s in value_distributions(trials, NAMES, DOMAINS)["block"])


def test_session_importance_covers_every_slot() -> None:
    session = Session(kernel="synthetic", space=SPACE, trials=make_trials(120, seed=8))
    result = session_importance(session)
    assert set(result) == {SCORE, "latency_ms"}
    assert set(result[SCORE].shares) == set(NAMES)
    assert result[SCORE].to_dict()["method"].startswith("PED-ANOVA")


def test_a_slot_declared_with_one_value_is_left_out_not_shown_at_zero() -> None:
    """A recording's parameter it never varied (tune_params ``[15]``) was a 0 % bar beside the
    slots that were tuned, read as a finding about a slot nobody tuned."""
    space = SearchSpace([*SPACE.slots, Slot("filter", (15,), "compute")])
    trials = [Trial(t.index, space.config({**t.config.to_dict(), "filter": 15}), t.measurement)
              for t in make_trials(200)]
    session = Session(kernel="synthetic", space=space, trials=trials)
    imp = session_importance(session)[SCORE]
    assert imp.available and "filter" not in imp.shares and imp.fixed == ("filter",)
    assert imp.to_dict()["fixed"] == ["filter"] and set(imp.shares) == set(NAMES)


def test_a_numeric_slot_of_many_values_is_weighed_as_a_range_not_as_categories() -> None:
    """Each of 2,000 values seen once at most, a slot weighed as categories looked uninformative
    whatever it did: the slot that decided the latency had 0.5% of the importance, an idle one
    31%. Near values count as near now."""
    from workbench.core.domain.space import Config

    rng = np.random.default_rng(0)
    trials = []
    for index in range(60):
        i, j, k = int(rng.integers(0, 2000)), int(rng.integers(1, 4)), float(rng.choice([0.5, 1.5]))
        latency = 1.0 + ((i - 1200) / 1000.0) ** 2 + 0.01 * j
        trials.append(Trial(index, Config({"i": i, "j": j, "k": k}), Measurement(Status.OK, {"latency_ms": latency})))
    domains = {"i": list(range(2000)), "j": [1, 2, 3], "k": [0.5, 1.5]}
    shares = slot_importance(trials, ["i", "j", "k"], target="latency_ms", domains=domains).shares
    assert shares["i"] > 0.9, shares  # (as categories: 0.19, behind the idle j's 0.68)
