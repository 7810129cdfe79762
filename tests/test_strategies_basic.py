"""Grid and random search: valid, complete, no repeats, seeded, and aware of what was measured."""

from __future__ import annotations

import pytest

from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.space import SearchSpace, Slot
from workbench.search.base import create_strategy
from workbench.search.grid import GridSearch
from workbench.search.random import RandomSearch


@pytest.fixture
def space() -> SearchSpace:
    return SearchSpace(
        [
            Slot("block", (32, 64, 128, 256), "launch"),
            Slot("items", (1, 2, 4, 8), "launch"),
            Slot("vec", (1, 2, 4), "memory"),
            Slot("algo", ("atomic", "tree"), "reduction"),
        ],
        restrictions=["block * items <= 512", "algo != 'atomic' or vec == 1"],
    )


def _drain(strategy, n: int) -> list:
    out = []
    while True:
        batch = strategy.ask(n)
        assert len({c.id for c in batch}) == len(batch), "duplicate within one ask"
        if not batch:
            return out
        out.extend(batch)


def _told(config) -> Trial:
    return Trial(0, config, Measurement(Status.OK, {"latency_ms": 1.0}))


def test_grid_is_every_valid_config_in_stable_order(space):
    assert _drain(GridSearch(space), 5) == list(space)
    assert len(list(space)) == space.count() < space.cartesian_size


def test_grid_skips_what_it_was_told(space):
    grid = GridSearch(space)
    known = list(space)[::3]
    grid.warm_start([_told(c) for c in known])
    rest = _drain(grid, 7)
    assert {c.id for c in rest} == {c.id for c in space} - {c.id for c in known}


@pytest.mark.parametrize("n", [1, 4, 1000])
def test_random_covers_the_space_once_with_valid_configs(space, n):
    drawn = _drain(RandomSearch(space, seed=11), n)
    ids = [c.id for c in drawn]
    assert len(ids) == len(set(ids)) == space.count()
    assert all(space.is_valid(c) for c in drawn)


def test_random_is_reproducible_per_seed_and_differs_across_seeds(space):
    a = [c.id for c in RandomSearch(space, seed=5).ask(10)]
    b = [c.id for c in RandomSearch(space, seed=5).ask(10)]
    c = [c.id for c in RandomSearch(space, seed=6).ask(10)]
    assert a == b and a != c
    assert a != [x.id for x in list(space)[:10]]  # not simply the grid order


def test_random_avoids_measured_configs(space):
    strategy = RandomSearch(space, seed=2)
    known = list(space)[:20]
    strategy.warm_start([_told(c) for c in known])
    drawn = _drain(strategy, 8)
    assert not {c.id for c in drawn} & {c.id for c in known}
    assert len(drawn) == space.count() - 20


@pytest.mark.parametrize("cls", [GridSearch, RandomSearch])
def test_strategies_pickle_mid_run_and_continue_identically(space, cls):
    import pickle

    strategy = cls(space, seed=4)
    strategy.ask(7)
    copy = pickle.loads(pickle.dumps(strategy))
    assert [c.id for c in _drain(strategy, 5)] == [c.id for c in _drain(copy, 5)]


def test_registry_and_option_validation(space):
    assert isinstance(create_strategy("grid", space), GridSearch)
    assert isinstance(create_strategy("random", space, seed=3), RandomSearch)
    with pytest.raises(WorkbenchError, match="no option"):
        create_strategy("random", space, temperature=2)


def test_empty_space_proposes_nothing():
    empty = SearchSpace([Slot("a", (1, 2))], restrictions=["a > 5"])
    assert GridSearch(empty).ask(3) == [] and RandomSearch(empty).ask(3) == []
