"""The backend contract and the registry.

A backend is created *inside a worker process* from a picklable :class:`BackendSpec`, prepared
once, then asked to evaluate configs one at a time. In the main process the same spec resolves to
a :class:`Target` (what is being tuned: its space, problem, identity and device), without
touching a GPU, so the engine and GUI can plan a run before any worker starts.

Backends report progress through ``phase``: ``phase("compile")`` before compiling, ``phase("run")``
before running and ``phase("verify")`` before comparing with the reference, so the pool applies the
compile, run and verify timeouts to the right part of the work (a slow check of 10^8 elements
must not eat the time a kernel is given to run).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping

from workbench.core.errors import WorkbenchError
from workbench.core.domain.measurement import Measurement
from workbench.core.domain.records import MAX_PACE_S, BackendInfo, BackendOptions, DeviceInfo, is_pace
from workbench.core.domain.space import Config, SearchSpace, Value

PhaseCallback = Callable[[str], None]


def no_phase(_: str) -> None:
    return None


#: Backends whose runs may take a demonstration's pace (``delay_s``).
PACED_BACKENDS = ("sim", "replay")


def pace_option(spec: "BackendSpec") -> float:
    """The spec's ``delay_s``: the seconds between new candidates of a run (the engine's pace; see
    ``Engine._paced_room``), so a simulated or replayed run goes at a speed a presenter can talk
    over (they finish a hundred configs in a second otherwise). A number from 0 to
    :data:`MAX_PACE_S`, or one line saying what it is instead (a session file names it too)."""
    raw = spec.options.get("delay_s")
    if raw is None:
        return 0.0
    if not is_pace(raw):
        raise WorkbenchError(f"{spec.kind} backend: delay_s must be a number of seconds from 0 to {MAX_PACE_S:g}, "
                             f"got {raw!r}")
    return float(raw)


@dataclass(frozen=True)
class BackendSpec:
    """Picklable recipe for a backend: its kind and its options.

    Common options: ``kernel`` (template or benchmark name), ``problem`` (dict of overrides),
    ``kernel_dirs`` (extra template folders), ``seed``. Per kind: ``replay`` -> ``path``;
    ``sim`` -> ``gpu_model``, ``noise`` (bool); ``cuda`` -> ``device`` (int); ``python`` -> ``path``.
    """

    kind: str
    options: BackendOptions = field(default_factory=lambda: BackendOptions())

    def to_dict(self) -> BackendInfo:
        return {"kind": self.kind, "options": BackendOptions(**self.options)}


@dataclass(frozen=True)
class Target:
    """What a run tunes, as the main process sees it.

    ``kernel``: name; ``kind``: ``template`` | ``python`` | ``recording``; ``space``: the valid
    configs; ``problem``: resolved problem parameters; ``source_hash``: identity of the code being
    tuned (results cached per hash + problem + config); ``default_config``: the reference config
    measured first (None when the target has none); ``device``: description of what measures
    (``name``, ``simulated`` bool, ``backend``, and per-backend facts).
    """

    kernel: str
    kind: str
    space: SearchSpace
    problem: Mapping[str, Value]
    source_hash: str
    device: DeviceInfo
    default_config: Config | None = None
    description: str = ""
    #: Metrics its measurements report, when known in advance (a recording's, a backend's
    #: declaration); None when they cannot be known before trials report them.
    metrics: frozenset[str] | None = None
    #: How outputs are checked when that needs saying (a template without a reference); "" otherwise.
    reference: str = ""
    #: Source hashes earlier versions of the same code had (a shipped template whose spec only moved
    #: its imports or reworded its text): sessions measured with them are this target's too.
    earlier_hashes: frozenset[str] = frozenset()
    #: The earlier hashes of versions whose work profile (the simulator's description of the
    #: kernel) differed: a session simulated with estimated resources then is of another model.
    profile_changed_hashes: frozenset[str] = frozenset()
    #: What reading it had to repair or leave out (a recording cut short), said when a run starts.
    notes: tuple[str, ...] = ()
    #: What a new session of it keeps in ``extra`` besides (a recording's Kernel Tuner objective and
    #: field names, which an export as a cache writes back).
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EvalLimits:
    """Per-candidate limits. Timeouts are enforced by the pool; ``max_latency_ms`` lets a backend
    abort timing early (status ``aborted``, kept with the bound it was seen to exceed) when the
    first samples already exceed it by a margin."""

    compile_timeout_s: float = 60.0
    run_timeout_s: float = 10.0
    verify_timeout_s: float = 60.0
    max_latency_ms: float | None = None


class Backend(ABC):
    """Measures configs. Subclasses set ``kind`` and register in :data:`BACKENDS`."""

    kind: ClassVar[str] = ""
    simulated: ClassVar[bool] = False
    #: The metrics this backend reports (None: they depend on the kernel or the device, e.g. a
    #: user benchmark); used to tell a typo in a constraint or weight from a metric still to come.
    metrics: ClassVar[frozenset[str] | None] = None

    def __init__(self, spec: BackendSpec) -> None:
        self.spec = spec
        #: Set by a backend whose process state is no longer trustworthy (a CUDA error poisons the
        #: context): the worker returns the current measurement, then exits and is replaced.
        self.needs_restart = False

    @classmethod
    @abstractmethod
    def target(cls, spec: BackendSpec) -> Target:
        """Resolve the spec to a target in the main process (no GPU work, may compile nothing)."""

    def prepare(self) -> None:
        """Once per worker, before the first ``evaluate`` (load modules, allocate, probe device)."""

    @abstractmethod
    def evaluate(self, config: Config, limits: EvalLimits, phase: PhaseCallback = no_phase) -> Measurement:
        """Measure one config. Expected failures are returned as failed measurements, not raised."""

    def recorded_timings(self, config: Config) -> Mapping[str, float] | None:
        """The phase timings (s) of ``config``'s last evaluation as recorded elsewhere, or None.

        None (every backend that measures): the worker's clock times the phases of ``evaluate``.
        A backend that answers from a recording returns the recording's timings instead (empty
        when it holds none), because its own look-up time is no compile or run time of the kernel.
        """
        return None

    def close(self) -> None:
        """Release resources (called when the worker exits normally)."""


#: kind -> "module:Class", imported lazily so that ``cuda`` never loads CuPy unless chosen.
BACKENDS: dict[str, str] = {
    "python": "workbench.backends.python:PythonBackend",
    "replay": "workbench.backends.replay:ReplayBackend",
    "sim": "workbench.backends.sim:SimBackend",
    "cuda": "workbench.backends.cuda:CudaBackend",
}


def backend_class(kind: str) -> type[Backend]:
    """The backend class for a kind; a clear error for an unknown kind."""
    if kind not in BACKENDS:
        raise WorkbenchError(f"unknown backend {kind!r}; choose one of: {', '.join(sorted(BACKENDS))}")
    module_name, _, class_name = BACKENDS[kind].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def create_backend(spec: BackendSpec) -> Backend:
    """Instantiate the backend for a spec (inside a worker)."""
    return backend_class(spec.kind)(spec)
