"""Contract tests over every strategy (one parametrised set), plus the pruning wrapper and helpers.

Strategies run on small restricted and explicit spaces against a landscape computed here (the
replay idea: a known function of the config, with a failing region), never against a mock.
"""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest

from workbench.search.tpe import FAILURE_VALUE

from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.space import Config, SearchSpace, Slot
from workbench.search._common import latency_rank
from workbench.search.base import (DEFAULT_STRATEGY, STRATEGIES, OptionsConflict, Strategy, create_strategy,
                                   strategy_class)
from workbench.search.pruning import Pruned, with_pruning

SLOTS = [
    Slot("block", (32, 64, 96, 128, 192, 256), "launch"),
    Slot("items", (1, 2, 4, 8), "launch"),
    Slot("vec", (1, 2, 4), "memory"),
    Slot("algo", ("atomic", "tree", "warp"), "reduction"),
    Slot("unroll", (False, True), "compute"),
]
RESTRICTIONS = ["block * items <= 1024", "algo != 'atomic' or vec == 1"]


def landscape(config) -> float | None:
    """Latency in ms of a made-up kernel; None where it 'fails to compile' (a whole region)."""
    if config["algo"] == "warp" and config["block"] == 32 and config["items"] >= 4:
        return None
    t = 1.0 + 0.3 * abs(math.log2(config["block"] / 128)) + 0.2 * abs(math.log2(config["items"] / 4))
    t += 0.15 * abs(math.log2(config["vec"] / 4)) + {"atomic": 0.6, "tree": 0.1, "warp": 0.0}[config["algo"]]
    return t - (0.05 if config["unroll"] else 0.0)


def predict(config) -> float:
    """A perfect cost model of the landscape (module-level, so the wrapper pickles)."""
    t = landscape(config)
    return math.inf if t is None else t


def measure(index: int, config) -> Trial:
    t = landscape(config)
    m = Measurement(Status.OK, {"latency_ms": t}) if t is not None else Measurement.failure(Status.COMPILE_ERROR, "nope")
    return Trial(index, config, m)


@pytest.fixture(scope="module")
def space() -> SearchSpace:
    return SearchSpace(SLOTS, restrictions=RESTRICTIONS)


@pytest.fixture(scope="module")
def explicit(space) -> SearchSpace:
    points = [c for k, c in enumerate(space) if k % 3 != 1]  # a recording with holes
    return SearchSpace.explicit(SLOTS, points)


ALL = sorted(STRATEGIES)


def make(name: str, space: SearchSpace, seed: int = 0) -> Strategy:
    if name == "pruned-agents":
        return Pruned(create_strategy("agents", space, seed=seed), predict, 0.5)
    return create_strategy(name, space, seed=seed)


CASES = ALL + ["pruned-agents"]


def drive(strategy: Strategy, n: int, budget: int | None = None) -> list[Config]:
    """The engine's loop in miniature: ask, check the contract, measure, tell; stop on []."""
    proposed: list[Config] = []
    seen: set[str] = set()
    while budget is None or len(proposed) < budget:
        batch = strategy.ask(n)
        if not batch:
            break
        ids = [c.id for c in batch]
        assert len(ids) == len(set(ids)), "duplicate within one ask"
        assert not seen & set(ids), "proposed a config that was already proposed or told"
        assert len(batch) <= n
        for config in batch:
            assert strategy.space.is_valid(config), f"invalid config {config}"
        seen.update(ids)
        proposed.extend(batch)
        strategy.tell([measure(len(proposed) - len(batch) + k, c) for k, c in enumerate(batch)])
    return proposed


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("which", ["restricted", "explicit"])
def test_valid_unique_and_complete_until_exhausted(name, which, space, explicit):
    target = space if which == "restricted" else explicit
    proposed = drive(make(name, target, seed=3), n=3)
    assert len(proposed) == target.count(), "[] before the space was exhausted, or proposals beyond it"
    assert {c.id for c in proposed} == {c.id for c in target}


@pytest.mark.parametrize("name", CASES)
def test_reproducible_for_a_seed(name, space):
    a = [c.id for c in drive(make(name, space, seed=7), n=2, budget=30)]
    b = [c.id for c in drive(make(name, space, seed=7), n=2, budget=30)]
    assert a == b
    if name != "grid":
        c = [c.id for c in drive(make(name, space, seed=8), n=2, budget=30)]
        assert a != c
        # every seed the run takes is its own run: tpe took 7 and 7 + 2**32 as one (Optuna's 32 bits)
        d = [c.id for c in drive(make(name, space, seed=7 + 2**32), n=2, budget=30)]
        assert sum(x == y for x, y in zip(a, d)) <= len(a) // 2, (a, d)  # (tpe's start: 16 of 30 alike)


@pytest.mark.parametrize("name", CASES)
def test_picklable_mid_run_and_continues_identically(name, space):
    strategy = make(name, space, seed=5)
    drive(strategy, n=2, budget=20)
    json.dumps(strategy.state())  # saved with the session
    clone = pickle.loads(pickle.dumps(strategy))
    assert [c.id for c in clone.ask(4)] == [c.id for c in strategy.ask(4)]


