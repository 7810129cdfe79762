"""Slots, configs and the search space: validation, enumeration, exact counts, uniform sampling,
neighbours, explicit (recorded) spaces, derived spaces and the JSON round trip."""

from __future__ import annotations

import itertools
import json
import keyword
import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core.errors import RestrictionError, SpaceError
from workbench.core.domain.space import Config, SearchSpace, Slot


def reduction_space(**params) -> SearchSpace:
    slots = [
        Slot("block_size", (32, 64, 128, 256, 512, 1024), "launch", "threads per block", default=256),
        Slot("items_per_thread", (1, 2, 4, 8, 16), "launch", "elements per thread", default=4),
        Slot("vector_width", (1, 2, 4), "memory", "elements per load", default=4),
        Slot("strategy", ("atomic", "shared_tree", "warp_shuffle"), "reduction", "how blocks combine"),
        Slot("fast_math", (False, True), "compute", "use fast intrinsics"),
    ]
    restrictions = [
        "block_size * items_per_thread <= 4096",
        "items_per_thread % vector_width == 0",
        'strategy != "atomic" or block_size >= 128',
    ]
    return SearchSpace(slots, restrictions, params)


def brute_force(space: SearchSpace) -> list[Config]:
    """Valid configs by checking every cartesian point (the test oracle)."""
    out = []
    for values in itertools.product(*(s.values for s in space.slots)):
        config = Config(dict(zip(space.names, values)))
        if space.violated(config) is None:
            out.append(config)
    return out


# ---------------------------------------------------------------- slots


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"name": "2x", "values": (1,)}, "not a valid identifier"),
        ({"name": "class", "values": (1,)}, "not a valid identifier"),
        ({"name": "x", "values": ()}, "domain is empty"),
        ({"name": "x", "values": "abc"}, "must be a list"),
        ({"name": "x", "values": (1, "a")}, "mix types"),
        ({"name": "x", "values": (1, True)}, "mix types"),
        ({"name": "x", "values": (1, 2, 1)}, "value 1 appears twice"),
        ({"name": "x", "values": ("a b",)}, "not a short identifier"),
        ({"name": "x", "values": ("a" * 65,)}, "not a short identifier"),
        ({"name": "x", "values": (float("nan"),)}, "not a finite number"),
        ({"name": "x", "values": (None,)}, "not an int, float, bool or identifier"),
        ({"name": "x", "values": ([1],)}, "not an int, float, bool or identifier"),
        ({"name": "x", "values": (1, 2), "group": "misc"}, "group 'misc' is not one of launch, memory"),
        ({"name": "x", "values": (1, 2), "default": 3}, "default 3 is not allowed; allowed: 1, 2"),
        ({"name": "x", "values": (1, 2), "default": True}, "default True is not allowed"),
    ],
)
def test_bad_slots_are_refused(kwargs: dict, fragment: str) -> None:
    with pytest.raises(SpaceError, match=None) as info:
        Slot(**kwargs)
    assert fragment in str(info.value)


def test_slot_normalises_domains() -> None:
    assert Slot("x", [np.int64(4), 8]).values == (4, 8)
    assert type(Slot("x", [np.int64(4)]).values[0]) is int
    mixed = Slot("x", (1, 2.5), default=1)
    assert mixed.values == (1.0, 2.5) and all(type(v) is float for v in mixed.values)
    assert type(mixed.default) is float
    assert Slot("x", (1,), doc="  two\n lines ").doc == "two lines"
    assert Slot("b", (False, True)).kind == "bool" and not Slot("b", (False, True)).ordered
    assert Slot("s", ("a", "b")).kind == "str" and Slot("n", (1, 2)).ordered


def test_slot_json_round_trip_keeps_types() -> None:
    for slot in [
        Slot("flag", (False, True), "compute", "a bool", default=True),
        Slot("n", (1, 2, 4), "launch", "ints", default=2),
        Slot("f", (0.5, 1.0, 2.0), "memory", "floats"),
        Slot("s", ("atomic", "tree"), "reduction"),
    ]:
        back = Slot.from_dict(json.loads(json.dumps(slot.to_dict())))
        assert back == slot
        assert [type(v) for v in back.values] == [type(v) for v in slot.values]
        assert type(back.default) is type(slot.default)


@pytest.mark.parametrize(
    "data, fragment",
    [
        ([1, 2], "must be an object"),
        ({"values": [1]}, "missing field 'name'"),
        ({"name": "x"}, "missing field 'values'"),
        ({"name": "x", "values": 3}, "values must be a list"),
        ({"name": "x", "values": [1], "colour": "red"}, "unknown field 'colour'"),
    ],
)
def test_slot_from_dict_explains(data, fragment: str) -> None:
    with pytest.raises(SpaceError) as info:
        Slot.from_dict(data)
    assert fragment in str(info.value)


# ---------------------------------------------------------------- space construction and validation


def test_enumeration_matches_brute_force_in_stable_order() -> None:
    space = reduction_space()
    listed = list(space)
    assert listed == brute_force(space)  # slot order, domain order, last slot fastest
    assert space.count() == len(listed) == 330  # by hand: 165 (block, items, width, strategy) x 2 fast_math
    assert space.cartesian_size == 6 * 5 * 3 * 3 * 2
    assert all(space.is_valid(c) for c in listed)
    assert len({c.id for c in listed}) == len(listed)


def test_space_refuses_bad_declarations() -> None:
    a = Slot("a", (1, 2))
    with pytest.raises(SpaceError, match="declared twice"):
        SearchSpace([a, a])
    with pytest.raises(SpaceError, match="same name as a slot"):
        SearchSpace([a], params={"a": 3})
    with pytest.raises(SpaceError, match="is not a number, bool or text"):
        SearchSpace([a], params={"n": [1, 2]})
    with pytest.raises(RestrictionError, match="unknown name 'b'"):
        SearchSpace([a], ["b > 1"])
    with pytest.raises(RestrictionError, match="arithmetic"):
        SearchSpace([Slot("s", ("x", "y"))], ["s * 2 == 4"])


def test_config_validates_and_explains() -> None:
    space = reduction_space()
    good = {"block_size": 256, "items_per_thread": 4, "vector_width": 4, "strategy": "atomic", "fast_math": True}
    config = space.config(good)
    assert isinstance(config, Config) and config.id == Config(good).id
    with pytest.raises(SpaceError, match="unknown slot 'tile'"):
        space.config({**good, "tile": 1})
    with pytest.raises(SpaceError, match="missing slot 'fast_math'"):
        space.config({k: v for k, v in good.items() if k != "fast_math"})
    with pytest.raises(SpaceError) as info:
        space.config({**good, "block_size": 100})
    assert "slot block_size: value 100 is not allowed; allowed: 32, 64, 128, 256, 512, 1024" in str(info.value)
    for wrong in (256.0, "256", True):
        with pytest.raises(SpaceError, match="slot block_size"):
            space.config({**good, "block_size": wrong})
    with pytest.raises(SpaceError, match="slot fast_math"):
        space.config({**good, "fast_math": 1})
    with pytest.raises(SpaceError, match='violates restriction "block_size \\* items_per_thread <= 4096"'):
        space.config({**good, "block_size": 1024, "items_per_thread": 8})
    with pytest.raises(SpaceError, match="must be a mapping"):
        space.config([("block_size", 256)])  # type: ignore[arg-type]


