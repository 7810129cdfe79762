"""The ``python`` backend: tune any Python benchmark, no GPU and no kernel template needed.

The user writes a module (``options["path"]``) that defines:

- ``SPACE``: slot name -> list of values (the domain, in order);
- ``RESTRICTIONS`` (optional): list of restriction expressions (the safe language of ``core.domain.expr``);
- ``GROUPS`` (optional): slot name -> group (``launch``, ``memory``, ``compute``, ``reduction``);
- ``PROBLEM`` (optional): problem parameters, visible to restrictions by name;
- ``DEFAULT`` (optional): the reference config, measured first;
- ``NAME`` (optional): what to call the benchmark (default: the file name);
- ``measure(config: dict) -> dict``: metrics of one run; ``latency_ms`` is required, ``memory_mb``,
  ``throughput``, ``quality`` and any other numbers are optional. A bool is not a number here:
  ``latency_ms=True`` is a runtime error, other flags are kept as details, not metrics.

A module that fails to import (an exception, or ``sys.exit()``) is bad input, said in one line.

The module is the user's own code, and it runs only in processes of its own: its declarations are
read by a spawned process (:func:`read_target`, bounded by :data:`IMPORT_TIMEOUT_S`), and each
worker imports it again by path and calls ``measure``. A module that ends the process, closes its
output, hangs or prints without end as it is imported is one line, never the tuning process's exit.
"""

from __future__ import annotations

import ast
import decimal
import hashlib
import itertools
import logging
import importlib.util
import math
import numbers
import os
import pickle
import platform
import shlex
import sys
from types import ModuleType
from typing import Any, Callable, Mapping

import numpy as np

from workbench.backends.base import Backend, BackendSpec, EvalLimits, PhaseCallback, Target, no_phase
from workbench.core.child_processes import children_ignore_interrupts
from workbench.core.errors import UnreadableFile, WorkbenchError, exception_line
from workbench.core.fs import read_capped
from workbench.core.restricted_pickle import restricted_loads
from workbench.core.domain import pysyntax
from workbench.core.domain.pysyntax import file_module_spec
from workbench.core.domain.measurement import LATENCY, NON_NEGATIVE_METRICS, Measurement, Status, bounded_text
from workbench.core.domain.metrics import metric_name
from workbench.core.domain.session import MAX_NAME_CHARS
from workbench.core.domain.space import GROUPS, Config, ProductSpace, SearchSpace, Slot

_log = logging.getLogger(__name__)


def _path_of(spec: BackendSpec) -> str:
    path = spec.options.get("path")
    if not path:
        raise WorkbenchError("python backend needs options.path: the benchmark module file")
    path = os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.isfile(path):
        raise WorkbenchError(f"python benchmark not found: {path}")
    return path


