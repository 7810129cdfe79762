"""The cooperative agents' own mechanisms: how failures teach, and where a new descent starts.

The contract every strategy keeps is in ``tests/test_strategies.py``; these tests pin down the two
choices that make ``agents`` the default (docs/strategies.md, the cooperative agents), each on a
made-up landscape that is a known function of the config, and each against the alternative.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.space import Config, SearchSpace, Slot
from workbench.search.base import create_strategy

TWO_BASINS = [
    Slot("x", tuple(range(8)), "launch"),
    Slot("y", tuple(range(8)), "launch"),
    Slot("shared", (False, True), "memory"),
    Slot("read_only", (False, True), "memory"),
]


def two_basins(config) -> float:
    """A wide, shallow basin (no shared memory, no read-only path) and a narrow, deep one (both on).

    Mixed flags are slow, so no one-slot move leads from one basin into the other: a descent that
    starts in the shallow basin ends at its bottom (1.5 ms), the optimum (1.0 ms at x = y = 6 with
    both flags) needs a second descent that starts in the deep basin.
    """
    x, y = config["x"], config["y"]
    if config["shared"] and config["read_only"]:
        return 1.0 + 0.4 * (abs(x - 6) + abs(y - 6))
    if not config["shared"] and not config["read_only"]:
        return 1.5 + 0.05 * (abs(x - 2) + abs(y - 2))
    return 3.0


def run(space: SearchSpace, latency, seed: int, budget: int, **options) -> list[float]:
    strategy = create_strategy("agents", space, seed=seed, **options)
    found: list[float] = []
    while len(found) < budget:
        batch = strategy.ask(1)
        if not batch:
            break
        trials = []
        for config in batch:
            t = latency(config)
            m = Measurement(Status.OK, {"latency_ms": t}) if t is not None else Measurement.failure(Status.COMPILE_ERROR, "x")
            trials.append(Trial(len(found), config, m))
            found.append(math.inf if t is None else t)
        strategy.tell(trials)
    return found


def test_a_new_descent_starts_away_from_the_known_local_optimum():
    """With ``diverse`` the agents leave the shallow basin more often than when every descent
    restarts from the incumbent (the same seeds, the same budget)."""
    space = SearchSpace(TWO_BASINS)
    seeds = range(12)

    def hits(diverse: float) -> int:
        return sum(min(run(space, two_basins, s, 70, diverse=diverse)) == 1.0 for s in seeds)

    assert hits(2.0) > hits(0.0)


def test_failures_do_not_count_against_the_values_they_used():
    """A failure is told to ``risk`` agents without lowering the utility of the failed config's
    values (a fast tile size may fail with one block size only); ``rank`` agents rank it last."""
    space = SearchSpace(TWO_BASINS)

    def utility_of_failed_x(mode: str) -> float:
        agents = create_strategy("agents", space, seed=3, failures=mode, init=8)
        batch = agents.ask(8)  # the random start: one round
        trials = [Trial(i, c, Measurement(Status.OK, {"latency_ms": two_basins(c)})) for i, c in enumerate(batch)]
        trials[0] = Trial(0, batch[0], Measurement.failure(Status.COMPILE_ERROR, "too many registers"))
        agents.tell(trials)
        return agents.state()["utilities"]["x"][batch[0]["x"]]

    assert utility_of_failed_x("risk") > utility_of_failed_x("rank")


def test_proposals_next_to_a_failure_are_penalised_and_far_ones_are_not():
    space = SearchSpace(TWO_BASINS)
    agents = create_strategy("agents", space, seed=0, fail_weight=1.0)
    failed = Config({"x": 3, "y": 3, "shared": True, "read_only": True})
    agents.tell([Trial(0, failed, Measurement.failure(Status.RUNTIME_ERROR, "launch failed"))])
    encode = agents.coder.encode
    assert agents._failure_risk(encode(failed)) == pytest.approx(1.0)
    near = agents._failure_risk(encode(failed.replace(x=4)))
    far = agents._failure_risk(encode(Config({"x": 7, "y": 0, "shared": False, "read_only": False})))
    assert 0.1 < near < 1.0 and far < 1e-3
    off = create_strategy("agents", space, seed=0, fail_weight=0.0)
    off.tell([Trial(0, failed, Measurement.failure(Status.RUNTIME_ERROR, "launch failed"))])
    assert off._failure_risk(encode(failed)) == 0.0


def test_overall_the_default_beats_random_on_the_two_basins():
    space = SearchSpace(TWO_BASINS)
    agents = np.mean([min(run(space, two_basins, s, 40)) for s in range(6)])
    random = []
    for s in range(6):
        strategy = create_strategy("random", space, seed=s)
        random.append(min(two_basins(c) for c in strategy.ask(40)))
    assert agents < np.mean(random)


def test_the_first_learning_round_probes_the_end_the_utilities_rise_towards():
    """On a landscape that gets faster with the tile size, the round after the random start holds
    the best start config with its tile size moved to the largest value; ``probes=0`` does not."""
    slots = [Slot("tile", tuple(range(1, 17)), "memory"), Slot("block", (32, 64, 128, 256), "launch")]
    space = SearchSpace(slots)

    def faster_with_tile(config) -> float:
        return 10.0 / config["tile"] + (0.1 if config["block"] == 32 else 0.0)

    def first_learning_round(probes: int) -> tuple[list[Config], Config]:
        # (a uniform start: a spread-out one may hold the largest tile already, leaving nothing to probe)
        agents = create_strategy("agents", space, seed=5, init=6, probes=probes, design=1)
        start = agents.ask(6)
        agents.tell([Trial(i, c, Measurement(Status.OK, {"latency_ms": faster_with_tile(c)})) for i, c in enumerate(start)])
        best = min(start, key=faster_with_tile)
        return agents.ask(8), best

    probed, best = first_learning_round(2)
    assert best["tile"] < 16
    probe = probed[0]
    assert probe["tile"] == 16 and probe["block"] in (best["block"], 32, 256)  # other slots: kept, or an end too
    plain, _ = first_learning_round(0)
    assert probe not in plain


#: A point-in-polygon-like space: a method number whose best value (0) is not next to the slowest
#: one (1), a tile size that is fastest at its end, and a wide block size that barely matters.
METHODS = [
    Slot("method", (0, 1, 2, 3), "compute"),
    Slot("tile", tuple(range(1, 11)), "memory"),
    Slot("block", tuple(range(32, 32 * 17, 32)), "launch"),
]


def by_method(config) -> float:
    """Method 0 is the fastest, but only with a large tile (with a small one it is the slowest):
    learned on the random start, where tiles are mixed, method 0 looks mediocre."""
    method = {0: 0.7 if config["tile"] >= 8 else 2.5, 1: 2.2, 2: 1.6, 3: 1.6}[config["method"]]
    return method * (1.0 + 3.0 / config["tile"]) + 0.001 * abs(config["block"] - 256) / 32


def test_a_descent_tries_short_domains_and_domain_ends_before_the_rest():
    """The second pass of a sweep holds every value of a short domain and the ends of long ones;
    the third pass the remaining moves of the long block size."""
    agents = create_strategy("agents", SearchSpace(METHODS), seed=0)
    base = Config({"method": 2, "tile": 5, "block": 256})
    first, second, third = agents._moves(base, set())
    assert {(c["method"], c["tile"], c["block"]) for c in first} == {(1, 5, 256), (3, 5, 256), (2, 4, 256), (2, 6, 256), (2, 5, 224), (2, 5, 288)}
    assert {(c["method"], c["tile"], c["block"]) for c in second} == {(0, 5, 256), (2, 1, 256), (2, 10, 256), (2, 5, 32), (2, 5, 512)}
    assert len(third) == (10 - 1 - 4) + (16 - 1 - 4)
    assert all(c["method"] == 2 for c in third)


def test_a_new_incumbent_gets_its_short_domain_moves_probed_once():
    """After the random start the incumbent's other method numbers are in the next round (they
    are the cheapest large questions); with ``short_probes=0`` they are left to the model."""

    def next_round(short_probes: int) -> tuple[list[Config], Config]:
        agents = create_strategy("agents", SearchSpace(METHODS), seed=2, init=6, probes=0, short_probes=short_probes)
        start = agents.ask(6)
        agents.tell([Trial(i, c, Measurement(Status.OK, {"latency_ms": by_method(c)})) for i, c in enumerate(start)])
        return agents.ask(8), min(start, key=by_method)

    probed, best = next_round(5)
    others = {best.replace(method=m) for m in range(4) if m != best["method"]}
    assert others <= set(probed[:3])
    plain, _ = next_round(0)
    assert not others <= set(plain)


def test_short_probes_find_a_method_number_the_model_misjudges():
    """Over seeds, the agents find that method 0 pays (with a large tile) far more often within
    20 evaluations than the same agents without short probes (both from a uniform start: a
    spread-out start visits every method itself on a space this small)."""
    space = SearchSpace(METHODS)

    def found(short_probes: int) -> float:
        configs = [run_configs(space, by_method, s, 20, short_probes=short_probes, design=1) for s in range(16)]
        return float(np.mean([min(c, key=by_method)["method"] == 0 for c in configs]))

    assert found(5) >= found(0) + 0.25


def run_configs(space: SearchSpace, latency, seed: int, budget: int, **options) -> list[Config]:
    """The configs ``agents`` measures in its first ``budget`` evaluations."""
    strategy = create_strategy("agents", space, seed=seed, **options)
    out: list[Config] = []
    while len(out) < budget:
        batch = strategy.ask(1)
        strategy.tell([Trial(len(out), batch[0], Measurement(Status.OK, {"latency_ms": latency(batch[0])}))])
        out.append(batch[0])
    return out


def test_after_a_local_optimum_the_frontier_looks_around_other_good_configs():
    """Once the incumbent's neighbourhood is used up, the next round holds one move from each of
    the best measured configs that are at least ``diverse`` away from it, not moves from the optimum."""
    space = SearchSpace(TWO_BASINS)
    agents = create_strategy("agents", space, seed=1, init=10, patience=2)
    found = run_until_local_optimum(agents, space)
    optimum = agents.swept[0]
    frontier = agents._frontier(8, set())
    assert frontier, "a frontier after the first local optimum"
    measured = {agents.coder.encode(c) for c in found}
    for config in frontier:
        vec = agents.coder.encode(config)
        parents = [m for m in measured if sum(a != b for a, b in zip(m, vec)) == 1]
        assert any(agents.coder.distance(p, optimum) >= 2.0 for p in parents)
    off = create_strategy("agents", space, seed=1, init=10, patience=2, frontier=0)
    run_until_local_optimum(off, space)
    assert off._frontier(8, set()) == []


def run_until_local_optimum(agents, space: SearchSpace) -> list[Config]:
    """Drive ``agents`` on the two basins until it has proved its first local optimum."""
    found: list[Config] = []
    while not agents.swept and len(found) < space.count():
        batch = agents.ask(1)
        assert batch
        agents.tell([Trial(len(found), batch[0], Measurement(Status.OK, {"latency_ms": two_basins(batch[0])}))])
        found.append(batch[0])
    return found


def test_the_space_filling_start_spreads_further_than_a_uniform_one():
    """With ``design`` > 1 the start's configs lie further apart (the smallest distance between two
    of them, averaged over seeds) than a uniform random start's, and are still distinct and valid."""
    space = SearchSpace(PINNED_SPACE)

    def spread(design: int) -> float:
        gaps = []
        for seed in range(10):
            agents = create_strategy("agents", space, seed=seed, init=10, design=design)
            start = agents.ask(10)
            assert len({c.id for c in start}) == 10 and all(space.is_valid(c) for c in start)
            vecs = [agents.coder.encode(c) for c in start]
            gaps.append(min(agents.coder.distance(a, b) for i, a in enumerate(vecs) for b in vecs[i + 1 :]))
        return float(np.mean(gaps))

    assert spread(4) > spread(1) + 0.3