@pytest.mark.parametrize("name", CASES)
def test_never_proposes_what_a_reopened_session_measured(name, space):
    known = space.sample(np.random.default_rng(0), 40)
    strategy = make(name, space, seed=1)
    strategy.warm_start([measure(k, c) for k, c in enumerate(known)])
    rest = drive(strategy, n=4)
    assert not {c.id for c in rest} & {c.id for c in known}
    assert len(rest) == space.count() - len(known)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("how", ["tell", "warm_start"])
def test_a_trial_with_a_value_outside_the_domains_is_left_out(name, how, space):
    """A trial measured before a domain was narrowed (block 48 where 32, 64, 96... remain) has no
    place in what a strategy learns: told directly (a script, not the engine, which filters such
    trials), six strategies raised a bare KeyError from inside their encoders."""
    strategy = make(name, space, seed=2)
    first = strategy.ask(3)
    outside = Config({**first[0], "block": 48})
    told = [measure(0, c) for c in first] + [Trial(3, outside, Measurement(Status.OK, {"latency_ms": 0.5}))]
    getattr(strategy, how)(told)
    assert outside.id not in strategy.measured
    rest = drive(strategy, n=4)
    assert {c.id for c in rest} | {c.id for c in first} == {c.id for c in space}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("seed", [-1, 2**63, None, 1.5, "3", True])
def test_a_seed_that_is_not_one_is_one_clear_line(name, seed, space):
    """NumPy refused these with a traceback from inside the generator (None drew an unseeded run
    that no seed repeats), and the portfolio and TPE failed on None in their own arithmetic."""
    with pytest.raises(WorkbenchError, match=r"a seed is an integer from 0 to 2\*\*63-1"):
        make(name, space, seed=seed)


def test_the_largest_seed_and_numpys_integers_run_every_strategy(space):
    for name in CASES:
        for seed in (2**63 - 1, np.int64(5), np.int32(5)):  # (the portfolio's arithmetic overflowed an int64)
            assert len(make(name, space, seed=seed).ask(2)) == 2, (name, seed)


@pytest.mark.parametrize("name", [n for n in CASES if n not in ("grid", "random")])
def test_learns_to_avoid_a_failing_region_and_beats_random(name, space):
    """Over seeds, a learning strategy finds a better config than random search at a small budget."""
    optimum = min(t for c in space if (t := landscape(c)) is not None)

    def mean_fraction(strategy_name: str) -> float:
        fractions = []
        for seed in range(6):
            found = [landscape(c) for c in drive(make(strategy_name, space, seed=seed), n=1, budget=30)]
            fractions.append(optimum / min(t for t in found if t is not None))
        return float(np.mean(fractions))

    assert mean_fraction(name) >= mean_fraction("random") - 0.01


@pytest.mark.parametrize("name", ALL)
def test_unknown_option_is_one_clear_error(name, space):
    with pytest.raises(WorkbenchError, match="no option"):
        create_strategy(name, space, no_such_option=1)


def test_registry_and_default():
    assert DEFAULT_STRATEGY in STRATEGIES
    for name in STRATEGIES:
        cls = strategy_class(name)
        assert cls.name == name and cls.description
        for option in cls.OPTIONS:
            assert option.description  # the declaration drives CLI help, docs and the GUI form


# --- pruning ----------------------------------------------------------------------------------
def test_pruned_measures_only_the_best_predicted_fraction(space):
    predicted = {c.id: float(k) for k, c in enumerate(space)}  # any total order will do
    inner = create_strategy("random", space, seed=0)
    pruned = Pruned(inner, lambda c: predicted[c.id], keep_fraction=0.25)
    batch = pruned.ask(4)
    assert len(batch) == 4
    dropped = list(pruned.reserve)
    assert len(dropped) == 12
    assert max(predicted[c.id] for c in batch) < min(predicted[cid] for cid in dropped)
    assert set(dropped) <= inner.measured  # the inner strategy was told they were skipped


def test_pruned_reserve_keeps_the_whole_space_reachable(space):
    pruned = with_pruning(create_strategy("random", space, seed=0), predict, 0.3)
    assert isinstance(pruned, Pruned)
    assert len(drive(pruned, n=5)) == space.count()


@pytest.mark.parametrize("fraction", [1e-320, 1e-300, 1e-9])
def test_a_tiny_pruning_fraction_asks_for_the_unmeasured_space_at_most(space, fraction):
    """n / 1e-320 is infinite: math.ceil of it was an OverflowError traceback out of a run started
    with --prune 1e-320 (and 1e-300 asked the inner strategy for 10**300 proposals)."""
    pruned = Pruned(create_strategy("random", space, seed=0), predict, fraction)
    batch = pruned.ask(2)  # the whole space ranked, the best one measured (at least one per batch)
    assert len(batch) == 1 and len(pruned.reserve) == space.count() - 1
    assert len(drive(pruned, n=2)) == space.count() - 1  # the reserve keeps the rest reachable


