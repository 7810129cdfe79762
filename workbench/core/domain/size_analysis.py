"""What a size sweep found, as plain numbers for the size view and the command line (no Qt).

Three questions a person asks of a kernel tuned at several sizes, each answered by one function:

- how fast is it at each size (:func:`size_rows`: the best trial per size, sizes in order along
  their size parameters);
- which config wins where (:func:`winner_bands`: runs of consecutive sizes that share a best
  config, one band per run);
- what does it cost to use one size's best config at another size (:func:`cross_matrix`: row i,
  column j holds size j's optimum over the latency of size i's best config measured at size j, so
  1.0 on the diagonal and less elsewhere; NaN where that config was never measured at that size,
  and :func:`missing_cells` lists those, to be measured on request).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from workbench.core.errors import WorkbenchError, counted
from workbench.core.domain.measurement import Status, Trial, failure_counts
from workbench.core.domain.search_objective import INFEASIBLE
from workbench.core.domain.session import Session, problem_key
from workbench.core.domain.sizes import (best_configs, size_order_key, size_parameters, size_value_text, sweep_plan,
                                         telling_parameters, trials_by_problem)
from workbench.core.domain.space import Config, SearchSpace

Cost = Callable[[Trial], float]


@dataclass(frozen=True)
class SizeRow:
    """One measured size: its problem, its trials, and its best trial (None: nothing succeeded)."""

    key: str
    problem: Mapping[str, Any]
    label: str
    trials: tuple[Trial, ...]
    best: Trial | None

    @property
    def best_latency(self) -> float:
        return self.best.metric("latency_ms") if self.best is not None else math.nan

    @property
    def best_config(self) -> Config | None:
        return self.best.config if self.best is not None else None


def size_label(problem: Mapping[str, Any], names: Sequence[str]) -> str:
    """``n=1048576`` (the parameters that tell the sizes apart, :func:`label_names`; all of them
    when none does)."""
    shown = names or list(problem)
    return ", ".join(f"{n}={size_value_text(problem[n])}" for n in shown if n in problem)


def in_plan_order(session: Session, names: list[str]) -> list[str]:
    """``names`` with the sweep's own first (``--sizes rows=... --sizes cols=...``: rows vary
    slowest, as the sweep ran them), then the rest as they were."""
    try:
        plan = sweep_plan(session)
    except WorkbenchError:  # a hand-edited plan is said where it is used; the order here falls back
        plan = None
    swept = [n for n in (plan.sizes if plan is not None else ()) if n in names]
    return swept + [n for n in names if n not in swept]


def label_names(session: Session | None, problems: Sequence[Mapping[str, Any]]) -> list[str]:
    """The parameters a size's name shows, the sweep's own first: every one that tells two of
    ``problems`` apart (:func:`~workbench.core.domain.sizes.telling_parameters`). The size picker,
    the size view, ``show``, ``tune``'s end lines and a replay's sizes all name sizes by it."""
    names = telling_parameters(problems)
    return in_plan_order(session, names) if session is not None else names


def size_rows(session: Session, cost: Cost | None = None) -> list[SizeRow]:
    """Every size with trials, ordered by its size parameters (smallest first), with its best
    feasible trial by ``cost`` (latency by default; an objective's cost ranks a trial that misses
    its constraints at or above ``INFEASIBLE``, and such a trial is no size's best, so a size with
    nothing feasible has none)."""
    if cost is not None:
        cost = _feasible_only(cost)
    groups = trials_by_problem(session)
    problems = {key: session.problem_of(trials[0]) for key, trials in groups.items()}
    names = label_names(session, list(problems.values()))
    order = sorted(groups, key=lambda k: size_order_key(problems[k], names))
    rows = []
    for key in order:
        trials = groups[key]
        best = best_configs(trials, 1, cost)
        rows.append(SizeRow(key, problems[key], size_label(problems[key], names), tuple(trials),
                            best[0] if best else None))
    return rows


@dataclass(frozen=True)
class SizeLayout:
    """Where each size is drawn: along ``x_name`` (the varying parameter with the most values), one
    series per combination of the other varying parameters (a grid sweep; a sweep over one
    parameter is one series). No two sizes share a point: a grid drawn along the product of its
    parameters put rows=1024, cols=4096 and rows=16384, cols=256 on the same spot."""

    x_name: str
    x: np.ndarray  # per row: its value of x_name (the row number when no parameter varies)
    series_names: tuple[str, ...]
    series: tuple[tuple[int, ...], ...]  # per series: its rows, in x order
    series_labels: tuple[str, ...]  # "rows=1024" per series; "" for the one series of a plain sweep
    parameters: tuple[str, ...]  # every varying parameter, in the problem's order


def size_layout(rows: Sequence[SizeRow]) -> SizeLayout:
    """The x axis and the series of :class:`SizeLayout` for ``rows`` (as :func:`size_rows` orders them).
    A parameter that tells sizes apart but is no number (a data type, a switch) makes series too."""
    problems = [r.problem for r in rows]
    telling = telling_parameters(problems)
    names = size_parameters(problems)
    if not names:
        return SizeLayout("size", np.arange(1, len(rows) + 1, dtype=float), (), (tuple(range(len(rows))),), ("",),
                          tuple(telling))
    counts = {n: len({float(r.problem[n]) for r in rows}) for n in names}
    x_name = max(reversed(names), key=lambda n: counts[n])  # ties: the last named (a grid's inner loop)
    others = tuple(n for n in telling if n != x_name)
    groups: dict[tuple[tuple[int, Any], ...], list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(size_order_key(row.problem, others), []).append(i)
    x = np.array([float(r.problem[x_name]) for r in rows])
    series = tuple(tuple(sorted(members, key=lambda i: x[i])) for _, members in sorted(groups.items()))
    labels = tuple(size_label({n: v for n, v in rows[members[0]].problem.items() if n in others}, others)
                   for members in series)
    return SizeLayout(x_name, x, others, series, labels, tuple(telling))


@dataclass(frozen=True)
class Band:
    """Consecutive sizes (``first`` to ``last`` row, inclusive) whose best config is ``config``."""

    config: Config
    first: int
    last: int


def winner_bands(rows: Sequence[SizeRow]) -> list[Band]:
    """Runs of consecutive sizes sharing a best config (sizes without a best end a run)."""
    bands: list[Band] = []
    for i, row in enumerate(rows):
        config = row.best_config
        if config is None:
            continue
        if bands and bands[-1].config == config and bands[-1].last == i - 1:
            bands[-1] = Band(config, bands[-1].first, i)
        else:
            bands.append(Band(config, i, i))
    return bands


def distinct_winners(rows: Sequence[SizeRow]) -> list[Config]:
    """The different best configs, in order of the first size each wins."""
    out: list[Config] = []
    for row in rows:
        if row.best_config is not None and row.best_config not in out:
            out.append(row.best_config)
    return out


def _feasible_only(cost: Cost) -> Cost:
    """``cost`` with every trial that misses the objective's constraints (at or above
    ``INFEASIBLE``) at ``inf``, as a failure: no size's best, no cell's value."""

    def feasible_cost(trial: Trial) -> float:
        value = cost(trial)
        return value if value < INFEASIBLE else math.inf

    return feasible_cost


def _latency_at(trials: Sequence[Trial], config: Config) -> float | None:
    """The config's best latency among ``trials`` (inf when it only failed; None: never measured)."""
    return _cost_at(trials, config, None)