def load_module(path: str, source: bytes | None = None) -> ModuleType:
    """Import a benchmark module from its file under a private name (never shadows real modules).
    ``source`` is the file's text as already read and checked: the import runs it rather than
    reading the file again, so an edit saved in between is not what runs.

    Its own folder goes first on the import path, as ``python bench.py`` puts it: a module beside
    the benchmark (``import helper``) was not found, and one named like a folder of the workbench's
    checkout (``import bench``) was taken from there instead of the person's own. Only the
    processes that run benchmarks load them (workers, the declarations reader), never the
    workbench's own process."""
    folder = os.path.dirname(path)
    if sys.path[:1] != [folder]:
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    digest = hashlib.sha1(os.fsencode(path)).hexdigest()[:10]  # (a folder named in bytes that are not UTF-8 too)
    name = f"_workbench_bench_{digest}"
    module_spec = file_module_spec(name, path, source)
    if module_spec is None or module_spec.loader is None:
        raise WorkbenchError(f"cannot import python benchmark {path}: not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pickling inside the module look themselves up here
    try:
        module_spec.loader.exec_module(module)
    except SystemExit as exc:  # sys.exit() at import would otherwise end the workbench, unexplained
        del sys.modules[name]
        raise WorkbenchError(f"python benchmark {path} failed to import: it called sys.exit({exc.code!r})") from None
    except Exception as exc:  # the user's module failing to import is bad input
        del sys.modules[name]
        raise WorkbenchError(f"python benchmark {path} failed to import: {type(exc).__name__}: {exc}") from exc
    return module


#: Most values one slot of a python benchmark's SPACE may list (each is stored in the session file).
MAX_SLOT_VALUES = 1_000_000


def _space_of(module: ModuleType, path: str) -> SearchSpace:
    space = getattr(module, "SPACE", None)
    if not isinstance(space, Mapping) or not space:
        raise WorkbenchError(f"python benchmark {path} must define SPACE = {{slot name: [values...]}}")
    groups = getattr(module, "GROUPS", {}) or {}
    if not isinstance(groups, Mapping):
        raise WorkbenchError(f"python benchmark {path}: GROUPS must be a dict slot name -> group")
    unknown = sorted(set(groups) - set(space))
    if unknown:
        raise WorkbenchError(f"python benchmark {path}: GROUPS names unknown slot {unknown[0]!r}")
    slots = []
    for name, values in space.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise WorkbenchError(f"python benchmark {path}: SPACE[{name!r}] must be a list of values")
        group = groups.get(name, "launch")
        if group not in GROUPS:
            raise WorkbenchError(
                f"python benchmark {path}: slot {name!r} has group {group!r}; choose one of {', '.join(GROUPS)}"
            )
        # at most one value more than allowed is read: range(10**12) or itertools.count() would
        # fill memory or never end
        taken = tuple(itertools.islice(values, MAX_SLOT_VALUES + 1))
        if len(taken) > MAX_SLOT_VALUES:
            raise WorkbenchError(f"python benchmark {path}: SPACE[{name!r}] has more than {MAX_SLOT_VALUES:,} values")
        slots.append(Slot(name=str(name), values=taken, group=group))
    restrictions = getattr(module, "RESTRICTIONS", ()) or ()
    if not isinstance(restrictions, (list, tuple)) or not all(isinstance(r, str) for r in restrictions):
        raise WorkbenchError(f"python benchmark {path}: RESTRICTIONS must be a list of expression strings")
    problem = getattr(module, "PROBLEM", {}) or {}
    if not isinstance(problem, Mapping):
        raise WorkbenchError(f"python benchmark {path}: PROBLEM must be a dict")
    return ProductSpace(slots, restrictions=tuple(restrictions), params=dict(problem))


def _traceback_text() -> str:
    """The traceback being handled, or why it could not be written (a frame's repr may be the
    user's and fail too)."""
    import traceback

    try:
        return traceback.format_exc()
    except BaseException as exc:  # noqa: BLE001 - as exception_line: never escapes the handler
        return f"(the traceback could not be written: {type(exc).__name__})"


#: The most characters a benchmark's non-numeric detail keeps (its start and end).
MAX_DETAIL_CHARS = 10_000


def _metrics_of(result: Any) -> tuple[dict[str, float], dict[str, Any]] | str:
    """Split ``measure``'s dict into numeric metrics and other details, or say what is wrong."""
    if not isinstance(result, Mapping):
        return f"measure() must return a dict of metrics, got {type(result).__name__}"
    if LATENCY not in result:
        return f"measure() returned no {LATENCY!r} (got: {', '.join(map(str, result)) or 'nothing'})"
    metrics: dict[str, float] = {}
    details: dict[str, Any] = {}
    non_finite: list[str] = []
    reported: dict[str, str] = {}  # metric name -> the key measure() gave it under
    if isinstance(result[LATENCY], (bool, np.bool_)):  # True is 1 to Python, but it is no time
        return f"measure() returned {LATENCY}={result[LATENCY]!r}: a bool is not a number of milliseconds"
    for key, value in result.items():
        # (a Decimal is a number too, though not a numbers.Real: it was refused as "not a finite number")
        if isinstance(value, (numbers.Real, decimal.Decimal)) and not isinstance(value, bool):  # flags stay details
            try:
                number = float(value)
            except (OverflowError, ValueError):  # past a float's range, a signalling NaN: what was measured
                if metric_name(str(key)) == LATENCY:
                    return f"measure() returned {str(key)[:40]!r}: a number a float cannot hold"
                # (an integer's repr past 4,300 digits raises: its size is said instead)
                try:
                    shown = f"an integer of {value.bit_length():,} bits" if isinstance(value, int) else str(value)
                except ValueError:  # (a Fraction of such integers cannot be written out either)
                    shown = f"a {type(value).__name__} too large to write out"
                details[str(key)] = bounded_text(shown, MAX_DETAIL_CHARS)
                non_finite.append(f"{str(key)[:40]} is a number a float cannot hold: kept as text, not as a metric")
                continue
            # a name a weight, a bound or a direction can give (``GFLOP/s`` -> gflops, ``my score``
            # -> my_score): the one every list of known metrics then shows
            name = metric_name(str(key))
            if len(name) > MAX_NAME_CHARS:  # a session would not open with it
                return f"measure() returned a metric name of {len(name):,} characters (at most {MAX_NAME_CHARS})"
            if number < 0 and name in NON_NEGATIVE_METRICS:  # (a latency must be above 0, said as below)
                return f"measure() returned {key}={number!r}; it must be {'a finite number > 0' if name == LATENCY else '>= 0'}"
            if not math.isfinite(number) and name != LATENCY:  # (latency has its own line below)
                # A session file holds finite numbers only (saved, inf became null and NaN on
                # reopening), but the measurement is still one: the metric becomes a detail, as text.
                details[str(key)] = repr(number)
                non_finite.append(f"{str(key)[:40]}={number!r} is not a finite number: kept as text, not as a metric")
                continue
            if name in metrics:
                return (f"measure() returned {reported[name][:40]!r} and {str(key)[:40]!r}, which are both the "
                        f"metric {name!r} (a name a weight or a bound can give); rename one")
            metrics[name] = number
            reported[name] = str(key)
        elif isinstance(value, np.bool_):
            details[str(key)] = bool(value)
        else:
            # as text at most MAX_DETAIL_CHARS long: a detail of 30 million characters made a
            # successful trial 30 MB in the session
            kept = value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
            details[str(key)] = bounded_text(kept, MAX_DETAIL_CHARS) if isinstance(kept, str) else kept
    if non_finite:
        notes = details.get("notes")
        details["notes"] = [*(notes if isinstance(notes, list) else [notes] if notes is not None else []), *non_finite]
    latency = metrics.get(LATENCY)
    if latency is None or not math.isfinite(latency) or latency < 0:
        return f"measure() returned {LATENCY}={result[LATENCY]!r}; it must be a finite number > 0"
    if latency == 0:  # nothing takes no time: the timer did not resolve the call, or nothing was timed
        return (f"measure() returned {LATENCY}={result[LATENCY]!r}: 0 ms is not a measurement (the timer did "
                "not resolve the call, or nothing was timed); time several repetitions and return their mean")
    return metrics, details


#: Longest a benchmark module may take to import when its declarations are read.
IMPORT_TIMEOUT_S = 120.0
#: Largest answer the reading process may send (a Target is a few kilobytes per thousand values).
_MAX_ANSWER_BYTES = 256 * 1024 * 1024


#: What unpickling bytes that are no Target's may raise (the module can write into the pipe).
_UNREADABLE = (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError, LookupError,
               RecursionError, ArithmeticError, MemoryError)


def _read_target_child(conn: Any, spec: BackendSpec) -> None:
    """The reading process: import the module, send ``("ok", Target)`` or ``("error", line)``."""
    os.setsid()  # what the module starts joins this group, which the parent kills afterwards
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # what the module prints as it loads reaches no one's terminal
    os.dup2(devnull, 2)
    pid = os.getpid()
    path = spec.options.get("path")
    answer: tuple[str, Any] = ("error", f"python benchmark {path}: its top level failed while its declarations were read")
    try:
        answer = ("ok", PythonBackend.target_here(spec))
    except WorkbenchError as exc:
        answer = ("error", str(exc))
    finally:
        # Also when something else escapes (KeyboardInterrupt, GeneratorExit raised by the module,
        # an exception from a value's __eq__): it is named, sent, and then ends this process.
        if os.getpid() != pid:  # a process the module forked as it loaded: only the reader answers
            os._exit(0)
        escaping = sys.exc_info()[0]
        if escaping is not None:
            answer = ("error", f"python benchmark {path}: {escaping.__name__} while reading its declarations")
        try:
            data = pickle.dumps(answer)
        except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
            data = pickle.dumps(("error", f"python benchmark {path}: its declarations cannot be sent back "
                                          "(values must be numbers, bools or identifiers)"))
        conn.send_bytes(data)
        conn.close()
    os._exit(0)


#: Seconds of a benchmark module still loading after which the wait is said (once).
SLOW_IMPORT_NOTE_S = 5.0


def read_target(spec: BackendSpec, timeout_s: float = IMPORT_TIMEOUT_S) -> Target:
    """The benchmark's :class:`Target`, read by a spawned process that imports the module.

    Importing runs the module's top level, which is the user's code: in the tuning process a module
    that calls ``os._exit`` ended the run without a word, one that closed stdout/stderr or printed
    megabytes took the terminal with it, one that slept never let the run start, and what it forked
    outlived the run. Here any of that is one line: the process is killed with what it started
    after ``timeout_s`` or once it has answered.
    """
    import multiprocessing as mp
    import signal
    import time

    path = _path_of(spec)
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_read_target_child, args=(child, spec), name="benchmark-declarations", daemon=True)
    with children_ignore_interrupts():  # a Ctrl-C is the caller's to handle, not a traceback of this child's
        process.start()
    child.close()
    answer: Any = None
    try:
        started = time.monotonic()
        deadline = started + timeout_s
        said = False
        while answer is None:
            if not said and time.monotonic() - started >= SLOW_IMPORT_NOTE_S:
                # (a module whose import hangs was silent for the whole wait before its refusal)
                said = True
                _log.warning("python benchmark %s: its module is still loading after %g s (given up after %g s)",
                             path, SLOW_IMPORT_NOTE_S, timeout_s)
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkbenchError(f"python benchmark {path} failed to import: still loading after "
                                     f"{timeout_s:g} s (its top level must define SPACE and measure, not run them)")
            if parent.poll(min(left, 0.2)):
                try:
                    data = parent.recv_bytes(_MAX_ANSWER_BYTES)
                except (EOFError, OSError):
                    answer = ("ended", None)
                    continue
                try:
                    answer = restricted_loads(data)  # the module can write into the pipe
                except _UNREADABLE as exc:  # bytes the module wrote into the pipe
                    answer = ("error", f"python benchmark {path} failed to import: its answer was unreadable "
                                       f"({type(exc).__name__})")
            elif not process.is_alive():
                # (its answer may have come as it exited, after the wait above ended: read it on the
                # next pass; called "ended as it loaded", a loaded machine failed good benchmarks)
                answer = None if parent.poll(0) else ("ended", None)
    finally:
        parent.close()
        try:
            if process.pid is not None:
                os.killpg(process.pid, signal.SIGKILL)  # the reader and whatever the module started
        except OSError:
            pass
        process.kill()  # had it not made its own group yet
        process.join(5)
    kind, value = answer if isinstance(answer, tuple) and len(answer) == 2 else ("error", None)
    if kind == "ok" and isinstance(value, Target):
        return value
    if kind == "ended":
        code = process.exitcode
        how = f"exit status {code}" if code is not None and code >= 0 else f"signal {-(code or 0)}"
        raise WorkbenchError(f"python benchmark {path} failed to import: the process ended as it loaded ({how})")
    raise WorkbenchError(str(value) if isinstance(value, str) else f"python benchmark {path} failed to import")