def test_pruning_ranks_the_predictions_by_the_runs_objective_not_by_their_latency(space):
    """Under a limit the model's fastest predictions are the ones that miss it: pruning keeps the
    proposal the objective ranks best (the fastest predicted to meet the limit), and ranks its
    reserve by the objective in force when the reserve is used."""
    from workbench.core.domain.objective import Bound, Constraints
    from workbench.core.domain.search_objective import Objective

    order = {c.id: k for k, c in enumerate(space)}

    def predicted(config: Config) -> Measurement:  # the faster, the more registers
        k = order[config.id]
        return Measurement(Status.OK, {"latency_ms": 1.0 + k, "registers": 200.0 - k})

    pruned = Pruned(create_strategy("random", space, seed=0), predicted, keep_fraction=1e-9)  # ranks all
    pruned.set_objective(Objective(Constraints(extra=(Bound("registers", "<=", 190.0),))))
    assert [order[c.id] for c in pruned.ask(1)] == [10]  # latency alone would have kept 0
    assert [order[c.id] for c in pruned.ask(2)] == [11, 12]  # the reserve, under the limit
    pruned.set_objective(Objective())  # the limit lifted: the reserve's fastest come first
    assert [order[c.id] for c in pruned.ask(2)] == [0, 1]
    # a predictor of latency alone still works (a float, inf for an expected failure)
    plain = Pruned(create_strategy("random", space, seed=0),
                   lambda c: math.inf if order[c.id] == 0 else float(order[c.id]), keep_fraction=1e-9)
    assert [order[c.id] for c in plain.ask(1)] == [1]


def test_pruning_a_front_keeps_predictions_across_it_and_ignores_bounds_the_model_cannot_judge(space):
    """Two defects of ranking by one cost: a Pareto run kept one end of the predicted front (the
    fastest, most registers), and a bound on a metric the model does not predict (a device's
    power) counted as missed for every prediction, so all tied and configs were kept by id."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective
    order = {c.id: k for k, c in enumerate(space)}
    assert len(order) >= 40

    def predicted(config: Config) -> Measurement:  # a front: the faster, the more registers
        k = order[config.id]
        return Measurement(Status.OK, {"latency_ms": 1.0 + k, "registers": 200.0 - 2 * k + (k % 2) * 5})

    pruned = Pruned(create_strategy("random", space, seed=0), predicted, keep_fraction=20 / len(order))
    pruned.set_objective(Objective(objectives=("latency_ms", "registers")))
    # the whole space ranked, 20 kept: all on the predicted front (every odd k is dominated by k - 1)
    kept = [order[c.id] for c in pruned.ask(20)]
    assert len(kept) == 20 and all(k % 2 == 0 for k in kept) and max(kept) > 40  # not one end of it
    # one kept of each batch of 10 proposals: the batch's fastest is always on its front, so a
    # latency tie-break kept it every time; kept at random among the batch's front, it is not
    spread = Pruned(create_strategy("random", space, seed=0), predicted, keep_fraction=0.1)
    spread.set_objective(Objective(objectives=("latency_ms", "registers")))
    kept_fastest = 0
    for _ in range(12):
        before = set(spread.reserve)
        (config,) = spread.ask(1)
        dropped = set(spread.reserve) - before
        assert len(dropped) == 9
        kept_fastest += order[config.id] < min(order[cid] for cid in dropped)
    assert kept_fastest <= 9
    unjudged = Pruned(create_strategy("random", space, seed=0), predicted, keep_fraction=1e-9)
    unjudged.set_objective(Objective(Constraints(extra=("power_w<=250",))))
    assert [order[c.id] for c in unjudged.ask(3)] == [0]  # by predicted latency, as without the bound


def test_pruning_a_front_where_no_prediction_meets_the_bounds_ranks_by_the_miss(space):
    """``tune --prune 0.5 --objectives latency_ms,registers --max-latency-ms 5`` ended in a
    traceback after one trial: a batch with no prediction under the bound had no row to rank, and
    shaping the empty array by its values raised."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective
    order = {c.id: k for k, c in enumerate(space)}

    def predicted(config: Config) -> Measurement:  # all slower than the bound, by how much: the index
        return Measurement(Status.OK, {"latency_ms": 10.0 + order[config.id], "registers": 64.0})

    pruned = Pruned(create_strategy("random", space, seed=0), predicted, keep_fraction=1e-9)
    pruned.set_objective(Objective(Constraints(max_latency_ms=5.0), objectives=("latency_ms", "registers")))
    assert [order[c.id] for c in pruned.ask(1)] == [0]  # the nearest miss first


def test_a_prediction_is_ranked_by_how_many_others_dominate_it_in_memory_bounded_blocks():
    from workbench.search.pruning import pareto_ranks

    rows = np.array([[1.0, 3.0], [2.0, 2.0], [2.0, 4.0], [3.0, 5.0], [np.nan, 0.0], [2.0, 2.0]])
    assert pareto_ranks(rows) == pareto_ranks(rows, chunk=2) == [0, 0, 3, 4, 0, 0]  # NaN is worst; equal rows do not dominate each other


def test_pruned_forwards_the_engines_objective(space):
    pruned = Pruned(create_strategy("agents", space), lambda c: 1.0, 0.5)
    pruned.set_objective(lambda trial: 42.0)
    assert pruned.inner.objective(measure(0, next(iter(space)))) == 42.0