def test_int_is_accepted_for_float_slot_and_normalised() -> None:
    space = SearchSpace([Slot("ratio", (0.5, 1.0, 2.0)), Slot("n", (1, 2))])
    config = space.config({"ratio": 1, "n": np.int64(2)})
    assert type(config["ratio"]) is float and type(config["n"]) is int
    assert config.id == Config({"ratio": 1.0, "n": 2}).id
    assert config in space
    assert not space.is_valid({"ratio": 1, "n": 2})  # not normalised: would carry another id


def test_is_valid_and_violated() -> None:
    space = reduction_space()
    ok = {"block_size": 64, "items_per_thread": 2, "vector_width": 2, "strategy": "shared_tree", "fast_math": False}
    assert space.is_valid(ok) and space.violated(ok) is None
    bad = {**ok, "strategy": "atomic"}
    assert not space.is_valid(bad)
    assert space.violated(bad) == 'strategy != "atomic" or block_size >= 128'
    assert not space.is_valid({**ok, "block_size": 65})
    assert not space.is_valid({**ok, "extra": 1})
    assert not space.is_valid({k: v for k, v in ok.items() if k != "strategy"})
    assert not space.is_valid("not a mapping")  # type: ignore[arg-type]


def test_params_are_visible_to_restrictions() -> None:
    slots = [Slot("block_size", (64, 128, 256, 512)), Slot("items", (1, 2, 4))]
    space = SearchSpace(slots, ["block_size * items <= n"], {"n": 512})
    assert space.count() == sum(1 for b in (64, 128, 256, 512) for i in (1, 2, 4) if b * i <= 512)
    assert space.with_params({"n": 64}).count() == 1
    assert space.params["n"] == 512
    with pytest.raises(TypeError):
        space.params["n"] = 3  # type: ignore[index]


def test_restriction_on_params_alone() -> None:
    slots = [Slot("a", (1, 2))]
    assert SearchSpace(slots, ["n > 10"], {"n": 20}).count() == 2
    empty = SearchSpace(slots, ["n > 10"], {"n": 5})
    assert empty.count() == 0 and list(empty) == []
    assert empty.sample(np.random.default_rng(0), 5) == []
    assert empty.violated({"a": 1}) == "n > 10"
    with pytest.raises(SpaceError, match='violates restriction "n > 10"'):
        empty.config({"a": 1})


def test_division_by_zero_makes_only_that_config_invalid() -> None:
    space = SearchSpace([Slot("a", (0, 1, 2, 3)), Slot("b", (0, 2, 4))], ["b % a == 0", "b / a >= 1"])
    assert sorted((c["a"], c["b"]) for c in space) == [(1, 2), (1, 4), (2, 2), (2, 4)]
    assert space.count() == 4


def test_default_config() -> None:
    space = reduction_space()
    default = space.default_config()
    assert default is None  # strategy and fast_math declare no default
    full = SearchSpace(
        [Slot(s.name, s.values, s.group, s.doc, s.default if s.default is not None else s.values[-1]) for s in space.slots],
        space.restrictions,
    )
    assert full.default_config() == Config(
        {"block_size": 256, "items_per_thread": 4, "vector_width": 4, "strategy": "warp_shuffle", "fast_math": True}
    )
    tight = reduction_space().with_restrictions(["block_size < 256"])
    assert tight.default_config() is None  # defaults violate a restriction
    with_all = reduction_space().with_domains({"strategy": ("shared_tree",), "fast_math": (False,)})
    assert with_all.default_config() is None  # slots without a default: no default config
    explicit = SearchSpace.explicit(
        [Slot("a", (1, 2), default=2), Slot("b", (1, 2), default=1)], [{"a": 1, "b": 1}, {"a": 2, "b": 2}]
    )
    assert explicit.default_config() is None  # not a recorded point
    assert explicit.with_domains({"a": (1, 2)}).default_config() is None
    assert SearchSpace(explicit.slots).default_config() == Config({"a": 2, "b": 1})


def test_values_index_and_from_indices() -> None:
    space = reduction_space()
    for config in space.sample(np.random.default_rng(3), 20):
        idx = space.values_index(config)
        assert space.from_indices(idx) == config
        assert all(space.slots[i].values[p] == config[s.name] for i, (p, s) in enumerate(zip(idx, space.slots)))
    with pytest.raises(SpaceError, match="expected 5 indices"):
        space.from_indices((0, 0))
    with pytest.raises(SpaceError, match="index 6 outside 0..5"):
        space.from_indices((6, 0, 0, 0, 0))
    with pytest.raises(SpaceError, match="slot block_size: value 3"):
        space.values_index({"block_size": 3, "items_per_thread": 1, "vector_width": 1, "strategy": "a", "fast_math": 0})


def test_slot_lookup() -> None:
    space = reduction_space()
    assert space.slot("vector_width").group == "memory"
    assert space.names[0] == "block_size"
    with pytest.raises(SpaceError, match="unknown slot 'nope'; slots: block_size"):
        space.slot("nope")


# ---------------------------------------------------------------- counting


@pytest.mark.timeout(60)  # guards against enumerating the product (hours), not a speed claim
def test_count_of_independent_groups_multiplies() -> None:
    # 4 groups of 2 linked slots with 30 values each plus 3 free slots: 30^8 * 10^3 points.
    slots, restrictions = [], []
    for g in range(4):
        slots += [Slot(f"a{g}", tuple(range(1, 31))), Slot(f"b{g}", tuple(range(1, 31)))]
        restrictions.append(f"a{g} * b{g} <= 60")
    slots += [Slot(f"free{k}", tuple(range(10))) for k in range(3)]
    space = SearchSpace(slots, restrictions)
    per_group = sum(1 for a in range(1, 31) for b in range(1, 31) if a * b <= 60)
    assert space.count() == per_group**4 * 1000
    assert space.cartesian_size == 30**8 * 1000


