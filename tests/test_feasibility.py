"""The chance of meeting the run's constraints, as the default strategy learns and uses it."""

from __future__ import annotations

import math

import numpy as np

from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.objective import Bound, Constraints
from workbench.core.domain.search_objective import Objective
from workbench.core.domain.space import Config, SearchSpace, Slot
from workbench.search.base import create_strategy
from workbench.search.feasibility import MIN_ROWS, FeasibilityModel, compress

SPACE = SearchSpace([
    Slot("block", (32, 64, 96, 128, 160, 192, 256, 512), "launch"),
    Slot("tile", (1, 2, 3, 4, 6, 8), "memory"),
    Slot("shared", (False, True), "memory"),
    Slot("method", (0, 1, 2, 3), "compute"),
    Slot("unroll", (1, 2, 4), "compute"),
])
#: Large tiles are fast but use too many registers: the fastest configs all miss the limit.
LIMIT = Objective(Constraints(extra=(Bound("registers", "<=", 48.0),)))


def measure(config: Config) -> Measurement:
    tile, block = config["tile"], config["block"]
    latency = (1.0 + abs(math.log2(block / 128.0)) * 0.2) / tile * (1.0, 1.3, 1.1, 1.2)[config["method"]]
    return Measurement(Status.OK, {"latency_ms": latency, "registers": 10.0 * tile + config["unroll"]})


def told(strategy, n: int, seed: int = 0) -> list[Config]:
    configs = SPACE.sample(np.random.default_rng(seed), n)
    strategy.tell([Trial(i, c, measure(c)) for i, c in enumerate(configs)])
    return configs


# --- the model ------------------------------------------------------------------------------------
def test_misses_are_compressed_with_their_sign_kept():
    assert compress(0.0) == 0.0
    assert compress(9.0) == math.log(10.0) and compress(-0.5) == -math.log(1.5)
    assert compress(math.inf) == 1.0  # a metric the trial did not report counts as a clear miss
    assert compress(-math.inf) == -1.0 and compress(math.nan) == 1.0


def test_the_model_has_no_opinion_before_a_few_trials():
    model = FeasibilityModel([3, 2], [True, False], [[0], [1]])
    for i in range(MIN_ROWS - 1):
        model.add([2, i % 2], [1.0])
    assert model.chance([2, 0]) == 1.0


def test_the_value_that_always_missed_is_predicted_to_miss():
    model = FeasibilityModel([3, 2], [False, False], [[0], [1]])
    for rep in range(4):
        for a in range(3):
            for b in range(2):
                model.add([a, b], [0.5 if a == 2 else -0.3])
    assert model.chance([2, 0]) < 0.1 and model.chance([2, 1]) < 0.1
    assert model.chance([0, 0]) > 0.9 and model.chance([1, 1]) > 0.9


def test_before_any_hit_the_nearest_misses_are_the_likeliest():
    """While nothing met a tight bound, what leads into the feasible region is how close a value came."""
    model = FeasibilityModel([4], [True], [[0]])
    for rep in range(3):
        for a in range(4):
            model.add([a], [0.2 + 0.6 * a])
    chances = [model.chance([a]) for a in range(4)]
    assert chances == sorted(chances, reverse=True) and chances[0] > 2 * chances[3]


def test_every_bound_must_hold():
    model = FeasibilityModel([2, 2], [False, False], [[0], [1]])
    for rep in range(4):
        for a in range(2):
            for b in range(2):
                model.add([a, b], [0.5 if a else -0.5, 0.5 if b else -0.5])
    assert model.chance([0, 0]) > 0.9
    assert model.chance([1, 0]) < 0.1 and model.chance([0, 1]) < 0.1


# --- the agents -----------------------------------------------------------------------------------
def test_without_constraints_nothing_is_unlikely():
    agents = create_strategy("agents", SPACE, seed=1)
    configs = told(agents, 30)
    assert not agents._unlikely([agents.coder.encode(c) for c in configs]).any()
    assert agents._feasibility_risk(agents.coder.encode(configs[0])) == 0.0


def test_proposals_predicted_to_miss_are_unlikely():
    agents = create_strategy("agents", SPACE, seed=1)
    agents.set_objective(LIMIT)
    told(agents, 30)
    vecs = [agents.coder.encode(Config({"block": 128, "tile": t, "shared": False, "method": 0, "unroll": 1}))
            for t in SPACE.slots[1].values]
    assert agents._unlikely(vecs).tolist() == [False, False, False, False, True, True]