def _cost_at(trials: Sequence[Trial], config: Config, cost: Cost | None) -> float | None:
    """The config's best cost among ``trials`` (latency without ``cost``): inf when it only failed
    (or, under an objective, never met its constraints); None: never measured."""
    found: float | None = None
    feasible = None if cost is None else _feasible_only(cost)
    for trial in trials:
        if trial.config != config:
            continue
        if feasible is None:
            value = trial.metric("latency_ms") if trial.ok else math.inf
        else:
            value = feasible(trial)
        if not math.isfinite(value):
            value = math.inf
        found = value if found is None else min(found, value)
    return found


def cross_matrix(rows: Sequence[SizeRow], cost: Cost | None = None) -> np.ndarray:
    """``m[i, j]``: size j's best over size i's best config at size j, by latency, or by ``cost``
    (the objective's, lower is better, on a ratio scale: a weighted geometric mean of metrics; the
    rows' bests must be the cost's, as :func:`size_rows` gives them). 1 on the diagonal; 0 where
    that config failed there (or misses the objective's constraints there; at a size where nothing
    is feasible, every config measured there does); NaN where it was not measured there, or in the
    row of a size with no best. Why the cost: under weights a size's best is not its fastest
    config, and latency ratios against it went above 100 %."""
    n = len(rows)
    out = np.full((n, n), np.nan)
    for i, source in enumerate(rows):
        config = source.best_config
        if config is None:
            continue
        for j, target in enumerate(rows):
            optimum = target.best_latency if cost is None or target.best is None else cost(target.best)
            value = _cost_at(target.trials, config, cost)
            if value is None:
                continue
            if not math.isfinite(value) or not math.isfinite(optimum):
                out[i, j] = 0.0
            else:  # 0 ms is refused when measured or loaded; one built in memory ties with the optimum
                out[i, j] = optimum / value if value > 0 else 1.0
    return out