def test_the_start_keeps_away_from_configs_measured_before():
    """Configs told before the start (a reopened session) count as chosen: the space-filling start
    spreads away from them too."""
    space = SearchSpace(PINNED_SPACE)
    told = space.sample(np.random.default_rng(5), 6)

    def nearest(design: int) -> float:
        out = []
        for seed in range(10):
            agents = create_strategy("agents", space, seed=seed, init=10, design=design)
            agents.tell([Trial(i, c, measurement_of(c)) for i, c in enumerate(told)])
            start = agents.ask(4)
            out += [min(agents.coder.distance(agents.coder.encode(c), agents.coder.encode(t)) for t in told) for c in start]
        return float(np.mean(out))

    assert nearest(4) > nearest(1)


def test_under_constraints_the_start_stays_uniform():
    """With bounds on the objective the start is the uniform one whatever ``design`` says; without
    them ``design`` changes it."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective

    space = SearchSpace(PINNED_SPACE)

    def start(design: int, bounded: bool) -> list[str]:
        agents = create_strategy("agents", space, seed=4, init=10, design=design)
        if bounded:
            agents.set_objective(Objective(Constraints(max_latency_ms=1.3)))
        return [c.id for c in agents.ask(10)]

    assert start(4, True) == start(1, True) == start(1, False)
    assert start(4, False) != start(1, False)


def test_a_large_start_draws_from_a_capped_pool():
    """Every pick is a pass over the pool, so ``n`` picks from ``design n`` samples grow as
    ``design n^2``: the pool is capped at ``max(4 n, 4096)`` samples (the default start's 40 are not)."""
    space = SearchSpace([Slot(f"s{k}", tuple(range(8)), "launch" if k < 3 else "compute") for k in range(6)])
    asked: list[int] = []
    for init, design in ((10, 4), (1000, 64)):
        agents = create_strategy("agents", space, seed=0, init=init, design=design)
        sample = agents.sample
        agents.sample = lambda n, batch: (asked.append(n), sample(n, batch))[1]  # type: ignore[method-assign]
        start = agents.ask(init)
        assert len({c.id for c in start}) == init
    assert asked == [40, 4096]


def test_a_gain_within_timing_noise_is_not_progress():
    """A new best less than ``min_gain`` faster leaves the stall counter running; a real gain resets it."""
    space = SearchSpace(TWO_BASINS)
    agents = create_strategy("agents", space, seed=0, init=2)
    configs = space.sample(np.random.default_rng(0), 6)
    latencies = [2.0, 3.0, 3.0, 1.995, 3.0, 1.5]  # (the first two are the random start)
    counters = []
    for i, (config, t) in enumerate(zip(configs, latencies)):
        agents.tell([Trial(i, config, Measurement(Status.OK, {"latency_ms": t}))])
        counters.append(agents.since_improvement)
    assert counters == [0, 0, 1, 2, 3, 0]


# --- the proposals, pinned ----------------------------------------------------------------------
# A fingerprint of every config the agents propose in a few scenarios that reach every mechanism
# (random start, learning rounds, trend and short probes, descents and their coupled moves, the frontier, focused
# exploration, failure and constraint risk, bandit policy, batches, results others proposed).
# A refactor must leave it unchanged; a deliberate change of the algorithm updates it, with the
# benchmark that justified the change (bench/strategies.py, docs/strategies.md).

PINNED_SPACE = [
    Slot("block", (32, 64, 96, 128, 160, 192, 256, 512), "launch"),
    Slot("rows", (1, 2, 4, 8), "launch"),
    Slot("tile", (1, 2, 3, 4, 6, 8), "memory"),
    Slot("shared", (False, True), "memory"),
    Slot("method", (0, 1, 2, 3), "compute"),
    Slot("unroll", (1, 2, 4), "compute"),
]


def pinned_latency(config) -> float | None:
    """Two basins, a method that matters, and a failing corner (large blocks with large tiles)."""
    b, r, t = config["block"], config["rows"], config["tile"]
    if b * r >= 1024 and t >= 6:
        return None
    base = 1.0 + abs(math.log2(b * r / 256.0)) * 0.2 + abs(t - 4) * 0.1
    if config["shared"]:
        base *= 0.8 if t >= 4 else 1.3
    base *= (1.0, 1.6, 1.1, 1.25)[config["method"]]
    return base * (1.0 + 0.05 * abs(config["unroll"] - 2))


def fingerprint(strategy, space: SearchSpace, budget: int, per_ask: int, foreign: int = 0) -> str:
    import hashlib

    ids: list[str] = []
    rng = np.random.default_rng(7)
    if foreign:  # results someone else proposed (a reopened session, a portfolio partner)
        others = space.sample(rng, foreign)
        strategy.tell([Trial(i, c, measurement_of(c)) for i, c in enumerate(others)])
        ids += [c.id for c in others]
    while len(ids) < budget:
        batch = strategy.ask(per_ask)
        if not batch:
            break
        ids += [c.id for c in batch]
        strategy.tell([Trial(len(ids) + i, c, measurement_of(c)) for i, c in enumerate(batch)])
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]


