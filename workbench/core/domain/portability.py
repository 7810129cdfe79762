"""How well one GPU's tuned config serves another: the portability report and the max-min pick.

A config tuned on one GPU is often shipped to others. For sessions of one kernel and space on
several devices (measured, replayed, imported from Kernel Tuner, or simulated for a GPU the user
does not own) this module answers two questions from the recorded trials:

- For each device's best config, what *fraction of every other device's optimum* does it reach
  there? Fraction of optimum = the config's score / the device's best score under the objective in
  force (with the default objective, latency alone, that is optimum latency / the config's latency).
  A config that failed on a device scores 0 there, one that violates a constraint too; one that was
  never measured there is *predicted* when the caller passes a predictor for that device (the
  simulator's latency of the device's best config / its latency of this config, labelled
  ``predicted``; above 100% when the model expects it to beat everything measured there), else it
  is ``missing``.
- Which single config has the best *worst case* across the devices (max over configs of the min
  over devices of its fraction)? That is the config to ship when the GPU is unknown at build time;
  a mean (Kernel Tuner's portable pick) can hide a device where the config is poor. Ties go to the
  higher mean, then to the first device's evaluation order. Only configs with a known fraction on
  every device compete, and a worst case of 0 (the config fails somewhere) is never a pick.

Pure functions of sessions and an objective: no Qt, no backends (predictors come from the caller;
``workbench.runner.portability`` builds them from the simulator).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from workbench.core.errors import WorkbenchError, counted, printable, quoted
from workbench.core.domain.measurement import LATENCY, Trial
from workbench.core.domain.objective import Constraints, Weights, rank
from workbench.core.domain.records import Provenance, least_measured, provenance, provenance_tag
from workbench.core.domain.session import MAX_NAME_CHARS, Session, problem_key
from workbench.core.domain.sizes import shared_size_hint
from workbench.core.domain.space import Config, RecordedSpace

#: A predictor of one device's latency (ms) for a config; ``inf`` or NaN when it expects a failure.
Predictor = Callable[[Config], float]

MEASURED = "measured"
#: A simulated GPU's own run: the model's figure for a config that run tried (not a measurement).
SIMULATED = "simulated"
PREDICTED = "predicted"
FAILED = "failed"
INFEASIBLE = "infeasible"
MISSING = "missing"


@dataclass(frozen=True)
class Cell:
    """One config on one device: its fraction of that device's optimum, and where it comes from."""

    fraction: float | None  # None when missing
    source: str  # MEASURED, SIMULATED, PREDICTED, FAILED, INFEASIBLE or MISSING

    def to_dict(self) -> dict[str, Any]:
        return {"fraction": _finite(self.fraction), "source": self.source}

    def text(self) -> str:
        """``87.3%``, ``87.3% (predicted)``, ``failed``, ``infeasible``, ``-``."""
        if self.fraction is None:
            return "-"
        if self.source in (FAILED, INFEASIBLE):
            return self.source
        mark = " (predicted)" if self.source == PREDICTED else ""
        return f"{100 * self.fraction:.1f}%{mark}"


@dataclass(frozen=True)
class DeviceBest:
    """A device's own best config under the objective, and its measurement."""

    device: str
    session: str
    config: Config
    latency_ms: float
    score: float
    trials: int  # trials measured on the device (all statuses)


@dataclass(frozen=True)
class PortablePick:
    """The config with the best worst-case fraction of optimum across every device."""

    config: Config
    worst: float
    mean: float
    worst_device: str
    cells: dict[str, Cell]  # device -> cell
    candidates: int  # configs known to work on every device (a fraction above 0 everywhere)
    #: Of ``candidates``, those known to work somewhere only by a simulated GPU's prediction.
    candidates_predicted: int = 0

    def candidates_text(self) -> str:
        """``28 configs: 2 worked on every GPU, 26 predicted on some``, or ``4 configs worked on
        every GPU``: the prediction of a GPU that never ran a config is no evidence that it works there."""
        if not self.candidates_predicted:
            return f"{counted(self.candidates, 'config')} worked on every GPU"
        ran = self.candidates - self.candidates_predicted
        return f"{self.candidates} configs: {ran} worked on every GPU, {self.candidates_predicted} predicted on some"

    @property
    def predicted(self) -> bool:
        return any(c.source == PREDICTED for c in self.cells.values())


