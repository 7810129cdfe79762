"""Sessions: the tuned target's identity, the space, the objective settings and every trial.

Contract (implemented by the session module):

- ``Session`` dataclass: ``kernel``, ``kind``, ``source_hash``, ``problem``, ``space``
  (SearchSpace), ``backend`` (``BackendInfo``: kind + options), ``device`` (``DeviceInfo``;
  ``simulated`` bool), ``constraints``, ``weights``, ``strategy`` (``StrategyInfo``: name, seed,
  options, the options of strategies run before, state; the typed records of
  ``core/domain/records.py``), ``trials``
  (list[Trial]), ``baselines`` (name -> metrics dict), ``default_config`` (Config | None),
  ``created_at``, ``notes``.
  Methods: ``add(trial)``, ``measured_ids() -> set[str]``, ``cache_key(config)``,
  ``to_dict()``, ``Session.from_dict(data, source="...")``.
- ``save_session(session, path)``: atomic (temp file, fsync, rename); removes the journal.
- ``load_session(path) -> Session``: validates, one-line errors naming file/field/problem,
  refuses newer format versions, merges the journal ``<path>.journal`` if present.
- ``Journal(path)``: ``.start(session)`` writes a header line, ``.append(trial)`` writes one JSON
  line and flushes it (fsyncs too unless made with ``fsync=False``, as the engine's is: it fsyncs
  in groups); a truncated last line (killed writer) is ignored on read.

Additions: ``Session.extra`` (free-form JSON object kept across save/load, for views' settings),
``Session.next_index()``, ``Session.rank()``, ``Session.problem_of(trial)`` / ``trials_at(problem)``
(a trial may carry its own ``problem``: a size sweep keeps several sizes in one session; see
``workbench.core.domain.sizes``), ``problem_key(problem)``, ``trial_to_dict`` / ``trial_from_dict`` (the one
serialisation of a trial, shared by the session file and the journal), ``journal_path(path)``,
``save_session(..., keep_journal=True)`` for a save in the middle of a live run.

The file format is documented in ``docs/file-format.md``. Loading is plain JSON parsing plus type
checks; nothing in a file is ever executed or imported.
"""

from __future__ import annotations

import contextlib
import gc
from glob import escape as glob_escape
import hashlib
import json
import math
import numbers
import os
import re
import threading
import time
import uuid
import weakref
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Mapping, NoReturn, Sequence, cast


try:  # optional speed-up: builds the ids of the configs a large session holds several times faster
    import orjson
except ImportError:  # pragma: no cover - Config() does the same work, slower
    orjson = None  # type: ignore[assignment]

from workbench.core.errors import DamagedJournal, NewerFormat, SessionFormatError, UnreadableFile, WorkbenchError, quoted, write_error
from workbench.core.domain.assignments import parse_assignment_list, parse_value
from workbench.core.fs import MAX_FILE_BYTES, atomic_write, open_regular, read_capped, read_only, read_only_refusal, resolved
from workbench.core.domain.measurement import NON_NEGATIVE_METRICS, Measurement, Status, Trial
from workbench.core.domain.metrics import metric_name
from workbench.core.domain.objective import Constraints, Ranking, Weights, rank
from workbench.core.domain.records import (MAX_PACE_S, SIM_COMPILE_MODES, BackendInfo, DeviceInfo, StrategyInfo,
                                           is_arch_name, is_pace)
from workbench.core.domain.run_settings import RunSettings
from workbench.core.domain.space import Config, SearchSpace, canonical_json, int_in_range
from workbench.core.domain.bounded_json import IntTooLong, dumps_strict, json_default, loads_checked, short_repr

#: ``fail(field, problem)``: raises the caller's one-line error about a field of the file.
Fail = Callable[[str, str], NoReturn]

FORMAT_NAME = "kernel-workbench-session"
#: 2 added ``id`` (the session's identity, shared by its journal) and ``run`` (run settings).
FORMAT_VERSION = 2

KINDS: tuple[str, ...] = ("template", "python", "recording")
JOURNAL_SUFFIX = ".journal"

_STATUSES: dict[str, Status] = {s.value: s for s in Status}
_STATUS_LIST = ", ".join(_STATUSES)
_NUMBER_TYPES = (int, float)
_TRIAL_FIELDS = frozenset(
    {"index", "config", "id", "status", "metrics", "message", "log", "details",
     "started_at", "finished_at", "timings", "worker", "measurement", "problem"}
)
_MEASUREMENT_FIELDS = frozenset({"status", "metrics", "message", "log", "details"})
#: Longest kernel name, device name or problem text value (they reach exported source as text).
MAX_NAME_CHARS = 200
#: Longest ``notes`` text kept from a file.
MAX_TEXT_CHARS = 1_000_000
_SESSION_FIELDS = (
    "format", "version", "kernel", "kind", "source_hash", "problem", "space", "backend", "device",
    "constraints", "weights", "strategy", "baselines", "default_config", "created_at", "notes",
    "extra", "trials", "id", "run", "directions",
)


def _now() -> float:
    return time.time()


def new_session_id() -> str:
    """A fresh identity for a session; its journal carries it, so journals never cross sessions."""
    return uuid.uuid4().hex


def _identity_of_unnamed(kernel: str, created_at: float, source_hash: str) -> str:
    """The identity of a file older than identities (format 1), the same at every load: from what
    already told such files apart (a journal matched them by kernel and creation time). A fresh
    one at each load made the window's own file "hold another session" on its next Start or Save."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kernel-workbench:{kernel}:{created_at!r}:{source_hash}").hex


@dataclass
class Session:
    """Everything a tuning session knows; derived views (ranking) are computed, never stored."""

    kernel: str
    kind: str = "template"
    source_hash: str = ""
    problem: dict[str, Any] = field(default_factory=dict)
    space: SearchSpace | None = None
    backend: BackendInfo = field(default_factory=lambda: BackendInfo())
    device: DeviceInfo = field(default_factory=lambda: DeviceInfo())
    constraints: Constraints = field(default_factory=Constraints)
    weights: Weights = field(default_factory=Weights)
    strategy: StrategyInfo = field(default_factory=lambda: StrategyInfo())
    trials: list[Trial] = field(default_factory=list)
    baselines: dict[str, dict[str, float]] = field(default_factory=dict)
    default_config: Config | None = None
    created_at: float = field(default_factory=_now)
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: Identity of this session, written into its journal; "" for files older than format 2.
    id: str = field(default_factory=new_session_id)
    run: RunSettings = field(default_factory=RunSettings)
    #: Per file (its resolved path), the constraints and weights it held when this process last
    #: read or wrote it (not stored): a writer that finds others there knows they were changed
    #: elsewhere meanwhile (another window, a ``tune --resume``), where a save would silently put
    #: its own back. Per file: one session is written to several (its autosave, a Save As copy).
    objective_on_disk: dict[str, tuple[Constraints, Weights]] = field(default_factory=dict, compare=False,
                                                                      repr=False)
    #: The journal this session was read with, merged over its file (not stored): None when it was
    #: read from its file alone, or the journal beside it held nothing newer (see ``load_session``).
    journal_read: Path | None = field(default=None, compare=False, repr=False)
    #: How many trial records that journal held (not stored).
    journal_trials: int = field(default=0, compare=False, repr=False)

    # --- trials --------------------------------------------------------------------------------
    def add(self, trial: Trial) -> None:
        """Append a finished trial (trials are kept in the order they finished)."""
        self.trials.append(trial)

    def problem_of(self, trial: Trial) -> dict[str, Any]:
        """The problem ``trial`` was measured at: its own, else the session's."""
        return dict(self.problem if trial.problem is None else trial.problem)

    def trials_at(self, problem: Mapping[str, Any] | None = None) -> list[Trial]:
        """The trials measured at ``problem`` (None: the session's own problem), in order."""
        key = problem_key(self.problem if problem is None else problem)
        own = problem_key(self.problem)
        return [t for t in self.trials if (own if t.problem is None else problem_key(t.problem)) == key]

    def measured_ids(self, problem: Mapping[str, Any] | None = None) -> set[str]:
        """Ids of every config with a trial (ok or failed) at ``problem`` (None: the session's
        problem), for the engine's dedupe: a config measured at one size is still new at another."""
        if all(t.problem is None for t in self.trials) and problem is None:
            return {t.config.id for t in self.trials}
        return {t.config.id for t in self.trials_at(problem)}

    def next_index(self) -> int:
        """The index the next trial should get (one past the largest so far)."""
        return max((t.index for t in self.trials), default=-1) + 1

    def cache_key(self, config: Config | Trial, problem: Mapping[str, Any] | None = None) -> str:
        """Key of a measurement in the result cache: code identity + problem + config.

        A change to the template source (``source_hash``) or the problem gives a new key, so
        cached results die with the code or problem they were measured for. The problem is
        ``problem`` when given, else the trial's own (a ``Trial`` passed), else the session's.
        """
        if isinstance(config, Trial):
            if problem is None:
                problem = config.problem
            config = config.config
        chosen = self.problem if problem is None else problem
        digest = hashlib.sha1(problem_key(chosen).encode()).hexdigest()[:12]
        return f"{self.source_hash}:{digest}:{config.id}"

    def rank(self, constraints: Constraints | None = None, weights: Weights | None = None) -> Ranking:
        """The ranking under the session's (or the given) constraints and weights."""
        return rank(
            self.trials,
            self.constraints if constraints is None else constraints,
            self.weights if weights is None else weights,
            default=self.default_config.id if self.default_config is not None else None,
        )

    # --- serialisation -------------------------------------------------------------------------
    def header_dict(self) -> dict[str, Any]:
        """Everything but the trials (the journal's first line, and the top of the file)."""
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "id": self.id,
            "kernel": self.kernel,
            "kind": self.kind,
            "source_hash": self.source_hash,
            "problem": dict(self.problem),
            "space": self.space.to_dict() if self.space is not None else None,
            "backend": dict(self.backend),
            "device": dict(self.device),
            "constraints": self.constraints.to_dict(),
            "weights": self.weights.to_dict(),
            **({"directions": self.weights.directions_dict()} if self.weights.directions else {}),
            "strategy": dict(self.strategy),
            "baselines": {k: dict(v) for k, v in self.baselines.items()},
            "default_config": self.default_config.to_dict() if self.default_config is not None else None,
            "created_at": self.created_at,
            "notes": self.notes,
            "extra": dict(self.extra),
            "run": self.run.to_dict(),
        }

    def to_dict(self) -> dict[str, Any]:
        out = self.header_dict()
        out["trials"] = [trial_to_dict(t) for t in self.trials]
        return out

    @staticmethod
    def from_dict(data: Any, source: str = "session") -> "Session":
        """Validate a parsed session document; errors name ``source``, the field and the problem."""
        return decode_session(data, source)


