"""Check a template being written: does the spec hold, how big is its space, does the default compile.

The editor calls :func:`check_draft` in a background thread after each pause in typing; it is plain
Python over the same pieces a run uses (the declarative loader, the search space, ``render`` and
NVRTC through :func:`workbench.core.model.compiler.compile_cuda`), so what the editor shows is what a
run will do. Every problem is a :class:`Diagnostic` that names where it is: a line of the ``.cu``
(compiler errors and warnings, mapped back through the ``#line`` the renderer writes) or a field of
the spec (``restrictions[0]``), so the editor can mark it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from workbench.core.errors import WorkbenchError
from workbench.core.domain.kernel_spec import (
    BLOCK_LIMITS, GRID_LIMITS, MAX_BLOCK_THREADS, SpecError, template_from_spec,
)
from workbench.core.domain.includes import defined_by_options, macro_options, pre_included
from workbench.core.domain.macros import KNOWN_MACROS, strip_comments
from workbench.core.domain.templates import KernelTemplate, no_reference, non_finite_reference
from workbench.core.domain.space import restriction_note

#: One NVRTC diagnostic: `file(line): error|warning[ #code-D]: text`.
_AT_END = re.compile(r"^At end of source: (?P<severity>error|warning|catastrophic error)[^:]*: (?P<text>.*)$")
_DIAGNOSTIC = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<severity>error|warning|catastrophic error)[^:]*: (?P<text>.*)$")


@dataclass(frozen=True)
class Diagnostic:
    """One problem: ``where`` is ``"source"`` (``line`` of the .cu) or ``"spec"`` (``field``)."""

    where: str
    severity: str  # "error" or "warning"
    message: str
    line: int = 0  # of the .cu (0: none of its lines)
    field: str = ""
    #: Another file the compiler names (a header the source includes), and its line there.
    file: str = ""
    file_line: int = 0

    def __str__(self) -> str:
        if self.where != "source":
            place = self.field or "spec"
        elif self.file:
            place = f"{self.file}, line {self.file_line}"
        else:  # (a problem of the whole source, such as its entry, has no line: "line 0" named none)
            place = f"line {self.line}" if self.line else "source"
        return f"{place}: {self.severity}: {self.message}"


@dataclass(frozen=True)
class DraftReport:
    """What the editor shows after a check."""

    diagnostics: tuple[Diagnostic, ...] = ()
    space_size: int | None = None  # slot domains multiplied out
    valid_configs: int | None = None
    default_config: Mapping[str, Any] | None = None
    compiled: bool = False  # the default config compiled without error
    resources: Mapping[str, int] = field(default_factory=dict)  # registers, smem_bytes, spill_bytes, stack_bytes
    compile_s: float = 0.0
    note: str = ""  # e.g. why nothing was compiled

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)


def parse_compiler_log(log: str, source_name: str, last_line: int = 0) -> list[Diagnostic]:
    """Errors and warnings of an NVRTC log that point into ``source_name`` (others keep line 0).
    One "at end of source" (a missing closing brace) is at ``last_line``, the source's last line:
    with line 0 it was marked nowhere, and clicking it went nowhere."""
    found = []
    for raw in log.splitlines():
        at_end = _AT_END.match(raw.strip())
        if at_end:
            severity = "warning" if at_end.group("severity") == "warning" else "error"
            found.append(Diagnostic("source", severity, f"at the end of the source: {at_end.group('text').strip()}",
                                    last_line))
            continue
        match = _DIAGNOSTIC.match(raw.strip())
        if not match:
            continue
        severity = "warning" if match.group("severity") == "warning" else "error"
        file, line = match.group("file").strip(), int(match.group("line"))
        if file.endswith(source_name):
            found.append(Diagnostic("source", severity, match.group("text").strip(), line))
        else:  # a header the source includes: named with its own line, which is none of the .cu's
            found.append(Diagnostic("source", severity, match.group("text").strip(), file=Path(file).name,
                                    file_line=line))
    if not found and log.strip() and "error" in log.lower():
        first = log.strip().splitlines()[0]
        found.append(Diagnostic("source", "error", first.removeprefix("error: ")))
    return found


def _line_of(source: str, pattern: str) -> int:
    """The line of ``source`` where ``pattern`` (a regular expression) first matches outside its
    comments and strings; 0 for none."""
    match = re.search(pattern, strip_comments(source))
    return source.count("\n", 0, match.start()) + 1 if match else 0


def check_draft(spec: Mapping[str, Any], source: str, *, arch: str = "sm_90", compile_default: bool = True,
                folder: Path | None = None, reference_at: Path | None = None) -> DraftReport:
    """Build the template, count its space, compile its default config (see the module docstring).
    ``folder``: where the draft's source lies (the template opened from there), whose headers the
    source may include; None for a draft of no folder yet. ``reference_at``: the file a Python
    reference is read from (one chosen and not yet copied into the folder); None: the folder's."""
    name = str(spec.get("name") or "kernel")
    try:
        template = template_from_spec(spec, source, source_path=str(folder / f"{name}.cu") if folder else "")
    except SpecError as exc:
        problem = Diagnostic("spec", "error", exc.message, field=exc.field)
        if exc.field.startswith("restrictions") and spec.get("restrictions"):
            # A restriction being typed should not hide the source's own errors: check the rest without
            # it (the refused one alone where the spec names it: without all of them, the check then
            # advised a restriction the person already had, for configs the others keep out).
            refused = re.fullmatch(r"restrictions\[(\d+)\]", exc.field)
            rules = list(spec["restrictions"]) if isinstance(spec["restrictions"], list) else []
            kept = [r for i, r in enumerate(rules) if refused is not None and i != int(refused.group(1))]
            rest = check_draft({**spec, "restrictions": kept}, source, arch=arch, compile_default=compile_default,
                               folder=folder)
            without = "the refused one" if refused is not None and kept else "the restrictions"
            return DraftReport((problem, *rest.diagnostics), rest.space_size, None, rest.default_config, rest.compiled,
                               rest.resources, rest.compile_s, note="a restriction is refused (its problem is listed); "
                               f"the source was checked without {without}")
        return DraftReport((problem,), note="the spec does not hold yet")
    except WorkbenchError as exc:
        return DraftReport((Diagnostic("spec", "error", str(exc)),), note="the spec does not hold yet")
    try:
        space = template.space()
        size = space.cartesian_size
        valid = space.count()
    except WorkbenchError as exc:
        return DraftReport((Diagnostic("spec", "error", str(exc), field="slots"),), note="the space cannot be built")
    if valid == 0:
        return DraftReport((Diagnostic("spec", "error", "no config satisfies every restriction", field="restrictions"),),
                           size, 0, note="nothing to compile")
    try:
        default = space.config(template.default) if template.default else space.default_config()
    except WorkbenchError as exc:
        return DraftReport((Diagnostic("spec", "error", f"the default config: {exc}", field="slots"),), size, valid,
                           note="the defaults are not a valid config")
    if default is None:
        default = next(iter(space))
    diagnostics: list[Diagnostic] = []
    reference = _reference_problem(template, folder, reference_at)
    if reference is not None:
        diagnostics.append(reference)
    if not template.default:
        diagnostics.append(Diagnostic("spec", "warning", f"no defaults set: the first valid config {default.to_dict()} is used",
                                      field="slots"))
    unlaunchable = _launch_warning(template, space, valid)
    if unlaunchable is not None:
        diagnostics.append(unlaunchable)
    diagnostics.extend(Diagnostic("spec", severity, message, field="args")
                       for severity, message in template.signature_problems())
    diagnostics.extend(_integer_parameters_of_float_scalars(spec, template))
    diagnostics.extend(Diagnostic("spec", "warning", restriction_note(text, assignment, why), field="restrictions")
                       for text, assignment, why in space.uncomputable())
    diagnostics.extend(_misspelt_condition_macros(template))
    if not compile_default:
        return DraftReport(tuple(diagnostics), size, valid, default.to_dict(), note="not compiled")
    try:
        rendered = template.render(default)
        from workbench.core.model.compiler import compile_cuda  # NVRTC loads lazily

        result = compile_cuda(rendered, arch=arch, options=template.nvrtc_options, name=f"{name}.cu", entry=template.entry)
    except WorkbenchError as exc:
        return DraftReport((*diagnostics, Diagnostic("source", "warning", f"not compiled: {exc}")), size, valid,
                           default.to_dict(), note="NVRTC unavailable")
    entry_line = _line_of(template.source, rf"\b{re.escape(template.entry)}\s*\(")
    for found in parse_compiler_log(result.log, f"{name}.cu", last_line=len(template.source.rstrip().splitlines())):
        if not found.line and not found.file and f"entry {template.entry!r}" in found.message:
            # (the entry the spec names is no kernel of the module: where the source defines it)
            found = dataclasses.replace(found, line=entry_line)
        diagnostics.append(found)
    diagnostics = [dataclasses.replace(d, message=d.message + hint) if (hint := undeclared_macro_hint(d.message, template)
                                                                         or float_size_hint(d, template))
                   else d for d in diagnostics]
    diagnostics = list(dict.fromkeys(diagnostics))  # (one line's error, said once for each of its uses, once)
    if not result.ok and not any(d.severity == "error" for d in diagnostics):
        diagnostics.append(Diagnostic("source", "error", (result.error or "compilation failed").removeprefix("error: ")))
    resources = {}
    if result.ok:
        resources = {"registers": result.registers, "smem_bytes": result.smem_bytes,
                     "spill_bytes": result.spill_bytes, "stack_bytes": result.stack_bytes}
        bounded = _launch_bounds_warning(template, space, result, arch, name)
        if bounded is not None:
            diagnostics.append(bounded)
    return DraftReport(tuple(diagnostics), size, valid, default.to_dict(), result.ok, resources, result.compile_s,
                       note=f"default config compiled for {arch}" if result.ok else "the default config does not compile")


