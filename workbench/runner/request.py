"""What a person asks a run for (:class:`RunRequest`), checked where it is built.

The command line, the window and scripts all describe a run with one of these and hand it to the
run controller (:mod:`workbench.runner.controller`), so a field means the same whoever fills it.
Kept apart from the controller: building a request imports nothing of the engine, the backends or
the strategies, which the window does long before it starts anything.
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from workbench.backends.base import BackendSpec
from workbench.core.errors import WorkbenchError
from workbench.core.domain.objective import Constraints, Weights


#: The kind of value each field of a :class:`RunRequest` takes (None aside: "not said").
_REQUEST_KINDS = {
    **dict.fromkeys(("kernel", "backend", "replay", "gpu_model", "strategy", "executor", "ray_address"), "text"),
    **dict.fromkeys(("device", "budget", "patience", "workers"), "whole"),  # (a seed is checked with its range)
    **dict.fromkeys(("time_limit_s", "prune_keep", "compile_timeout_s", "run_timeout_s"), "number"),
    **dict.fromkeys(("noise", "allow_mixed_gpus", "warm_start", "trust_session_code"), "flag"),
    **dict.fromkeys(("problem", "backend_options", "strategy_options", "domains", "sizes"), "mapping"),
    **dict.fromkeys(("kernel_dirs", "objectives", "restrictions"), "texts"),
    "devices": "wholes", "constraints": "constraints", "weights": "weights", "spec": "spec",
}
_KIND_WORDS = {
    "text": "text", "whole": "a whole number", "number": "a number", "flag": "True or False",
    "mapping": "a dict", "texts": "a list or tuple of text (not one string)",
    "wholes": "a list or tuple of whole numbers", "constraints": "a Constraints (workbench.core.domain.objective)",
    "weights": "a Weights (workbench.core.domain.objective)", "spec": "a BackendSpec",
}


def _whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _of_kind(value: Any, kind: str) -> bool:
    """Whether ``value`` is of ``kind`` (a key of :data:`_KIND_WORDS`)."""
    if kind == "text":
        return isinstance(value, str)
    if kind == "whole":
        return _whole(value)
    if kind == "number":
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if kind == "flag":
        return isinstance(value, (bool, np.bool_))
    if kind == "mapping":
        return isinstance(value, Mapping)
    if kind in ("texts", "wholes"):
        return (isinstance(value, (list, tuple)) and
                all(isinstance(item, str) if kind == "texts" else _whole(item) for item in value))
    return isinstance(value, {"constraints": Constraints, "weights": Weights, "spec": BackendSpec}[kind])


@dataclass(frozen=True)
class RunRequest:
    """What a person asked for. ``None`` means "not said": a new session takes the default, a
    continued session keeps what it was saved with."""

    kernel: str | None = None
    backend: str | None = None
    #: An already resolved backend (scripts that plan their own, e.g. one per GPU); when given,
    #: the kernel, backend, replay, problem and backend option fields are not used for a new session.
    spec: BackendSpec | None = None
    replay: str | None = None
    kernel_dirs: tuple[str, ...] = ()
    problem: Mapping[str, Any] | None = None
    gpu_model: str | None = None
    noise: bool | None = None
    device: int | None = None
    #: Further backend options (replay ``delay_s``, sim ``compile``).
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    strategy: str | None = None
    strategy_options: Mapping[str, Any] | None = None
    seed: int | None = None
    constraints: Constraints | None = None
    weights: Weights | None = None
    #: Two or more metrics to search the Pareto front of (a multi-objective run); None: the
    #: session's own (continued), else one score.
    objectives: tuple[str, ...] | None = None
    #: Evaluations in this run (failures count). Continuing: None runs what is left of the
    #: session's recorded budget.
    budget: int | None = None
    time_limit_s: float | None = None
    patience: int | None = None
    prune_keep: float | None = None
    workers: int | None = None
    executor: str | None = None
    ray_address: str | None = None
    devices: tuple[int, ...] | None = None
    allow_mixed_gpus: bool | None = None
    compile_timeout_s: float | None = None
    run_timeout_s: float | None = None
    #: Slot domains and restrictions edited in the window (template spaces only).
    domains: Mapping[str, Sequence[Any]] | None = None
    restrictions: Sequence[str] | None = None
    #: The person confirmed running the python benchmark a continued session names (the window's
    #: dialog); on the command line naming the file as the kernel is the confirmation.
    trust_session_code: bool = False
    #: Problem sizes to sweep (name -> values; several names make a grid): one tuning per size in one
    #: session, ``budget`` evaluations each (see :mod:`workbench.runner.sweep`). Continuing a sweep
    #: adds these values to its plan. ``warm_start`` (None: the plan's, else on): a new size first
    #: measures the best configs of the nearest sizes already measured.
    sizes: Mapping[str, Sequence[Any]] | None = None
    warm_start: bool | None = None

    def __post_init__(self) -> None:
        """Each field's kind checked where a script builds the request: a budget of ``"10"``, a
        dict for the constraints or a string for the objectives failed deep in the run with a
        ``TypeError`` or ``AttributeError``, or were read letter by letter ("metric 'l'"). A path
        object for the kernel, the replay or a kernel folder is taken as its text, NumPy's numbers
        and flags as numbers and flags."""
        for name in ("kernel", "replay"):
            value = getattr(self, name)
            if isinstance(value, os.PathLike):
                object.__setattr__(self, name, os.fspath(value))
        for name in ("devices", "objectives", "restrictions"):  # a NumPy array of them as the list it holds
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                object.__setattr__(self, name, tuple(value.tolist()))
        if not isinstance(self.kernel_dirs, (str, bytes)) and isinstance(self.kernel_dirs, Iterable):
            object.__setattr__(self, "kernel_dirs", tuple(
                os.fspath(d) if isinstance(d, os.PathLike) else d for d in self.kernel_dirs))
        for name, kind in _REQUEST_KINDS.items():
            value = getattr(self, name)
            if value is not None and not _of_kind(value, kind):
                raise WorkbenchError(f"RunRequest {name}: expected {_KIND_WORDS[kind]}, got {value!r} "
                                     f"({type(value).__name__})")

    def settings_overrides(self) -> dict[str, Any]:
        names = ("time_limit_s", "patience", "prune_keep", "workers", "executor", "ray_address", "devices",
                 "allow_mixed_gpus", "compile_timeout_s", "run_timeout_s")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}