@pytest.mark.timeout(60)  # guards against enumerating the product (hours), not a speed claim
def test_count_of_a_chain_is_memoised() -> None:
    # a0 - a1 - ... - a9 linked pairwise: 20^10 cartesian points, counted without enumerating them.
    slots = [Slot(f"a{i}", tuple(range(20))) for i in range(10)]
    restrictions = [f"a{i} <= a{i + 1} + 1" for i in range(9)]
    space = SearchSpace(slots, restrictions)
    total = space.count()
    # dynamic-programming oracle over the chain
    ways = np.ones(20, dtype=object)
    for _ in range(9):
        ways = np.array([sum(ways[p] for p in range(20) if p <= v + 1) for v in range(20)], dtype=object)
    assert total == int(sum(ways))


@pytest.mark.timeout(60)  # guards against enumerating the product (hours), not a speed claim
def test_count_of_a_scrambled_ring() -> None:
    # colourings of a 12-cycle with 10 colours, the ring declared out of order: 10^12 points
    ring = [0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11]
    slots = [Slot(f"c{i}", tuple(range(10))) for i in range(12)]
    restrictions = [f"c{ring[i]} != c{ring[(i + 1) % 12]}" for i in range(12)]
    space = SearchSpace(slots, restrictions)
    assert space.count() == 9**12 + 9  # chromatic polynomial of a cycle: (k-1)^n + (-1)^n (k-1)
    got = space.sample(np.random.default_rng(4), 20)
    assert len(got) == 20 and all(space.is_valid(c) for c in got)


# ---------------------------------------------------------------- sampling


def test_sample_is_valid_distinct_reproducible_and_respects_exclude() -> None:
    space = reduction_space()
    first = space.sample(np.random.default_rng(7), 50)
    assert len(first) == 50 and len({c.id for c in first}) == 50 and all(space.is_valid(c) for c in first)
    assert first == space.sample(np.random.default_rng(7), 50)
    excluded = {c.id for c in first}
    more = space.sample(np.random.default_rng(8), 100, exclude=excluded)
    assert len(more) == 100 and not excluded & {c.id for c in more}


def test_sample_returns_fewer_when_fewer_remain() -> None:
    space = reduction_space()
    everything = list(space)
    keep = everything[:7]
    excluded = {c.id for c in everything[7:]}
    got = space.sample(np.random.default_rng(1), 20, exclude=excluded)
    assert sorted(c.id for c in got) == sorted(c.id for c in keep)
    assert space.sample(np.random.default_rng(1), 5, exclude={c.id for c in everything}) == []
    assert len(space.sample(np.random.default_rng(1), 10_000)) == space.count()
    assert space.sample(np.random.default_rng(1), 0) == []


def _chi_square_ok(counts: Counter, expected_keys: set, draws: int) -> bool:
    """Pearson chi-square against uniform, with a generous threshold (false alarm ~1e-6)."""
    k = len(expected_keys)
    expected = draws / k
    stat = sum((counts.get(key, 0) - expected) ** 2 / expected for key in expected_keys)
    dof = k - 1
    return set(counts) <= expected_keys and stat < dof + 7 * (2 * dof) ** 0.5 + 25


def test_rejection_sampling_is_uniform() -> None:
    space = SearchSpace([Slot("a", tuple(range(6))), Slot("b", tuple(range(6)))], ["a + b <= 6"])
    valid = {c.id for c in space}
    rng = np.random.default_rng(11)
    counts = Counter(space.sample(rng, 1)[0].id for _ in range(4000))
    assert _chi_square_ok(counts, valid, 4000)


def test_exact_sampling_is_uniform_when_valid_fraction_is_tiny() -> None:
    # 0.07% valid: rejection gives up and the counted sampler takes over.
    slots = [Slot(f"x{i}", tuple(range(12))) for i in range(4)]
    space = SearchSpace(slots, ["x0 == x1", "x1 + x2 <= 2", "x3 in (0, 11)"])
    valid = {c.id for c in space}
    assert len(valid) == 12  # (x0=x1=x, x2 <= 2 - x) for x in 0..2: 3+2+1, times 2 for x3
    rng = np.random.default_rng(5)
    counts: Counter = Counter()
    for _ in range(300):
        for config in space.sample(rng, 4):
            counts[config.id] += 1
    # sampling 4 without replacement from 12 is uniform per config: each appears with probability 1/3
    assert set(counts) == valid
    assert all(abs(n - 100) < 45 for n in counts.values())


@pytest.mark.timeout(60)  # guards against enumerating the product (hours), not a speed claim
def test_sampling_a_huge_space_is_lazy() -> None:
    slots = [Slot(f"s{i}", tuple(range(1, 11))) for i in range(7)]  # 10^7 points
    restrictions = ["s0 * s1 <= 40", "s2 % s3 == 0 or s3 == 1", "s4 <= 2 * s5", "s6 != s0"]
    space = SearchSpace(slots, restrictions)
    got = space.sample(np.random.default_rng(0), 100)
    assert len(got) == 100 and all(space.is_valid(c) for c in got)
    first = next(iter(space))  # lazy: the first config comes without enumerating the rest
    assert space.is_valid(first)


def test_sampling_beyond_64_bit_counts() -> None:
    slots = [Slot(f"s{i}", tuple(range(30))) for i in range(16)]  # 30^16 ~ 4e23 points
    space = SearchSpace(slots, [f"s{i} != s{i + 1}" for i in range(15)] + ["s0 == 0 and s15 == 0"])
    assert space.count() == _chain_count(30, 16)
    got = space.sample(np.random.default_rng(2), 20)
    assert len(got) == 20 and all(space.is_valid(c) for c in got)


def _chain_count(k: int, n: int) -> int:
    """Sequences of length n over k symbols, adjacent different, first and last symbol 0."""
    ways = [1] + [0] * (k - 1)
    for _ in range(n - 1):
        total = sum(ways)
        ways = [total - w for w in ways]
    return ways[0]


# ---------------------------------------------------------------- neighbours


def test_neighbours() -> None:
    space = reduction_space()
    origin = space.config(
        {"block_size": 256, "items_per_thread": 4, "vector_width": 2, "strategy": "atomic", "fast_math": False}
    )
    allnb = space.neighbours(origin)
    adjacent = space.neighbours(origin, adjacent_only=True)
    for nb in allnb:
        assert space.is_valid(nb)
        assert sum(nb[k] != origin[k] for k in space.names) == 1
    expected = [c for c in space if sum(c[k] != origin[k] for k in space.names) == 1]
    assert sorted(c.id for c in allnb) == sorted(c.id for c in expected)
    assert set(adjacent) <= set(allnb)
    moved_block = sorted(c["block_size"] for c in adjacent if c["block_size"] != 256)
    assert moved_block == [128, 512]
    moved_strategy = sorted(c["strategy"] for c in adjacent if c["strategy"] != "atomic")
    assert moved_strategy == ["shared_tree", "warp_shuffle"]  # unordered slots: every other value