def measurement_of(config) -> Measurement:
    t = pinned_latency(config)
    if t is None:
        return Measurement.failure(Status.RUNTIME_ERROR, "x")
    return Measurement(Status.OK, {"latency_ms": t, "throughput_gbs": 100.0 / t, "occupancy": config["rows"] / 8.0})


def pinned_runs(**extra: object) -> dict[str, str]:
    """The pinned runs' fingerprints; ``extra``: options given to every run (an earlier default)."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective

    space = SearchSpace(PINNED_SPACE)
    one_group = SearchSpace([Slot(s.name, s.values, "compute") for s in PINNED_SPACE])
    out = {
        "one at a time": fingerprint(create_strategy("agents", space, seed=1, **extra), space, 160, 1),
        "batches of 3": fingerprint(create_strategy("agents", space, seed=2, **extra), space, 120, 3),
        "one concern, bandit": fingerprint(create_strategy("agents", one_group, seed=3, policy="bandit", **extra),
                                           one_group, 100, 1),
        "failures ranked": fingerprint(create_strategy("agents", space, seed=4, failures="rank", **extra), space, 80, 2),
        "foreign results": fingerprint(create_strategy("agents", space, seed=5, **extra), space, 80, 1, foreign=12),
    }
    constrained = create_strategy("agents", space, seed=6, **extra)
    constrained.set_objective(Objective(Constraints(max_latency_ms=1.3)))
    out["constrained"] = fingerprint(constrained, space, 100, 1)
    # restrictions that keep values out of one-slot moves (the descent's coupled pass)
    restricted = SearchSpace(PINNED_SPACE, restrictions=["block * rows <= 512", "tile > 1 or not shared"])
    out["restricted"] = fingerprint(create_strategy("agents", restricted, seed=7, **extra), restricted, 120, 1)
    return out


PINNED = {
    "one at a time": "38f3b4e08458bc88",
    "batches of 3": "ec8f8cdcf74ded62",
    "one concern, bandit": "f98a546ef4d8bd09",
    "failures ranked": "4483d6627aaceaae",
    "foreign results": "9919074c8cb73412",
    "constrained": "c9d5b4e59ca25831",
    "restricted": "fb4f2233657d532f",
}
#: The default's runs since path probes (each run above is longer than their start, path_from 50).
PINNED_WITH_PATH_PROBES = {
    "one at a time": "5c4a3a2cd2ea153b",
    "batches of 3": "895963407fa3bf69",
    "one concern, bandit": "62c5496ef3f93e6a",
    "failures ranked": "45732a01304ad378",
    "foreign results": "2067d6fe560aeb27",
    "constrained": "73d84f28c1b61646",
    "restricted": "32cf442adf881fba",
}


def test_the_proposals_are_pinned():
    assert pinned_runs() == PINNED_WITH_PATH_PROBES
    # the earlier default, reproduced by turning the path probes off
    assert pinned_runs(path_probes=0) == PINNED


def test_the_typed_options_match_the_declared_ones():
    """``AgentsOptions`` (typed, read by the code) and ``Agents.OPTIONS`` (validation, help) agree."""
    import dataclasses

    from workbench.search.agents import Agents, AgentsOptions

    fields = {f.name: f.default for f in dataclasses.fields(AgentsOptions)}
    assert fields == {o.name: o.default for o in Agents.OPTIONS}
    agents = create_strategy("agents", SearchSpace(TWO_BASINS), seed=0, init="6", spread=2)
    assert agents.opt.init == 6 and agents.opt.spread == 2.0 and isinstance(agents.opt.spread, float)


# --- coupled moves: values the restrictions keep out of every one-slot move -----------------------
CORNER = [
    Slot("bx", (1, 2, 4, 8, 16, 32), "launch"),
    Slot("by", (32, 64, 96, 128, 160, 192, 224, 256), "launch"),
    Slot("tile", (1, 2, 3, 4), "memory"),
    Slot("stride", (0, 1), "memory"),
]
CORNER_RULES = ["bx * by <= 1024", "tile > 1 or stride == 0"]


def corner_latency(config) -> float:
    """A smooth basin around many threads in y with a strided tile, and a deeper corner (the widest
    x, which the thread limit allows only with the fewest y; deepest with the unstrided single
    tile) that no valid one-slot move reaches from the basin's bottom."""
    bx, by, tile, stride = config["bx"], config["by"], config["tile"], config["stride"]
    if bx == 32:
        return 0.8 if tile == 1 else 0.9
    return 1.0 + 0.1 * abs(math.log2(bx)) + 0.002 * (256 - by) + 0.05 * abs(tile - 3) + 0.05 * (1 - stride)