@dataclass
class PortabilityReport:
    """Every device's best config evaluated on every device, plus the max-min pick."""

    kernel: str
    problem: dict[str, Any]
    devices: list[str]
    bests: list[DeviceBest]
    matrix: list[list[Cell]]  # matrix[i][j]: device i's best config on device j
    portable: PortablePick | None
    simulated: list[str] = field(default_factory=list)  # devices whose timings are simulated
    #: Where each device's timings come from, for the devices not measured by this workbench
    #: (simulated, replayed, recorded by another tool): every line naming the device says so.
    provenance: dict[str, Provenance] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    objective: str = ""

    def kind_of(self, device: str) -> Provenance:
        """Where ``device``'s timings come from (a device of neither list: measured)."""
        return self.provenance.get(device, "simulated" if device in self.simulated else "measured")

    def to_dict(self) -> dict[str, Any]:
        """The ``show --portability --json`` object (a contract: see docs/cli.md)."""
        return {
            "kernel": self.kernel,
            "problem": dict(self.problem),
            "objective": self.objective,
            "devices": list(self.devices),
            "simulated": list(self.simulated),
            "provenance": dict(self.provenance),  # simulated, replayed or recorded; a device not named: measured
            "bests": [
                {
                    "device": b.device,
                    "session": b.session,
                    "config": b.config.to_dict(),
                    "config_id": b.config.id,
                    "latency_ms": _finite(b.latency_ms),
                    "trials": b.trials,
                    "on": {d: self.matrix[i][j].to_dict() for j, d in enumerate(self.devices)},
                    "worst": _finite(_worst(self.matrix[i])),
                }
                for i, b in enumerate(self.bests)
            ],
            "portable": None if self.portable is None else {
                "config": self.portable.config.to_dict(),
                "config_id": self.portable.config.id,
                "worst": _finite(self.portable.worst),
                "worst_device": self.portable.worst_device,
                "mean": _finite(self.portable.mean),
                "predicted": self.portable.predicted,
                "candidates": self.portable.candidates,
                "candidates_predicted": self.portable.candidates_predicted,
                "on": {d: c.to_dict() for d, c in self.portable.cells.items()},
            },
            "notes": list(self.notes),
        }


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _worst(cells: Sequence[Cell]) -> float | None:
    known = [c.fraction for c in cells if c.fraction is not None]
    return min(known) if len(known) == len(cells) and known else None


# ------------------------------------------------------------------------------------------------
# The max-min pick (shared with the multi-device header export)
# ------------------------------------------------------------------------------------------------


def max_min_pick(fractions: Sequence[Mapping[str, float]], order: Sequence[str]) -> tuple[str, float, float] | None:
    """The key with the best worst case over ``fractions`` (one mapping key -> fraction per device).

    Only keys present in every mapping compete. Ties on the worst case go to the higher mean, then
    to the earlier position in ``order`` (keys not in ``order`` come after, sorted). Returns
    (key, worst, mean), or None when no key is everywhere or every candidate has a worst case of 0.
    """
    if not fractions:
        return None
    common = set(fractions[0])
    for table in fractions[1:]:
        common &= set(table)
    if not common:
        return None
    position = {key: i for i, key in enumerate(order)}
    best: tuple[float, float, float, str] | None = None  # (worst, mean, -position, key)
    for key in sorted(common):
        values = [float(table[key]) for table in fractions]
        worst = min(values)
        if not worst > 0:
            continue
        mean = sum(values) / len(values)
        candidate = (worst, mean, -float(position.get(key, len(order))), key)
        if best is None or candidate[:3] > best[:3]:
            best = candidate
    if best is None:
        return None
    return best[3], best[0], best[1]


# ------------------------------------------------------------------------------------------------
# The report
# ------------------------------------------------------------------------------------------------