def test_neighbours_of_an_invalid_config_are_still_valid() -> None:
    space = reduction_space()
    invalid = {"block_size": 32, "items_per_thread": 4, "vector_width": 2, "strategy": "atomic", "fast_math": False}
    assert not space.is_valid(invalid)
    nbs = space.neighbours(invalid)
    assert nbs and all(space.is_valid(c) for c in nbs)


# ---------------------------------------------------------------- explicit spaces


def test_explicit_space() -> None:
    base = reduction_space()
    points = list(base)[::5]
    space = SearchSpace.explicit(base.slots, points + points[:3])  # repeats are kept once
    assert space.is_explicit and space.count() == len(points) == len(list(space))
    assert all(space.is_valid(p) for p in points)
    missing = next(c for c in base if c not in set(points))
    assert not space.is_valid(missing)
    with pytest.raises(SpaceError, match=f"is not one of the {len(points)} recorded points"):
        space.config(missing)
    got = space.sample(np.random.default_rng(0), 30)
    assert len({c.id for c in got}) == 30 and all(c in space for c in got)
    rest = space.sample(np.random.default_rng(0), 1000, exclude={c.id for c in got})
    assert len(rest) == len(points) - 30
    for point in points[:20]:
        nbs = space.neighbours(point)
        member_nbs = [c for c in points if sum(c[k] != point[k] for k in space.names) == 1]
        assert sorted(c.id for c in nbs) == sorted(c.id for c in member_nbs)
        adjacent = space.neighbours(point, adjacent_only=True)
        assert set(adjacent) <= set(nbs)


def test_explicit_adjacent_neighbours_take_nearest_recorded_values() -> None:
    slots = [Slot("n", (1, 2, 3, 4, 5)), Slot("m", (0, 1))]
    space = SearchSpace.explicit(slots, [{"n": v, "m": 0} for v in (1, 3, 5)] + [{"n": 3, "m": 1}])
    origin = {"n": 3, "m": 0}
    adjacent = space.neighbours(origin, adjacent_only=True)
    assert sorted((c["n"], c["m"]) for c in adjacent) == [(1, 0), (3, 1), (5, 0)]
    assert sorted((c["n"], c["m"]) for c in space.neighbours({"n": 1, "m": 0}, adjacent_only=True)) == [(3, 0)]


def test_explicit_space_validates_points_and_applies_restrictions() -> None:
    slots = [Slot("a", (1, 2, 3)), Slot("b", (1, 2))]
    with pytest.raises(SpaceError, match="point 1: slot a: value 7 is not allowed"):
        SearchSpace.explicit(slots, [{"a": 1, "b": 1}, {"a": 7, "b": 1}])
    with pytest.raises(SpaceError, match="point 0: missing slot 'b'"):
        SearchSpace.explicit(slots, [{"a": 1}])
    space = SearchSpace.explicit(slots, [{"a": a, "b": b} for a in (1, 2, 3) for b in (1, 2)], ["a != b"])
    assert space.count() == 4
    loosened = space.with_restrictions([])
    assert loosened.count() == 6  # the recording keeps every point; restrictions only filter
    narrowed = space.with_domains({"a": (1, 2)})
    assert narrowed.count() == 2 and narrowed.is_explicit


# ---------------------------------------------------------------- derived spaces and persistence


def test_with_domains_and_restrictions() -> None:
    space = reduction_space()
    smaller = space.with_domains({"block_size": (128, 256)})
    assert smaller.slot("block_size").values == (128, 256)
    assert smaller.slot("block_size").default == 256 and smaller.restrictions == space.restrictions
    assert smaller.count() == len(brute_force(smaller))
    dropped = space.with_domains({"block_size": (64, 128)})
    assert dropped.slot("block_size").default is None
    with pytest.raises(SpaceError, match="unknown slot 'nope'"):
        space.with_domains({"nope": (1,)})
    with pytest.raises(SpaceError, match="domain is empty"):
        space.with_domains({"block_size": ()})
    free = space.with_restrictions([])
    assert free.count() == space.cartesian_size and space.count() == 330  # original unchanged


def test_to_dict_round_trip_keeps_ids() -> None:
    for space in (reduction_space(n=3), SearchSpace.explicit(reduction_space().slots, list(reduction_space())[:40])):
        data = json.loads(json.dumps(space.to_dict()))
        back = SearchSpace.from_dict(data)
        assert back == space
        assert [c.id for c in back] == [c.id for c in space]
        assert back.is_explicit == space.is_explicit


@pytest.mark.parametrize(
    "data, fragment",
    [
        ("nope", "must be an object"),
        ({"slots": 3}, "'slots' must be a list"),
        ({"slots": [], "junk": 1}, "unknown field 'junk'"),
        ({"slots": [{"name": "a", "values": [1]}], "restrictions": "a > 0"}, "'restrictions' must be a list"),
        ({"slots": [{"name": "a", "values": [1]}], "params": [1]}, "'params' must be an object"),
        ({"slots": [{"name": "a", "values": [1]}], "points": {}}, "'points' must be a list"),
        ({"slots": [{"name": "a", "values": [1]}], "points": [[1, 2]]}, "point 0 must be a list of 1 values"),
        ({"slots": [{"name": "a", "values": [1]}], "points": [[5]]}, "point 0: slot a: value 5"),
        ({"slots": [{"name": "a", "values": [1]}], "restrictions": ["a.real > 0"]}, "attribute access"),
    ],
)
def test_from_dict_explains(data, fragment: str) -> None:
    with pytest.raises(SpaceError) as info:
        SearchSpace.from_dict(data)
    assert fragment in str(info.value)


def test_pickles_for_worker_processes() -> None:
    space = reduction_space(n=1)
    clone = pickle.loads(pickle.dumps(space))
    assert clone == space and clone.count() == space.count()
    explicit = SearchSpace.explicit(space.slots, list(space)[:10])
    assert pickle.loads(pickle.dumps(explicit)).points == explicit.points
    filtered = SearchSpace.explicit(space.slots, list(space)[:10], ["block_size >= 128"], {"n": 1})
    clone = pickle.loads(pickle.dumps(filtered))
    assert clone == filtered and clone.points == filtered.points and len(clone.points) < 10
    assert clone.with_restrictions([]).count() == 10  # the points the restriction hides travel too


# ---------------------------------------------------------------- properties over random spaces

TEMPLATES = (
    "{a} * {b} <= {k}",
    "{a} % {b} == 0",
    "{a} + {b} != {k}",
    "{a} // {b} >= 1",
    "{a} <= {b}",
    "{a} in (1, 2, {k})",
    "max({a}, {b}) - min({a}, {b}) <= {k}",
    "{a} < {b} or {c} == {k}",
    "{a} / {b} <= n",
    "{a} ** 2 <= {b} * n",
    "({a} if {b} > {k} else {c}) >= 2",
)
TEXT_TEMPLATES = (
    '{t} != "atomic" or {a} >= {k}',
    '{t} in ("tree", "warp") and {a} <= n',
    '{t} == "tree" or {u} == "atomic"',
    "{t} < {u} or {a} == {k}",
)


