"""Per-size dispatch: the fewest configs that keep every measured size near its optimum, as code.

A kernel tuned at several problem sizes (a size sweep: trials carrying their own problem) usually
has a different best config at each size, but shipping one compiled variant per size is wasteful
when a few configs are nearly as good everywhere. This module chooses a small set and writes it as
a decision list over one size parameter, for C/CUDA (``dispatch``) and for Python/CuPy
(``dispatch-py``), both generated from the same :class:`DispatchPlan`, so they cannot disagree.

How the set is chosen
    At each measured size every config has a *fraction of that size's optimum* (its score / the
    size's best score under the objective in force; with the default objective, latency alone,
    that is optimum latency / its latency). A config *covers* a size when that fraction is at least
    1 / (1 + tolerance), i.e. (latency alone) it runs within ``tolerance`` of the optimum there; a
    config not measured at a size does not cover it. The fewest configs covering every size is a
    set cover. It is solved exactly (branch and bound over the configs' cover sets, branching on the
    size with the fewest covering configs) when that finishes within :data:`EXACT_NODE_LIMIT`
    search nodes; otherwise greedily (each step takes the config covering most uncovered sizes),
    which uses at most H(k) = 1 + 1/2 + ... + 1/k times the fewest (k sizes). Among covers of the
    smallest size the one with the highest total fraction is kept (first found when that search is
    cut short). Each size then gets one of the chosen configs that covers it, assigned so that the
    sizes form as few contiguous ranges as possible (ties: higher fraction).

Sizes between ranges
    Two neighbouring measured sizes a < b that get different configs are split at their geometric
    mean sqrt(a*b) (their arithmetic mean when either is not positive): sizes below it take a's
    config, sizes from it up take b's (integers: the boundary is rounded up, so ``n < T`` reads the
    same in C and Python). Sizes below the smallest measured take its config, sizes above the
    largest the largest's: a guess outside what was measured, said in the output.
"""

from __future__ import annotations

import dataclasses
import decimal
import math
import numbers
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from workbench.core.errors import WorkbenchError, write_error
from workbench.core.fs import atomic_write
from workbench.core.io.export import (
    DEFAULT_SHARED_PER_LAUNCH,
    ExportPlan,
    launch_geometry,
    objective_comment,
    comment_line,
    find_template,
    include_guard,
    provenance_label,
    reads_recorded_names,
    replace_rule,
    sessions_provenance,
    slot_defines,
)
from workbench.core.domain.measurement import LATENCY, Trial
from workbench.core.domain.objective import Constraints, Weights, rank
from workbench.core.domain.portability import check_one_kernel
from workbench.core.domain.records import Provenance
from workbench.core.domain.session import Session, problem_key
from workbench.core.domain.sizes import sweep_progress, telling_parameters
from workbench.core.domain.space import Config
from workbench.core.domain.templates import c_literal
from workbench.core.io.export_seal import seal_text
from workbench.core.io.interop import recorded_integers
from workbench.core.io.session_lock import locked_by_other

DISPATCH_FORMATS: tuple[str, ...] = ("dispatch", "dispatch-py")
DEFAULT_TOLERANCE = 0.05
#: Search nodes the exact set cover may use before the greedy cover is taken instead.
EXACT_NODE_LIMIT = 200_000
MARKER = "exported by Kernel Tuning Workbench"


@dataclass(frozen=True)
class SizeFigure:
    """One measured size: the config the dispatch picks there and how it compares with the optimum."""

    size: float | int
    config: int  # index into DispatchPlan.configs
    latency_ms: float
    best_latency_ms: float
    best_config_id: str
    fraction: float


@dataclass(frozen=True)
class Range:
    """Sizes below ``upper`` (None: no upper bound) not caught by an earlier range take ``config``."""

    config: int
    upper: float | int | None
    sizes: tuple[SizeFigure, ...]


@dataclass
class DispatchPlan:
    kernel: str
    parameter: str
    integer: bool
    configs: list[Config]
    ranges: list[Range]
    tolerance: float
    method: str  # "exact" or "greedy"
    fixed: dict[str, Any]  # the other problem parameters (the same at every size)
    devices: list[str]
    sessions: list[str]
    provenance: Provenance  # where the figures come from (see ExportPlan.provenance)
    export: ExportPlan  # for the slot macros (template or recording names)
    notes: list[str] = field(default_factory=list)
    #: Measured sizes where nothing is feasible: no config of the cover is for them (see the notes).
    left_out: int = 0

    def select(self, size: float) -> int:
        """The config index the decision list picks for ``size`` (the generated code's rule)."""
        if isinstance(size, bool) or not isinstance(size, (numbers.Real, decimal.Decimal)):
            raise TypeError(f"size must be a number, got {size!r}")
        if isinstance(size, decimal.Decimal) and size.is_nan() or size != size:  # (a signalling NaN raises on !=)
            raise ValueError("size is NaN: no range holds it")
        for r in self.ranges:
            if r.upper is None or size < r.upper:
                return r.config
        return self.ranges[-1].config

    @property
    def figures(self) -> list[SizeFigure]:
        return [f for r in self.ranges for f in r.sizes]