_UNDEFINED = re.compile(r'identifier "([A-Za-z_][A-Za-z0-9_]*)" is undefined')
#: Upper-case names of the C and CUDA headers (FLT_MAX, INT_MAX, M_PI, CUDART_INF_F, WARP_SIZE ...):
#: undefined for a missing #include, not for a missing slot.
_LIBRARY_NAME = re.compile(r"^(?:(?:FLT|DBL|LDBL|U?INT\d*|U?LL?ONG|U?SHRT|[SU]?CHAR|SIZE|PTRDIFF|HUGE)_|M_|CUDART_|CUDA_|CUB_|__)"
                           r"|^(?:WARP_SIZE|NAN|INFINITY|EOF|NULL)$")


def _integer_parameters_of_float_scalars(spec: Mapping[str, Any], template: KernelTemplate) -> list[Diagnostic]:
    """A warning for each float scalar argument whose value is a problem parameter declared with a
    whole default (``2``): that makes the parameter an integer, a size of at least 1 where it has no
    ``min``, so ``--set alpha=0.5`` was refused as "must be an integer" and ``alpha=-1`` as out of
    range, for a kernel that takes any float; the draft checked clean."""
    out = []
    args = spec.get("args")
    for arg in args if isinstance(args, list) else []:
        if not isinstance(arg, Mapping) or arg.get("kind") != "scalar" or not str(arg.get("dtype", "")).startswith("float"):
            continue
        name = str(arg.get("value") or arg.get("name") or "")
        default = template.problem.get(name)
        if type(default) is int:
            out.append(Diagnostic("spec", "warning", f"argument {arg.get('name')!r} is a {arg.get('dtype')} scalar, but "
                                  f"the problem parameter {name!r} it takes has the whole default {default}, which "
                                  f"makes it an integer (a size of at least 1 without a min): write {default}.0 for "
                                  "a float", field=f"problem.{name}.default"))
    return out


