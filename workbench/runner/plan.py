"""Turn what a person asked for (a kernel name, a backend choice, problem overrides) into a
runnable plan: a :class:`BackendSpec`, its :class:`Target`, and a fresh :class:`Session`.

Shared by the command line and the GUI so both resolve names, ``auto`` and recordings the same way.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from workbench.backends import cuda_env
from workbench.backends.base import BackendSpec, Target, backend_class
from workbench.core.errors import WorkbenchError, command_name, did_you_mean, quoted
from workbench.core.domain.objective import Constraints, Weights
from workbench.core.domain.records import DeviceInfo, backend_options
from workbench.core.domain.session import Session
from workbench.core.domain.templates import DECLARATIVE_SUFFIX, kernels_dir
from workbench.core.model.gpus import DEFAULT_GPU

BACKEND_CHOICES = ("auto", "cuda", "sim", "replay", "python")


@dataclass(frozen=True)
class KernelLocation:
    """Where a kernel name was found: a template (``.cu`` + spec) or a ``python`` benchmark file."""

    name: str
    kind: str  # "template" or "python"
    path: Path


def kernel_search_dirs(extra: Sequence[str | os.PathLike[str]] = ()) -> list[Path]:
    """User folders first (so a user can shadow a shipped template), then the shipped library."""
    dirs = [Path(d) for d in extra]
    for d in dirs:
        if not d.is_dir():
            raise WorkbenchError(template=f"{{kernel_dir:{quoted(d)}}}: not a folder")
    return dirs + [kernels_dir()]


def replacement_note(name: str, extra_dirs: Sequence[str | os.PathLike[str]]) -> str | None:
    """What a run says when a template of the person's folders hides the shipped one of that name
    (the search path lets it, on purpose): a listing, a session or an export of it is then of the
    person's kernel, and a typo-free name alone does not tell which one ran. None otherwise."""
    if not extra_dirs:
        return None
    try:
        mine, shipped = locate_kernel(name, extra_dirs), locate_kernel(name, ())
    except WorkbenchError:
        return None
    if shipped.kind != "template" or mine.path == shipped.path:
        return None
    # (a python benchmark of the shipped template's name hides it as well: it ran as that name, unsaid)
    what = "template" if mine.kind == "template" else "python benchmark"
    return f"{what} {name!r} is {mine.path}, which replaces the shipped template of that name"


def locate_kernel(name: str, extra_dirs: Sequence[str | os.PathLike[str]] = ()) -> KernelLocation:
    """Find a kernel by name without executing anything.

    ``NAME.cu`` beside ``NAME.py`` is a template; a lone ``NAME.py`` is a python benchmark.
    A path to a ``.py`` file is a python benchmark too.
    """
    as_path = Path(name)
    if as_path.suffix == ".py":
        if not as_path.is_file():
            raise WorkbenchError(f"python benchmark {name}: no such file")
        return KernelLocation(as_path.stem, "python", as_path.resolve())
    if not name.isidentifier():
        raise WorkbenchError(f"kernel name {name!r} is not a valid name{_path_hint(as_path)}")
    for folder in kernel_search_dirs(extra_dirs):
        spec, source = folder / f"{name}.py", folder / f"{name}.cu"
        # anything at NAME.cu (a FIFO, a dangling link) makes NAME.py a template's spec: the loader
        # then says what is wrong with the source, where calling it a benchmark would mislead
        if os.path.lexists(source) and spec.is_file():
            return KernelLocation(name, "template", spec.resolve())
        declarative = folder / f"{name}{DECLARATIVE_SUFFIX}"
        if declarative.is_file():
            return KernelLocation(name, "template", declarative.resolve())
        if spec.is_file():
            return KernelLocation(name, "python", spec.resolve())
    available = sorted({p.stem for d in kernel_search_dirs(extra_dirs) for p in d.glob("*.py") if not p.stem.startswith("_")}
                       | {p.name[: -len(DECLARATIVE_SUFFIX)] for d in kernel_search_dirs(extra_dirs)
                          for p in d.glob("*" + DECLARATIVE_SUFFIX)})
    lone = next((folder / f"{name}.cu" for folder in kernel_search_dirs(extra_dirs)
                 if (folder / f"{name}.cu").is_file()), None)
    if lone is not None:  # a kernel without the spec that makes it a template: say what is missing
        raise WorkbenchError(f"{lone} is a CUDA source without a template spec: add {name}{DECLARATIVE_SUFFIX} "
                             "beside it (docs/own-kernel.md), or open the folder in the window's kernel editor, "
                             "which writes one")
    saved = _editor_templates(set(available))
    raise WorkbenchError(f"unknown kernel {name!r}{did_you_mean(name, available + saved)}; available: "
                         f"{', '.join(available) or 'none'}{saved_template_hint(name) or _editor_templates_said(saved)}")