def valid_at(space: SearchSpace | None) -> Callable[[Mapping[str, Any], Config], bool]:
    """Whether a config is valid at a problem, by the session's stored space taken at that problem's
    parameters (its restrictions may read them: ``threads * width <= cols``). Without a space, or
    for a recording's (its points are what was measured), every config counts as valid."""
    if space is None or space.is_explicit:
        return lambda problem, config: True
    spaces: dict[str, SearchSpace] = {}

    def valid(problem: Mapping[str, Any], config: Config) -> bool:
        key = problem_key(problem)
        if key not in spaces:
            spaces[key] = space.with_params(problem)
        return spaces[key].is_valid(config)

    return valid


def invalid_cells(rows: Sequence[SizeRow], space: SearchSpace | None) -> set[tuple[int, int]]:
    """Cells ``(i, j)`` of the cross matrix whose config (size i's best) is not a valid config at
    size j: nothing can be measured there, so such a cell is neither missing nor a failure."""
    valid = valid_at(space)
    return {(i, j) for i, source in enumerate(rows) if source.best_config is not None
            for j, target in enumerate(rows) if not valid(target.problem, source.best_config)}


def missing_cells(rows: Sequence[SizeRow], space: SearchSpace | None = None) -> list[tuple[Mapping[str, Any], Config]]:
    """(size, config) pairs the cross matrix lacks: each size's best config never measured at
    another size where it is valid (by ``space``, the session's: see :func:`valid_at`; a config
    a restriction excludes at a size cannot be measured there, and asking for it measured nothing
    and left the cell missing for ever). Grouped by size, in row order, each pair once."""
    out: list[tuple[Mapping[str, Any], Config]] = []
    valid = valid_at(space)
    winners = [r.best_config for r in rows if r.best_config is not None]
    for target in rows:  # (a size where nothing is feasible too: another size's best may be there)
        for config in dict.fromkeys(winners):
            if config is not None and _latency_at(target.trials, config) is None and valid(target.problem, config):
                out.append((target.problem, config))
    return out


def _most_frequent_failure(trials: Sequence[Trial]) -> str:
    """The failure most of ``trials`` share, with its count: ``40 of 40 compile_error: k.cu(20):
    error: expected a ";"``. A sweep measures every size to its budget (a compile error may be one
    size's), so a source that compiles nowhere ends with a line per size, and that line said only
    "none succeeded"."""
    counts = failure_counts(trials)
    if not counts:
        return "nothing measured"
    (status, message), count = max(counts.items(), key=lambda item: item[1])
    return f"{count} of {len(trials)} {status}" + (f": {message}" if message else "")


def size_lines(session: Session, cost: Cost | None = None) -> list[str]:
    """One line per size for the command line: its best latency and config under ``cost`` (an
    objective's: the best *feasible* trial, as ``show`` and ``export --at`` answer), and how many
    trials."""
    rows = size_rows(session, cost)
    winners = distinct_winners(rows)
    names = {c.id: f"#{k + 1}" for k, c in enumerate(winners)}
    lines = []
    for row in rows:
        if row.best is None:
            aborted = sum(t.status is Status.ABORTED for t in row.trials)
            succeeded = any(t.status is Status.OK for t in row.trials)
            why = ("none meets the constraints" if succeeded
                   else f"none succeeded ({aborted} stopped early as hopeless under the latency limit)" if aborted
                   else f"none succeeded; {_most_frequent_failure(row.trials)}")
            lines.append(f"  {row.label}: {counted(len(row.trials), 'trial')}, {why}")
            continue
        estimated = " (resources estimated)" if row.best.measurement.resources_pending else ""
        lines.append(f"  {row.label}: best {row.best_latency:.4g} ms{estimated}, winner {names[row.best.config.id]} "
                     f"{row.best.config.to_dict()} ({counted(len(row.trials), 'trial')})")
    return lines


__all__ = ["Band", "SizeRow", "cross_matrix", "distinct_winners", "in_plan_order", "invalid_cells", "label_names", "missing_cells", "valid_at", "SizeLayout", "size_label", "size_layout",
           "size_lines", "size_rows", "winner_bands"]