def host_device_name() -> str:
    """The device a python benchmark's session records: this machine (its figures are its own)."""
    return f"python on {platform.node() or 'host'}"


#: The backend option that holds the code identity a run's workers must find in the file they
#: import (set for the run only, never stored in the session's backend options).
CODE_HASH_OPTION = "code_hash"


class TooMuchToParse(WorkbenchError):
    """An identity asked for within a parse budget needs more Python text parsed than it allows."""


def code_identities(data: bytes, folder: str | os.PathLike[str] | None = None,
                    parse_limit: int | None = None) -> frozenset[str]:
    """Every hash a session of the benchmark whose file holds ``data`` may record: its code's
    with the modules it imports from ``folder`` (:func:`_code_hash`), its code's alone (sessions
    measured before the modules beside it counted) and its bytes' (sessions measured before the
    code was the identity). Read from the text alone, so a file can be told to be another benchmark
    before it is imported.

    ``parse_limit``: the most bytes of Python text to parse, the benchmark's and its modules'
    together, else :class:`TooMuchToParse`. For a look that nobody asked to run (the window showing
    a session's source): a parsed tree and its written-out form take about 1,500 times the text,
    and a session naming a file of a megabyte of short statements held the window for 18 s and
    1.5 GB. A run parses what it runs, unbounded."""
    byte_hash = hashlib.sha256(data).hexdigest()[:16]
    budget = [parse_limit] if parse_limit is not None else None
    return frozenset({_code_hash(data, folder, budget) or byte_hash, _code_hash(data) or byte_hash, byte_hash})