_PROBLEM_MACRO = re.compile(r"\bPROBLEM_([A-Z0-9_]+)\b")


def float_size_hint(diagnostic: Diagnostic, template: KernelTemplate) -> str:
    """What to do about a compiler's "must have integral ... type" on a source line that uses the
    macro of a problem parameter whose default is a whole float (``4096.0``): it is defined as a
    float, where the source uses it as a size; else "". The compiler's line named neither."""
    if "integral" not in diagnostic.message or not diagnostic.line:
        return ""
    lines = template.source.splitlines()
    text = lines[diagnostic.line - 1] if diagnostic.line <= len(lines) else ""
    for macro in _PROBLEM_MACRO.findall(text):
        name = macro.lower()
        value = template.problem.get(name)
        if isinstance(value, float) and value.is_integer():
            return (f" (PROBLEM_{macro} is {value!r}, a float: write the problem parameter {name!r} as "
                    f"{int(value)} for a whole size)")
    return ""


def undeclared_macro_hint(message: str, template: KernelTemplate) -> str:
    """What to do about a compiler's ``identifier "NAME" is undefined`` for an upper-case name that
    reads as a slot's or a problem parameter's macro the spec does not declare (``UNROLL``,
    ``PROBLEM_M``), else "". Why: the compiler's line names the identifier, not that the spec
    lacks its slot, and each sampled config repeated it."""
    found = _UNDEFINED.search(message)
    if not found:
        return ""
    macro = found.group(1)
    if macro != macro.upper():
        return _lower_case_hint(macro, template)
    slots = [slot.name.upper() for slot in template.slots]
    if macro in slots or macro in template.constants or macro.lower() in template.constants:
        return ""
    if macro.startswith("PROBLEM_"):
        name = macro[len("PROBLEM_"):].lower()
        if name in template.problem:
            return ""
        # (a short name's typo is a large part of it: PROBLEM_NN for n is 0.67 alike)
        close = difflib.get_close_matches(name, list(template.problem), n=2, cutoff=0.8 if len(name) > 3 else 0.6)
        if len(close) == 2 and _likeness(name, close[0]) == _likeness(name, close[1]):
            close = []  # (PROBLEM_MN is as near m as n: no one of them to name)
        if close:  # a typo of a declared one: the likelier cause
            return f" (did you mean PROBLEM_{close[0].upper()}, the macro of the problem parameter {close[0]!r}?)"
        return f" (the macro of a problem parameter {name!r}, which the spec does not declare: add it to the problem)"
    close = difflib.get_close_matches(macro, slots, n=1, cutoff=0.8)
    if close:
        return f" (did you mean {close[0]}, the macro of the slot {close[0].lower()!r}?)"
    if _LIBRARY_NAME.match(macro):  # a constant of a header the source does not include
        return ""
    return (f" (if it is a value to tune, no slot {macro.lower()!r} is declared to define it: add the slot, "
            "e.g. with Detect slots from source)")