def _path_hint(path: Path) -> str:
    """What to write instead of a path to a template's files: the folder and the template's name."""
    if path.suffix == ".cu" or path.name.endswith(DECLARATIVE_SUFFIX) or path.is_dir():
        folder = path if path.is_dir() else path.parent
        stem = path.name[: -len(DECLARATIVE_SUFFIX)] if path.name.endswith(DECLARATIVE_SUFFIX) else path.stem
        named = stem if not path.is_dir() and stem.isidentifier() else "NAME"
        return f"; name the template and give its folder: --kernel-dir {folder} {named}"
    return ""


def _editor_templates(listed: set[str]) -> list[str]:
    """The templates saved with the window's kernel editor that a list of kernels left out: the
    window offers them too (``gui --run NAME`` finds them), and naming the kernels without them
    hid a person's own templates."""
    from workbench.core.domain.kernel_spec import user_templates_dir

    try:
        return sorted({p.name[: -len(DECLARATIVE_SUFFIX)] for p in user_templates_dir().glob("*" + DECLARATIVE_SUFFIX)}
                      - listed)
    except OSError:
        return []


def _editor_templates_said(saved: list[str]) -> str:
    """:func:`_editor_templates` in words, with how each front end finds them."""
    from workbench.core.domain.kernel_spec import user_templates_dir

    if not saved:
        return ""
    folder = user_templates_dir()
    return (f"; saved with the kernel editor, in {folder}: {', '.join(saved)} (the window finds them; the "
            f"command line with --kernel-dir {folder})")


def saved_template_hint(name: str) -> str:
    """Where a template of ``name`` saved with the window's kernel editor is, when there is one: the
    window lists those, the command line looks only where --kernel-dir says."""
    from workbench.core.domain.kernel_spec import user_templates_dir

    folder = user_templates_dir()
    if (folder / f"{name}{DECLARATIVE_SUFFIX}").is_file():
        return f" (a template {name!r} is saved in the kernel editor's folder: add --kernel-dir {folder})"
    return ""


@functools.lru_cache(maxsize=1)
def cuda_device_count() -> int:
    """Number of CUDA devices CuPy can see; 0 when CuPy or a driver is missing (never raises).

    Asked once per process: CuPy is imported only by the CUDA backend's own modules.
    """
    return cuda_env.device_count()


@functools.lru_cache(maxsize=1)
def cuda_missing() -> tuple[str, ...]:
    """What stops tuning on a GPU here (CuPy, headers, NVRTC, a device), in words; empty when nothing."""
    from workbench.backends.cuda_env import probe

    return tuple(probe().missing())


