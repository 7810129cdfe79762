"""How a session's runs were asked to run: budget, limits, executor, stop rules.

Stored in the session file (``run``) so that continuing a session, from the command line or the
window, restores what the person chose instead of falling back to defaults. The kernel, backend,
strategy and objective have their own places in the session (``backend``, ``strategy``,
``constraints``/``weights``); this record holds the rest.

``budget`` is the number of evaluations the session as a whole is meant to reach (its trials
count), so continuing a run that was stopped early measures only what is left.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from workbench.core.errors import WorkbenchError

EXECUTORS = ("local", "ray", "inline")
#: Evaluations of a new session when nothing names a budget (the budget box shows it too).
DEFAULT_BUDGET = 100

#: The largest count a setting may hold: a signed 64-bit integer, which every reader of the file
#: takes exactly (a session is never written with a number it cannot read back).
MAX_COUNT = 2**63 - 1
#: Longest timeout or time limit accepted (s): a week; anything longer is a typo, not a plan.
MAX_SECONDS = 7 * 24 * 3600.0


@dataclass(frozen=True)
class RunSettings:
    """The run settings recorded in a session (every field optional: None means the default)."""

    budget: int | None = None
    time_limit_s: float | None = None
    patience: int | None = None
    prune_keep: float | None = None
    workers: int | None = None
    executor: str = "local"
    ray_address: str | None = None
    devices: tuple[int, ...] | None = None
    allow_mixed_gpus: bool = False
    compile_timeout_s: float = 60.0
    run_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Refuse values no run can use, naming the field (the same rules for flags and files)."""
        _positive_int("budget", self.budget)
        _positive_int("patience", self.patience)
        _positive_int("workers", self.workers)
        _positive_float("time_limit_s", self.time_limit_s)
        _positive_float("compile_timeout_s", self.compile_timeout_s)
        _positive_float("run_timeout_s", self.run_timeout_s)
        if self.prune_keep is not None:
            _number("prune_keep", self.prune_keep)
            if not 0.0 < self.prune_keep <= 1.0:
                raise WorkbenchError(f"prune_keep {self.prune_keep:g}: the fraction measured must be in (0, 1]")
        if self.executor not in EXECUTORS:
            raise WorkbenchError(f"executor {self.executor!r}: choose one of {', '.join(EXECUTORS)}")
        if self.ray_address is not None and type(self.ray_address) is not str:
            raise WorkbenchError(f"ray_address {self.ray_address!r}: expected text")
        if self.devices is not None:
            for device in self.devices:
                if type(device) is not int or not 0 <= device <= MAX_COUNT:
                    raise WorkbenchError(f"devices: {_text(device)} is not a device number (an integer >= 0)")
        if type(self.allow_mixed_gpus) is not bool:
            raise WorkbenchError(f"allow_mixed_gpus {self.allow_mixed_gpus!r}: expected true or false")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.devices is not None:
            out["devices"] = list(self.devices)
        return out

    @staticmethod
    def from_dict(data: Any) -> "RunSettings":
        """Validate a stored record; unknown fields are an error naming the field."""
        if data is None:
            return RunSettings()
        if type(data) is not dict:
            raise WorkbenchError(f"expected an object, got {type(data).__name__}")
        known = {f.name for f in fields(RunSettings)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise WorkbenchError(f"{unknown[0]}: unknown run setting")
        values: dict[str, Any] = dict(data)
        if values.get("devices") is not None:
            if type(values["devices"]) is not list:
                raise WorkbenchError("devices: expected a list of device numbers")
            values["devices"] = tuple(values["devices"])
        for name in ("time_limit_s", "prune_keep", "compile_timeout_s", "run_timeout_s"):
            if type(values.get(name)) is int:
                values[name] = float(values[name])
        return RunSettings(**values)

    def merged(self, overrides: Mapping[str, Any]) -> "RunSettings":
        """These settings with the given fields replaced (None values are not overrides)."""
        given = {k: v for k, v in overrides.items() if v is not None}
        return RunSettings(**{**asdict(self), **given})


def _number(name: str, value: Any) -> None:
    if type(value) not in (int, float) or not math.isfinite(value):
        raise WorkbenchError(f"{name} {value!r}: expected a finite number")


def _positive_int(name: str, value: Any) -> None:
    if value is None:
        return
    if type(value) is not int:
        raise WorkbenchError(f"{name} {value!r}: expected a whole number")
    if value < 1:
        raise WorkbenchError(f"{name} must be at least 1, got {_text(value)}")
    if value > MAX_COUNT:
        raise WorkbenchError(f"{name} {_text(value)}: at most {MAX_COUNT} (2**63-1)")


def _text(value: Any) -> str:
    """A value for a message: a huge integer by its size (printing one of thousands of digits is
    slow, and Python refuses beyond 4,300)."""
    if type(value) is int and value.bit_length() > 128:
        return f"(an integer of {value.bit_length()} bits)"
    return repr(value)


def _positive_float(name: str, value: Any) -> None:
    if value is None:
        return
    _number(name, value)
    if not value > 0:
        raise WorkbenchError(f"{name} must be positive, got {value:g}")