def test_pruning_rejects_a_bad_fraction_and_passes_through_without_model(space):
    with pytest.raises(WorkbenchError, match="keep_fraction"):
        Pruned(create_strategy("random", space), lambda c: 1.0, 0.0)
    strategy = create_strategy("random", space)
    assert with_pruning(strategy, None) is strategy


# --- helpers ------------------------------------------------------------------------------------
def test_rank_reward_is_centred_ties_shared_failures_last():
    r = latency_rank([3.0, 1.0, math.inf, 2.0, math.inf])
    assert r[1] == 1.0 and r[3] == 0.5 and r[0] == 0.0
    assert r[2] == r[4] == -0.75
    assert latency_rank([5.0]).tolist() == [0.0]


def test_tpe_tells_optuna_what_was_actually_measured(space):
    tpe = create_strategy("tpe", space, seed=0, startup=3)
    drive(tpe, n=1, budget=25)
    complete = [t for t in tpe.study.trials if t.state.name == "COMPLETE"]
    assert len(complete) == 25  # one complete Optuna trial per measurement, repaired ones included
    for t in complete:
        config = Config(t.params)
        assert space.is_valid(config)
        expected = landscape(config)
        assert t.value == (expected if expected is not None else pytest.approx(FAILURE_VALUE))


def test_repair_tries_a_bounded_part_of_a_huge_slot_and_still_finds_a_valid_config():
    """Repair's one-slot pass tried every value of every slot: with a slot of a million and a
    restriction that rules out most of them, each proposal built and checked a million configs."""
    from workbench.core.domain.space import ProductSpace
    from workbench.search._common import REPAIR_VALUES_PER_SLOT

    size = 1_000_000
    space = ProductSpace([Slot("n", tuple(range(size))), Slot("block", (32, 64, 128, 256))],
                         restrictions=["n * block <= 64000 or n % 1000 == 7"])
    strategy = create_strategy("tpe", space, seed=0)
    weighed = []
    step_cost = strategy.coder.step_cost
    strategy.coder.step_cost = lambda k, a, b: weighed.append(k) or step_cost(k, a, b)  # type: ignore[method-assign]
    wished = (500_000, 3)  # n = 500000 with block 256: invalid; the nearest valid n ending in 007
    config = strategy.repair(wished)
    assert config is not None and space.is_valid(config)
    assert len(weighed) <= REPAIR_VALUES_PER_SLOT + 3  # the moves considered, not a million
    assert abs(config["n"] - 500_000) <= REPAIR_VALUES_PER_SLOT // 2 and config["block"] == 256
    small = ProductSpace([Slot("a", tuple(range(REPAIR_VALUES_PER_SLOT + 1))), Slot("b", (1, 2))],
                         restrictions=["a == 0 or b == 9"])  # a domain this short is still tried whole
    assert create_strategy("tpe", small, seed=0).repair((REPAIR_VALUES_PER_SLOT, 1)) == Config({"a": 0, "b": 2})


def test_a_walks_neighbourhood_holds_a_huge_slot_to_the_values_repair_tries(space):
    """Annealing and local search listed every one-slot move at each step: a slot of two million
    values made each step build and check two million configs (15 s a proposal). A space without
    such a slot gets the space's own neighbours, so runs on it are unchanged."""
    from workbench.core.domain.space import ProductSpace
    from workbench.search._common import REPAIR_VALUES_PER_SLOT

    huge = ProductSpace([Slot("n", tuple(range(2_000_000))), Slot("b", (1, 2, 4), "memory"),
                         Slot("mode", tuple(f"m{i}" for i in range(1000)), "compute")],
                        restrictions=["n % 2 == 0 or b == 1"])
    base = Config({"n": 1_000_000, "b": 2, "mode": "m5"})
    for name in ("annealing", "local"):
        strategy = create_strategy(name, huge, seed=0)
        moves = strategy.neighbourhood(base)
        assert all(huge.is_valid(m) and sum(m[k] != base[k] for k in base) == 1 for m in moves)
        near = sorted(m["n"] for m in moves if m["n"] != base["n"])
        assert near[0] >= 1_000_000 - REPAIR_VALUES_PER_SLOT and near[-1] <= 1_000_000 + REPAIR_VALUES_PER_SLOT
        assert 999_998 in near and 1_000_002 in near and 999_999 not in near  # the restriction holds
        drawn = len([m for m in moves if m["mode"] != "m5"])  # a categorical's are drawn, not all 999
        assert REPAIR_VALUES_PER_SLOT <= drawn <= REPAIR_VALUES_PER_SLOT + 1
        adjacent = strategy.neighbourhood(Config({**base, "b": 1}), adjacent_only=True)
        assert {m["n"] for m in adjacent if m["n"] != base["n"]} == {999_999, 1_000_001}
    plain = create_strategy("annealing", space, seed=0)
    config = space.sample(np.random.default_rng(0), 1)[0]
    assert plain.neighbourhood(config) == space.neighbours(config)