# ------------------------------------------------------------------------------------------------
# Trials
# ------------------------------------------------------------------------------------------------


def problem_key(problem: Mapping[str, Any]) -> str:
    """A stable text key for a problem (canonical JSON: sorted names, no spaces), the same for
    equal problems whatever their order; used to group trials by the problem they ran at."""
    return canonical_json(dict(problem))


def trial_to_dict(trial: Trial) -> dict[str, Any]:
    """The flat record of a trial; empty optional fields are left out to keep files small."""
    m = trial.measurement
    out: dict[str, Any] = {
        "index": trial.index,
        "config": trial.config.to_dict(),
        "id": trial.config.id,
        "status": m.status.value,
        "metrics": dict(m.metrics),
    }
    if trial.problem is not None:
        out["problem"] = dict(trial.problem)
    if m.message:
        out["message"] = m.message
    if m.log != m.message:
        out["log"] = m.log
    if m.details:
        out["details"] = dict(m.details)
    out["started_at"] = trial.started_at
    out["finished_at"] = trial.finished_at
    if trial.timings:
        out["timings"] = dict(trial.timings)
    if trial.worker:
        out["worker"] = trial.worker
    return out


#: The largest time a session may say it was made at: the end of the year 9999, which every
#: calendar function takes (1e300 passed the loader and broke the label of an export).
MAX_EPOCH_S = 253_402_300_799

#: ``extra`` fields the program reads back, with the type each must have: the rest of ``extra`` is
#: kept as it is and never read.
_EXTRA_TYPES: dict[str, tuple[type, str]] = {"reference": (str, "text"), "import_notes": (list, "a list"),
                                             "cost_model": (dict, "an object")}


def _check_extra(extra: Mapping[str, Any], fail: Fail) -> None:
    """The ``extra`` fields a run, a replay or the window reads, checked for their types as the
    file loads: a note that was a number stopped a replay with a traceback, and a cost model that
    was text left a window's run hanging."""
    for key, (kind, words) in _EXTRA_TYPES.items():
        if key in extra and type(extra[key]) is not kind:
            fail(f"extra.{key}", f"expected {words}, got {_type_name(extra[key])}")
    for i, note in enumerate(extra.get("import_notes", ())):
        if type(note) is not str:
            fail(f"extra.import_notes[{i}]", f"expected text, got {_type_name(note)}")
    texts = [("extra.reference", extra.get("reference", "")), *((f"extra.import_notes[{i}]", note)
             for i, note in enumerate(extra.get("import_notes", ())))]
    for where, text in texts:
        if len(text) > MAX_TEXT_CHARS:
            fail(where, f"{len(text):,} characters is more than the {MAX_TEXT_CHARS:,} kept")


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


_short = short_repr


def _numbers(value: Any, where: str, fail: Fail) -> dict[str, float]:
    """A mapping name -> number (null read as NaN)."""
    if type(value) is not dict:
        fail(where, f"expected an object of numbers, got {_type_name(value)}")
    out = value
    for key, number in value.items():
        t = type(number)
        if t is float:
            if number != number:  # NaN: what a null reads as
                continue
            if number in (math.inf, -math.inf):
                fail(f"{where}.{key}", f"{number!r} is not a finite number")
            if number < 0 and key in NON_NEGATIVE_METRICS:
                fail(f"{where}.{key}", f"{number!r} is negative")
            continue
        if t is int:
            if number < 0 and key in NON_NEGATIVE_METRICS:
                fail(f"{where}.{key}", f"{number!r} is negative")
            continue
        if number is None:
            if out is value:
                out = dict(value)
            out[key] = math.nan
            continue
        fail(f"{where}.{key}", f"{_short(number)} is not a number")
    return out


#: Key sets of trial metrics known to be names already (a session's trials share a few).
_NAMED_KEY_SETS: set[tuple[str, ...]] = set()


def _named_metrics(metrics: dict[str, float], where: str, fail: Fail) -> dict[str, float]:
    """A trial's metrics under the names a weight, a bound or a direction can give
    (:func:`workbench.core.domain.metrics.metric_name`): a session written before a python
    benchmark's ``GFLOP/s`` was recorded as ``gflops`` is read as if it had been, so its trials and
    those of a run continuing it have one name for one metric. A name already in that form wins a
    clash; a renamed one is checked as a recorded one is (``GB/s`` below zero is corrupt)."""
    keys = tuple(metrics)
    if keys in _NAMED_KEY_SETS:
        return metrics
    long = next((key for key in keys if len(key) > MAX_NAME_CHARS), None)
    if long is not None:  # (every column, chart and export names it: 100,000 characters held the window)
        fail(f"{where}.{_short(long)}", f"a metric name of {len(long):,} characters (at most {MAX_NAME_CHARS})")
    if all(key.isidentifier() and key.isascii() for key in keys):
        if len(_NAMED_KEY_SETS) < 1024:
            _NAMED_KEY_SETS.add(keys)
        return metrics
    named = {key: value for key, value in metrics.items() if key.isidentifier() and key.isascii()}
    for key, value in metrics.items():
        name = metric_name(key)
        if len(name) > MAX_NAME_CHARS:  # (a name made an identifier can grow: saved so, it would not open)
            fail(f"{where}.{_short(key)}", f"a metric name of {len(name):,} characters as an identifier "
                                           f"(at most {MAX_NAME_CHARS})")
        if name not in named:
            if value < 0 and name in NON_NEGATIVE_METRICS:
                fail(f"{where}.{key}", f"{value!r} is negative")
            named[name] = value
    return named