# ------------------------------------------------------------------------------------------------
# Planning
# ------------------------------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _size_parameter(problems: list[dict[str, Any]], parameter: str | None) -> str:
    names = sorted({n for p in problems for n in p})
    varying = sorted(telling_parameters(problems))
    if parameter is not None:
        if parameter not in names:
            raise WorkbenchError(f"--size-param {parameter!r}: not a problem parameter (these are: {', '.join(names) or 'none'})")
        if parameter not in varying:
            raise WorkbenchError(f"--size-param {parameter!r}: the measured sizes do not vary in it"
                                 + (f" (they vary in {', '.join(varying)})" if varying else
                                    "; the session holds one problem size"))
        if [n for n in varying if n != parameter]:
            other = ", ".join(n for n in varying if n != parameter)
            raise WorkbenchError(f"the measured sizes also vary in {other}; a dispatch picks by one size parameter: "
                                 f"{_one_size_way(varying)}")
        return parameter
    if len(varying) == 1:
        return varying[0]
    if not varying:
        raise WorkbenchError("the session holds one problem size; a dispatch needs trials at two or more sizes "
                             "(tune --sizes NAME=V1,V2,...)")
    raise WorkbenchError(f"the measured sizes vary in {', '.join(varying)}; a dispatch picks by one size parameter: "
                         f"{_one_size_way(varying)}")


def _one_size_way(varying: list[str]) -> str:
    """What to export instead from a sweep over several parameters (a grid of sizes)."""
    return (f"export one size's best config with --format header (or json, cuda, cupy) and --at, one per "
            f"parameter ({' '.join(f'--at {name}=VALUE' for name in varying)}); show --json lists every size's best; "
            f"for a dispatch, tune a sweep of one of them with the others fixed (--sizes {varying[0]}=... "
            f"{' '.join(f'--set {name}=...' for name in varying[1:])})")


def _infeasible_said(name: str, left_out: list[tuple[str, str]]) -> str:
    """Every size without a feasible config, and why for the first: one size's reason alone read as
    if it were the only one (four of five sizes were out, one was named)."""
    first = left_out[0][1]
    if len(left_out) == 1:
        return first
    return f"none at {name} = {', '.join(size for size, _ in left_out)}; {first}"