def _lower_case_hint(name: str, template: KernelTemplate) -> str:
    """The hint for an undefined identifier that is a slot's or a problem parameter's own name, as
    Kernel Tuner defines its parameters (``#define block_size_x 128``), where this workbench
    defines its macro in capitals; "" for any other name not in capitals (a variable's typo)."""
    if name in (slot.name for slot in template.slots):
        return (f" (the slot {name!r} is defined as {name.upper()}, in capitals: write {name.upper()} in the source; "
                "Kernel Tuner defines a parameter under its own name)")
    if name in template.problem:
        return f" (the problem parameter {name!r} is defined as PROBLEM_{name.upper()}: write that in the source)"
    return ""


def _likeness(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


_CONDITION = re.compile(r"^\s*#\s*(if|elif)\b(.*)$")
_DEFINED_TEST = re.compile(r"\bdefined\s*(\(\s*\w+\s*\)|\w+)")
_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)", re.M)
_SLOT_LIKE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_INCLUDE = re.compile(r"^\s*(?:#|%:)\s*include", re.M)
_TESTED = re.compile(r"^\s*#\s*ifn?def\s+(\w+)", re.M)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(number of its first line, text) of each line the preprocessor reads: a line ending in a
    backslash goes on in the next (``#if A && \\`` then ``B > 1`` is one condition)."""
    start, parts = 1, list[str]()
    for number, line in enumerate(text.split("\n"), 1):
        if not parts:
            start = number
        if line.rstrip().endswith("\\"):  # (a space or a carriage return after it, as compilers allow)
            parts.append(line.rstrip()[:-1])
            continue
        parts.append(line)
        yield start, " ".join(parts)
        parts = []
    if parts:
        yield start, " ".join(parts)


def _misspelt_condition_macros(template: KernelTemplate) -> list[Diagnostic]:
    """Warnings for a name in an ``#if`` / ``#elif`` that nothing defines and that is spelt nearly
    like a slot's or a problem parameter's macro (``#if ITMES > 1`` for ``ITEMS``): the
    preprocessor reads an undefined name as 0 without a word, so the branch was decided by the typo
    for every config. Only near misses are said: a name a header defines is none of the check's
    business."""
    macros: dict[str, str] = {}
    for slot in template.slots:
        macros[slot.name.upper()] = f"slot {slot.name}"
        for value in slot.values:
            if isinstance(value, str):  # an identifier slot's values are macros too (STRATEGY_ATOMIC)
                macros[f"{slot.name.upper()}_{value.upper()}"] = f"a value of slot {slot.name}"
    for name in template.problem:
        macros[f"PROBLEM_{name.upper()}"] = f"problem parameter {name}"
    text = strip_comments(template.source)
    defined = set(_DEFINE.findall(text)) | set(defined_by_options(template.compile_options))
    # (and a function-like one, -D'SCALE(x)=x', whose name #if SCALE(2) reads)
    defined |= {head.split("(")[0] for head, body in macro_options(template.compile_options)
                if body is not None and "(" in head}
    found: list[Diagnostic] = []
    # (a header may define what the source reads: one it includes, or one the options include first)
    includes = _INCLUDE.search(text) is not None or bool(pre_included(template.compile_options))
    # (a name the source tests with defined / #ifdef / #ifndef is meant to be optional)
    guarded = {m.strip('( )') for m in _DEFINED_TEST.findall(text)} | set(_TESTED.findall(text))
    for number, line in _logical_lines(text):
        match = _CONDITION.match(line)
        if match is None:
            continue
        for name in dict.fromkeys(re.findall(r"\b[A-Za-z_]\w*\b", _DEFINED_TEST.sub(" ", match.group(2)))):
            if name in macros or name in defined or name.startswith("__") or name in KNOWN_MACROS:
                continue
            near = difflib.get_close_matches(name, list(macros), n=1, cutoff=0.75)
            if near:
                found.append(Diagnostic("source", "warning", f"{name} in #{match.group(1)} is defined nowhere and "
                                        f"reads as 0 for every config; did you mean {near[0]} ({macros[near[0]]})?",
                                        number))
            elif (_SLOT_LIKE.match(name) and not _LIBRARY_NAME.match(name) and not includes and name not in guarded
                  and not name.startswith("PROBLEM_")):
                # a macro the editor's own Detect slots calls a slot, declared nowhere (its row
                # removed, never added): every config compiles the branch of 0, unsaid
                found.append(Diagnostic("source", "warning", f"{name} in #{match.group(1)} is defined nowhere and "
                                        f"reads as 0 for every config: no slot {name.lower()!r} is declared to "
                                        "define it (add it, e.g. with Detect slots from source)", number))
        for slot in template.slots:
            values = [v for v in slot.values if isinstance(v, str)]
            macro = slot.name.upper()
            if not values or not re.search(rf"\b{macro}\b", match.group(2)):
                continue
            if any(re.search(rf"\b{macro}_{v.upper()}\b", match.group(2)) for v in values):
                continue
            order = ", ".join(f"{v} = {i}" for i, v in enumerate(slot.values))
            found.append(Diagnostic("source", "warning", f"#{match.group(1)} reads {macro} as a number, and the "
                                    f"values of slot {slot.name} are identifiers numbered in order ({order}): "
                                    f"compare it with {macro}_{values[0].upper()}, or give the slot the values 0, 1 "
                                    "or true, false", number))
    return found


#: How many valid configs the check computes the launch of: all of a smaller space, a fixed sample
#: of a larger one (each is two expressions evaluated, no compile).
LAUNCH_SAMPLE = 4096


def _launch_warning(template: KernelTemplate, space: Any, valid: int) -> Diagnostic | None:
    """A warning when configs the space allows have a launch no GPU takes (a block over CUDA's
    limits, a block or grid without threads, a grid that cannot be computed), at the template's
    own problem: every trial of them fails to launch, so a run spends its budget on them, and the
    editor's check, which compiles only the default config, said nothing of them."""
    problem = template.resolve_problem()
    sampled = valid > LAUNCH_SAMPLE
    configs = space.sample(np.random.default_rng(0), LAUNCH_SAMPLE) if sampled else list(space)
    failing = [(config, why) for config in configs if (why := launch_problem(template, problem, config))]
    if not failing:
        return None
    config, why = failing[0]
    counted = f"{len(failing)} of {len(configs)}{' sampled' if sampled else ''} valid configs"
    return Diagnostic("spec", "warning", f"{counted} cannot launch on any GPU, e.g. {config.to_dict()}: {why}; every "
                      "trial of them fails, and a restriction on their slots would leave them out", field="restrictions")


def launch_problem(template: KernelTemplate, problem: Mapping[str, Any], config: Any) -> str | None:
    """Why no GPU launches ``config`` at ``problem`` (CUDA's limits, the same on every device; a
    block or grid that cannot be computed), or None. The editor's check and ``check-kernels`` ask it."""
    try:
        block = [int(d) for d in template.block(problem, config)]
        grid = [int(d) for d in template.grid(problem, config)]
    except WorkbenchError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - a Python spec's own block or grid function failing
        return f"its launch cannot be computed: {type(exc).__name__}: {exc}"
    block += [1] * (3 - len(block))
    grid += [1] * (3 - len(grid))
    threads = math.prod(block)
    if min(block) <= 0 or threads > MAX_BLOCK_THREADS or any(d > limit for d, limit in zip(block, BLOCK_LIMITS)):
        return (f"a block of {block[0]}x{block[1]}x{block[2]} = {threads} threads (at least 1, at most "
                f"{MAX_BLOCK_THREADS}, z at most {BLOCK_LIMITS[2]})")
    if min(grid) <= 0 or any(d > limit for d, limit in zip(grid, GRID_LIMITS)):
        return (f"a grid of {grid[0]}x{grid[1]}x{grid[2]} blocks (each at least 1, at most "
                f"{GRID_LIMITS[0]}x{GRID_LIMITS[1]}x{GRID_LIMITS[2]})")
    try:
        smem = int(template.dynamic_smem(problem, config))
    except WorkbenchError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - a Python spec's own function failing
        return f"its dynamic shared memory cannot be computed: {type(exc).__name__}: {exc}"
    most = most_shared_per_block()
    if smem > most:
        return f"{smem:,} B of dynamic shared memory per block (no GPU gives a block more than {most:,} B)"
    return None


@functools.cache
def most_shared_per_block() -> int:
    """The most shared memory any GPU the workbench describes lets one block opt in to."""
    from workbench.core.model.gpus import list_gpus, load_gpu

    return max(load_gpu(name).shared_per_block_optin for name in list_gpus())


#: How many valid configs the check looks at for blocks over the kernel's ``__launch_bounds__``.
LAUNCH_BOUNDS_SAMPLE = 256


def _launch_bounds_warning(template: KernelTemplate, space: Any, compiled: Any, arch: str, name: str) -> Diagnostic | None:
    """A warning when configs the space allows launch more threads than the kernel's
    ``__launch_bounds__`` (every trial of them fails to launch), or None. The check compiles the
    default config only; its bound is read from the cubin. A bound written from a slot's macro
    (``__launch_bounds__(BLOCK_SIZE)``) follows the block and is left alone without compiling
    anything more; any other is confirmed on the largest block of a sample of valid configs,
    compiled too (a macro may stand for a slot's through another)."""
    from workbench.core.model.compiler import compile_cuda, max_threads

    bound = max_threads(compiled.cubin, template.entry)
    if not bound:
        return None
    macros = {slot.name.upper() for slot in template.slots}
    written = re.findall(r"__launch_bounds__\s*\(([^)]*)\)", template.source)
    if written and all(macros & set(re.findall(r"[A-Za-z_]\w*", text)) for text in written):
        return None  # (the check runs after every pause in typing: one compile, not two)
    problem = template.resolve_problem()
    configs = space.sample(np.random.default_rng(0), LAUNCH_BOUNDS_SAMPLE)
    largest, threads = None, 0
    for config in configs:
        try:
            count = math.prod(int(d) for d in template.block(problem, config))
        except Exception:  # noqa: BLE001 - a block that cannot be computed is a run's failure, said there
            continue
        if count > threads:
            largest, threads = config, count
    if largest is None or threads <= bound:
        return None
    other = compile_cuda(template.render(largest), arch=arch, options=template.nvrtc_options, name=f"{name}.cu",
                         entry=template.entry)
    their_bound = max_threads(other.cubin, template.entry) if other.ok else 0
    if not their_bound or threads <= their_bound:
        return None
    return Diagnostic("source", "warning",
                      f"configs such as {largest.to_dict()} launch blocks of {threads} threads, and the kernel's "
                      f"__launch_bounds__ allows {their_bound}: every trial of them fails to launch; restrict the "
                      f"slots, or write the bound from the block slot", _line_of(template.source, r"__launch_bounds__"))


#: The most the editor's check computes a reference over (float64 bytes of the small problem's
#: buffers): it runs in the window's process after every pause in typing, so a small problem that
#: is not small must not take seconds and gigabytes there.
MAX_CHECKED_BYTES = 64 << 20


def small_problem_values(template: KernelTemplate) -> int:
    """How many values the template's buffers hold at its small problem: what computing its
    reference there takes, in float64 (compared with :data:`MAX_CHECKED_BYTES` by the editor's
    check and by ``check-kernels``, which both compute it in their own process)."""
    return sum(math.prod(arg.shape(template.small_problem)) for arg in template.args if arg.shape is not None)


def _reference_problem(template: KernelTemplate, folder: Path | None, reference_at: Path | None) -> Diagnostic | None:
    """The reference expressions computed once on the small problem: whether they can be depends on
    the inputs' shapes (a zero slice step, shapes that do not broadcast), so only computing them
    tells, and the author learns it here rather than when a run starts. A reference in a Python
    file is not run here: its code runs only in a run's worker; that it is a file (``reference_at``,
    else in the draft's ``folder``; neither: a draft of no folder yet) is checked."""
    if template.reference is no_reference:
        return None
    if template.reference_runs_a_file:  # there at least, as a file (looked at, not run: Tune then ran into it)
        named = getattr(template.reference, "path", None)
        path = reference_at or (folder / named.name if folder is not None and isinstance(named, Path) else None)
        if path is not None and not path.is_file():
            return Diagnostic("spec", "error", f"{path}: no such file (choose the reference file again, or write "
                              "it there)", field="reference.file")
        return None
    size = small_problem_values(template)
    if size * 8 > MAX_CHECKED_BYTES:  # computed in float64, in the window's own process
        return Diagnostic("spec", "warning", f"the reference was not computed on the small problem: its buffers hold "
                          f"{size:,} values, more than the check computes (make the small problem smaller)",
                          field="reference")
    try:
        expected = template.reference(template.make_inputs(template.small_problem, np.random.default_rng(0)),
                                      template.small_problem)
    except SpecError as exc:
        return Diagnostic("spec", "error", exc.message, field=exc.field)
    except WorkbenchError as exc:
        return Diagnostic("spec", "error", f"the reference on the small problem: {exc}", field="reference")
    except MemoryError:
        return Diagnostic("spec", "warning", "the reference was not computed on the small problem: not enough memory",
                          field="reference")
    # values no kernel's output can match (x / 0): check-kernels fails the template and a run stops
    # before its first trial, so the editor does not call it clean and offer Tune
    unmatchable = non_finite_reference(expected, "the small problem")
    return Diagnostic("spec", "error", unmatchable, field="reference") if unmatchable is not None else None


__all__ = ["Diagnostic", "DraftReport", "check_draft", "parse_compiler_log"]
