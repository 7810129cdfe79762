"""The cooperative agents' own mechanisms: how failures teach, and where a new descent starts.

The contract every strategy keeps is in ``tests/test_strategies.py``; these tests pin down the two
choices that make ``agents`` the default (docs/strategies.md, "What changed and why"), each on a
made-up landscape that is a known function of the config, and each against the alternative.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.core.measurement import Measurement, Status, Trial
from workbench.core.space import Config, SearchSpace, Slot
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
        agents = create_strategy("agents", space, seed=5, init=6, probes=probes)
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