@st.composite
def spaces(draw: st.DrawFn) -> SearchSpace:
    """Random small spaces: int, float, bool and text slots, restrictions from templates, a parameter."""
    n = draw(st.integers(1, 5))
    slots = []
    for i in range(n):
        kind = draw(st.sampled_from(["int", "int", "int", "float", "bool", "str"]))
        if kind == "bool":
            values: tuple = (False, True)
        elif kind == "str":
            values = tuple(draw(st.lists(st.sampled_from(["atomic", "tree", "warp"]), min_size=1, unique=True)))
        elif kind == "float":
            values = tuple(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.5, 4.0]), min_size=1, unique=True)))
        else:
            values = tuple(draw(st.lists(st.integers(0, 12), min_size=1, max_size=5, unique=True)))
        slots.append(Slot(f"s{i}", values))
    numeric = [s.name for s in slots if s.kind != "str"]
    text = [s.name for s in slots if s.kind == "str"]
    restrictions = []
    for _ in range(draw(st.integers(0, 4))):
        k = draw(st.integers(0, 30))
        if text and numeric and draw(st.booleans()):
            template = draw(st.sampled_from(TEXT_TEMPLATES))
            a = draw(st.sampled_from(numeric))
            t, u = draw(st.sampled_from(text)), draw(st.sampled_from(text))
            restrictions.append(template.format(a=a, t=t, u=u, k=k))
        elif numeric:
            template = draw(st.sampled_from(TEMPLATES))
            a, b, c = (draw(st.sampled_from(numeric)) for _ in range(3))
            restrictions.append(template.format(a=a, b=b, c=c, k=k))
    return SearchSpace(slots, restrictions, {"n": draw(st.integers(0, 20))})


PROPERTY_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY_SETTINGS
@given(space=spaces())
def test_property_enumeration_and_count(space: SearchSpace) -> None:
    listed = list(space)
    assert listed == brute_force(space)
    assert space.count() == len(listed)
    assert all(space.is_valid(c) for c in listed)
    everything = space.sample(np.random.default_rng(0), 10**6)  # exhausts: takes the listing path
    assert sorted(c.id for c in everything) == sorted(c.id for c in listed)


@PROPERTY_SETTINGS
@given(space=spaces(), seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), n_excluded=st.integers(0, 20))
def test_property_sample(space: SearchSpace, seed: int, n: int, n_excluded: int) -> None:
    rng = np.random.default_rng(seed)
    listed = list(space)
    excluded = {c.id for c in listed[:n_excluded]}
    got = space.sample(rng, n, exclude=excluded)
    ids = [c.id for c in got]
    assert len(ids) == len(set(ids)) == min(n, len(listed) - len(excluded))
    assert all(space.is_valid(c) for c in got) and not excluded & set(ids)


@PROPERTY_SETTINGS
@given(space=spaces(), pick=st.integers(0, 10**6), adjacent=st.booleans())
def test_property_neighbours(space: SearchSpace, pick: int, adjacent: bool) -> None:
    listed = list(space)
    if not listed:
        return
    origin = listed[pick % len(listed)]
    nbs = space.neighbours(origin, adjacent_only=adjacent)
    assert len({c.id for c in nbs}) == len(nbs)
    for nb in nbs:
        assert space.is_valid(nb)
        assert sum(nb[k] != origin[k] for k in space.names) == 1
    if not adjacent:
        expected = {c.id for c in listed if sum(c[k] != origin[k] for k in space.names) == 1}
        assert {c.id for c in nbs} == expected


@PROPERTY_SETTINGS
@given(space=spaces(), explicit=st.booleans())
def test_property_round_trip(space: SearchSpace, explicit: bool) -> None:
    if explicit:
        space = SearchSpace.explicit(space.slots, list(space)[::2], space.restrictions, space.params)
    back = SearchSpace.from_dict(json.loads(json.dumps(space.to_dict())))
    assert [c.id for c in back] == [c.id for c in space]
    assert back.count() == space.count()


def test_exclude_may_hold_configs_as_well_as_ids() -> None:
    space = SearchSpace([Slot("a", (1, 2, 3))])
    got = space.sample(np.random.default_rng(0), 5, exclude=[Config({"a": 1}), Config({"a": 2}).id])
    assert [c["a"] for c in got] == [3]


def test_space_without_slots_has_one_empty_config() -> None:
    space = SearchSpace([])
    assert space.count() == space.cartesian_size == 1 and list(space) == [Config({})]
    assert space.sample(np.random.default_rng(0), 3) == [Config({})]


# ---------------------------------------------------------------- counting with NumPy (dense restrictions)

import contextlib  # noqa: E402

import workbench.core.domain.space_count as space_module  # noqa: E402


@contextlib.contextmanager
def numpy_counting(store_max: int | None = None):
    """Force every linked component onto the NumPy counting path (and optionally a tiny store)."""
    saved = (space_module.VECTOR_MIN_POINTS, space_module.VECTOR_GAIN, space_module.STORE_MAX_POINTS)
    space_module.VECTOR_MIN_POINTS, space_module.VECTOR_GAIN = 0, 10**9
    if store_max is not None:
        space_module.STORE_MAX_POINTS = store_max
    try:
        yield
    finally:
        space_module.VECTOR_MIN_POINTS, space_module.VECTOR_GAIN, space_module.STORE_MAX_POINTS = saved


def test_dense_restriction_is_counted_with_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """10^6 points under one restriction: counted by NumPy over the grid, never config by config
    (how long either takes: bench/space_sampling.py)."""
    slots = [Slot(f"s{i}", tuple(range(1, 11))) for i in range(6)]
    space = SearchSpace(slots, ["s0 * s1 * s2 * s3 * s4 * s5 <= 2000"])
    monkeypatch.setattr(space_module.Component, "_dfs_count", lambda *a: pytest.fail("counted by backtracking"))
    total = space.count()
    monkeypatch.undo()
    grids = np.meshgrid(*[np.arange(1, 11)] * 6, indexing="ij", sparse=True)
    product = grids[0]
    for g in grids[1:]:
        product = product * g
    assert total == int((product <= 2000).sum())
    got = space.sample(np.random.default_rng(0), 50, exclude=())
    assert len({c.id for c in got}) == 50 and all(space.is_valid(c) for c in got)


def test_numpy_counting_falls_back_per_config_where_numpy_would_differ() -> None:
    slots = [Slot("x", tuple(float(v) for v in range(-20, 20))), Slot("y", (0.3, 0.7, 1.1)), Slot("z", (0, 1, 2))]
    space = SearchSpace(slots, ["x % y < 0.5 or z == 2", "x // y != z"])  # float % and //: no NumPy
    with numpy_counting():
        assert space.with_restrictions(space.restrictions).count() == len(brute_force(space))