def test_a_small_restricted_space_is_listed_from_its_counts_not_by_walking_the_product(monkeypatch):
    """Repair's last resort listed a small restricted space by iterating it, which checks the
    restrictions at every point of the product: 84 valid configs of ten million took 23 s before
    the first proposal of every model-based strategy. The counts list it in the same order."""
    from workbench.core.domain.space import ProductSpace

    restricted = ProductSpace([Slot(f"s{i}", tuple(range(10)), ("launch", "memory")[i % 2]) for i in range(7)],
                              restrictions=["s0 + s1 + s2 + s3 + s4 + s5 + s6 == 2"])
    small = ProductSpace([Slot(f"s{i}", tuple(range(4))) for i in range(3)], restrictions=["s0 + s1 + s2 == 4"])
    assert small.in_order() == list(small)
    monkeypatch.setattr(ProductSpace, "__iter__", lambda self: pytest.fail("walked the whole product"))
    assert len(restricted.in_order()) == restricted.count() == 28
    strategy = create_strategy("local", restricted, seed=0)
    proposed: list[Config] = []
    while batch := strategy.ask(4):  # to the end, where repair's last resort draws from the listing
        strategy.tell([Trial(len(proposed) + k, c, Measurement(Status.OK, {"latency_ms": 1.0 + c["s0"]}))
                       for k, c in enumerate(batch)])
        proposed += batch
    assert sorted(c.id for c in proposed) == sorted(c.id for c in restricted.in_order())


def test_tpe_searches_a_huge_slot_by_its_value_index():
    """A categorical of a million values made every proposal take seconds (Optuna copies and weighs
    every choice per trial); such a slot is an integer over its index, whatever ``ordinal`` says,
    while short slots stay categorical."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    from workbench.core.domain.space import ProductSpace
    from workbench.search.tpe import CATEGORICAL_LIMIT

    size = 1_000_000
    huge = ProductSpace([Slot("n", tuple(range(0, 3 * size, 3))), Slot("block", (32, 64, 128))])
    tpe = create_strategy("tpe", huge, seed=0, startup=2)
    assert isinstance(tpe.distributions["n"], IntDistribution)
    assert tpe.distributions["n"].high == size - 1
    assert isinstance(tpe.distributions["block"], CategoricalDistribution)
    measured = []
    for i in range(4):
        (config,) = tpe.ask(1)
        assert huge.is_valid(config)
        measured.append(config["n"])
        tpe.tell([Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + config["n"] / size}))])
    told = [t.params["n"] for t in tpe.study.trials if t.state.name == "COMPLETE"]
    assert sorted(3 * k for k in told) == sorted(measured)  # Optuna learns the index of what was measured
    just_below = ProductSpace([Slot("n", tuple(range(CATEGORICAL_LIMIT)))])
    assert isinstance(create_strategy("tpe", just_below).distributions["n"], CategoricalDistribution)


@pytest.mark.parametrize("mode", ["optuna", "penalty", "ignore"])
def test_tpe_is_told_feasible_then_infeasible_then_failed(space, mode):
    """Failures were told as 1e30 while an infeasible trial's cost is 1e100 and up: TPE learnt
    from a compile error as if it were better than a near miss."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective

    tpe = create_strategy("tpe", space, seed=0, constraints=mode)
    tpe.set_objective(Objective(Constraints(max_latency_ms=2.0)))
    configs = list(space)[:3]
    trials = [Trial(0, configs[0], Measurement(Status.OK, metrics={"latency_ms": 1.5})),
              Trial(1, configs[1], Measurement(Status.OK, metrics={"latency_ms": 2.02})),
              Trial(2, configs[2], Measurement(Status.COMPILE_ERROR, message="no"))]
    tpe.tell(trials)
    told = [tpe._told_value(t)[0] for t in trials]
    if mode == "penalty":
        assert told[0] < told[1] < told[2] == FAILURE_VALUE
    else:  # the constraint values carry feasibility there: the values are the raw costs
        assert told[0] < told[2] and told[1] < told[2] == FAILURE_VALUE


def test_constrained_tpe_is_told_a_failure_misses_every_bound_by_more_than_any_measurement(space):
    """Optuna ranks infeasible trials by their summed violation: a failure told the violation of a
    metric it did not report (1, a miss of 100 %) ranked ahead of every config more than 100 % over
    a latency limit, and the search went where configs fail (22 of 60 failed on a recording)."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective

    tpe = create_strategy("tpe", space, seed=0, constraints="optuna")
    tpe.set_objective(Objective(Constraints(max_latency_ms=0.3)))
    configs = list(space)[:2]
    over = Trial(0, configs[0], Measurement(Status.OK, metrics={"latency_ms": 0.9}))  # 200 % over
    failed = Trial(1, configs[1], Measurement(Status.RUNTIME_ERROR, message="launch failed"))
    tpe.tell([over, failed])
    (_, measured), (_, broken) = tpe._told_value(over), tpe._told_value(failed)
    assert measured["constraints"] == [pytest.approx(2.0)] and broken["constraints"][0] > 1e90


@pytest.mark.parametrize("mode", ["penalty", "optuna", "ignore"])
def test_tpe_searching_a_front_is_told_its_constraints_in_every_mode_but_ignore(space, mode):
    """With several objectives 'penalty' told TPE the raw values and no constraint values, as
    'ignore' does: the front's search never heard of the limit."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import INFEASIBLE, Objective

    tpe = create_strategy("tpe", space, seed=0, constraints=mode)
    tpe.set_objective(Objective(Constraints(extra=("registers<=40",)), objectives=("latency_ms", "registers")))
    configs = list(space)[:4]
    trials = [Trial(0, configs[0], Measurement(Status.OK, metrics={"latency_ms": 3.0, "registers": 32})),
              Trial(1, configs[1], Measurement(Status.OK, metrics={"latency_ms": 1.0, "registers": 44})),
              Trial(2, configs[2], Measurement(Status.OK, metrics={"latency_ms": 0.5, "registers": 80})),
              Trial(3, configs[3], Measurement(Status.COMPILE_ERROR, message="no"))]
    tpe.tell(trials)
    told = [tpe._told_value(t) for t in trials]
    if mode == "penalty":
        feasible, near, far, failed = (values for values, _ in told)
        assert feasible == [3.0, 32.0] and all(v >= INFEASIBLE for v in near + far)
        assert max(near) < min(far) and max(far) < min(failed) == FAILURE_VALUE  # graded, failures last
    elif mode == "optuna":
        assert [attrs["constraints"][0] > 0 for _, attrs in told[:3]] == [False, True, True]
        # a failure violates every bound by more than any measured miss (a miss of 100 % it was told
        # looked nearer the feasible region than a config 100 % over the limit)
        assert told[3][1]["constraints"][0] > 1e90 > max(attrs["constraints"][0] for _, attrs in told[:3])
    else:
        assert [values for values, _ in told[:3]] == [[3.0, 32.0], [1.0, 44.0], [0.5, 80.0]] and not told[0][1]