def test_coupled_moves_reach_values_no_one_slot_move_reaches():
    from workbench.search._common import Coder
    from workbench.search.descent import coupled_moves

    space = SearchSpace(CORNER, restrictions=CORNER_RULES)
    coder = Coder(space)
    base = space.config({"bx": 1, "by": 256, "tile": 3, "stride": 1})
    moves = {(c["bx"], c["by"], c["tile"], c["stride"]) for c in
             coupled_moves(space, coder, base, lambda c: True)}
    # the widest x needs the fewest y; a single tile needs the stride off; each with one other slot changed
    assert (32, 32, 3, 1) in moves and (1, 256, 1, 0) in moves and (8, 128, 3, 1) in moves
    assert all(space.is_valid(space.config(dict(zip(["bx", "by", "tile", "stride"], m)))) for m in moves)
    one_slot = {(c["bx"], c["by"], c["tile"], c["stride"]) for c in space.neighbours(base)}
    assert not moves & one_slot  # only what no one-slot move reaches
    unconstrained = SearchSpace(CORNER)
    assert coupled_moves(unconstrained, Coder(unconstrained), base, lambda c: True) == []


def test_a_descent_with_coupled_moves_leaves_a_basin_the_restrictions_close():
    space = SearchSpace(CORNER, restrictions=CORNER_RULES)
    found = {n: [min(run(space, corner_latency, seed, 60, coupled=n)) for seed in range(6)] for n in (0, 4)}
    assert found[4] == [0.8] * 6  # every seed reaches the corner's bottom within 60 evaluations
    assert found[0].count(0.8) < 4  # one-slot descents only when the start lands near it


