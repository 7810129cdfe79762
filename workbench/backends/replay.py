"""The ``replay`` backend: answer from a recording instead of measuring.

A recording is a workbench session file (or its journal) or a Kernel Tuner cache file. The space
is exactly the set of recorded points, and evaluating a point returns what was recorded, failures
included with their original reason, and the recorded phase timings (compile, verify, benchmark,
total) rather than the time the look-up took, so strategies, the engine and the GUI can be exercised and
compared on real data without a GPU. ``delay_s`` (the engine's pace between candidates) plays a
recording back "as if live" in demos.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Mapping, Sequence

from workbench.backends.base import Backend, BackendSpec, EvalLimits, PhaseCallback, Target, no_phase
from workbench.core.errors import SpaceError, WorkbenchError, quoted
from workbench.core.domain.measurement import Measurement, Status
from workbench.core.domain.records import device_info
from workbench.core.domain.space import Config, SearchSpace, Slot

_HEAD_BYTES = 65536


def _path_of(spec: BackendSpec) -> str:
    path = spec.options.get("path")
    if not path:
        raise WorkbenchError("replay backend needs options.path: a session or Kernel Tuner cache file")
    path = os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.isfile(path) and not os.path.isfile(path + ".journal"):
        raise WorkbenchError(f"recording not found: {path}")
    return path


def is_kt_cache(path: str) -> bool:
    """Whether the recording at ``path`` is a Kernel Tuner cache (else a session or its journal),
    from its first bytes: the format decides how it is read."""
    from workbench.core.domain.session import FORMAT_NAME

    if path.endswith(".journal") or not os.path.isfile(path):
        return False
    with open(path, "rb") as handle:
        raw = handle.read(_HEAD_BYTES)
    head = raw.decode("utf-8", errors="replace")
    if FORMAT_NAME in head:
        return False
    return raw.startswith(b"\x1f\x8b") or "tune_params_keys" in head or '"cache"' in head  # gzip: KT only


def reading_now(path: str) -> str | None:
    """How a replay of ``path`` reads its metrics today: the importer's rule for a Kernel Tuner cache
    (:data:`~workbench.core.io.interop.KT_READING`), None for a session, whose trials are replayed
    as they were saved whatever the code reading them."""
    if not is_kt_cache(path):
        return None
    from workbench.core.io.interop import KT_READING

    return KT_READING


#: The recordings this process read last, by path and file stamps: a run in one process (the inline
#: executor, the window's first look) reads its recording for the target and again for the
#: evaluations, and a large Kernel Tuner cache takes over a second to import. Few, since each holds
#: every recorded trial.
_RECENT: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_RECENT_MAX = 2
_RECENT_LOCK = threading.Lock()
#: Reads under way, by the same key: a second caller waits for the first's instead of reading the
#: file again beside it (the window's Start, half a second after choosing an 18,000-config cache
#: whose read-ahead was still going, read it a second time on the GUI thread: 4 s frozen).
_READING: dict[tuple[Any, ...], threading.Event] = {}


def _stamp(path: str) -> tuple[Any, ...]:
    """What changes when the recording does: the file's and its journal's size and mtime."""
    stamp: list[Any] = [os.path.realpath(path)]
    for name in (path, path + ".journal"):
        try:
            info = os.stat(name)
        except OSError:
            stamp.append(None)
        else:
            stamp.append((info.st_size, info.st_mtime_ns, info.st_ino))
    return tuple(stamp)


#: ``Session.extra`` key of what reading a cache repaired (a cut file's record left out): a replay
#: says it when it starts, as ``import-kt`` does.
IMPORT_NOTES = "import_notes"


def load_recording(path: str) -> Any:
    """The recording as a :class:`~workbench.core.domain.session.Session`, whichever format it is in.

    Read once per process while the files are unchanged; callers only read the session returned."""
    from workbench.core.domain.session import load_session

    key = _stamp(path)
    while True:
        with _RECENT_LOCK:
            if key in _RECENT:
                _RECENT.move_to_end(key)
                return _RECENT[key]
            reading = _READING.get(key)
            if reading is None:  # this caller reads it
                done = _READING[key] = threading.Event()
                break
        reading.wait()  # then looks again: the other read is cached, or failed and is tried here
    try:
        if is_kt_cache(path):
            from workbench.core.io.interop import import_kt_cache

            notes: list[str] = []  # what the import repaired, added or left out (each line names the file)
            recording = import_kt_cache(path, notes)
            recording.extra[IMPORT_NOTES] = [f"recording {note}" for note in notes]
        else:
            recording = load_session(path)  # a session, or neither: then the session loader says what is wrong
        with _RECENT_LOCK:
            _RECENT[key] = recording
            while len(_RECENT) > _RECENT_MAX:
                _RECENT.popitem(last=False)
        return recording
    finally:
        with _RECENT_LOCK:
            del _READING[key]
        done.set()


def _slots_of(recording: Any, configs: list[Config]) -> tuple[Slot, ...]:
    if recording.space is not None:
        return tuple(recording.space.slots)
    names = list(configs[0]) if configs else []
    slots = []
    for name in names:
        values = sorted({c[name] for c in configs}, key=lambda v: (str(type(v)), v))
        slots.append(Slot(name=name, values=tuple(values)))
    return tuple(slots)


def recording_sizes(recording: Any) -> tuple[list[str], str]:
    """The labels of the sizes ``recording`` was measured at (``n=4096``; a size of several
    parameters ``a=1, b=2``), and the separator that tells them apart (``"; "`` where a label has
    commas of its own)."""
    from workbench.core.domain.size_analysis import label_names, size_label
    from workbench.core.domain.sizes import size_order_key, trials_by_problem

    problems = [dict(recording.problem_of(trials[0])) for trials in trials_by_problem(recording).values()]
    names = label_names(recording, problems)  # (the sweep's own first, as show orders them)
    # smallest first (in the order measured, a size added to a sweep later came last)
    labels = [size_label(p, names) for p in sorted(problems, key=lambda p: size_order_key(p, names))]
    return labels, "; " if any(", " in label for label in labels) else ", "


def recorded_trials(recording: Any, path: str, chosen: Mapping[str, Any] | None = None) -> tuple[list[Any], dict[str, Any]]:
    """The trials a replay replays and the problem they were measured at.

    A recording of one problem replays all of its trials. A size sweep measured each config at
    several problems, and one config has one latency only at one of them: the replay is of the size
    that ``chosen`` (``--set NAME=VALUE``) names, and without it is refused in one line listing the
    sizes, rather than mixing them under a problem nobody measured.
    """
    from workbench.core.domain.session import problem_key
    from workbench.core.domain.sizes import size_value_text, telling_parameters, trials_by_problem, typed_like

    groups = list(trials_by_problem(recording).values())
    problems = [dict(recording.problem_of(trials[0])) for trials in groups]
    known = {name: None for problem in problems for name in problem}
    unknown = [name for name in (chosen or {}) if name not in known]
    if unknown:  # (said as "no trials at" the value, as if the name were right and the value not)
        slots = recording.space.names if recording.space is not None else ()
        what = ("a tunable slot of the recording, not a problem parameter: a replay searches the recorded configs"
                if unknown[0] in slots else "not a problem parameter of the recording")
        raise WorkbenchError(f"--set {unknown[0]}: {what} (its problem parameters: {', '.join(known) or 'none'})")
    if chosen:
        matching = [i for i, problem in enumerate(problems)
                    if all(name in problem and problem_key({name: problem[name]}) == problem_key({name: value})
                           for name, value in typed_like(problem, chosen).items())]
    else:
        matching = list(range(len(groups)))
    if len(matching) == 1:
        return groups[matching[0]], problems[matching[0]]
    # the parameters that tell the sizes matching what was chosen apart, those not chosen first
    telling = telling_parameters([problems[i] for i in matching] if matching else problems)
    names = [n for n in telling if n not in (chosen or {})] or telling
    labels, between = recording_sizes(recording)
    sizes = between.join(labels[:8]) + (f"{between}..." if len(problems) > 8 else "")
    first = names[0] if names else "NAME"
    if not matching:
        given = ", ".join(f"{k}={size_value_text(v)}" for k, v in chosen.items()) if chosen else ""
        held = f"its one size: {sizes}" if len(problems) == 1 else f"its sizes: {sizes}"
        raise WorkbenchError(f"recording {path} has no trials at {given}; {held}")
    # a template: the window names its problem field where the command line says --set
    raise WorkbenchError(template=f"recording {quoted(path)} holds a size sweep ({len(problems)} sizes: {quoted(sizes)}); "
                                  f"a replay replays one: choose it with {{problem:{quoted(first)}=VALUE}}")


def recorded_measurements(trials: Sequence[Any], replayed: bool = False) -> dict[str, Measurement]:
    """Config id -> recorded measurement (the last one, when a config was recorded twice), with
    when it was recorded in its details (``recorded_at``; None when the recording does not say):
    an export as a Kernel Tuner cache stamps it with that, not with the replay's time. A
    recording that is itself a replay (``replayed``) says it only where its own trials kept it:
    their ``finished_at`` is when they were replayed."""
    from workbench.core.io.interop import RECORDED_AT

    measured: dict[str, Measurement] = {}
    for trial in trials:
        measurement = trial.measurement
        if RECORDED_AT not in measurement.details:
            when = None if replayed or not trial.finished_at else float(trial.finished_at)
            measurement = dataclasses.replace(measurement, details={**measurement.details, RECORDED_AT: when})
        measured[trial.config.id] = measurement
    return measured


def recorded_timings(trials: Sequence[Any]) -> dict[str, dict[str, float]]:
    """Config id -> the recorded trial's phase timings in seconds (the last trial of a config, as
    :func:`recorded_measurements`); empty for a trial that recorded none."""
    return {trial.config.id: {name: float(value) for name, value in trial.timings.items()} for trial in trials}


def _chosen_problem(spec: BackendSpec) -> dict[str, Any] | None:
    chosen = spec.options.get("problem")
    return dict(chosen) if isinstance(chosen, Mapping) and chosen else None


class ReplayBackend(Backend):
    """Returns recorded measurements; a config outside the recording is ``skipped``."""

    kind = "replay"
    simulated = True

    def __init__(self, spec: BackendSpec) -> None:
        super().__init__(spec)
        self._recorded: dict[str, Measurement] | None = None
        self._timings: dict[str, dict[str, float]] = {}

    @classmethod
    def target(cls, spec: BackendSpec) -> Target:
        path = _path_of(spec)
        recording = load_recording(path)
        if not recording.trials:
            raise WorkbenchError(f"recording {path} holds no trials to replay")
        named = spec.options.get("kernel")
        if named and named != recording.kernel:  # the trials would be filed, shown and exported under it
            raise WorkbenchError(template=f"{quoted(path)} is a recording of {quoted(repr(recording.kernel))}, not "
                                          f"{quoted(repr(named))}: a replay's kernel is the recorded one "
                                          f"(leave the kernel out: {{replay_new:{quoted(path)}}})")
        trials, problem = recorded_trials(recording, path, _chosen_problem(spec))
        points: list[Config] = []
        seen: set[str] = set()
        for trial in trials:
            if trial.config.id not in seen:
                seen.add(trial.config.id)
                points.append(trial.config)
        slots = _slots_of(recording, points)
        try:  # problem parameters stay visible to restrictions the user adds on top
            space = SearchSpace.explicit(slots, points, params=problem)
        except SpaceError:  # e.g. a recorded problem parameter named like a slot
            space = SearchSpace.explicit(slots, points)
        from workbench.core.io.interop import recording_hash, replayed_facts

        parts = []
        for name in (path, path + ".journal"):
            if os.path.isfile(name):
                with open(name, "rb") as handle:
                    parts.append((Path(name), handle.read()))
        # its text, not its bytes: a recording whose line endings a checkout changed is the same one;
        # a session that hashed the bytes (before) continues while they are as they were
        bytes_hash = hashlib.sha256(b"".join(raw for _name, raw in parts)).hexdigest()[:16]
        identity = recording_hash(parts)
        default = recording.default_config if recording.default_config is not None else None
        if default is not None and default.id not in seen:
            default = None
        device = device_info(recording.device or {})
        device.update({"replayed": True, "backend": "replay", "recording": path})
        device.setdefault("name", "recording")
        device.setdefault("simulated", False)
        return Target(
            kernel=str(recording.kernel),
            kind="recording",
            space=space,
            problem=problem,
            source_hash=identity,
            earlier_hashes=frozenset({bytes_hash} - {identity}),
            device=device,
            default_config=default,
            notes=tuple(recording.extra.get(IMPORT_NOTES, ())),
            extra=replayed_facts(recording),
            description=f"replay of {len(points)} recorded configs from {os.path.basename(path)}",
            metrics=frozenset(name for trial in trials for name in trial.measurement.metrics),
        )

    def prepare(self) -> None:
        path = _path_of(self.spec)
        recording = load_recording(path)
        trials, _problem = recorded_trials(recording, path, _chosen_problem(self.spec))
        self._recorded = recorded_measurements(trials, replayed=bool((recording.device or {}).get("replayed")))
        self._timings = recorded_timings(trials)

    def evaluate(self, config: Config, limits: EvalLimits, phase: PhaseCallback = no_phase) -> Measurement:
        if self._recorded is None:
            self.prepare()
        assert self._recorded is not None
        phase("run")
        recorded = self._recorded.get(config.id)
        if recorded is None:
            return Measurement.failure(Status.SKIPPED, "not in the recording")
        return recorded

    def recorded_timings(self, config: Config) -> Mapping[str, float]:
        """The recording's timings of ``config`` (none for a config it lacks): a replayed trial's
        compile, verify and benchmark times are the recorded ones, not this look-up's (called after
        :meth:`evaluate`, which loaded the recording)."""
        return dict(self._timings.get(config.id, {}))