def test_a_proposal_predicted_infeasible_is_not_chosen_when_feasible_ones_exist():
    """The fast region misses the limit: the agents propose inside it far less than without the model."""

    def share_over_limit(**options) -> float:
        shares = []
        for seed in range(4):
            agents = create_strategy("agents", SPACE, seed=seed, probes=0, **options)
            agents.set_objective(LIMIT)
            told(agents, 40, seed)
            proposed = agents.ask(16)
            shares.append(np.mean([c["tile"] >= 6 for c in proposed]))
        return float(np.mean(shares))

    with_model = share_over_limit()
    counts = share_over_limit(feasibility_model="counts")  # per-value counts of misses instead
    without = share_over_limit(feasible_first=0.0, feasibility=0.0)
    assert with_model <= 0.05 and counts > 0.1 and without > 0.3


def test_a_descent_measures_the_neighbours_predicted_feasible_first():
    agents = create_strategy("agents", SPACE, seed=2)
    agents.set_objective(LIMIT)
    told(agents, 40)
    base = Config({"block": 128, "tile": 4, "shared": False, "method": 0, "unroll": 1})
    neighbours = [c for c in SPACE.neighbours(base) if agents.fresh(c)]
    order = agents._enrol(neighbours, len(neighbours), set(), 1.0)
    over = [c["tile"] >= 6 for c in order]
    assert any(over) and over == sorted(over)  # every neighbour over the limit comes after the others


def test_rewards_rank_by_the_objective_alone_once_the_feasible_region_is_known():
    agents = create_strategy("agents", SPACE, seed=3)
    agents.set_objective(LIMIT)
    over = Trial(0, Config({"block": 128, "tile": 8, "shared": False, "method": 0, "unroll": 1}),
                 measure(Config({"block": 128, "tile": 8, "shared": False, "method": 0, "unroll": 1})))
    cost = LIMIT(over)
    assert cost >= 1e9  # infeasible: behind every feasible trial
    pair = (cost, agents._raw_value(over, cost))
    assert pair[1] == over.metric("latency_ms")
    assert agents._rank_scores([pair]) == [cost]  # nothing known yet: the cost
    told(agents, 30)  # about a third of random configs meet the limit
    assert agents._rank_scores([pair]) == [over.metric("latency_ms")]
    cost_only = create_strategy("agents", SPACE, seed=3, rewards="cost")
    cost_only.set_objective(LIMIT)
    told(cost_only, 30)
    assert cost_only._rank_scores([pair]) == [cost]


def test_rewards_do_not_switch_on_a_handful_of_trials():
    """A quarter of three trials is luck: the switch waits for a start's worth (``init``)."""
    agents = create_strategy("agents", SPACE, seed=3, init=10)
    agents.set_objective(LIMIT)
    inside = Config({"block": 128, "tile": 2, "shared": False, "method": 0, "unroll": 1})
    over = Config({"block": 128, "tile": 8, "shared": False, "method": 0, "unroll": 1})
    agents.tell([Trial(0, inside, measure(inside)), Trial(1, over, measure(over))])
    assert not agents._split_rewards()
    agents.tell([Trial(i + 2, c, measure(c)) for i, c in enumerate(SPACE.sample(np.random.default_rng(0), 8))])
    assert agents._split_rewards()


def test_credit_compares_costs_even_when_rewards_ignore_the_constraints():
    """A proposal that misses the limit did not beat its feasible base, however fast it is."""
    for rewards in ("auto", "cost"):
        agents = create_strategy("agents", SPACE, seed=3, rewards=rewards)
        agents.set_objective(LIMIT)
        told(agents, 30)
        agents.round = {}
        base = Config({"block": 128, "tile": 4, "shared": False, "method": 0, "unroll": 1})  # 41 registers
        base_cost = LIMIT(Trial(0, base, measure(base)))
        over = Config({"block": 128, "tile": 8, "shared": True, "method": 0, "unroll": 1})  # 81: misses, faster
        slow = Config({"block": 32, "tile": 1, "shared": True, "method": 1, "unroll": 1})  # feasible, slower
        agents._enter(over, 1, base_cost)
        agents._enter(slow, 0, base_cost)
        before = agents.credit.copy()
        agents.tell([Trial(100, over, measure(over)), Trial(101, slow, measure(slow))])
        assert agents.credit[1] == 0.9 * before[1], rewards  # no credit for the miss