# --- shape moves: the same product of two numeric slots with another split --------------------
SPLIT = [
    Slot("bx", (1, 2, 4, 8, 16, 32), "launch"),
    Slot("by", (16, 32, 64, 128, 256, 512), "launch"),
    Slot("tile", (1, 2, 3, 4, 5, 6), "memory"),
    Slot("unroll", (1, 2, 4, 8), "compute"),
    Slot("cache", (False, True), "memory"),
]
SPLIT_RULES = ["bx * by <= 1024"]


def split_latency(config) -> float:
    """The thread count (x times y) sets the time, best at 512; at that count a wider x reads
    memory better, best at 8: from (2, 256) every one-slot move changes the thread count."""
    threads = config["bx"] * config["by"]
    return (1.0 + 0.5 * abs(math.log2(threads / 512)) + 0.03 * abs(math.log2(config["bx"]) - 3)
            + 0.02 * abs(config["tile"] - 4) + 0.01 * abs(math.log2(config["unroll"]) - 2) + 0.01 * config["cache"])


def test_shape_moves_keep_a_product_with_another_split_the_smallest_change_first():
    from workbench.search._common import Coder
    from workbench.search.descent import shape_moves

    space = SearchSpace(SPLIT, restrictions=SPLIT_RULES)
    base = space.config({"bx": 2, "by": 256, "tile": 2, "unroll": 4, "cache": False})
    moves = shape_moves(space, Coder(space), base, lambda c: True)
    changes = []
    for move in moves:  # two numeric slots change, their product stays (a flag has none)
        changed = [k for k in base if move[k] != base[k]]
        assert len(changed) == 2 and "cache" not in changed
        assert move[changed[0]] * move[changed[1]] == base[changed[0]] * base[changed[1]]
        changes.append(abs(math.log2(move[changed[0]] / base[changed[0]])))
    assert changes == sorted(changes) and changes[0] == 1.0  # a factor of 2 first
    shapes = [(c["bx"], c["by"], c["tile"], c["unroll"]) for c in moves]
    assert {(4, 128, 2, 4), (1, 512, 2, 4), (2, 256, 1, 8), (2, 256, 4, 2), (32, 16, 2, 4)} <= set(shapes)
    fresh = shape_moves(space, Coder(space), base, lambda c: c["bx"] != 4)  # measured ones are left out
    assert fresh == [c for c in moves if c["bx"] != 4]
    narrow = SearchSpace(SPLIT, restrictions=SPLIT_RULES + ["bx <= 8"])
    assert all(c["bx"] <= 8 for c in shape_moves(narrow, Coder(narrow), base, lambda c: True))  # only valid ones