# --- hybrid portfolio ---------------------------------------------------------------------------
def test_hybrid_members_learn_from_every_result_and_both_propose(space):
    hybrid = create_strategy("hybrid", space, seed=2)
    proposed = drive(hybrid, n=1, budget=40)
    ids = {c.id for c in proposed}
    model, walker = hybrid.members
    assert model.measured == walker.measured == ids  # each member was told what the other proposed
    assert len(model.study.trials) >= 40  # TPE's study holds every measurement, repaired or foreign
    assert sum(hybrid.picks) == 40 and min(hybrid.picks) > 0
    assert json.loads(json.dumps(hybrid.state()))["picks"] == {"model": hybrid.picks[0], "walker": hybrid.picks[1]}


def test_a_portfolio_of_one_strategy_in_both_roles_keeps_both_members_state(space):
    hybrid = create_strategy("hybrid", space, seed=2, model="agents", walker="agents")
    drive(hybrid, n=1, budget=30)
    state = json.loads(json.dumps(hybrid.state()))
    assert state["picks"] == {"model": hybrid.picks[0], "walker": hybrid.picks[1]} and min(hybrid.picks) > 0
    assert set(state["members"]) == {"model", "walker"} and state["members"]["model"] != state["members"]["walker"]


def test_hybrid_forwards_the_engines_objective_to_its_members(space):
    hybrid = create_strategy("hybrid", space, walker="local")
    hybrid.set_objective(lambda trial: 7.0)
    assert all(m.objective(measure(0, next(iter(space)))) == 7.0 for m in hybrid.members)


def _extremes(name: str) -> list[tuple[str, object]]:
    """(option, value) pairs at each declared extreme: a number's low and high bound, every choice,
    both values of a bool."""
    out: list[tuple[str, object]] = []
    for option in strategy_class(name).OPTIONS:
        if option.choices is not None:
            out += [(option.name, choice) for choice in option.choices]
        elif isinstance(option.default, bool):
            out += [(option.name, False), (option.name, True)]
        else:
            out += [(option.name, option.low), (option.name, option.high)]
    return out


@pytest.mark.parametrize("name", ALL)
def test_every_number_option_declares_its_bounds(name):
    for option in strategy_class(name).OPTIONS:
        if isinstance(option.default, (int, float)) and not isinstance(option.default, bool):
            assert option.low is not None and option.high is not None, f"{name}.{option.name} has no bounds"
            assert option.low <= option.default <= option.high, f"{name}.{option.name}: default out of its bounds"


#: options an extreme needs beside it, since together with the defaults it contradicts them
#: (``Strategy.options_conflict``: a genetic population of 2 has no room for the default 3-way tournament)
PARTNERS = {
    ("genetic", "population", 2): {"tournament": 2},
    ("genetic", "tournament", 1000): {"population": 1000},
    ("genetic", "elite", 1000): {"population": 1000},
    ("annealing", "t_start", 1e-06): {"t_min": 1e-09},
    ("annealing", "t_min", 10): {"t_start": 100},
}


@pytest.mark.parametrize("name,option,value", [(n, o, v) for n in ALL for o, v in _extremes(n)])
def test_documented_bounds_extremes_run(name, option, value, space):
    """Each option at each end of its documented range runs a few asks and tells without error.

    24 proposals take each strategy's other options at their defaults past every start-up phase
    (agents' and TPE's 10 random configs, genetic's first generation of 16, hybrid's 20 model-led
    evaluations); the values just outside the ranges that crashed a run (agents' elite=0 and
    init=0, genetic's tournament=0) all fail within them, as within the 40 this test once drove."""
    options = {option: value, **PARTNERS.get((name, option, value), {})}
    strategy = create_strategy(name, space, seed=2, **options)
    proposed = drive(strategy, n=4, budget=24)
    assert proposed, f"{name} with {option}={value!r} proposed nothing"