def plan_dispatch(
    sessions: Sequence[Session],
    tolerance: float = DEFAULT_TOLERANCE,
    constraints: Constraints | None = None,
    weights: Weights | None = None,
    *,
    parameter: str | None = None,
    sources: Sequence[str] | None = None,
    templates: Any = None,
    kernel_dirs: Sequence[str] = (),
    node_limit: int = EXACT_NODE_LIMIT,
) -> DispatchPlan:
    """Choose the configs and ranges from the sessions' trials (one kernel, one device, several sizes)."""
    if not sessions:
        raise WorkbenchError("dispatch needs at least one session")
    if not (_number(tolerance) and 0 <= tolerance <= 10):
        raise WorkbenchError(f"--tolerance {tolerance!r}: give a fraction between 0 and 10 (0.05 = 5%)")
    first = sessions[0]
    labels = [str(sources[i]) if sources and i < len(sources) else f"session {i + 1}" for i in range(len(sessions))]
    constraints = first.constraints if constraints is None else constraints
    weights = first.weights if weights is None else weights
    check_one_kernel(sessions, labels, "a dispatch serves one kernel")
    devices = sorted({str(s.device.get("name") or "unknown device") for s in sessions})
    if len(devices) > 1:
        raise WorkbenchError(f"the sessions ran on {len(devices)} devices ({', '.join(devices)}); "
                             "a size dispatch serves one GPU (see show --portability)")

    by_problem: dict[str, tuple[dict[str, Any], list[Trial]]] = {}
    for session in sessions:
        for trial in session.trials:
            problem = session.problem_of(trial)
            by_problem.setdefault(problem_key(problem), (problem, []))[1].append(trial)
    problems = [p for p, _ in by_problem.values()]
    name = _size_parameter(problems, parameter)
    for p in problems:
        if not _number(p.get(name)):
            raise WorkbenchError(f"problem parameter {name} = {comment_line(repr(p.get(name)))} is not a number; "
                                 "a dispatch compares sizes")
    fixed = {k: v for k, v in problems[0].items() if k != name}
    integer = all(isinstance(p[name], int) for p in problems)

    sizes = sorted(by_problem, key=lambda key: by_problem[key][0][name])
    fractions: list[dict[str, float]] = []  # per size: config id -> fraction of optimum
    latency: list[dict[str, float]] = []
    best: list[tuple[str, float]] = []
    configs: dict[str, Config] = {}
    # a size where nothing is feasible has no config to pick: it is left out of the cover (said
    # in the notes), so the sizes that have one still ship; with none left there is nothing to export
    left_out: list[tuple[str, str]] = []  # (the size, why nothing there is feasible)
    for key in list(sizes):
        problem, trials = by_problem[key]
        ranking = rank(trials, constraints, weights)
        if ranking.best is None:
            left_out.append((str(problem[name]), f"{name} = {problem[name]}: nothing feasible ({ranking.summary()})"))
            sizes.remove(key)
            continue
        top = float(ranking.score[ranking.best])
        table: dict[str, float] = {}
        lat: dict[str, float] = {}
        for row in ranking.order:  # best first: each config's best measurement
            trial = trials[row]
            if trial.config.id not in table:
                table[trial.config.id] = float(ranking.score[row]) / top
                lat[trial.config.id] = trial.metric(LATENCY)
                configs.setdefault(trial.config.id, trial.config)
        fractions.append(table)
        latency.append(lat)
        best.append((trials[ranking.best].config.id, trials[ranking.best].metric(LATENCY)))

    if not sizes:
        raise WorkbenchError(f"nothing feasible at any size: {_infeasible_said(name, left_out)}")
    if len(sizes) == 1:  # one range: no dispatch, a size's config
        only = by_problem[sizes[0]][0][name]
        raise WorkbenchError(f"only {name} = {only} has a feasible config ({_infeasible_said(name, left_out)}); export "
                             f"that size's config with --format header (or json, cuda, cupy) --at {name}={only}")
    need = 1.0 / (1.0 + tolerance)
    covers: dict[str, int] = {}
    order: list[str] = []
    for i, table in enumerate(fractions):
        for cid, f in table.items():
            if f >= need - 1e-12:
                if cid not in covers:
                    order.append(cid)
                covers[cid] = covers.get(cid, 0) | (1 << i)
    total = {cid: sum(fractions[i].get(cid, 0.0) for i in range(len(sizes)) if covers[cid] >> i & 1) for cid in covers}

    def plan_fraction(keys: list[str]) -> float:
        """What a cover gives: the total fraction of optimum of the sizes as the plan assigns them.
        (Adding each config's own total counted a size two configs cover twice, so covers of
        overlapping configs beat better ones.)"""
        return sum(fractions[i][cid] for i, cid in enumerate(_assign(len(sizes), keys, covers, fractions)))

    chosen, method = set_cover(len(sizes), [(cid, covers[cid], total[cid]) for cid in order], node_limit,
                               value=plan_fraction)
    assignment = _assign(len(sizes), chosen, covers, fractions)

    picked: list[str] = []
    for cid in assignment:
        if cid not in picked:
            picked.append(cid)
    values = [by_problem[key][0][name] for key in sizes]
    ranges: list[Range] = []
    start = 0
    for i in range(1, len(sizes) + 1):
        if i == len(sizes) or assignment[i] != assignment[start]:
            figures = tuple(
                SizeFigure(values[j], picked.index(assignment[j]), latency[j][assignment[j]], best[j][1], best[j][0],
                           fractions[j][assignment[j]])
                for j in range(start, i))
            upper = None if i == len(sizes) else _boundary(values[i - 1], values[i], integer)
            ranges.append(Range(picked.index(assignment[start]), upper, figures))
            start = i

    template = find_template(first, templates, kernel_dirs)
    if template is not None and any(find_template(s, {template.name: template}, kernel_dirs) is None
                                    for s in sessions[1:]):
        template = None  # (a pooled session's template is another: none stands for all, as for one export)
    space = first.space
    export = ExportPlan(
        kernel=first.kernel, kind=first.kind, problem=dict(first.problem), constraints=constraints, weights=weights,
        choices=[], portable=None, template=template, source_hash=first.source_hash, sessions=labels,
        provenance=sessions_provenance(sessions),
        slot_domains={s.name: list(s.values) for s in space.slots} if space is not None else {},
        # a recording's kernel reads its parameters by the names recorded, as the header export writes them
        names_as_recorded=template is None and reads_recorded_names(first),
        recorded_integers=recorded_integers(first) if template is None else {},
    )
    notes = [f"{why}; left out of the cover: the range it falls in serves it, and no config measured there "
             "meets the objective" for _size, why in left_out]
    if template is not None:  # as the header notes it: a dispatch of an older template's figures
        stale = [lab for s, lab in zip(sessions, labels) if s.kind == "template" and not template.is_code_of(s.source_hash)]
        if stale:
            notes.append(f"the template changed since {', '.join(stale)} was tuned "
                         f"(source hash {template.source_hash()} now); re-tune to be sure the configs still win")
    pending = sum(t.measurement.resources_pending for _p, trials in by_problem.values()
                  for t in trials)
    if pending:  # the figures the ranges rest on may move, and the choice with them
        notes.append(f"{pending} trial{'s' if pending != 1 else ''} of these sessions hold resource figures estimated "
                     "while their compiles were pending: refine them (tune --resume --out SESSION --refine-only) "
                     "and export again before relying on the ranges")
    for session, label in zip(sessions, labels):
        progress = sweep_progress(session)
        if progress is not None and progress.unfinished:  # ranges drawn over the sizes a killed sweep reached
            going = locked_by_other(label)  # still running: its lock would refuse the --resume
            finish = ("a run of it is going: export again when it ends" if going
                      else f"tune --out {shlex.quote(str(label))} --resume finishes it, then export again")
            notes.append(f"{label}: the sweep is unfinished, {progress.text()}; these ranges rest on the sizes "
                         f"measured ({finish})")
    notes += _refused_sizes(first.space, fixed, name, integer, ranges, [configs[c] for c in picked])
    if method == "greedy":
        notes.append(f"the exact set cover took over {node_limit} search nodes; this greedy cover uses at most "
                     f"H({len(sizes)}) = {_harmonic(len(sizes)):.2f} times the fewest configs")
    return DispatchPlan(
        kernel=first.kernel, parameter=name, integer=integer, configs=[configs[c] for c in picked], ranges=ranges,
        tolerance=tolerance, method=method, fixed=fixed, devices=devices, sessions=labels,
        provenance=export.provenance, export=export, notes=notes, left_out=len(left_out),
    )


