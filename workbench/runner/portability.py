"""Predictors for the portability report: the simulator stands in for configs a simulated GPU never ran.

A simulated session's device is a model, so any config can be evaluated on it for about a
millisecond (estimated resources, no noise). A recorded or measured session gets no predictor: its
GPU is not here, and a model's guess must not pass for a measurement (the report labels
predictions). The sessions' own template folders are never loaded (opening a file never runs
code): only shipped templates are predicted.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from workbench.backends.base import BackendSpec
from workbench.core.errors import WorkbenchError
from workbench.core.domain.portability import Predictor
from workbench.core.domain.records import BackendOptions
from workbench.core.domain.session import Session


def simulator_predictors(sessions: Sequence[Session], at: Mapping[str, Any] | None = None) -> tuple[dict[str, Predictor], list[str]]:
    """device name -> predictor for every simulated template session (at its problem with ``at``
    over it), and one note per one refused."""
    from workbench.runner.costmodel import sim_predictor

    predictors: dict[str, Predictor] = {}
    notes: list[str] = []
    for session in sessions:
        backend = session.backend if isinstance(session.backend, dict) else {}
        if backend.get("kind") != "sim" or session.kind != "template" or not session.device.get("simulated"):
            continue
        name = str(session.device.get("name") or "")
        if not name or name in predictors:
            continue
        options = BackendOptions(**(backend.get("options") or {}))
        options["kernel_dirs"] = []  # shipped templates only
        options["problem"] = {**session.problem, **(at or {})}
        try:
            predictors[name] = sim_predictor(BackendSpec("sim", options))
        except WorkbenchError as exc:
            notes.append(f"{name}: no prediction ({exc})")
    return predictors, notes