@pytest.mark.parametrize("name,options", [
    ("agents", {"elite": 0}),
    ("agents", {"probes": -3}),
    ("agents", {"spread": -1}),
    ("agents", {"learn_all": "maybe"}),
    ("agents", {"learn_all": "no"}),
    ("agents", {"learn_all": 2}),
    ("agents", {"elite": "x"}),
    ("agents", {"elite": 10**12}),
    ("agents", {"elite": [1]}),
    ("agents", {"elite": 2.5}),
    ("agents", {"elite": True}),
    ("agents", {"spread": float("nan")}),
    ("agents", {"policy": "other"}),
    ("genetic", {"tournament": 0}),
    ("genetic", {"tournament": -1}),
    ("annealing", {"cooling": 1.5}),
    ("annealing", {"t_start": 10**400}),  # past any float: an OverflowError escaped
])
def test_out_of_range_or_mistyped_option_is_refused_in_one_line(name, options, space):
    with pytest.raises(WorkbenchError) as info:
        strategy_class(name).validate_options(options)
    text = str(info.value)
    key = next(iter(options))
    option = next(o for o in strategy_class(name).OPTIONS if o.name == key)
    assert "\n" not in text and repr(name) in text and f"option {key}=" in text and option.range_text in text


@pytest.mark.parametrize("given,expected", [
    (True, True), (False, False), ("true", True), ("False", False), ("1", True), ("0", False), (1, True), (0, False),
])
def test_bool_option_takes_only_bools_and_the_documented_spellings(given, expected):
    assert strategy_class("agents").validate_options({"learn_all": given})["learn_all"] is expected


def test_number_options_are_converted_to_their_type():
    resolved = strategy_class("agents").validate_options({"elite": 3.0, "spread": 2, "batch": "4"})
    assert resolved["elite"] == 3 and type(resolved["elite"]) is int
    assert resolved["spread"] == 2.0 and type(resolved["spread"]) is float
    assert resolved["batch"] == 4


def test_docs_options_table_matches_the_declarations():
    """docs/strategies.md lists every option with its default and allowed values as declared."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "strategies.md").read_text()
    for name in ALL:
        for o in strategy_class(name).OPTIONS:
            row = f"| `{name}` | `{o.name}` | {o.type_name} | `{o.default!r}` | {o.range_text} |"
            assert row in text, row


@pytest.mark.parametrize("name, options, said", [
    ("genetic", {"population": 4, "elite": 20}, "elite=20 cannot exceed population=4"),
    ("genetic", {"population": 4, "tournament": 50}, "tournament=50 cannot exceed population=4"),
    ("annealing", {"t_start": 0.001, "t_min": 5}, "t_min=5 must be below t_start=0.001"),
])
def test_options_that_contradict_each_other_are_refused_in_one_line(name, options, said):
    """Each option within its own bounds, together not: refused before a run starts rather than
    quietly clamped or run as something else."""
    with pytest.raises(WorkbenchError) as caught:
        strategy_class(name).validate_options(options)
    assert str(caught.value).startswith(f"strategy {name!r}: {said}") and "\n" not in str(caught.value)
    defaults = strategy_class(name).validate_options({})
    assert strategy_class(name).options_conflict(defaults) is None


def test_a_low_bound_that_clashes_with_another_options_default_says_to_give_both():
    """``population=2`` is within its declared range, but the tournament's default is 3."""
    with pytest.raises(WorkbenchError, match=r"tournament=3 cannot exceed population=2; tournament is at its "
                                             r"default: give it too$"):
        strategy_class("genetic").validate_options({"population": 2})
    assert strategy_class("genetic").validate_options({"population": 2, "tournament": 2, "elite": 1})