def _fast_config_builder() -> Callable[[dict[str, Any]], Config] | None:
    """A Config constructor for JSON-loaded values that skips the slow part of ``Config()``.

    ``Config()`` derives its id from ``json.dumps(..., sort_keys=True)``, about 10 us a config;
    loading 100,000 trials spends most of its time there. For the common configs (ints, bools
    and plain ASCII identifiers, no floats) orjson writes byte-identical canonical text in well
    under a microsecond, handed to ``Config.from_canonical``. That the two writers agree is checked
    on probe values at import; if they ever differ, plain ``Config()`` is used. Anything outside the
    safe subset also goes through ``Config()``.
    """
    if orjson is None:
        return None
    sort = orjson.OPT_SORT_KEYS
    from_canonical = Config.from_canonical

    def build(values: dict[str, Any]) -> Config:
        try:
            text = orjson.dumps(values, option=sort)
        except orjson.JSONEncodeError:  # e.g. an int beyond 64 bits
            return Config(values)
        if not text.isascii() or b"\\" in text or b"\x7f" in text:
            return Config(values)
        return from_canonical(values, text.decode())

    probes: tuple[dict[str, Any], ...] = ({"b": 2, "a": True, "c": "shared_tree", "z": -7}, {"x": False}, {})
    for probe in probes:
        if orjson.dumps(probe, option=sort).decode() != canonical_json(probe):
            return None
    return build


_build_config = _fast_config_builder()


def _slot_problem(config: Mapping[str, Any], names: frozenset[str]) -> str:
    missing = sorted(names - config.keys())
    if missing:
        return f"has no value for slot {missing[0]!r}"
    return f"{sorted(config.keys() - names)[0]!r} is not a slot of the space"


def trial_from_dict(rec: Any, where: str, fail: Fail, names: frozenset[str] | None = None) -> Trial:
    """Validate one trial record (flat, or with a nested ``measurement``) and build the Trial.

    ``fail(field, problem)`` raises the caller's error. Checks are type tests, cheap enough for
    100,000 trials; the stored ``id`` must match the config (a hand-edited config is caught);
    with ``names`` the config must assign exactly those slots.
    """
    if type(rec) is not dict:
        fail(where, f"expected an object, got {_type_name(rec)}")
    if not rec.keys() <= _TRIAL_FIELDS:
        unknown = sorted(set(rec) - _TRIAL_FIELDS)[0]
        fail(f"{where}.{unknown}", "unknown field")
    index = rec.get("index")
    if type(index) is not int or not 0 <= index < 2**63:  # trial tables hold indices as int64
        fail(f"{where}.index", f"{_short(index)} is not an integer from 0 to 2**63-1")
    values = rec.get("config")
    if type(values) is not dict:
        fail(f"{where}.config", f"expected an object, got {_type_name(values)}")
    simple = _build_config is not None
    for key, value in values.items():
        t = type(value)
        if t is float:
            simple = False
            if not math.isfinite(value):
                fail(f"{where}.config.{key}", f"{value!r} is not a finite number")
        elif t is str:
            if len(value) > MAX_NAME_CHARS:
                fail(f"{where}.config.{key}", f"text of {len(value):,} characters is not a slot value")
        elif t is not int and t is not bool:
            fail(f"{where}.config.{key}", f"{_short(value)} is not a number, bool or string")
    if names is not None and values.keys() != names:
        fail(f"{where}.config", _slot_problem(values, names))
    config = _build_config(values) if simple and _build_config is not None else Config(values)
    stored_id = rec.get("id")
    if stored_id is not None and stored_id != config.id:
        fail(f"{where}.id", f"{stored_id!r} does not match its config (expected {config.id!r})")

    m = rec.get("measurement")
    if m is not None:
        mwhere = f"{where}.measurement"
        if type(m) is not dict:
            fail(mwhere, f"expected an object, got {_type_name(m)}")
        if not m.keys() <= _MEASUREMENT_FIELDS:
            fail(f"{mwhere}.{sorted(set(m) - _MEASUREMENT_FIELDS)[0]}", "unknown field")
        clash = sorted(_MEASUREMENT_FIELDS & rec.keys())
        if clash:
            fail(f"{where}.{clash[0]}", "given both here and in measurement")
    else:
        m, mwhere = rec, where
    raw_status = m.get("status")
    status = _STATUSES.get(raw_status) if type(raw_status) is str else None
    if status is None:
        raw = raw_status
        problem = f"{_short(raw)} is not a status" if isinstance(raw, str) else f"{_type_name(raw)} is not a status"
        fail(f"{mwhere}.status", f"{problem} (expected one of {_STATUS_LIST})")
    metrics = _named_metrics(_numbers(m.get("metrics", {}), f"{mwhere}.metrics", fail), f"{mwhere}.metrics", fail)
    message = m.get("message", "")
    if type(message) is not str:
        fail(f"{mwhere}.message", f"expected text, got {_type_name(message)}")
    log = m.get("log", message)
    if status is Status.OK and metrics.get("latency_ms") == 0:
        # What the backends now refuse to record; a file written before that keeps the trial, as
        # the failure it is, rather than becoming unreadable with every other trial in it.
        status, message = Status.RUNTIME_ERROR, "recorded 0 ms: not a measurement (nothing was timed)"
        log = message if not log else f"{message}\n{log}"
    elif status is Status.OK and math.isnan(metrics.get("latency_ms", math.nan)):  # (null reads as NaN)
        # An ok trial always has a latency (every backend refuses to record one without): a file
        # with none (null, NaN, left out) was edited. It counted as feasible and ranked nowhere.
        status, message = Status.RUNTIME_ERROR, "recorded no latency: not a measurement"
        log = message if not log else f"{message}\n{log}"
    if type(log) is not str:
        fail(f"{mwhere}.log", f"expected text, got {_type_name(log)}")
    details = m.get("details", {})
    if type(details) is not dict:
        fail(f"{mwhere}.details", f"expected an object, got {_type_name(details)}")

    started = rec.get("started_at", 0.0)
    finished = rec.get("finished_at", 0.0)
    for field_name, moment in (("started_at", started), ("finished_at", finished)):
        # a time every reader can turn into a date (an export's timestamp failed on 1e300)
        if type(moment) not in _NUMBER_TYPES or not -MAX_EPOCH_S <= moment <= MAX_EPOCH_S:
            fail(f"{where}.{field_name}", f"{_short(moment)} is not a time (seconds since the epoch, before the year 10000)")
    timings = rec.get("timings")
    timings = _numbers(timings, f"{where}.timings", fail) if timings is not None else {}
    worker = rec.get("worker", "")
    if type(worker) is not str:
        fail(f"{where}.worker", f"expected text, got {_type_name(worker)}")
    raw_problem = rec.get("problem")
    trial_problem = None if raw_problem is None else checked_problem(raw_problem, f"{where}.problem", fail)
    return Trial(
        index,
        config,
        Measurement(status, metrics, message, log, details),
        float(started),
        float(finished),
        timings,
        worker,
        trial_problem,
    )


#: Most parameters a problem may have (a template has a handful; a file with thousands is corrupt).
MAX_PROBLEM_PARAMETERS = 64


def unrecordable(trial: Trial) -> str | None:
    """Why ``trial`` could not be saved and opened again (what reading its record back, as saved,
    refuses, or reads back as another status or other metrics), or None. What a worker returns is
    checked so, since the candidate it ran can write a reply of its own into the worker's pipe: a
    latency of -5 ms was recorded, reported as the best and saved into a file that then never
    opened; a latency in text stopped the run; one of 0 ms was the best and reopened as a failure."""
    try:
        record = loads_checked(dumps_strict(trial_to_dict(trial)))
        back = trial_from_dict(record, "its record", session_failer("the measurement")).measurement
    except (WorkbenchError, ValueError, TypeError, OverflowError, RecursionError, AttributeError) as exc:
        return str(exc) or type(exc).__name__
    # read back as another measurement (an ok trial of latency 0 reads as a failure, a metric named
    # "GB/s" as throughput_gbs): what the run would rank is not what reopens
    given = trial.measurement
    if back.status is not given.status:
        return f"it reads back as {back.status.value}, not {given.status.value}"
    # a name as a session keeps it (every backend's reply uses those already), a value that is not
    # finite as NaN (a wrong result's inf error is one)
    def alike(a: float, b: Any) -> bool:  # (b as given: a float32 or an int past 2**53 is written as it reads)
        if not isinstance(b, numbers.Real) or isinstance(b, bool):
            return False
        if a == b:
            return True
        x, y = float(a), float(b)
        return not (math.isfinite(x) or math.isfinite(y)) or math.isclose(x, y, rel_tol=1e-6)

    if set(back.metrics) != set(given.metrics) or not all(alike(back.metrics[k], given.metrics[k])
                                                          for k in back.metrics):
        return "its metrics read back otherwise (a name or a value a session does not keep as given)"
    return None