def make_backend_spec(
    kernel: str | None,
    backend: str = "auto",
    *,
    kernel_dirs: Sequence[str] = (),
    problem: Mapping[str, Any] | None = None,
    replay: str | None = None,
    gpu_model: str | None = None,
    seed: int = 0,
    noise: bool = True,
    device: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> BackendSpec:
    """Resolve the user's choices to a backend spec; ``auto`` means cuda if a device is visible, else sim."""
    if backend not in BACKEND_CHOICES:
        raise WorkbenchError(f"unknown backend {backend!r}; choose one of: {', '.join(BACKEND_CHOICES)}")
    if replay is not None or backend == "replay":
        if replay is None:
            raise WorkbenchError(template="a replay needs {replay:FILE} (a recorded session or a Kernel Tuner cache)")
        if not Path(replay).is_file():
            what = "not a regular file" if Path(replay).exists() else "no such file"  # a folder, a FIFO
            raise WorkbenchError(template=f"{quoted(replay)}: {what} (the recording to replay, {{replay}})")
        if backend not in ("auto", "replay"):
            raise WorkbenchError(template=f"{{replay}} cannot be combined with {{backend:{quoted(backend)}}}")
        chosen = {"problem": dict(problem)} if problem else {}  # the size of a recorded sweep to replay
        return BackendSpec("replay", backend_options({"path": str(Path(replay).resolve()), "kernel": kernel, "seed": seed,
                                                      **chosen, **(extra or {})}))
    if not kernel:
        raise WorkbenchError(f"name a kernel (see `{command_name()} kernels`), or give --replay FILE")
    location = locate_kernel(kernel, kernel_dirs)
    options: dict[str, Any] = {
        "kernel": location.name,
        "kernel_dirs": [str(Path(d).resolve()) for d in kernel_dirs],
        "problem": dict(problem or {}),
        "seed": seed,
        **(extra or {}),
    }
    if location.kind == "python":
        if backend not in ("auto", "python"):
            raise WorkbenchError(template=f"{quoted(kernel)} is a python benchmark; it runs with {{backend:python}}, "
                                          f"not {{backend:{quoted(backend)}}}")
        check_no_problem(kernel, problem)
        options["path"] = str(location.path)
        # its name is the benchmark's own NAME, else the file's: the file name given here always
        # won, so NAME was never used
        options.pop("kernel")
        return BackendSpec("python", backend_options(options))
    if backend == "python":
        raise WorkbenchError(template=f"{quoted(kernel)} is a CUDA template; {{backend:python}} runs python benchmark files")
    if backend == "auto":
        backend = "cuda" if cuda_device_count() > 0 and not cuda_missing() else "sim"
    if backend == "cuda":
        if cuda_device_count() == 0 or cuda_missing():
            raise WorkbenchError(template=f"{{backend:cuda}}: {quoted('; '.join(cuda_missing()) or 'no CUDA device found')} "
                                          "(or use {backend:sim})")
        if device is not None:
            options["device"] = device
    if backend == "sim":
        options["gpu_model"] = gpu_model or DEFAULT_GPU
        options["noise"] = noise
    return BackendSpec(backend, backend_options(options))


def check_no_problem(kernel: str, problem: Mapping[str, Any] | None) -> None:
    """A python benchmark's ``measure(config)`` is given no problem: its ``PROBLEM`` is fixed in its
    file, so a problem parameter asked for would be recorded and never reach it. Refused instead."""
    if problem:
        name, value = next(iter(problem.items()))
        raise WorkbenchError(template=f"{{problem:{quoted(name)}={quoted(value)}}}: {quoted(kernel)} is a python "
                                      "benchmark, whose problem is the PROBLEM its file defines (measure() is given "
                                      "none); {problem} changes a template's problem parameters")


def open_target(spec: BackendSpec) -> Target:
    """What the spec tunes (space, problem, device), resolved in this process without a GPU."""
    return backend_class(spec.kind).target(spec)


def new_session(
    spec: BackendSpec,
    target: Target,
    *,
    strategy: str | None,
    seed: int = 0,
    strategy_options: Mapping[str, Any] | None = None,
    constraints: Constraints | None = None,
    weights: Weights | None = None,
) -> Session:
    """A fresh, empty session for a run of ``target`` through ``spec`` (``strategy`` None: the engine
    records its strategy when the run starts)."""
    return Session(
        kernel=target.kernel,
        kind=target.kind,
        source_hash=target.source_hash,
        problem=dict(target.problem),
        space=target.space,
        backend=spec.to_dict(),
        device=DeviceInfo(**target.device),
        constraints=constraints or Constraints(),
        weights=weights or Weights(),
        strategy={"name": strategy, "seed": seed, "options": dict(strategy_options or {})} if strategy else {},
        default_config=target.default_config,
        created_at=time.time(),
        extra={**({"reference": target.reference} if target.reference else {}), **target.extra},
    )


def session_metrics(session: Session) -> frozenset[str] | None:
    """Metrics an open session can be ranked by: what its trials report plus what its backend
    declares (``show`` checks a weight or constraint against the same). None when neither can say
    yet: a user benchmark's session whose trials have reported nothing, where a metric may still
    come. A recording (``replay``) has what its trials report and nothing more, even if that is
    nothing (every recorded config failed).
    """
    seen = {name for trial in session.trials for name in trial.measurement.metrics}
    kind = session.backend.get("kind") if isinstance(session.backend, dict) else None
    try:
        declared = backend_class(kind).metrics if isinstance(kind, str) else None
    except WorkbenchError:  # a backend this build lacks (an imported or hand-edited file)
        declared = None
    if declared is None and not seen and kind != "replay":
        return None
    return frozenset(seen | set(declared or ()))


def available_metrics(spec: BackendSpec, target: Target | None = None) -> frozenset[str] | None:
    """Metrics a run of ``spec`` can report: the target's (a recording's), else the backend's
    declaration; None when they cannot be known before trials report them (a user benchmark)."""
    if target is not None and target.metrics is not None:
        return target.metrics
    return backend_class(spec.kind).metrics