@PROPERTY_SETTINGS
@given(space=spaces(), seed=st.integers(0, 2**32 - 1), store=st.sampled_from([None, 0, 3]))
def test_property_numpy_counting_agrees(space: SearchSpace, seed: int, store: int | None) -> None:
    listed = brute_force(space)
    with numpy_counting(store_max=store):
        fresh = SearchSpace(space.slots, space.restrictions, space.params)
        assert fresh.count() == len(listed)
        got = fresh.sample(np.random.default_rng(seed), 10**6)  # exhaustion lists through the store
        assert sorted(c.id for c in got) == sorted(c.id for c in listed)
        drawn = [fresh.draw_exact(np.random.default_rng(seed)) for _ in range(5)] if listed else []
        assert all(fresh.is_valid(c) for c in drawn)


def test_numpy_exact_draws_are_uniform() -> None:
    slots = [Slot(f"x{i}", tuple(range(5))) for i in range(4)]
    restrictions = ["x0 + x1 + x2 + x3 <= 3"]  # 35 valid points of 625
    for store in (None, 0):  # stored positions, and rejection within the component
        with numpy_counting(store_max=store):
            space = SearchSpace(slots, restrictions)
            valid = {c.id for c in space}
            assert space.count() == len(valid) == 35
            rng = np.random.default_rng(9)
            counts = Counter(space.draw_exact(rng).id for _ in range(3500))
            assert _chi_square_ok(counts, valid, 3500)


def test_from_canonical_builds_the_same_config_as_the_constructor() -> None:
    """The bulk-load constructor (used by the session loader) agrees with ``Config()`` on id, hash,
    equality and pickling, given the canonical text."""
    import pickle

    from workbench.core.domain.space import canonical_json

    for values in ({"b": 2, "a": True, "c": "tree", "z": -7}, {"x": 0.5}, {}):
        fast, slow = Config.from_canonical(dict(values), canonical_json(values)), Config(values)
        assert (fast.id, hash(fast), fast.to_dict(), repr(fast)) == (slow.id, hash(slow), slow.to_dict(), repr(slow))
        assert fast == slow and slow == fast and pickle.loads(pickle.dumps(fast)) == slow


# ---------------------------------------------------------------- the two kinds behind one contract

from workbench.core.domain.space import ProductSpace, RecordedSpace  # noqa: E402


def test_each_kind_keeps_its_kind_through_derivation_pickling_and_round_trip() -> None:
    slots = [Slot("a", (1, 2, 3)), Slot("b", (1, 2))]
    product = SearchSpace(slots, ["a != b"])
    recorded = SearchSpace.explicit(slots, [{"a": 1, "b": 2}, {"a": 3, "b": 1}, {"a": 2, "b": 2}], ["a != b"])
    assert type(product) is ProductSpace and not product.is_explicit
    assert type(recorded) is RecordedSpace and recorded.is_explicit
    for space, kind in ((product, ProductSpace), (recorded, RecordedSpace)):
        assert isinstance(space, SearchSpace)
        assert type(space.with_restrictions([])) is kind
        assert type(space.with_domains({"a": (1, 2)})) is kind
        assert type(pickle.loads(pickle.dumps(space))) is kind
        assert type(SearchSpace.from_dict(space.to_dict())) is kind
    assert recorded.count() == 2 and product.count() == 4
    assert recorded.with_restrictions([]).count() == 3


def test_the_contract_cannot_be_built_half_implemented() -> None:
    class Partial(SearchSpace):  # a new kind must answer every question the contract asks
        def __init__(self) -> None:
            self._setup([Slot("a", (1, 2))], (), None)

    with pytest.raises(TypeError):
        Partial()


@settings(max_examples=40, deadline=None)
@given(size=st.integers(0, 60), seed=st.integers(0, 2**16),
       calls=st.lists(st.tuples(st.integers(1, 70), st.sets(st.integers(0, 80), max_size=70)), min_size=1, max_size=8))
def test_a_recordings_draws_are_those_of_listing_what_remains(size: int, seed: int, calls) -> None:
    """The sampler of a recording keeps what remains in a tree instead of listing it per call; the
    draws must be exactly those of the list (the same generator call on the same remaining points,
    in recorded order), whatever the exclusions do between calls: grow, shrink, name no point."""
    from workbench.core.domain.space import RecordedSpace

    space = RecordedSpace([Slot("x", tuple(range(max(size, 1))))], [{"x": i} for i in range(size)])
    points = list(space)
    fast, slow = np.random.default_rng(seed), np.random.default_rng(seed)
    for n, excluded in calls:
        taken = {points[i].id for i in excluded if i < len(points)} | {f"nobody-{i}" for i in excluded if i >= 60}
        remaining = [c for c in points if c.id not in taken]
        expected = ([remaining[int(i)] for i in slow.choice(len(remaining), size=min(n, len(remaining)), replace=False)]
                    if remaining else [])
        assert space.sample(fast, n, taken) == expected


def test_counting_a_space_that_needs_too_many_checks_is_one_error_not_a_silent_wait(monkeypatch):
    """A restriction linking long domains (three slots of 1,000 values in one sum) needs about a
    billion checks to count; every command that counts the space used to sit silent for hours."""
    from workbench.core.domain import space_count

    monkeypatch.setattr(space_count, "MAX_COUNT_CHECKS", 100_000)
    values = tuple(range(1, 1001))
    slots = [Slot(name, values, "compute", "") for name in ("z0", "z1", "z2")]
    linked = SearchSpace(slots, ["z0 != z1", "(z0 + z1 + z2) % 7 != 4"], {})  # the widest is named
    with pytest.raises(SpaceError, match=r"needs more than 100,000 checks: the restriction '\(z0 \+ z1 \+ z2\) % 7 != 4' "
                                          r"links the slots z0, z1, z2 \(1,000 x 1,000 x 1,000 values\)"):
        linked.count()
    # the same domains under restrictions that each read fewer slots count at once
    assert SearchSpace(slots, ["z0 % 7 != 4", "z1 != z2"], {}).count() == 857 * 1000 * 999
    # slots linked through several restrictions, none reading them all: each is named (the one
    # named alone was said to link slots it does not read)
    chained = SearchSpace(slots, ["(z0 * z1) % 7 != 4", "(z1 + z2) % 5 != 1"], {})
    with pytest.raises(SpaceError, match=r"the restrictions '\(z0 \* z1\) % 7 != 4', '\(z1 \+ z2\) % 5 != 1' link "
                                          r"the slots z0, z1, z2 \(1,000 x 1,000 x 1,000 values\); narrow their "
                                          r"domains or split the restrictions"):
        chained.count()