def checked_problem(value: Any, where: str, fail: Any) -> dict[str, Any]:
    """A problem read from a file (the session's or a trial's): an object of at most
    :data:`MAX_PROBLEM_PARAMETERS` printable names, each a finite number, a bool or a short line."""
    if type(value) is not dict:
        fail(where, f"expected an object, got {_type_name(value)}")
    if len(value) > MAX_PROBLEM_PARAMETERS:
        fail(where, f"{len(value):,} parameters is more than the {MAX_PROBLEM_PARAMETERS} allowed")
    for key, item in value.items():
        check_name(key, f"{where}.{_short(key)}", fail)
        _check_value(item, f"{where}.{key}", fail)
    return dict(value)


# ------------------------------------------------------------------------------------------------
# Session documents
# ------------------------------------------------------------------------------------------------


def session_failer(source: str) -> Fail:
    def fail(where: str, problem: str) -> NoReturn:
        raise SessionFormatError(f"{source}: {where}: {problem}")

    return fail


def _check_version(data: Mapping[str, Any], source: str) -> None:
    fail = session_failer(source)
    fmt = data.get("format")
    if fmt != FORMAT_NAME:
        if "tune_params_keys" in data and "cache" in data:
            raise SessionFormatError(template=f"{quoted(source)}: this is a Kernel Tuner cache file, not a session; "
                                              "{import_cache}")
        fail("format", f"{fmt!r} is not {FORMAT_NAME!r} (not a workbench session)")
    version = data.get("version")
    if type(version) is not int or version < 1:
        fail("version", f"{version!r} is not a format version (a positive integer)")
    if version > FORMAT_VERSION:
        raise NewerFormat(
            f"{source} was written by format version {version}; this workbench reads up to {FORMAT_VERSION}"
        )


def decode_session(data: Any, source: str) -> Session:
    fail = session_failer(source)
    if type(data) is not dict:
        raise SessionFormatError(f"{source}: expected a JSON object at the top, got {_type_name(data)}")
    _check_version(data, source)
    unknown = sorted(set(data) - set(_SESSION_FIELDS))
    if unknown:
        fail(unknown[0], "unknown field (free-form data belongs in 'extra')")

    def text(name: str, default: str = "") -> str:
        value = data.get(name, default)
        if type(value) is not str:
            fail(name, f"expected text, got {_type_name(value)}")
        return value

    def obj(name: str) -> dict[str, Any]:
        value = data.get(name)
        if value is None:
            return {}
        if type(value) is not dict:
            fail(name, f"expected an object, got {_type_name(value)}")
        return value

    kernel = text("kernel")
    if not kernel:
        fail("kernel", "missing (the name of the tuned kernel)")
    check_name(kernel, "kernel", fail)
    kind = text("kind", "template")
    if kind not in KINDS:
        fail("kind", f"{_short(kind)} is not one of {', '.join(KINDS)}")
    problem = checked_problem(obj("problem"), "problem", fail)

    space = None
    if data.get("space") is not None:
        raw_space = data["space"]
        if type(raw_space) is not dict:
            fail("space", f"expected an object, got {_type_name(raw_space)}")
        try:
            space = SearchSpace.from_dict(raw_space)
        except WorkbenchError as exc:
            fail("space", str(exc))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            fail("space", f"malformed ({type(exc).__name__}: {exc})")

    device = obj("device")
    if "simulated" in device and type(device["simulated"]) is not bool:
        fail("device.simulated", f"expected true or false, got {_short(device['simulated'])}")
    if "name" in device:
        if type(device["name"]) is not str:
            fail("device.name", f"expected text, got {_type_name(device['name'])}")
        check_name(device["name"], "device.name", fail)
    _check_device_fields(device, fail)
    backend = obj("backend")
    if "kind" in backend and type(backend["kind"]) is not str:
        fail("backend.kind", f"expected text, got {_type_name(backend['kind'])}")
    # the timings are what the backend made them, whatever the device record says: a simulator's
    # session with "simulated": false (or a replay's without its flags) was shown, exported and
    # continued as GPU measurements
    if backend.get("kind") == "sim" and device.get("simulated") is not True:
        device = {**device, "simulated": True}
    elif backend.get("kind") == "replay" and not (device.get("replayed") is True or device.get("recorded") is True):
        device = {**device, "replayed": True}
    try:
        constraints = Constraints.from_dict(data.get("constraints"))
    except WorkbenchError as exc:
        fail("constraints", str(exc))
    try:
        weights = Weights.from_dict(data.get("weights"), data.get("directions"))
    except WorkbenchError as exc:
        fail("weights", str(exc))
    strategy = obj("strategy")
    _check_settings(backend, strategy, fail)
    baselines: dict[str, dict[str, float]] = {}
    for name, metrics in obj("baselines").items():
        baselines[name] = _numbers(metrics, f"baselines.{name}", fail)

    default_config = None
    raw_default = data.get("default_config")
    if raw_default is not None:
        if type(raw_default) is not dict:
            fail("default_config", f"expected an object, got {_type_name(raw_default)}")
        for key, value in raw_default.items():
            _check_value(value, f"default_config.{_short(key)}", fail)
        # the template's default is a point of comparison, not a measurement: outside the session's
        # (edited) domains it is left out rather than making every trial of the file unreadable
        default_config = Config(raw_default) if space is None or space.in_domains(raw_default) else None
    created_at = data.get("created_at", 0.0)
    if type(created_at) not in _NUMBER_TYPES or not math.isfinite(created_at) or abs(created_at) > MAX_EPOCH_S:
        fail("created_at", f"{_short(created_at)} is not a time (seconds since the epoch, before the year 10000)")
    notes = text("notes")
    if len(notes) > MAX_TEXT_CHARS:
        fail("notes", f"{len(notes):,} characters is more than the {MAX_TEXT_CHARS:,} kept")
    extra = obj("extra")
    _check_extra(extra, fail)
    session_id = text("id")
    if len(session_id) > 64 or not all(c.isalnum() or c in "-_" for c in session_id):
        fail("id", "expected up to 64 letters, digits, '-' or '_'")
    try:
        run = RunSettings.from_dict(data.get("run"))
    except WorkbenchError as exc:
        fail("run", str(exc))
    except TypeError as exc:
        fail("run", f"malformed ({exc})")

    raw_trials = data.get("trials", [])
    if type(raw_trials) is not list:
        fail("trials", f"expected a list, got {_type_name(raw_trials)}")
    names = frozenset(space.names) if space is not None else None
    trials = [trial_from_dict(rec, f"trials[{i}]", fail, names) for i, rec in enumerate(raw_trials)]
    reference = _reference_problem(problem, trials)
    trials = [_at_problem_types(trial, reference) for trial in trials]
    session = Session(
        kernel=kernel,
        kind=kind,
        source_hash=text("source_hash"),
        problem=dict(problem),
        space=space,
        backend=cast(BackendInfo, dict(backend)),  # key types checked above (_check_settings)
        device=cast(DeviceInfo, dict(device)),
        constraints=constraints,
        weights=weights,
        strategy=cast(StrategyInfo, dict(strategy)),
        trials=trials,
        baselines=baselines,
        default_config=default_config,
        created_at=float(created_at),
        notes=notes,
        extra=dict(extra),
        id=session_id or _identity_of_unnamed(kernel, float(created_at), text("source_hash")),
        run=run,
    )
    _check_trials(session, source)
    _check_sweep_plan(session, source)
    return session


def _check_sweep_plan(session: Session, source: str) -> None:
    """A size sweep's plan (``extra.sweep``) is read as the file loads: a hand-edited one was
    dropped without a word by ``show`` and ``export`` (no sweep line, no note of sizes left) and
    refused only by a continued run, in a line that named no file."""
    from workbench.core.domain.sizes import SWEEP_KEY, sweep_plan  # (it builds on this module)

    if SWEEP_KEY in session.extra:
        try:
            sweep_plan(session)
        except WorkbenchError as exc:  # (its line names the field: extra.sweep.budget: ...)
            raise SessionFormatError(f"{source}: {exc}") from None


