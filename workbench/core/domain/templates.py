"""Kernel templates: CUDA C source with slots, plus the spec that makes it tunable and checkable.

A template lives in ``kernels/<name>.cu`` (the source) and ``kernels/<name>.py`` (the spec, a module
defining ``TEMPLATE = KernelTemplate(...)``). Slot values reach the source only as validated
literals from their declared domain, rendered as ``#define`` lines in front of the source:

- a numeric slot ``block_size`` with value 256 -> ``#define BLOCK_SIZE 256``
- a bool slot ``fast_math`` -> ``#define FAST_MATH 1`` (or 0)
- an identifier slot ``strategy`` with domain (atomic, shared_tree) -> one constant per value,
  ``#define STRATEGY_ATOMIC 0`` / ``#define STRATEGY_SHARED_TREE 1``, then ``#define STRATEGY 1``,
  so the source tests ``#if STRATEGY == STRATEGY_SHARED_TREE``.
- every problem parameter ``n`` -> ``#define PROBLEM_N <value>``.

Floats are written with ``repr`` (a double literal without an ``f`` suffix, finite only); slot
names and identifier values must be C identifiers; two slots or values that would produce the same
macro name are refused. Nothing else of the user's reaches the compiler, so a config can never
inject code.

Everything a backend needs beyond the source is a plain function of (problem, config), so the
simulator, the CUDA backend and the exporters share one description of the kernel.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.util
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

import numpy as np

from workbench.core.domain import pysyntax
from workbench.core.domain.includes import MAX_INCLUDED_BYTES, headers_in_folder, macro_option_problem, without_comments
from workbench.core.errors import (SessionFormatError, TemplateError, UnknownTemplate, WorkbenchError, did_you_mean,
                                   exception_line)
from workbench.core.fs import read_capped, read_utf8, resolved
from workbench.core.domain.macros import export_macro, macro_misuses, reserved_macro
from workbench.core.domain.space import Config, ProductSpace, SearchSpace, Slot, Value

Dim3 = tuple[int, int, int]
Problem = Mapping[str, Value]

#: Environment variable naming the folder of shipped templates (overrides the repository's ``kernels/``).
KERNELS_DIR_ENV = "KERNEL_WORKBENCH_KERNELS_DIR"
#: File name ending of a declarative (JSON) spec, read by :mod:`workbench.core.domain.kernel_spec`.
DECLARATIVE_SUFFIX = ".kernel.json"

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ARG_KINDS = ("in", "out", "inout", "scratch", "scalar")
_RESETS = ("poison", "zero", "input")


@dataclass(frozen=True)
class Arg:
    """One kernel argument, in launch order.

    ``kind``: ``in`` (read-only array), ``out`` (array the kernel writes and the reference checks),
    ``inout`` (array read and written), ``scratch`` (device workspace, not checked) or ``scalar``.
    ``dtype``: a NumPy dtype name (``float32``, ``int32``, ``uint32``...).
    ``shape``: problem -> array shape (ignored for scalars); ``value``: problem -> scalar value.
    ``reset``: for out/inout/scratch, what the buffer holds before each launch: ``poison`` (NaN, or
    the dtype's largest integer, so unwritten elements are caught), ``zero`` (accumulators written
    with atomics), or ``input`` (restore the input values, for inout). :func:`output_resets` turns
    this into the one policy every runner of a kernel applies.
    ``tolerance``: for out/inout, this output's own ``(rtol, atol)`` against the reference; None
    takes the template's ``tolerance``. Each output is checked with its own pair, so a loose
    tolerance one output needs never loosens the check of another.
    """

    name: str
    kind: str
    dtype: str = "float32"
    shape: Callable[[Problem], tuple[int, ...]] | None = None
    value: Callable[[Problem], Value] | None = None
    reset: str = "poison"
    tolerance: tuple[float, float] | None = None


def non_finite_reference(expected: Mapping[str, Any], where: str) -> str | None:
    """Why a reference's outputs (``expected``, computed on the problem ``where`` names) cannot be
    checked against: values that are not finite (NaN or infinite), which no kernel's output can
    match, so every config would fail its verification. None when every value is finite."""
    for name, values in expected.items():
        array = np.asarray(values, dtype=np.float64)
        bad = int(array.size - np.count_nonzero(np.isfinite(array)))
        if bad:
            return (f"the reference gives {bad} values of output {name!r} that are not finite (NaN or infinite) on "
                    f"{where}; no kernel's output can match them")
    return None


def no_reference(inputs: Mapping[str, Any], problem: Problem) -> dict[str, np.ndarray]:
    """The reference of a template that has none: nothing to compare with up front.

    A template passes this as ``reference`` when its author gives no ground truth; the backends
    then take the outputs of the first valid config as the reference for the others
    (:func:`workbench.core.model.verify.adopt_reference`) and say so in every trial.
    """
    return {}


def poison_value(dtype: Any) -> float | int:
    """What a poisoned buffer holds: NaN for floats, the largest value for integers, true for bools.

    A value no correct kernel writes by accident, so an element the kernel never wrote fails the
    comparison with the reference instead of passing on a leftover from an earlier launch.
    """
    kind = np.dtype(dtype).kind
    if kind in "fc":
        return math.nan
    if kind in "iu":
        return int(np.iinfo(np.dtype(dtype)).max)
    return 1


@dataclass(frozen=True)
class OutputReset:
    """What one written buffer holds before a launch (see :func:`output_resets`).

    ``restore``: copy the argument's input values back (inout arrays); otherwise ``fill`` every
    element with one value. ``every_launch``: the reset runs before every timed launch too (zeros for
    atomic accumulators, restored inputs), because the kernel's result depends on it; a poison fill
    runs only before the launch whose outputs are checked, so it costs nothing while timing.
    """

    name: str
    dtype: str
    restore: bool
    fill: float | int
    every_launch: bool


class _Fillable(Protocol):
    def fill(self, value: Any) -> Any: ...


def output_resets(args: Sequence[Arg]) -> tuple[OutputReset, ...]:
    """The reset policy of a kernel's written arguments (out, inout, scratch), in launch order.

    One place for the rule the CUDA backend, the exported CuPy script and the CPU test harness all
    follow, so a kernel sees the same buffers wherever it runs: ``reset="zero"`` fills zeros;
    ``reset="input"`` and any inout restore the inputs; everything else is poisoned.
    """
    resets = []
    for arg in args:
        if arg.kind in ("in", "scalar"):
            continue
        if arg.reset == "zero":
            resets.append(OutputReset(arg.name, arg.dtype, False, 0, True))
        elif arg.reset == "input" or arg.kind == "inout":
            resets.append(OutputReset(arg.name, arg.dtype, True, 0, True))
        else:
            resets.append(OutputReset(arg.name, arg.dtype, False, poison_value(arg.dtype), False))
    return tuple(resets)


def reset_buffers(resets: Sequence[OutputReset], buffers: Mapping[str, _Fillable], inputs: Mapping[str, Any],
                  *, poison: bool, upload: Callable[[Any, np.ndarray], Any]) -> None:
    """Apply ``resets`` to ``buffers`` (NumPy or CuPy arrays, by argument name; absent ones are skipped).

    ``poison``: also poison the buffers whose policy is poison (before a checked launch). ``upload(buffer,
    host_array)`` copies host values into a buffer (``cupy.ndarray.set``, ``numpy.copyto``).
    """
    for reset in resets:
        buffer = buffers.get(reset.name)
        if buffer is None or not (poison or reset.every_launch):
            continue
        if reset.restore:
            upload(buffer, np.asarray(inputs[reset.name], dtype=reset.dtype))
        else:
            buffer.fill(reset.fill)


@dataclass(frozen=True)
class WorkProfile:
    """What one launch of a config does, in the terms the performance model needs.

    Templates compute this from (problem, config); the simulator turns it into a latency. Every
    field is a plain number so it can be shown ("8 B per access, 100% coalesced").
    """

    bytes_read: float  # global memory bytes read, including re-reads the design causes
    bytes_written: float  # global memory bytes written
    flops: float  # floating-point operations
    access_bytes: int = 4  # bytes per thread per global access (4, 8, 16 for float, float2, float4)
    coalescing: float = 1.0  # fraction of each fetched sector that is used (1.0 = perfectly coalesced)
    work_per_thread: float = 1.0  # independent items per thread (latency hiding / ILP)
    transcendentals: float = 0.0  # special-function ops (expf, tanhf...) in total
    fast_math: bool = False  # transcendentals use the SFU intrinsics
    atomics: float = 0.0  # global atomic operations in total
    atomic_targets: float = 1.0  # distinct addresses the atomics hit (contention = atomics / targets)
    shared_atomics: float = 0.0  # shared-memory atomic operations in total
    shared_atomic_targets: float = 1.0
    smem_accesses: float = 0.0  # shared memory loads+stores in total (per element accesses)
    bank_conflict_ways: float = 1.0  # average serialisation of shared accesses (1 = conflict-free, 32 = worst)
    syncs_per_block: float = 0.0  # __syncthreads() executed per block
    serial_fraction: float = 0.0  # fraction of work done by a single thread/warp/block (e.g. a final pass)
    l2_reuse: float = 0.0  # fraction of bytes_read served by L2/L1 reuse rather than DRAM
    extra_launches: int = 0  # additional kernel launches (multi-pass algorithms)
    l1_hit_of_reuse: float = 0.7  # share of the re-reads (l2_reuse) that hit in the SM's L1 (the rest come from L2)
    read_only_path: float = 0.0  # fraction of global read requests issued through the read-only/texture path (__ldg)
    staging_rounds: float = 0.0  # dependent global-load round trips each thread waits through before the block's barrier
    other_instructions: float = 0.0  # integer, address and loop instructions in total (each takes an issue slot)
    static_smem_bytes: int = 0  # shared memory the source declares per block (used when no compiler reports it)
    notes: tuple[str, ...] = ()  # human-readable remarks the model and GUI can show


#: An ``#include`` directive, spaced as the preprocessor allows (``#  include``), wherever it stands
#: (after a comment on its line too); one in a comment or a string only adds the folder to the
#: search, which changes nothing the compile finds.
_INCLUDE_DIRECTIVE = re.compile(r"#[ \t]*include\b")


#: A C++ raw string literal (``R"(...)"``) may hold quotes and ``//``, which the comment scan would
#: misread: a source with one is hashed as written.
_RAW_STRING = re.compile(r'\bu?8?[LuU]?R"')


def source_code_identity(source: str) -> str:
    """The code of a CUDA source as its identity counts it: comments removed (string and character
    literals kept), trailing spaces and blank lines dropped. A comment corrected in a template
    left every session of it refused as measured with other code, while the compiler saw the same
    program (a Python benchmark's docstrings and comments were already not counted). A source
    with a raw string literal is taken as written."""
    if _RAW_STRING.search(source):
        return source
    # lines joined at a trailing backslash first, as the compiler joins them before it looks for
    # comments: a string continued on the next line holds a "//" that is no comment
    spliced = source.replace("\r\n", "\n").replace("\r", "\n").replace("\\\n", "")
    lines = (line.rstrip() for line in without_comments(spliced, keep_lines=False).split("\n"))
    return "\n".join(line for line in lines if line)


@dataclass(frozen=True)
class KernelTemplate:
    """A tunable CUDA kernel: source, slots, problem, launch geometry, reference and cost facts.

    Required functions (all pure, all of ``(problem, config)`` unless noted):

    - ``grid`` / ``block``: launch geometry (3-tuples).
    - ``dynamic_smem``: dynamic shared memory bytes per block (default 0).
    - ``make_inputs(problem, rng) -> dict[name, np.ndarray | scalar]``: fresh random inputs (never
      zeros) for every ``in``/``inout`` arg, NumPy, in the arg's dtype.
    - ``reference(inputs, problem) -> dict[out_name, np.ndarray]``: the float64 ground truth of
      every checked output, computed from the inputs with NumPy.
    - ``profile(problem, config) -> WorkProfile``: work and access pattern for the performance model.
    - ``emulate(inputs, problem, config) -> dict[out_name, np.ndarray]`` (optional): a NumPy
      emulation of the config's arithmetic at the precision it uses (fast math, accumulation order),
      run on small inputs by the simulator to derive ``quality``.
    - ``bytes_moved(problem)`` and ``flops(problem)``: the minimum bytes one launch must move and the
      flops it must do, for throughput and the roofline (config-independent on purpose).
    - ``baseline`` (optional): ``(cupy, device_inputs, problem) -> None`` running the library
      implementation of the same operation (``cupy.sum``, ``cupy.matmul``...); ``baseline_name``.

    Added with the template library (all optional): ``problem_doc`` (param -> one line),
    ``problem_limits`` (param -> (min, max), inclusive; integer params default to ``>= 1``),
    ``source_path`` (the ``.cu`` file, filled in by :func:`load_templates`), ``workspace_bytes``
    (the scratch bytes one config really uses, for its memory footprint).
    """

    name: str
    title: str
    description: str
    source: str
    entry: str
    slots: tuple[Slot, ...]
    args: tuple[Arg, ...]
    grid: Callable[[Problem, Config], Dim3]
    block: Callable[[Problem, Config], Dim3]
    make_inputs: Callable[[Problem, np.random.Generator], dict[str, Any]]
    reference: Callable[[Mapping[str, Any], Problem], dict[str, np.ndarray]]
    profile: Callable[[Problem, Config], WorkProfile]
    bytes_moved: Callable[[Problem], float]
    flops: Callable[[Problem], float]
    restrictions: tuple[str, ...] = ()
    problem: Mapping[str, Value] = field(default_factory=dict)
    small_problem: Mapping[str, Value] = field(default_factory=dict)  # for emulation / quick checks
    default: Mapping[str, Value] = field(default_factory=dict)
    dynamic_smem: Callable[[Problem, Config], int] = lambda problem, config: 0
    emulate: Callable[[Mapping[str, Any], Problem, Config], dict[str, np.ndarray]] | None = None
    tolerance: tuple[float, float] = (1e-4, 1e-5)  # (rtol, atol) against the float64 reference
    compile_options: tuple[str, ...] = ()
    baseline: Callable[[Any, Mapping[str, Any], Problem], None] | None = None
    baseline_name: str = ""
    path: str = ""  # where the spec was loaded from
    # Inputs that live in ``__constant__`` memory: keys of ``make_inputs`` (NOT listed in ``args``,
    # never passed as kernel arguments) whose arrays the backend copies to the module's
    # same-named ``__constant__`` symbol before launching (conv2d's filter is ``d_filter``).
    constants: tuple[str, ...] = ()
    problem_doc: Mapping[str, str] = field(default_factory=dict)
    problem_limits: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    source_path: str = ""  # the .cu file the source was read from
    # Device workspace bytes a config really uses (``(problem, config) -> int``): scratch buffers are
    # declared at their largest size, but a config that needs less (a two-pass reduction's partial
    # sums, one per block) would allocate less. None: every scratch arg at its declared size.
    workspace_bytes: Callable[[Problem, Config], int] | None = None
    _spaces: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "slots", tuple(self.slots))
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "restrictions", tuple(self.restrictions))
        object.__setattr__(self, "compile_options", tuple(self.compile_options))
        object.__setattr__(self, "constants", tuple(self.constants))
        object.__setattr__(self, "problem", dict(self.problem))
        object.__setattr__(self, "small_problem", dict(self.small_problem or self.problem))
        object.__setattr__(self, "default", dict(self.default))
        _validate_static(self)
        if self.default:  # the template's default config becomes the slots' defaults
            slots = tuple(
                dataclasses.replace(s, default=self.default[s.name]) if s.name in self.default else s
                for s in self.slots
            )
            object.__setattr__(self, "slots", slots)

    # --- derived behaviour ------------------------------------------------------------------------
    def space(self, problem: Problem | None = None) -> SearchSpace:
        """The search space of this template for a problem (restrictions may read problem params).

        Spaces are cached per problem: counting valid configs is the expensive part and the
        engine, the GUI and ``render`` ask for the same space many times.
        """
        params = self.resolve_problem(problem) if problem is not None else dict(self.problem)
        key = _problem_key(params)
        space = self._spaces.get(key)
        if space is None:
            space = ProductSpace(self.slots, self.restrictions, params=params)
            if len(self._spaces) > 32:
                self._spaces.clear()
            self._spaces[key] = space
        return space

    def default_config(self, problem: Problem | None = None) -> Config | None:
        """The author's default config, if it is valid for this problem."""
        return self.space(problem).default_config()

    def resolve_problem(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Value]:
        """Defaults with user overrides applied and type-checked (unknown names are an error).

        Strings (from a command line) are accepted when they spell a value of the default's type.
        """
        resolved = dict(self.problem)
        for name, raw in (overrides or {}).items():
            if name not in self.problem:
                known = ", ".join(sorted(self.problem)) or "none"
                raise WorkbenchError(f"{self.name}: unknown problem parameter {name!r} (known: {known})")
            resolved[name] = _coerce_problem_value(self.name, name, raw, self.problem[name])
        for name, value in resolved.items():
            lo, hi = self.problem_limits.get(name, (1, math.inf) if _is_int(self.problem[name]) else (-math.inf, math.inf))
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not lo <= value <= hi:
                raise WorkbenchError(f"{self.name}: problem parameter {name}={value} is outside "
                                     f"[{_bound_text(lo)}, {_bound_text(hi)}]")
        return resolved

    def defines(self, config: Config, problem: Problem | None = None) -> list[str]:
        """The ``#define`` lines for a config and problem (see the module docstring for the rules)."""
        params = self.resolve_problem(problem) if problem is not None else dict(self.problem)
        lines: list[str] = []
        for slot in self.slots:
            macro = slot.name.upper()
            value = config[slot.name]
            if isinstance(value, str):
                for index, choice in enumerate(slot.values):
                    lines.append(f"#define {macro}_{str(choice).upper()} {index}")
                lines.append(f"#define {macro} {slot.values.index(value)}")
            else:
                lines.append(f"#define {macro} {c_literal(value, slot.name)}")
        for name, value in params.items():
            if isinstance(value, str):
                raise TemplateError(f"{self.name}: problem parameter {name!r} must be a number or a bool")
            lines.append(f"#define PROBLEM_{name.upper()} {c_literal(value, name)}")
        return lines

    def render(self, config: Config | Mapping[str, Value], problem: Problem | None = None, *,
               line_directive: bool = True) -> str:
        """The complete CUDA source for a config: ``#define`` block + template source.

        The config is validated against the space first (domain and restrictions), so a value
        outside the declared domain never reaches the compiler. ``line_directive``: a ``#line``
        before the template's source, so compiler messages name the template file's own lines;
        left out of a source that becomes a file of its own (an export), whose messages must name
        that file's lines.
        """
        params = self.resolve_problem(problem)
        valid = self.space(params).config(config)
        head = [f"// {self.name}: config {valid.id}", *self.defines(valid, params)]
        if line_directive:
            location = Path(self.source_path).name if self.source_path else f"{self.name}.cu"
            head.append(f'#line 1 "{c_string_body(location)}"')
        return "\n".join(head) + "\n" + self.source

    def signature_problems(self) -> list[tuple[str, str]]:
        """(``error`` or ``warning``, message) for each way the entry's parameters, as the source
        declares them, disagree with the arguments a launch passes (:mod:`workbench.core.domain.signature`)."""
        from workbench.core.domain.signature import signature_problems

        return signature_problems(self.source, self.entry, [(a.name, a.kind, a.dtype) for a in self.args],
                                  tuple(self.constants))

    def source_hash(self) -> str:
        """Hash of the template's CUDA source, of the headers it includes from its own folder and
        of what its spec file says, so cached results, continued sessions and shipped compiler
        figures die with edits that change the template, and survive edits that do not (see
        :func:`spec_identity`). A header of its folder is its code as much as the ``.cu`` is: an
        edited one let a session continue, and its source view show code its trials did not run."""
        return self._hash_with(spec_identity(Path(self.path)) if self.path and os.path.isfile(self.path) else b"")

    def _hash_with(self, identity: bytes, code: str | None = None) -> str:
        """The hash of ``code`` (default: the source's code, :func:`source_code_identity`), the
        spec's ``identity`` and the headers of the template's own folder."""
        digest = hashlib.sha256((source_code_identity(self.source) if code is None else code).encode())
        digest.update(b"\0spec\0")
        digest.update(identity)
        # (none: the hash of a self-contained source is as it was); a header counts by its code as
        # the .cu does, or as written in the scheme of ``code`` given (the source as written)
        for name, content in self._own_headers(by_code=code is None):
            digest.update(b"\0header\0" + name.encode("utf-8", "surrogateescape") + b"\0" + content.encode())
        return digest.hexdigest()[:16]

    def _own_headers(self, by_code: bool = False) -> list[tuple[str, str]]:
        """(path relative to the template's folder, content hash) of each header the source
        includes from that folder, as a compile finds them; none when it includes none there (or
        when they cannot be resolved: the compile says why). ``by_code``: the hash of the header's
        code (:func:`source_code_identity`), so a comment edited in it is no other template."""
        options = self.include_options
        if not options:
            return []
        folder = Path(self.source_path or self.path).parent
        try:
            found = headers_in_folder(self.source, folder, self.compile_options)
        except WorkbenchError:
            return []
        if not by_code:
            return [(relative.as_posix(), content) for relative, content in found]
        out = []
        for relative, content in found:
            try:
                text = read_capped(folder / relative, "header", MAX_INCLUDED_BYTES).decode("utf-8", errors="replace")
            except (WorkbenchError, OSError):
                out.append((relative.as_posix(), content))  # (unreadable now: the compile will say so)
                continue
            out.append((relative.as_posix(), hashlib.sha256(source_code_identity(text).encode()).hexdigest()))
        return out

    def is_code_of(self, source_hash: str) -> bool:
        """Whether ``source_hash`` (a session's) names this template's code: its hash now, or an
        earlier hash of the same code (:meth:`earlier_hashes`)."""
        return source_hash in {self.source_hash(), *self.earlier_hashes()}

    def earlier_hashes(self) -> frozenset[str]:
        """Source hashes earlier versions of a shipped template had while they described the same
        template (the same code under another import path, another docstring or another hash
        scheme): a session measured then is still this template's. The hash of the same source with
        its comments counted (the scheme before :func:`source_code_identity`) for every template;
        for a shipped one also those listed in ``kernels/previous_hashes.json``."""
        identity = spec_identity(Path(self.path)) if self.path and os.path.isfile(self.path) else b""
        # hashed with the source's comments and blank lines, before they stopped counting: a
        # session measured then continues while the code is the same (each scheme below too)
        earlier: set[str] = {self._hash_with(identity, code=self.source)}
        if not self.path:
            return frozenset(earlier - {self.source_hash()})
        suffix = Path(self.path).suffix
        if suffix == ".json" and os.path.isfile(self.path):
            # a declarative spec was hashed as its bytes, then with its slots' doc texts: a session
            # measured then is still this one's
            try:
                data = Path(self.path).read_bytes()
            except OSError:
                return frozenset(earlier - {self.source_hash()})
            earlier.update(self._hash_with(older, code=code)
                           for older in (data, _declarative_spec_identity(data, keep_docs=True))
                           for code in (None, self.source))
            return frozenset(earlier - {self.source_hash()})
        if suffix == ".py" and os.path.isfile(self.path):
            # hashed as this Python version's ast.dump of the same code, before the stable dump
            try:
                earlier.add(self._hash_with(_python_spec_identity_dumped(Path(self.path).read_bytes()), code=self.source))
            except OSError:
                pass
        folder = self._shipped_folder()
        if folder is not None:
            earlier.update(_previous_hashes(folder).get(self.name, ()))
        earlier.update(self.profile_changed_hashes())
        earlier.discard(self.source_hash())
        return frozenset(earlier)

    def profile_changed_hashes(self) -> frozenset[str]:
        """The earlier hashes (among :meth:`earlier_hashes`) of versions of a shipped template whose
        work profile differed: a session simulated with estimated resources then holds figures
        of the earlier model (``profile_changed`` in ``kernels/previous_hashes.json``)."""
        folder = self._shipped_folder()
        listed = _previous_hashes(folder, "profile_changed").get(self.name, ()) if folder is not None else ()
        return frozenset(listed) - {self.source_hash()}

    @property
    def is_shipped(self) -> bool:
        """Whether this template is one of the shipped library's (not a person's folder's)."""
        return self._shipped_folder() is not None

    def _shipped_folder(self) -> Path | None:
        """The shipped library's folder when this template is one of it, else None."""
        try:
            folder = kernels_dir().resolve()
        except TemplateError:
            return None
        return folder if self.path and Path(self.path).resolve().parent == folder else None

    @property
    def nvrtc_options(self) -> tuple[str, ...]:
        """The options every compile of this template hands NVRTC: :attr:`include_options`, then
        ``compile_options``, which stays what the author wrote (resource tables and exports compare
        and print it)."""
        return (*self.include_options, *self.compile_options)

    @property
    def include_options(self) -> tuple[str, ...]:
        """For a source that includes anything, the folder of its ``.cu`` (or spec), searched
        before the ``-I`` folders of its options, as nvcc searches the folder of the file it
        compiles: NVRTC compiles a string and looks for its quoted includes in the working folder
        (which it still searches first), so a header beside the template was found only by a run
        started from that folder. Empty for a self-contained source, which compiles, and is
        cached, exactly as without it."""
        home = self.source_path or self.path
        if not home or not _INCLUDE_DIRECTIVE.search(self.source):
            return ()
        return (f"--include-path={Path(home).resolve().parent}",)

    @property
    def has_reference(self) -> bool:
        """Whether the author gave a reference (else the first valid config's outputs serve as one)."""
        return self.reference is not no_reference

    @property
    def reference_runs_a_file(self) -> bool:
        """Whether computing the reference imports a Python file the author chose (a declarative
        template's ``reference.kind = "python"``): done only in a run's worker process."""
        return bool(getattr(self.reference, "runs_file", False))

    def reference_candidates(self, problem: Problem | None = None, count: int = 16) -> list[Config]:
        """Configs tried, in order, for the outputs that stand in for a missing reference: the default
        config, then a fixed sample of the space (the same in every worker, so all adopt the same one)."""
        space = self.space(problem)
        first = space.config(self.default) if self.default else space.default_config()
        candidates = [first] if first is not None else []
        seen = {c.id for c in candidates}
        for config in space.sample(np.random.default_rng(0), count):
            if config.id not in seen and len(candidates) < count:
                candidates.append(config)
                seen.add(config.id)
        return candidates

    def tolerance_for(self, output: str) -> tuple[float, float]:
        """The ``(rtol, atol)`` output ``output`` is checked with: its argument's own, else the template's."""
        for arg in self.args:
            if arg.name == output and arg.tolerance is not None:
                return arg.tolerance
        return self.tolerance

    def output_tolerances(self) -> dict[str, tuple[float, float]]:
        """``(rtol, atol)`` of every checked output, by name (see :meth:`tolerance_for`)."""
        return {name: self.tolerance_for(name) for name in self.checked_outputs}

    def output_resets(self) -> tuple[OutputReset, ...]:
        """This template's reset policy (:func:`output_resets` of its arguments)."""
        return output_resets(self.args)

    @property
    def checked_outputs(self) -> tuple[str, ...]:
        """Names of the outputs the reference checks (``out`` and ``inout`` args)."""
        return tuple(a.name for a in self.args if a.kind in ("out", "inout"))


# --- helpers for template specs ---------------------------------------------------------------------


#: Largest template spec (Python or declarative) or CUDA source read: a template is a few kilobytes.
MAX_SPEC_BYTES = 16 * 1024 * 1024
#: The most values one slot of a template may have. Each value of a template's slot is a variant
#: of the kernel that is compiled on its own; a domain of a million made loading the template take
#: seconds (every value checked and rendered as a C literal, several times) and each proposal of
#: a restricted search tens of seconds, while no tuning budget measures a noticeable part of it.
MAX_TEMPLATE_SLOT_VALUES = 65_536


def read_cu(spec_file: str, filename: str | None = None) -> str:
    """The CUDA source beside a spec module (``<stem>.cu`` unless ``filename`` is given).

    Specs call ``read_cu(__file__)``; a file that is missing, not UTF-8, larger than
    :data:`MAX_SPEC_BYTES` or no regular file is a :class:`TemplateError` naming it. It is read as
    a declarative spec's source is (:func:`workbench.core.fs.read_utf8`): a FIFO at its name would
    otherwise block listing the folder for ever, and a link to ``/dev/zero`` read until memory ran out.
    """
    spec = Path(spec_file)
    cu = spec.with_name(filename) if filename else spec.with_suffix(".cu")
    try:
        return read_utf8(cu, "CUDA source", MAX_SPEC_BYTES)
    except SessionFormatError as exc:  # its message starts with the path; this one names the spec
        reason = str(exc)
        reason = reason[len(str(cu)) + 2:] if reason.startswith(f"{cu}: ") else reason
        raise TemplateError(f"{spec}: cannot read CUDA source {cu.name}: {reason}") from None


def c_string_body(text: str) -> str:
    """``text`` as the inside of a C string literal (every character outside printable ASCII as
    octal escapes of its UTF-8 bytes). Why: a quote, a backslash or a line break in a file's name
    (``#line 1 "NAME"``) ended the directive early, so the rest of the name was compiled as code,
    or broke every compile of the template; exports write text values the same way."""
    out = []
    for char in text:
        if char in ('"', "\\", "?"):  # ? too: no trigraphs
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.extend(f"\\{byte:03o}" for byte in char.encode("utf-8"))
    return "".join(out)


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling of ``a / b`` for launch geometry."""
    return -(-int(a) // int(b))


def likeliest_first(name: str, folders: Sequence[str]) -> list[str]:
    """``folders`` (a session's record of where its template came from) with the likeliest home of
    template ``name`` first: one holding its spec, then one that is a folder at all. A hint to
    give ``--kernel-dir`` named the first as recorded, a folder since removed, where the next one
    held the template."""
    holder = folder_holding(name, folders)

    def rank(folder: str) -> int:
        try:
            return 0 if folder == holder else 1 if Path(folder).is_dir() else 2
        except (OSError, ValueError):
            return 2

    return sorted(folders, key=rank)


def stands_in_for_another(template: KernelTemplate, source_hash: str, unloaded: Sequence[str]) -> str | None:
    """Why the shipped ``template`` is not the code a session of its name ran, or None when it may
    be: the session names template folders that were not loaded (``unloaded``, where its template
    came from), and one of them holds a spec of that name, or its code identity (``source_hash``)
    is none the shipped template ever had (the folder is gone, or on another machine). The shipped
    namesake's source with the tuned config's defines is then no export of what ran."""
    if not template.is_shipped or not unloaded:
        return None
    own = folder_holding(template.name, unloaded)
    if own is not None:
        return f"its template comes from {own}"
    if source_hash and not template.is_code_of(source_hash):
        return f"its template came from {unloaded[0]}"
    return None


def folder_holding(name: str, folders: Sequence[str | os.PathLike[str]]) -> str | None:
    """The first of ``folders`` (other than the shipped library's) that holds a template spec
    named after template ``name`` (``NAME.py`` or ``NAME.kernel.json``, as templates are found), else
    None: where a session's template of a shipped template's name came from, told by looking at
    names alone (nothing is loaded, no code runs)."""
    try:
        shipped: Path | None = kernels_dir().resolve()
    except TemplateError:
        shipped = None
    for folder in folders:
        path = Path(folder)
        try:
            if shipped is not None and path.resolve() == shipped:
                continue
            if any((path / f"{name}{suffix}").is_file() for suffix in (".py", DECLARATIVE_SUFFIX)):
                return str(folder)
        except (OSError, ValueError):  # an unreadable or malformed path holds nothing we can see
            continue
    return None


def kernels_dir() -> Path:
    """The folder of shipped templates: ``$KERNEL_WORKBENCH_KERNELS_DIR``, or the library shipped
    with the running package (the checkout's ``kernels/``, or the installed wheel's copy; see
    :func:`workbench.core.domain.shipped.shipped_path`).
    """
    override = os.environ.get(KERNELS_DIR_ENV)
    if override:
        folder = Path(override).expanduser()
    else:
        from workbench.core.domain.shipped import shipped_path

        folder = shipped_path("kernels")
    if not folder.is_dir():
        raise TemplateError(f"kernel template folder not found: {folder} (set {KERNELS_DIR_ENV})")
    return folder


def spec_identity(path: Path) -> bytes:
    """What of a spec file decides the template it describes.

    For a Python spec: its code, parsed, without docstrings, comments, formatting, import
    statements and the text of ``title=`` / ``description=`` arguments, so moving a module the
    spec imports or rewording what people read keeps every session, cache entry and compiled
    figure of the template valid, while a change to a slot, the geometry or any other statement
    gives a new identity. Declarative specs are data: their bytes. A file that does not parse is
    its bytes (loading it fails anyway).
    """
    data = path.read_bytes()
    if path.suffix == ".py":
        return _python_spec_identity(data)
    return _declarative_spec_identity(data)


#: Keys of a declarative spec people read and the template does not depend on: its title and
#: description texts, as the arguments a Python spec's identity leaves out (:data:`_PROSE_ARGUMENTS`).
_PROSE_KEYS = frozenset({"title", "description"})


def _declarative_spec_identity(data: bytes, keep_docs: bool = False) -> bytes:
    """:func:`spec_identity` of a JSON spec: its data with sorted keys and no layout or prose (its
    title and description, and the ``doc`` text of each slot and problem parameter, which only
    tool tips show). Its bytes were the identity, and the window's editor, which writes specs in a
    layout of its own, made every session tuned from a spec it saved unchanged a session of
    another template (one that could not be continued, and whose export said the template had
    changed). ``keep_docs``: the identity before the ``doc`` texts were left out, for the earlier
    hashes. A file that does not parse is its bytes."""
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return data
    if isinstance(parsed, dict):  # the spec's own title and description only: a key of that name
        # deeper down (an output argument called "title" in the reference) is the template's data
        parsed = {k: v for k, v in parsed.items() if not (k in _PROSE_KEYS and isinstance(v, str))}
        if not keep_docs:
            parsed = _without_docs(parsed)
    # (surrogatepass: a lone surrogate the loader accepts in a text must not end a run in a traceback)
    return json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def _without_docs(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` without the ``doc`` text of its slots and problem parameters (only tool tips show it)."""
    out = dict(spec)
    slots = out.get("slots")
    if isinstance(slots, list):
        out["slots"] = [{k: v for k, v in s.items() if not (k == "doc" and isinstance(v, str))}
                        if isinstance(s, dict) else s for s in slots]
    problem = out.get("problem")
    if isinstance(problem, dict):
        out["problem"] = {name: {k: v for k, v in p.items() if not (k == "doc" and isinstance(v, str))}
                          if isinstance(p, dict) else p for name, p in problem.items()}
    return out


@pysyntax.per_content
def _python_spec_identity(data: bytes) -> bytes:
    """:func:`spec_identity` of a Python spec's bytes. Kept per content: every session opened and
    every listing hashes each template again, and parsing was most of that work."""
    code = _spec_code(data)
    return data if code is None else pysyntax.stable_dump(code).encode()


@pysyntax.per_content
def _python_spec_identity_dumped(data: bytes) -> bytes:
    """The identity a Python spec had before :func:`pysyntax.stable_dump`: ``ast.dump`` of the same
    code, which differs between Python versions (a session measured under one is still the
    template's under this one only through ``previous_hashes.json`` or this)."""
    code = _spec_code(data)
    try:
        return data if code is None else ast.dump(code, include_attributes=False).encode()
    except RecursionError:  # (deeply nested code: no session can have been measured under this identity)
        return data


def _spec_code(data: bytes) -> ast.Module | None:
    """A Python spec's AST without imports, docstrings and prose arguments (see
    :func:`spec_identity`); None for a file that does not parse."""
    try:
        tree = pysyntax.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            node.keywords = [k for k in node.keywords if k.arg not in _PROSE_ARGUMENTS]
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        kept = [stmt for stmt in body if not isinstance(stmt, (ast.Import, ast.ImportFrom))]
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and kept
                and isinstance(kept[0], ast.Expr) and isinstance(kept[0].value, ast.Constant)
                and isinstance(kept[0].value.value, str)):
            kept = kept[1:]  # the docstring
        node.body = kept  # type: ignore[attr-defined]
    return tree


#: Keyword arguments of a spec that are text for people, not part of what the template computes.
_PROSE_ARGUMENTS = frozenset({"title", "description"})

_PREVIOUS_HASHES: dict[Path, dict[str, dict[str, list[str]]]] = {}


def _previous_hashes(folder: Path, section: str = "templates") -> dict[str, list[str]]:
    """``previous_hashes.json`` of the shipped library ``folder``: template name -> earlier source
    hashes listed under ``section`` (``templates``: earlier versions of the same template;
    ``profile_changed``: versions whose work profile differed). Read once per folder; a missing or
    unreadable file lists none."""
    if folder not in _PREVIOUS_HASHES:
        import json

        read: dict[str, dict[str, list[str]]] = {}
        try:
            raw = json.loads((folder / "previous_hashes.json").read_text())
            for part in ("templates", "profile_changed"):
                hashes = raw.get(part, {}) if isinstance(raw, dict) else {}
                read[part] = {str(name): [str(h) for h in listed] for name, listed in hashes.items()
                              if isinstance(listed, list)}
        except (OSError, ValueError, AttributeError):
            read = {}
        _PREVIOUS_HASHES[folder] = read
    return _PREVIOUS_HASHES[folder].get(section, {})


@dataclass(frozen=True)
class TemplateLibrary:
    """What a search path of template folders holds: the templates that load, the spec files that
    do not (file -> the one-line reason) and the templates hidden by a same-named one in an earlier
    folder (name -> the hidden spec file). A listing shows all three, so one half-edited spec
    neither hides the folder's other templates nor goes unmentioned, and a user template that
    replaces a shipped one says so."""

    templates: dict[str, KernelTemplate]
    broken: dict[Path, str]  # spec file -> a one-line reason that names the file
    shadowed: dict[str, Path]

    def reasons(self) -> list[str]:
        """Each reason a spec does not load, once: a folder's two specs of one template share
        theirs, which names both files (it was said twice)."""
        return list(dict.fromkeys(self.broken.values()))


def _bound_text(bound: float) -> str:
    """A problem parameter's bound as written: ``1``, not the ``1.0`` a declarative spec's limits
    are stored as; ``inf`` and fractions as they are."""
    return str(int(bound)) if isinstance(bound, float) and bound.is_integer() else str(bound)


def scan_templates(*dirs: str | os.PathLike[str]) -> TemplateLibrary:
    """Load every template spec found in the given folders (default: the shipped ``kernels/``).

    Every ``*.py`` in a folder is a spec unless its name starts with ``_``, and so is every
    ``*.kernel.json`` (a declarative spec, see :mod:`workbench.core.domain.kernel_spec`); a module that defines
    ``SPACE`` and ``measure`` (a Python benchmark) instead of ``TEMPLATE`` is skipped here. When two
    folders define the same name, the earlier folder wins, as on a search path:
    ``scan_templates(user_dir, kernels_dir())`` lets a user folder override a shipped template.
    A folder that is missing is an error; a spec that does not load is recorded in ``broken``.
    """
    templates: dict[str, KernelTemplate] = {}
    broken: dict[Path, str] = {}
    shadowed: dict[str, Path] = {}
    taken_from: dict[str, Path] = {}  # template name -> the spec file that defines it (or first did)
    for spec_file in _spec_files(dirs):
        try:
            template = _load_spec(spec_file)
        except WorkbenchError as exc:  # the reason names the file (the loaders' messages mostly do already)
            broken[spec_file] = str(exc) if spec_file.name in str(exc) else f"{spec_file}: {exc}"
            continue
        if template is None:
            continue
        first = taken_from.get(template.name)
        if first is None:
            templates[template.name] = template
            taken_from[template.name] = spec_file
        elif first.parent == spec_file.parent:  # NAME.py beside NAME.kernel.json: neither is taken
            templates.pop(template.name, None)
            broken[first] = broken[spec_file] = two_specs(spec_file.parent, template.name)
        else:
            shadowed.setdefault(template.name, spec_file)
    return TemplateLibrary(templates, broken, shadowed)


def two_specs(folder: Path, name: str) -> str:
    """Why neither of a folder's two specs of one template is used: a run finds a template by its
    file name, and taking one of them silently would tune the other's author's kernel by surprise."""
    return (f"{folder}: {name}.py and {name}{DECLARATIVE_SUFFIX} both define template {name!r}; "
            "rename or remove one of them")


def load_templates(*dirs: str | os.PathLike[str]) -> dict[str, KernelTemplate]:
    """Every template of the folders, as :func:`scan_templates` finds them; a spec that fails to
    import or to describe a valid template raises :class:`TemplateError` naming the file and the
    problem (for callers that need the whole library, such as the shipped table's writer)."""
    library = scan_templates(*dirs)
    for reason in library.reasons():
        raise TemplateError(reason)
    return library.templates


def find_template(name: str, *dirs: str | os.PathLike[str]) -> KernelTemplate | None:
    """The template called ``name`` from the first folder that defines it, ``None`` when none does.

    A template is found by its file name (``NAME.py`` or ``NAME.kernel.json``), so only that spec
    is read: another spec of the folder that does not load is not this run's or export's business.
    Its own spec that does not load raises :class:`TemplateError`, and so does a folder where both
    files define it.
    """
    folders = _folders(dirs)  # (checked first: a bad folder is said whatever the name)
    if not name.isidentifier() or name.startswith("_"):
        return None
    for folder in folders:
        found = [template for spec_file in (folder / f"{name}.py", folder / f"{name}{DECLARATIVE_SUFFIX}")
                 if spec_file.is_file() and (template := _load_spec(spec_file)) is not None]
        if len(found) > 1:
            raise TemplateError(two_specs(folder, name))
        if found:
            return found[0]
    return None


def require_template(name: str, *dirs: str | os.PathLike[str], what: str = "template") -> KernelTemplate:
    """:func:`find_template`, or an error naming the templates the folders do have."""
    template = find_template(name, *dirs)
    if template is None:
        available = sorted(scan_templates(*dirs).templates)
        raise UnknownTemplate(f"unknown {what} {name!r}{did_you_mean(name, available)}; available: {', '.join(available)}")
    return template


def check_template_folders(dirs: Sequence[str | os.PathLike[str]]) -> None:
    """Refuse, in one line, a template folder that is missing, a file, or an empty name (what
    ``tune --kernel-dir`` refuses), before anything is looked up in it."""
    if dirs:
        _folders(dirs)


def _folders(dirs: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The folders of a search path, each once (a folder given twice, or the shipped one named
    again, would hide its own templates: 'sgemm replaces sgemm')."""
    if any(not os.fspath(d).strip() for d in dirs):  # Path("") is the current folder, whose .py files would run
        raise TemplateError("a kernel template folder was given as an empty name; name the folder (. for the current one)")
    folders: list[Path] = []
    seen: set[Path] = set()
    for folder in [Path(d) for d in dirs] if dirs else [kernels_dir()]:
        if not folder.is_dir():
            what = "is a file, not a folder" if folder.exists() else "not found"
            raise TemplateError(f"kernel template folder {what}: {folder}")
        if folder.resolve() not in seen:
            seen.add(folder.resolve())
            folders.append(folder)
    return folders


def _spec_files(dirs: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Every spec file of the folders in search-path order (a folder's Python specs before its JSON ones)."""
    files: list[Path] = []
    for folder in _folders(dirs):
        files += [f for f in sorted(folder.glob("*.py")) if not f.name.startswith("_")]
        files += sorted(folder.glob("*" + DECLARATIVE_SUFFIX))
    return files


def _load_spec(spec_file: Path) -> KernelTemplate | None:
    if spec_file.name.endswith(DECLARATIVE_SUFFIX):  # JSON specs: loading runs no code
        from workbench.core.domain.kernel_spec import load_declarative  # it imports this module

        return load_declarative(spec_file)
    return load_template(spec_file)


def load_template(spec_file: str | os.PathLike[str]) -> KernelTemplate | None:
    """Load one spec file; ``None`` for a Python benchmark module (``SPACE`` + ``measure``)."""
    path = resolved(spec_file)
    try:
        # bytes: the parser decodes them as the import will (UTF-8, or a PEP 263 coding line)
        text = read_capped(path, "template spec", MAX_SPEC_BYTES)
    except SessionFormatError as exc:  # a FIFO in the folder would block an open() for ever
        raise TemplateError(str(exc)) from None
    if _is_python_benchmark(path, text):
        return None
    module = _import_spec(path)
    template = getattr(module, "TEMPLATE", None)
    if not isinstance(template, KernelTemplate):
        raise TemplateError(f"{path}: TEMPLATE must be a KernelTemplate, got {type(template).__name__}")
    stem = Path(spec_file).stem
    if template.name != stem:  # a run finds a template by its file's name, a listing by the name inside
        raise TemplateError(f"{path}: the template's name {template.name!r} differs from the file's, {stem}.py: a "
                            "template is found by its file name; rename the file or the name")
    source_path = template.source_path or (str(path.with_suffix(".cu")) if path.with_suffix(".cu").is_file() else "")
    loaded = dataclasses.replace(template, path=str(path), source_path=source_path)
    try:
        loaded.space()  # its restrictions read: a typo or unsafe text is the spec's error, said as a JSON spec's is
    except WorkbenchError as exc:  # (it came from the first listing or run that counted the space, naming no file)
        raise TemplateError(f"{path}: template {template.name!r}: {exc}") from None
    return loaded


# --- internals --------------------------------------------------------------------------------------


def _is_python_benchmark(path: Path, text: bytes) -> bool:
    """True when the module's top level defines SPACE and measure but no TEMPLATE (decided without running it)."""
    kind = _python_spec_kind(str(path), text)
    if isinstance(kind, TemplateError):
        raise TemplateError(str(kind))
    return kind


@pysyntax.per_content
def _python_spec_kind(path: str, text: bytes) -> bool | TemplateError:
    """What :func:`_is_python_benchmark` decides for these bytes: the answer or the error to raise,
    kept per content and name (a listing reads every spec of the library again)."""
    try:
        return _decide_python_benchmark(Path(path), text)
    except TemplateError as exc:
        return exc


def _decide_python_benchmark(path: Path, text: bytes) -> bool:
    try:
        tree = pysyntax.parse(text, filename=str(path))
    except SyntaxError as exc:  # an undecodable file or a NUL byte too, where there is no line
        line = f":{exc.lineno}" if exc.lineno else ""
        raise TemplateError(f"{path}{line}: syntax error: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise TemplateError(f"{path}: syntax error: nested too deeply to parse") from None
    names: set[str] = set()
    raises: list[int] = []
    for node in _module_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Raise):
            raises.append(node.lineno)
    if "TEMPLATE" in names:
        return False
    if {"SPACE", "measure"} <= names:
        return True
    # The file is not run (it is neither kind of spec), so an exception it would raise never
    # happens; a raise at its top level is named, since that is what its author will be looking at.
    hint = f" (not run; its top level raises at line {raises[0]})" if raises else ""
    raise TemplateError(f"{path}: defines no TEMPLATE (a template spec) nor SPACE and measure (a benchmark){hint}")


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at import, inside ``if``/``try``/``with`` blocks too (a TEMPLATE
    assigned in ``try:`` is still a spec), but not inside functions or classes."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.For, ast.While)):
            yield from _module_level(node.body + node.orelse)
        elif isinstance(node, ast.With):
            yield from _module_level(node.body)
        elif isinstance(node, ast.Try):
            inner = node.body + node.orelse + node.finalbody
            for handler in node.handlers:
                inner += handler.body
            yield from _module_level(inner)


def _import_spec(path: Path) -> Any:
    module_name = "workbench_kernels_" + hashlib.sha1(os.fsencode(path)).hexdigest()[:10] + "." + path.stem
    spec = pysyntax.file_module_spec(module_name, path)
    if spec is None or spec.loader is None:
        raise TemplateError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except WorkbenchError as exc:
        sys.modules.pop(module_name, None)
        ours = type(exc).__module__.startswith("workbench.")  # ours words itself; a spec's own subclass may not
        message = str(exc) if ours else exception_line(exc).split(": ", 1)[-1]
        raise TemplateError(message if str(path) in message else f"{path}: {message}") from None
    except SystemExit as exc:  # sys.exit() in a spec must not end the command with the spec's code
        sys.modules.pop(module_name, None)
        try:
            code = str.__str__(repr(exc.code))[:80]
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - the code is the spec's object; its repr may fail, even exit
            code = "..."
        raise TemplateError(f"{path}{_spec_line(exc, path)}: called sys.exit({code}) while loading") from None
    except KeyboardInterrupt:  # Ctrl-C while loading stops the command, as anywhere else
        sys.modules.pop(module_name, None)
        raise
    except BaseException as exc:  # noqa: BLE001 - a broken spec, whatever it raises, must not take the caller down
        sys.modules.pop(module_name, None)
        raise TemplateError(f"{path}{_spec_line(exc, path)}: {exception_line(exc)}") from None
    return module


def _spec_line(exc: BaseException, path: Path) -> str:
    tb = exc.__traceback__
    line = ""
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == path:
            line = f":{tb.tb_lineno}"
        tb = tb.tb_next
    return line



#: A ``__global__`` function's name where it is defined (qualifiers and ``__launch_bounds__`` between).
_GLOBAL_FUNCTION = re.compile(r"__global__\s+(?:[A-Za-z_]\w*\s+)*?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
                              r"([A-Za-z_]\w*)\s*\(")


def global_functions(source: str) -> list[str]:
    """The names of the kernels (``__global__`` functions) ``source`` defines, in order: what an
    entry can name, for a message or a first guess."""
    return list(dict.fromkeys(_GLOBAL_FUNCTION.findall(source)))

def _validate_static(t: KernelTemplate) -> None:
    """Checks that need no search space: names, macro collisions, args, problem keys."""

    def fail(problem: str) -> None:
        raise TemplateError(f"template {t.name!r}: {problem}")

    if not _C_IDENTIFIER.match(t.name or ""):
        fail("name must be a C identifier")
    for slot in t.slots:
        if len(slot.values) > MAX_TEMPLATE_SLOT_VALUES:
            fail(f"slot {slot.name} has {len(slot.values):,} values; a template slot may have at most "
                 f"{MAX_TEMPLATE_SLOT_VALUES:,} (a problem size belongs in the problem, not in a slot)")
    if not _C_IDENTIFIER.match(t.entry or ""):
        fail(f"entry {t.entry!r} must be a C identifier")
    if not re.search(r"\b" + re.escape(t.entry) + r"\s*\(", t.source):
        kernels = global_functions(t.source)
        found = f" (its kernels: {', '.join(kernels[:8])})" if kernels else ""
        if not t.source.strip():  # (a spec opened in the editor without its .cu file beside it)
            fail(f"the source is empty: write the kernel {t.entry!r}, or put the spec's .cu file beside it")
        fail(f"entry function {t.entry!r} does not appear in the source{found}")
    macros: dict[str, str] = {}

    def claim(macro: str, owner: str) -> None:
        if macro in macros:
            fail(f"{owner} and {macros[macro]} would both define {macro}")
        if reserved_macro(macro):  # a slot "ndebug" became #define NDEBUG 0, turning assert() off
            fail(f"{owner} would define {macro}, a name C, C++ or the standard headers keep; rename it")
        if export_macro(macro):
            fail(f"{owner} would define {macro}, a name of the kind the workbench's exported headers define "
                 "(their include guard, their device selection); rename it")
        macros[macro] = owner

    for slot in t.slots:
        if not _C_IDENTIFIER.match(slot.name):
            fail(f"slot name {slot.name!r} must be a C identifier")
        if slot.name.upper().startswith("PROBLEM_"):
            fail(f"slot name {slot.name!r} must not start with problem_")
        if not slot.values:
            fail(f"slot {slot.name!r} has an empty domain")
        claim(slot.name.upper(), f"slot {slot.name}")
        for value in slot.values:
            if isinstance(value, str):
                if value.lower() in ("true", "false"):  # an identifier renders as its position: "false" as 1
                    fail(f"slot {slot.name!r}: value {value!r} is text, which names a choice by its position "
                         f"(\"false\" second: rendered as 1); write a switch's values as true / false without quotes")
                if not _C_IDENTIFIER.match(value):
                    fail(f"slot {slot.name!r}: value {value!r} must be a C identifier")
                claim(f"{slot.name.upper()}_{value.upper()}", f"slot {slot.name} value {value}")
            else:
                c_literal(value, slot.name, template=t.name)
    for name, value in t.problem.items():
        if not _C_IDENTIFIER.match(name):
            fail(f"problem parameter {name!r} must be a C identifier")
        if isinstance(value, str) or not isinstance(value, (int, float, bool)):
            fail(f"problem parameter {name!r} must be a number or a bool")
        claim(f"PROBLEM_{name.upper()}", f"problem parameter {name}")
    # a slot the source overrides or only tests for existence runs the same code in every config,
    # and a run would recommend one of its values as if it mattered (the compiler only warns)
    for misuse in macro_misuses(t.source, macros)[:1]:
        owner = macros[misuse.macro].split(" value ")[0]
        fail(f"{owner}: line {misuse.line} of the source {misuse.problem}")
    for option in t.compile_options:
        if not isinstance(option, str) or not option.isprintable():
            fail(f"compile option {option!r} must be one option on one line, without control characters")
    problem = macro_option_problem(list(t.compile_options))
    if problem is not None:
        fail(f"compile options: {problem}")
    if set(t.small_problem) != set(t.problem):
        fail("small_problem must set exactly the problem parameters")
    unknown_default = set(t.default) - {s.name for s in t.slots}
    if unknown_default:
        fail(f"default names unknown slots: {', '.join(sorted(unknown_default))}")
    arg_names = set()
    for arg in t.args:
        if not isinstance(arg.name, str) or not _C_IDENTIFIER.match(arg.name):
            fail(f"argument name {arg.name!r} must be a C identifier")
        if arg.name in arg_names:
            fail(f"argument {arg.name!r} is declared twice")
        arg_names.add(arg.name)
        if arg.kind not in _ARG_KINDS:
            fail(f"argument {arg.name!r}: kind must be one of {', '.join(_ARG_KINDS)}")
        if arg.reset not in _RESETS:
            fail(f"argument {arg.name!r}: reset must be one of {', '.join(_RESETS)}")
        try:
            np.dtype(arg.dtype)
        except TypeError:
            fail(f"argument {arg.name!r}: unknown dtype {arg.dtype!r}")
        if arg.kind == "scalar" and arg.value is None:
            fail(f"scalar argument {arg.name!r} needs value=")
        if arg.kind != "scalar" and arg.shape is None:
            fail(f"array argument {arg.name!r} needs shape=")
        if arg.tolerance is not None and (len(arg.tolerance) != 2 or min(arg.tolerance) < 0):
            fail(f"argument {arg.name!r}: tolerance must be (rtol, atol), both non-negative")
    rtol, atol = t.tolerance
    if rtol < 0 or atol < 0:
        fail("tolerance must be non-negative")


def c_literal(value: Value, name: str, template: str = "") -> str:
    """A C literal for a numeric or bool value (the only non-identifier text rendered into source)."""
    where = f"template {template!r}: " if template else ""
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        number = int(value)
        # every 64-bit value as a C constant of a type that holds it: an unsuffixed decimal above
        # LLONG_MAX has none (compilers warn, or refuse with -pedantic-errors), and -2**63 is the
        # negation of a constant one past LLONG_MAX
        if 2**63 <= number < 2**64:
            return f"{number}ULL"
        if number == -(2**63):
            return "(-9223372036854775807LL - 1)"
        if not -(2**63) < number < 2**63:
            raise TemplateError(f"{where}{name}: value {number} does not fit a 64-bit C integer")
        return str(number)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise TemplateError(f"{where}{name}: value {value!r} is not a finite number")
        return repr(float(value))
    raise TemplateError(f"{where}{name}: value {value!r} cannot be rendered as a C literal")


def _is_int(value: Value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _coerce_problem_value(template: str, name: str, raw: Any, default: Value) -> Value:
    """Check (and parse command-line text into) the type of the parameter's default."""
    where = f"{template}: problem parameter {name}"
    if isinstance(raw, np.generic):
        raw = raw.item()
    if isinstance(default, bool):
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
            return raw.strip().lower() in ("true", "1", "yes")
        raise WorkbenchError(f"{where} must be true or false, got {raw!r}")
    if isinstance(default, int):
        if isinstance(raw, bool):
            raise WorkbenchError(f"{where} must be an integer, got {raw!r}")
        if isinstance(raw, int):
            return raw
        if isinstance(raw, float) and raw.is_integer():
            return int(raw)
        if isinstance(raw, str):
            try:
                return int(raw.strip().replace("_", ""))
            except ValueError:
                pass
        raise WorkbenchError(f"{where} must be an integer, got {raw!r}")
    if isinstance(default, float):
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            value = float(raw)
        elif isinstance(raw, str):
            try:
                value = float(raw)
            except ValueError:
                raise WorkbenchError(f"{where} must be a number, got {raw!r}") from None
        else:
            raise WorkbenchError(f"{where} must be a number, got {raw!r}")
        if not math.isfinite(value):
            raise WorkbenchError(f"{where} must be finite, got {raw!r}")
        return value
    raise WorkbenchError(f"{where} has an unsupported type")


def _problem_key(params: Mapping[str, Value]) -> str:
    return repr(sorted((k, type(v).__name__, v) for k, v in params.items()))


__all__ = [
    "Arg",
    "Dim3",
    "KernelTemplate",
    "Problem",
    "WorkProfile",
    "ceil_div",
    "kernels_dir",
    "TemplateLibrary",
    "find_template",
    "load_template",
    "load_templates",
    "require_template",
    "scan_templates",
    "read_cu",
]