def test_a_descent_with_shape_moves_leaves_a_split_basin():
    space = SearchSpace(SPLIT, restrictions=SPLIT_RULES)
    found = {n: [min(run(space, split_latency, seed, 60, **({} if n is None else {"shape": n})))
                 for seed in range(12)] for n in (0, None)}
    assert found[None].count(1.0) >= 10  # the default
    assert found[0].count(1.0) <= 7


def test_the_first_rounds_after_the_start_are_short():
    """Right after the start the agents refit their utilities after every ``early_batch``
    results, not after a whole ``batch``: the utilities have learned from the first results of
    the agents' own proposals after four of them with the default, after eight without it, and
    under constraints (where it was not measured) the rounds keep their size."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective

    space = SearchSpace(TWO_BASINS)

    def rows_after(told: int, bounded: bool = False, **options) -> int:
        agents = create_strategy("agents", space, seed=3, **options)
        if bounded:
            agents.set_objective(Objective(Constraints(max_latency_ms=100.0)))
        n = 0
        while n < told:
            config = agents.ask(1)[0]
            agents.tell([Trial(n, config, Measurement(Status.OK, {"latency_ms": two_basins(config)}))])
            n += 1
        return int(agents.model.n_rows)

    assert rows_after(10) == 10  # the start is one round
    assert rows_after(14) == 14
    assert rows_after(14, early_batch=0) == 10
    assert rows_after(14, bounded=True) == 10
    assert rows_after(18, early_batch=0) == 18


def test_path_probes_start_after_path_from_and_try_an_unmeasured_short_combination_at_the_best_geometry():
    """With ``path_probes`` the first ``path_from`` evaluations are those of the default (the
    run-length schedule leaves them alone); from then on rounds hold configs with the best
    config's long slots and a combination of the short slots that no measured config had."""
    slots = [Slot("x", tuple(range(8)), "launch"), Slot("y", tuple(range(8)), "launch")]
    slots += [Slot(f"f{i}", (0, 1), "memory") for i in range(5)]
    space = SearchSpace(slots)

    def latency(config) -> float:
        flags = sum(config[f"f{i}"] for i in range(5))
        return 1.0 + 0.1 * (abs(config["x"] - 5) + abs(config["y"] - 2)) + (0.0 if flags == 5 else 0.2 + 0.1 * flags)

    def configs(budget: int, **options) -> list[Config]:
        agents = create_strategy("agents", space, seed=1, **options)
        out: list[Config] = []
        while len(out) < budget:
            config = agents.ask(1)[0]
            agents.tell([Trial(len(out), config, Measurement(Status.OK, {"latency_ms": latency(config)}))])
            out.append(config)
        return out

    plain, probed = configs(60, path_probes=0), configs(60, path_probes=2, path_from=30)
    assert [c.id for c in probed[:30]] == [c.id for c in plain[:30]]
    assert [c.id for c in probed] != [c.id for c in plain]
    flags = [f"f{i}" for i in range(5)]
    found = False
    for n in range(30, 60):
        before = probed[:n]
        best = min(before, key=latency)
        combos = {tuple(c[f] for f in flags) for c in before}
        config = probed[n]
        if (config["x"], config["y"]) == (best["x"], best["y"]) and tuple(config[f] for f in flags) not in combos:
            found = True
    assert found


def _driven(space: SearchSpace, budget: int, latency, **options) -> list[Config]:
    """The configs ``agents`` proposes one at a time over ``budget`` evaluations (fewer: it ran dry)."""
    agents = create_strategy("agents", space, seed=3, **options)
    out: list[Config] = []
    while len(out) < budget:
        asked = agents.ask(1)
        if not asked:
            break
        t = latency(asked[0])
        measurement = Measurement(Status.OK, {"latency_ms": t}) if t is not None else \
            Measurement.failure(Status.RUNTIME_ERROR, "x")
        agents.tell([Trial(len(out), asked[0], measurement)])
        out.append(asked[0])
    return out