def _reference_problem(problem: Mapping[str, Any], trials: Sequence[Trial]) -> Mapping[str, Any]:
    """What every trial's problem is checked against: the session's, or where the session has none
    (a hand-written file's ``"problem": {}``) its first trial's. Without it such a file held ``n`` as
    1 in one trial and 1.0 in another, or ``dtype`` in some trials only: sizes nothing could tell
    apart by name, or choose."""
    if problem:
        return problem
    return next((t.problem for t in trials if t.problem), problem)


def _at_problem_types(trial: Trial, problem: Mapping[str, Any]) -> Trial:
    """``trial`` with each number of its problem written as the session's problem writes that
    parameter's (4096 for 4096.0 where the session has the integer 4096, 2.0 for 2 where it has a
    float): the same size, which a hand-edited file spelt otherwise, was a size of its own (listed
    apart, and a dispatch export gave two ranges that size, the one of the config measured slower).
    A number that is no whole one stays as it is: the checks after this say what is wrong with it."""
    if not trial.problem or not problem:
        return trial
    changed = False
    spelt: dict[str, Any] = {}
    for name, value in trial.problem.items():
        ours = problem.get(name)
        if type(ours) is int and type(value) is float and value.is_integer() and abs(value) < 2**63:
            value, changed = int(value), True
        elif type(ours) is float and type(value) is int:
            value, changed = float(value), True
        spelt[name] = value
    return replace(trial, problem=spelt) if changed else trial


def _check_trials(session: Session, source: str, trials: list[Trial] | None = None) -> None:
    """Whole-list checks: unique indices, configs over the space's slots and in their domains."""
    seen: set[int] = set()
    space = session.space
    names = frozenset(space.names) if space is not None else None
    trials = session.trials if trials is None else trials
    reference = _reference_problem(session.problem, trials)
    whose = "the session's problem" if session.problem else "the first trial's problem"
    for i, trial in enumerate(trials):
        if trial.index in seen:
            raise SessionFormatError(f"{source}: trials[{i}].index: {trial.index} appears twice")
        seen.add(trial.index)
        if names is not None and trial.config.keys() != names:
            problem = _slot_problem(trial.config, names)
            raise SessionFormatError(f"{source}: trials[{i}].config: {problem}")
        if trial.problem is not None and reference and trial.problem.keys() != reference.keys():
            raise SessionFormatError(f"{source}: trials[{i}].problem: {_problem_mismatch(trial.problem, reference, whose)}")
        if trial.problem is not None and reference:
            for name, value in trial.problem.items():
                if _value_kind(value) != _value_kind(reference[name]):
                    # "4096" beside 4096 would make a size of its own, listed and exported apart
                    raise SessionFormatError(f"{source}: trials[{i}].problem.{name}: {value!r} is "
                                             f"{_value_kind(value)}, where {whose} has "
                                             f"{_value_kind(reference[name])}")
    if space is not None and not _all_in_domains(space, [t.config for t in trials]):
        fail = session_failer(source)
        for i, trial in enumerate(trials):  # find and name the first offending value
            _check_config(space, trial.config, f"trials[{i}].config", fail)


def _value_kind(value: Any) -> str:
    """A problem value's kind as a file states it: a bool, a number (int or float alike) or text."""
    if isinstance(value, bool):
        return "a true/false value"
    return "a number" if isinstance(value, (int, float)) else "text"


def _problem_mismatch(theirs: Mapping[str, Any], ours: Mapping[str, Any], whose: str = "the session's problem") -> str:
    missing = sorted(ours.keys() - theirs.keys())
    if missing:
        return f"has no value for problem parameter {_short(missing[0])}"
    return f"{_short(sorted(theirs.keys() - ours.keys())[0])} is not a parameter of {whose}"


def _all_in_domains(space: SearchSpace, configs: list[Config]) -> bool:
    """True when every config's values lie in their slots' domains, with the slots' exact types.

    Checked a slot at a time over all configs with set operations (100,000 trials in a few
    milliseconds); False sends the caller to the per-trial check that names the culprit.
    """
    for slot in space.slots:
        column = [c[slot.name] for c in configs]
        if not set(map(type, column)) <= {slot._type}:  # type: ignore[attr-defined]
            return False
        if not set(column) <= slot._positions.keys():  # type: ignore[attr-defined]
            return False
    return True


#: Device fields the views compute with (peaks, counts) and those they show as text or test as flags;
#: null stands for unknown. Other fields a recording brings along are kept as they are.
_DEVICE_NUMBERS = ("peak_bandwidth_gbs", "peak_fp32_gflops", "memory_gb", "sm_count", "index",
                   "driver_version", "runtime_version")
_DEVICE_TEXTS = ("recording", "backend", "model", "arch", "compute_capability", "pci_bus_id", "path")
_DEVICE_FLAGS = ("replayed", "recorded")


def _check_device_fields(device: Mapping[str, Any], fail: Fail) -> None:
    """The device's known fields have their types: the window computed a peak fraction from
    ``peak_fp32_gflops`` of an edited file and failed to show it (a dict is no number)."""
    for key in _DEVICE_NUMBERS:
        value = device.get(key)
        if value is not None and not (type(value) in _NUMBER_TYPES and math.isfinite(value)):
            fail(f"device.{key}", f"{_short(value)} is not a finite number")
    for key in _DEVICE_TEXTS:
        value = device.get(key)
        if value is not None and type(value) is not str:
            fail(f"device.{key}", f"expected text, got {_type_name(value)}")
    for key in _DEVICE_FLAGS:
        value = device.get(key)
        if value is not None and type(value) is not bool:
            fail(f"device.{key}", f"expected true or false, got {_short(value)}")


def _check_typed_back(name: str, value: Any, where: str, fail: Fail) -> None:
    """A run setting restored into a text field (``n=1024, mode=fast``) must read back as itself:
    text that the field reads as something else (``"NaN"`` as a refused number, ``"12"`` as an int,
    ``"a,b"`` as two settings) would make the window fail to show the file."""
    try:
        same = parse_assignment_list(f"{name}={value}") == {name: value}
    except WorkbenchError:
        same = False
    if not same or type(parse_value(str(value))) is not type(value):
        fail(where, f"{_short(value)} does not read back as itself when typed ({name}={value})")


def _check_settings(backend: Mapping[str, Any], strategy: Mapping[str, Any], fail: Fail) -> None:
    """The run settings a reopened session restores into the run controls have their types."""
    options = backend.get("options", {})
    if type(options) is not dict:
        fail("backend.options", f"expected an object, got {_type_name(options)}")
    for key in ("path", "gpu_model", "kernel", "arch", "compile"):
        if key in options and options[key] is not None and type(options[key]) is not str:
            fail(f"backend.options.{key}", f"expected text, got {_type_name(options[key])}")
    if "problem" in options and options["problem"] is not None:  # the window's problem field shows it
        for name, value in checked_problem(options["problem"], "backend.options.problem", fail).items():
            _check_typed_back(name, value, f"backend.options.problem.{name}", fail)
    seed = options.get("seed")
    if seed is not None and not (type(seed) is int and 0 <= seed < 2**63):
        fail("backend.options.seed", f"{_short(seed)} is not a seed (an integer from 0 to 2**63-1)")
    if options.get("noise") is not None and type(options["noise"]) is not bool:
        fail("backend.options.noise", f"expected true or false, got {_type_name(options['noise'])}")
    wait = options.get("compile_wait_s")
    if wait is not None and not (type(wait) in (int, float) and math.isfinite(wait) and wait >= 0):
        fail("backend.options.compile_wait_s", f"{_short(wait)} is not a number of seconds")
    pace = options.get("delay_s")  # restored into the delay box (a continued run paces as the box says)
    if pace is not None and not is_pace(pace):
        fail("backend.options.delay_s", f"{_short(pace)} is not a pace from 0 to {MAX_PACE_S:g} seconds")
    # an architecture names files (its resource table) and a compile target: sm_ and digits only,
    # never a path; the compile mode is one the simulator has
    arch = options.get("arch")
    if arch is not None and not is_arch_name(arch):
        fail("backend.options.arch", f"{_short(arch)} is not a GPU architecture (sm_ and digits, e.g. sm_90)")
    mode = options.get("compile")
    if mode is not None and mode not in SIM_COMPILE_MODES:
        fail("backend.options.compile", f"{_short(mode)} is not one of {', '.join(SIM_COMPILE_MODES)}")
    for key in ("kernel_dirs",):
        if key in options and not (type(options[key]) is list and all(type(d) is str for d in options[key])):
            fail(f"backend.options.{key}", "expected a list of folder names")
    if "name" in strategy:  # shown by show and the window: one printable line, as a kernel name
        if type(strategy["name"]) is not str:
            fail("strategy.name", f"expected text, got {_type_name(strategy['name'])}")
        check_name(strategy["name"], "strategy.name", fail)
    seed = strategy.get("seed")
    if seed is not None and not (type(seed) is int and 0 <= seed < 2**63):
        fail("strategy.seed", f"{_short(seed)} is not a seed (an integer from 0 to 2**63-1)")
    if "options" in strategy and type(strategy["options"]) is not dict:
        fail("strategy.options", f"expected an object, got {_type_name(strategy['options'])}")
    for name, value in (strategy.get("options") or {}).items():  # show prints each name and value
        check_name(name, f"strategy.options.{_short(name)}", fail)
        # a value the option does not take, of any type or length, is replaced by its default on resume
        # and shown shortened; one with a line break or a control character would forge a line
        if type(value) is str and not value.isprintable():
            fail(f"strategy.options.{_short(name)}", f"{_short(value)} holds a character that does not print on "
                                                      "one line (a line break, a control character, a no-break space)")
    if "objectives" in strategy:  # the metrics of a Pareto search: two or more distinct names
        objectives = strategy["objectives"]
        if not (type(objectives) is list and all(type(m) is str for m in objectives)):
            fail("strategy.objectives", f"expected a list of metric names, got {_short(objectives)}")
        for metric in objectives:
            check_name(metric, "strategy.objectives", fail)
        if len(objectives) < 2 or len(set(objectives)) != len(objectives):
            fail("strategy.objectives", f"{_short(objectives)}: a Pareto search has two or more different metrics")
    earlier = strategy.get("earlier_options", {})
    if type(earlier) is not dict:
        fail("strategy.earlier_options", f"expected an object, got {_type_name(earlier)}")
    for name, options in earlier.items():
        if type(options) is not dict:
            fail(f"strategy.earlier_options.{_short(name)}", f"expected an object, got {_type_name(options)}")