#: Ranges whose refused sizes get a note of their own; the others are counted in one more.
MAX_REFUSED_NOTES = 3
#: Sizes of a range checked one by one when it holds at most this many integers; a wider range is
#: checked at its ends, around each measured size and at a spread of sizes between.
ALL_SIZES_CHECKED = 512


def _probe_sizes(lower: float | int | None, upper: float | int | None, measured: Sequence[float | int],
                 integer: bool) -> list[float | int]:
    """Sizes of one range (``lower <= size < upper``; None: unbounded) to check a config's
    restrictions at: every one of a narrow integer range; else its ends, the neighbours of each
    measured size in it (a divisibility rule fails next to a size it holds at) and a geometric
    spread, each with its successor. An unbounded end stops at half the smallest (twice the
    largest) measured size, and at 1 for positive sizes: where the guess of the nearest range is
    made."""
    low = lower if lower is not None else (min(measured) / 2 if min(measured) > 0 else min(measured) - 1)
    high = upper if upper is not None else (max(measured) * 2 if max(measured) > 0 else max(measured) + 1)
    if integer:
        floor = 1 if min(measured) >= 1 else 0 if min(measured) >= 0 else math.ceil(low)  # (no size below 0 if none was)
        a, b = max(math.ceil(low), floor), math.ceil(high) - 1
        if b < a:
            return []
        if b - a < ALL_SIZES_CHECKED:
            return list(range(a, b + 1))
        picked = set(range(a, a + 16)) | set(range(b - 15, b + 1))
        for m in measured:
            picked |= {int(m) + d for d in range(-3, 4)}
        if a > 0:
            picked |= {v + d for v in (round(a * (b / a) ** (k / 127)) for k in range(128)) for d in (0, 1)}
        else:
            picked |= {v + d for v in (round(a + (b - a) * k / 127) for k in range(128)) for d in (0, 1)}
        return sorted(v for v in picked if a <= v <= b)
    near = [m * (1 + d) for m in measured for d in (-1e-6, 0.0, 1e-6)]  # each measured size and beside it
    points = {*near, low, high - (high - low) * 1e-9, *(low + (high - low) * k / 64 for k in range(64))}
    return sorted(v for v in points if low <= v < high and math.isfinite(v))


def _refused_sizes(space: Any, fixed: dict[str, Any], name: str, integer: bool, ranges: Sequence[Range],
                   configs: Sequence[Config]) -> list[str]:
    """Notes for each range whose config the template's restrictions rule out at some size the
    range serves (``cols % vector_width == 0`` between two measured sizes that hold it): the
    dispatch returns that config there all the same, and the kernel built with it computes wrong
    results or fails. The sizes are checked as :func:`_probe_sizes` picks them."""
    if space is None or getattr(space, "is_explicit", True):
        return []
    measured = [f.size for r in ranges for f in r.sizes]
    spaces: dict[float | int, Any] = {}
    notes: list[str] = []
    for index, r in enumerate(ranges):
        lower = ranges[index - 1].upper if index > 0 else None
        config = configs[r.config]
        refused: list[tuple[float | int, str]] = []
        probes = _probe_sizes(lower, r.upper, measured, integer)
        for size in probes:
            if size not in spaces:
                try:
                    spaces[size] = space.with_params({**fixed, name: size})
                except WorkbenchError:  # a size no problem parameter can be (past 64 bits): never called with
                    spaces[size] = None
            if spaces[size] is None:
                continue
            why = spaces[size].violated(config)
            if why is not None:
                refused.append((size, why))
        if refused:
            shown = ", ".join(_number_text(size, integer) for size, _why in refused[:6])
            more = f" and {len(refused) - 6} more" if len(refused) > 6 else ""
            rules = list(dict.fromkeys(why for _size, why in refused))
            notes.append(f"config {r.config} is not valid at every size its range serves: the template's "
                         f"restriction{'s' if len(rules) > 1 else ''} {' and '.join(repr(rule) for rule in rules)} "
                         f"rule{'' if len(rules) > 1 else 's'} it out at {name} = {shown}{more} "
                         f"(of {len(probes)} sizes checked in that range); the dispatch returns it there all the same, "
                         "so check a size against the restrictions before launching, or tune that size too")
    if len(notes) > MAX_REFUSED_NOTES:  # (a sweep of powers of two under a divisibility rule: one per range)
        others = len(notes) - MAX_REFUSED_NOTES
        notes = notes[:MAX_REFUSED_NOTES] + [f"{others} more range{'s' if others != 1 else ''} hand out a config "
                                             "the template's restrictions rule out at some of their sizes (as above)"]
    return notes


def _harmonic(k: int) -> float:
    return sum(1.0 / i for i in range(1, k + 1))


