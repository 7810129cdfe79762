"""Views over measurements: feasibility, score, Pareto front, recommendation.

Contract (implemented by the objective module; everything here is a pure function of
(trials, constraints, weights), so moving a slider re-ranks without re-measuring):

- ``Bound(metric, op, value)`` with ``op`` in ``{"<=", ">="}``; ``Bound.parse("latency_ms<=2")``.
- ``Constraints(max_latency_ms=None, max_memory_mb=None, min_quality=None, extra=())``;
  ``.bounds() -> list[Bound]``, ``to_dict()/from_dict()``; ``Constraints.check_possible()`` raises
  WorkbenchError for contradictory input (e.g. ``min_quality > 1``, negative maxima).
- ``Weights(values={"latency_ms": 1.0, ...})``; ``to_dict()/from_dict()``.
- ``rank(trials, constraints, weights) -> Ranking`` with NumPy arrays aligned to ``trials``:
  ``feasible`` (bool), ``score`` (float, NaN for failed trials), ``best`` (index or None),
  ``n_feasible``, ``excluded_by`` (constraint label -> number of ok trials it excludes),
  ``most_excluding`` (label or None), ``pareto`` (indices on the latency/memory front),
  ``order`` (indices of feasible trials, best first), ``explain(i) -> str`` (why it won).

Additions beyond the contract:

- :class:`MetricTable`: a columnar cache of the trials' metrics (NumPy arrays, grown by doubling)
  that the GUI appends to as trials arrive; ``rank(table, ...)`` then never walks Python objects,
  which is what keeps a re-rank of 20,000 trials within a few milliseconds.
- ``Ranking.pareto_feasible`` (the front over feasible trials only), ``Ranking.n_ok``,
  ``Ranking.normalised`` (metric -> per-trial normalised value, 1.0 = best seen),
  ``Ranking.unscored`` (rows within the constraints that report no weighted metric) and
  ``Ranking.why_none()`` (why there is no recommendation: the constraints, the unscored rows, or both).
- ``trial_cost(constraints, weights)``: a per-trial scalar (lower is better) for strategies
  (:mod:`workbench.core.domain.search_objective`).

The score formula and the reasons for it are documented in ``docs/objective.md``.
"""

from __future__ import annotations

import os

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from workbench.core.errors import WorkbenchError, counted, number_text
from workbench.core.domain.figures import fmt
from workbench.core.domain.metrics import (DESCRIPTIVE, DESCRIPTIVE_UNITS, METRICS, NOT_RANKABLE, SHARES, direction_word, known_direction,
                                           not_a_metric_name, parse_direction)
from workbench.core.domain.measurement import (
    LATENCY,
    MEMORY,
    QUALITY,
    THROUGHPUT,
    Status,
    Trial,
    metric_direction,
)

OPS: tuple[str, ...] = ("<=", ">=")
#: What a metric's name may look like as a benchmark or a cache reports it (``GFLOP/s``, ``error-db``).
_REPORTED_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_/%. -]*\Z")
#: What a metric name looks like (constraints, weights and directions alike).
_METRIC_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# metric name, comparison, number (with optional exponent), optional trailing unit word.
_BOUND_RE = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op><=|>=|=<|=>|<|>|==|=|!=)\s*"
    r"(?P<value>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>[A-Za-z/%]+)?\s*$"
)  # one way to match each number (no nested quantifiers over digits), so matching is linear
#: Longest constraint text accepted (a bound is a short line).
MAX_BOUND_CHARS = 200

#: Metrics the score uses when the user sets nothing: latency only (weight 1), others listed with 0
#: so that the GUI shows a slider for each.
DEFAULT_WEIGHTS: dict[str, float] = {LATENCY: 1.0, THROUGHPUT: 0.0, MEMORY: 0.0, QUALITY: 0.0}

#: Words used by ``explain`` for the metrics people talk about.
_NOUNS: dict[str, str] = {LATENCY: "latency", MEMORY: "memory", QUALITY: "quality", THROUGHPUT: "throughput"}