def test_path_probes_never_end_a_run_with_budget_left():
    """A round the probes had to themselves (``batch`` 1, or as many probes as the batch) was empty
    once they found nothing (no short slots, every path tried), and the run ended at 50 of its
    evaluations. The agents keep a config of every round and every place the probes leave."""
    long_only = SearchSpace([Slot("x", tuple(range(8)), "launch"), Slot("y", tuple(range(8)), "launch"),
                             Slot("z", tuple(range(6)), "memory")])

    def bowl(config) -> float:
        return 1.0 + abs(config["x"] - 5) + abs(config["y"] - 2) + 0.5 * abs(config["z"] - 3)

    for options in ({"batch": 1}, {"path_probes": 8}, {"path_probes": 8, "batch": 8}):
        assert len(_driven(long_only, 150, bowl, **options)) == 150, options
    one_flag = SearchSpace([*long_only.slots, Slot("f", (0, 1), "compute")])
    assert len(_driven(one_flag, 150, lambda c: bowl(c) + c["f"], batch=1)) == 150
    # without short slots the probes find nothing, and the agents' rounds are what they were
    plain = [c.id for c in _driven(long_only, 120, bowl, path_probes=0)]
    assert [c.id for c in _driven(long_only, 120, bowl)] == plain


def test_path_probes_are_ranked_by_what_the_feasibility_model_predicts_too():
    """Under a memory limit that one flag's code path always breaks, the probes ranked by the
    utilities alone went for that path first (97 of 106 probes broke the limit); they are charged
    the same risks as every screened proposal now."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective

    slots = [Slot("x", tuple(range(8)), "launch"), Slot("y", tuple(range(8)), "launch")]
    slots += [Slot(f"f{i}", (0, 1), "memory") for i in range(6)]
    space = SearchSpace(slots)

    def metrics(config) -> dict[str, float]:
        fast = 0.5 if config["f0"] else 0.0  # the fast path, a thousand MB over the limit
        latency = 1.0 + 0.1 * (abs(config["x"] - 5) + abs(config["y"] - 2)) - fast + 0.01 * config["f1"]
        return {"latency_ms": latency, "memory_mb": 1000.0 if config["f0"] else 100.0}

    agents = create_strategy("agents", space, seed=3, path_from=10_000)  # (no probes while it learns)
    agents.set_objective(Objective(Constraints(max_memory_mb=500)))
    for n in range(80):
        config = agents.ask(1)[0]
        agents.tell([Trial(n, config, Measurement(Status.OK, metrics(config)))])
    probes = agents._path_probes(4, set())
    assert probes and probes[0]["f0"] == 0, probes


def test_under_constraints_a_feasible_incumbent_gets_its_coupled_moves_probed():
    """With bounds on the objective, the round after a new feasible incumbent includes its
    coupled moves (values the restrictions keep out of every one-slot move), so a limit that moves
    the optimum behind a restriction is looked at before a descent would reach it; with
    ``coupled_probes=0``, or without bounds, they are left to the descent's last pass."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective
    from workbench.search._common import Coder
    from workbench.search.descent import coupled_moves

    space = SearchSpace(CORNER, restrictions=CORNER_RULES)

    def next_round(bounded: bool, **options) -> tuple[set[str], set[str]]:
        agents = create_strategy("agents", space, seed=1, init=6, probes=0, **options)
        if bounded:
            agents.set_objective(Objective(Constraints(max_latency_ms=100.0)))
        start = agents.ask(6)
        agents.tell([Trial(i, c, Measurement(Status.OK, {"latency_ms": corner_latency(c)})) for i, c in enumerate(start)])
        best = min(start, key=corner_latency)
        coupled = {c.id for c in coupled_moves(space, Coder(space), best, lambda c: c not in start)}
        return {c.id for c in agents.ask(8)}, coupled

    probed, coupled = next_round(True)
    assert coupled and len(probed & coupled) == 2
    for plain, coupled in (next_round(True, coupled_probes=0), next_round(False)):
        assert not plain & coupled