_IDENTIFIERS = st.text(st.sampled_from("aZ_9éßΩλ"), min_size=1, max_size=6).filter(
    lambda text: text.isidentifier() and not keyword.iskeyword(text))


@st.composite
def _wide_domains(draw: st.DrawFn) -> list[Slot]:
    """Slots whose names and values stress the canonical text: accented and Greek identifiers (JSON
    escapes them), floats from subnormal to huge, 64-bit integers, bools."""
    names = draw(st.lists(_IDENTIFIERS, min_size=1, max_size=6, unique=True))
    slots = []
    for name in names:
        kind = draw(st.sampled_from(["int", "float", "bool", "str"]))
        if kind == "int":
            values = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=4, unique=True))
        elif kind == "float":
            values = draw(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=4,
                                   unique_by=lambda v: v if v else 0.0))
        elif kind == "bool":
            values = [False, True]
        else:
            values = draw(st.lists(_IDENTIFIERS, min_size=1, max_size=4, unique=True))
        slots.append(Slot(name, tuple(values)))
    return slots


@settings(max_examples=80, deadline=None)
@given(slots=_wide_domains(), data=st.data())
def test_configs_a_space_builds_are_the_configs_their_values_make(slots: list[Slot], data: st.DataObject) -> None:
    """A space writes a config's canonical text from per-value pieces: its id, hash, equality and
    slot order must be exactly what ``Config()`` of the same values gives, for any name and value."""
    space = SearchSpace(slots)
    indices = [data.draw(st.integers(0, len(slot.values) - 1)) for slot in slots]
    values = {slot.name: slot.values[i] for slot, i in zip(slots, indices)}
    plain = Config(values)
    for built in (space.config_at(indices), space.from_indices(indices), space.config(values),
                  SearchSpace.explicit(slots, [values]).points[0]):
        assert (built.id, hash(built), list(built.items())) == (plain.id, hash(plain), list(plain.items()))
        assert built == plain


@PROPERTY_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), steps=st.lists(st.sets(st.integers(0, 39), max_size=40), min_size=1, max_size=6))
def test_recorded_sampling_draws_what_a_list_of_the_remaining_points_would(seed: int, steps) -> None:
    """The sampler keeps its exclusions from one call to the next and updates them by the ids that
    changed; exclusions that grow, shrink or name no point draw exactly as ``rng.choice`` over the
    points that remain, in recorded order."""
    from workbench.core.domain.space_sampling import RecordedSampler

    points = [Config({"i": i}) for i in range(40)]
    sampler = RecordedSampler(points)
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    for excluded in steps:
        taken = {points[i].id for i in excluded} | {"not-a-point"}
        remaining = [p for p in points if p.id not in taken]
        want = min(3, len(remaining))
        expected = [remaining[int(k)] for k in theirs.choice(len(remaining), size=want, replace=False)] if remaining else []
        assert sampler.sample(ours, 3, taken) == expected


@PROPERTY_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), steps=st.lists(st.sets(st.integers(0, 39), max_size=40), min_size=1, max_size=6),
       ways=st.lists(st.sampled_from(["discard", "isub", "difference_update", "clear"]), min_size=6, max_size=6))
def test_one_growing_set_of_exclusions_draws_as_a_new_set_each_time(seed: int, steps, ways) -> None:
    """A search keeps its exclusions in one TakenIds and the sampler takes in only what was added
    since its last draw; every way the set may also shrink makes it compare the whole set again,
    so the draws stay those of ``rng.choice`` over the points that remain."""
    from workbench.core.domain.space_sampling import RecordedSampler, TakenIds

    points = [Config({"i": i}) for i in range(40)]
    sampler = RecordedSampler(points)
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    taken = TakenIds(["not-a-point"])
    for excluded, way in zip(steps, ways):
        wanted = {points[i].id for i in excluded} | {"not-a-point"}
        gone = set(taken) - wanted
        if gone and way == "discard":
            for cid in gone:
                taken.discard(cid)
        elif gone and way == "isub":
            taken -= gone
        elif gone and way == "difference_update":
            taken.difference_update(gone)
        elif gone:
            taken.clear()
        taken |= wanted
        assert taken == wanted
        remaining = [p for p in points if p.id not in wanted]
        want = min(3, len(remaining))
        expected = [remaining[int(k)] for k in theirs.choice(len(remaining), size=want, replace=False)] if remaining else []
        got = sampler.sample(ours, 3, taken)
        assert got == expected
        taken.update(c.id for c in got)  # (a search adds what it drew)


def test_a_growing_set_of_exclusions_is_not_compared_whole_at_each_draw() -> None:
    """With its exclusions in a plain set a draw compared the whole set with the last one: a random
    search of an 18,000-config recording spent 17 CPU-s choosing (bench/space_sampling.py). Told
    the same TakenIds again, the sampler reads only the ids added since."""
    from workbench.core.domain.space_sampling import RecordedSampler, TakenIds

    class Watched(TakenIds):
        whole = 0

        def __iter__(self):
            Watched.whole += 1
            return super().__iter__()

        def __sub__(self, other):
            Watched.whole += 1
            return super().__sub__(other)

    points = [Config({"i": i}) for i in range(2000)]
    sampler = RecordedSampler(points)
    rng = np.random.default_rng(0)
    taken = Watched(p.id for p in points[:1500])
    sampler.sample(rng, 1, taken)
    Watched.whole = 0
    for point in points[1500:1600]:
        taken.add(point.id)
        (drawn,) = sampler.sample(rng, 1, taken)
        assert drawn.id not in taken
    assert Watched.whole == 0
    taken.discard(points[0].id)  # shrunk: compared whole once, and the point can be drawn again
    sampler.sample(rng, 1, taken)
    assert Watched.whole >= 1 and sampler.sample(rng, 400, taken)[-1] is not None
    assert points[0].id not in sampler._excluded_ids


@PROPERTY_SETTINGS
@given(seed=st.integers(0, 2**32 - 1),
       steps=st.lists(st.tuples(st.sets(st.integers(0, 39), max_size=6), st.sets(st.integers(0, 39), max_size=6)),
                      min_size=1, max_size=6))
def test_a_batch_beside_the_exclusions_draws_as_their_union(seed: int, steps) -> None:
    """A search draws with the ids taken and the batch it is building; the union made for that (a
    copy of everything taken, compared whole by the sampler) is now a view, whose extra ids the
    sampler leaves out of that draw alone. The draws are those of ``rng.choice`` over the points
    outside the union, and a later draw without the batch can pick its ids again."""
    from workbench.core.domain.space_sampling import RecordedSampler, TakenIds, excluding

    points = [Config({"i": i}) for i in range(40)]
    sampler = RecordedSampler(points)
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    taken = TakenIds()
    for added, batch in steps:
        taken |= {points[i].id for i in added}
        for extra in ({points[i].id for i in batch} | {"not-a-point"}, set()):
            union = set(taken) | extra
            remaining = [p for p in points if p.id not in union]
            want = min(3, len(remaining))
            expected = [remaining[int(k)] for k in theirs.choice(len(remaining), size=want, replace=False)] \
                if remaining else []
            assert sampler.sample(ours, 3, excluding(taken, extra)) == expected