def check_name(value: str, where: str, fail: Fail) -> None:
    """A name that reaches exported source and file names: one printable line of bounded length."""
    if len(value) > MAX_NAME_CHARS:
        fail(where, f"{len(value):,} characters is longer than the {MAX_NAME_CHARS} allowed")
    if not value.isprintable():
        fail(where, f"{_short(value)} holds a line break or another control character")


def _check_value(value: Any, where: str, fail: Fail) -> None:
    """A problem or config value: a finite number, a bool, or one short printable line of text."""
    t = type(value)
    if t is float:
        if not math.isfinite(value):
            fail(where, f"{value!r} is not a finite number")
    elif t is str:
        check_name(value, where, fail)
    elif t is int:
        if not int_in_range(value):
            fail(where, f"an integer of {value.bit_length()} bits does not fit 64 bits")
    elif t is not bool:
        fail(where, f"{_short(value)} is not a number, bool or string")


def _check_config(space: SearchSpace, values: Mapping[str, Any], where: str, fail: Fail) -> None:
    """Every value of the config is in its slot's domain (an edited file cannot smuggle one in)."""
    for slot in space.slots:
        if slot.name in values and not slot.accepts(values[slot.name]):
            value = values[slot.name]
            fail(f"{where}.{slot.name}", f"{_short(value)} is not in the slot's domain")


# ------------------------------------------------------------------------------------------------
# Files
# ------------------------------------------------------------------------------------------------


