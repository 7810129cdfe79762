"""Problem sizes in one session: which problems a session's trials ran at, and their trials.

A kernel is tuned once and runs at many sizes, and the best config at one size is often not the
best at another. A size sweep therefore keeps the trials of several problems in one session: each
:class:`~workbench.core.domain.measurement.Trial` may carry its own ``problem`` (None: the session's
``problem``). Every view that compares sizes (the size view, dispatch export, warm-started retuning)
groups trials through the helpers here, so a problem means the same everywhere:

- :func:`~workbench.core.domain.session.problem_key`: the canonical text of a problem, equal
  for equal problems whatever the order of their names;
- :func:`problems_of`: the distinct problems a session's trials ran at, in order of first trial;
- :func:`trials_by_problem`: problem key -> that problem's trials, in the same order.

A sweep's plan (:class:`SweepPlan`: the swept values, evaluations per size, warm start on or off) is
kept in ``Session.extra["sweep"]``, so continuing the session finishes the sizes not done. A new size
starts warm: it first measures the best configs of the nearest sizes already measured
(:func:`warm_start_configs`; nearness is a distance on a log scale, since sizes spread over orders of
magnitude), and the strategy, told those trials, goes on from there.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from workbench.core.domain.assignments import MAX_ASSIGNMENT_CHARS, parse_value
from workbench.core.errors import WorkbenchError, quoted
from workbench.core.domain.measurement import Trial
from workbench.core.domain.run_settings import MAX_COUNT
from workbench.core.domain.session import MAX_NAME_CHARS, MAX_PROBLEM_PARAMETERS, Session, problem_key
from workbench.core.domain.space import Config, Value

__all__ = ["problems_of", "trials_by_problem", "SweepPlan", "parse_sizes", "parse_sizes_text",
           "size_grid", "typed_like", "sweep_plan", "set_sweep_plan", "size_distance", "nearest_problems", "best_configs",
           "warm_start_configs", "size_parameters", "telling_parameters", "size_value_text", "size_order_key", "remeasurable", "SweepProgress", "sweep_progress", "EARLY_ENDS"]

#: How a size's run ends by its own rule before the plan's evaluations per size: no improvement in
#: ``--patience`` evaluations, its time limit, or a space with nothing left to measure.
EARLY_ENDS = ("plateau", "time_limit", "exhausted")


def _keyed(session: Session) -> list[tuple[str, Mapping[str, Any], Trial]]:
    """(key, problem, trial) for every trial; a problem object shared by many trials (one run's)
    is keyed once."""
    own = problem_key(session.problem)
    seen: dict[int, str] = {}
    out: list[tuple[str, Mapping[str, Any], Trial]] = []
    for trial in session.trials:
        problem = trial.problem
        if problem is None:
            out.append((own, session.problem, trial))
            continue
        key = seen.get(id(problem))
        if key is None:
            key = seen[id(problem)] = problem_key(problem)
        out.append((key, problem, trial))
    return out


def trials_by_problem(session: Session) -> dict[str, list[Trial]]:
    """Problem key -> the trials measured at that problem, problems in order of their first trial."""
    groups: dict[str, list[Trial]] = {}
    for key, _problem, trial in _keyed(session):
        groups.setdefault(key, []).append(trial)
    return groups


def shared_size_hint(first: Session, other: Session) -> str:
    """``, or one size both measured with {at:n=4096}`` (a message template) when two sessions
    whose own problems differ share a measured size (sweeps started at different sizes), else ''."""
    theirs = problems_of(first) or [dict(first.problem)]
    shared = [p for p in problems_of(other) or [dict(other.problem)] if p in theirs]
    if not shared:
        return ""
    differ = [k for k in first.problem if other.problem.get(k) != first.problem.get(k)] or list(shared[0])
    pick = " ".join(quoted(f"{k}={shared[0][k]}") for k in differ if k in shared[0])
    return f", or one size both measured with {{at:{pick}}}" if pick else ""


def problems_of(session: Session) -> list[dict[str, Any]]:
    """The distinct problems the session's trials ran at (copies), in order of their first trial;
    a session without trials has none."""
    found: dict[str, dict[str, Any]] = {}
    for key, problem, _trial in _keyed(session):
        if key not in found:
            found[key] = dict(problem)
    return list(found.values())


def remeasurable(session: Session, worth: Callable[[Trial], bool]) -> list[tuple[dict[str, Any], list[Config]]]:
    """(problem, configs) for every problem of the session (in order of its first trial) with
    configs whose latest trial at that problem ``worth`` says to measure again (an aborted one the
    latency limit in force no longer rules out): what "re-measure aborted" measures and counts, per
    size, since a config aborted at one size may be fine at another."""
    out: list[tuple[dict[str, Any], list[Config]]] = []
    for trials in trials_by_problem(session).values():
        latest: dict[str, Trial] = {}
        for trial in trials:
            latest[trial.config.id] = trial
        configs = [t.config for t in latest.values() if worth(t)]
        if configs:
            out.append((session.problem_of(trials[0]), configs))
    return out


# ------------------------------------------------------------------------------------------------
# Sweep plans: which sizes, how many evaluations each
# ------------------------------------------------------------------------------------------------

#: Most problems one sweep may hold (a grid is the product of its value lists).
MAX_SWEEP_PROBLEMS = 256
#: Where a session keeps its sweep plan (``Session.extra``), so continuing finishes the sizes not done.
SWEEP_KEY = "sweep"
#: Nearest measured sizes whose best configs a new size measures first, and how many of each.
WARM_NEIGHBOURS = 2
WARM_PER_SIZE = 2


def _one_size_value(raw: str, where: str) -> Value:
    if not raw.strip():
        raise WorkbenchError(f"{where}: an empty value")
    return parse_value(raw, where)


def parse_sizes(items: Sequence[str], flag: str = "--sizes") -> dict[str, list[Value]]:
    """``["n=1024,4096", "m=8,16"]`` -> ``{"n": [1024, 4096], "m": [8, 16]}`` (values parsed like
    ``--set``); a name given twice or a value listed twice is an error, and so is a grid of more than
    :data:`MAX_SWEEP_PROBLEMS` problems. An item may hold several groups separated by ``;``, as the
    window's sizes field shows a grid (``n=1024,4096; m=8,16``), so that text can be pasted here."""
    out: dict[str, list[Value]] = {}
    for item in (part.strip() for given in items for part in given.split(";")):
        if not item:
            continue
        if len(item) > MAX_ASSIGNMENT_CHARS * 10:
            raise WorkbenchError(f"{flag}: {len(item):,} characters is too long")
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not name or not raw.strip():
            raise WorkbenchError(f"{flag} {item[:60]!r}: expected NAME=V1,V2,...")
        if not name.isidentifier():
            raise WorkbenchError(f"{flag} {item[:60]!r}: {name[:40]!r} is not a name (letters, digits and _)")
        if name in out:
            raise WorkbenchError(f"{flag} {name}: given twice (list all its values once: {name}=V1,V2,...)")
        values: list[Value] = []
        for part in raw.split(","):
            value = _one_size_value(part, f"{flag} {name}")
            if any(_same_size_value(v, value) for v in values):
                raise WorkbenchError(f"{flag} {name}: {part.strip()} is listed twice")
            values.append(value)
        out[name] = values
    if items and not out:  # only separators or blanks (an empty shell variable): not a plain run
        raise WorkbenchError(f"{flag} {';'.join(items)[:60]!r}: expected NAME=V1,V2,...")
    count = math.prod(len(v) for v in out.values()) if out else 0
    if count > MAX_SWEEP_PROBLEMS:
        raise WorkbenchError(f"{flag}: a grid of {count:,} sizes is more than the {MAX_SWEEP_PROBLEMS} a sweep may hold")
    return out


def _same_size_value(a: Value, b: Value) -> bool:
    """Whether two typed values are one size: numbers by value (``1000`` and ``1e3`` are one size
    once typed like the problem's parameter, which silently merged them), anything else by type
    and value (``true`` is not ``1``)."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b
    return type(a) is type(b) and a == b


def parse_sizes_text(text: str, flag: str = "sizes") -> dict[str, list[Value]]:
    """The window's sizes field: ``n=1024,4096; m=8,16`` (one ``NAME=V1,V2`` group per ``;``)."""
    return parse_sizes([text], flag)


def format_sizes(sizes: Mapping[str, Sequence[Value]]) -> str:
    """The inverse of :func:`parse_sizes_text`, for showing a plan in the sizes field."""
    return "; ".join(f"{name}={','.join(size_value_text(v) for v in values)}" for name, values in sizes.items())


def typed_like(problem: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (a size someone typed: ``--at rows=256.0``) with each number of the type of the
    ``problem``'s own value, as a template resolves a problem (an integer parameter's ``256.0`` is
    ``256``, a float parameter's ``1`` is ``1.0``), so the size has the key of the trials measured at
    it; a switch's ``1`` or ``0`` is ``true`` or ``false``, as a template reads them. Names the problem
    lacks, and values that are not such numbers, are left for the caller to judge."""
    out = dict(values)
    for name, value in values.items():
        own = problem.get(name)
        if isinstance(own, bool) and type(value) is int and value in (0, 1):
            out[name] = bool(value)
            continue
        if isinstance(value, bool) or isinstance(own, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(own, int) and isinstance(value, float) and value.is_integer():
            out[name] = int(value)
        elif isinstance(own, float) and isinstance(value, int):
            out[name] = float(value)
    return out


def size_grid(base: Mapping[str, Any], sizes: Mapping[str, Sequence[Value]]) -> list[dict[str, Any]]:
    """The problems of a sweep: ``base`` with every combination of the swept values (the first name
    varies slowest), in the order given."""
    names = list(sizes)
    return [{**base, **dict(zip(names, combo))} for combo in itertools.product(*(sizes[n] for n in names))]


@dataclass(frozen=True)
class SweepPlan:
    """A size sweep: the swept values, evaluations per size, and whether new sizes start warm."""

    sizes: Mapping[str, tuple[Value, ...]]
    budget: int
    warm_start: bool = True
    #: Sizes whose last search ended by its own rule before the plan's evaluations: problem key ->
    #: (the end, one of :data:`EARLY_ENDS`; the size's trials then). Done as asked while the size
    #: still has those trials, not unfinished: without it a sweep run with --patience, or of a space
    #: smaller than its budget, read as unfinished for good. A size with other trials since (a
    #: search of it killed, cells measured there) is judged by its count again.
    ended: Mapping[str, tuple[str, int]] = field(default_factory=dict)

    def problems(self, base: Mapping[str, Any]) -> list[dict[str, Any]]:
        return size_grid(base, self.sizes)

    def to_dict(self) -> dict[str, Any]:
        ended = {key: {"reason": reason, "trials": trials} for key, (reason, trials) in self.ended.items()}
        return {"sizes": {k: list(v) for k, v in self.sizes.items()}, "budget": self.budget,
                "warm_start": self.warm_start, **({"ended": ended} if ended else {})}

    def with_end(self, problem: Mapping[str, Any], reason: str, trials: int) -> "SweepPlan":
        """This plan with how the search of ``problem`` ended, at ``trials`` trials there: kept when
        it is one of :data:`EARLY_ENDS`, forgotten otherwise (reached its evaluations, stopped, failed)."""
        ended = {k: v for k, v in self.ended.items() if k != problem_key(problem)}
        if reason in EARLY_ENDS:
            ended[problem_key(problem)] = (reason, trials)
        return dataclasses.replace(self, ended=ended)

    def ended_at(self, problem: Mapping[str, Any], trials: int) -> str | None:
        """How ``problem``'s search ended by its own rule, if it did with the ``trials`` it has now."""
        mark = self.ended.get(problem_key(problem))
        return mark[0] if mark is not None and mark[1] == trials else None

    def merged(self, sizes: Mapping[str, Sequence[Value]]) -> "SweepPlan":
        """This plan with more values (a continued sweep given ``--sizes``): new values of a swept
        name are appended; a name not swept before cannot be added (the earlier sizes have none)."""
        added = sorted(set(sizes) - set(self.sizes))
        if added:
            raise WorkbenchError(template=f"{{sizes:{quoted(added[0])}}}: the sweep varies {quoted(', '.join(self.sizes))}; "
                                          "start {new_session} to sweep another parameter")
        out = {k: list(v) for k, v in self.sizes.items()}
        for name, values in sizes.items():
            for value in values:
                if not any(type(v) is type(value) and v == value for v in out[name]):
                    out[name].append(value)
        count = math.prod(len(v) for v in out.values())
        if count > MAX_SWEEP_PROBLEMS:
            raise WorkbenchError(template=f"{{sizes}}: a grid of {count:,} sizes is more than the "
                                          f"{MAX_SWEEP_PROBLEMS} a sweep may hold")
        return SweepPlan({k: tuple(v) for k, v in out.items()}, self.budget, self.warm_start, self.ended)


#: The longest key of a size a plan may name: a problem of the most parameters a session holds,
#: each name and text value as long as they may be, as :func:`problem_key` writes it (JSON escapes
#: a character as at most 12: ``\ud83d\ude00``).
MAX_PROBLEM_KEY_CHARS = MAX_PROBLEM_PARAMETERS * (2 * 12 * MAX_NAME_CHARS + 8) + 2


def sweep_plan(session: Session) -> SweepPlan | None:
    """The session's sweep plan (None: not a sweep), checked: a hand-edited file gives one line."""
    raw = session.extra.get(SWEEP_KEY)
    if raw is None:
        return None
    where = f"extra.{SWEEP_KEY}"
    if type(raw) is not dict:
        raise WorkbenchError(f"{where}: expected an object")
    sizes, budget, warm = raw.get("sizes"), raw.get("budget"), raw.get("warm_start", True)
    if type(sizes) is not dict or not sizes:
        raise WorkbenchError(f"{where}.sizes: expected an object of value lists")
    if type(budget) is not int or not 1 <= budget <= MAX_COUNT:  # (the bound a run's budget has: a plan a run wrote reads)
        raise WorkbenchError(f"{where}.budget: expected a positive number of evaluations")
    if type(warm) is not bool:
        raise WorkbenchError(f"{where}.warm_start: expected true or false")
    out: dict[str, tuple[Value, ...]] = {}
    for name, values in sizes.items():
        if name not in session.problem:
            raise WorkbenchError(f"{where}.sizes.{name[:40]!r}: not a parameter of the session's problem")
        if type(values) is not list or not values:
            raise WorkbenchError(f"{where}.sizes.{name}: expected a list of values")
        for value in values:
            if type(value) not in (int, float, bool, str) or (type(value) is float and not math.isfinite(value)):
                raise WorkbenchError(f"{where}.sizes.{name}: {str(value)[:40]!r} is not a problem value")
            if type(value) is str and (len(value) > 200 or not value.isprintable()):
                raise WorkbenchError(f"{where}.sizes.{name}: a value is not one short line of text")
        out[name] = tuple(values)
    if math.prod(len(v) for v in out.values()) > MAX_SWEEP_PROBLEMS:
        raise WorkbenchError(f"{where}.sizes: more than {MAX_SWEEP_PROBLEMS} sizes")
    raw_ended = raw.get("ended", {})
    if type(raw_ended) is not dict or len(raw_ended) > MAX_SWEEP_PROBLEMS:
        raise WorkbenchError(f"{where}.ended: expected an object of sizes and how their runs ended")
    ended: dict[str, tuple[str, int]] = {}
    for key, mark in raw_ended.items():
        if len(key) > MAX_PROBLEM_KEY_CHARS:
            raise WorkbenchError(f"{where}.ended: a key of {len(key):,} characters is no size")
        if type(mark) is not dict:
            raise WorkbenchError(f"{where}.ended: {str(mark)[:40]!r} is not an object of a reason and a number "
                                 "of trials")
        reason, trials = mark.get("reason"), mark.get("trials")
        if reason not in EARLY_ENDS:
            raise WorkbenchError(f"{where}.ended: {str(reason)[:40]!r} is not an end "
                                 f"(one of {', '.join(EARLY_ENDS)})")
        if type(trials) is not int or not 0 <= trials < 2**63:
            raise WorkbenchError(f"{where}.ended: {str(trials)[:40]!r} is not a number of trials")
        ended[key] = (reason, trials)
    return SweepPlan(out, budget, warm, ended)


@dataclass(frozen=True)
class SweepProgress:
    """How far a session's sweep is: its plan, and each planned size still short of the plan's
    evaluations per size, with the evaluations it has (0: never measured). What a killed or
    stopped sweep lacks, for every view that reports on the sizes measured: a summary or a
    dispatch built from two of four planned sizes otherwise read as the whole sweep."""

    plan: SweepPlan
    planned: int
    unfinished: tuple[tuple[dict[str, Any], int], ...]
    #: Sizes short of the plan's evaluations whose run ended by its own rule (``plan.ended``):
    #: (problem, evaluations, how it ended). Not unfinished: ``--resume`` measures them further only
    #: as a plain session's resume would, up to the plan's evaluations.
    ended: tuple[tuple[dict[str, Any], int, str], ...] = ()

    def _named(self, problem: Mapping[str, Any]) -> str:
        """A size by the parameters the plan sweeps (``rows=512``)."""
        return ", ".join(f"{k}={size_value_text(problem[k])}" for k in self.plan.sizes if k in problem)

    def text(self) -> str:
        """``2 of 4 planned sizes lack evaluations (10 each): rows=512 has 3, rows=4096 and
        rows=32768 none`` ('' when every size has its evaluations)."""
        if not self.unfinished:
            return ""
        named = self._named
        started = [f"{named(p)} has {n}" for p, n in self.unfinished if n]
        never = [named(p) for p, n in self.unfinished if not n]
        parts = started + ([f"{' and '.join(never) if len(never) < 3 else f'{len(never)} sizes'} none"] if never else [])
        count = len(self.unfinished)
        verb = "lacks" if count == 1 else "lack"
        return (f"{count} of {self.planned} planned size{'s' if self.planned != 1 else ''} {verb} evaluations "
                f"({self.plan.budget} each): {'; '.join(parts) if len(started) > 2 else ', '.join(parts)}")

    def ended_text(self) -> str:
        """``2 sizes ended before their 30 evaluations, by their own rule: n=4096 at 4 (plateau),
        n=65536 at 9 (plateau)`` ('' when none did)."""
        if not self.ended:
            return ""
        count = len(self.ended)
        shown = ", ".join(f"{self._named(p)} at {n} ({end})" for p, n, end in self.ended[:4])
        more = f" and {count - 4} more" if count > 4 else ""
        return (f"{count} size{'s' if count != 1 else ''} ended before {'their' if count != 1 else 'its'} "
                f"{self.plan.budget} evaluations, by {'their' if count != 1 else 'its'} own rule: {shown}{more}")


def shown_in_order(values: Sequence[Value]) -> list[Value]:
    """A swept parameter's values as a person reads them: ascending when they are all numbers (a
    size added to a sweep later is appended to its plan, and was listed after the largest: ``64,
    4096, 32768, 128``); as planned otherwise."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return sorted(values, key=float) if numbers else list(values)


def _reading_order(plan: SweepPlan) -> Callable[[Mapping[str, Any]], tuple[int, ...]]:
    """A sort key putting sizes in the order :func:`shown_in_order` lists each swept parameter's values."""
    ranks = {name: {problem_key({name: v}): k for k, v in enumerate(shown_in_order(values))}
             for name, values in plan.sizes.items()}
    return lambda problem: tuple(ranks[name].get(problem_key({name: problem.get(name)}), 0) for name in plan.sizes)


def sweep_progress(session: Session) -> SweepProgress | None:
    """The session's sweep and the sizes it has not finished (None: not a sweep, or a plan in
    the file that does not read, which opening the file says)."""
    try:
        plan = sweep_plan(session)
    except WorkbenchError:
        return None
    if plan is None:
        return None
    groups = trials_by_problem(session)
    problems = sorted(plan.problems(session.problem), key=_reading_order(plan))  # (as they are listed)
    counts = [(p, n, plan.ended_at(p, n)) for p in problems for n in [len(groups.get(problem_key(p), ()))]]
    return SweepProgress(plan, len(problems), tuple((p, n) for p, n, end in counts if n < plan.budget and end is None),
                         tuple((p, n, end) for p, n, end in counts if n < plan.budget and end is not None))


def set_sweep_plan(session: Session, plan: SweepPlan) -> None:
    session.extra[SWEEP_KEY] = plan.to_dict()


# ------------------------------------------------------------------------------------------------
# Distances between sizes, and what a new size measures first
# ------------------------------------------------------------------------------------------------


def telling_parameters(problems: Sequence[Mapping[str, Any]]) -> list[str]:
    """The parameters whose values tell some of ``problems`` apart, in the order first named: a
    size's numbers, and as well a data type, a switch or a parameter some problems lack. Two
    problems are two sizes exactly when :func:`~workbench.core.domain.session.problem_key` tells
    them apart, so naming a size by these never gives two sizes one name (a sweep over a switch
    listed ``n=4096`` twice where only its numbers named sizes)."""
    names = list(dict.fromkeys(name for problem in problems for name in problem))
    return [name for name in names
            if len({problem_key({name: p[name]}) if name in p else "" for p in problems}) > 1]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def size_parameters(problems: Sequence[Mapping[str, Any]]) -> list[str]:
    """The telling parameters (:func:`telling_parameters`) that are a number in every problem: the
    axes sizes are measured along (the distance between sizes, a chart's x axis, a dispatch's key)."""
    return [name for name in telling_parameters(problems) if all(name in p and _is_number(p[name]) for p in problems)]


def size_value_text(value: Any) -> str:
    """A problem value as a size's name writes it, and as it is typed back (``--set``, ``--at``): a
    switch ``true``/``false``, a float the shortest text that reads back as it (``1.0``,
    ``1048576.0``; ``{:g}`` made 1.0 read as the int 1 and 1048576.0 as ``1.04858e+06``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(float(value)) if isinstance(value, float) else str(value)  # (a NumPy float's repr names its type)


def size_order_key(problem: Mapping[str, Any], names: Sequence[str]) -> tuple[tuple[int, Any], ...]:
    """Sorts sizes along ``names``: numbers by value, then other values by their text, a parameter a
    problem lacks last."""
    out: list[tuple[int, Any]] = []
    for name in names:
        if name not in problem:
            out.append((2, ""))
            continue
        value = problem[name]
        out.append((0, _as_float(value)) if _is_number(value) else (1, size_value_text(value)))
    return tuple(out)


def _as_float(value: int | float) -> float:
    """A number to sort by; an integer past a float's range (a hand-written file's) at its end."""
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def _log(value: Any) -> float:
    """Sizes spread over orders of magnitude: compare them on a log scale (sign kept, 0 allowed)."""
    number = float(value)
    return math.copysign(math.log1p(abs(number)), number)


def size_distance(a: Mapping[str, Any], b: Mapping[str, Any], names: Sequence[str]) -> float:
    """Euclidean distance between two problems over ``names`` on a log scale; a parameter that is
    not a number counts 0 when equal and infinitely far otherwise (a dtype is not a size)."""
    total = 0.0
    for name in names:
        x, y = a.get(name), b.get(name)
        if isinstance(x, (int, float)) and not isinstance(x, bool) and isinstance(y, (int, float)) and not isinstance(y, bool):
            total += (_log(x) - _log(y)) ** 2
    for name in set(a) | set(b):
        if name in names:
            continue
        if a.get(name) != b.get(name):
            return math.inf
    return math.sqrt(total)


Cost = Callable[[Trial], float]


def _latency_cost(trial: Trial) -> float:
    value = trial.metric("latency_ms") if trial.ok else math.nan
    return value if math.isfinite(value) else math.inf


def best_configs(trials: Sequence[Trial], k: int = 1, cost: Cost | None = None) -> list[Trial]:
    """The ``k`` best distinct configs among ``trials`` (lowest ``cost``, latency by default; failed
    trials never), best first; among equal costs the faster, as the ranking orders them (a cost of
    metrics every config shares ties them all, and the first measured was named best however slow)."""
    score = cost or _latency_cost
    best: dict[str, tuple[float, float, int, Trial]] = {}
    for trial in trials:
        value = score(trial)
        if not math.isfinite(value):
            continue
        latency = trial.metric("latency_ms")
        speed = latency if math.isfinite(latency) else math.inf
        seen = best.get(trial.config.id)
        if seen is None or (value, speed) < seen[:2]:
            best[trial.config.id] = (value, speed, trial.index, trial)
    return [item[3] for item in sorted(best.values(), key=lambda item: item[:3])][:k]


def nearest_problems(session: Session, problem: Mapping[str, Any], n: int = WARM_NEIGHBOURS,
                     cost: Cost | None = None) -> list[dict[str, Any]]:
    """The ``n`` measured sizes nearest ``problem`` (log-scale distance over the size parameters;
    only sizes with a successful trial; ties by order of measurement)."""
    groups = trials_by_problem(session)
    key = problem_key(problem)
    candidates = []
    for order, (other_key, trials) in enumerate(groups.items()):
        if other_key == key or not best_configs(trials, 1, cost):
            continue
        candidates.append((order, session.problem_of(trials[0])))
    names = size_parameters([problem, *(p for _o, p in candidates)])
    ranked = sorted(((size_distance(problem, p, names), order, p) for order, p in candidates),
                    key=lambda item: (item[0], item[1]))
    return [p for d, _o, p in ranked if math.isfinite(d)][:n]


def warm_start_configs(session: Session, problem: Mapping[str, Any], neighbours: int = WARM_NEIGHBOURS,
                       per_size: int = WARM_PER_SIZE, cost: Cost | None = None) -> list[Config]:
    """What a new size measures first: the ``per_size`` best configs of each of the ``neighbours``
    nearest measured sizes (nearest size first, best config first), each once."""
    groups = trials_by_problem(session)
    out: list[Config] = []
    for other in nearest_problems(session, problem, neighbours, cost):
        for trial in best_configs(groups[problem_key(other)], per_size, cost):
            if trial.config not in out:
                out.append(trial.config)
    return out
