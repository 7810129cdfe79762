"""The warm-start wrapper: given configs first (valid ones, each once), then the inner strategy."""

from __future__ import annotations

from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.space import Config, SearchSpace, Slot
from workbench.search.base import create_strategy
from workbench.search.seeded import Seeded, with_seeds


def space() -> SearchSpace:
    return SearchSpace((Slot("a", (1, 2, 4, 8)), Slot("b", (1, 2, 4))), restrictions=("a * b <= 16",))


def test_seeds_come_first_then_the_inner_strategy_which_is_told_them() -> None:
    s = space()
    seeds = [Config({"a": 8, "b": 2}), Config({"a": 8, "b": 4}), Config({"a": 1, "b": 1}), Config({"a": 8, "b": 2})]
    inner = create_strategy("random", s, seed=3)
    strategy = Seeded(inner, seeds)
    assert strategy.seeds == [Config({"a": 8, "b": 2}), Config({"a": 1, "b": 1})]  # invalid and repeated dropped
    strategy.exclude([Config({"a": 1, "b": 1}).id])  # measured already (the size's default)
    first = strategy.ask(2)
    assert first[0] == Config({"a": 8, "b": 2}) and first[1] not in seeds
    trials = [Trial(i, c, Measurement(Status.OK, {"latency_ms": 1.0 + i})) for i, c in enumerate(first)]
    strategy.tell(trials)
    assert {t.config.id for t in trials} <= inner.measured
    rest = strategy.ask(20)
    assert not {c.id for c in rest} & {c.id for c in first} and Config({"a": 1, "b": 1}) not in rest
    assert len(rest) == len(list(s)) - 3


def test_no_seeds_leaves_the_strategy_unwrapped() -> None:
    inner = create_strategy("random", space(), seed=0)
    assert with_seeds(inner, []) is inner
    assert isinstance(with_seeds(inner, [Config({"a": 1, "b": 1})]), Seeded)


def test_a_seed_still_being_measured_is_not_proposed_again() -> None:
    """The engine asks again before the first results are back (its workers are busy): the seeds
    it holds are taken, or the inner strategy hands them out a second time."""
    s = space()
    seeds = [Config({"a": 8, "b": 2}), Config({"a": 1, "b": 1})]
    strategy = Seeded(create_strategy("random", s, seed=3), seeds)
    first = strategy.ask(2)
    assert first == seeds
    rest = strategy.ask(100)  # nothing told yet
    assert not {c.id for c in rest} & {c.id for c in seeds}
    assert len(rest) == len(list(s)) - 2