def _number(value: Any, what: str) -> float:
    """A finite float from user/file input, or a one-line WorkbenchError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(str(value).strip())
        except ValueError:
            raise WorkbenchError(f"{what}: {value!r} is not a number") from None
    try:
        value = float(value)
    except OverflowError:  # an integer beyond the float range
        raise WorkbenchError(f"{what}: an integer of {value.bit_length()} bits is not a finite number") from None
    if not math.isfinite(value):
        raise WorkbenchError(f"{what}: {value!r} is not a finite number")
    return value


# --------------------------------------------------------------------------------------------
# Constraints
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """One constraint on one measured metric: ``metric <= value`` or ``metric >= value``.

    A trial that did not report the metric does not satisfy the bound: a constraint the
    workbench cannot check is not assumed to hold.
    """

    metric: str
    op: str
    value: float

    def __post_init__(self) -> None:
        if not isinstance(self.metric, str) or not _METRIC_NAME.match(self.metric):
            raise WorkbenchError(not_a_metric_name("constraint metric", self.metric))
        if self.op not in OPS:
            raise WorkbenchError(f"constraint operator {self.op!r} must be one of {', '.join(OPS)}")
        object.__setattr__(self, "value", _number(self.value, f"constraint on {self.metric}"))

    @staticmethod
    def parse(text: str) -> "Bound":
        """Parse ``"latency_ms <= 2"`` or ``"occupancy>=0.5"``.

        A unit after the number is allowed only when it is the metric's own (its name's suffix, as
        ``"memory_mb <= 512 MB"``, ``"throughput_gbs >= 900 GB/s"``, or the registry's unit, as
        ``"gflops >= 5000 GFLOP/s"``); any other unit is refused rather than silently ignored.

        Only ``<=`` and ``>=`` are accepted (``=<`` and ``=>`` are read as those): a strict ``<``
        means nothing different for measured floats, and saying so is clearer than guessing.
        """
        if not isinstance(text, str):
            raise WorkbenchError(f"constraint {text!r} must be text like 'latency_ms <= 2'")
        if len(text) > MAX_BOUND_CHARS:
            raise WorkbenchError(f"constraint {text[:30]!r}...: longer than {MAX_BOUND_CHARS} characters")
        match = _BOUND_RE.match(text)
        if match is None:
            left = re.split(r"[<>=]", text, maxsplit=1)[0].strip()
            named = _REPORTED_NAME.match(left) or left.isidentifier()  # GFLOP/s >= 300, lätenz <= 2
            if left != text.strip() and named and not _METRIC_NAME.match(left):
                raise WorkbenchError(not_a_metric_name(f"constraint {text.strip()!r}: metric", left))
            raise WorkbenchError(
                f"constraint {text.strip()!r} is not of the form 'metric <= value' or 'metric >= value'"
            )
        op = {"=<": "<=", "=>": ">="}.get(match["op"], match["op"])
        if op not in OPS:
            raise WorkbenchError(f"constraint {text.strip()!r}: use <= or >= (not {match['op']})")
        metric, unit = match["metric"], match["unit"]
        # (gflops: GFLOP/s, as Kernel Tuner names it; onchip_kb_per_sm: KiB, as the views write it)
        own = METRICS[metric].unit if metric in METRICS else DESCRIPTIVE_UNITS.get(metric, "")
        if unit and own and "B" in own and re.search(r"[KMGTP]b", unit):  # Gb/s for GB/s: bits, an eighth of the bytes
            raise WorkbenchError(f"constraint {text.strip()!r}: unit {unit!r} counts bits; {metric} counts bytes"
                                 + (f" ({own})" if own else "") + ": give the value in bytes")
        if unit and not metric.lower().endswith("_" + unit.lower().replace("/", "")) and unit.lower() != own.lower():
            if metric in SHARES:
                how = ", a share from 0 to 1 (give 0.5 for 50%)"
            elif metric in METRICS and not own:  # a count: "give the value in its own unit" named none
                how = ", a plain number (it has no unit)"
            else:
                how = (f", whose unit is {own}" if own else "") + " (give the value in its own unit)"
            raise WorkbenchError(f"constraint {text.strip()!r}: unit {unit!r} does not match {metric}{how}")
        return Bound(metric, op, float(match["value"]))

    @property
    def label(self) -> str:
        """The text shown to people, stored in session files and used as the key of
        ``Ranking.excluded_by``. The value is written so that it reads back exactly (``3.3374549243584903``,
        not ``3.33745``): a label is parsed again when a session is reopened or the window's field is
        edited, and a rounded bound excluded the very config it was set to admit."""
        value = self.value
        shown = str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)
        return f"{self.metric} {self.op} {shown}"

    @property
    def shown(self) -> str:
        """The bound for a sentence a person reads, in the fewest digits that read back as it
        (:func:`exact_number`). It was rounded to six significant digits, and a limit copied from
        such a sentence (``show``'s, ``tune``'s, the card's) was a tighter one that excluded the
        config it had admitted; the window's sliders set limits at the resolution dragged, so a
        limit in force is seldom long."""
        return f"{self.metric} {self.op} {exact_number(self.value)}"

    def __str__(self) -> str:
        return self.label

    def satisfied(self, values: np.ndarray) -> np.ndarray:
        """Boolean mask of values meeting the bound (NaN never does)."""
        with np.errstate(invalid="ignore"):
            return values <= self.value if self.op == "<=" else values >= self.value

    def check(self, value: float) -> bool:
        return bool(self.satisfied(np.asarray([value], dtype=float))[0])


def violated_bounds(trial: Trial, constraints: "Constraints") -> list[tuple[Bound, float]]:
    """Each bound of ``constraints`` that ``trial`` violates, with its value (NaN when it did not
    report the metric)."""
    return [(bound, value) for bound in constraints.bounds() if not bound.check(value := trial.metric(bound.metric))]


#: Where an aborted candidate keeps the latency it was seen to exceed.
LATENCY_BOUND = "latency_bound_ms"


def settled_misses(trial: Trial, constraints: "Constraints") -> list[Bound]:
    """The bounds, other than latency's, that the figures an aborted ``trial`` kept already miss
    (its registers, shared memory: counted before its timing was stopped). Measuring its latency
    again cannot make it feasible, so re-measuring leaves it out; a figure it did not keep may
    still meet its bound."""
    return [bound for bound in constraints.bounds()
            if bound.metric not in (LATENCY, LATENCY_BOUND)
            and math.isfinite(value := trial.metric(bound.metric)) and not bound.check(value)]


def violations(trial: Trial, constraints: "Constraints") -> list[str]:
    """What keeps a successful ``trial`` out of the feasible set, one phrase per violated bound
    (``registers 22 > 20``, ``quality not reported``): the window's table and card and ``show``
    say it in these words."""
    out = []
    for bound, value in violated_bounds(trial, constraints):
        if math.isnan(value):
            out.append(f"{bound.metric} not reported")
            continue
        shown, limit = values_apart(value, bound.value)
        out.append(f"{bound.metric} {shown} {'>' if bound.op == '<=' else '<'} {limit}")
    return out


def values_apart(value: float, limit: float) -> tuple[str, str]:
    """``value`` and ``limit`` with the fewest significant digits (3 at least) that tell them apart:
    at 3 digits a latency of 4.1312 over a limit of 4.131 read "4.13 > 4.131"."""
    for digits in range(3, 18):
        shown, bound = f"{value:.{digits}g}", f"{limit:.{digits}g}"
        if shown != bound:
            return shown, bound
    return repr(value), repr(limit)


def check_stored_constraints(constraints: "Constraints", source: str | os.PathLike[str] | None) -> None:
    """:meth:`Constraints.check_possible` for constraints read from the session file ``source``:
    the refusal names the file, since no flag or slider gave them (None or '': said plainly)."""
    try:
        constraints.check_possible()
    except WorkbenchError as exc:
        if not source:
            raise
        raise WorkbenchError(f"{source}: the session's constraints cannot be met: {exc}; set that limit again") from None


#: The bound each named limit of :class:`Constraints` states, by (metric, side): a typed bound on
#: one of them is that limit.
NAMED_LIMITS: dict[tuple[str, str], str] = {(LATENCY, "<="): "max_latency_ms", (MEMORY, "<="): "max_memory_mb",
                                            (QUALITY, ">="): "min_quality"}


def fold_named_limits(bounds: Iterable[Bound], start: Mapping[str, float | None] | None = None,
                      accept: Callable[[str, float], bool] | None = None) -> tuple[dict[str, float], tuple[Bound, ...]]:
    """The bounds that state a named limit (``latency_ms <= 0.8`` is ``max_latency_ms``), as those
    limits, and the other bounds. Every bound still holds: a limit is the tightest of the bounds
    stating it and its ``start`` value. A bound ``accept(field, value)`` refuses stays among the
    others (the window keeps a value its box cannot show in the typed field). Only the limits some
    bound states are returned. The command line and the window fold with this one rule, so a
    bound means the same limit in both. Two of the others on one metric and side are one bound too,
    the tighter (``registers <= 32`` and ``registers <= 64`` were both kept and both shown)."""
    named: dict[str, float] = {}
    rest: list[Bound] = []
    for bound in bounds:
        field = NAMED_LIMITS.get((bound.metric, bound.op))
        if field is None or (accept is not None and not accept(field, bound.value)):
            same = next((k for k, kept in enumerate(rest) if (kept.metric, kept.op) == (bound.metric, bound.op)), None)
            if same is None:
                rest.append(bound)
            elif (bound.value < rest[same].value) == (bound.op == "<="):
                rest[same] = bound
            continue
        current = named.get(field, (start or {}).get(field))
        tighter = min if bound.op == "<=" else max
        named[field] = bound.value if current is None else tighter(current, bound.value)
    return named, tuple(rest)


@dataclass(frozen=True)
class Constraints:
    """Limits a config must meet to be recommended; the common three have their own fields."""

    max_latency_ms: float | None = None
    max_memory_mb: float | None = None
    min_quality: float | None = None
    extra: tuple[Bound, ...] = ()

    def __post_init__(self) -> None:
        for name in ("max_latency_ms", "max_memory_mb", "min_quality"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _number(value, name))
        extra = []
        # one bound given as text, not in a tuple: read letter by letter it said "constraint 'l'"
        given = (self.extra,) if isinstance(self.extra, (str, Bound)) else self.extra
        for item in given:
            if isinstance(item, str):
                item = Bound.parse(item)
            elif isinstance(item, Mapping):
                item = Bound(item.get("metric"), item.get("op"), item.get("value"))  # type: ignore[arg-type]
            elif not isinstance(item, Bound):
                raise WorkbenchError(f"constraint {item!r} is not a bound like 'latency_ms <= 2'")
            extra.append(item)
        object.__setattr__(self, "extra", tuple(extra))

    def bounds(self) -> list[Bound]:
        """Every constraint as a bound, named fields first."""
        out: list[Bound] = []
        if self.max_latency_ms is not None:
            out.append(Bound(LATENCY, "<=", self.max_latency_ms))
        if self.max_memory_mb is not None:
            out.append(Bound(MEMORY, "<=", self.max_memory_mb))
        if self.min_quality is not None:
            out.append(Bound(QUALITY, ">=", self.min_quality))
        out.extend(self.extra)
        return out

    def check_declared_amounts(self, declared: Iterable[str]) -> None:
        """Refuse a bound below 0 on an amount the backend itself reports to describe a config (the
        simulator's ``dram_mb``, ``threads_per_block``): no config meets it, and the run measured its
        whole budget for nothing. A benchmark's own figure of such a name may be negative, so this
        is checked only where the backend declares the figure (:meth:`check_possible` cannot know)."""
        names = set(declared)
        for bound in self.bounds():
            if bound.op == "<=" and bound.value < 0 and bound.metric in DESCRIPTIVE and bound.metric in names:
                raise WorkbenchError(f"constraint {bound.label}: {bound.metric} cannot be negative")

    def check_possible(self) -> None:
        """Raise WorkbenchError when no measurement could ever meet these constraints."""
        if self.max_latency_ms is not None and self.max_latency_ms <= 0:
            raise WorkbenchError(f"max latency must be positive, got {number_text(self.max_latency_ms)} ms")
        if self.max_memory_mb is not None and self.max_memory_mb < 0:
            raise WorkbenchError(f"max memory cannot be negative, got {number_text(self.max_memory_mb)} MB")
        if self.min_quality is not None and self.min_quality > 1:
            raise WorkbenchError(f"min quality is at most 1 (exact result), got {number_text(self.min_quality)}")
        low: dict[str, Bound] = {}
        high: dict[str, Bound] = {}
        for bound in self.bounds():
            if bound.metric in NOT_RANKABLE:  # no trial that could be feasible carries it
                raise WorkbenchError(f"constraint {bound.label}: {NOT_RANKABLE[bound.metric]}")
            if bound.op == "<=":
                # every metric of the registry is an amount (a time, energy, size, count, rate or
                # share); a metric it does not know may be negative (an error in dB, a margin), and so
                # may a benchmark's own figure named as one the simulator reports (``dram_mb`` saved
                # against a baseline): refused, a session holding such a bound stopped opening
                if bound.metric in METRICS and bound.value < 0:
                    raise WorkbenchError(f"constraint {bound.label}: {bound.metric} cannot be negative")
                if bound.metric in METRICS and METRICS[bound.metric].unit == "ms" and bound.value <= 0:
                    # as the named max latency: a kernel time (its median, a percentile) is positive
                    raise WorkbenchError(f"constraint {bound.label}: {bound.metric} is a kernel time, which is "
                                         "positive, so it cannot hold")
                if bound.metric not in high or bound.value < high[bound.metric].value:
                    high[bound.metric] = bound
            else:
                # (quality's bounds are the named min quality's, checked above where given as
                # one; a file's typed bound keeps opening, as it always has)
                if bound.metric in SHARES and bound.metric != "quality" and bound.value > 1:
                    raise WorkbenchError(f"constraint {bound.label}: {bound.metric} is a share, at most 1, so it "
                                         "cannot hold")
                if bound.metric not in low or bound.value > low[bound.metric].value:
                    low[bound.metric] = bound
        for metric, lower in low.items():
            upper = high.get(metric)
            if upper is not None and lower.value > upper.value:
                raise WorkbenchError(f"constraints {lower.label} and {upper.label} cannot both hold")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("max_latency_ms", "max_memory_mb", "min_quality"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.extra:
            out["extra"] = [b.label for b in self.extra]
        return out

    @staticmethod
    def from_dict(data: Mapping[str, Any] | None) -> "Constraints":
        if data is None:
            return Constraints()
        if not isinstance(data, Mapping):
            raise WorkbenchError(f"constraints must be an object, got {type(data).__name__}")
        known = {"max_latency_ms", "max_memory_mb", "min_quality", "extra"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise WorkbenchError(f"constraints: unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
        extra = data.get("extra", ())
        if isinstance(extra, str) or not isinstance(extra, (list, tuple)):
            raise WorkbenchError("constraints.extra must be a list of bounds like 'latency_ms <= 2'")
        for name in ("max_latency_ms", "max_memory_mb", "min_quality"):  # a file holds numbers, not text
            value = data.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise WorkbenchError(f"{name}: {value!r} is not a number")
        return Constraints(
            max_latency_ms=data.get("max_latency_ms"),
            max_memory_mb=data.get("max_memory_mb"),
            min_quality=data.get("min_quality"),
            extra=tuple(extra),
        )


@dataclass(frozen=True)
class Weights:
    """Importance of each metric in the score (non-negative; only their ratios matter).

    Metrics missing from ``values`` weigh 0. All-zero weights fall back to latency alone, so a
    slider pulled to zero never leaves the view without a ranking.
    """

    values: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    #: Directions the user stated (metric -> +1 maximise / -1 minimise); they override the
    #: registry (:mod:`workbench.core.domain.metrics`) and are the only source for metrics it does not know.
    directions: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.directions, Mapping):
            raise WorkbenchError(f"directions must map metric names to 'maximize'/'minimize', got {self.directions!r}")
        directions = {str(k): parse_direction(v, f"direction of {k}") for k, v in self.directions.items()}
        for name, direction in directions.items():
            problem = direction_problem(name, direction)
            if problem:
                raise WorkbenchError(problem)
        object.__setattr__(self, "directions", directions)
        if not isinstance(self.values, Mapping):
            raise WorkbenchError(f"weights must map metric names to numbers, got {type(self.values).__name__}")
        clean: dict[str, float] = {}
        for name, value in self.values.items():
            if not isinstance(name, str) or not _METRIC_NAME.match(name):
                raise WorkbenchError(not_a_metric_name("weight for", name))
            number = _number(value, f"weight for {name}")
            if number < 0:
                raise WorkbenchError(f"weight for {name} cannot be negative, got {number:g}")
            clean[name] = number
        object.__setattr__(self, "values", clean)

    def __hash__(self) -> int:  # values is a dict; hash its items so weights can key a cache
        return hash((tuple(sorted(self.values.items())), tuple(sorted(self.directions.items()))))

    def direction(self, metric: str) -> int:
        """+1 when larger values of ``metric`` are better, -1 when smaller are (user's word first)."""
        return metric_direction(metric, self.directions)

    def with_direction(self, metric: str, direction: int) -> "Weights":
        """A copy with the user's direction for one metric (what the GUI toggle does)."""
        return Weights(self.values, {**self.directions, metric: direction})

    def active(self) -> dict[str, float]:
        """The metrics that count, with positive weights (latency alone when all are zero)."""
        active = {name: w for name, w in self.values.items() if w > 0}
        return active or {LATENCY: 1.0}

    def get(self, name: str) -> float:
        return self.values.get(name, 0.0)

    def with_weight(self, name: str, value: float) -> "Weights":
        """A copy with one weight changed, the others and the directions kept."""
        return Weights({**self.values, name: value}, self.directions)

    def to_dict(self) -> dict[str, float]:
        """The weights alone (directions travel separately: :meth:`directions_dict`)."""
        return dict(self.values)

    def directions_dict(self) -> dict[str, str]:
        """The user's directions as text (``{"gflops_w": "maximize"}``), for files."""
        return {name: direction_word(d) for name, d in self.directions.items()}

    @staticmethod
    def from_dict(data: Mapping[str, Any] | None, directions: Mapping[str, Any] | None = None) -> "Weights":
        """Weights as a file stores them. A stored direction that :func:`direction_problem` refuses
        (written before that rule, e.g. ``--maximize latency_ms``) is left out rather than making the
        whole session unreadable: it could only rank the known metric the wrong way round."""
        if directions is not None and not isinstance(directions, Mapping):
            raise WorkbenchError(f"directions must map metric names to 'maximize'/'minimize', got {directions!r}")
        parsed = {str(k): parse_direction(v, f"direction of {k}") for k, v in (directions or {}).items()}
        kept = {name: d for name, d in parsed.items() if not direction_problem(name, d)}
        if data is None:
            return Weights(directions=kept)
        if not isinstance(data, Mapping):
            raise WorkbenchError(f"weights must be an object, got {type(data).__name__}")
        for name, value in data.items():  # a file holds numbers, not text ("1" read as 1 before)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise WorkbenchError(f"weight of {name}: {value!r} is not a number")
        return Weights(dict(data), kept)


def objective_text(constraints: Constraints, weights: Weights, shown: bool = False) -> tuple[str, str]:
    """The constraints and the weights in force as text ("none" for no bounds). A weighted metric
    whose direction the person gave says it (``myscore=1 (maximized)``): for a metric the
    workbench does not know, that direction decided which config won. ``shown``: the bounds to
    six significant digits (:attr:`Bound.shown`), for a sentence a person reads; else exact, as a
    file states them (a limit set with a slider is ``0.0684916504792001``)."""
    bounds = ", ".join(b.shown if shown else str(b) for b in constraints.bounds()) or "none"
    chosen = weights.directions_dict()
    weighted = ", ".join(f"{k}={exact_number(v)}" + (f" ({chosen[k]}d)" if k in chosen else "")
                         for k, v in weights.active().items()) or "none"
    return bounds, weighted


def direction_problem(name: str, direction: int) -> str | None:
    """Why a user may not state ``direction`` for ``name``, or None.

    A stated direction is for a metric the registry does not know (or only guesses from its
    name); turning a known one round would rank the slowest config first.
    """
    if not _METRIC_NAME.match(name):
        return not_a_metric_name("direction for", name)
    known = METRICS.get(name)
    if known is not None and known.direction and known.direction != direction:
        better = "larger" if known.direction > 0 else "smaller"
        return (f"direction of {name}: it is a known metric where {better} is better; "
                "--maximize and --minimize are for metrics the workbench does not know")
    return None


# --------------------------------------------------------------------------------------------
# Columnar metrics
# --------------------------------------------------------------------------------------------


class MetricTable:
    """Trials as columns: ok mask, status, config ids and one float array per metric.

    Built once from the trials and appended to as trials arrive (capacity doubles, so appending
    is amortised O(1)); ranking reads only these arrays. Metrics missing from a trial are NaN; a
    metric first seen late gets a column back-filled with NaN.
    """

    def __init__(self, capacity: int = 64) -> None:
        self._cap = max(int(capacity), 1)
        self._n = 0
        self._ok = np.zeros(self._cap, dtype=bool)
        self._index = np.zeros(self._cap, dtype=np.int64)
        self._cols: dict[str, np.ndarray] = {}
        self.ids: list[str] = []
        self.statuses: list[Status] = []
        self.messages: list[str] = []
        self._pareto_order: np.ndarray | None = None

    @classmethod
    def from_trials(cls, trials: Iterable[Trial]) -> "MetricTable":
        trials = list(trials)
        table = cls(capacity=max(len(trials), 64))
        table.extend(trials)
        return table

    def __len__(self) -> int:
        return self._n

    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = self._cap
        while cap < need:
            cap *= 2
        self._ok = np.concatenate([self._ok, np.zeros(cap - self._cap, dtype=bool)])
        self._index = np.concatenate([self._index, np.zeros(cap - self._cap, dtype=np.int64)])
        for name, col in self._cols.items():
            self._cols[name] = np.concatenate([col, np.full(cap - self._cap, np.nan)])
        self._cap = cap

    def append(self, trial: Trial) -> None:
        self.extend((trial,))

    def extend(self, trials: Iterable[Trial]) -> None:
        """Append ``trials`` a column at a time: a session of 10^5 trials is opened and ranked
        at once, where a row-by-row fill cost tens of microseconds per trial. Metrics most trials
        report are read a column at a time; when the trials report many different metrics each
        (a recording's sparse user metrics), each value is placed where it belongs instead, so the
        cost follows the values reported, not trials times names."""
        trials = list(trials)
        if not trials:
            return
        start, count = self._n, len(trials)
        end = start + count
        self._grow(end)
        measurements = [trial.measurement for trial in trials]
        statuses = [measurement.status for measurement in measurements]
        self._ok[start:end] = [status is Status.OK for status in statuses]
        self._index[start:end] = [trial.index for trial in trials]
        self.ids.extend(trial.config.id for trial in trials)
        self.statuses.extend(statuses)
        self.messages.extend(measurement.message for measurement in measurements)
        reported = [measurement.metrics for measurement in measurements]
        names = dict.fromkeys(name for metrics in reported for name in metrics)
        values = sum(map(len, reported))
        if len(names) * count <= 4 * values:  # dense: nearly every trial reports nearly every metric
            for name in names:
                # a metric a trial did not report reads None here, and None is NaN in a float array
                self._column(name)[start:end] = np.array([metrics.get(name) for metrics in reported], dtype=float)
        else:
            placed: dict[str, tuple[list[int], list[Any]]] = {}
            for row, metrics in enumerate(reported, start):
                for name, value in metrics.items():
                    rows_values = placed.get(name)
                    if rows_values is None:
                        rows_values = placed[name] = ([], [])
                    rows_values[0].append(row)
                    rows_values[1].append(value)
            for name, (rows, column_values) in placed.items():
                self._column(name)[rows] = np.array(column_values, dtype=float)
        self._n = end

    def _column(self, name: str) -> np.ndarray:
        """The whole backing array of metric ``name``, made (all NaN) when first reported."""
        col = self._cols.get(name)
        if col is None:
            col = self._cols[name] = np.full(self._cap, np.nan)
        return col

    @property
    def ok(self) -> np.ndarray:
        return self._ok[: self._n]

    @property
    def index(self) -> np.ndarray:
        """Each row's ``Trial.index``."""
        return self._index[: self._n]

    @property
    def metrics(self) -> list[str]:
        return list(self._cols)

    def column(self, name: str) -> np.ndarray:
        """The metric's values (a read-only view; NaN where not reported)."""
        col = self._cols.get(name)
        if col is None:
            return np.full(self._n, np.nan)
        view = col[: self._n]
        view.flags.writeable = False
        return view

    def position(self, config_id: str) -> int | None:
        """Row of the first trial of a config id (None when not measured)."""
        try:
            return self.ids.index(config_id)
        except ValueError:
            return None

    def latest_position(self, config_id: str) -> int | None:
        """Row of the latest successful trial of a config id, else of its latest trial (None when
        not measured). A config measured again (an aborted candidate re-measured in full) stands
        for what it did last, and a failure only when it never succeeded."""
        rows = [row for row, found in enumerate(self.ids) if found == config_id]
        if not rows:
            return None
        ok = self.ok
        return next((row for row in reversed(rows) if ok[row]), rows[-1])

    def pareto_order(self) -> np.ndarray:
        """Every row by latency, then memory (a memory not reported last): the sort each Pareto
        front of this table starts from, kept until rows are added, so that a slider move (a new
        feasible set) re-ranks without sorting every row again, twice."""
        if self._pareto_order is None or len(self._pareto_order) != self._n:
            memory = self.column(MEMORY)
            self._pareto_order = np.lexsort((np.where(np.isfinite(memory), memory, np.inf), self.column(LATENCY)))
        return self._pareto_order


# --------------------------------------------------------------------------------------------
# Ranking
# --------------------------------------------------------------------------------------------


def normalise(values: np.ndarray, ok: np.ndarray, direction: int) -> np.ndarray:
    """Each value as a fraction of the best ok value: 1.0 = best seen, towards 0 = worse.

    Smaller-is-better: ``best / value``; larger-is-better: ``value / best``. Both are ratios, so
    the result does not depend on units and two metrics can be averaged. A ratio needs values
    above 0 (a larger-is-better 0, no throughput, scores 0 as it is). When the smallest value is 0
    where smaller is better (zero spill bytes), every value is shifted up by the smallest positive
    gap, so 0 spills scores 1 and the next count 0.5. When it is below 0 (a margin, an error in
    dB), every value is shifted up so that the smallest becomes the values' span: the order is
    kept, the scores reach from 1 down to at most a half (or up from a half, larger is better), and
    values close together score close together, whatever else was measured. NaN (not reported) and
    failed trials give NaN. When no ok trial reports the metric, all NaN.
    """
    out = np.full(values.shape, np.nan)
    usable = ok & np.isfinite(values)
    if not usable.any():
        return out
    v = values[usable].astype(float)
    scale = float(np.max(np.abs(v)))
    if scale > 1e150:  # the scores are ratios, unchanged by a common factor; the shift below would overflow
        v = v / scale
    low = v.min()
    if low < 0:
        span = v.max() - low
        v = v - low + (span if span > 0 else 1.0)
    elif low == 0 and direction < 0:
        gaps = v[v > low] - low
        v = v - low + (gaps.min() if gaps.size else 1.0)
    if direction < 0:
        out[usable] = v.min() / v
    else:
        best = v.max()
        out[usable] = v / best if best > 0 else 1.0
    return out


def pareto_front(latency: np.ndarray, memory: np.ndarray, mask: np.ndarray,
                 order: np.ndarray | None = None) -> np.ndarray:
    """Rows (sorted by latency) not dominated in (latency, memory), both smaller-is-better.

    Rows without a latency are ignored; rows without memory count as memory-unknown and only the
    fastest of them can be on the front (when no row reports memory, the front is the fastest).
    ``order``: every row already sorted by latency, then memory (:meth:`MetricTable.pareto_order`),
    which spares the sort.
    """
    if order is None:
        rows = np.flatnonzero(mask & np.isfinite(latency))
        if rows.size == 0:
            return rows
        mem = memory[rows]
        mem = np.where(np.isfinite(mem), mem, np.inf)
        order = np.lexsort((mem, latency[rows]))  # by latency, then memory
        sorted_mem = mem[order]
    else:
        rows = order[mask[order] & np.isfinite(latency[order])]
        if rows.size == 0:
            return rows
        sorted_mem = np.where(np.isfinite(memory[rows]), memory[rows], np.inf)
        order = np.arange(rows.size)
    running = np.minimum.accumulate(sorted_mem)
    keep = np.empty(order.size, dtype=bool)
    keep[0] = True
    keep[1:] = sorted_mem[1:] < running[:-1]
    return rows[order[keep]]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def exact_number(value: float) -> str:
    """A bound or a weight as a person may type it back to the same value: six significant digits
    where they read back as it (``64``, ``0.25``, ``1e+09``), else the digits it takes
    (``1234567``, ``0.00598288365``)."""
    value = float(value)
    short = f"{value:.6g}"
    if not math.isfinite(value) or float(short) == value:
        return short
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)


def shown_number(value: float) -> str:
    """A bound's or a measured value's figure in a sentence: six significant digits, an integer whole."""
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return f"{value:.6g}"


@dataclass
class Ranking:
    """What the views need, aligned with the trials (or table rows) that were ranked."""

    table: MetricTable
    constraints: Constraints
    weights: dict[str, float]
    feasible: np.ndarray
    score: np.ndarray
    normalised: dict[str, np.ndarray]
    excluded_by: dict[str, int]
    pareto: np.ndarray
    pareto_feasible: np.ndarray
    order: np.ndarray
    default_row: int | None = None
    #: the user's metric directions in force (the registry decides the rest)
    directions: Mapping[str, int] = field(default_factory=dict)
    #: rows that succeeded and meet every constraint but have no score, because no successful trial
    #: reports any weighted metric (why nothing may be feasible with no constraint at all; a trial
    #: missing a weighted metric that others report scores 0 for it instead)
    unscored: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: weighted metrics trials report, left out of the score because nobody said which way is better
    #: (a file's weight whose direction is missing): a guess would rank the worst first half the time, and
    #: a run refuses such a weight outright (:class:`~workbench.core.domain.search_objective.Objective`)
    undirected: tuple[str, ...] = ()
    #: weighted metrics every successful trial reports alike: they rank nothing, though their
    #: weight lifts every score towards 1 (said by :meth:`explain`, so a weight that moves every
    #: score and no ranking is not a puzzle)
    constant: tuple[str, ...] = ()
    #: the weighted metrics when every one of them is alike for every successful trial: the scores
    #: all tie, and the latency tie-break alone orders the configs (said so by :meth:`explain`)
    all_alike: tuple[str, ...] = ()

    @property
    def n_ok(self) -> int:
        return int(self.table.ok.sum())

    @property
    def n_feasible(self) -> int:
        return int(self.order.size)

    def feasible_configs(self) -> int:
        """Distinct configs among the feasible rows: a config measured twice (re-measured, a
        continued replay, two sessions of one GPU pooled) is one config, though two rows."""
        ids = self.table.ids
        return len({ids[int(row)] for row in self.order})

    @property
    def best(self) -> int | None:
        return int(self.order[0]) if self.order.size else None

    @property
    def most_excluding(self) -> str | None:
        """The constraint that rules out the most ok trials (None when none excludes any)."""
        if not self.excluded_by:
            return None
        label, count = max(self.excluded_by.items(), key=lambda item: item[1])
        return label if count > 0 else None

    @property
    def to_relax(self) -> str | None:
        """The constraint to relax first when nothing is feasible: :attr:`most_excluding`, or, with
        no successful trial to count, the constraint that rules out the most candidates stopped early
        under the latency limit (by their latest trial): a figure they kept that misses another
        limit, else a bound above the latency limit. A run every candidate of which a too tight
        latency limit stopped named no constraint to relax: the stopped trials are no successful
        ones, which is all :attr:`excluded_by` counts."""
        label = self.most_excluding
        if label is not None or self.n_ok:
            return label
        stopped = self._latest_stopped()
        if not stopped.size:
            return None
        counts: dict[str, int] = {}
        open_ = np.ones(stopped.size, dtype=bool)  # no other limit missed: the latency limit keeps them out
        for bound, misses in self._other_limits_missed(stopped):
            counts[bound.label] = int(np.count_nonzero(misses))
            open_ &= ~misses
        limit = self.constraints.max_latency_ms
        if limit is not None:
            counts[Bound(LATENCY, "<=", limit).label] = int(np.count_nonzero(
                open_ & (self.table.column(LATENCY_BOUND)[stopped] > limit)))
        best = max(counts.items(), key=lambda item: item[1], default=("", 0))
        return best[0] if best[1] > 0 else None

    @property
    def excluding(self) -> list[tuple[str, int]]:
        """(label, count) of each constraint that excludes an ok trial, the most excluding first
        (a trial two of them exclude counts for each): naming only the first sent a person to relax
        it while another still kept the rest out."""
        return sorted((item for item in self.excluded_by.items() if item[1] > 0), key=lambda item: -item[1])

    def shown(self, label: str) -> str:
        """The constraint of ``label`` (a key of :attr:`excluded_by`) as a person reads it."""
        return next((bound.shown for bound in self.constraints.bounds() if bound.label == label), label)

    def rank_of(self, i: int) -> int | None:
        """1-based position of row ``i`` among feasible trials (None when infeasible)."""
        if not self.feasible[i]:
            return None
        return int(np.count_nonzero(self.score[self.order] > self.score[i])) + 1

    def summary(self, number: int | None = None) -> str:
        """One line for a status bar: the recommendation, or why there is none. ``number``: the
        recommended trial's number as the caller's views show it, named before its config id."""
        if self.best is not None:
            named = self.table.ids[self.best] if number is None else f"trial {number} [{self.table.ids[self.best]}]"
            return f"recommended: {named} ({self.explain(self.best)})"
        return self.why_none()

    def why_none(self, how: str | None = "tune --remeasure-aborted", waits_for_relaxing: bool = False) -> str:
        """Why there is no recommendation, in one line.

        Two things keep a successful trial out of the ranking: a constraint it violates, and having
        no score because it reports none of the weighted metrics (a benchmark that measures latency
        only while only quality is weighted, a weight on a metric nothing reports). Both are said,
        with counts, so the line is true whichever applies; so are candidates stopped early under
        the latency limit, with the way to measure them (``how``, as for :meth:`aborted_note`):
        they may be what a relaxed limit would recommend.
        """
        note = self.aborted_note(how, waits_for_relaxing)
        if self.n_ok == 0:
            return f"no successful trials among {len(self.table)}" + (f": {note}" if note else "")
        if self.n_feasible:  # asked while there is a recommendation: nothing to explain away
            return f"{counted(self.n_feasible, 'feasible config')} among {counted(self.n_ok, 'successful trial')}"
        reasons = []
        label = self.most_excluding
        if self.excluding:
            reasons.append(", ".join(f"{self.shown(name)} excludes {count}" for name, count in self.excluding))
        unscored = int(np.count_nonzero(self.unscored))
        if unscored and not self.weights and self.undirected:
            reasons.append(self.undirected_note())
        elif unscored:
            within = " within the constraints" if label is not None else ""
            verb = "reports" if unscored == 1 else "report"
            reasons.append(f"{unscored}{within} {verb} none of the weighted metrics ({self._weighted_names()})")
        if note:
            reasons.append(f"and {note}")
        return f"no feasible config among {counted(self.n_ok, 'successful trial')}; " + "; ".join(reasons)

    def aborted_count(self) -> int:
        """Rows stopped early as hopeless under the latency limit (status ``aborted``)."""
        return sum(status is Status.ABORTED for status in self.table.statuses)

    def _latest_stopped(self) -> np.ndarray:
        """The rows, in order, of the configs whose latest trial was stopped early under the latency
        limit: what re-measuring takes (a config measured again since is not)."""
        statuses = self.table.statuses
        latest = {cid: row for row, cid in enumerate(self.table.ids)}
        return np.array(sorted(row for row in latest.values() if statuses[row] is Status.ABORTED), dtype=np.int64)

    def _other_limits_missed(self, rows: np.ndarray) -> list[tuple[Bound, np.ndarray]]:
        """Each bound but the latency's, with which of ``rows`` miss it by a figure they kept (the
        registers, shared memory of a stopped candidate): measuring again cannot change those."""
        found = []
        for bound in self.constraints.bounds():
            if bound.metric in (LATENCY, LATENCY_BOUND):
                continue
            values = self.table.column(bound.metric)[rows]
            found.append((bound, np.isfinite(values) & ~bound.satisfied(values)))
        return found

    def aborted_note(self, how: str | None = "tune --remeasure-aborted", waits_for_relaxing: bool = False) -> str:
        """When candidates were stopped early under the latency limit, that the limit is why, with
        the fastest lower bound seen, how many the limit in force no longer rules out and the way
        back, ``how`` ('' when none was stopped), by the rule re-measuring follows: a config whose
        latest trial stopped early with a bound at most the limit (or under no limit); one measured
        again since, in full or not, is counted apart. Counts are of configs. While the limit admits
        none of them, ``how`` is named only when it ``waits_for_relaxing`` (a button enabled once the
        limit is relaxed), not a command, which as written would measure nothing. ``how`` None: they
        cannot be measured again here (a replay holds only where each stopped), said as such."""
        if not self.aborted_count():
            return ""
        if how is None:
            return (f"{self.aborted_count()} stopped early as hopeless under a latency limit; the recording holds "
                    "only the bound each stopped at: re-measure them in the session that recorded them")
        # per config stopped early, its latest row decides, as for re-measuring (sizes.remeasurable):
        # stopped again, it may be re-measured; measured since (in full, or failed), it is not offered
        statuses, ids = self.table.statuses, self.table.ids
        stopped_ids = {ids[row] for row, status in enumerate(statuses) if status is Status.ABORTED}
        pending = self._latest_stopped()
        total, done = len(stopped_ids), len(stopped_ids) - len(pending)
        if not pending.size:
            return f"{total} stopped early as hopeless under a latency limit, all measured again since"
        since = f" ({done} of them measured again since)" if done else ""
        aborted = len(pending)
        # the figures a stopped candidate kept (registers, shared memory) may miss another limit
        # already: measuring its timing again cannot make it feasible (Objective.worth_remeasuring)
        settled = np.zeros(aborted, dtype=bool)
        missed: list[str] = []
        for bound, misses in self._other_limits_missed(pending):
            if misses.any():
                settled |= misses
                missed.append(bound.shown)
        n_settled = int(settled.sum())
        miss = f"miss{'es' if n_settled == 1 else ''} {' and '.join(missed)}, which measuring again cannot change"
        bounds = self.table.column("latency_bound_ms")[pending]
        open_ = ~settled
        limit = self.constraints.max_latency_ms
        under = ~np.isfinite(bounds) | (bounds <= limit) if limit is not None else np.ones(aborted, dtype=bool)
        worth = int(np.count_nonzero(under & open_))
        over = bounds[open_ & ~under]
        if not worth:
            if not over.size:  # every one misses another limit: no latency limit stands in the way
                return (f"{total} stopped early as hopeless under a latency limit{since}; "
                        f"{'it' if aborted == 1 else f'all {aborted}' if not done else f'the other {aborted}'} "
                        f"{'already ' + miss}")
            seen = f", the fastest at least {float(over.min()):.4g} ms" if np.isfinite(over).any() else ""
            them = f"the other {over.size}" if n_settled else "them"  # (relaxing cannot help the settled ones)
            way = f"relax it, then re-measure {them} ({how})" if waits_for_relaxing else f"relax it to re-measure {them}"
            settled_too = f"; {n_settled} of them already {miss}" if n_settled else ""
            # (stopped under the limit in force, or under an earlier one: a trial keeps only its bound)
            return (f"{total} stopped early as hopeless under a latency limit{since}{seen}, over the limit in force "
                    f"({exact_number(limit) if limit is not None else 'none'} ms){settled_too}; {way}")
        if worth == aborted:  # relaxed since (or no limit now): measuring is what is left
            what = "re-measure them" if not done else f"re-measure the other {aborted}"
            return f"{total} stopped early as hopeless under an earlier latency limit{since}; {what} ({how})"
        left = aborted - worth
        slow = f"at least {float(over.min()):.4g} ms" if over.size else ""
        if over.size and n_settled:
            rest = f"of the other {left}, {over.size} {'is' if over.size == 1 else 'are'} {slow} and {n_settled} already {miss}"
        else:
            rest = f"the other {left} {'is' if left == 1 else 'are'} {slow}" if over.size else f"the other {left} already {miss}"
        # (with no latency limit in force only other limits can keep some out: "the limits")
        in_force = f"the limit in force ({exact_number(limit)} ms)" if limit is not None else "the limits in force"
        return (f"{total} stopped early as hopeless under an earlier latency limit{since}; {worth} of "
                f"{'them' if not done else f'the other {aborted}'} may meet {in_force}: "
                f"re-measure them ({how}); {rest}")

    def _weighted_names(self) -> str:
        return ", ".join(self.weights) or LATENCY

    def undirected_note(self) -> str:
        """What the weights on metrics without a direction do (nothing), and what to do ('' when none)."""
        if not self.undirected:
            return ""
        names = ", ".join(self.undirected)
        one = len(self.undirected) == 1
        return (f"{names} {'is' if one else 'are'} weighted but {'has' if one else 'have'} no direction, so "
                f"{'it does' if one else 'they do'} not count: say whether higher or lower is better")

    def constant_note(self) -> str:
        """That the weights on metrics every trial reports alike rank nothing ('' when none)."""
        if not self.constant:
            return ""
        one = len(self.constant) == 1
        return (f"{', '.join(self.constant)} {'is' if one else 'are'} the same for every successful trial, so "
                f"{'its weight ranks' if one else 'their weights rank'} nothing")

    def explain(self, i: int) -> str:
        """One line saying why row ``i`` is where it is (a row of the trials ranked, from 0: a
        negative one, which NumPy read from the end, explained another trial unsaid)."""
        i = int(i)
        if not 0 <= i < len(self.table):
            raise WorkbenchError(f"row {i}: the ranking has rows 0 to {len(self.table) - 1}" if len(self.table)
                                 else f"row {i}: the ranking has no rows")
        table = self.table
        if not table.ok[i]:
            status = table.statuses[i].value
            message = table.messages[i]
            return f"failed ({status}): {message}" if message and message != status else f"failed ({status})"
        if not self.feasible[i]:
            reasons = []
            for bound in self.constraints.bounds():
                value = table.column(bound.metric)[i]
                if not bound.check(value):
                    shown = "not reported" if math.isnan(value) else shown_number(float(value))
                    reasons.append(f"{bound.metric} {shown} violates {bound.shown}")
            if not reasons and not self.weights and self.undirected:
                reasons.append(self.undirected_note())
            elif not reasons:  # meets every constraint, but there is nothing to score it on
                reasons.append(f"reports none of the weighted metrics ({self._weighted_names()}), so it has no score")
            return "infeasible: " + "; ".join(reasons)
        n = self.feasible_configs()  # "among N feasible configs": a config measured twice is one
        position = self.rank_of(i) or 0
        single = list(self.weights) if len(self.weights) == 1 else None
        if self.all_alike:
            # ("lowest memory (201) among 60" of a memory every config shares: the tie-break decided)
            alike = ", ".join(self.all_alike)
            one = len(self.all_alike) == 1
            # the place among configs by each one's fastest measurement (a config measured twice is
            # one config; two of one latency share a place), as "among N feasible configs" counts
            ids, latency = self.table.ids, self.table.column(LATENCY)
            fastest: dict[str, float] = {}
            for row in self.order:
                fastest[ids[row]] = min(fastest.get(ids[row], math.inf), float(latency[row]))
            mine = fastest.get(ids[i], float(latency[i]))
            place = 1 + sum(value < mine for value in fastest.values())
            text = (f"{'fastest' if place == 1 else _ordinal(place) + ' fastest'} among "
                    f"{counted(n, 'feasible config')}: {alike} {'is' if one else 'are'} the same for every successful "
                    f"trial, so {'its weight ranks' if one else 'their weights rank'} nothing and latency decides")
        elif single:
            metric = single[0]
            noun = _NOUNS.get(metric, metric)
            adjective = "highest" if metric_direction(metric, self.directions) > 0 else "lowest"
            # the value that decided, unless it is the latency every summary shows beside it: ranked
            # by Kernel Tuner's mean time, `show` printed the median next to "lowest kt_time_ms"
            value = "" if metric == LATENCY else f" ({shown_number(float(table.column(metric)[i]))})"
            if position == 1:
                text = f"{adjective} {noun}{value} among {counted(n, 'feasible config')}"
            else:
                ratio = self._ratio(metric, self.best, i)  # type: ignore[arg-type]
                text = f"{_ordinal(position)} {adjective} {noun}{value} among {counted(n, 'feasible config')}"
                if ratio is not None:
                    word = "slower" if metric == LATENCY else "worse"
                    if ratio < 1.1:
                        text += f" ({(ratio - 1) * 100:.1f}% {word} than the best)"
                    else:
                        text += f" ({ratio:.2f}x {word} than the best)"
        else:
            parts = ", ".join(
                f"{_NOUNS.get(m, m)} {self.normalised[m][i]:.3f}"  # as the score: 0.995 is no 1.00
                for m in self.weights
                if not math.isnan(self.normalised[m][i])
            )
            word = "highest score" if position == 1 else f"{_ordinal(position)} highest score"
            text = f"{word} {self.score[i]:.3f} among {counted(n, 'feasible config')}"
            text += f" ({parts} of best)" if parts else " (it reports none of the weighted metrics)"
        notes = [note for note in (self.undirected_note(), self.constant_note()) if note]
        return text + self._versus_default(i) + "".join(f"; {note}" for note in notes)

    def _ratio(self, metric: str, a: int, b: int) -> float | None:
        """How many times better row ``a`` is than row ``b`` on ``metric`` (None if unknown)."""
        col = self.table.column(metric)
        va, vb = col[a], col[b]
        if not (np.isfinite(va) and np.isfinite(vb)) or va <= 0 or vb <= 0:
            return None
        ratio = float(vb) / float(va) if metric_direction(metric, self.directions) < 0 else float(va) / float(vb)
        return ratio if math.isfinite(ratio) else None  # 1e308 against 1e-3: no figure, not "infx faster"

    def _versus_default(self, i: int) -> str:
        d = self.default_row
        if d is None:
            return ""
        if d == i or self.table.ids[d] == self.table.ids[i]:
            return "; this is the default config"
        if not self.table.ok[d]:
            status = self.table.statuses[d]
            if status is Status.ABORTED:  # not a failure: stopped early as hopeless under the latency limit
                return "; the default config was stopped early as hopeless under the latency limit"
            return f"; the default config failed ({status.value})"
        ratio = self._ratio(LATENCY, i, d)
        if ratio is None:
            return ""
        word, times = ("faster", ratio) if ratio >= 1 else ("slower", 1 / ratio)
        # a default the constraints exclude is no alternative: "0.7% slower than the default" read
        # as if the tuned pick were worse than a config one could use
        excluded = "" if self.feasible[d] else (", which has no score (it reports none of the weighted metrics)"
                                                if self.unscored.size > d and self.unscored[d]
                                                else ", which the constraints exclude")
        if times < 1.1:  # "1.0x faster" says nothing: small gains in percent
            return f"; {(times - 1) * 100:.1f}% {word} than the default{excluded}"
        return f"; {times:.1f}x {word} than the default{excluded}"


def rank(
    trials: Sequence[Trial] | MetricTable,
    constraints: Constraints | None = None,
    weights: Weights | None = None,
    *,
    default: str | None = None,
) -> Ranking:
    """Feasibility, score, order, Pareto fronts and exclusion counts, all vectorised.

    ``trials`` may be the trials themselves or a :class:`MetricTable` kept up to date by the
    caller (the fast path for repeated re-ranking). ``default`` is the config id of the reference
    config, used by ``explain`` to say how much faster the recommendation is. Rows map 1:1 to the
    given trials, in order.
    """
    table = trials if isinstance(trials, MetricTable) else MetricTable.from_trials(trials)
    constraints = constraints or Constraints()
    weights = weights or Weights()
    ok = table.ok
    n = len(table)

    feasible = ok.copy()
    excluded_by: dict[str, int] = {}
    for bound in constraints.bounds():
        passes = bound.satisfied(table.column(bound.metric))
        excluded_by[bound.label] = excluded_by.get(bound.label, 0) + int(np.count_nonzero(ok & ~passes))
        feasible &= passes

    active = weights.active()
    # (one no successful trial reports is left out below anyway, and said as unreported: a
    # direction chosen for it would change nothing)
    undirected = tuple(m for m in active if known_direction(m, weights.directions) is None
                       and bool((ok & np.isfinite(table.column(m))).any()))
    active = {m: w for m, w in active.items() if m not in undirected}
    normalised: dict[str, np.ndarray] = {}
    total = np.zeros(n)
    weight_sum = 0.0
    top = max(active.values(), default=0.0)  # weights are relative: summing them as given can overflow
    constant: list[str] = []
    counted = 0
    several_ok = int(np.count_nonzero(ok)) > 1
    for metric, w in ((m, w / top) for m, w in active.items()):
        norm = normalise(table.column(metric), ok, weights.direction(metric))
        normalised[metric] = norm
        if np.isnan(norm).all():
            continue  # nobody reports it: the term cannot discriminate, so it is left out
        if several_ok and bool(np.all(norm[ok] == 1.0)):
            # every successful trial reports the same value: the term ranks nothing, though its
            # weight lifts every score towards 1 (a memory weight on configs of one footprint),
            # which the score's definition keeps and the explanation says
            constant.append(metric)
        total += w * np.nan_to_num(norm, nan=0.0)
        weight_sum += w
        counted += 1
    if weight_sum > 0:
        score = np.where(ok, total / weight_sum, np.nan)
    else:
        score = np.full(n, np.nan)
    # a feasible trial needs a score to be ordered; one without any weighted metric is not
    unscored = feasible & ~np.isfinite(score)
    feasible &= ~unscored

    rows = np.flatnonzero(feasible)
    latency = table.column(LATENCY)
    # best first; among equal scores the faster config (a score of metrics other than latency,
    # say the most accurate, ties between configs of very different speed, and the earlier one
    # was recommended however slow), then the earlier evaluation
    speed = np.where(np.isfinite(latency[rows]), latency[rows], np.inf)
    order = rows[np.lexsort((rows, speed, -score[rows]))]

    memory = table.column(MEMORY)
    default_row = table.latest_position(default) if default else None
    by_latency = table.pareto_order()
    pareto = pareto_front(latency, memory, ok, by_latency)
    # without a binding constraint the feasible front is the same one
    pareto_feasible = pareto if np.array_equal(feasible, ok) else pareto_front(latency, memory, feasible, by_latency)
    return Ranking(
        table=table,
        constraints=constraints,
        weights=active,
        feasible=feasible,
        score=score,
        normalised=normalised,
        excluded_by=excluded_by,
        pareto=pareto,
        pareto_feasible=pareto_feasible,
        order=order,
        default_row=default_row,
        directions=dict(weights.directions),
        unscored=unscored,
        undirected=undirected,
        # said only beside a term that does rank: with every term alike there is nothing to rank
        constant=tuple(constant) if len(constant) < counted else (),
        all_alike=tuple(constant) if constant and len(constant) == counted and LATENCY not in constant else (),
    )


def trial_cost(constraints: Constraints | None = None, weights: Weights | None = None) -> Callable[[Trial], float]:
    """A per-trial scalar for strategies (lower is better), stable as trials accumulate: the
    :class:`workbench.core.domain.search_objective.Objective` of these constraints and weights."""
    from workbench.core.domain.search_objective import Objective

    return Objective(constraints or Constraints(), weights or Weights())


def fastest_left_out(trials: Sequence[Trial], ranking: Ranking, constraints: Constraints) -> dict[str, Any] | None:
    """The fastest successful trial when the recommendation is another, and what kept it out: the
    bounds it violates (in the words the window's card uses), or its lower score under the weights.
    A constraint that moved the recommendation said only what it now was, and a person who tightened
    it was left to find out what it had excluded (``show`` and the exports say it)."""
    if ranking.best is None:
        return None
    timed = [(trial.metric(LATENCY), row) for row, trial in enumerate(trials)
             if trial.ok and math.isfinite(trial.metric(LATENCY))]
    latency, row = min(timed)
    best_latency = trials[ranking.best].metric(LATENCY)
    if not latency < best_latency:
        return None
    trial = trials[row]
    feasible = bool(ranking.feasible[row])
    return {"index": trial.index, "id": trial.config.id, "config": trial.config.to_dict(), "latency_ms": latency,
            "faster_by": best_latency / latency,
            "excluded_by": [] if feasible else violations(trial, constraints),
            "score": _finite_or_none(float(ranking.score[row]))}


def fastest_line(fastest: Mapping[str, Any]) -> str:
    """``trial 40, 0.01923 ms (0.5% faster): excluded by registers 22 > 20`` (see :func:`fastest_left_out`)."""
    ratio = fastest["faster_by"]
    gain = f"{ratio:.2f}x faster" if ratio >= 1.1 else f"{(ratio - 1) * 100:.1f}% faster"
    head = f"trial {fastest['index']}, {fmt(fastest['latency_ms'])} ms ({gain})"
    if fastest["excluded_by"]:
        return f"{head}: excluded by {'; '.join(fastest['excluded_by'])}"
    if fastest["score"] is None:
        return f"{head}: reports none of the weighted metrics"
    return f"{head}: scores {fastest['score']:.3f} under the weights"


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None