def test_the_hint_names_the_options_the_conflict_gives_not_those_its_message_mentions():
    """The options left at their defaults come from the conflict's names: a message worded without
    ``name=`` still gets the hint, and an option merely mentioned in it (``elite``) is not named."""
    genetic = strategy_class("genetic")

    class Worded(genetic):
        name = "worded"

        @classmethod
        def options_conflict(cls, options):
            if options["tournament"] > options["population"]:
                return OptionsConflict(f"a tournament of {options['tournament']} needs as many in the population "
                                       f"({options['population']}), and elite= is not the cause", ("tournament", "population"))
            return None

    with pytest.raises(WorkbenchError) as caught:
        Worded.validate_options({"population": 2})
    assert str(caught.value) == ("strategy 'worded': a tournament of 3 needs as many in the population (2), and elite= "
                                 "is not the cause; tournament is at its default: give it too")
    with pytest.raises(WorkbenchError, match=r"; population is at its default: give it too$"):
        Worded.validate_options({"tournament": 50})
    conflict = genetic.options_conflict({**genetic.validate_options({}), "population": 4, "elite": 5})
    assert conflict == OptionsConflict("elite=5 cannot exceed population=4", ("elite", "population"))


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - {"grid"}))
def test_a_space_whose_valid_configs_cannot_be_counted_in_time_is_still_searched(name, monkeypatch) -> None:
    """Slots of many values linked by one restriction cannot be counted within the counter's
    checks: the strategies' test of an exhausted space counted it, and a run ended after its first
    evaluation with the counter's error. The product of the domains bounds the count instead."""
    from workbench.core.domain import space_count
    from workbench.core.errors import SpaceError

    monkeypatch.setattr(space_count, "MAX_COUNT_CHECKS", 1_000)  # (the counter's limit, reached at once)
    monkeypatch.setattr(space_count, "VECTOR_MAX_POINTS", 0)  # (its checks are what a larger space counts by)
    values = tuple(range(600))  # (1,800 values in all: within what the agents fit)
    space = SearchSpace([Slot("a", values, "memory"), Slot("b", values, "memory"), Slot("c", values, "compute")],
                        ["a + b + c < 900"])
    with pytest.raises(SpaceError, match="counting the valid configs needs more than 1,000 checks"):
        space.count()
    strategy = create_strategy(name, space, seed=0)
    seen: list[Config] = []
    for _round in range(3):
        configs = strategy.ask(4)
        assert configs and all(space.is_valid(c) for c in configs)
        seen += configs
        strategy.tell([Trial(len(seen) - len(configs) + k, c, Measurement(Status.OK, {"latency_ms": 1.0 + k}))
                       for k, c in enumerate(configs)])
    assert len({c.id for c in seen}) == len(seen)
    # and behind the cost model's pruning (tune --cost-model), which asks for more than it keeps
    pruned = with_pruning(create_strategy(name, space, seed=0), lambda config: 1.0, 0.5)
    assert pruned.ask(4)


def test_grid_lists_a_sparse_space_from_its_counts_in_the_spaces_order(monkeypatch) -> None:
    """Over a restriction on all its slots keeping 28 of 10 million configs, grid walked the product,
    checking the restriction at every point: the run waited tens of seconds between its last
    configs and after them (the other strategies list from the counts). Grid lists from the counts
    too, in the same order, and a pickled grid goes on where it stopped."""
    from workbench.core.domain.space import ProductSpace

    space = SearchSpace([Slot(f"s{i}", tuple(range(10))) for i in range(5)],
                        restrictions=["s0 + s1 + s2 + s3 + s4 == 2"])
    expected = list(space)  # (the walk, over 100,000 points: the order to keep)
    assert len(expected) == 15

    def no_walk(self):
        raise AssertionError("walked the product")

    monkeypatch.setattr(ProductSpace, "__iter__", no_walk)
    grid = create_strategy("grid", space)
    first = grid.ask(10)
    resumed = pickle.loads(pickle.dumps(grid))
    assert first + resumed.ask(100) == expected
    assert grid.ask(100) == expected[10:] and grid.ask(1) == []


def test_grid_walks_a_large_space_without_counting_it_first(monkeypatch) -> None:
    """Listing from counts first counted every space: one of 430 million configs under a
    restriction over all its slots took 22 s to be found uncountable and the run failed, where the
    walk proposes at once. A space that large whose count is not known yet is walked."""
    from workbench.core.domain.space import ProductSpace

    space = SearchSpace([Slot(n, tuple(range(12))) for n in "abcdefgh"],
                        restrictions=["a + b + c + d + e + f + g + h != 5"])

    def no_count(self):
        raise AssertionError("counted")

    monkeypatch.setattr(ProductSpace, "count", no_count)
    proposed = create_strategy("grid", space).ask(5)
    assert [dict(c) for c in proposed][0] == dict.fromkeys("abcdefgh", 0) and len(proposed) == 5


def test_grid_lists_a_space_whose_linked_slots_are_few_however_many_the_free_ones(monkeypatch) -> None:
    """Judged by the size of the whole product, a sparse group of linked slots beside one free slot
    (30 million configs before restrictions, 4,500 valid) was walked point by point again; what a
    count scans is the largest linked group, counted apart from the free slots."""
    from workbench.core.domain.space import ProductSpace

    space = SearchSpace([*(Slot(f"s{i}", tuple(range(10))) for i in range(5)), Slot("free", tuple(range(300)))],
                        restrictions=["s0 + s1 + s2 + s3 + s4 == 2"])
    assert space.cartesian_size == 30_000_000 and space.largest_linked_group == 100_000

    def no_walk(self):
        raise AssertionError("walked the product")

    monkeypatch.setattr(ProductSpace, "__iter__", no_walk)
    proposed = create_strategy("grid", space).ask(10_000)
    assert len(proposed) == 15 * 300 == len({c.id for c in proposed}) and proposed == space.in_order()


def test_every_kernel_tuner_name_points_at_a_strategy_here_or_at_none() -> None:
    """The counterparts named for Kernel Tuner's strategy names are strategies this program has,
    and no Kernel Tuner name is one of ours (it would run, not be refused with a pointer)."""
    from workbench.search.base import KERNEL_TUNER_NAMES, STRATEGIES, unknown_strategy

    assert not set(KERNEL_TUNER_NAMES) & set(STRATEGIES)
    for name, counterpart in KERNEL_TUNER_NAMES.items():
        assert counterpart is None or counterpart in STRATEGIES, name
        assert ("is " + repr(counterpart) if counterpart else "has no counterpart") in unknown_strategy(name)