def test_a_batch_beside_a_growing_set_of_exclusions_does_not_compare_it_whole() -> None:
    """A long run's repairs draw with their batch at hand: the union of the taken ids and the batch,
    made anew and compared whole at every draw, made each trial slower than the last."""
    from workbench.core.domain.space_sampling import RecordedSampler, TakenIds, excluding

    points = [Config({"i": i}) for i in range(2000)]
    sampler = RecordedSampler(points)
    rng = np.random.default_rng(0)
    taken = TakenIds(p.id for p in points[:1500])
    sampler.sample(rng, 1, taken)
    compared = 0
    whole = sampler._exclude

    def counted(excluded):
        nonlocal compared
        grown = sampler._last is not None and sampler._last[0]() is excluded
        compared += not grown
        return whole(excluded)

    sampler._exclude = counted
    for point in points[1500:1600]:
        taken.add(point.id)
        (drawn,) = sampler.sample(rng, 1, excluding(taken, {points[1700].id, points[1701].id}))
        assert drawn.id not in taken and drawn.id not in (points[1700].id, points[1701].id)
    assert compared == 0  # each draw took in the ids added since the last, none compared them all
    assert sampler._last is not None and sampler._last[0]() is taken


def test_the_exclusions_with_a_batch_are_a_set_of_their_ids() -> None:
    """The view of the taken ids and a batch answers as the set of their ids, also once the taken
    ids have grown to hold some of the batch's, and set operations on it give plain sets."""
    from workbench.core.domain.space_sampling import TakenIds, excluding

    taken = TakenIds(["a"])
    view = excluding(taken, {"b", "c"})
    taken.add("b")
    assert len(view) == 3 and set(view) == {"a", "b", "c"} and view == {"a", "b", "c"}
    assert view | {"d"} == {"a", "b", "c", "d"} and view - {"a"} == {"b", "c"} and view & {"c", "x"} == {"c"}
    assert excluding(taken, set()) is taken and excluding(view, {"e"}) == {"a", "b", "c", "e"}

def test_recorded_sampling_maps_only_the_ids_that_changed_since_the_last_call() -> None:
    """Every exclusion was mapped to its point on every call: a random search of an 18,000-config
    recording spent 131 s there (10 s for a grid). Now a call after one more measurement looks up
    one id, whatever was excluded before."""
    from workbench.core.domain.space_sampling import RecordedSampler

    class Counting(dict):
        lookups = 0

        def __getitem__(self, key):
            Counting.lookups += 1
            return super().__getitem__(key)

        def get(self, key, default=None):
            Counting.lookups += 1
            return super().get(key, default)

        def __contains__(self, key):
            Counting.lookups += 1
            return super().__contains__(key)

    points = [Config({"i": i}) for i in range(2000)]
    sampler = RecordedSampler(points)
    sampler._position = Counting(sampler._position)
    rng = np.random.default_rng(0)
    taken = {p.id for p in points[:1500]}
    sampler.sample(rng, 1, taken)
    Counting.lookups = 0
    taken.add(points[1500].id)
    sampler.sample(rng, 1, taken)
    assert Counting.lookups <= 2


def test_a_space_mostly_taken_is_listed_once_for_all_the_draws_that_follow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past half the space, every draw listed the whole space (40 ms each on 5,000 configs)."""
    space = SearchSpace([Slot("a", tuple(range(20))), Slot("b", tuple(range(20)))], ["a + b < 30"])
    taken = {c.id for c in list(space)[: space.count() - 20]}
    listings = 0
    original = type(space).enumerate_unordered

    def counted(self):
        nonlocal listings
        listings += 1
        yield from original(self)

    monkeypatch.setattr(type(space), "enumerate_unordered", counted)
    rng = np.random.default_rng(0)
    drawn = [space.sample(rng, 1, taken) for _ in range(5)]
    assert listings == 1 and all(len(d) == 1 and d[0].id not in taken for d in drawn)


def test_a_random_search_hands_the_space_one_growing_set_of_exclusions() -> None:
    """RandomSearch drew with a new union of what it measured and proposed at each ask, which the
    space then had to compare whole; it keeps one TakenIds, to which what it is told is added."""
    from workbench.search.random import RandomSearch

    space = SearchSpace.explicit([Slot("i", tuple(range(300)))], [{"i": i} for i in range(300)])
    search = RandomSearch(space, seed=1)
    first = search.ask(2)
    kept = search._taken
    search.exclude([first[0].id, "measured-elsewhere"])
    again = search.ask(3)
    assert search._taken is kept and space._sampler is not None and space._sampler._last[0]() is kept
    assert {c.id for c in first + again} | {"measured-elsewhere"} <= kept
    assert not {c.id for c in again} & {c.id for c in first}


def test_taken_ids_behave_as_a_set_and_copies_keep_a_log_of_their_own() -> None:
    """A TakenIds is a set to every caller: copies and pickles are sets of their own (set's own
    copy shared the log, so an id added to a copy was taken in as excluded by a sampler that had
    drawn with the original), an update logs each new id once, and what a set refuses it refuses."""
    import copy
    import pickle

    from workbench.core.domain.space_sampling import RecordedSampler, TakenIds

    original = TakenIds(["a"])
    for twin in (copy.copy(original), copy.deepcopy(original), pickle.loads(pickle.dumps(original))):
        twin.add("b")
        assert original == {"a"} and original.log == ["a"] and twin == {"a", "b"} and twin.log == ["a", "b"]
    grown = TakenIds()
    grown.update(["x", "y", "x"], {"y", "z"}, ())
    assert grown == {"x", "y", "z"} and sorted(grown.log) == ["x", "y", "z"]
    flipped = TakenIds()
    flipped.symmetric_difference_update(["x", "x"])
    assert flipped == {"x"} == set().symmetric_difference(["x", "x"])
    with pytest.raises(TypeError):
        flipped |= ["y"]  # type: ignore[arg-type]
    points = [Config({"i": i}) for i in range(5)]
    sampler = RecordedSampler(points)
    taken = TakenIds([points[0].id])
    sampler.sample(np.random.default_rng(0), 1, taken)
    copy.copy(taken).add(points[1].id)
    drawn = sampler.sample(np.random.default_rng(0), 5, taken)
    assert sorted(c["i"] for c in drawn) == [1, 2, 3, 4]