def test_under_constraints_the_agents_climb_from_the_best_feasible_config_once_the_region_is_known():
    """Once a quarter of the trials met the bounds, the first descent starts from the feasible
    incumbent right after the first learning round (here ``patience`` would hold it back for the
    whole run), and a new feasible best drops the rest of the planned round; with ``climb=False``
    neither happens, and without bounds the option changes nothing."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective

    space = SearchSpace(TWO_BASINS)

    def run_climb(bounded: bool, **options) -> tuple[int | None, int]:
        agents = create_strategy("agents", space, seed=4, init=6, patience=40, **options)
        if bounded:
            agents.set_objective(Objective(Constraints(max_latency_ms=3.5)))
        descent_at, dropped = None, 0
        for n in range(40):
            config = agents.ask(1)[0]
            planned, best = len(agents.queue), agents.best_score
            agents.tell([Trial(n, config, Measurement(Status.OK, {"latency_ms": two_basins(config)}))])
            dropped += planned > 0 and not agents.queue and agents.best_score < best
            if descent_at is None and agents.descent.running:
                descent_at = n
        return descent_at, dropped

    descent_at, dropped = run_climb(True)
    assert descent_at is not None and descent_at <= 6 + 2 * 8 and dropped >= 1
    assert run_climb(True, climb=False) == (None, 0)
    assert run_climb(False) == run_climb(False, climb=False) == (None, 0)


def test_a_space_with_too_many_values_for_the_utilities_is_one_line_not_a_failed_allocation():
    """One slot of 100,000 values asked for a dense fit over 100,000 features (80 GB): MemoryError."""
    from workbench.core.errors import WorkbenchError
    from workbench.search.base import create_strategy

    huge = SearchSpace([Slot("i", tuple(range(100_000)))])
    with pytest.raises(WorkbenchError, match=r"^strategy 'agents' cannot search this space: 100,000 slot values"):
        create_strategy("agents", huge)
    # as a member of the portfolio, the refusal names the portfolio's option and what else it takes
    with pytest.raises(WorkbenchError) as said:
        create_strategy("hybrid", huge, model="agents")
    assert str(said.value).startswith("strategy 'hybrid': its model member 'agents' cannot search this space "
                                      "(100,000 slot values")
    assert str(said.value).endswith("; set its model option to tpe, or narrow the domains")
    with pytest.raises(WorkbenchError, match=r"its walker member 'agents' .*; set its walker option to annealing or "
                                             r"local or genetic, or narrow the domains$"):
        create_strategy("hybrid", huge, walker="agents")


def test_value_pairs_beyond_the_fits_size_keep_the_smallest_and_leave_small_spaces_as_they_were():
    from workbench.search.utility import UtilityModel

    small = UtilityModel([4, 5, 3], [True, True, False], [[0, 1, 2]])
    assert [(a, b) for a, b, _ in small.pairs] == [(0, 1), (0, 2), (1, 2)] and small.dim == 12 + 20 + 12 + 15
    big = UtilityModel([60, 40, 3], [True, True, False], [[0, 1, 2]], max_dim=500)
    assert [(a, b) for a, b, _ in big.pairs] == [(0, 2), (1, 2)]  # 60 x 40 would not fit; the small ones do
    assert big.dim == 103 + 180 + 120 <= 500


def test_value_pairs_stop_at_the_paired_budget_and_the_slot_values_alone_still_fit_beyond_it():
    """The fit's cost is cubic in its features: pairs are added only within ``PAIRED_FEATURES``
    (a dedicated, smaller budget than the slot values'), and a space whose values alone are past
    it is still searched, without pairs."""
    from workbench.search.utility import MAX_FEATURES, PAIRED_FEATURES, UtilityModel

    assert PAIRED_FEATURES < MAX_FEATURES
    paired = UtilityModel([32, 16, 8], [True, True, True], [[0, 1, 2]])  # 56 values, 512 + 256 + 128 in pairs
    assert paired.dim <= PAIRED_FEATURES and [(a, b) for a, b, _ in paired.pairs] == [(0, 2), (1, 2)]
    wide = UtilityModel([PAIRED_FEATURES, 4, 4], [True, True, False], [[0, 1, 2]])
    assert wide.pairs == [] and wide.dim == PAIRED_FEATURES + 8
    space = SearchSpace([Slot("i", tuple(range(PAIRED_FEATURES + 100))), Slot("j", (1, 2, 3))])
    strategy = create_strategy("agents", space, seed=0)
    assert len(strategy.ask(12)) == 12


def test_a_draw_from_the_factored_posterior_is_the_draw_of_the_covariances_own_cholesky_factor():
    """The fit factors the precision once; a draw must still be ``mean + chol(cov) @ z`` for the
    same normal vector ``z`` (the three-pass fit's draw), so that a seed proposes what it did."""
    from workbench.search.utility import UtilityModel

    rng = np.random.default_rng(5)
    model = UtilityModel([6, 5, 4], [True, False, True], [[0, 1], [2]])
    for _ in range(4):
        model.accumulate([[int(rng.integers(n)) for n in (6, 5, 4)] for _ in range(7)], rng.random(7))
    precision = model.gram + model.prior
    mean = np.linalg.solve(precision, model.xty)
    sse = model.yy - 2.0 * float(mean @ model.xty) + float(mean @ model.gram @ mean)
    covariance = np.linalg.inv(precision) * max(0.05, sse / model.n_rows)
    z = np.random.default_rng(9).standard_normal(model.dim)
    expected = mean + 0.7 * (np.linalg.cholesky(covariance) @ z)
    assert np.allclose(model.mean(), mean, rtol=1e-9, atol=1e-12)
    assert np.allclose(model.sample(np.random.default_rng(9), 0.7), expected, rtol=1e-9, atol=1e-12)


def test_the_fits_one_blas_thread_is_given_back_whatever_threads_ask_for_it() -> None:
    """The limit is the process's: threads limiting and restoring it at once left BLAS on one
    thread for good (a window's other numerical work included)."""
    import threading

    from threadpoolctl import threadpool_info

    from workbench.search.utility import one_blas_thread

    with one_blas_thread():
        inside = {info["filepath"]: info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}
    before = {info["filepath"]: info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}
    assert set(inside.values()) <= {1}

    def busy() -> None:
        for _ in range(200):
            with one_blas_thread():
                pass

    threads = [threading.Thread(target=busy) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {info["filepath"]: info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"} == before