#: The largest module beside a benchmark its identity reads (a source of Python code; a file past
#: it, like a pipe or a folder, is counted as unreadable rather than read).
MAX_MODULE_BYTES = 16 * 1024 * 1024


def _local_imports(tree: ast.AST, folder: str | os.PathLike[str],
                   budget: list[int] | None = None) -> list[tuple[str, str]]:
    """(name, code hash) of each module ``tree`` imports (absolutely) that lies beside it in
    ``folder`` as ``NAME.py`` (or a package ``NAME/__init__.py``), with what those import from
    there in turn: the benchmark's folder comes first on its import path, so an edit there is an
    edit of the code measured. Walked without recursion, each module once, in sorted order, so
    the identity is the same however deep the caller's stack or the chain of imports. Only a
    builtin module is never taken from there (a pure-Python module of the standard library not
    yet imported is, as ``python bench.py`` would)."""
    found: dict[str, str] = {}
    todo: list[ast.AST] = [tree]
    while todo:
        names: set[str] = set()
        for node in ast.walk(todo.pop()):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
        for name in sorted(names - found.keys() - set(sys.builtin_module_names)):
            for candidate in (name + ".py", os.path.join(name, "__init__.py")):
                where = os.path.join(folder, candidate)
                if not os.path.exists(where):  # (a dangling link: Python's import skips it too)
                    continue
                try:  # (read as an untrusted file: opening a session reads these too, in the window)
                    data = read_capped(where, "module", MAX_MODULE_BYTES)
                except UnreadableFile:  # a pipe, a folder, a file past any module's size: no module
                    found[name] = "unreadable"
                    break
                # parsed once: its identity (as :func:`_code_hash` of it alone) and its own imports
                module = _parsed(data, budget)
                text = _code_text(module) if module is not None else None
                found[name] = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
                               if text is not None else hashlib.sha256(data).hexdigest()[:16])
                if module is not None:
                    todo.append(module)
                break
    return sorted(found.items())