def test_one_round_ranks_its_misses_on_one_scale():
    """The round in which the rewards switch to the objective alone ranks every miss by its value,
    also those told before the switch (they used to rank last, by their cost)."""
    over_ranks = []
    for seed in range(3):
        agents = create_strategy("agents", SPACE, seed=seed, init=10, batch=8)
        agents.set_objective(LIMIT)
        start = agents.ask(10)
        trials = [Trial(i, c, measure(c)) for i, c in enumerate(start)]
        idx = [agents.coder.encode(c) for c in start]
        seen = []
        agents.model.accumulate = lambda vecs, reward: seen.append((list(vecs), reward))  # type: ignore[method-assign]
        agents.tell(trials)
        if not agents._split_rewards():
            continue
        (vecs, reward), = seen
        by_vec = {tuple(v): r for v, r in zip(vecs, reward)}
        for t, v in zip(trials, idx):
            if not LIMIT.feasible(t):
                faster = [u for u, w in zip(trials, idx) if LIMIT.feasible(u) and u.metric("latency_ms") > t.metric("latency_ms")]
                # a miss ranks among the hits by its latency: above every slower hit
                assert all(by_vec[tuple(v)] > by_vec[tuple(agents.coder.encode(u.config))] for u in faster)
                over_ranks.append(by_vec[tuple(v)])
    assert over_ranks


def test_aborted_trials_teach_nothing_about_metrics_they_did_not_report():
    agents = create_strategy("agents", SPACE, seed=1)
    agents.set_objective(LIMIT)
    for i, c in enumerate(SPACE.sample(np.random.default_rng(0), 12)):
        agents.tell([Trial(i, c, Measurement(Status.ABORTED, {"latency_bound_ms": 5.0}))])
    # no registers reported: no misses of the register limit, so no opinion either way
    assert agents.feasibility.chance(agents.coder.encode(SPACE.sample(np.random.default_rng(1), 1)[0])) == 1.0


def test_the_incumbent_is_a_yardstick_when_every_proposal_is_unlikely():
    """A lone proposal (or a screen of them all over the limit) is judged against the incumbent."""
    agents = create_strategy("agents", SPACE, seed=1)
    agents.set_objective(LIMIT)
    told(agents, 30)
    inside = agents.coder.encode(Config({"block": 128, "tile": 3, "shared": False, "method": 0, "unroll": 1}))
    over = [agents.coder.encode(Config({"block": b, "tile": 8, "shared": False, "method": 0, "unroll": 1}))
            for b in (64, 128)]
    assert not agents._unlikely(over).any()  # among themselves none is worse
    assert agents._unlikely(over, inside).all()
    assert agents._unlikely(over[:1], inside).tolist() == [True]


def test_chances_of_many_configs_at_once_match_a_dense_refit():
    """The incremental sums and the vectorised chances give what a dense refit gives."""
    model = FeasibilityModel([4, 3, 2], [True, True, False], [[0, 1], [2]])
    rng = np.random.default_rng(0)
    rows, ys = [], []
    for _ in range(20):
        vec = [int(rng.integers(4)), int(rng.integers(3)), int(rng.integers(2))]
        miss = 0.3 * vec[0] - 0.4 + 0.1 * rng.standard_normal()
        model.add(vec, [miss])
        rows.append(vec)
        ys.append(compress(miss))
    layout = model.layout
    x = np.zeros((len(rows), layout.dim))
    for i, vec in enumerate(rows):
        x[i, layout.features(vec)] = 1.0
    centre = x.mean(axis=0)
    xc = x - centre
    inverse = np.linalg.inv(xc.T @ xc + layout.prior)
    y = np.asarray(ys) - np.mean(ys)
    effects = inverse @ (xc.T @ y)
    residual = y - xc @ effects
    noise = max(0.05 ** 2, float(residual @ residual) / len(rows))
    vecs = [[a, b, c] for a in range(4) for b in range(3) for c in range(2)]
    dense = []
    for vec in vecs:
        d = -centre.copy()
        d[layout.features(vec)] += 1.0
        sd = math.sqrt(noise * (1.0 + 1.0 / len(rows) + float(d @ inverse @ d)))
        dense.append(0.5 * math.erfc((np.mean(ys) + float(d @ effects)) / (sd * math.sqrt(2.0))))
    assert np.allclose(model.chances(vecs), dense)
    assert model.chance(vecs[5]) == model.chances(vecs)[5]


def test_a_run_without_bounds_never_builds_the_feasibility_matrices():
    agents = create_strategy("agents", SPACE, seed=1)
    told(agents, 20)
    agents.ask(8)
    assert agents.feasibility._layout is None