def is_session_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` looks like a session file (its first 4 KB name the format): what a command
    that writes sessions may replace without ``--force``."""
    try:
        with open_regular(path) as handle:
            head = handle.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    return f'"format": "{FORMAT_NAME}"' in head or f'"format":"{FORMAT_NAME}"' in head


def journal_path(path: str | os.PathLike[str]) -> Path:
    """``out.json`` -> ``out.json.journal`` (a path already ending in ``.journal`` is kept)."""
    p = Path(path)
    return p if p.name.endswith(JOURNAL_SUFFIX) else p.with_name(p.name + JOURNAL_SUFFIX)


def has_journal(path: str | os.PathLike[str]) -> bool:
    """Whether the session at ``path`` has a journal beside it (a killed run's newest trials). A
    name too long for a journal beside it (a session named with 250 characters: the journal adds
    8) has none, rather than an error from every command that looks."""
    try:
        return journal_path(path).is_file()
    except OSError:
        return False


def session_path_of(path: str | os.PathLike[str]) -> Path:
    """The session file a path stands for: ``out.json.journal`` (the journal a killed run left)
    stands for ``out.json``, which it is read with and continued into; any other path for itself."""
    p = Path(path)
    return p.with_name(p.name[: -len(JOURNAL_SUFFIX)]) if p.name.endswith(JOURNAL_SUFFIX) else p


def _header_text(session: Session) -> str:
    """The header fields as the file holds them (indented JSON)."""
    return json.dumps(session.header_dict(), indent=1, allow_nan=False, default=json_default)


#: Search spaces (by identity) whose stored form was already read back once: a space does not
#: change, and reading a recording's space of many points back costs far more than parsing it.
_SPACES_READ_BACK: dict[int, "weakref.ref[SearchSpace]"] = {}


def _check_header_loads(session: Session, head: str) -> Session:
    """Read ``head`` (the header of ``session``) back as :func:`load_session` would, with the same
    parser and validators, trials aside: a field that cannot be read back (an integer beyond 64 bits,
    a name too long) is refused here, before the write, rather than leaving a file nothing can open.
    Raises SessionFormatError; returns the header as read back (what the file will hold)."""
    data = _parse_json(head, "cannot save session")  # every integer of the header is bounded here
    space = session.space
    known = space is not None and (ref := _SPACES_READ_BACK.get(id(space))) is not None and ref() is space
    if known:
        data["space"] = None
    read_back = decode_session({**data, "trials": []}, "cannot save session")
    if space is not None and not known:
        key = id(space)
        _SPACES_READ_BACK[key] = weakref.ref(space, lambda _gone: _SPACES_READ_BACK.pop(key, None))
    return read_back


def _write_document(f: IO[str], session: Session, trials: list[Trial], head: str) -> None:
    """The session as one JSON object: header fields indented (``head``), then one trial per line."""
    f.write(head[:-2])  # drop the closing "\n}"
    if trials:
        f.write(',\n "trials": [\n')
        f.write(",\n".join(map(dumps_strict, map(trial_to_dict, trials))))
        f.write("\n ]\n}\n")
    else:
        f.write(',\n "trials": []\n}\n')


def save_session(session: Session, path: str | os.PathLike[str], *, keep_journal: bool = False) -> Path:
    """Write the session atomically; then drop its journal, which the file now supersedes.

    With ``keep_journal`` (a save in the middle of a live run) the journal stays; either way a
    :class:`Journal` still appending notices and starts a fresh one, so no later trial is lost.
    """
    p = session_path_of(path)
    trials = list(session.trials)  # a snapshot: the engine may append while we write
    try:  # never write a file that load_session would refuse: the file there stays as it was
        head = _header_text(session)
        read_back = _check_header_loads(session, head)
        _check_trials(session, "cannot save session", trials)
    except SessionFormatError as exc:
        raise WorkbenchError(f"{p}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise WorkbenchError(f"{p}: cannot save session: {exc}") from None
    if read_only(p):  # the rename below would replace it regardless of its mode
        raise read_only_refusal(p, "save to another file")
    try:
        with _no_gc():
            atomic_write(p, lambda f: _write_document(f, session, trials, head))
    except OSError as exc:
        raise write_error(f"{p}: cannot save session ({exc.strerror or exc})", exc) from None
    except (TypeError, ValueError) as exc:
        raise WorkbenchError(f"{p}: cannot save session: {exc}") from None
    session.objective_on_disk[disk_key(p)] = (read_back.constraints, read_back.weights)  # as the file says them
    if not keep_journal:
        _drop_journal(journal_path(p), {t.index for t in trials}, session)
    return p


def _journal_of(jp: Path, session: "Session") -> bool:
    """Whether the journal at ``jp`` (if any) was written for ``session``: only a session's own
    journal is superseded by saving it (another's holds trials the file lacks). Journals older than
    format 2 carry no id and are matched by kernel and creation time."""
    try:
        with open_regular(jp) as handle:
            first = handle.readline(1 << 20)
    except OSError:  # missing, or no file of ours (a FIFO, a folder): nothing to drop
        return False
    try:
        # (with a byte-order mark, as a load reads it: kept, it was merged again over the next save)
        header = loads_checked(first.decode("utf-8").removeprefix("\ufeff"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    if type(header) is not dict:
        return False
    theirs = header.get("id") or ""
    if theirs:
        return theirs == session.id
    return header.get("kernel") == session.kernel and header.get("created_at") == session.created_at


def _drop_journal(jp: Path, saved: set[int], session: "Session") -> None:
    """Remove a journal the saved file supersedes (its own session's), unless it holds a trial the
    file lacks.

    A journal still being written by this process is checked under its lock: a trial that
    finished while the file was being written is in the journal but not in the file, and
    removing the journal then would lose it if the process died before the next save.
    """
    live = _LIVE_JOURNALS.get(str(jp.absolute()))
    if live is None:
        if _journal_of(jp, session):
            jp.unlink(missing_ok=True)
        return
    live.remove_if_covered(saved)


def _parse_json(text: str, source: str) -> Any:
    if not text.strip():
        raise SessionFormatError(f"{source}: the file is empty")
    try:
        return loads_checked(text)
    except json.JSONDecodeError as exc:
        raise SessionFormatError(
            f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except IntTooLong as exc:
        raise SessionFormatError(f"{source}: {exc}") from None
    except RecursionError:
        raise SessionFormatError(f"{source}: JSON nested too deeply") from None


def _compressed_session(data: bytes) -> bool:
    """Whether gzip ``data`` starts as a session file does (its format key): only the first
    kilobytes are decompressed, whatever the file's size or what it expands to."""
    try:
        head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, 4096)
    except zlib.error:
        return False
    return FORMAT_NAME.encode() in head


def _read_text(path: Path) -> str:
    """The file as text: a regular file of at most :data:`MAX_FILE_BYTES`, UTF-8.

    Sessions are never compressed, but Kernel Tuner cache files often are (``.json.gz``): a gzip
    file is named as such, with the command that imports a cache, rather than as undecodable text.
    """
    data = read_capped(path, "session file", MAX_FILE_BYTES)
    if data[:2] == b"\x1f\x8b":
        if _compressed_session(data):  # import-kt, which the other hint names, refuses a session
            raise SessionFormatError(f"{path}: a gzip-compressed session; sessions are read as plain JSON: "
                                     f"decompress it (gunzip -k {path}) and open the file that gives")
        raise SessionFormatError(template=f"{quoted(path)}: a gzip-compressed file, not a session; if it is a "
                                          "Kernel Tuner cache file, {import_cache}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SessionFormatError(f"{path}: not UTF-8 text (is this a session file?)") from None
    # a byte-order mark, which Windows editors put at the start of UTF-8 files, is no part of the
    # text (the JSON parser refused it: "Unexpected UTF-8 BOM (decode using utf-8-sig)")
    return text.removeprefix("\ufeff")


def read_journal(path: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, list[Trial]]:
    """The journal's header (the session minus trials) and its trials, validated.

    A last line without its newline that does not parse is the trace of a killed writer and is
    dropped; a bad line anywhere else is an error naming the line.
    """
    jp = journal_path(path)
    source = str(jp)
    fail = session_failer(source)
    text = _read_text(jp)
    lines = text.split("\n")
    header: dict[str, Any] | None = None
    trials: list[Trial] = []
    last = len(lines) - 1
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = loads_checked(line)
        except (json.JSONDecodeError, RecursionError, IntTooLong):
            if number - 1 == last:  # no newline after it: a write cut short
                break
            fail(f"line {number}", "not valid JSON")
        if type(rec) is dict and "format" in rec:
            if header is not None or trials:
                fail(f"line {number}", "a header line can only come first")
            _check_version(rec, source)
            header = rec
            continue
        trials.append(trial_from_dict(rec, f"line {number}", fail))
    return header, trials


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small acyclic objects.

    Loading 100,000 trials allocates about a million dicts and records; the collector would
    rescan them repeatedly (a third of the load time) and can free nothing, since none form cycles.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_session(path: str | os.PathLike[str]) -> Session:
    """Read, validate and return a session, with any journalled trials merged in.

    When only ``<path>.journal`` exists (the process died before its first save) the session is
    rebuilt from the journal's header and trials. Trials are merged by ``index``; the journal wins
    when both hold one. A journal of another session is refused (see ``_check_journal_belongs``).
    """
    with _no_gc():
        return _load_session(path)


def _load_session(path: str | os.PathLike[str]) -> Session:
    p = session_path_of(path)
    jp = journal_path(p)
    try:
        header, journalled = read_journal(jp) if has_journal(p) else (None, None)
    except SessionFormatError as exc:
        if isinstance(exc, (UnreadableFile, NewerFormat)):
            raise
        # the way forward, as for a journal of another session: the file as last saved opens
        # without it (a damaged line stopped show, export, --resume and the window alike); with
        # no file, the name takes a new session once the journal is out of the way
        if not (p.exists() or p.is_symlink()):
            raise SessionFormatError(f"{exc}; move the journal away (to keep it) to use {p.name} for a new "
                                     "session") from None
        raise DamagedJournal(f"{exc}; move the journal away (to keep it) to open {p.name} as last saved") from None
    if p.exists() or p.is_symlink():
        text = _read_text(p)
        if journalled and header is not None and not text.strip():
            # (a file sync's placeholder, a truncation: saves replace the file whole, never empty it)
            raise SessionFormatError(f"{p}: the file is empty; the journal beside it ({jp.name}) holds "
                                     f"{len(journalled)} trial{'' if len(journalled) == 1 else 's'}: move the "
                                     "empty file away to open them")
        try:
            session = Session.from_dict(_parse_json(text, str(p)), source=str(p))
        except SessionFormatError as exc:
            if not journalled or header is None or isinstance(exc, (UnreadableFile, NewerFormat)):
                raise
            # a file another program wrote over (or a crash's debris) beside a killed run's journal:
            # the refusal named the file alone, and nothing said its trials were there to take
            raise SessionFormatError(f"{exc}; the journal beside it ({jp.name}) holds {len(journalled)} "
                                     f"trial{'' if len(journalled) == 1 else 's'}: move the file away to open "
                                     "them") from None
    elif journalled is not None:
        if header is None:
            raise SessionFormatError(f"{jp}: journal has no header line (cannot rebuild the session)")
        session = Session.from_dict({**header, "trials": []}, source=str(jp))
    else:
        raise SessionFormatError(f"{p}: no such file")
    if journalled and p.exists() and _journal_older_than_file(session.trials, journalled):
        journalled = None  # nothing in it the file lacks: its header, older than the file's, is no news
    if journalled:
        if p.exists():
            _check_journal_belongs(header, session, jp, p)
            # The journal's header is the newer: a run writes it when it starts (and again after
            # a save in its middle), so it holds what that run was given (budget, strategy,
            # constraints, weights, an edited space). A continuation killed before its final save
            # came back with the file's older settings: its trials, searched under a latency
            # limit, ranked without it, and "22 of its 10 evaluations" done.
            assert header is not None  # (checked above)
            saved = session.trials
            session = Session.from_dict({**header, "trials": []}, source=str(jp))
            session.trials = saved
        session.trials = _merge_trials(session.trials, journalled, jp)
        _check_trials(session, str(jp))
        session.journal_read, session.journal_trials = jp, len(journalled)
    session.objective_on_disk[disk_key(p)] = (session.constraints, session.weights)
    return session


def _journal_older_than_file(saved: list[Trial], journalled: list[Trial]) -> bool:
    """Whether a journal holds nothing its session file lacks, and the file holds trials it lacks:
    then the file was saved after the journal was written (a copy of an old journal brought back
    beside it by a file sync, or restored from a backup), and the journal's header, which a loader
    otherwise takes over the file's as the newer, would roll back the constraints, weights and
    budget saved since. A live journal always adds something: the trials a run measured after
    the file's last save, or newer records (refinements) of trials the file holds; one written at
    a run's start holds every trial the file had then."""
    by_index = {t.index: t for t in saved}
    if len(by_index) <= len({t.index for t in journalled}):
        return False
    for trial in journalled:
        kept = by_index.get(trial.index)
        if kept is None or trial_to_dict(kept) != trial_to_dict(trial):
            return False
    return True


def disk_key(path: str | os.PathLike[str]) -> str:
    """The key of ``path`` in :attr:`Session.objective_on_disk`: its resolved path (a save
    renames a new file over the old one, so the file's inode is no key)."""
    return str(resolved(path))


def _check_journal_belongs(header: dict[str, Any] | None, session: Session, jp: Path, p: Path) -> None:
    """Refuse a journal written for another session: merging it would mix two sessions' trials.

    Sessions carry an ``id`` since format 2; older ones are matched by kernel and creation time.
    """
    # (DamagedJournal: the file opens once the journal is moved away, which recovering an autosave does)
    if header is None:
        raise DamagedJournal(f"{jp}: journal has no header line, so it cannot be matched to {p.name}; move it away to open {p.name}")
    theirs = header.get("id") or ""
    if not _journal_matches(header, session):
        raise DamagedJournal(
            f"{jp}: journal of another session (kernel {header.get('kernel')!r}, id {theirs or 'none'}), "
            f"not of {p.name}; move it away to open {p.name}"
        )


def _journal_matches(header: Mapping[str, Any], session: Session) -> bool:
    """Whether a journal's header names ``session``: its id, or for files older than ids (format
    1) its kernel and creation time."""
    theirs = header.get("id") or ""
    if theirs:
        return bool(theirs == session.id)
    return bool(header.get("kernel") == session.kernel and header.get("created_at") == session.created_at)


def _merge_trials(saved: list[Trial], journalled: list[Trial], source: Path | None = None) -> list[Trial]:
    """The file's trials and the journal's, by index; the journal wins where both hold one.

    The journal is written after the file was read (a run continues a loaded session), so a trial
    it holds under an index the file also has is the newer record of that evaluation: the same
    config (a refinement), never another one, which would replace a measured trial by a stranger.
    """
    by_index = {t.index: t for t in saved}
    changed = False
    for trial in journalled:
        earlier = by_index.get(trial.index)
        if earlier is not None and earlier.config.id != trial.config.id:
            raise DamagedJournal(
                f"{source or 'journal'}: a record of trial {trial.index} holds config {trial.config.id}, where the "
                f"session's trial {trial.index} is config {earlier.config.id}; a journal only adds trials or re-records "
                "one; move it away to open the session")
        if earlier is not trial:
            by_index[trial.index] = trial
            changed = True
    if not changed:
        return saved
    return [by_index[i] for i in sorted(by_index)]


def clean_stale_temporaries(path: str | os.PathLike[str]) -> list[Path]:
    """Remove temporary files a killed save or journal start left beside ``path``.

    Atomic writes go through ``.NAME.XXXX.tmp`` beside the target and are renamed at the end, so a
    kill in between leaves one behind. Only the owner of the session's lock may call this (another
    live writer's temporary file would otherwise be removed under it). A file of that name is
    removed only when it could be such a leftover: a regular file, empty or starting as a session
    or a journal does (``{``); a person's own file that merely has the shape of the name is kept.
    """
    p = session_path_of(path)
    removed: list[Path] = []
    folder = p.parent if str(p.parent) else Path(".")
    for name in (p.name, journal_path(p).name):
        # exactly what tempfile.mkstemp makes from prefix ".NAME." and suffix ".tmp" (8 characters
        # between them), so another file's temporaries (".NAME.bak.XXXX.tmp") are never matched
        shape = re.compile(rf"\.{re.escape(name)}\.[a-z0-9_]{{8}}\.tmp")
        for leftover in folder.glob(f".{glob_escape(name)}.*.tmp"):
            if not shape.fullmatch(leftover.name) or not _could_be_our_temporary(leftover):
                continue
            try:
                leftover.unlink()
                removed.append(leftover)
            except OSError:
                pass
    return removed


def _could_be_our_temporary(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link: a save never makes one) that is empty or
    starts as the JSON a save or a journal writes; read as :func:`open_regular` reads, never
    waiting on a FIFO put there."""
    if path.is_symlink():
        return False
    try:
        with open_regular(path) as handle:
            return handle.read(1) in (b"", b"{")
    except OSError:
        return False


#: Journals open in this process, by absolute path, so that a save can check what they hold.
_LIVE_JOURNALS: "weakref.WeakValueDictionary[str, Journal]" = weakref.WeakValueDictionary()


class Journal:
    """Append-only record of finished trials beside the session file, for crash recovery.

    Each line is one JSON object: the first is the session header (everything but trials), the
    rest are trials in the format of the session file. Every ``append`` is flushed and fsynced,
    so a killed process loses at most the trial being written. Thread-safe.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.path = journal_path(path)
        self.fsync = fsync
        self._file: IO[str] | None = None
        self._header: str = ""
        self._lock = threading.Lock()
        self._indices: set[int] = set()  # trials in the journal file now (see _drop_journal)
        self._session: Session | None = None  # whose trials a journal removed by another hand gets again
        self._removed = False  # the file is gone because a save covered it (remove_if_covered)

    def start(self, session: Session) -> None:
        """Begin journalling: header plus the trials already in the session, atomically."""
        header = dumps_strict(session.header_dict())
        with self._lock:
            self._close()
            self._header = header

            def write(f: IO[str]) -> None:
                f.write(header + "\n")
                for trial in session.trials:
                    f.write(dumps_strict(trial_to_dict(trial)) + "\n")

            try:
                atomic_write(self.path, write)
                self._file = open(self.path, "a", encoding="utf-8", newline="\n")
            except OSError as exc:
                raise WorkbenchError(f"{self.path}: cannot write journal ({exc.strerror or exc})") from None
            self._indices = {t.index for t in session.trials}
            self._session, self._removed = session, False
            _LIVE_JOURNALS[str(self.path.absolute())] = self

    def append(self, trial: Trial) -> None:
        """Record one finished trial durably."""
        line = dumps_strict(trial_to_dict(trial)) + "\n"
        with self._lock:
            if self._file is None:
                raise WorkbenchError(f"{self.path}: journal not started")
            try:
                written = os.fstat(self._file.fileno()).st_nlink == 0 and self._restart(trial)
                if not written:
                    self._file.write(line)
                self._file.flush()
                if self.fsync:
                    os.fsync(self._file.fileno())
            except OSError as exc:  # disk full, folder gone: say so in one line
                raise WorkbenchError(f"{self.path}: cannot append to journal ({exc.strerror or exc})") from None
            self._indices.add(trial.index)

    def _restart(self, trial: Trial) -> bool:
        """A new journal file where the last one is gone. Removed by a save that covered it, it
        starts with the header alone; removed by another hand (a person, a cleaner), it gets every
        trial of the session again, ``trial`` among them: restarted with the header alone, the
        trials the file had held and no save had were lost at the next kill. Opened exclusively:
        a file another program put at the journal's name is not written over. Whether it wrote
        ``trial`` (its line is not to be appended again)."""
        assert self._file is not None
        self._file.close()
        trials = [] if self._removed or self._session is None else list(self._session.trials)
        if self._session is not None and not self._removed and all(t.index != trial.index for t in trials):
            trials.append(trial)
        try:
            self._file = open(self.path, "x", encoding="utf-8", newline="\n")
        except FileExistsError:
            self._file = None
            raise WorkbenchError(f"{self.path}: another file took the journal's place while the run wrote it; it "
                                 "is left as it is, and the run's trials are in its session only") from None
        self._file.write(self._header + "\n")
        for kept in trials:
            self._file.write(dumps_strict(trial_to_dict(kept)) + "\n")
        self._indices = {t.index for t in trials}
        self._removed = False
        return bool(trials)

    def remove_if_covered(self, saved: set[int]) -> bool:
        """Delete the journal file when every trial in it is among ``saved`` (trial indices just
        written to the session file), atomically with respect to :meth:`append`; True if removed.

        The next ``append`` then sees the file gone and starts a fresh journal with its header.
        """
        with self._lock:
            if not self._indices <= saved:
                return False
            self.path.unlink(missing_ok=True)
            self._removed = True
            return True

    def _close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError:  # what a failed append left buffered (disk full): that append said so already
                pass
        key = str(self.path.absolute())
        if _LIVE_JOURNALS.get(key) is self:
            del _LIVE_JOURNALS[key]

    def close(self) -> None:
        with self._lock:
            self._close()

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