def _code_hash(data: bytes, folder: str | os.PathLike[str] | None = None,
               budget: list[int] | None = None) -> str | None:
    """The identity of a benchmark's code: its parsed statements written out as every Python
    version writes them (:func:`pysyntax.stable_dump`), without docstrings, so a comment, a blank
    line or a reworded docstring keeps a session continuable (its bytes were the identity, and a
    comment added to measure() refused every --resume); imports and every statement count. None for
    a file that does not parse as this Python reads it (its bytes are the identity then).
    ``budget``: bytes left to parse, shared with the modules it imports (see :func:`code_identities`)."""
    tree = _parsed(data, budget)
    if tree is None:
        return None
    text = _code_text(tree)
    if text is None:
        return None
    local = _local_imports(tree, folder, budget) if folder is not None else []
    text += "".join(f"\0{name}:{digest}" for name, digest in local)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _parsed(data: bytes, budget: list[int] | None = None) -> ast.Module | None:
    """``data`` parsed as Python (None: it does not parse), its bytes taken from ``budget``."""
    if budget is not None:
        budget[0] -= len(data)
        if budget[0] < 0:
            raise TooMuchToParse("more Python text than a look at it parses")
    try:
        return pysyntax.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _code_text(tree: ast.Module) -> str | None:
    """The code of a parsed module as its identity reads it: without docstrings, written out as
    every Python version writes it (None: too deep to write out). Imports are left in ``tree``."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(body, list)
                and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    try:
        return pysyntax.stable_dump(tree)
    except RecursionError:
        return None


class PythonBackend(Backend):
    """Measures configs by calling the benchmark module's ``measure(config)``."""

    kind = "python"
    simulated = False

    def __init__(self, spec: BackendSpec) -> None:
        super().__init__(spec)
        self._measure: Callable[[dict[str, Any]], Any] | None = None
        self._cwd: str | None = None  # the folder the worker started in (see _restore_cwd)

    @classmethod
    def target(cls, spec: BackendSpec) -> Target:
        """The benchmark's declarations, read in a process of its own (see :func:`read_target`)."""
        return read_target(spec)

    @classmethod
    def target_here(cls, spec: BackendSpec) -> Target:
        """The declarations, read by importing the module in this process (what the reading process runs)."""
        path = _path_of(spec)
        try:  # read once: the identity recorded is of the code imported (an edit saved in between ran unsaid)
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise WorkbenchError(f"python benchmark {path}: cannot read it ({exc.strerror or exc})") from None
        module = load_module(path, data)
        try:
            space = _space_of(module, path)
        except WorkbenchError as exc:  # the space's own checks name a slot, not the file it is in
            message = str(exc)
            raise WorkbenchError(message if path in message else f"python benchmark {path}: {message}") from None
        default = getattr(module, "DEFAULT", None)
        try:
            default_config = space.config(default) if default else None
        except WorkbenchError as exc:  # named, or "missing slot 'y'" read as a fault of SPACE
            raise WorkbenchError(f"python benchmark {path}: DEFAULT: {exc}") from None
        if not callable(getattr(module, "measure", None)):
            raise WorkbenchError(f"python benchmark {path} must define measure(config) -> dict")
        byte_hash = hashlib.sha256(data).hexdigest()[:16]
        source_hash = _code_hash(data, os.path.dirname(os.path.abspath(path))) or byte_hash
        name = str(spec.options.get("kernel") or getattr(module, "NAME", "") or os.path.splitext(os.path.basename(path))[0])
        if len(name) > MAX_NAME_CHARS or not name.isprintable():  # the name reaches exports and file names
            raise WorkbenchError(f"python benchmark {path}: NAME must be one printable line of at most "
                                 f"{MAX_NAME_CHARS} characters")
        doc = (module.__doc__ or "").strip()
        return Target(
            kernel=name,
            kind="python",
            space=space,
            problem=dict(space.params),
            source_hash=source_hash,
            # sessions measured when the identity was the file's bytes continue while those are the same
            earlier_hashes=frozenset({byte_hash, _code_hash(data) or byte_hash} - {source_hash}),
            device={
                "name": host_device_name(),
                "simulated": False,
                "backend": "python",
                "path": path,
            },
            default_config=default_config,
            description=doc.splitlines()[0] if doc else "",
        )

    def prepare(self) -> None:
        path = _path_of(self.spec)
        expected = self.spec.options.get(CODE_HASH_OPTION)
        data: bytes | None = None
        if expected:
            # a worker started later in the run (after a crash or a timeout replaced one) imports
            # the file as it is then: an edit made meanwhile was measured into the session, under
            # the code identity of the version it started with
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError as exc:
                raise WorkbenchError(f"python benchmark {path}: cannot read it ({exc.strerror or exc})") from None
            if str(expected) not in code_identities(data, os.path.dirname(os.path.abspath(path))):
                raise WorkbenchError(f"python benchmark {path} changed since the run started, so its code is not "
                                     "the code this session measures; the run stops here, keeping what it measured "
                                     f"(tune {shlex.quote(path)} --out NEW.json measures the new code in a session "
                                     "of its own)")
        module = load_module(path, data)  # the bytes checked, not the file read again
        try:  # after the import: a module may move to its own folder as it loads (os.chdir(__file__'s))
            self._cwd = os.getcwd()
        except OSError:  # (a folder removed meanwhile)
            self._cwd = None
        measure = getattr(module, "measure", None)
        if not callable(measure):
            raise WorkbenchError(f"python benchmark {module.__file__} must define measure(config) -> dict")
        self._measure = measure

    def evaluate(self, config: Config, limits: EvalLimits, phase: PhaseCallback = no_phase) -> Measurement:
        if self._measure is None:
            self.prepare()
        assert self._measure is not None
        phase("run")
        try:
            try:
                result = self._measure(dict(config))
            finally:
                self._restore_cwd()
        except MemoryError:
            raise  # the worker retires: its memory state cannot be trusted
        except SystemExit as exc:  # sys.exit() in measure: the worker ended "with code 0", unexplained
            return Measurement.failure(Status.RUNTIME_ERROR, f"measure() called sys.exit({exc.code!r}) instead of "
                                                             "returning its metrics")
        except BaseException as exc:  # noqa: BLE001 - the user's code failing is a recorded outcome
            # (BaseException too: a KeyboardInterrupt or a BaseException subclass raised by measure()
            # killed the worker, "worker exited with code 1"; the worker ignores SIGINT, so such an
            # interrupt is the benchmark's own raise)
            try:
                reason = exception_line(exc)
            except BaseException:  # noqa: BLE001 - its text raised an interrupt of its own: the type says enough
                reason = type(exc).__name__
            return Measurement.failure(Status.RUNTIME_ERROR, reason, log=_traceback_text())
        parsed = _metrics_of(result)
        if isinstance(parsed, str):
            return Measurement.failure(Status.RUNTIME_ERROR, parsed)
        metrics, details = parsed
        return Measurement(status=Status.OK, metrics=metrics, details=details)

    def _restore_cwd(self) -> None:
        """Back to the working folder the worker had once the module was loaded: a worker measures
        candidate after candidate, and one whose measure() changed folder (os.chdir) made every
        later candidate read its relative files elsewhere, failing configs that are fine, never
        measured again."""
        start = self._cwd
        if start is None:
            return
        try:  # (not compared with getcwd() first: that fails in a folder measure() removed)
            os.chdir(start)
        except OSError:  # (the folder itself removed meanwhile: nothing to go back to)
            pass
