"""Cooperative per-concern agents: one learning policy per group of slots, rewarded together.

Why: the slots of a kernel template come in concerns (launch geometry, memory access, compute,
reduction) whose good choices are partly independent: the best tile size barely depends on the
reduction strategy. An agent per concern learns *its* part of the answer from every evaluation,
and the agents cooperate through one shared reward, so the search needs fewer evaluations than a
method that treats the config as one opaque point. See ``docs/strategies.md`` for the algorithm.

The run starts with ``init`` configs spread over the space: each picked, from a uniform pool
``design`` times larger, farthest from those picked before (greedy maximin; a uniform start
under constraints). Then, every round (of ``batch`` configs; of ``early_batch`` during the first
``early_span`` evaluations after the start, without bounds, so the model is refitted sooner while
it knows little):

1. The agents jointly propose a batch. Each candidate starts from the incumbent (or another elite
   config); one agent, chosen by its credit (how often its moves improved a config), redraws its
   own slots from its policy while the others hold; now and then all agents draw at once.
2. Rewards are ranks within the batch (robust to timing noise and to the kernel's scale), shared by
   every agent, plus a small auxiliary term from the agent's own metric when the backend reports it
   (memory agent: ``throughput_gbs``; launch agent: ``occupancy``).
3. The agents' utilities are fitted jointly (value decomposition): the shared reward of each
   config is explained as the sum of one utility per slot value, comparing configs only within
   their round, with a prior that pulls utilities of adjacent values of ordered slots together
   (128 threads usually behave like 96 and 160). Each agent draws its slots' values from a
   Thompson sample of its utilities; several joint proposals are screened this way per measurement.
4. Once, right after the random start, the best configs are extrapolated: ordered slots whose
   utilities rise towards an end of their domain are moved to that end (trend probes). Every new
   incumbent gets its unmeasured moves within short domains (flags, method numbers) measured;
   under constraints a new feasible one also gets its most valued coupled moves (step 5).
5. When the best config has not improved for ``patience`` evaluations, a descent sweeps its
   one-slot neighbours in three passes (adjacent values, then short domains and domain ends, then
   the rest; then up to ``coupled`` moves of two slots to values that the restrictions keep out
   of every one-slot move, domain ends first). At a local optimum, the best neighbour of each of
   several good configs away from it is measured (the frontier), and the next descent starts from
   the best config away from it.
   Without a frontier, exploration rises in one agent's dimensions at a time (high temperature,
   others hold the incumbent); the focus moves to the next agent if that does not help either.
6. From the ``path_from``-th evaluation on, the last ``path_probes`` configs of every round are
   path probes: the best config with its short slots (together, the kernel's code path) set to a
   combination no working measured config has, the most valued first (``_path_probes``).

Under constraints (the run's objective has bounds) a feasibility model learns each bound's miss
over the slot values (:mod:`workbench.search.feasibility`); proposals it finds far less likely to
meet the bounds than the others go last in the screen and in a descent's order, and once a quarter
of the trials (at least ``init`` of them) met the bounds the rank rewards rank by the objective
alone (see ``_rank_scores``); credit still compares costs. From then on the agents climb from the
best feasible config (``climb``: the first descent starts after one learning round, and a new
feasible best re-plans the rest of the round).

A space whose slots all share one group has a single concern; then each slot acts as its own agent.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from workbench.core.domain.measurement import Status, Trial
from workbench.core.domain.search_objective import INFEASIBLE, Objective
from workbench.core.domain.space import GROUPS, Config, SearchSpace
from workbench.search._common import Index, IndexedStrategy, latency_rank
from workbench.search.base import Option
from workbench.search.descent import Descent, changed_slot, coupled_moves, one_slot_moves
from workbench.search.feasibility import FeasibilityModel
from workbench.search.measured import MeasuredIndex
from workbench.search.utility import UtilityModel, too_many_values

#: Value subtracted from a proposal the feasibility model finds unlikely (see ``Agents._unlikely``):
#: more than any utility, so such proposals come after every likely one.
_UNLIKELY = 1e6
#: With ``rewards="auto"``: the share of trials (at least ``init`` of them) that met the
#: constraints from which the rank rewards rank by the objective alone (see ``Agents._rank_scores``).
SPLIT_SHARE = 0.25
#: Further screens of as many joint proposals when every one is predicted to miss the constraints.
SCREEN_RETRIES = 3
#: Path probes (see ``Agents._path_probes``): the short slots' combinations are all looked at up to
#: this many of them, else PATH_SAMPLES random ones (a bound on the strategy's time per round).
PATH_ENUMERATE = 1024
PATH_SAMPLES = 48
#: Of those, the best valued that are charged their distance to known failures (a distance to every
#: failed config each: a bound on the round's time, which the rest of the ranking does not need).
PATH_RISKED = 32
#: The metric an agent watches besides the shared reward (larger is better).
AUX_METRIC = {"memory": "throughput_gbs", "launch": "occupancy"}


@dataclass(frozen=True)
class AgentsOptions:
    """The agents' options, typed (declared with their descriptions in :attr:`Agents.OPTIONS`,
    which validates and converts them; a test keeps the two in step)."""

    init: int = 10
    batch: int = 8
    policy: str = "decomposed"
    spread: float = 1.0
    aux_weight: float = 0.2
    recall: float = 0.3
    local: float = 0.5
    joint: float = 0.2
    credit_share: float = 0.5
    screen: int = 16
    interactions: bool = True
    elite: int = 4
    patience: int = 8
    hot: float = 4.0
    sweep_adjacent: bool = False
    short: int = 4
    short_probes: int = 5
    frontier: int = 8
    min_gain: float = 0.01
    failures: str = "risk"
    fail_weight: float = 1.0
    feasibility: float = 1.0
    feasibility_model: str = "additive"
    rewards: str = "auto"
    feasible_first: float = 0.25
    probes: int = 2
    trend: float = 0.03
    diverse: float = 2.0
    learn_all: bool = True
    sweep: bool = True
    design: int = 4
    coupled: int = 4
    shape: int = 2
    early_batch: int = 4
    early_span: int = 16
    coupled_probes: int = 2
    climb: bool = True
    path_probes: int = 1
    path_from: int = 50


class Agents(IndexedStrategy):
    name = "agents"
    description = "Cooperative per-concern agents with shared rank rewards and focused exploration"
    OPTIONS = (
        Option("init", 10, "Spread-out random configs measured before the agents start learning (see design)", low=1, high=1000),
        Option("batch", 8, "Configs per round (ranks are taken within a round)", low=1, high=256),
        Option(
            "policy", "decomposed", "How an agent values its slots: jointly fitted utilities, or a bandit per slot",
            ("decomposed", "bandit"),
        ),
        Option("spread", 1.0, "Width of the Thompson draws (larger explores more)", low=0.01, high=100),
        Option("aux_weight", 0.2, "Weight of an agent's own metric relative to the shared reward", low=0, high=10),
        Option("recall", 0.3, "Chance that an agent transplants one of its best sub-configs seen so far", low=0, high=1),
        Option("local", 0.5, "Chance that a redrawn ordered slot steps to a nearby value instead of drawing from the policy", low=0, high=1),
        Option("joint", 0.2, "Chance that all agents redraw at once (global exploration)", low=0, high=1),
        Option("credit_share", 0.5, "Share of turns given by credit (the rest go round evenly)", low=0, high=1),
        Option("screen", 16, "Joint proposals the agents screen with their utilities per config measured", low=1, high=1000),
        Option("interactions", True, "Fit utilities of value pairs within a concern (slots of one agent interact)"),
        Option("elite", 4, "Configs a candidate may start from (the incumbent and the next best)", low=1, high=100),
        Option("patience", 8, "Evaluations without progress (see min_gain) before a descent starts (with sweep off: before exploration rises in one agent)", low=1, high=10000),
        Option("hot", 4.0, "Temperature of the focused agent while exploring", low=0.01, high=100),
        Option("sweep_adjacent", False, "A sweep stops after the adjacent values of ordered slots (no wider pass, no coupled or shape moves)"),
        Option("short", 4, "Domains with at most this many values are short: every value is one move away (flags, method numbers)", low=0, high=64),
        Option("short_probes", 5, "Configs of a round spent on a new incumbent's unmeasured moves within short domains", low=0, high=256),
        Option("frontier", 8, "Good measured configs away from known local optima whose best neighbour is measured before a new descent", low=0, high=256),
        Option("min_gain", 0.01, "Relative speed-up a new best needs to count as progress (timing noise is not progress)", low=0, high=0.5),
        Option(
            "failures", "risk",
            "How failed configs teach: 'risk' keeps them out of the rank rewards and steers proposals away "
            "from their surroundings; 'rank' ranks them last in their round",
            ("risk", "rank"),
        ),
        Option("fail_weight", 1.0, "Penalty (in reward units) for a proposal right next to a failed config", low=0, high=100),
        Option(
            "feasibility", 1.0,
            "Penalty (in reward units) times the estimated chance that a proposal misses a constraint, "
            "learnt per slot value from the trials that met or missed the run's constraints",
            low=0, high=100,
        ),
        Option(
            "feasibility_model", "additive",
            "How the chance of missing a constraint is estimated: an additive model of each bound's "
            "miss over slot values (and value pairs within a concern), or per-value counts of misses",
            ("additive", "counts"),
        ),
        Option(
            "rewards", "auto",
            "What the rank rewards rank under constraints: the cost (misses behind hits, graded); "
            "'split': the objective regardless of the constraints, feasibility left to its model; "
            "'auto': split once a quarter of the trials met the constraints, the cost before",
            ("auto", "cost", "split"),
        ),
        Option(
            "feasible_first", 0.25,
            "Proposals whose predicted chance of meeting the constraints is below this share of the "
            "likeliest one's go after every other (additive model; 0: off)",
            low=0, high=1,
        ),
        Option("probes", 2, "Configs of the first learning round moved to the ends of ordered domains the utilities rise towards", low=0, high=256),
        Option("trend", 0.03, "Rise of an ordered slot's utilities across its domain (reward units) that makes a probe move it", low=0, high=10),
        Option("diverse", 2.0, "Distance a new descent's start keeps from known local optima (0: always the incumbent)", low=0, high=100),
        Option("learn_all", True, "Learn from every told result, also from configs the agents did not propose"),
        Option(
            "sweep", True,
            "When stalled, measure the incumbent's one-slot neighbours (adjacent values first), best predicted "
            "first, and keep descending while that improves; at a local optimum, look at the frontier and "
            "descend again away from it (off: focused exploration in one agent at a time)",
        ),
        Option(
            "design", 4,
            "Uniform samples per start config from which the start is picked, each farthest from those "
            "picked before (greedy maximin); 1: a uniform random start (always under constraints)",
            low=1, high=64,
        ),
        Option(
            "coupled", 4,
            "A descent's pass after its one-slot passes, at most this many configs per base: for a value no valid one-slot "
            "move reaches (the restrictions keep it out), the valid config with it whose one other "
            "changed slot moves least, those the agents value most first (0: off)",
            low=0, high=256,
        ),
        Option(
            "shape", 2,
            "After the coupled moves, at most this many configs per base that keep the product of two "
            "numeric slots (threads in x times y, a tile's width times height) with another split, the "
            "smallest change first (0: off)",
            low=0, high=256,
        ),
        Option(
            "early_batch", 4,
            "Configs per round during the first early_span evaluations after the start, so the utilities "
            "are refitted sooner while they know little (0: batch; without bounds only)",
            low=0, high=256,
        ),
        Option("early_span", 16, "Evaluations after the start that use early_batch rounds", low=0, high=10000),
        Option(
            "coupled_probes", 2,
            "Under constraints: configs of a round spent on a new feasible incumbent's coupled moves "
            "(values the restrictions keep out of every one-slot move, see coupled), measured with its "
            "short probes, those the agents value most first (0: off)",
            low=0, high=256,
        ),
        Option(
            "climb", True,
            "Under constraints, once the rank rewards rank by the objective (see rewards: with 'auto' when a "
            "quarter of the trials met the constraints, with 'split' at once, with 'cost' never) and the "
            "incumbent is feasible: the first descent starts from it after the first learning round (not "
            "after patience), and a new feasible best drops the rest of the planned round, so the next "
            "round starts from it",
        ),
        Option(
            "path_probes", 1,
            "From the path_from-th evaluation on, configs of every round (a running descent's too) that "
            "keep the best config's other slots and give its short slots (see short) a combination no "
            "working measured config has, those the fitted utilities value most first (0: off)",
            low=0, high=256,
        ),
        Option("path_from", 50, "Evaluations made before the path probes start (a run-length schedule)", low=0, high=100000),
    )

    @classmethod
    def unsuited(cls, space: SearchSpace) -> str | None:
        """One utility per slot value: a space whose slots hold more values than the fit takes."""
        return too_many_values(list(space.names), [len(slot.values) for slot in space.slots])

    def __init__(self, space: SearchSpace, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        self.opt = AgentsOptions(**self.options)
        slot_group = [s.group for s in space.slots]
        movable = [k for k, size in enumerate(self.coder.sizes) if size > 1]
        groups = [g for g in GROUPS if any(slot_group[k] == g for k in movable)]
        groups += sorted({slot_group[k] for k in movable} - set(groups))
        if len(groups) >= 2:
            self.agents = [(g, [k for k in movable if slot_group[k] == g]) for g in groups]
        else:  # one concern: every slot is its own agent
            self.agents = [(self.coder.names[k], [k]) for k in movable]
        self.reward_sum = [np.zeros(int(size)) for size in self.coder.sizes]
        self.reward_n = [np.zeros(int(size)) for size in self.coder.sizes]
        self.kernel = [self._kernel(k) for k in range(len(self.coder.sizes))]
        # Interactions inside a concern (tile x shared memory) get their own utilities; across
        # concerns utilities only add up. An agent is a clique of slots that interact.
        self.model = UtilityModel(self.coder.sizes, self.coder.ordered, [slots for _, slots in self.agents],
                                  self.opt.interactions)
        self.aux_sum = [np.zeros(int(size)) for size in self.coder.sizes]
        self.aux_n = [np.zeros(int(size)) for size in self.coder.sizes]
        self._sampled: np.ndarray | None = None
        self.credit = np.ones(len(self.agents))
        #: per agent: its sub-config (values of its slots) -> best score measured with it
        self.sub_best: list[dict[tuple[int, ...], float]] = [{} for _ in self.agents]
        self.history: list[tuple[float, tuple[int, ...]]] = []
        self.measured_index = MeasuredIndex(self.coder, len(self.coder.sizes))  # (see _measured)
        self.round: dict[str, tuple[int, float]] = {}  # id -> (active agent or -1, score of its base)
        #: id -> (cost, the objective's value regardless of the constraints, own metrics)
        self.outcomes: dict[str, tuple[float, float, dict[str, float]]] = {}
        self.indices: dict[str, tuple[int, ...]] = {}  # id -> index vector of round members
        self.since_improvement = 0
        self.focus: int | None = None
        self.focus_cycle = 0
        self.descent = Descent()  # the systematic pass around a base when stalled
        self.failed = np.zeros((0, len(self.coder.sizes)), dtype=np.int64)  # index vectors of failed configs
        self.probed = False  # the trend probes are sent once, with the first learning round
        self.short_probed: tuple[int, ...] | None = None  # the incumbent whose short moves were probed last
        self.foreign: list[tuple[float, float, tuple[int, ...]]] = []  # (cost, value, vec) of configs others proposed
        self.rounds = 0
        self.climbed = False  # the early descent of ``climb`` has started
        #: per slot value: trials measured with it under constraints, and how many of them missed
        self.bounded_n = [np.zeros(int(size)) for size in self.coder.sizes]
        self.bounded_miss = [np.zeros(int(size)) for size in self.coder.sizes]
        self.feasibility = FeasibilityModel(self.coder.sizes, self.coder.ordered, [slots for _, slots in self.agents],
                                            self.opt.interactions)

    # --- learning ------------------------------------------------------------------------------
    def _update(self, trials: Sequence[Trial]) -> None:
        before = self.best_score
        super()._update(trials)
        for trial in trials:
            score = self.scores[trial.config.id]
            self.history.append((score, self.coder.encode(trial.config)))
            if not math.isfinite(score):
                self.failed = np.vstack([self.failed, self.history[-1][1]])
            if trial.config.id not in self.round and self.opt.learn_all:
                self.foreign.append((score, self._raw_value(trial, score), self.history[-1][1]))  # proposed by someone else
            aux = {m: trial.metric(m) for m in AUX_METRIC.values()}
            self.outcomes[trial.config.id] = (score, self._raw_value(trial, score), aux)
            vec = self.history[-1][1]
            for a, (_, slots) in enumerate(self.agents):
                sub = tuple(vec[k] for k in slots)
                if score < self.sub_best[a].get(sub, math.inf):
                    self.sub_best[a][sub] = score
            self.since_improvement += 1
            self._note_feasibility(trial, vec)
            self.descent.note(score, trial.config)
        progress = self.best_score < before * (1.0 - self.opt.min_gain)
        if progress or len(self.history) <= self.opt.init:
            self.since_improvement = 0  # (the random start is not a stall)
            self.focus = None  # a sweep that improved goes on around the new incumbent
        if progress and self.queue and len(self.history) > self.opt.init and self._climbing():
            self._drop_planned()  # a new feasible best: the next round starts from it
        if self.round and all(cid in self.outcomes for cid in self.round):
            self._learn()
        if len(self.foreign) >= self.opt.batch:
            # Results the agents did not propose (a portfolio partner, a reopened session) form
            # rounds of their own: ranked among themselves, they teach the utilities the same way.
            kept = [item for item in self.foreign if self._ranked(item[0])]
            if len(kept) >= 2:
                ranks = latency_rank(self._rank_scores([(cost, raw) for cost, raw, _ in kept]))
                self.model.accumulate([vec for _, _, vec in kept], ranks)
            self.foreign = []

    def _climbing(self) -> bool:
        """Whether the agents climb from the best feasible config at once (option ``climb``): under
        constraints, once the rank rewards ignore them (a quarter of the trials met them, see
        :meth:`_split_rewards`) and the incumbent is feasible.

        Why: under a limit that many configs meet, the optimum sits at the limit's edge among good
        feasible configs, and the best feasible config found early is where a local climb pays
        most. The utilities fitted on a start of ten configs rank its neighbours little better than
        chance, so waiting ``patience`` evaluations before the descent, and finishing a round
        planned around the previous best, spend evaluations that a climb would use (a sequential
        method such as TPE moves to every new best at once).
        Before the feasible region is known (a tight bound few configs meet) the graded cost still
        leads into it, and without bounds nothing changes.
        """
        return bool(self.opt.climb and self._bounds and self.best_score < INFEASIBLE and self._split_rewards())

    def _drop_planned(self) -> None:
        """Forget the configs planned but not handed out yet (they were never measured or taken);
        the round ends with what came back of it, and a round too small to rank within (one
        result) joins the results ranked among themselves later, where ``learn_all`` has those
        (see :meth:`tell`)."""
        for config in self.queue:
            self.round.pop(config.id, None)
            self.indices.pop(config.id, None)
        self.queue = []
        done = [cid for cid in self.round if cid in self.outcomes]
        if len(done) < 2 and len(done) == len(self.round):
            if self.opt.learn_all:  # without it a lone result is not learned from, as in tell()
                for cid in done:
                    cost, raw, _ = self.outcomes[cid]
                    self.foreign.append((cost, raw, self.indices[cid]))
            self.round = {}

    def _raw_value(self, trial: Trial, score: float) -> float:
        """The objective's value of a trial regardless of the constraints (its cost when it has
        none: a failure, a run without bounds, a missing metric)."""
        value = getattr(self.objective, "value", None)
        if value is None or not math.isfinite(score) or not trial.ok or not self._bounds:
            return score
        raw = float(value(trial))
        return raw if math.isfinite(raw) else score

    def _rank_scores(self, pairs: Sequence[tuple[float, float]]) -> list[float]:
        """What the trials of one round, as (cost, value) pairs, are ranked by in the rank rewards:
        their cost, or under constraints with ``rewards="split"`` (``"auto"``: once a share
        ``SPLIT_SHARE`` of the trials met them) the objective's value regardless of the
        constraints, their chance left to the feasibility model. One scale per round: a miss
        ranked by its cost would come last, ranked by its value often first.

        Why: the cost ranks every miss behind every hit, so the utilities learn "feasible" and
        "good" as one thing. While hits are rare that is what leads into the feasible region (a
        miss ranks by how far it missed). Once the region is known, the optimum usually sits on
        its boundary (the fastest config under a register limit uses nearly all of them), and
        rewards that punish the slot values of every near miss push the agents away from it;
        ranking by the objective alone keeps what those values are worth, and the feasibility
        model (:meth:`_unlikely`, :meth:`_feasibility_risk`) keeps the proposals inside.
        """
        split = self._split_rewards()
        return [raw if split else cost for cost, raw in pairs]

    def _split_rewards(self) -> bool:
        """Whether the rank rewards now ignore the constraints (see :meth:`_rank_scores`)."""
        if self.opt.rewards == "cost" or not self._bounds:
            return False
        if self.opt.rewards == "auto":
            total = float(self.bounded_n[0].sum()) if self.bounded_n else 0.0
            # (at least a start's worth of trials: a share of a handful is luck)
            hits = total - float(self.bounded_miss[0].sum())
            return total >= max(2, self.opt.init) and hits >= SPLIT_SHARE * total
        return True

    def _ranked(self, score: float) -> bool:
        """Whether a result enters the rank rewards: with ``failures="risk"`` a failure does not,
        since it says where the kernel breaks, not how fast its values are (see :meth:`_failure_risk`)."""
        return math.isfinite(score) or self.opt.failures == "rank"

    def _learn(self) -> None:
        """Rank rewards for the finished part of the round; update every agent's preferences."""
        done = [cid for cid in self.round if cid in self.outcomes and self._ranked(self.outcomes[cid][0])]
        if len(done) >= 2:
            reward = latency_rank(self._rank_scores([self.outcomes[cid][:2] for cid in done]))
            idx = [self.indices[cid] for cid in done]
            self.model.accumulate(idx, reward)
            for a, (group, slots) in enumerate(self.agents):
                own = reward.copy()
                metric = AUX_METRIC.get(group)
                if metric is not None:
                    values = np.array([self.outcomes[cid][2].get(metric, math.nan) for cid in done])
                    finite = np.isfinite(values)
                    if finite.sum() >= 2:
                        aux = np.zeros(len(done))
                        aux[finite] = latency_rank(-values[finite])
                        own = own + self.opt.aux_weight * aux
                        for f in np.flatnonzero(finite):
                            for k in slots:
                                self.aux_sum[k][idx[f][k]] += aux[f]
                                self.aux_n[k][idx[f][k]] += 1.0
                for j, vec in enumerate(idx):
                    if self.round[done[j]][0] in (-1, a):  # an agent that held made no choice to score
                        for k in slots:
                            self.reward_sum[k][vec[k]] += own[j]
                            self.reward_n[k][vec[k]] += 1.0
            for cid in done:  # credit: did the active agent beat its base (both by cost)?
                active, base_score = self.round[cid]
                score = self.outcomes[cid][0]
                if active >= 0:
                    self.credit[active] = 0.9 * self.credit[active] + (1.0 if score < base_score else 0.0)
        self.round = {}

    def _kernel(self, k: int) -> np.ndarray:
        """How much evidence about one value counts for another: adjacent values of ordered slots share."""
        size = int(self.coder.sizes[k])
        if not self.coder.ordered[k] or size < 3:
            return np.eye(size)
        width = max(1.0, size / 10.0)
        pos = np.arange(size, dtype=float)
        return np.exp(-0.5 * ((pos[:, None] - pos[None, :]) / width) ** 2)

    def _draw(self, k: int, temperature: float) -> int:
        """A value for slot ``k`` from the agent's policy.

        ``decomposed``: the best value under one Thompson draw of the jointly fitted utilities,
        plus the agent's own metric; ``bandit``: Thompson sampling over the slot's values, each
        value's mean reward estimated from kernel-shared evidence of the rounds where this agent
        chose (one neutral observation as prior).
        """
        if self.opt.policy == "decomposed":
            if self._sampled is None:
                self._sampled = self._sample_values(temperature)
            utility = self.model.slot(self._sampled, k)
            utility = utility + self.opt.aux_weight * self.aux_sum[k] / (self.aux_n[k] + 1.0)
            return int(np.argmax(utility))
        return int(np.argmax(self._thompson(k, temperature)))

    def _sample_values(self, temperature: float) -> np.ndarray:
        """One Thompson draw of every slot value's utility (wider with ``temperature``)."""
        return self.model.sample(self.rng, temperature * self.opt.spread)

    def _thompson(self, k: int, temperature: float = 1.0) -> np.ndarray:
        """One posterior draw of the mean rank reward of each value of slot ``k``."""
        n = self.kernel[k] @ self.reward_n[k] + 1.0
        mean = (self.kernel[k] @ self.reward_sum[k]) / n
        noise = self.rng.standard_normal(len(n))
        return mean + temperature * self.opt.spread * noise / np.sqrt(n)

    # --- proposing -------------------------------------------------------------------------------
    def _redraw(self, genes: list[int], a: int, temperature: float, local: float, recall: float) -> None:
        """Agent ``a`` rewrites its own slots of ``genes``: recall, a local step, or a policy draw.

        - recall: transplant one of the agent's own best sub-configs seen so far (found together
          with other agents' choices) into this config: concern-level recombination;
        - otherwise redraw some of its slots (each with chance 1/2, at least one): an ordered slot
          steps to a nearby value with chance ``local``, else every slot draws from the policy.
        """
        slots = self.agents[a][1]
        r = self.rng.random()
        if r < recall:
            mine = tuple(genes[k] for k in slots)
            known = sorted((score, sub) for sub, score in self.sub_best[a].items() if sub != mine)
            known = [item for item in known if math.isfinite(item[0])][:8]
            if known:
                weights = 1.0 / (1.0 + np.arange(len(known)))
                _, sub = known[int(self.rng.choice(len(known), p=weights / weights.sum()))]
                for k, v in zip(slots, sub):
                    genes[k] = v
                return
        chosen = [k for k in slots if self.rng.random() < max(0.5, 1.0 / len(slots))]
        if not chosen:
            chosen = [slots[int(self.rng.integers(len(slots)))]]
        for k in chosen:
            size = int(self.coder.sizes[k])
            if self.coder.ordered[k] and self.rng.random() < local:
                step = int(self.rng.choice((-2, -1, 1, 2)))
                genes[k] = int(np.clip(genes[k] + step, 0, size - 1))
            else:
                genes[k] = self._draw(k, temperature)

    def _candidate(self, ranked: list[tuple[float, tuple[int, ...]]]) -> tuple[list[int], int, float]:
        """One joint proposal: a base config, and the agent(s) that rewrite their slots of it."""
        self._sampled = None  # a fresh Thompson draw of the utilities for every candidate
        if self.focus is not None:  # stalled: only the focused agent moves, hot, from the incumbent
            base_score, base = ranked[0]
            genes = list(base)
            self._redraw(genes, self.focus, self.opt.hot, 0.3, 0.3)
            return genes, self.focus, base_score
        pick = 0 if self.rng.random() < 0.5 else int(self.rng.integers(len(ranked)))
        base_score, base = ranked[pick]
        genes = list(base)
        if self.rng.random() < self.opt.joint:
            for a in range(len(self.agents)):
                self._redraw(genes, a, 1.0, 0.0, 0.0)
            return genes, -1, base_score
        share = self.opt.credit_share
        p = share * self.credit / self.credit.sum() + (1.0 - share) / len(self.agents)
        active = int(self.rng.choice(len(self.agents), p=p))
        self._redraw(genes, active, 1.0, self.opt.local, self.opt.recall)
        return genes, active, base_score

    def _sweep(self, size: int, batch: set[str]) -> list[Config]:
        """The next pass of the descent around its base (:mod:`workbench.search.descent`), the moves
        the agents value most first. The utilities only order the pass; every neighbour gets its
        turn unless one beats the base (then the pass moves there, see :meth:`tell`)."""
        base = self.descent.base
        passes = 1 if self.opt.sweep_adjacent else 3
        nbrs = self.descent.next_moves(self.space, self.coder, lambda c: self.fresh(c, batch), self.opt.short, passes)
        if not nbrs or base is None:
            return []
        if self.descent.in_shape:  # in their order: the smallest change of shape first
            out = nbrs[: min(size, self.descent.shape_left)]
            for config in out:
                self._enter(config, -1, base[0], batch)
            self.descent.shape_left -= len(out)
            return out
        if self.descent.in_coupled:  # moves to domain ends first (where optima often sit), then the rest
            origin = self.coder.encode(base[1])
            ends = [c for c in nbrs
                    if all(v in (0, n - 1) for v, o, n in zip(self.coder.encode(c), origin, self.coder.sizes) if v != o)]
            left = min(size, self.descent.coupled_left)
            out = self._enrol(ends, left, batch, base[0])
            out += self._enrol([c for c in nbrs if c not in ends], left - len(out), batch, base[0])
            self.descent.coupled_left -= len(out)
            return out
        return self._enrol(nbrs, size, batch, base[0])

    def _moves(self, base: Config, batch: set[str]) -> list[list[Config]]:
        """The fresh one-slot moves of ``base`` in the descent's three passes (:func:`one_slot_moves`)."""
        return one_slot_moves(self.space, self.coder, base, lambda c: self.fresh(c, batch), self.opt.short)

    def _measured(self) -> MeasuredIndex:
        """The history as arrays, with each config's distance to the nearest known local optimum."""
        self.measured_index.sync(self.history, self.swept)
        return self.measured_index

    @property
    def swept(self) -> list[Index]:
        """Local optima found so far: descent bases whose neighbourhood is used up."""
        return self.descent.optima

    def _enter(self, config: Config, active: int, base_score: float, batch: set[str] | None = None,
               vec: tuple[int, ...] | None = None) -> None:
        """Make ``config`` a member of the round being proposed: ``active`` is the agent that chose it
        (-1: none, or all), ``base_score`` the score of the config it started from (for credit)."""
        if batch is not None:
            batch.add(config.id)
        self.indices[config.id] = vec if vec is not None else self.coder.encode(config)
        self.round[config.id] = (active, base_score)

    def _enrol(self, configs: list[Config], size: int, batch: set[str], base_score: float, risk: bool = False) -> list[Config]:
        """The ``size`` of ``configs`` the agents value most (one Thompson draw), entered in the round."""
        if not configs:
            return []
        draw = self._sample_values(1.0) if self.model.n_rows else np.zeros(self.model.dim)
        vecs = [self.coder.encode(c) for c in configs]
        value = np.array([self.model.value(draw, v) for v in vecs])
        if risk:
            value -= np.array([self._failure_risk(v) for v in vecs])
        chances = self._chances(vecs)
        value -= np.array([self._feasibility_risk(v, c) for v, c in zip(vecs, chances)])
        value -= _UNLIKELY * self._unlikely(vecs, chances=chances)
        out = []
        for i in np.argsort(-value, kind="stable")[:size]:
            config = configs[int(i)]
            out.append(config)
            self._enter(config, -1, base_score, batch, vecs[int(i)])
        return out

    def _short_probes(self, incumbent: tuple[float, tuple[int, ...]], size: int, batch: set[str]) -> list[Config]:
        """A new incumbent's unmeasured moves within short domains (every value of a slot with at
        most ``short`` values), those the agents value most first; once per incumbent.

        Why: such a move is the cheapest question with the largest possible answer. A flag or a
        method number changes the kernel's code path, and its best value often depends on the
        rest of the config (a cache hint may pay only with one memory layout), so the
        model's belief about it, learned on other configs, is weakest exactly where it matters.
        """
        score, vec = incumbent
        self.short_probed = tuple(vec)
        if size <= 0:
            return []
        base = self.coder.decode(vec)
        short = self.opt.short
        moves = [c for c in self.space.neighbours(base) if self.fresh(c, batch)]
        moves = [c for c in moves if self.coder.sizes[changed_slot(vec, self.coder.encode(c))] <= short]
        return self._enrol(moves, size, batch, score)

    def _coupled_probes(self, incumbent: tuple[float, tuple[int, ...]], size: int, batch: set[str]) -> list[Config]:
        """Under constraints, a new feasible incumbent's coupled moves (:func:`coupled_moves`: for
        each value no valid one-slot move reaches, the valid config with it whose one other changed
        slot moves least), those the agents value most first; with its short probes, once per incumbent.

        Why: a limit on a resource or on quality moves the optimum away from the unconstrained one,
        often across a restriction (a wider vector path allowed only with a thread tile that
        divides by its width, a smaller tile only without a stride), so the best feasible config
        found early sits in a region whose better neighbours are no one-slot move away. The
        descent proposes such moves only at its end, after tens of evaluations; under a limit the
        first feasible incumbents are rarely near the optimum, and asking early where the
        restrictions lead costs a couple of evaluations per new incumbent. Without bounds it is
        off: the unconstrained results were measured without it.
        """
        score, vec = incumbent
        if size <= 0 or not self._bounds or not score < INFEASIBLE:
            return []
        moves = coupled_moves(self.space, self.coder, self.coder.decode(vec), lambda c: self.fresh(c, batch))
        return self._enrol(moves, size, batch, score)

    def _frontier(self, size: int, batch: set[str]) -> list[Config]:
        """Before a new descent: the most valued first- or second-pass move of each of the best
        ``frontier`` measured configs at distance ``diverse`` or more from every known local optimum.

        Why: a descent costs tens of evaluations, so where the next one starts matters. The best
        measured config away from the known optima is often a mediocre member of a good basin
        (the right code path with one wrong flag, slower than a local optimum of a worse basin);
        one look at the best neighbour of each of several such
        configs finds the basin whose slope is steepest, and the descent starts from there.
        """
        out: list[Config] = []
        for score, vec in self._away_from_optima():
            if len(out) >= min(size, self.opt.frontier):
                break
            moves = self._moves(self.coder.decode(vec), batch)
            out += self._enrol(moves[0] + moves[1], 1, batch, score, risk=True)
        return out

    def _away_from_optima(self) -> Iterator[tuple[float, tuple[int, ...]]]:
        """Measured, working configs, best first, at distance ``diverse`` or more from every known
        local optimum (:meth:`Coder.distance`; the optima themselves are never among them)."""
        measured = self._measured()
        order = measured.ranked()
        order = order[np.isfinite(measured.scores[order])]
        if self.swept:
            order = order[measured.near[order] >= self.opt.diverse]
        swept = set(map(tuple, self.swept))
        for i in order.tolist():
            item = self.history[i]
            if tuple(item[1]) not in swept:
                yield item

    def _trend_probes(self, ranked: list[tuple[float, tuple[int, ...]]], size: int, batch: set[str]) -> list[Config]:
        """Extrapolate once, after the random start: the best ``probes`` configs with every ordered
        slot whose fitted utilities rise (fall) across its domain moved to its highest (lowest) value.

        Why: optima of tuning landscapes often sit at an end of a domain (the largest tile that
        still fits, the widest vector), and the ends are rarely in a small random start. The
        utilities of unmeasured values are pulled towards their neighbours' by the smoothness
        prior, so the model alone reaches an end only after several rounds; a probe asks at once.
        """
        mean = self.model.mean()
        target: dict[int, int] = {}
        for k, n in enumerate(self.coder.sizes):
            if not self.coder.ordered[k] or n < 3:
                continue
            utility = self.model.slot(mean, k)
            rise = float(np.polyfit(np.arange(int(n), dtype=float), utility, 1)[0]) * (int(n) - 1)
            if abs(rise) > self.opt.trend:
                target[k] = int(n) - 1 if rise > 0 else 0
        out: list[Config] = []
        for score, vec in ranked[: self.opt.probes]:
            genes = [target.get(k, v) for k, v in enumerate(vec)]
            if tuple(genes) == tuple(vec) or len(out) >= size:
                continue
            if self._split_rewards() and self._unlikely([vec, genes])[1]:
                continue  # rewards blind to the constraints rise towards an end predicted to miss them
            config = self.repair(genes, batch)
            if config is not None:
                out.append(config)
                self._enter(config, -1, score, batch)
        return out

    def _note_feasibility(self, trial: Trial, vec: Sequence[int]) -> None:
        """Note how far a trial that ran was from each of the run's constraints: per slot value
        whether it missed (``counts``), and each bound's signed miss for the additive model."""
        violations = getattr(self.objective, "violations", None)
        if violations is None or not self._bounds or not (trial.ok or trial.status is Status.ABORTED):
            return
        misses = [float(m) for m in violations(trial)]
        missed = float(any(m > 0 for m in misses))
        if trial.status is Status.ABORTED:
            # An aborted trial reports its latency bound, seldom the other metrics: what it did
            # not report is unknown, not a miss (a run that failed outright is never fed in).
            misses = [m if math.isfinite(Objective.bound_metric(trial, b.metric)) else math.nan
                      for m, b in zip(misses, self._bounds)]
        self.feasibility.add(vec, misses)
        for k, v in enumerate(vec):
            self.bounded_n[k][v] += 1.0
            self.bounded_miss[k][v] += missed

    def _chances(self, vecs: Sequence[Sequence[int]]) -> np.ndarray:
        """The additive model's chance that each proposal meets the constraints (ones when it is
        not in use), one vectorised pass: each proposal's chance is computed once per screen."""
        if self.opt.feasibility_model != "additive" or not self._bounds:
            return np.ones(len(vecs))
        return self.feasibility.chances(vecs)

    def _unlikely(self, vecs: Sequence[Sequence[int]], reference: Sequence[int] | None = None,
                  chances: np.ndarray | None = None) -> np.ndarray:
        """Which of several proposals the feasibility model finds far less likely to meet the
        constraints than the likeliest of them or the ``reference`` config (chance below
        ``feasible_first`` times the best); ``chances``: theirs, when already known.

        Why relative: while nothing measured has met a tight bound every chance is small, and
        what matters is which proposals come closest; once the feasible region is known, a
        proposal predicted to miss it is a wasted evaluation whatever its predicted speed (the
        way Optuna's constrained TPE draws only from the region its feasible trials occupy).
        """
        out = np.zeros(len(vecs), dtype=bool)
        if (not self.opt.feasible_first or self.opt.feasibility_model != "additive"
                or not self._bounds or len(vecs) + (reference is not None) < 2):
            return out
        chance = self._chances(vecs) if chances is None else chances
        top = max(float(chance.max()), self.feasibility.chance(reference) if reference is not None else 0.0)
        if top <= 0.0:
            return out
        return chance < self.opt.feasible_first * top

    def _feasibility_risk(self, vec: Sequence[int], chance: float | None = None) -> float:
        """Penalty for a proposal likely to miss the constraints: ``feasibility`` times the chance
        of a miss, from the additive model of each bound's miss (:mod:`workbench.search.feasibility`,
        the default; ``chance``: the proposal's, when already known) or from per-value counts
        (``feasibility_model="counts"``, below).

        The counts: a value that missed every time it was tried predicts a miss wherever it goes;
        the values' evidence is combined as
        independent odds around the overall miss rate (a naive Bayes estimate), each value's rate
        pulled towards the overall one by two pseudo-trials. The rank rewards already rank misses
        behind hits; this steers the proposals themselves away from the infeasible region.
        """
        weight = self.opt.feasibility
        total = float(self.bounded_n[0].sum()) if self.bounded_n else 0.0
        if not weight or total < 2:
            return 0.0
        if self.opt.feasibility_model == "additive":
            return weight * (1.0 - (self.feasibility.chance(vec) if chance is None else chance))
        base = (float(self.bounded_miss[0].sum()) + 0.5) / (total + 1.0)
        if base <= 0.0 or base >= 1.0:
            return 0.0
        logit = math.log(base / (1.0 - base))
        for k, v in enumerate(vec):
            n, miss = self.bounded_n[k][v], self.bounded_miss[k][v]
            rate = (miss + 2.0 * base) / (n + 2.0)
            logit += math.log(rate / (1.0 - rate)) - math.log(base / (1.0 - base))
        risk = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, logit))))
        return weight * risk

    def _failure_risk(self, vec: Sequence[int]) -> float:
        """Penalty for a proposal close to a failed config: ``fail_weight`` next to it, fading with distance.

        Why local: failures cluster (too many registers for a large block, a tile that does not
        fit), but the values involved are often part of the optimum too (the fastest tile size
        may fail only with the largest blocks). Ranking failures last, or counting them against a
        slot value, teaches the agents that the value itself is bad; a penalty on the failure's
        surroundings only avoids the failing region.
        """
        weight = self.opt.fail_weight
        if not weight or self.opt.failures != "risk" or not len(self.failed):
            return 0.0
        nearest = float(self.coder.distances(self.failed, vec).min())
        return weight * math.exp(-nearest / 0.15)

    def _choose_sweep_base(self) -> tuple[float, Config] | None:
        """Where a descent starts: the incumbent, or, once that is a known local optimum, the best
        measured config at least ``diverse`` away from every known local optimum (:meth:`Coder.distance`:
        a changed categorical slot counts 1, an ordered slot its step relative to the domain's width).

        Why: a second descent from the incumbent's own basin (a few block sizes away) only finds the
        same optimum again; tuning landscapes are often multimodal (one code path's basin next to
        a deeper one of another), and the start of a descent in the other basin is usually already
        among the measured configs.
        """
        if self.best_config is None:
            return None
        need = self.opt.diverse
        best_vec = self.coder.encode(self.best_config)
        if need <= 0 or best_vec not in self.swept:
            return (self.best_score, self.best_config)
        start = next(self._away_from_optima(), None)
        return (start[0], self.coder.decode(start[1])) if start else (self.best_score, self.best_config)

    def _propose_round(self, size: int, batch: set[str]) -> list[Config]:
        """The next round: the agents' (:meth:`_agents_round`), with up to ``path_probes`` of its
        last configs given to path probes once ``path_from`` evaluations were made. The agents keep
        at least one config of every round, and all of it on a space without short slots: a round
        of probes alone, found empty, ended a run with budget left. (The agents' part is planned
        first: planned after the probes, it measured worse; docs/strategies.md, appendix.)"""
        share = self.opt.path_probes if self.agents and self.model.n_rows and len(self.history) >= self.opt.path_from else 0
        if share and not any(1 < int(n) <= self.opt.short for n in self.coder.sizes):
            share = 0  # (no short slots: one code path, nothing to probe)
        share = min(share, size - 1)
        if share <= 0:
            return self._agents_round(size, batch)
        out = self._agents_round(size - share, batch)
        return out + self._path_probes(share, batch)

    def _path_probes(self, size: int, batch: set[str]) -> list[Config]:
        """The best working config with its short slots (domains of at most ``short`` values: flags,
        method numbers, small tiles) set to a combination that no working measured config has (one
        that failed elsewhere is still a path to try: a GPU kernel fails by its geometry, too many
        registers or too much shared memory for a block, as often as by its path), the ``size`` the
        fitted utilities (their posterior mean) value most, less the risks every screened proposal is charged (near a failure, likely to miss the
        constraints; the nearness to failures for the ``PATH_RISKED`` best valued); every combination
        is valued up to ``PATH_ENUMERATE`` of them, else ``PATH_SAMPLES`` random ones, and configs
        are built best first until ``size`` are found.

        Why: the short slots together choose the kernel's code path, and a path's speed depends on
        its long slots (block sizes) so unevenly that its first few configs, measured at the
        geometry of another path's basin, can all look worse than that basin while the path holds
        the optimum. The descents and the agents' one-concern moves change one or two short slots
        at a time, so a combination that differs from the incumbent's in three or four of them is
        reached late or never. A probe asks for one such combination at the incumbent's geometry,
        the path the utilities rate best first. Why from a number of evaluations on (a run-length
        schedule) and not earlier: the early rounds are the descents', which on most spaces gain
        the most there, and no signal measured during a run told apart the spaces where probes pay
        from those where they cost; so the first ``path_from`` evaluations are left exactly as
        without them.
        """
        measured = self._measured()
        n = measured.n
        if np.isfinite(measured.scores[:n]).sum() < 5:
            return []
        order = measured.ranked()
        order = order[np.isfinite(measured.scores[order])]
        incumbent = [int(x) for x in measured.vecs[order[0]]]
        sizes = [int(size) for size in self.coder.sizes]
        shorts = [k for k, size in enumerate(sizes) if 1 < size <= self.opt.short]
        if not shorts:
            return []
        working = np.isfinite(measured.scores[:n])
        known = {tuple(int(v[k]) for k in shorts) for v in measured.vecs[:n][working]}
        if math.prod(sizes[k] for k in shorts) <= PATH_ENUMERATE:
            rows: Any = itertools.product(*[range(sizes[k]) for k in shorts])
        else:
            rows = [[int(self.rng.integers(sizes[k])) for k in shorts] for _ in range(PATH_SAMPLES)]
        candidates: list[tuple[int, ...]] = []
        for row in rows:
            if tuple(row) not in known:
                genes = list(incumbent)
                for k, v in zip(shorts, row):
                    genes[k] = int(v)
                candidates.append(tuple(genes))
        if not candidates:
            return []
        chances = self._chances(candidates)
        value = self.model.values(self.model.mean(), np.asarray(candidates))
        value -= np.array([self._feasibility_risk(vec, chance) for vec, chance in zip(candidates, chances)])
        value -= _UNLIKELY * self._unlikely(candidates, chances=chances)
        ranked = np.argsort(-value, kind="stable")
        top = ranked[:PATH_RISKED]
        risked = value[top] - np.array([self._failure_risk(candidates[i]) for i in top])
        seen = set(batch)
        out: list[Config] = []
        # (valued first, near failures behind; built until enough are found)
        for i in [*top[np.argsort(-risked, kind="stable")].tolist(), *ranked[PATH_RISKED:].tolist()]:
            config = self.space.valid_config_at(candidates[i])
            if config is None or not self.fresh(config, seen):
                continue
            seen.add(config.id)
            out.append(config)
            self._enter(config, -1, self.best_score, batch, candidates[i])
            if len(out) >= size:
                break
        return out

    def _agents_round(self, size: int, batch: set[str]) -> list[Config]:
        if not self.agents:
            return self.sample(size, batch)
        if self._climbing() and not self.climbed and self.rounds >= 1 and self.opt.sweep and not self.descent.running:
            self.climbed = True  # the feasible region is known: descend from its best config at once
            self.since_improvement = self.opt.patience
        if self.since_improvement >= self.opt.patience and self.opt.sweep and not self.descent.running:
            self.since_improvement = 0  # first a systematic pass around the incumbent
            wide = not self.opt.sweep_adjacent
            self.descent.start(self._choose_sweep_base(), self.opt.coupled if wide else 0, self.opt.shape if wide else 0)
        if self.descent.running:
            self.round = {}
            passed = self._sweep(size, batch)
            if passed:
                self.rounds += 1
                return passed
            self.descent.running = False  # neighbourhood exhausted: a local optimum
            self.since_improvement = self.opt.patience
            self.round = {}
            passed = self._frontier(size, batch)  # where the next descent should start
            if passed:
                self.rounds += 1
                return passed  # (the next round starts that descent; without a frontier: focused exploration)
        if self.since_improvement >= self.opt.patience:
            self.focus = self.focus_cycle % len(self.agents)
            self.focus_cycle += 1
            self.since_improvement = 0
        ranked = [self.history[i] for i in self._measured().ranked()[: self.opt.elite].tolist()]
        ranked = [r for r in ranked if math.isfinite(r[0])] or ranked
        out: list[Config] = []
        self.round = {}
        screen = max(1, self.opt.screen) if self.model.n_rows else 1
        if self.space_count() - len(self.taken()) < 64:
            screen = 1  # nearly exhausted: every repair has to search far, and little is left to choose
        if not self.probed and self.model.n_rows:  # the first round after the random start
            self.probed = True
            out = self._trend_probes(ranked, size, batch)
        if self.model.n_rows and self.focus is None and tuple(ranked[0][1]) != self.short_probed:
            out += self._short_probes(ranked[0], min(size - len(out), self.opt.short_probes), batch)
            out += self._coupled_probes(ranked[0], min(size - len(out), self.opt.coupled_probes), batch)
        while len(out) < size:
            # The agents screen a few joint proposals with their fitted utilities (one Thompson
            # draw shared by the candidates) and measure the one they value most.
            best: tuple[float, Config, int, float] | None = None
            draw = self._sample_values(1.0) if screen > 1 else None
            screened: list[tuple[float, Config, int, float]] = []
            vecs: list[tuple[int, ...]] = []
            chances = np.zeros(0)
            unlikely = np.zeros(0, dtype=bool)
            for _attempt in range(1 + SCREEN_RETRIES):
                fresh: list[tuple[float, Config, int, float]] = []
                for _ in range(screen):
                    genes, active, base_score = self._candidate(ranked)
                    config = self.repair(genes, batch)
                    if config is None:
                        break
                    value = 0.0
                    vec = self.coder.encode(config)
                    vecs.append(vec)
                    if draw is not None:
                        value = self.model.value(draw, vec) - self._failure_risk(vec)
                    fresh.append((value, config, active, base_score))
                # each proposal's chance once (the retries add to the screen, they do not redo it)
                new = self._chances(vecs[len(screened):])
                chances = np.concatenate([chances, new])
                if draw is not None:
                    fresh = [(v - self._feasibility_risk(vecs[len(screened) + i], float(new[i])), c, a, b)
                             for i, (v, c, a, b) in enumerate(fresh)]
                screened += fresh
                if not screened or not self._bounds:
                    break
                # Proposals predicted to miss the constraints far more likely than the other
                # proposals go last: the agents value what is likely feasible before what merely
                # looks fast. While the rewards ignore the constraints (split), the incumbent's
                # chance is the yardstick too, and when every proposal falls short they screen more.
                split = self._split_rewards()
                unlikely = self._unlikely(vecs, ranked[0][1] if split else None, chances)
                if not split or not unlikely.all():
                    break
            if unlikely.any():
                screened = [(v - (_UNLIKELY if u else 0.0), c, a, b) for (v, c, a, b), u in zip(screened, unlikely)]
            for item in screened:
                if best is None or item[0] > best[0]:
                    best = item
            if best is None:
                break
            _, config, active, base_score = best
            out.append(config)
            self._enter(config, active, base_score, batch)
        self.rounds += 1
        return out

    def _utilities(self) -> dict[str, list[float]]:
        """The fitted utility of each slot value (what the agents believe), for the session file."""
        mean = self.model.mean()
        return {
            name: [round(float(x), 3) for x in self.model.slot(mean, k)]
            for k, name in enumerate(self.coder.names)
        }

    def ask(self, n: int) -> list[Config]:
        return self.ask_from_queue(n, self._next_round)

    def _next_round(self, wanted: int, batch: set[str]) -> list[Config]:
        """The random start while it lasts (a round too: the agents learn from it), then their rounds."""
        if self.round:
            self._learn()  # a parallel engine asks before the round is back: learn from what is
        if len(self.history) < self.opt.init:
            start = self._start(max(wanted, self.opt.init - len(self.taken()), 1), set(batch))
            for config in start:
                self._enter(config, -1, math.inf)
            return start
        return self._propose_round(max(self._round_size(), wanted), set(batch))

    @property
    def _bounds(self) -> Sequence[Any]:
        """The run objective's bounds; none for a plain cost (a strategy not told an objective)."""
        bounds: Sequence[Any] = getattr(self.objective, "bounds", ())
        return bounds

    def _round_size(self) -> int:
        """Configs in the next round: ``early_batch`` during the first ``early_span`` evaluations
        after the start, ``batch`` after them.

        Why: the utilities are refitted once a round is back, and right after the start they rest
        on one round of ten configs. A round of eight proposed from that fit is mostly spent before
        the model has seen any of its own proposals' results, while a round of four lets the next
        four proposals use them (the agents' proposals right after a refit were the ones that most
        often became the best config within 25 evaluations). Later rounds keep ``batch``: there the
        rank rewards of a larger round say more and the descents do not depend on the round size.
        Under constraints (the objective has bounds) the rounds keep ``batch``: it was measured
        only without bounds, and the constrained start is planned differently (:meth:`_start`).
        """
        early = self.opt.early_batch and not self._bounds
        if early and len(self.history) < self.opt.init + self.opt.early_span:
            return self.opt.early_batch
        return self.opt.batch

    def _start(self, n: int, batch: set[str]) -> list[Config]:
        """``n`` start configs: from ``design`` times as many uniform samples (at most
        ``max(4 n, 4096)``), greedily the one farthest (:meth:`Coder.distance`) from those chosen
        and measured so far.

        Why: a uniform start of ten configs often leaves a slot's values unvisited or repeats
        one code path, and the first model fit then knows nothing about them. Picking from a
        uniform pool keeps the start's weight on the valid space (a regular design ignores
        which configs exist) while spreading it. Under constraints (the objective has bounds)
        the start stays uniform: there a spread start lost more than it gained, since it leans
        towards the ends of the domains, where resource and time limits are missed most often.
        The pool is capped because every pick is a pass over it: ``n`` picks from ``design n``
        samples cost ``design n^2`` distances, quadratic in a large start, while a few thousand
        samples already cover a space far more densely than the start can.
        """
        design = 1 if self._bounds else max(1, self.opt.design)
        pool = self.sample(min(n * design, max(4 * n, 4096)), batch)
        if design <= 1 or len(pool) <= n:
            return pool[:n]
        vecs = np.array([self.coder.encode(c) for c in pool])
        near = np.full(len(pool), np.inf)
        for _, vec in self.history:
            near = np.minimum(near, self.coder.distances(vecs, vec))
        chosen = [0] if not np.isfinite(near).any() else [int(np.argmax(near))]
        while len(chosen) < n:
            near = np.minimum(near, self.coder.distances(vecs, vecs[chosen[-1]]))
            near[chosen] = -1.0
            chosen.append(int(np.argmax(near)))
        return [pool[i] for i in chosen]

    def state(self) -> dict[str, Any]:
        return {
            **super().state(),
            "rounds": self.rounds,
            "focus": None if self.focus is None else self.agents[self.focus][0],
            "credit": {name: round(float(c), 3) for (name, _), c in zip(self.agents, self.credit)},
            "utilities": self._utilities(),
        }
