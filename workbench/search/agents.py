"""Cooperative per-concern agents: one learning policy per group of slots, rewarded together.

Why: the slots of a kernel template come in concerns (launch geometry, memory access, compute,
reduction) whose good choices are partly independent: the best tile size barely depends on the
reduction strategy. An agent per concern learns *its* part of the answer from every evaluation,
and the agents cooperate through one shared reward, so the search needs fewer evaluations than a
method that treats the config as one opaque point. See ``docs/strategies.md`` for the algorithm.

In short, every round:

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
   incumbent gets its unmeasured moves within short domains (flags, method numbers) measured.
5. When the best config has not improved for ``patience`` evaluations, a descent sweeps its
   one-slot neighbours in three passes (adjacent values, then short domains and domain ends, then
   the rest). At a local optimum, the best neighbour of each of several good configs away from it
   is measured (the frontier), and the next descent starts from the best config away from it.
   Without a frontier, exploration rises in one agent's dimensions at a time (high temperature,
   others hold the incumbent); the focus moves to the next agent if that does not help either.

A space whose slots all share one group has a single concern; then each slot acts as its own agent.
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Sequence

import numpy as np

from workbench.core.measurement import Status, Trial
from workbench.core.space import GROUPS, Config, SearchSpace
from workbench.search._common import IndexedStrategy, latency_rank
from workbench.search.base import Option

#: The metric an agent watches besides the shared reward (larger is better).
AUX_METRIC = {"memory": "throughput_gbs", "launch": "occupancy"}


class Agents(IndexedStrategy):
    name = "agents"
    description = "Cooperative per-concern agents with shared rank rewards and focused exploration"
    OPTIONS = (
        Option("init", 10, "Random configs measured before the agents start learning"),
        Option("batch", 8, "Configs per round (ranks are taken within a round)"),
        Option(
            "policy", "decomposed", "How an agent values its slots: jointly fitted utilities, or a bandit per slot",
            ("decomposed", "bandit"),
        ),
        Option("spread", 1.0, "Width of the Thompson draws (larger explores more)"),
        Option("aux_weight", 0.2, "Weight of an agent's own metric relative to the shared reward"),
        Option("recall", 0.3, "Chance that an agent transplants one of its best sub-configs seen so far"),
        Option("local", 0.5, "Chance that a redrawn ordered slot steps to a nearby value instead of drawing from the policy"),
        Option("joint", 0.2, "Chance that all agents redraw at once (global exploration)"),
        Option("credit_share", 0.5, "Share of turns given by credit (the rest go round evenly)"),
        Option("screen", 16, "Joint proposals the agents screen with their utilities per config measured"),
        Option("interactions", True, "Fit utilities of value pairs within a concern (slots of one agent interact)"),
        Option("elite", 4, "Configs a candidate may start from (the incumbent and the next best)"),
        Option("patience", 8, "Evaluations without improvement before exploration rises in one agent"),
        Option("hot", 4.0, "Temperature of the focused agent while exploring"),
        Option("sweep_adjacent", False, "A sweep stops after the adjacent values of ordered slots (no wider pass)"),
        Option("short", 4, "Domains with at most this many values are short: every value is one move away (flags, method numbers)"),
        Option("short_probes", 5, "Configs of a round spent on a new incumbent's unmeasured moves within short domains"),
        Option("frontier", 8, "Good measured configs away from known local optima whose best neighbour is measured before a new descent"),
        Option("min_gain", 0.01, "Relative speed-up a new best needs to count as progress (timing noise is not progress)"),
        Option(
            "failures", "risk",
            "How failed configs teach: 'risk' keeps them out of the rank rewards and steers proposals away "
            "from their surroundings; 'rank' ranks them last in their round",
            ("risk", "rank"),
        ),
        Option("fail_weight", 1.0, "Penalty (in reward units) for a proposal right next to a failed config"),
        Option(
            "feasibility", 1.0,
            "Penalty (in reward units) times the estimated chance that a proposal misses a constraint, "
            "learnt per slot value from the trials that met or missed the run's constraints",
        ),
        Option("probes", 2, "Configs of the first learning round moved to the ends of ordered domains the utilities rise towards"),
        Option("trend", 0.03, "Rise of an ordered slot's utilities across its domain (reward units) that makes a probe move it"),
        Option("diverse", 2.0, "Distance a new descent's start keeps from known local optima (0: always the incumbent)"),
        Option("learn_all", True, "Learn from every told result, also from configs the agents did not propose"),
        Option(
            "sweep", True,
            "When stalled, first measure the incumbent's one-slot neighbours (adjacent values first), "
            "best predicted first, and keep descending while that improves (then focused exploration)",
        ),
    )

    def __init__(self, space: SearchSpace, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
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
        self.offsets = np.concatenate([[0], np.cumsum(self.coder.sizes)]).astype(int)
        # Interactions inside a concern (tile x shared memory) get their own utilities; across
        # concerns utilities only add up. An agent is a clique of slots that interact.
        self.pairs: list[tuple[int, int, int]] = []  # (slot, other slot, first feature column)
        dim = int(self.offsets[-1])
        if self.options["interactions"]:
            for _, slots in self.agents:
                for i, k1 in enumerate(slots):
                    for k2 in slots[i + 1 :]:
                        self.pairs.append((k1, k2, dim))
                        dim += int(self.coder.sizes[k1] * self.coder.sizes[k2])
        self.gram, self.xty, self.yy, self.n_rows = np.zeros((dim, dim)), np.zeros(dim), 0.0, 0
        self.dim = dim
        self.prior = np.eye(dim)  # ridge towards zero utility, plus smoothness along ordered slots
        self.prior[int(self.offsets[-1]) :, int(self.offsets[-1]) :] *= 2.0  # interactions: only on evidence
        for k, size in enumerate(self.coder.sizes):
            if self.coder.ordered[k] and size > 1:
                diff = np.diff(np.eye(int(size)), axis=0)
                lo, hi = self.offsets[k], self.offsets[k + 1]
                self.prior[lo:hi, lo:hi] += 4.0 * diff.T @ diff
        self.aux_sum = [np.zeros(int(size)) for size in self.coder.sizes]
        self.aux_n = [np.zeros(int(size)) for size in self.coder.sizes]
        self._posterior: tuple[np.ndarray, np.ndarray] | None = None
        self._sampled: np.ndarray | None = None
        self.credit = np.ones(len(self.agents))
        #: per agent: its sub-config (values of its slots) -> best score measured with it
        self.sub_best: list[dict[tuple[int, ...], float]] = [{} for _ in self.agents]
        self.history: list[tuple[float, tuple[int, ...]]] = []
        self.queue: list[Config] = []
        self.round: dict[str, tuple[int, float]] = {}  # id -> (active agent or -1, score of its base)
        self.outcomes: dict[str, tuple[float, dict[str, float]]] = {}
        self.indices: dict[str, tuple[int, ...]] = {}  # id -> index vector of round members
        self.since_improvement = 0
        self.focus: int | None = None
        self.focus_cycle = 0
        self.sweeping = False
        self.sweep_base: tuple[float, Config] | None = None
        self.swept: list[tuple[int, ...]] = []  # local optima whose neighbourhood is used up
        self.failed = np.zeros((0, len(self.coder.sizes)), dtype=np.int64)  # index vectors of failed configs
        self.probed = False  # the trend probes are sent once, with the first learning round
        self.short_probed: tuple[int, ...] | None = None  # the incumbent whose short moves were probed last
        self.foreign: list[tuple[float, tuple[int, ...]]] = []  # told results of configs others proposed
        self.rounds = 0
        #: per slot value: trials measured with it under constraints, and how many of them missed
        self.bounded_n = [np.zeros(int(size)) for size in self.coder.sizes]
        self.bounded_miss = [np.zeros(int(size)) for size in self.coder.sizes]

    # --- learning ------------------------------------------------------------------------------
    def tell(self, trials: Sequence[Trial]) -> None:
        before = self.best_score
        super().tell(trials)
        for trial in trials:
            score = self.scores[trial.config.id]
            self.history.append((score, self.coder.encode(trial.config)))
            if not math.isfinite(score):
                self.failed = np.vstack([self.failed, self.history[-1][1]])
            if trial.config.id not in self.round and self.options["learn_all"]:
                self.foreign.append((score, self.history[-1][1]))  # proposed by someone else
            aux = {m: trial.metric(m) for m in AUX_METRIC.values()}
            self.outcomes[trial.config.id] = (score, aux)
            vec = self.history[-1][1]
            for a, (_, slots) in enumerate(self.agents):
                sub = tuple(vec[k] for k in slots)
                if score < self.sub_best[a].get(sub, math.inf):
                    self.sub_best[a][sub] = score
            self.since_improvement += 1
            self._note_feasibility(trial, vec)
            if self.sweeping and self.sweep_base is not None and score < self.sweep_base[0]:
                self.sweep_base = (score, trial.config)
        progress = self.best_score < before * (1.0 - float(self.options["min_gain"]))
        if progress or len(self.history) <= int(self.options["init"]):
            self.since_improvement = 0  # (the random start is not a stall)
            self.focus = None  # a sweep that improved goes on around the new incumbent
        if self.round and all(cid in self.outcomes for cid in self.round):
            self._learn()
        if len(self.foreign) >= int(self.options["batch"]):
            # Results the agents did not propose (a portfolio partner, a reopened session) form
            # rounds of their own: ranked among themselves, they teach the utilities the same way.
            kept = [(score, vec) for score, vec in self.foreign if self._ranked(score)]
            if len(kept) >= 2:
                self._accumulate([vec for _, vec in kept], latency_rank([score for score, _ in kept]))
            self.foreign = []

    def _ranked(self, score: float) -> bool:
        """Whether a result enters the rank rewards: with ``failures="risk"`` a failure does not,
        since it says where the kernel breaks, not how fast its values are (see :meth:`_failure_risk`)."""
        return math.isfinite(score) or self.options["failures"] == "rank"

    def _learn(self) -> None:
        """Rank rewards for the finished part of the round; update every agent's preferences."""
        done = [cid for cid in self.round if cid in self.outcomes and self._ranked(self.outcomes[cid][0])]
        if len(done) >= 2:
            scores = [self.outcomes[cid][0] for cid in done]
            reward = latency_rank(scores)
            idx = [self.indices[cid] for cid in done]
            self._accumulate(idx, reward)
            for a, (group, slots) in enumerate(self.agents):
                own = reward.copy()
                metric = AUX_METRIC.get(group)
                if metric is not None:
                    values = np.array([self.outcomes[cid][1].get(metric, math.nan) for cid in done])
                    finite = np.isfinite(values)
                    if finite.sum() >= 2:
                        aux = np.zeros(len(done))
                        aux[finite] = latency_rank(-values[finite])
                        own = own + float(self.options["aux_weight"]) * aux
                        for j in np.flatnonzero(finite):
                            for k in slots:
                                self.aux_sum[k][idx[j][k]] += aux[j]
                                self.aux_n[k][idx[j][k]] += 1.0
                for j, vec in enumerate(idx):
                    if self.round[done[j]][0] in (-1, a):  # an agent that held made no choice to score
                        for k in slots:
                            self.reward_sum[k][vec[k]] += own[j]
                            self.reward_n[k][vec[k]] += 1.0
            for cid, score in zip(done, scores):  # credit: did the active agent beat its base?
                active, base_score = self.round[cid]
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
        if self.options["policy"] == "decomposed":
            if self._sampled is None:
                self._sampled = self._sample_values(temperature)
            utility = self._sampled[self.offsets[k] : self.offsets[k + 1]]
            utility = utility + float(self.options["aux_weight"]) * self.aux_sum[k] / (self.aux_n[k] + 1.0)
            return int(np.argmax(utility))
        return int(np.argmax(self._thompson(k, temperature)))

    def _features(self, vec: Sequence[int]) -> np.ndarray:
        """Columns set for a config: one per slot value, one per value pair of interacting slots."""
        cols = [int(self.offsets[k]) + int(v) for k, v in enumerate(vec)]
        cols += [first + int(vec[k1]) * int(self.coder.sizes[k2]) + int(vec[k2]) for k1, k2, first in self.pairs]
        return np.asarray(cols, dtype=int)

    def _accumulate(self, idx: list[tuple[int, ...]], reward: np.ndarray) -> None:
        """Add one round to the normal equations, with the round's means removed (see :meth:`_fit`)."""
        x = np.zeros((len(idx), self.dim))
        for i, vec in enumerate(idx):
            x[i, self._features(vec)] = 1.0
        x -= x.mean(axis=0)
        y = reward - reward.mean()
        self.gram += x.T @ x
        self.xty += x.T @ y
        self.yy += float(y @ y)
        self.n_rows += len(idx)
        self._posterior = None

    def _fit(self) -> tuple[np.ndarray, np.ndarray]:
        """Value decomposition: shared rank rewards = sum of every slot's value utility, fitted jointly.

        Rewards are compared only within their round (round means are removed from rewards and
        features alike), so a round of strong configs and a round of weak ones teach the same
        thing. A ridge prior pulls utilities to zero and, on ordered slots, neighbours together.
        Returns the posterior mean and a Cholesky factor of its covariance.
        """
        a = self.gram + self.prior
        mean = np.linalg.solve(a, self.xty)
        sse = self.yy - 2.0 * float(mean @ self.xty) + float(mean @ self.gram @ mean)
        noise = max(0.05, sse / self.n_rows) if self.n_rows else 0.25
        cov = np.linalg.inv(a) * noise
        chol = np.linalg.cholesky(0.5 * (cov + cov.T) + 1e-12 * np.eye(len(mean)))
        return mean, chol

    def _sample_values(self, temperature: float) -> np.ndarray:
        """One Thompson draw of every slot value's utility (wider with ``temperature``)."""
        if self._posterior is None:
            self._posterior = self._fit()
        mean, chol = self._posterior
        z = self.rng.standard_normal(len(mean))
        return mean + temperature * float(self.options["spread"]) * (chol @ z)

    def _thompson(self, k: int, temperature: float = 1.0) -> np.ndarray:
        """One posterior draw of the mean rank reward of each value of slot ``k``."""
        n = self.kernel[k] @ self.reward_n[k] + 1.0
        mean = (self.kernel[k] @ self.reward_sum[k]) / n
        noise = self.rng.standard_normal(len(n))
        return mean + temperature * float(self.options["spread"]) * noise / np.sqrt(n)

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
            self._redraw(genes, self.focus, float(self.options["hot"]), 0.3, 0.3)
            return genes, self.focus, base_score
        pick = 0 if self.rng.random() < 0.5 else int(self.rng.integers(len(ranked)))
        base_score, base = ranked[pick]
        genes = list(base)
        if self.rng.random() < self.options["joint"]:
            for a in range(len(self.agents)):
                self._redraw(genes, a, 1.0, 0.0, 0.0)
            return genes, -1, base_score
        share = float(self.options["credit_share"])
        p = share * self.credit / self.credit.sum() + (1.0 - share) / len(self.agents)
        active = int(self.rng.choice(len(self.agents), p=p))
        self._redraw(genes, active, 1.0, float(self.options["local"]), float(self.options["recall"]))
        return genes, active, base_score

    def _sweep(self, size: int, batch: set[str]) -> list[Config]:
        """Unmeasured one-slot neighbours of the descent's base, those the agents value most first.

        Why: a rank-learning model is misled on a needle (the optimum needs several choices that
        each look mediocre alone), while a systematic neighbourhood pass walks into it once it
        stands next to it. The fitted utilities only order the pass; every neighbour gets its turn
        unless one beats the base (then the pass moves there, see :meth:`tell`). A base whose
        neighbourhood is used up is a local optimum and is remembered in ``swept``.
        """
        if self.sweep_base is None:
            return []
        base_score, base = self.sweep_base
        moves = self._moves(base, batch)
        tiers = 1 if self.options["sweep_adjacent"] else 3
        nbrs = next((tier for tier in moves[:tiers] if tier), [])
        if not nbrs:
            self.swept.append(self.coder.encode(base))
            return []
        return self._enrol(nbrs, size, batch, base_score)

    def _moves(self, base: Config, batch: set[str]) -> list[list[Config]]:
        """The unmeasured one-slot moves of ``base``, in the three passes of a descent (VND).

        1. the adjacent values of ordered slots and every value of categorical ones (the nearest
           questions);
        2. the ends of ordered domains, and every value of short ones (at most ``short`` values);
        3. every other one-slot move.

        Why the second pass: an integer slot with a handful of values is often a method number
        (point-in-polygon's ``between_method`` 0-3 is fastest at 0 and slowest at 1), where
        adjacency means nothing, and optima often sit at a domain's end (the largest tile). Both
        are few evaluations, while the third pass of a 31-value block size is many.
        """
        adjacent = {c.id for c in self.space.neighbours(base, adjacent_only=True)}
        origin = self.coder.encode(base)
        passes: list[list[Config]] = [[], [], []]
        for config in self.space.neighbours(base):
            if not self.fresh(config, batch):
                continue
            if config.id in adjacent:
                passes[0].append(config)
                continue
            vec = self.coder.encode(config)
            k = self._changed_slot(origin, vec)
            size = int(self.coder.sizes[k])
            passes[1 if size <= int(self.options["short"]) or vec[k] in (0, size - 1) else 2].append(config)
        return passes

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
        draw = self._sample_values(1.0) if self.n_rows else np.zeros(self.dim)
        vecs = [self.coder.encode(c) for c in configs]
        value = np.array([float(draw[self._features(v)].sum()) for v in vecs])
        if risk:
            value -= np.array([self._failure_risk(v) for v in vecs])
        value -= np.array([self._feasibility_risk(v) for v in vecs])
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
        rest of the config (convolution: read-only loads pay only with shared memory), so the
        model's belief about it, learned on other configs, is weakest exactly where it matters.
        """
        score, vec = incumbent
        self.short_probed = tuple(vec)
        if size <= 0:
            return []
        base = self.coder.decode(vec)
        short = int(self.options["short"])
        moves = [c for c in self.space.neighbours(base) if self.fresh(c, batch)]
        moves = [c for c in moves if self.coder.sizes[self._changed_slot(vec, self.coder.encode(c))] <= short]
        return self._enrol(moves, size, batch, score)

    @staticmethod
    def _changed_slot(a: Sequence[int], b: Sequence[int]) -> int:
        """The first slot where index vectors ``a`` and ``b`` differ (``b`` is a one-slot move of ``a``)."""
        return next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)

    def _frontier(self, size: int, batch: set[str]) -> list[Config]:
        """Before a new descent: the most valued first- or second-pass move of each of the best
        ``frontier`` measured configs at distance ``diverse`` or more from every known local optimum.

        Why: a descent costs tens of evaluations, so where the next one starts matters. The best
        measured config away from the known optima is often a mediocre member of a good basin
        (convolution: read-only loads with shared memory but the wrong padding, 60 % of the
        optimum, next to a trap at 64 %); one look at the best neighbour of each of several such
        configs finds the basin whose slope is steepest, and the descent starts from there.
        """
        out: list[Config] = []
        for score, vec in self._away_from_optima():
            if len(out) >= min(size, int(self.options["frontier"])):
                break
            moves = self._moves(self.coder.decode(vec), batch)
            out += self._enrol(moves[0] + moves[1], 1, batch, score, risk=True)
        return out

    def _away_from_optima(self) -> Iterator[tuple[float, tuple[int, ...]]]:
        """Measured, working configs, best first, at distance ``diverse`` or more from every known
        local optimum (:meth:`Coder.distance`; the optima themselves are never among them)."""
        optima = np.asarray(self.swept)
        need = float(self.options["diverse"])
        for score, vec in sorted(self.history, key=lambda item: item[0]):
            if not math.isfinite(score):
                return
            if len(optima) and (tuple(vec) in self.swept or float(self.coder.distances(optima, vec).min()) < need):
                continue
            yield score, vec

    def _trend_probes(self, ranked: list[tuple[float, tuple[int, ...]]], size: int, batch: set[str]) -> list[Config]:
        """Extrapolate once, after the random start: the best ``probes`` configs with every ordered
        slot whose fitted utilities rise (fall) across its domain moved to its highest (lowest) value.

        Why: optima of tuning landscapes often sit at an end of a domain (the largest tile that
        still fits, the widest vector), and the ends are rarely in a small random start. The
        utilities of unmeasured values are pulled towards their neighbours' by the smoothness
        prior, so the model alone reaches an end only after several rounds; a probe asks at once.
        """
        mean = self._fit()[0]
        target: dict[int, int] = {}
        for k, n in enumerate(self.coder.sizes):
            if not self.coder.ordered[k] or n < 3:
                continue
            utility = mean[self.offsets[k] : self.offsets[k + 1]]
            rise = float(np.polyfit(np.arange(int(n), dtype=float), utility, 1)[0]) * (int(n) - 1)
            if abs(rise) > float(self.options["trend"]):
                target[k] = int(n) - 1 if rise > 0 else 0
        out: list[Config] = []
        for score, vec in ranked[: int(self.options["probes"])]:
            genes = [target.get(k, v) for k, v in enumerate(vec)]
            if tuple(genes) == tuple(vec) or len(out) >= size:
                continue
            config = self.repair(genes, batch)
            if config is not None:
                out.append(config)
                self._enter(config, -1, score, batch)
        return out

    def _note_feasibility(self, trial: Trial, vec: Sequence[int]) -> None:
        """Count whether a trial that ran met the run's constraints, for each of its slot values."""
        violation = getattr(self.objective, "violation", None)
        if violation is None or not getattr(self.objective, "bounds", ()) or not (trial.ok or trial.status is Status.ABORTED):
            return
        missed = float(violation(trial) > 0)
        for k, v in enumerate(vec):
            self.bounded_n[k][v] += 1.0
            self.bounded_miss[k][v] += missed

    def _feasibility_risk(self, vec: Sequence[int]) -> float:
        """Penalty for a proposal whose slot values have mostly missed the constraints so far.

        Why per slot value: a limit on registers, shared memory, occupancy or compile time is
        decided by a few slots (the tile, the block, the unroll), and a value that missed every time
        it was tried predicts a miss wherever it goes; the values' evidence is combined as
        independent odds around the overall miss rate (a naive Bayes estimate), each value's rate
        pulled towards the overall one by two pseudo-trials. The rank rewards already rank misses
        behind hits; this steers the proposals themselves away from the infeasible region.
        """
        weight = float(self.options["feasibility"])
        total = float(self.bounded_n[0].sum()) if self.bounded_n else 0.0
        if not weight or total < 2:
            return 0.0
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
        fit), but the values involved are often part of the optimum too (pnpoly's fastest tile
        size fails with the largest blocks). Ranking failures last, or counting them against a
        slot value, teaches the agents that the value itself is bad; a penalty on the failure's
        surroundings only avoids the failing region.
        """
        weight = float(self.options["fail_weight"])
        if not weight or self.options["failures"] != "risk" or not len(self.failed):
            return 0.0
        nearest = float(self.coder.distances(self.failed, vec).min())
        return weight * math.exp(-nearest / 0.15)

    def _choose_sweep_base(self) -> tuple[float, Config] | None:
        """Where a descent starts: the incumbent, or, once that is a known local optimum, the best
        measured config at least ``diverse`` away from every known local optimum (:meth:`Coder.distance`:
        a changed categorical slot counts 1, an ordered slot its step relative to the domain's width).

        Why: a second descent from the incumbent's own basin (a few block sizes away) only finds the
        same optimum again; the landscapes we measured are bimodal (convolution: a read-only, no
        shared-memory basin at 68 % of the optimum next to the right one), and the start of a
        descent in the other basin is usually already among the measured configs.
        """
        if self.best_config is None:
            return None
        need = float(self.options["diverse"])
        best_vec = self.coder.encode(self.best_config)
        if need <= 0 or best_vec not in self.swept:
            return (self.best_score, self.best_config)
        start = next(self._away_from_optima(), None)
        return (start[0], self.coder.decode(start[1])) if start else (self.best_score, self.best_config)

    def _propose_round(self, size: int, batch: set[str]) -> list[Config]:
        if not self.agents:
            return self.sample(size, batch)
        if self.since_improvement >= int(self.options["patience"]) and self.options["sweep"] and not self.sweeping:
            self.sweeping = True  # first a systematic pass around the incumbent
            self.since_improvement = 0
            self.sweep_base = self._choose_sweep_base()
        if self.sweeping:
            self.round = {}
            out = self._sweep(size, batch)
            if out:
                self.rounds += 1
                return out
            self.sweeping = False  # neighbourhood exhausted: a local optimum
            self.since_improvement = int(self.options["patience"])
            self.round = {}
            out = self._frontier(size, batch)  # where the next descent should start
            if out:
                self.rounds += 1
                return out  # (the next round starts that descent; without a frontier: focused exploration)
        if self.since_improvement >= int(self.options["patience"]):
            self.focus = self.focus_cycle % len(self.agents)
            self.focus_cycle += 1
            self.since_improvement = 0
        ranked = sorted(self.history, key=lambda item: item[0])[: int(self.options["elite"])]
        ranked = [r for r in ranked if math.isfinite(r[0])] or ranked
        out: list[Config] = []
        self.round = {}
        screen = max(1, int(self.options["screen"])) if self.n_rows else 1
        if self.space_count() - len(self.taken()) < 64:
            screen = 1  # nearly exhausted: every repair has to search far, and little is left to choose
        if not self.probed and self.n_rows:  # the first round after the random start
            self.probed = True
            out = self._trend_probes(ranked, size, batch)
        if self.n_rows and self.focus is None and tuple(ranked[0][1]) != self.short_probed:
            out += self._short_probes(ranked[0], min(size - len(out), int(self.options["short_probes"])), batch)
        while len(out) < size:
            # The agents screen a few joint proposals with their fitted utilities (one Thompson
            # draw shared by the candidates) and measure the one they value most.
            best: tuple[float, Config, int, float] | None = None
            draw = self._sample_values(1.0) if screen > 1 else None
            for _ in range(screen):
                genes, active, base_score = self._candidate(ranked)
                config = self.repair(genes, batch)
                if config is None:
                    break
                value = 0.0
                if draw is not None:
                    vec = np.asarray(self.coder.encode(config))
                    value = float(draw[self._features(vec)].sum())
                    value -= self._failure_risk(vec) + self._feasibility_risk(vec)
                if best is None or value > best[0]:
                    best = (value, config, active, base_score)
            if best is None:
                break
            _, config, active, base_score = best
            out.append(config)
            self._enter(config, active, base_score, batch)
        self.rounds += 1
        return out

    def _utilities(self) -> dict[str, list[float]]:
        """The fitted utility of each slot value (what the agents believe), for the session file."""
        mean = self._fit()[0] if self.n_rows else np.zeros(self.dim)
        return {
            name: [round(float(x), 3) for x in mean[self.offsets[k] : self.offsets[k + 1]]]
            for k, name in enumerate(self.coder.names)
        }

    def ask(self, n: int) -> list[Config]:
        out: list[Config] = []
        batch: set[str] = set()
        while len(out) < n and not self.exhausted():
            if not self.queue:
                if self.round:
                    self._learn()  # a parallel engine asks before the round is back: learn from what is
                if len(self.history) < int(self.options["init"]):
                    want = max(n - len(out), int(self.options["init"]) - len(self.taken()))
                    self.queue = self.sample(max(want, 1), set(batch))
                    for config in self.queue:  # the random start is a round too: agents learn from it
                        self._enter(config, -1, math.inf)
                else:
                    self.queue = self._propose_round(max(int(self.options["batch"]), n - len(out)), set(batch))
                self.queue.reverse()
                if not self.queue:
                    break
            config = self.queue.pop()
            if self.fresh(config, batch):
                out.append(config)
                batch.add(config.id)
        return self.take(out)

    def state(self) -> dict[str, Any]:
        return {
            **super().state(),
            "rounds": self.rounds,
            "focus": None if self.focus is None else self.agents[self.focus][0],
            "credit": {name: round(float(c), 3) for (name, _), c in zip(self.agents, self.credit)},
            "utilities": self._utilities(),
        }