def _boundary(a: float | int, b: float | int, integer: bool) -> float | int:
    """The first size that takes b's range (a < b): the geometric mean of a and b (arithmetic if
    not positive), always in (a, b] and finite. Integers are worked out exactly, since a float
    rounds sizes near 2**63 up past the largest int64 (sending the largest size to a's config); a
    float product of two large sizes (1e200 and 1e300) overflowed to a bound written as ``inf``,
    which neither C nor Python reads."""
    if integer:
        low, high = int(a), int(b)
        if low > 0:
            mid = math.isqrt(low * high)
            mid += mid * mid < low * high  # the ceiling of the square root
        else:
            mid = -((-(low + high)) // 2)
        return min(max(mid, low + 1), high)
    low_f, high_f = float(a), float(b)
    middle = math.sqrt(low_f) * math.sqrt(high_f) if low_f > 0 else low_f / 2 + high_f / 2
    return middle if low_f < middle <= high_f and math.isfinite(middle) else high_f


def set_cover(n: int, sets: Sequence[tuple[str, int, float]], node_limit: int = EXACT_NODE_LIMIT,
              value: Callable[[list[str]], float] | None = None) -> tuple[list[str], str]:
    """The fewest keys whose masks cover bits 0..n-1, and "exact" or "greedy".

    ``sets``: (key, mask, weight); among smallest covers the highest ``value(keys)`` wins, by
    default the total weight. Raises WorkbenchError when some bit is in no mask.
    """
    full = (1 << n) - 1
    union = 0
    for _, mask, _w in sets:
        union |= mask
    if union != full:
        missing = next(i for i in range(n) if not union >> i & 1)
        raise WorkbenchError(f"size {missing + 1} of {n} has no config within the tolerance")  # cannot happen: its best covers it
    # maximal distinct masks find the smallest size; every set competes in the tie-break
    by_mask: dict[int, tuple[str, int, float]] = {}
    for item in sets:
        held = by_mask.get(item[1])
        if held is None or item[2] > held[2]:
            by_mask[item[1]] = item
    masks = sorted(by_mask, key=lambda m: -bin(m).count("1"))
    maximal: list[int] = []
    for m in masks:  # widest first: a mask inside a kept one is dominated
        if not any(o & m == m for o in maximal):
            maximal.append(m)
    widest = bin(maximal[0]).count("1")
    cover_max = [[m for m in maximal if m >> bit & 1] for bit in range(n)]
    nodes = [0]

    def smallest(covered: int, path: list[int], limit: int) -> list[int] | None:
        nodes[0] += 1
        if covered == full:
            return path
        left = n - bin(covered).count("1")
        if len(path) + -(-left // widest) > limit or nodes[0] > node_limit:  # cannot finish within the limit
            return None
        bit = min((b for b in range(n) if not covered >> b & 1), key=lambda b: len(cover_max[b]))
        for m in cover_max[bit]:
            found = smallest(covered | m, [*path, m], limit)
            if found is not None:
                return found
        return None

    found: list[int] | None = None
    for limit in range(1, n + 1):
        found = smallest(0, [], limit)
        if found is not None or nodes[0] > node_limit:
            break
    if found is None:
        return _greedy(n, sets), "greedy"
    size = len(found)

    # the tie-break: every set competes (a dominated mask may hold the better fractions)
    best: tuple[float, list[str]] | None = None
    nodes[0] = 0
    covering = [[item for item in sets if item[1] >> bit & 1] for bit in range(n)]

    def enumerate_covers(covered: int, chosen: list[tuple[str, int, float]]) -> None:
        nonlocal best
        nodes[0] += 1
        if covered == full:
            keys = [k for k, _, _ in chosen]
            weight = value(keys) if value is not None else sum(w for _, _, w in chosen)
            if best is None or weight > best[0] + 1e-12:
                best = (weight, keys)
            return
        left = n - bin(covered).count("1")
        if len(chosen) + -(-left // widest) > size or nodes[0] > node_limit:
            return
        bit = min((b for b in range(n) if not covered >> b & 1), key=lambda b: (len(covering[b]), b))
        for item in covering[bit]:
            enumerate_covers(covered | item[1], [*chosen, item])

    enumerate_covers(0, [])
    if best is None:  # the tie-break was cut short: the smallest cover found first is still the fewest
        return [by_mask[m][0] for m in found], "exact"
    return best[1], "exact"


def _greedy(n: int, sets: Sequence[tuple[str, int, float]]) -> list[str]:
    full = (1 << n) - 1
    covered = 0
    chosen: list[str] = []
    while covered != full:
        key, mask, _w = max(sets, key=lambda s: (bin(s[1] & ~covered).count("1"), s[2]))
        chosen.append(key)
        covered |= mask
    return chosen


def _assign(n: int, chosen: list[str], covers: dict[str, int], fractions: list[dict[str, float]]) -> list[str]:
    """Each size's config among ``chosen``: fewest changes along the sizes, then highest fraction (DP)."""
    inf = (math.inf, 0.0)
    # state: config at size i -> (changes so far, -total fraction), back pointer
    cost: list[dict[str, tuple[float, float]]] = []
    back: list[dict[str, str | None]] = []
    for i in range(n):
        here: dict[str, tuple[float, float]] = {}
        ptr: dict[str, str | None] = {}
        for cid in chosen:
            if not covers[cid] >> i & 1:
                continue
            gain = -fractions[i][cid]
            if i == 0:
                here[cid], ptr[cid] = (0.0, gain), None
                continue
            options = [((c[0] + (prev != cid), c[1] + gain), prev) for prev, c in cost[-1].items()]
            here[cid], ptr[cid] = min(options, key=lambda o: (o[0], chosen.index(o[1] or cid)), default=(inf, None))
        cost.append(here)
        back.append(ptr)
    last = min(cost[-1], key=lambda c: (cost[-1][c], chosen.index(c)))
    out = [last]
    for i in range(n - 1, 0, -1):
        prev = back[i][out[-1]]
        assert prev is not None
        out.append(prev)
    return out[::-1]


# ------------------------------------------------------------------------------------------------
# Code
# ------------------------------------------------------------------------------------------------


def _identifier(text: str) -> str:
    out = "".join(c.lower() if c.isascii() and c.isalnum() else "_" for c in text).strip("_")
    out = "_".join(part for part in out.split("_") if part)
    return ("k_" + out if out[:1].isdigit() else out) or "kernel"


def _number_text(value: float | int, integer: bool) -> str:
    return str(int(value)) if integer else repr(float(value))


def _range_text(plan: DispatchPlan, index: int) -> str:
    """``1024 <= n < 4096`` for range ``index`` (as the decision list reads it)."""
    name = comment_line(plan.parameter)
    lower = plan.ranges[index - 1].upper if index > 0 else None
    upper = plan.ranges[index].upper
    if lower is not None and upper is not None:
        return f"{_number_text(lower, plan.integer)} <= {name} < {_number_text(upper, plan.integer)}"
    if upper is not None:
        return f"{name} < {_number_text(upper, plan.integer)}"
    if lower is not None:
        return f"{name} >= {_number_text(lower, plan.integer)}"
    return f"every {name}"


def _figure_text(plan: DispatchPlan, figure: SizeFigure) -> str:
    size = _number_text(figure.size, plan.integer)
    if figure.fraction >= 1 - 1e-12:
        return f"{comment_line(plan.parameter)}={size}: {figure.latency_ms:.4g} ms, its optimum"
    return (f"{comment_line(plan.parameter)}={size}: {figure.latency_ms:.4g} ms, {100 * figure.fraction:.1f}% of the "
            f"optimum {figure.best_latency_ms:.4g} ms (config {comment_line(figure.best_config_id)})")


def _comments(plan: DispatchPlan, prefix: str) -> list[str]:
    k = len(plan.figures)
    bounds, weights = objective_comment(plan.export)  # what "best" meant at each size, as the header export says
    lines = [
        f"{prefix}{comment_line(plan.kernel)}: per-size dispatch {MARKER}",
        f"{prefix}sessions: {comment_line('; '.join(plan.sessions))}",
        f"{prefix}device: {comment_line(', '.join(plan.devices))}"
        + provenance_label(plan.provenance),
        f"{prefix}size parameter: {comment_line(plan.parameter)}; other problem parameters: {comment_line(plan.fixed or 'none')}",
        f"{prefix}tolerance {100 * plan.tolerance:g}%: every measured size"
        + (" with a feasible config" if plan.left_out else "") + " runs a config whose score is at least "
        f"1/(1+{plan.tolerance:g}) of that size's best (latency alone: at most {100 * plan.tolerance:g}% slower)",
        # after the lines an export is recognised by (so files written before these lines still are)
        f"{prefix}constraints: {comment_line(bounds)}",
        f"{prefix}score weights: {comment_line(weights)}",
        f"{prefix}{len(plan.configs)} config{'' if len(plan.configs) == 1 else 's'} for {k} "
        + (f"of {k + plan.left_out} " if plan.left_out else "") + "measured sizes: "
        + ("the fewest possible (exact set cover)" if plan.method == "exact" else
           f"greedy set cover (at most {_harmonic(k):.2f} times the fewest)"),
        f"{prefix}between measured sizes a < b with different configs the boundary is the geometric mean sqrt(a*b) "
        "(their arithmetic mean (a+b)/2 when either is not positive); below the smallest and above the largest "
        "measured size the nearest range's config is a guess",
    ]
    lines += [f"{prefix}note: {comment_line(n)}" for n in plan.notes]
    for index, config in enumerate(plan.configs):
        lines.append(f"{prefix}config {index}: {comment_line(config.id)} {comment_line(config.to_dict())}")
    return lines


#: The sizes a C ``long long`` holds: the header's size parameter and its range literals.
_LONG_LONG = (-(2**63), 2**63 - 1)


def dispatch_c(plan: DispatchPlan) -> str:
    """The C/CUDA header: ``<kernel>_dispatch(size)`` returns the config index; per-config slot macros.

    An integer size outside ``long long`` is refused: its literal is not a C constant of that type
    (compilers warn, or refuse with ``-pedantic-errors``) and the function could not be called with
    it. The Python variant takes any integer."""
    if plan.integer and (outside := [f.size for f in plan.figures
                                      if not _LONG_LONG[0] <= int(f.size) <= _LONG_LONG[1]]):
        raise WorkbenchError(
            f"{comment_line(plan.parameter)} = {int(outside[0])} is outside a C long long "
            f"({_LONG_LONG[0]} to {_LONG_LONG[1]}), which the header's size parameter is; "
            "export --format dispatch-py, which takes any integer")
    ident = _identifier(plan.kernel)
    macro = ident.upper()
    guard = include_guard("WORKBENCH_DISPATCH_", plan.kernel)  # unique per kernel name, as the tuned header's
    ctype = "long long" if plan.integer else "double"
    out = [f"#ifndef {guard}", f"#define {guard}", ""]
    out += _comments(plan, "// ")
    out += [
        "",
        f"#define WORKBENCH_DISPATCH_{macro}_CONFIGS {len(plan.configs)}",
        "",
        "#if defined(__CUDACC__) || defined(__CUDACC_RTC__)",
        f"#define WORKBENCH_DISPATCH_{macro}_FN __host__ __device__ static inline",
        "#else",
        f"#define WORKBENCH_DISPATCH_{macro}_FN static inline",
        "#endif",
        "",
        f"// the config index for size {comment_line(plan.parameter)}"
        + ("" if plan.integer else "; -1 for a NaN size, which no range holds"),
        f"WORKBENCH_DISPATCH_{macro}_FN int workbench_dispatch_{ident}({ctype} size)",
        "{",
    ]
    if not plan.integer:  # every comparison with NaN is false: it would get the last range's config
        out.append("    if (size != size) return -1;")
    elif len(plan.ranges) == 1:  # one config for every size: the size is not read (-Wunused-parameter)
        out.append("    (void)size;")
    for index, r in enumerate(plan.ranges):
        out.append(f"    // range {index + 1}: {_range_text(plan, index)} -> config {r.config}; measured:")
        out += [f"    //   {_figure_text(plan, f)}" for f in r.sizes]
        if r.upper is None:
            out.append(f"    return {r.config};")
        else:
            literal = f"{int(r.upper)}LL" if plan.integer else repr(float(r.upper))
            out.append(f"    if (size < {literal}) return {r.config};")
    if plan.ranges[-1].upper is not None:  # cannot happen (the last range is open), kept for the compiler
        out.append(f"    return {plan.ranges[-1].config};")
    out += ["}", ""]
    selector = f"WORKBENCH_DISPATCH_{macro}_CONFIG"
    out.append(f"// compile variant k with -D{selector}=k to get its slot macros")
    template = plan.export.template
    if template is not None and template.compile_options:  # measured so: every variant is built the same way
        out.append(f"// and with the options the template was tuned with: {comment_line(' '.join(template.compile_options))}")
    if template is not None:  # every variant defines the same extern "C" entry: one program links one
        entry = comment_line(template.entry)
        out.append(f"// each variant's kernel is named {entry}; to link several into one program, compile variant k")
        out.append(f"// with -D{entry}={entry}_v<k> too, and launch {entry}_v<k> for the config index k above")
    out.append(f"#if defined({selector})")
    for index, config in enumerate(plan.configs):
        out.append(f"#{'if' if index == 0 else 'elif'} {selector} == {index}")
        # checked against the template's space at a size the config serves (restrictions may read the size)
        size = next(f.size for f in plan.figures if f.config == index)
        at = dataclasses.replace(plan.export, problem={**plan.fixed, plan.parameter: size})
        try:
            out += slot_defines(at, config)
        except WorkbenchError as exc:
            fits = template is None or all(slot.name in config and slot.accepts(config[slot.name])
                                           for slot in template.slots)
            tuned_on = plan.export.source_hash
            changed = bool(template is not None and tuned_on and not template.is_code_of(tuned_on))
            if not fits or changed:  # (a restriction edited since, as well as a slot's values)
                # a slot's values edited since the sessions were tuned: the config is what no longer
                # fits, whatever the size (it was blamed on the size)
                raise WorkbenchError(f"{', '.join(plan.sessions)}: {exc}; the template changed since the sessions "
                                     "were tuned") from None
            # a size a hand-edited file holds that the template never takes
            raise WorkbenchError(f"{', '.join(plan.sessions)}: trials measured at {plan.parameter} = {size}, a size the "
                                 f"template does not take ({exc})") from None
        out += _shared_memory_opt_in(plan, index, config)
    out.append("#else")
    out.append(f'#error "{selector} names no exported config"')
    out.append("#endif")
    if template is not None:
        out += _problem_block(plan, template)
    out.append(f"#endif  // {selector}")
    out += ["", f"#endif  // {guard}", ""]
    return "\n".join(out)


def _shared_memory_opt_in(plan: DispatchPlan, index: int, config: Config) -> list[str]:
    """The call a build of variant ``index`` must make before launching it, when its dynamic shared
    memory at a size it serves (the most of them) is over the 48 KiB a launch gets by default, as
    the single-config header says it; none where it cannot be computed (a template edited since:
    the slot macros above say so)."""
    template = plan.export.template
    if template is None:
        return []
    most = 0
    for figure in plan.figures:
        if figure.config != index:
            continue
        at = dataclasses.replace(plan.export, problem={**plan.fixed, plan.parameter: figure.size})
        try:
            most = max(most, int(launch_geometry(at, config)["dynamic_smem_bytes"]))
        except Exception:  # noqa: BLE001 - an expression of an edited template: no note, not a traceback
            return []
    if most <= DEFAULT_SHARED_PER_LAUNCH:
        return []
    return [f"// {most} bytes of dynamic shared memory (at the most) is over the 48 KiB a launch gets by default: "
            f"call cudaFuncSetAttribute({comment_line(template.entry)}, cudaFuncAttributeMaxDynamicSharedMemorySize, "
            f"{most}) once before launching"]


def _problem_block(plan: DispatchPlan, template: Any) -> list[str]:
    """A variant's problem macros: those that are the same at every measured size, and a stop
    naming each one a build must give, the swept size first. The template reads its problem at
    compile time (``PROBLEM_ROWS`` in its code), so a variant serves the sizes of its range one
    build each; without them the documented build of a variant did not compile."""
    resolved = [template.resolve_problem({**plan.fixed, plan.parameter: f.size}) for f in plan.figures]
    names = list(resolved[0])
    fixed = [n for n in names if n != plan.parameter and all(r.get(n) == resolved[0][n] for r in resolved)]
    per_build = [plan.parameter] + [n for n in names if n != plan.parameter and n not in fixed]
    lines = ["// the template reads its problem at compile time: build a variant once for each size it serves"]
    lines += [f"#define PROBLEM_{name.upper()} {c_literal(resolved[0][name], name)}" for name in fixed]
    for name in per_build:
        macro = f"PROBLEM_{name.upper()}"
        why = "the size this build serves" if name == plan.parameter else f"its value at that size ({comment_line(name)})"
        lines += [f"#ifndef {macro}", f'#error "define {macro}: {why}, e.g. -D{macro}=..."', "#endif"]
    return lines


def dispatch_py(plan: DispatchPlan) -> str:
    """The Python variant: the same ranges as data, ``select(size)`` and ``config_for(size)``."""
    doc = "\n".join(_comments(plan, "")).replace("\\", "/").replace('"""', "'''")
    ranges = [(None if r.upper is None else (int(r.upper) if plan.integer else float(r.upper)), r.config)
              for r in plan.ranges]
    lines = [
        f"# {comment_line(plan.kernel)}: per-size dispatch {MARKER}",
        '"""Pick a tuned config by problem size (the decision list of the C header, as data).',
        "",
        doc,
        '"""',
        "",
        "import decimal",
        "import numbers",
        "",
        f"KERNEL = {plan.kernel!r}",
        f"SIZE_PARAMETER = {plan.parameter!r}",
        f"TOLERANCE = {plan.tolerance!r}",
        f"CONFIGS = {[c.to_dict() for c in plan.configs]!r}",
        f"CONFIG_IDS = {[c.id for c in plan.configs]!r}",
        "# the options the template was tuned with: build every variant with them (measured so)",
        f"COMPILE_OPTIONS = {list(plan.export.template.compile_options) if plan.export.template is not None else []!r}",
        "# (upper bound, exclusive; None: no bound) -> config index, tried in order",
        f"RANGES = {ranges!r}",
        "",
        "",
        "def select(size):",
        '    """The index into CONFIGS for ``size``."""',
        "    if isinstance(size, bool) or not isinstance(size, (numbers.Real, decimal.Decimal)):  # '4096', None",
        '        raise TypeError(f"size must be a number, got {size!r}")',
        "    # NaN compares false with every bound and would get the last range (a Decimal's signalling NaN",
        "    # raises on any comparison: asked first)",
        "    if isinstance(size, decimal.Decimal) and size.is_nan() or size != size:",
        '        raise ValueError("size is NaN: no range holds it")',
        "    for upper, index in RANGES:",
        "        if upper is None or size < upper:",
        "            return index",
        "    return RANGES[-1][1]",
        "",
        "",
        "def config_for(size):",
        '    """The slot values to launch with at ``size`` (a copy)."""',
        "    return dict(CONFIGS[select(size)])",
        "",
    ]
    return "\n".join(lines)


RENDERERS: dict[str, Callable[[DispatchPlan], str]] = {"dispatch": dispatch_c, "dispatch-py": dispatch_py}


def render_dispatch(
    sessions: Sequence[Session],
    fmt: str,
    tolerance: float = DEFAULT_TOLERANCE,
    constraints: Constraints | None = None,
    weights: Weights | None = None,
    *,
    parameter: str | None = None,
    sources: Sequence[str] | None = None,
    kernel_dirs: Sequence[str] = (),
) -> tuple[DispatchPlan, str]:
    """The plan and the dispatch source, written nowhere (for a pipe; :func:`export_dispatch` writes a file)."""
    if fmt not in RENDERERS:
        raise WorkbenchError(f"unknown dispatch format {fmt!r}; choose one of: {', '.join(DISPATCH_FORMATS)}")
    plan = plan_dispatch(sessions, tolerance, constraints, weights, parameter=parameter, sources=sources,
                         kernel_dirs=kernel_dirs)
    return plan, seal_text(RENDERERS[fmt](plan), "//" if fmt == "dispatch" else "#")


def export_dispatch(
    sessions: Sequence[Session],
    fmt: str,
    out: str | Path,
    tolerance: float = DEFAULT_TOLERANCE,
    constraints: Constraints | None = None,
    weights: Weights | None = None,
    *,
    parameter: str | None = None,
    sources: Sequence[str] | None = None,
    check_output: Callable[[Path], Any] | None = None,
    kernel_dirs: Sequence[str] = (),
    force: bool = False,
) -> DispatchPlan:
    """Plan, render and write atomically (nothing is written when it refuses; ``check_output``, and
    without it the rule of ``force``, as in :func:`workbench.core.io.export.export_sessions`)."""
    path = Path(out)
    if not path.parent.is_dir():
        raise WorkbenchError(f"--out {path}: folder {path.parent} does not exist")
    plan, text = render_dispatch(sessions, fmt, tolerance, constraints, weights, parameter=parameter,
                                 sources=sources, kernel_dirs=kernel_dirs)
    (check_output or replace_rule(force, sources or ()))(path)
    try:
        atomic_write(path, lambda handle: handle.write(text))
    except OSError as exc:  # named by the file asked for, not the temporary one, as the other exports
        raise write_error(f"{path}: cannot write ({exc.strerror or exc})", exc) from None
    return plan


__all__ = [
    "DEFAULT_TOLERANCE",
    "DISPATCH_FORMATS",
    "DispatchPlan",
    "Range",
    "SizeFigure",
    "dispatch_c",
    "dispatch_py",
    "export_dispatch",
    "plan_dispatch",
    "render_dispatch",
    "set_cover",
]
