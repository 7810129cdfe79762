"""The agents' measured configs as arrays, and the strategies' set of taken ids, kept up to date."""

from __future__ import annotations

import numpy as np

from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.space import SearchSpace, Slot
from workbench.search._common import Coder
from workbench.search.base import create_strategy
from workbench.search.measured import MeasuredIndex

SPACE = SearchSpace([Slot("a", (1, 2, 4, 8, 16)), Slot("b", ("x", "y", "z")), Slot("c", (0, 1, 2, 3, 4, 5, 6))])


def test_each_configs_distance_to_the_nearest_optimum_matches_a_full_recount_as_both_grow() -> None:
    coder = Coder(SPACE)
    rng = np.random.default_rng(3)
    index = MeasuredIndex(coder, 3)
    history: list[tuple[float, tuple[int, ...]]] = []
    optima: list[tuple[int, ...]] = []
    for step in range(200):  # past the first capacity of 64, with optima found between syncs
        history.append((float(rng.random()), tuple(int(rng.integers(n)) for n in coder.sizes)))
        if step % 17 == 5:
            optima.append(history[int(rng.integers(len(history)))][1])
        if step % 7 == 0 or step == 199:
            index.sync(history, optima)
            vecs = np.asarray([vec for _, vec in history])
            expected = coder.nearest_distances(vecs, np.asarray(optima)) if optima else np.full(len(history), np.inf)
            assert index.n == len(history) and np.array_equal(index.near[: index.n], expected)
            assert list(index.ranked()) == sorted(range(len(history)), key=lambda i: history[i][0])


def test_the_taken_ids_are_what_was_handed_out_or_measured_through_every_change() -> None:
    strategy = create_strategy("agents", SPACE, seed=1)
    asked = strategy.ask(6)
    strategy.tell([Trial(i, c, Measurement(Status.OK, {"latency_ms": 1.0 + i})) for i, c in enumerate(asked[:4])])
    outside = [c for c in SPACE if c.id not in strategy.taken()][:3]
    strategy.exclude([outside[0].id])
    strategy.tell([Trial(9, outside[1], Measurement(Status.OK, {"latency_ms": 0.5}))])  # measured, not proposed
    assert strategy.taken() == strategy.proposed | strategy.measured
    strategy.set_objective(lambda trial: -trial.metric("latency_ms"))  # re-learnt by a fresh instance
    assert strategy.taken() == strategy.proposed | strategy.measured
    assert {outside[0].id, outside[1].id} | {c.id for c in asked} <= strategy.taken()
    assert outside[2].id not in strategy.taken()
