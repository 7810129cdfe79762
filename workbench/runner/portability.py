"""Predictors for the portability report: the simulator stands in for configs a simulated GPU never ran.

A simulated session's device is a model, so any config can be evaluated on it for about a
millisecond (estimated resources, no noise). A recorded or measured session gets no predictor: its
GPU is not here, and a model's guess must not pass for a measurement (the report labels
predictions). The sessions' own template folders are never loaded (opening a file never runs
code): shipped templates are predicted, and those of folders the person names (``--kernel-dir``).
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from workbench.backends.base import BackendSpec
from workbench.core.errors import FLAG_WORDING, UnknownTemplate, WorkbenchError
from workbench.core.domain.portability import Predictor
from workbench.core.domain.records import BackendOptions
from workbench.core.domain.session import Session


def simulator_predictors(sessions: Sequence[Session], at: Mapping[str, Any] | None = None,
                         kernel_dirs: Sequence[str | os.PathLike[str]] = (),
                         templates: Mapping[str, Any] | None = None) -> tuple[dict[str, Predictor], list[str]]:
    """device name -> predictor for every simulated template session (at its problem with ``at``
    over it), and one note per one refused.

    ``kernel_dirs``: template folders the person named, searched before the shipped library.
    ``templates``: kernel name -> template already loaded without running code (the window's
    declarative specs), used as they are and never looked up in a folder. A session whose backend
    names another template than its kernel is not predicted: the file alone would choose what is
    loaded.
    """
    from workbench.core.domain.templates import find_template, kernels_dir, likeliest_first, stands_in_for_another
    from workbench.core.io.export import unloaded_dirs
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
        if options.get("kernel") != session.kernel:
            notes.append(f"{name}: no prediction (its backend names template {options.get('kernel')!r}, "
                         f"not the session's kernel {session.kernel!r})")
            continue
        recorded = dict(options)
        template = (templates or {}).get(session.kernel)
        unloaded = likeliest_first(session.kernel, unloaded_dirs(recorded, kernel_dirs))
        try:  # the template the predictor would load (the folders named first, else the shipped library)
            standing = template if template is not None else find_template(session.kernel, *kernel_dirs, kernels_dir())
        except WorkbenchError:
            standing = None  # (the predictor says why, below)
        other = stands_in_for_another(standing, session.source_hash, unloaded) if standing is not None else None
        if other is not None:  # the shipped namesake is other code: its predictions would be of another kernel
            notes.append(f"{name}: no prediction ({other}, which is not loaded; use {FLAG_WORDING['kernel_dir'](str(unloaded[0]))})")
            continue
        if (standing is not None and session.source_hash and not standing.is_code_of(session.source_hash)
                and not standing.is_shipped):
            # (a folder's template of the same name, loaded for another session: its configs and
            # times are of other code, and a config of its space may not be one of this session's;
            # the shipped library's template of an older session is the kernel's later version, as
            # export takes it, with a note there)
            where = f" ({standing.path})" if getattr(standing, "path", None) else ""
            notes.append(f"{name}: no prediction (the template {session.kernel!r} loaded{where} is not the code "
                         "this session was tuned on)")
            continue
        options["kernel_dirs"] = [] if template is not None else [str(d) for d in kernel_dirs]  # never the session's own
        options["problem"] = {**session.problem, **(at or {})}
        try:
            predictors[name] = sim_predictor(BackendSpec("sim", options), template=template).predict
        except WorkbenchError as exc:
            hint = (f"; its template folder is not loaded: use {FLAG_WORDING['kernel_dir'](str(unloaded[0]))}"
                    if unloaded and isinstance(exc, UnknownTemplate) else "")
            notes.append(f"{name}: no prediction ({exc}){hint}")
    return predictors, notes