def device_of(session: Session, trial: Trial) -> str:
    """The device a trial ran on: the worker's own report, else the session's device. A report
    no device name could be is shown as one: its control characters escaped and past a name's
    200 characters cut, with a digest of the whole kept, so two reports stay two devices (a
    file's own text went raw to the terminal and into megabyte-long macro names of an export)."""
    named = trial.measurement.details.get("device") if trial.measurement.details else None
    if not isinstance(named, str) or not named:
        return str(session.device.get("name") or "unknown device")
    if named.isprintable() and len(named) <= MAX_NAME_CHARS:
        return named
    shown = printable(named)
    if len(shown) <= MAX_NAME_CHARS:
        return shown
    digest = hashlib.sha256(named.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{shown[:MAX_NAME_CHARS - 10]}…{digest}"


def trials_at_problem(session: Session, at: Mapping[str, Any] | None = None) -> list[Trial]:
    """The session's trials at its own problem with ``at``'s values over it (size sweeps keep
    other sizes' trials too)."""
    return list(session.trials_at(None if not at else {**session.problem, **at}))


def _problem_of(session: Session, at: Mapping[str, Any] | None) -> dict[str, Any]:
    return {**session.problem, **(at or {})}


def check_one_kernel(sessions: Sequence[Session], labels: Sequence[str], purpose: str) -> None:
    """One clear line when the sessions are not one kernel over one space's slots: another kernel,
    a python benchmark beside a template, two benchmarks' other code under one name (a benchmark's
    ``NAME`` is the person's to give), or other slots. ``purpose`` ends the line (``portability
    compares one kernel on several GPUs``). Every feature that pools sessions asks it: a dispatch
    pooled a session with a slot the other lacked into one header, and an export ranked two
    different benchmarks' trials as one device's."""
    first = sessions[0]
    names = {s.name for s in first.space.slots} if first.space is not None else set()
    for session, label in zip(sessions[1:], labels[1:]):
        if session.kernel != first.kernel:
            raise WorkbenchError(f"{label}: kernel {session.kernel!r} differs from {labels[0]}'s {first.kernel!r}; "
                                 f"{purpose}")
        if {session.kind, first.kind} == {"python", "template"}:
            raise WorkbenchError(f"{label}: a {session.kind} session beside {labels[0]}'s {first.kind} one of the "
                                 f"same name; {purpose}")
        if other_benchmark(session, first):
            raise WorkbenchError(f"{label}: its benchmark is another file than {labels[0]}'s, of other code, "
                                 f"under the name {first.kernel!r}; {purpose}")
        other = {s.name for s in session.space.slots} if session.space is not None else set()
        if other != names:
            raise WorkbenchError(f"{label}: its slots ({', '.join(sorted(other)) or 'none'}) differ from "
                                 f"{labels[0]}'s ({', '.join(sorted(names)) or 'none'}); not the same space")


def other_benchmark(session: Session, first: Session) -> bool:
    """Whether two python benchmark sessions measured other code: other files whose code differs.
    One file whose hash differs may be the same code hashed by an earlier version (``tune --resume``
    takes such a session as the file's), or the file edited since; a hash not recorded says nothing."""
    if session.kind != "python" or first.kind != "python" or not session.source_hash or not first.source_hash:
        return False
    paths = [(s.backend.get("options") or {}).get("path") if isinstance(s.backend, dict) else None
             for s in (session, first)]
    return session.source_hash != first.source_hash and None not in paths and paths[0] != paths[1]


def check_compatible(sessions: Sequence[Session], labels: Sequence[str], at: Mapping[str, Any] | None = None) -> None:
    """One clear line when the sessions are not one kernel, one space and one problem (``at`` over each)."""
    first = sessions[0]
    unknown = sorted(set(at or {}) - set(first.problem))
    if unknown:
        known = ", ".join(sorted(first.problem)) or "none"
        raise WorkbenchError(template=f"{{at:{quoted(unknown[0])}}}: not a problem parameter of {quoted(labels[0])} "
                                      f"(these are: {quoted(known)})")
    check_one_kernel(sessions, labels, "portability compares one kernel on several GPUs")
    for session, label in zip(sessions[1:], labels[1:]):
        if _problem_of(session, at) != _problem_of(first, at):
            # sweeps started at different sizes may share others: one of those is picked with --at
            hint = shared_size_hint(first, session) if not at else ""
            raise WorkbenchError(template=quoted(f"{label}: problem {_problem_of(session, at)} differs from "
                                                 f"{labels[0]}'s {_problem_of(first, at)}; compare sessions of one "
                                                 "problem") + hint)



@dataclass
class _Device:
    name: str
    session: str
    trials: list[Trial]
    fractions: dict[str, float]  # config id -> fraction of optimum (feasible trials; best measurement)
    status: dict[str, str]  # config id -> FAILED / INFEASIBLE for configs without a feasible trial
    order: list[str]  # feasible config ids, evaluation order
    best: Trial | None
    best_score: float
    predictor: Predictor | None = None
    simulated: bool = False
    space: Any = None  # the space of the device's session at its own problem (None: not known)


def _device_table(name: str, session: str, trials: list[Trial], constraints: Constraints,
                  weights: Weights) -> _Device:
    ranking = rank(trials, constraints, weights)
    fractions: dict[str, float] = {}
    status: dict[str, str] = {}
    best = ranking.best
    best_score = float(ranking.score[best]) if best is not None else math.nan
    for row in ranking.order:  # best first: keep each config's best measurement
        cid = trials[row].config.id
        if cid not in fractions:
            fractions[cid] = float(ranking.score[row]) / best_score
    for trial in trials:
        cid = trial.config.id
        if cid in fractions or cid in status:
            continue
        status[cid] = INFEASIBLE if trial.ok else FAILED
    first: dict[str, int] = {}
    for trial in trials:
        first[trial.config.id] = min(first.get(trial.config.id, trial.index), trial.index)
    order = sorted(fractions, key=lambda cid: first[cid])
    return _Device(name, session, trials, fractions, status, order,
                   trials[best] if best is not None else None, best_score)


def _cell(device: _Device, config: Config) -> Cell:
    if config.id in device.fractions:
        return Cell(device.fractions[config.id], SIMULATED if device.simulated else MEASURED)
    if config.id in device.status:
        return Cell(0.0, device.status[config.id])
    if device.space is not None and config not in device.space:
        return Cell(None, MISSING)  # (not a config of that session's space: nothing to predict)
    if device.predictor is not None and device.best is not None:
        mine = device.predictor(config)
        theirs = device.predictor(device.best.config)
        if not (math.isfinite(mine) and mine > 0):
            return Cell(0.0, PREDICTED)
        if math.isfinite(theirs) and theirs > 0:
            return Cell(theirs / mine, PREDICTED)  # above 1: predicted to beat what was measured
    return Cell(None, MISSING)


def _kt_reading(session: Session) -> str | None:
    """How a session read from a Kernel Tuner cache got its latency: the reading its import recorded,
    "Kernel Tuner's time" for one imported before readings were recorded (its ok trials lack the
    ``kt_time_ms`` kept beside the median since), None for a session measured by the workbench."""
    if not session.device.get("recorded"):
        return None
    reading = session.device.get("kt_reading")
    if isinstance(reading, str):
        return reading
    if any(t.ok and "kt_time_ms" not in t.measurement.metrics for t in session.trials):
        return "Kernel Tuner's time"
    return None


def _mixed_readings(sessions: Sequence[Session], labels: Sequence[str]) -> str | None:
    """A note when recordings imported under different readings of their latency are compared
    (a mean against a median would read as a difference between the GPUs), else None."""
    readings: dict[str, list[str]] = {}
    for session, label in zip(sessions, labels):
        reading = _kt_reading(session)
        if reading is not None:
            readings.setdefault(reading, []).append(label)
    if len(readings) < 2:
        return None
    parts = "; ".join(f"{', '.join(names)}: {reading}" for reading, names in readings.items())
    return (f"the recordings' latencies were read under different rules ({parts}): import the older "
            "caches again so that every GPU's latency means the same")


class SessionUnanswered(WorkbenchError):
    """One session the report cannot use (no trials at the problem compared, or nothing feasible
    on its GPU under the objective); ``label`` names it, so a caller adding files can tell a file
    that breaks the report from an objective that does."""

    def __init__(self, label: str, *args: object, template: str | None = None) -> None:
        super().__init__(*args, template=template)
        self.label = label


def portability_report(
    sessions: Sequence[Session],
    sources: Sequence[str] | None = None,
    constraints: Constraints | None = None,
    weights: Weights | None = None,
    *,
    predictors: Mapping[str, Predictor] | None = None,
    at: Mapping[str, Any] | None = None,
) -> PortabilityReport:
    """Compare the sessions' devices (at least two) under one objective (default: the first session's).

    ``predictors`` (device name -> latency predictor) fill configs a device never measured;
    without one such a config is ``missing`` there. ``at`` (problem parameter -> value) compares
    the sessions at that size of their sweeps instead of their own problems. Raises WorkbenchError (one line) when the
    sessions are not one kernel, space and problem, when fewer than two devices remain, or when a
    device has nothing feasible.
    """
    if not sessions:
        raise WorkbenchError("portability needs sessions of one kernel on at least two GPUs")
    labels = [str(sources[i]) if sources and i < len(sources) else f"session {i + 1}" for i in range(len(sessions))]
    check_compatible(sessions, labels, at)
    first = sessions[0]
    constraints = first.constraints if constraints is None else constraints
    weights = first.weights if weights is None else weights
    predictors = dict(predictors or {})

    grouped: dict[str, tuple[str, list[Trial]]] = {}
    spaces: dict[str, Any] = {}  # device -> the space of its (first) session
    simulated: set[str] = set()
    origins: dict[str, Provenance] = {}
    for session, label in zip(sessions, labels):
        trials = trials_at_problem(session, at)
        if not trials:
            raise SessionUnanswered(label, template=f"{quoted(label)}: no trials at problem "
                                    f"{quoted(_problem_of(session, at))}; name a measured size with "
                                    "{at:NAME=VALUE} (show FILE lists them)")
        # the session's space is of its own problem: at another size of a sweep a restriction
        # that reads the size can make it another space, which the session cannot count
        own_problem = problem_key(_problem_of(session, at)) == problem_key(session.problem)
        kind = provenance(session.device)
        for trial in trials:  # (what is the session's is found once: per trial, it was half the report's time)
            device = device_of(session, trial)
            entry = grouped.setdefault(device, (label, []))
            entry[1].append(trial)
            if own_problem:
                spaces.setdefault(device, session.space)
            if session.device.get("simulated"):
                simulated.add(device)
            if kind != "measured":
                origins[device] = least_measured((origins.get(device, kind), kind))
    if len(grouped) < 2:
        names = ", ".join(sorted(grouped)) or "none"
        raise WorkbenchError(f"portability needs trials on at least two GPUs; these sessions have {names}")

    devices: list[_Device] = []
    for name, (label, trials) in grouped.items():  # the order the sessions were given
        table = _device_table(name, label, trials, constraints, weights)
        if table.best is None:
            summary = rank(trials, constraints, weights).summary()
            raise SessionUnanswered(label, f"{label}: nothing feasible on {name} ({summary})")
        table.predictor = predictors.get(name)
        table.simulated = name in simulated
        table.space = spaces.get(name)
        devices.append(table)

    bests = []
    matrix: list[list[Cell]] = []
    for d in devices:
        assert d.best is not None
        bests.append(DeviceBest(d.name, d.session, d.best.config, d.best.metric(LATENCY), d.best_score, len(d.trials)))
        matrix.append([_cell(other, d.best.config) for other in devices])

    portable = _portable(devices)
    notes = []
    unmeasured = sum(1 for row in matrix for c in row if c.source == MISSING)
    if unmeasured:
        cells = "1 cell is" if unmeasured == 1 else f"{unmeasured} cells are"
        notes.append(f"{cells} missing: the config was never measured there (a simulated device predicts "
                     "them; a session cannot: for a replay, compare the recordings themselves, imported with "
                     "import-kt, which hold every recorded config)")
    predicted = [c for row in matrix for c in row if c.source == PREDICTED]

    def shown_above(cell: Cell) -> bool:
        return cell.source == PREDICTED and cell.fraction is not None and round(cell.fraction * 100, 1) > 100.0

    # counted as shown (one decimal of a percent): 100.002% is written 100.0% and is not above; the
    # portable config's predicted cells, shown on their own line, count too (each pair once)
    above = len({(best.config.id, other.name) for best, row in zip(bests, matrix)
                 for other, cell in zip(devices, row) if shown_above(cell)}
                | ({(portable.config.id, name) for name, cell in portable.cells.items() if shown_above(cell)}
                   if portable is not None else set()))
    if predicted or (portable is not None and portable.predicted):
        # every cell of a simulated GPU is modelled; a predicted one is of a config its run never tried
        whose = "predictions" if simulated and len(simulated) == len(devices) else "the simulator's figures, not measurements"
        note = f"predicted cells are {whose} for configs that GPU's run did not try"
        if above:
            note += (f"; {above} shown above 100%: the model expects the config to beat the best its run found "
                     "there (the optimum is the best of that run, not of the space)")
        notes.append(note)
    if portable is not None and portable.predicted:
        guessed = ", ".join(name for name, cell in portable.cells.items() if cell.source == PREDICTED)
        notes.append(f"the portable config was never measured on {guessed} (predicted there); an export "
                     "chooses its portable config among configs measured on every device, so it can differ")
    sampled = _sampled_note(devices, spaces)
    if sampled:
        notes.append(sampled)
    if simulated:
        notes.append(f"simulated timings (a modelled GPU): {', '.join(sorted(simulated))}")
    mixed = _mixed_readings(sessions, labels)
    if mixed:
        notes.append(mixed)
    pending = {d.name: sum(t.measurement.resources_pending for t in d.trials) for d in devices}
    if any(pending.values()):  # the bests and the cells may move once the compiles are in
        counts = ", ".join(f"{n} on {name}" for name, n in pending.items() if n)
        notes.append(f"trials simulated with resources estimated while their compiles were pending ({counts}): "
                     "refine each such session (tune --resume --out SESSION --refine-only) before relying on the table")
    return PortabilityReport(
        kernel=first.kernel, problem=_problem_of(first, at), devices=[d.name for d in devices], bests=bests,
        matrix=matrix, portable=portable, simulated=sorted(simulated), provenance=origins, notes=notes,
        objective=objective_text(constraints, weights),
    )


#: Largest product of slot domains counted for the note below when the space's count is not known:
#: a report (the window's Portability tab too) never waits for a space that takes minutes to count.
COUNT_AT_MOST = 200_000


def _cheap_count(space: Any) -> int | None:
    """The number of valid configs of ``space`` when it is known or quick to find, else None: a
    recording's points, a count made before, or a product of domains of at most COUNT_AT_MOST."""
    if space is None:
        return None
    known = getattr(space, "known_count", None)
    if isinstance(known, int):
        return known
    if isinstance(space, RecordedSpace):
        return space.count()
    if math.prod(len(slot.values) for slot in space.slots) > COUNT_AT_MOST:
        return None
    try:
        return int(space.count())
    except (WorkbenchError, ArithmeticError, RecursionError):  # a space that cannot be counted: no note
        return None


def _sampled_note(devices: Sequence[_Device], spaces: Mapping[str, Any]) -> str:
    """Which GPUs' optima are only the best their sessions measured, of how many valid configs: a
    replay of 60 of 4,362 recorded configs called its best "the optimum", so every fraction on that
    GPU, and a worst case there, read higher than they are: upper bounds, said as exact figures."""
    parts = []
    for d in devices:
        total = _cheap_count(spaces.get(d.name))
        tried = len({trial.config.id for trial in d.trials})
        if total is not None and tried < total:
            parts.append(f"{d.name} {tried:,} of {total:,}")
    if not parts:
        return ""
    return (f"a GPU's optimum is the best config its session measured, not of every valid config ({'; '.join(parts)} "
            "configs measured): fractions on those GPUs, and a worst case there, are upper bounds")


def _portable(devices: list[_Device]) -> PortablePick | None:
    """The max-min pick over every config measured feasibly somewhere, predicted where possible."""
    order: list[str] = []
    configs: dict[str, Config] = {}
    for d in devices:
        for trial in d.trials:
            if trial.config.id in d.fractions and trial.config.id not in configs:
                configs[trial.config.id] = trial.config
                order.append(trial.config.id)
    cells = {cid: [_cell(d, config) for d in devices] for cid, config in configs.items()}
    fractions = [
        {cid: row[j].fraction for cid, row in cells.items() if row[j].fraction is not None}
        for j in range(len(devices))
    ]
    picked = max_min_pick([{k: float(v) for k, v in f.items() if v is not None} for f in fractions], order)
    if picked is None:
        return None
    cid, worst, mean = picked
    row = cells[cid]
    worst_device = min(range(len(devices)), key=lambda j: (row[j].fraction or 0.0, j))
    known = [r for r in cells.values() if all(c.fraction is not None and c.fraction > 0 for c in r)]
    candidates = len(known)
    predicted = sum(1 for r in known if any(c.source == PREDICTED for c in r))
    return PortablePick(configs[cid], worst, mean, devices[worst_device].name,
                        {d.name: row[j] for j, d in enumerate(devices)}, candidates, predicted)


def objective_text(constraints: Constraints, weights: Weights) -> str:
    """The objective in one line, as the report's ``score`` line shows it."""
    bounds = ", ".join(str(b) for b in constraints.bounds())
    active = ", ".join(f"{k}={v:g}" for k, v in weights.active().items())
    return f"weights {active or 'none'}" + (f"; constraints {bounds}" if bounds else "")


def format_report(report: PortabilityReport) -> list[str]:
    """The plain-text report: one row per device's best config, one column per device."""
    short = [f"[{i + 1}]" for i in range(len(report.devices))]
    lines = [f"kernel   {report.kernel}", f"problem  {report.problem or 'none'}", f"score    {report.objective}"]
    for tag, device in zip(short, report.devices):
        sim = provenance_tag(report.kind_of(device))
        lines.append(f"{tag:<4} {device}{sim}")
    lines.append("")
    lines.append("each GPU's best config as a fraction of every GPU's optimum:")
    width = max(12, *(len(c.text()) for row in report.matrix for c in row))
    lines.append(f"{'best of':<8}" + "".join(f"{'on ' + s:>{width + 2}}" for s in short) + "   worst   config")
    for tag, best, row in zip(short, report.bests, report.matrix):
        worst = _worst(row)
        worst_text = f"{100 * worst:.1f}%" if worst is not None else "-"
        lines.append(f"{tag:<8}" + "".join(f"{c.text():>{width + 2}}" for c in row)
                     + f"  {worst_text:>6}   {best.config.to_dict()}")
    lines.append("")
    pick = report.portable
    if pick is None:
        lines.append("portable: no config is known to work on every GPU")
    else:
        per = ", ".join(f"{s} {pick.cells[d].text()}" for s, d in zip(short, report.devices))
        lines.append(f"portable (best worst case of {pick.candidates_text()}): "
                     f"worst {100 * pick.worst:.1f}% on {pick.worst_device}, mean {100 * pick.mean:.1f}%")
        lines.append(f"         {per}")
        lines.append(f"         {pick.config.to_dict()}")
    lines += [f"note: {n}" for n in report.notes]
    return lines


__all__ = [
    "Cell",
    "DeviceBest",
    "PortabilityReport",
    "PortablePick",
    "Predictor",
    "check_compatible",
    "check_one_kernel",
    "other_benchmark",
    "format_report",
    "max_min_pick",
    "portability_report",
    "trials_at_problem",
]
