"""Declarative template specs: a template described in JSON, so opening one never runs code.

A Python spec (``kernels/<name>.py``) is a program; someone else's template folder should not be.
A declarative template is ``<name>.cu`` plus ``<name>.kernel.json``, and everything the Python
spec computes with functions is written here as expressions in the safe language of
:mod:`workbench.core.domain.expr` (launch geometry, shapes, scalar values, costs, the work profile) or of
:mod:`workbench.core.domain.array_expr` (the NumPy reference). :func:`template_from_spec` turns the JSON
into the same :class:`~workbench.core.domain.templates.KernelTemplate` a Python spec builds, so every
backend runs it unchanged. The one exception is a reference written as a Python function in a
file the author chose: the loader only records it, and the file is imported the first time the
reference is computed, which the backends do in their worker process when a run starts.

Errors are :class:`SpecError` with the spec's line (found from the offending value's text), so an
editor can mark them; the format is documented in docs/own-kernel.md.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import itertools
import json
import keyword
import math
import os
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from workbench.core.domain.array_expr import compile_array_expression
from workbench.core.domain.assignments import flushed_to_zero
from workbench.core.domain.includes import macro_option_problem
from workbench.core.domain.macros import scan_macros, strip_comments
from workbench.core.errors import SpaceError, TemplateError, UnreadableFile, WorkbenchError
from workbench.core.fs import atomic_write, read_only, read_only_text, read_utf8, resolved, user_folder
from workbench.core.domain.pysyntax import file_module_spec
from workbench.core.domain.expr import Restriction, compile_restriction
from workbench.core.domain.bounded_json import loads_bounded
from workbench.core.domain.space import GROUPS, Config, Slot
from workbench.core.domain.templates import DECLARATIVE_SUFFIX, MAX_SPEC_BYTES, MAX_TEMPLATE_SLOT_VALUES, Arg, KernelTemplate, WorkProfile, no_reference

#: File name ending of a declarative spec (``saxpy.kernel.json`` beside ``saxpy.cu``).
SPEC_SUFFIX = DECLARATIVE_SUFFIX
SPEC_FORMAT = "kernel-workbench-template"
SPEC_VERSION = 1
#: the fields a declarative spec may hold (docs/own-kernel.md, "The spec format")
SPEC_FIELDS = ("format", "version", "name", "entry", "title", "description", "source", "slots", "restrictions",
               "problem", "grid", "block", "dynamic_smem", "args", "reference", "cost", "profile", "compile_options")
#: Sub-folder of the workbench's data folder where the editor saves templates by default.
USER_TEMPLATES = "templates"
#: Work-profile fields a spec may give as expressions of (problem, config).
PROFILE_FIELDS = ("bytes_read", "bytes_written", "flops", "access_bytes", "coalescing", "work_per_thread",
                  "transcendentals", "atomics", "atomic_targets", "smem_accesses", "bank_conflict_ways",
                  "syncs_per_block", "serial_fraction", "l2_reuse", "read_only_path", "static_smem_bytes")
#: Profile fields that are whole numbers of bytes (the rest are read as floats).
_PROFILE_BYTES = frozenset({"access_bytes", "static_smem_bytes"})
#: Headers of CUDA and C that read no slot's macro: a source including only these is all the code.
_SYSTEM_HEADERS = frozenset({"cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h", "math.h", "cmath", "stdint.h",
                             "cstdint", "float.h", "cfloat", "limits.h", "climits", "cuda/std/cstdint"})

#: Each profile field's range (low, high, as said); a field not listed is a count or amount, >= 0.
PROFILE_RANGES: dict[str, tuple[float, float, str]] = {
    "coalescing": (0.0, 1.0, "a share of each memory transaction used, above 0 and at most 1"),
    "serial_fraction": (0.0, 1.0, "a share from 0 to 1"),
    "l2_reuse": (0.0, 1.0, "a share from 0 to 1"),
    "read_only_path": (0.0, 1.0, "0 or 1 (false or true)"),
    "work_per_thread": (0.0, math.inf, "above 0 (a thread's share of the work; the model counts at least 1)"),
    "access_bytes": (0.0, math.inf, "above 0 bytes"),
    "bank_conflict_ways": (0.0, math.inf, "above 0 (1: no conflict)"),
}
#: Profile fields whose range excludes its low end: a share or a count of 0 means nothing there.
PROFILE_POSITIVE = frozenset({"coalescing", "work_per_thread", "access_bytes", "bank_conflict_ways"})
REFERENCE_KINDS = ("expression", "python", "none")
#: The fields of each object inside a spec: a misspelt one (``rtoll``, ``smal``) was dropped without
#: a word and its default taken (a tolerance of 1e-5, a small problem as large as the default).
SLOT_FIELDS = ("name", "values", "group", "default", "doc")
PROBLEM_FIELDS = ("default", "small", "doc", "min", "max")
ARG_FIELDS = ("name", "kind", "dtype", "shape", "value", "range", "reset", "rtol", "atol")
COST_FIELDS = ("bytes_moved", "flops")
REFERENCE_FIELDS = ("kind", "file", "function", "outputs")

#: An output's tolerance when its argument gives none (``args[i].rtol`` / ``.atol``).
DEFAULT_RTOL, DEFAULT_ATOL = 1e-5, 1e-6
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Why a template name may not start with "_": template folders keep their private files
#: (a Python reference is ``_<name>_reference.py``) under such names, and lookups skip them.
HIDDEN_NAME = "must not start with '_' (names starting with '_' are a template folder's private files)"
#: What a Python reference file's name must be: the loader's rule, and the editor's before it copies.
REFERENCE_FILE_RULE = ("must be a .py file name in the template's folder starting with _ (every other .py file of "
                       "a template folder is read as a Python spec), e.g. _saxpy_reference.py")


def _name_problem(name: str) -> str | None:
    """Why ``name`` is no template name (the loader's rule, which the editor applies before it
    makes a folder of that name), or None."""
    if not _C_IDENTIFIER.match(name):
        return "must be a C identifier"
    return HIDDEN_NAME if name.startswith("_") else None


def _plain_reference_file(file: str) -> bool:
    """Whether ``file`` names a ``.py`` file in the template's own folder (no path, no NUL) whose
    name starts with ``_``: the folder's other ``.py`` files are read as Python specs, and a
    reference file named otherwise loaded here and then broke the listing of the folder."""
    return Path(file).name == file and file.endswith(".py") and file.startswith("_") and "\x00" not in file
_COL = re.compile(r"\(col (\d+): ")



#: What an argument is to the kernel: read, written, both, or a scalar passed by value.
ARG_KINDS = ("in", "out", "inout", "scratch", "scalar")
#: What a spec entry that leaves them out gets (the kernel editor fills an empty cell the same way).
DEFAULT_GROUP = "launch"
DEFAULT_ARG_KIND = "in"
DEFAULT_DTYPE = "float32"

#: C type names that NumPy reads as another width ("float" and "int" are 8 bytes to NumPy, 4 to C):
#: the width the kernel reads is said instead of guessed.
_C_TYPE_NAMES = {
    "float": "float32 (C float) or float64 (C double)",
    "int": "int32 (C int) or int64 (C long long)",
    "long": "int64 (C long long) or int32",
    "uint": "uint32 (C unsigned) or uint64",
}

class SpecError(TemplateError):
    """A declarative spec is wrong: ``field`` says where (``slots[1].values``), ``line`` the spec's line (1-based, 0 unknown)."""

    def __init__(self, message: str, field: str = "", line: int = 0, path: str = "") -> None:
        self.field = field
        self.line = line
        self.path = path
        where = f"{path}:{line}: " if path and line else (f"{path}: " if path else "")
        super().__init__(f"{where}{field + ': ' if field else ''}{message}")
        self.message = message


@dataclass(frozen=True)
class ExpressionProblem:
    """What is wrong with one expression, and which characters to mark (0-based start, length)."""

    message: str
    start: int
    length: int


#: A reduction call in a reference expression (see the check of one number filling an output).
_REDUCTION = re.compile(r"\b(?:sum|max|min|mean)\s*\(")

#: An unknown name's message with the known name closest to it (see :func:`slot_typo_hint`).
_UNKNOWN_NAME = re.compile(r"unknown name '(\w+)'; did you mean '(\w+)'\?")


def unreached_slot_names(slot_names: Sequence[str], source: str, elsewhere: str,
                         compile_options: Sequence[Any] = ()) -> list[str]:
    """The slots whose macro ``source`` never names and whose name ``elsewhere`` (the launch and
    profile expressions) never uses; none when the source includes a header of its own, which may
    read the macros (the source alone does not tell)."""
    code = strip_comments(source)
    if re.search(r'^\s*#\s*include\s*[<"]', code, re.M) and not all(
            name in _SYSTEM_HEADERS for name in re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', code, re.M)) \
            or any(str(o).startswith("-include") for o in compile_options):
        return []
    return [name for name in slot_names if not re.search(rf"\b{re.escape(name.upper())}(?:_\w+)?\b", code)
            and not re.search(rf"\b{re.escape(name)}\b", elsewhere)]


def slot_typo_hint(message: str, source: str, slot_names: Sequence[str], elsewhere: str = "") -> str:
    """``message`` about an unknown name, its hint turned around where the slot is what is misspelt:
    an expression naming ``items`` beside a slot ``itmes`` was told to write ``itmes``, though the
    source uses ITEMS and never ITMES (:meth:`_SpecReader.check_slot_spelling` says it at the slot).
    Only for a slot that reaches nothing, as that check judges it (:func:`unreached_slot_names`)."""
    match = _UNKNOWN_NAME.search(message)
    if match is None or match.group(2) not in slot_names:
        return message
    unknown, suggested = match.groups()
    named = set(re.findall(r"[A-Za-z_]\w*", strip_comments(source)))
    if unknown.upper() not in named or suggested not in unreached_slot_names([suggested], source, elsewhere):
        return message
    return message.replace(match.group(0), f"unknown name '{unknown}' (the source uses {unknown.upper()} and never "
                                           f"{suggested.upper()}: is the slot {suggested!r} misspelt?)")


def expression_problem(text: str, names: Sequence[str], *, array: bool = False) -> ExpressionProblem | None:
    """None when ``text`` compiles in the safe language over ``names``; else the message and the span to mark."""
    try:
        if array:
            compile_array_expression(text, names)
        else:
            compile_restriction(text, names)
    except WorkbenchError as exc:
        message = str(exc)
        match = _COL.search(message)
        stripped = len(text) - len(text.lstrip())
        if match:
            start = stripped + int(match.group(1)) - 1
            snippet = message[match.end():].rstrip(")")
            if snippet.startswith("end of text"):  # (the text ends too soon: its last character marked)
                return ExpressionProblem(message, max(start - 1, 0), 1)
            length = max(1, len(snippet.rstrip(".")) if not snippet.endswith("...") else len(snippet) - 3)
            return ExpressionProblem(message, min(start, max(len(text) - 1, 0)), length)
        return ExpressionProblem(message, 0, len(text))
    return None


# --- values -----------------------------------------------------------------------------------------


def parse_values(text: str) -> list[Any]:
    """A slot domain typed in a table cell: ``64, 128, 256``, ``1..8`` (step 1), ``1..16 step 3``,
    ``32..1024 *2`` (doubling), ``true, false`` or identifiers. Raises ValueError with the reason."""
    text = text.strip()
    if not text:
        raise ValueError("no values")
    # (ASCII digits only, here and in a list: Python's int() also reads "１" and "1_000")
    ranged = re.fullmatch(r"(-?[0-9]+)\s*\.\.\s*(-?[0-9]+)(?:\s*(?:step\s+(-?[0-9]+)|\*\s*(-?[0-9]+)))?", text)
    if ranged:
        lo, hi = int(ranged.group(1)), int(ranged.group(2))
        if hi < lo:
            raise ValueError(f"range {lo}..{hi} is empty")
        if ranged.group(4):
            factor = int(ranged.group(4))
            if factor < 2 or lo < 1:
                raise ValueError("a *k range needs k >= 2 and a start >= 1")
            values, v = [], lo
            while v <= hi:
                values.append(v)
                v *= factor
        else:
            step = int(ranged.group(3) or 1)
            if step < 1:
                raise ValueError("step must be at least 1")
            count = (hi - lo) // step + 1  # counted before it is made: 1..10**12 is refused, not built
            if count > MAX_TEMPLATE_SLOT_VALUES:
                raise ValueError(f"{count:,} values; a template slot may have at most {MAX_TEMPLATE_SLOT_VALUES:,}")
            values = list(range(lo, hi + 1, step))
        if len(values) > MAX_TEMPLATE_SLOT_VALUES:  # the editor's limit is the loader's
            raise ValueError(f"{len(values):,} values; a template slot may have at most {MAX_TEMPLATE_SLOT_VALUES:,}")
        return values
    values = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise ValueError("empty value between commas")
        values.append(_literal(part))
    return values


def _int_over_problem_and_config(e: Restriction) -> Callable[[Mapping[str, Any], Mapping[str, Any]], int]:
    return lambda p, c: int(e.evaluate({**p, **c}))


def _float_over_problem(e: Restriction) -> Callable[[Mapping[str, Any]], float]:
    return lambda p: float(e.evaluate(p))


def _value_over_problem(e: Restriction) -> Callable[[Mapping[str, Any]], Any]:
    return lambda p: e.evaluate(p)


#: Largest buffer an argument may describe, in bytes: sizes are counted as int64 (see ``_nbytes``).
MAX_BUFFER_BYTES = 2**63 - 1
#: Most bytes the buffers of the small problem may take together: the simulator makes them, runs
#: the reference and emulates every config on them in the tuner's own process (a spec whose small
#: problem asked for gigabytes filled the machine's memory three trials into a run).
MAX_SMALL_PROBLEM_BYTES = 256 * 2**20


def _shape_over_problem(dims: tuple[Restriction, ...]) -> Callable[[Mapping[str, Any]], tuple[int, ...]]:
    return lambda p: tuple(_whole_dimension(e, p) for e in dims)


def _whole_dimension(dimension: Restriction, problem: Mapping[str, Any]) -> int:
    """An array dimension's length at ``problem``: a whole number (n = 1000.5 was an array of 1,000
    elements, and every figure computed for 1000.5 of them)."""
    value = dimension.evaluate(problem)
    if isinstance(value, float) and not value.is_integer():
        raise WorkbenchError(f'shape "{dimension.text}" is {value:g} at this problem, not a whole number of elements')
    return int(value)


def split_expressions(text: str) -> list[str]:
    """``n, min(m, 4)`` -> ``["n", "min(m, 4)"]``: split at commas outside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(ch, 0)
        current.append(ch)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def format_values(values: Sequence[Any]) -> str:
    """The cell text for a domain (inverse of :func:`parse_values` for lists)."""
    return ", ".join("true" if v is True else "false" if v is False else str(v) for v in values)


#: A number as a slot value is written: ASCII digits, no digit-group underscores (what a C
#: compiler reads when the value becomes a macro; Python's int() and float() take "１" and "1_000").
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def _literal(part: str) -> Any:
    low = part.lower()
    if low in ("true", "false"):
        return low == "true"
    if _INTEGER.match(part):
        return int(part)
    if low.lstrip("+-") in ("inf", "infinity", "nan"):
        raise ValueError(f"{part!r} is not a finite number")
    if not _DECIMAL.match(part):
        if _C_IDENTIFIER.match(part):
            return part
        raise ValueError(f"{part!r} is not a number, true/false or an identifier")
    value = float(part)
    if not math.isfinite(value):
        raise ValueError(f"{part!r} is not a finite number")
    if flushed_to_zero(part, value):
        raise ValueError(f"{part!r} is too small to tell from 0")
    return value


# --- building the template --------------------------------------------------------------------------


#: Kernel Tuner's ways of saying a launch, which a spec says as expressions: named where one is
#: given, instead of the list of known fields or a guess from the spelling alone.
_KERNEL_TUNER_FIELDS = {
    **{f"grid_div_{axis}": (f"Kernel Tuner's grid_div_{axis} is a grid expression here, the problem's size divided "
                            f'rounding up: "grid": ["(n + block_size_x - 1) // block_size_x", "1", "1"]')
       for axis in "xyz"},
    "block_size_names": ('Kernel Tuner\'s block_size_names is a block expression here, the slots that set the '
                         'threads: "block": ["threads_x", "threads_y", "1"]'),
}


class _Builder:
    """Turns one spec mapping into a KernelTemplate, raising SpecError at the first problem."""

    def __init__(self, spec: Mapping[str, Any], source: str, spec_text: str, path: str, folder: Path | None) -> None:
        self.spec = spec
        self.source = source
        self.text = spec_text
        self.path = path
        self.folder = folder

    def fail(self, field: str, message: str, needle: Any = None) -> SpecError:
        return SpecError(message, field, _line_of(self.text, field, needle), self.path)

    def known(self, mapping: Mapping[str, Any], fields: Sequence[str], field: str, what: str) -> None:
        """Refuse a key of ``mapping`` (the object at ``field``) that is none of ``fields``, with the
        nearest name: a misspelt one would otherwise be dropped and its default taken unsaid."""
        for key in mapping:
            if key not in fields:
                close = difflib.get_close_matches(str(key), fields, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(fields)})"
                if str(key) in _KERNEL_TUNER_FIELDS and "grid" in fields:
                    hint = f"; {_KERNEL_TUNER_FIELDS[str(key)]}"
                raise self.fail(f"{field}.{key}" if field else str(key), f"is not a field of {what}{hint}", key)

    def get(self, mapping: Mapping[str, Any], key: str, kind: type | tuple[type, ...], field: str, default: Any = None) -> Any:
        value = mapping.get(key, default)
        if value is None and default is None:
            raise self.fail(field, "is missing")
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))):
            raise self.fail(field, f"must be {_kind_name(kind)}, got {type(value).__name__}", value)
        return value

    def build(self) -> KernelTemplate:
        spec = self.spec
        if not isinstance(spec, Mapping):
            raise self.fail("", "the spec must be a JSON object")
        if spec.get("format", SPEC_FORMAT) != SPEC_FORMAT:
            raise self.fail("format", f"must be {SPEC_FORMAT!r}", spec.get("format"))
        self.known(spec, SPEC_FIELDS, "", "a template spec")  # a misspelt restriction or cost, dropped unsaid
        version = spec.get("version", SPEC_VERSION)
        if version != SPEC_VERSION:
            raise self.fail("version", f"version {version!r} is not supported (this workbench reads {SPEC_VERSION})", version)
        name = self.get(spec, "name", str, "name")
        refused = _name_problem(name)
        if refused is not None:
            raise self.fail("name", refused, name)
        entry = self.get(spec, "entry", str, "entry", name)
        slots = self.slots()
        problem, small, docs, limits = self.problem()
        slot_names = [s.name for s in slots]
        both = slot_names + list(problem)
        clash = set(slot_names) & set(problem)
        if clash:
            raise self.fail("problem", f"{', '.join(sorted(clash))} is both a slot and a problem parameter", sorted(clash)[0])
        self.check_slot_spelling(slots, problem)
        restrictions = self.get(spec, "restrictions", list, "restrictions", [])
        defaults = {s.name: s.default for s in slots} if all(s.default is not None for s in slots) else None
        for i, text in enumerate(restrictions):
            if not isinstance(text, str):
                raise self.fail(f"restrictions[{i}]", "must be text", text)
            rule = self.expr(text, both, f"restrictions[{i}]")
            if defaults is None:
                continue
            try:  # the default config is the run's point of comparison: it must be a valid config
                # (evaluated, not called: a call counts a number too large as "false", and the
                # refusal then said the rule held for nothing instead of why it could not be computed)
                holds = bool(rule.evaluate({**problem, **defaults}))
            except (WorkbenchError, ArithmeticError, ValueError) as exc:
                raise self.fail(f"restrictions[{i}]", f"cannot be evaluated at the default config ({exc})", text) from None
            if not holds:
                if _holds_for_none(rule, slots, problem):  # said as such: "the default" sent the person to the defaults
                    raise self.fail(f"restrictions[{i}]", "holds for no combination of the slots' values: it leaves "
                                    "nothing to tune", text)
                shown = ", ".join(f"{k}={v}" for k, v in (defaults or {}).items())
                raise self.fail(f"restrictions[{i}]", f"excludes the default config ({shown})", text)
        args = self.args(problem, small)
        grid = self.dims("grid", both)
        block = self.dims("block", both)
        smem = self.expr(str(spec.get("dynamic_smem", "0")), both, "dynamic_smem")
        if defaults is not None:
            self.check_launch(grid, block, smem, {"default": {**problem, **defaults}, "small": {**small, **defaults}})
        arrays = [a for a in args if a.kind != "scalar"]
        cost = self.get(spec, "cost", dict, "cost", {})
        self.known(cost, COST_FIELDS, "cost", "the cost")
        moved_text = cost.get("bytes_moved")
        moved = self.expr(str(moved_text), list(problem), "cost.bytes_moved") if moved_text else None
        flops = self.expr(str(cost.get("flops", "0")), list(problem), "cost.flops")
        for key, e in (("bytes_moved", moved), ("flops", flops)):
            if e is not None:
                self.check_count(e, {"default": problem, "small": small}, f"cost.{key}", "a cost")
        profile = self.profile(arrays, both, problem, flops)
        if defaults is not None:
            self.check_profile({"default": {**problem, **defaults}, "small": {**small, **defaults}})
        reference = self.reference(args, problem)
        args, tolerance = self.tolerance(args)
        default = {s.name: s.default for s in slots if s.default is not None}
        compile_options = self.compile_options()
        try:
            template = KernelTemplate(
                name=name, title=str(spec.get("title") or name), description=str(spec.get("description") or ""),
                source=self.source, entry=entry, slots=tuple(slots), restrictions=tuple(restrictions),
                args=tuple(args),
                grid=_geometry(grid, "grid"), block=_geometry(block, "block"),
                dynamic_smem=_int_over_problem_and_config(smem),
                make_inputs=_inputs_maker(self.spec.get("args", []), args),
                reference=reference, profile=profile,
                bytes_moved=_bytes_moved(moved, arrays),
                flops=_float_over_problem(flops),
                problem=problem, small_problem=small, default=default, tolerance=tolerance,
                compile_options=compile_options,
                problem_doc=docs, problem_limits=limits, path=self.path,
            )
        except TemplateError as exc:
            message = str(exc).split(": ", 1)[-1]
            raise self.fail(_field_of(message, self.spec), message, _needle_of(message)) from None
        self.check_slots_used(slots)  # after the template's own checks of each slot's macro
        return template

    def slots(self) -> list[Slot]:
        raw = self.get(self.spec, "slots", list, "slots", [])
        slots: list[Slot] = []
        for i, entry in enumerate(raw):
            field = f"slots[{i}]"
            if not isinstance(entry, Mapping):
                raise self.fail(field, "must be an object with name and values", entry)
            self.known(entry, SLOT_FIELDS, field, "a slot")
            name = self.get(entry, "name", str, f"{field}.name")
            if name in (s.name for s in slots):  # said at its line, not by the space without one
                raise self.fail(f"{field}.name", f"slot {name!r} is declared twice", name)
            values = self.get(entry, "values", list, f"slots[{i}].values")
            if len(values) > MAX_TEMPLATE_SLOT_VALUES:  # refused before a million values are checked one by one
                raise self.fail(f"{field}.values", f"has {len(values):,} values; a template slot may have at most "
                                f"{MAX_TEMPLATE_SLOT_VALUES:,} (a problem size belongs in the problem, not in a slot)",
                                name)
            numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            whole = [v for v in numbers if isinstance(v, float) and v.is_integer()]
            if whole and any(isinstance(v, int) for v in numbers) and len(whole) == sum(isinstance(v, float) for v in numbers):
                # [1, 2.0, 4] made every value a float (#define ITEMS 4.0, a loop bound that no longer compiles)
                raise self.fail(f"{field}.values", f"slot {name!r} mixes integers and whole floats ({whole[0]!r}): "
                                f"write {int(whole[0])} for an integer slot, or every value as a float", name)
            group = str(entry.get("group") or DEFAULT_GROUP)
            if group not in GROUPS:
                raise self.fail(f"{field}.group", f"must be one of {', '.join(GROUPS)}", group)
            default = entry.get("default")
            try:
                slot = Slot(name, tuple(values), group, str(entry.get("doc") or ""), None)
                if default is not None:
                    try:  # as the domain spells it: 2 is the value 2.0 of a slot [0.5, 1.5, 2]
                        default = slot.normalise(default)
                    except SpaceError:
                        raise self.fail(f"{field}.default", f"{default!r} is not one of the slot's values", name) from None
                    slot = Slot(name, slot.values, group, slot.doc, default)
            except WorkbenchError as exc:
                if isinstance(exc, SpecError):
                    raise
                raise self.fail(field, str(exc), name) from None
            slots.append(slot)
        given = [slot.default is not None for slot in slots]
        if any(given) and not all(given):  # a default config names every slot, or none does
            i = given.index(False)
            raise self.fail(f"slots[{i}].default", f"slot {slots[i].name!r} has no default while "
                            f"{sum(given)} other slot{'s' if sum(given) > 1 else ''} have one; give every slot a "
                            "default, or none (the first valid config is then the reference)", slots[i].name)
        return slots

    def check_slot_spelling(self, slots: Sequence[Slot], problem: Mapping[str, Any]) -> None:
        """A slot that reaches nothing (:meth:`unreached_slots`), while the source uses a macro close
        to its own that nothing defines, is a misspelt slot name, said at that name: the
        restrictions, the launch and the profile spell it right and were blamed first, each with a
        hint to copy the typo (``restrictions[0]: unknown name 'block_size_y'; did you mean
        'block_szie_y'?``). Checked before them, and only where :meth:`check_slots_used` would
        refuse the slot later anyway."""
        unreached = self.unreached_slots(slots)
        if not unreached:
            return
        defined = {slot.name.upper() for slot in slots} | {f"PROBLEM_{name.upper()}" for name in problem}
        lines = {found.macro: found.line for found in scan_macros(self.source).slots}
        undefined = sorted(set(lines) - defined)
        for i, slot in unreached:
            macro = slot.name.upper()
            close = difflib.get_close_matches(macro, undefined, n=1, cutoff=0.8)
            if close:
                # either may be the typo: the slot's name, or the source's macro (which a person
                # told only "did you mean" the typo renamed the right slot to)
                raise self.fail(f"slots[{i}].name", f"slot {slot.name!r}: the source never uses {macro}, and uses "
                                f"{close[0]} (first on line {lines[close[0]]}), which no slot defines: name the "
                                f"slot {close[0].lower()!r}, or write {macro} where the source writes {close[0]}",
                                slot.name)

    def problem(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, str], dict[str, tuple[float, float]]]:
        raw = self.get(self.spec, "problem", dict, "problem", {})
        problem, small, docs, limits = {}, {}, {}, {}
        for name, entry in raw.items():
            field = f"problem.{name}"
            if keyword.iskeyword(name):  # every expression names it: 'lambda' failed there as "invalid syntax"
                raise self.fail(field, f"{name!r} is a word the expressions reserve (as Python does); rename the "
                                f"parameter, e.g. {name}_", name)
            if not isinstance(entry, Mapping):
                entry = {"default": entry}
            self.known(entry, PROBLEM_FIELDS, field, "a problem parameter")
            default = entry.get("default")
            if isinstance(default, str) or not isinstance(default, (int, float, bool)):
                raise self.fail(field, "default must be a number or true/false", name)
            problem[name] = default
            small_value = entry.get("small", default)
            if type(small_value) is not type(default):  # int vs float vs bool matters here
                kinds = f"the default {default!r} is {type(default).__name__}, small {small_value!r} is {type(small_value).__name__}"
                whole = isinstance(default, float) and default.is_integer() and type(small_value) is int
                fix = f"; write the default as {int(default)} for a whole size" if whole else ""
                raise self.fail(f"{field}.small", f"must have the type of the default ({kinds}){fix}", name)
            small[name] = small_value
            if entry.get("doc"):
                docs[name] = str(entry["doc"])
            if "min" in entry or "max" in entry:
                limits[name] = self.limits(entry, field, name, default, small_value)
            elif type(default) is int and min(default, small_value) < 1:
                # without a min an integer parameter is taken as a size, at least 1 (a run refuses
                # n=0): said here, or the template loaded and could never run at its own default
                low = min(default, small_value)
                raise self.fail(field, f"an integer parameter without \"min\" is a size, at least 1, and its "
                                       f"{'default' if default == low else 'small value'} is {low}; give its range "
                                       f"(\"min\": {low})", name)
        return problem, small, docs, limits

    def limits(self, entry: Mapping[str, Any], field: str, name: str, default: Any, small: Any) -> tuple[float, float]:
        """A parameter's ``[min, max]``: numbers, in order, holding the default and the small value
        (found wrong here, where the spec can be named, rather than when a run resolves its problem)."""
        bounds = []
        for key, fallback in (("min", -math.inf), ("max", math.inf)):
            value = entry.get(key, fallback)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
                raise self.fail(f"{field}.{key}", f"must be a number, got {value!r}", name)
            bounds.append(float(value))
        lo, hi = bounds
        if lo > hi:
            raise self.fail(f"{field}.max", f"max {entry.get('max')} is below min {entry.get('min')}", name)
        for key, value in (("default", default), ("small", small)):
            if not isinstance(value, bool) and not lo <= value <= hi:
                raise self.fail(f"{field}.{key}", f"{value} is outside min..max [{entry.get('min', '-inf')}, "
                                                  f"{entry.get('max', 'inf')}]", name)
        return lo, hi

    def check_count(self, e: Restriction, problems: Mapping[str, Mapping[str, Any]], field: str, what: str) -> None:
        """``e`` (a shape dimension or a cost) at each of ``problems`` must be a finite number >= 0:
        a spec whose default problem gives -n elements or 0/0 flops is wrong when it loads, not later
        in a worker as a traceback."""
        for label, p in problems.items():
            try:
                value = e.evaluate(p)
            except (WorkbenchError, ArithmeticError, ValueError) as exc:
                raise self.fail(field, f"{e.text!r} cannot be computed at the {label} problem ({exc})", e.text) from None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise self.fail(field, f"{e.text!r} is {value!r} at the {label} problem; {what} must be a "
                                       "finite number >= 0", e.text)

    def check_launch(self, grid: list[Restriction], block: list[Restriction], smem: Restriction,
                     configs: Mapping[str, Mapping[str, Any]]) -> None:
        """At the default config (with the default and the small problem) the launch must be one
        CUDA accepts on every GPU: each grid and block dimension a whole number of at least 1
        within CUDA's limits, at most 1,024 threads a block, and a dynamic shared memory size that is
        a byte count. A spec whose block is 0 loaded, passed check-kernels, and failed every trial."""
        for label, env in configs.items():
            at = f"at the default config with the {label} problem"
            for key, exprs, limits in (("grid", grid, GRID_LIMITS), ("block", block, BLOCK_LIMITS)):
                for axis, e, limit in zip("xyz", exprs, limits):
                    value = self._launch_value(e, env, key, at)
                    if not 1 <= value <= limit:
                        raise self.fail(key, f"{axis} = {e.text!r} is {_count(value)} {at}; a {key} dimension must be "
                                             f"a whole number from 1 to {limit:,}", e.text)
            threads = math.prod(self._launch_value(e, env, "block", at) for e in block)
            if threads > MAX_BLOCK_THREADS:
                raise self.fail("block", f"{_count(threads)} threads a block {at}; CUDA allows at most "
                                         f"{MAX_BLOCK_THREADS:,}", block[0].text)
            value = self._launch_value(smem, env, "dynamic_smem", at)
            if not 0 <= value <= MAX_DYNAMIC_SMEM:
                raise self.fail("dynamic_smem", f"{smem.text!r} is {_count(value)} bytes {at}; it must be from 0 to "
                                                f"{MAX_DYNAMIC_SMEM:,}", smem.text)

    def _launch_value(self, e: Restriction, env: Mapping[str, Any], key: str, at: str) -> float:
        """``e`` at ``env``: a whole number (a float only when it is one), else a SpecError."""
        try:
            value = e.evaluate(env)
        except (WorkbenchError, ArithmeticError, ValueError) as exc:
            raise self.fail(key, f"{e.text!r} cannot be computed {at} ({exc})", e.text) from None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value != int(value):
            raise self.fail(key, f"{e.text!r} is {value!r} {at}; it must be a whole number", e.text)
        return value

    def compile_options(self) -> tuple[str, ...]:
        """The spec's compile options: each must be text (a number there was turned into one)."""
        raw = self.get(self.spec, "compile_options", list, "compile_options", [])
        for i, option in enumerate(raw):
            if not isinstance(option, str) or not option.strip():
                raise self.fail(f"compile_options[{i}]", "must be an option as text, such as \"-use_fast_math\"",
                                str(option))
            if not option.isprintable():  # a line break would also end the comment an export quotes it in
                raise self.fail(f"compile_options[{i}]", "must be one option on one line, without control "
                                "characters", option)
        problem = macro_option_problem(raw)
        if problem is not None:
            raise self.fail("compile_options", problem, " ".join(raw))
        return tuple(raw)

    def check_size(self, dims: list[Restriction], dtype: str, problems: Mapping[str, Mapping[str, Any]],
                   field: str) -> None:
        """The buffer the dimensions describe must have a size in bytes that fits 64 bits (sizes are
        counted as int64): ``[1e308]`` is finite, but no allocation, simulation or export can use it."""
        itemsize = np.dtype(dtype).itemsize
        for label, p in problems.items():
            size = itemsize
            for e in dims:
                size *= int(e.evaluate(p))
            if size > MAX_BUFFER_BYTES:
                raise self.fail(field, f"{size / itemsize:.3g} elements of {dtype} at the {label} problem; a buffer "
                                       "must fit in 2**63-1 bytes", ", ".join(e.text for e in dims))

    def args(self, problem: Mapping[str, Any], small: Mapping[str, Any]) -> list[Arg]:
        raw = self.get(self.spec, "args", list, "args", [])
        if not raw:
            raise self.fail("args", "the kernel needs at least one argument")
        args: list[Arg] = []
        params = list(problem)
        small_bytes = 0
        for i, entry in enumerate(raw):
            field = f"args[{i}]"
            if not isinstance(entry, Mapping):
                raise self.fail(field, "must be an object with name, kind, dtype", entry)
            self.known(entry, ARG_FIELDS, field, "an argument")
            name = self.get(entry, "name", str, f"{field}.name")
            if not _C_IDENTIFIER.match(name):  # the name the shapes, values and reference use for it
                raise self.fail(f"{field}.name", f"{name!r} must be a C identifier", name)
            if keyword.iskeyword(name):  # valid C, but the reference's and the shapes' expressions could not name it
                raise self.fail(f"{field}.name", f"{name!r} is a word the expressions reserve (as Python does); "
                                f"rename the argument, e.g. {name}_", name)
            if name in (a.name for a in args):  # said here, not as a reference output that is no output
                raise self.fail(f"{field}.name", f"argument {name!r} is named twice", name)
            kind = entry.get("kind") or DEFAULT_ARG_KIND
            if kind not in ARG_KINDS:
                raise self.fail(f"{field}.kind", f"{kind!r} is not one of {', '.join(ARG_KINDS)}", kind)
            dtype = self.dtype(entry, f"{field}.dtype")
            if kind == "scalar":
                value = self.expr(str(entry.get("value", name)), params, f"{field}.value")
                for label, p in (("default", problem), ("small", small)):
                    try:
                        value.evaluate(p)
                    except (WorkbenchError, ArithmeticError, ValueError) as exc:
                        raise self.fail(f"{field}.value", f"{value.text!r} cannot be computed at the {label} "
                                                          f"problem ({exc})", value.text) from None
                args.append(Arg(name, kind, dtype, value=_value_over_problem(value)))
                continue
            span = entry.get("range")
            if span is not None and not (
                    isinstance(span, list) and len(span) == 2
                    and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in span)
                    and span[0] <= span[1]):
                raise self.fail(f"{field}.range", "must be [low, high]: two finite numbers, low <= high", span)
            shape = entry.get("shape")
            if isinstance(shape, str):
                shape = [shape]
            if not isinstance(shape, list) or not shape:
                raise self.fail(f"{field}.shape", "must be a list of expressions, e.g. [\"n\"]", name)
            for text in shape:  # "rows, cols" as one string read as a tuple: "tuples are only allowed after 'in'"
                parts = split_expressions(str(text))
                if len(parts) > 1:
                    raise self.fail(f"{field}.shape", "one expression per dimension: write "
                                    f"{json.dumps(parts)}, not {json.dumps([str(text)])}", str(text))
            dims = [self.expr(str(s), params, f"{field}.shape") for s in shape]
            for e in dims:
                self.check_count(e, {"default": problem, "small": small}, f"{field}.shape", "a dimension")
                for label, p in (("default", problem), ("small", small)):  # (1000.5 was 1,000 elements, unsaid)
                    length = e.evaluate(p)
                    if isinstance(length, float) and not length.is_integer():
                        raise self.fail(f"{field}.shape", f"{e.text!r} is {length:g} at the {label} problem; a "
                                                          "dimension is a whole number of elements", e.text)
            self.check_size(dims, dtype, {"default": problem, "small": small}, f"{field}.shape")
            args.append(Arg(name, kind, dtype, shape=_shape_over_problem(tuple(dims)),
                            reset=str(entry.get("reset") or ("poison" if kind != "inout" else "input"))))
            small_bytes += _nbytes(args[-1], small)
        # (a spec that makes no problem parameter smaller runs its default problem there too; a
        # GPU run never builds it, so such a spec loads and the simulator refuses it when it starts)
        given_small = any(isinstance(e, Mapping) and "small" in e and e["small"] != e.get("default")
                          for e in self.get(self.spec, "problem", dict, "problem", {}).values())
        if given_small and small_bytes > MAX_SMALL_PROBLEM_BYTES:
            raise self.fail("problem", f"the small problem's buffers take {small_bytes / 2**20:,.0f} MiB; the simulator "
                                       "makes them, runs the reference on them and emulates every config on them, in "
                                       f"this process: at most {MAX_SMALL_PROBLEM_BYTES // 2**20} MiB (lower the "
                                       "parameters' \"small\" values)", "small")
        return args

    def dtype(self, entry: Mapping[str, Any], field: str) -> str:
        """An argument's dtype: a NumPy integer or float type of at most 8 bytes (the inputs are made,
        and results compared, in it; a CUDA kernel has no wider one, and CuPy allocates none)."""
        dtype = entry.get("dtype") or DEFAULT_DTYPE
        if isinstance(dtype, str) and dtype in _C_TYPE_NAMES:  # NumPy reads "float" as 8 bytes, C as 4
            raise self.fail(field, f"{dtype!r} is a C type name that NumPy reads otherwise; write "
                                   f"{_C_TYPE_NAMES[dtype]}", dtype)
        try:
            usable = isinstance(dtype, str) and np.dtype(dtype).kind in "iuf" and np.dtype(dtype).itemsize <= 8
        except (TypeError, ValueError):
            usable = False
        if not usable:
            raise self.fail(field, f"{dtype!r} is not a NumPy number type (float32, float64, int32, uint32, ...)", dtype)
        return str(dtype)

    def dims(self, key: str, names: Sequence[str]) -> list[Restriction]:
        raw = self.spec.get(key)
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list) or not 1 <= len(raw) <= 3:
            raise self.fail(key, "must be a list of one to three expressions (x, y, z)", key)
        exprs = [self.expr(str(text), names, key) for text in raw]
        return exprs + [compile_restriction("1", ())] * (3 - len(exprs))

    def expr(self, text: str, names: Sequence[str], field: str) -> Restriction:
        try:
            return compile_restriction(text, names)
        except WorkbenchError as exc:
            message = str(exc)
            if not field.startswith("restrictions"):  # a shape, a launch dimension, a profile term
                message = message.replace("restriction", "expression")
            raise self.fail(field, message, text) from None

    def profile(self, arrays: list[Arg], names: Sequence[str], problem: Mapping[str, Any],
                flops: Restriction) -> Callable[[Mapping[str, Any], Config], WorkProfile]:
        raw = self.get(self.spec, "profile", dict, "profile", {})
        unknown = set(raw) - set(PROFILE_FIELDS)
        if unknown:
            raise self.fail("profile", f"unknown field {sorted(unknown)[0]!r} (known: {', '.join(PROFILE_FIELDS)})", sorted(unknown)[0])
        exprs = {key: self.expr(str(text), names, f"profile.{key}") for key, text in raw.items()}
        self.profile_exprs = exprs
        reads = [a for a in arrays if a.kind in ("in", "inout")]
        writes = [a for a in arrays if a.kind in ("out", "inout")]
        item = np.dtype(arrays[0].dtype).itemsize if arrays else 4

        def profile(p: Mapping[str, Any], c: Config) -> WorkProfile:
            env = {**p, **c}
            values: dict[str, Any] = {key: e.evaluate(env) for key, e in exprs.items()}
            values.setdefault("bytes_read", float(sum(_nbytes(a, p) for a in reads)))
            values.setdefault("bytes_written", float(sum(_nbytes(a, p) for a in writes)))
            values.setdefault("flops", float(flops.evaluate(p)))
            values.setdefault("access_bytes", item)
            fields: dict[str, Any] = {k: (int(v) if k in _PROFILE_BYTES else float(v)) for k, v in values.items()}
            return WorkProfile(**fields)

        return profile

    def check_slots_used(self, slots: Sequence[Slot]) -> None:
        """Every slot must reach the kernel: its macro in the source (``BLOCK_SIZE``, or a text
        slot's ``STRATEGY_...``) or its name in the launch geometry or the work profile. A slot the
        source never reads (``#if VCE == 2`` for a slot ``vec``: the preprocessor takes the unknown
        macro as 0) multiplied the space by configs that all ran the same code, and a run
        recommended a value of it as if it mattered."""
        for i, slot in self.unreached_slots(slots)[:1]:
            raise self.fail(f"slots[{i}].name", f"slot {slot.name!r} reaches nothing: {slot.name.upper()} appears "
                                                f"nowhere in the source, nor {slot.name} in grid, block, dynamic_smem "
                                                "or profile (a misspelt macro reads as 0); use it or remove the slot",
                            slot.name)

    def unreached_slots(self, slots: Sequence[Slot]) -> list[tuple[int, Slot]]:
        """The slots (with their positions) that reach nothing (:func:`unreached_slot_names`)."""
        options = self.spec.get("compile_options")
        geometry = json.dumps([self.spec.get(key) for key in ("grid", "block", "dynamic_smem", "profile")])
        unreached = set(unreached_slot_names([slot.name for slot in slots], self.source, geometry,
                                             options if isinstance(options, list) else ()))
        return [(i, slot) for i, slot in enumerate(slots) if slot.name in unreached]

    def check_profile(self, envs: Mapping[str, Mapping[str, Any]]) -> None:
        """Each profile expression at the default config (with the default and the small problem)
        must compute, to a number in its field's range: one that failed there loaded and failed
        every simulated trial of that config with no field named, and one out of range (a
        coalescing of 5, -3 work per thread) was clamped by the model without a word."""
        for key, e in getattr(self, "profile_exprs", {}).items():
            low, high, rule = PROFILE_RANGES.get(key, (0.0, math.inf, "a number >= 0"))
            for label, env in envs.items():
                try:
                    value = e.evaluate(env)
                except (WorkbenchError, ArithmeticError, ValueError) as exc:
                    raise self.fail(f"profile.{key}", f"{e.text!r} cannot be computed at the default config with the "
                                                      f"{label} problem ({exc})", e.text) from None
                number = float(value) if isinstance(value, (int, float)) else math.nan
                if not (math.isfinite(number) and low <= number <= high and (key not in PROFILE_POSITIVE or number > low)):
                    raise self.fail(f"profile.{key}", f"{e.text!r} is {value!r} at the default config with the {label} "
                                                      f"problem; {key} must be {rule}", e.text)

    def reference(self, args: list[Arg], problem: Mapping[str, Any]) -> Callable[..., dict[str, np.ndarray]]:
        raw = self.get(self.spec, "reference", dict, "reference", {"kind": "none"})
        self.known(raw, REFERENCE_FIELDS, "reference", "the reference")
        kind = raw.get("kind", "expression")
        outputs = {a.name: a for a in args if a.kind in ("out", "inout")}
        if kind not in REFERENCE_KINDS:
            raise self.fail("reference.kind", f"must be one of {', '.join(REFERENCE_KINDS)}", kind)
        if kind == "none":
            return no_reference
        if kind == "python":
            file = self.get(raw, "file", str, "reference.file")
            function = self.get(raw, "function", str, "reference.function", "reference")
            if not _plain_reference_file(file):
                raise self.fail("reference.file", REFERENCE_FILE_RULE, file)
            shapes = {name: arg.shape for name, arg in outputs.items() if arg.shape is not None}
            return _PythonReference((self.folder or Path(".")) / file, function, tuple(outputs), shapes)
        exprs = self.get(raw, "outputs", dict, "reference.outputs")
        names = list(problem) + [a.name for a in args if a.kind in ("in", "inout", "scalar")]
        compiled = {}
        for out, text in exprs.items():
            if out not in outputs:
                raise self.fail(f"reference.outputs.{out}", f"{out!r} is not an out or inout argument", out)
            try:
                compiled[out] = compile_array_expression(str(text), names)
            except WorkbenchError as exc:
                raise self.fail(f"reference.outputs.{out}", str(exc), text) from None
        missing = set(outputs) - set(compiled)
        if missing:
            raise self.fail("reference.outputs", f"no expression for output {sorted(missing)[0]!r}", "outputs")

        where = {out: (f"reference.outputs.{out}", _line_of(self.text, f"reference.outputs.{out}", exprs[out]))
                 for out in compiled}
        path = self.path

        def reference(inputs: Mapping[str, Any], p: Mapping[str, Any]) -> dict[str, np.ndarray]:
            """Each output's expression on ``inputs``; an expression that cannot be computed for
            them (or gives a shape its output cannot take) is a SpecError at its field and line."""
            env = {**p, **{k: np.asarray(v, dtype=np.float64) if np.ndim(v) else float(v) for k, v in inputs.items()}}
            result = {}
            for out, e in compiled.items():
                shape_of = outputs[out].shape
                assert shape_of is not None  # out and inout arguments always have a shape
                shape = shape_of(p)
                try:
                    value = e(env, tuple(shape))
                except WorkbenchError as exc:
                    raise SpecError(str(exc), *where[out], path) from None
                # one number fills the output; any other array must have its shape: NumPy would
                # broadcast a row (n,) into every row of an (n, n) output, and a slip such as
                # x * y for an outer product passed as a reference every correct kernel then failed
                if value.size != 1 and value.shape != tuple(shape):
                    raise SpecError(f"gives shape {value.shape}, but output {out!r} has shape {tuple(shape)}",
                                    *where[out], path)
                if (value.size == 1 and math.prod(shape) > 1 and _REDUCTION.search(e.text)
                        and any(np.size(env[name]) > 1 for name in e.names if name in env)):
                    # one number made from arrays is a reduction a person rarely means for every element:
                    # max(a * x + y, 0), the larger of two in a restriction, is NumPy's max over axis 0
                    raise SpecError(f"gives one number from array inputs, but output {out!r} has shape "
                                    f"{tuple(shape)}: a reference gives every element (max(x, 0) and min(x, 0) "
                                    "reduce over axis 0; the larger or smaller of two is maximum(x, 0) or "
                                    "minimum(x, 0))", *where[out], path)
                result[out] = np.array(np.broadcast_to(value.reshape(()) if value.size == 1 else value, shape),
                                       dtype=np.float64)
            return result

        return reference

    def tolerance(self, args: list[Arg]) -> tuple[list[Arg], tuple[float, float]]:
        """Each output's own ``(rtol, atol)`` (``args[i].rtol`` / ``.atol``; 1e-5 / 1e-6 when not
        given), set on its argument; and the loosest of them, the template's summary tolerance."""
        rtol, atol = 0.0, 0.0
        raw_args = self.spec.get("args", [])
        checked = []
        for i, (arg, entry) in enumerate(zip(args, raw_args)):
            if arg.kind not in ("out", "inout"):
                checked.append(arg)
                continue
            r, a = entry.get("rtol", DEFAULT_RTOL), entry.get("atol", DEFAULT_ATOL)
            for key, x in (("rtol", r), ("atol", a)):
                if not isinstance(x, (int, float)) or isinstance(x, bool) or not x >= 0:
                    raise self.fail(f"args[{i}].{key}", "rtol and atol must be non-negative numbers", arg.name)
            checked.append(dataclasses.replace(arg, tolerance=(float(r), float(a))))
            rtol, atol = max(rtol, float(r)), max(atol, float(a))
        return checked, (rtol or DEFAULT_RTOL, atol or DEFAULT_ATOL)


class _PythonReference:
    """A reference function in a file the author chose: imported on first use (in the worker)."""

    #: Read by :attr:`KernelTemplate.reference_runs_a_file`: calling this imports the file.
    runs_file = True

    def __init__(self, path: Path, function: str, outputs: tuple[str, ...],
                 shapes: Mapping[str, Callable[[Mapping[str, Any]], Any]] | None = None) -> None:
        self.path = path
        self.function = function
        self.outputs = outputs
        self.shapes = dict(shapes or {})  # each output's shape for a problem
        self._fn: Callable[..., Any] | None = None

    def _loading_line(self, exc: BaseException) -> str:
        """The file, and its line the traceback of ``exc`` last passed through where there is one."""
        line = next((frame.lineno for frame in reversed(traceback.extract_tb(exc.__traceback__))
                     if Path(frame.filename) == self.path), None)
        return f"{self.path}, line {line}" if line is not None else str(self.path)

    def __call__(self, inputs: Mapping[str, Any], problem: Mapping[str, Any]) -> dict[str, np.ndarray]:
        if self._fn is None:
            spec = file_module_spec(f"workbench_reference_{self.path.stem}", self.path)
            if spec is None or spec.loader is None or not self.path.is_file():
                raise TemplateError(f"{self.path}: reference file not found")
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except SyntaxError as exc:  # said with where it is, as what the function raises is
                if exc.filename and Path(exc.filename) == self.path:  # (not text the file compiles itself)
                    raise TemplateError(f"{self.path}, line {exc.lineno}: SyntaxError: {exc.msg}") from None
                raise TemplateError(f"{self._loading_line(exc)}: loading it raised SyntaxError: {exc.msg}") from None
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - the author's code, run as the module loads
                raise TemplateError(f"{self._loading_line(exc)}: loading it raised {type(exc).__name__}: {exc}") from None
            fn = getattr(module, self.function, None)
            if not callable(fn):
                raise TemplateError(f"{self.path}: defines no function {self.function}(inputs, problem)")
            self._fn = fn
        try:
            result = self._fn(dict(inputs), dict(problem))
        except Exception as exc:  # noqa: BLE001 - the author's code: said with where it is
            raise TemplateError(f"{self.path}: {self.function}(inputs, problem) raised "
                                f"{type(exc).__name__}: {exc}") from None
        if not isinstance(result, Mapping) or set(result) != set(self.outputs):
            raise TemplateError(f"{self.path}: {self.function}() must return a dict with keys {list(self.outputs)}")
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in result.items()}
        for name, array in arrays.items():
            # said where the reference is computed (the simulator's start too), not only when a
            # GPU's outputs are compared with it element by element
            shape_of = self.shapes.get(name)
            want = tuple(int(d) for d in shape_of(problem)) if shape_of is not None else None
            if want is not None and array.size != math.prod(want):
                raise TemplateError(f"{self.path}: {self.function}() gave {name!r} of shape {array.shape}, but output "
                                    f"{name!r} has shape {want}")
        return arrays


#: The most slot combinations :func:`_holds_for_none` tries (a few milliseconds of evaluation).
_NONE_CHECKED = 4096


def _holds_for_none(rule: Any, slots: Sequence[Slot], problem: Mapping[str, Any]) -> bool:
    """Whether restriction ``rule`` holds for no combination of the slots' values, tried whole
    for a product of at most :data:`_NONE_CHECKED` (False for a larger one: not known)."""
    if math.prod(len(slot.values) for slot in slots) > _NONE_CHECKED:
        return False
    for values in itertools.product(*(slot.values for slot in slots)):
        try:
            if rule({**problem, **dict(zip((slot.name for slot in slots), values))}):
                return False
        except (WorkbenchError, ArithmeticError, ValueError):
            continue
    return True


#: CUDA's launch limits, the same on every GPU since compute capability 3.0.
GRID_LIMITS = (2**31 - 1, 65_535, 65_535)
BLOCK_LIMITS = (1_024, 1_024, 64)
MAX_BLOCK_THREADS = 1_024
#: The largest dynamic shared memory request a launch can state (a 32-bit byte count); what a GPU
#: gives is far less and is checked when a config runs.
MAX_DYNAMIC_SMEM = 2**31 - 1


def _geometry(exprs: list[Restriction], key: str) -> Callable[[Mapping[str, Any], Config], tuple[int, int, int]]:
    """The ``key`` ("grid", "block") of a launch at a problem and config. Checked whole at the default
    config when the spec loads, an expression such as ``n / 1024`` can still give a fraction at
    another size: that is refused, never rounded down (2.93 blocks launched as 2 left a third of
    the output unwritten, and an export carried the short launch)."""
    def geometry(p: Mapping[str, Any], c: Config) -> tuple[int, int, int]:
        env = {**p, **c}
        dims = []
        for axis, e in zip("xyz", exprs):
            try:
                value = e.evaluate(env)
            except (ArithmeticError, ValueError) as exc:  # a division by a slot value of 0: name the field
                raise TemplateError(f"{key} {axis} = {e.text!r} cannot be computed ({type(exc).__name__}: {exc})") from None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value != int(value):
                raise TemplateError(f"{key} {axis} = {e.text!r} gives {value!r}; a launch dimension must be a whole "
                                    "number (round up with (a + b - 1) // b)")
            dims.append(int(value))
        return (dims[0], dims[1], dims[2])

    return geometry


def _inputs_maker(raw_args: Sequence[Mapping[str, Any]], args: list[Arg]) -> Callable[..., dict[str, Any]]:
    """Fresh random inputs in each argument's dtype (``range`` [lo, hi]; never all zeros)."""
    plans = []
    for arg, entry in zip(args, raw_args):
        lo, hi = (entry.get("range") or ((-1.0, 1.0) if np.dtype(arg.dtype).kind == "f" else (1, 100)))
        plans.append((arg, float(lo), float(hi)))

    def make_inputs(problem: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        inputs: dict[str, Any] = {}
        for arg, lo, hi in plans:
            dtype = np.dtype(arg.dtype)
            if arg.kind == "scalar":
                inputs[arg.name] = dtype.type(arg.value(problem))  # type: ignore[misc]
            elif arg.kind in ("in", "inout"):
                shape = arg.shape(problem)  # type: ignore[misc]
                if dtype.kind == "f":
                    inputs[arg.name] = rng.uniform(lo, hi, shape).astype(dtype)
                else:
                    inputs[arg.name] = rng.integers(int(lo), int(hi), shape, endpoint=True).astype(dtype)
        return inputs

    return make_inputs


def _nbytes(arg: Arg, problem: Mapping[str, Any]) -> int:
    return int(np.prod(arg.shape(problem), dtype=np.int64)) * np.dtype(arg.dtype).itemsize  # type: ignore[misc]


def _bytes_moved(expr: Restriction | None, arrays: list[Arg]) -> Callable[[Mapping[str, Any]], float]:
    """The spec's expression, or the minimum traffic: every array once (inout twice)."""
    if expr is not None:
        return lambda p: float(expr.evaluate(p))
    return lambda p: float(sum(_nbytes(a, p) * (2 if a.kind == "inout" else 1) for a in arrays))


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "text", list: "a list", dict: "an object", int: "an integer", float: "a number"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _needle_of(message: str) -> str:
    quoted = re.search(r"'([^']+)'", message)
    return quoted.group(1) if quoted else ""


def _line_of(text: str, field: str, needle: Any) -> int:
    """The 1-based line of the spec text where ``needle`` (else the field's last key) appears; 0 if unknown."""
    if not text:
        return 0
    candidates = []
    if isinstance(needle, str) and needle:
        candidates.append(json.dumps(needle))
        candidates.append(needle)
    elif isinstance(needle, (int, float)) and not isinstance(needle, bool):
        candidates.append(json.dumps(needle))
    key = re.split(r"[.\[]", field)[-1].rstrip("]") if field else ""
    if key and not key.isdigit():
        candidates.append(f'"{key}"')
    head = re.split(r"[.\[]", field)[0] if field else ""
    start = text.find(f'"{head}"') if head else -1
    for candidate in candidates:
        at = text.find(candidate, max(start, 0))
        if at < 0:
            at = text.find(candidate)
        if at >= 0:
            return text.count("\n", 0, at) + 1
    return text.count("\n", 0, start) + 1 if start >= 0 else 0


# --- files ------------------------------------------------------------------------------------------


def template_from_spec(spec: Mapping[str, Any], source: str, *, spec_text: str = "", path: str = "",
                       folder: str | os.PathLike[str] | None = None, source_path: str = "") -> KernelTemplate:
    """The KernelTemplate a spec mapping describes (SpecError with field and line when it cannot)."""
    builder = _Builder(spec, source, spec_text or json.dumps(spec, indent=2), path, Path(folder) if folder else None)
    return dataclasses.replace(builder.build(), source_path=source_path)


def _read_spec_text(path: Path, spec: Path, what: str) -> str:
    """The UTF-8 text of a regular file of at most :data:`MAX_SPEC_BYTES` (a SpecError naming
    ``spec`` otherwise): a FIFO or device in a template folder is refused, never opened, so listing
    the folder cannot hang or read without end."""
    try:
        return read_utf8(path, what, MAX_SPEC_BYTES)
    except UnreadableFile as exc:  # the SpecError names the file its own way
        raise SpecError(exc.reason, path=str(spec)) from None


def read_spec(spec_file: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """The spec object of ``<name>.kernel.json`` and its text, read as every reader of a spec must
    (the loader and the editor): a regular UTF-8 file of bounded size, JSON with 64-bit integers and
    bounded nesting, an object at the top; a SpecError naming the file otherwise."""
    path = resolved(spec_file)
    given = Path(os.path.abspath(spec_file))
    try:
        text = read_utf8(path, "template spec", MAX_SPEC_BYTES)
    except UnreadableFile as exc:  # a link is named as it is in the folder, with where it points
        linked = path != given and given.is_symlink()
        raise SpecError(f"a link to {path}: {exc.reason}" if linked else exc.reason,
                        path=str(given if linked else path)) from None
    try:
        spec = loads_bounded(text, object_pairs_hook=lambda pairs: _unique_keys(pairs, path))
    except json.JSONDecodeError as exc:
        raise SpecError(f"not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno, path=str(path)) from None
    except ValueError as exc:  # an integer literal too long to be a slot value or parameter
        raise SpecError(f"not a valid spec: {exc}", path=str(path)) from None
    except RecursionError:
        raise SpecError("not a valid spec: JSON nested too deeply", path=str(path)) from None
    if not isinstance(spec, dict):
        raise SpecError("the spec must be a JSON object", line=1, path=str(path))
    return spec, text


def _unique_keys(pairs: list[tuple[str, Any]], path: Path) -> dict[str, Any]:
    """JSON keeps the last of two equal keys without a word, so a spec edited by hand could say
    ``"name"`` twice and load as the second; a spec is refused instead, naming the key."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise SpecError(f"key {key!r} appears twice in one object; JSON would keep the last without a word",
                            path=str(path))
        seen.add(key)
    return dict(pairs)


def read_spec_source(folder: Path, name: str) -> str:
    """The CUDA source ``name`` beside a spec, read as the loader reads it; "" when there is no
    regular file of that name (the editor then starts from an empty source)."""
    cu = folder / Path(name).name
    return _read_spec_text(cu, cu, "CUDA source") if cu.is_file() else ""


def read_cuda_file(path: str | os.PathLike[str]) -> str:
    """A ``.cu`` file opened on its own (the editor's new template from a lone source), read as the
    loader reads a spec's source: a regular UTF-8 file of bounded size, a SpecError naming it
    otherwise (a FIFO is refused, never opened; Latin-1 or binary bytes are one line)."""
    cu = resolved(path)
    return _read_spec_text(cu, cu, "CUDA source")


def load_declarative(spec_file: str | os.PathLike[str]) -> KernelTemplate:
    """Read ``<name>.kernel.json`` and its ``.cu``; no code of the template's runs here."""
    path = resolved(spec_file)
    spec, text = read_spec(spec_file)
    stem = Path(spec_file).name[: -len(SPEC_SUFFIX)]
    if isinstance(spec.get("name"), str) and spec["name"] != stem:
        # a run finds a template by its file's name, a listing by the name inside: both must agree
        raise SpecError(f"name {spec['name']!r} differs from the file's, {stem}{SPEC_SUFFIX}: a template is found by "
                        "its file name; rename the file or the name", "name", _line_of(text, "name", spec["name"]),
                        str(path))
    source_name = spec.get("source") or path.name[: -len(SPEC_SUFFIX)] + ".cu"
    if not isinstance(source_name, str) or Path(source_name).name != source_name or "\x00" in source_name:
        raise SpecError("source must be a file name in the spec's folder", "source", _line_of(text, "source", source_name), str(path))
    cu = path.parent / source_name
    try:
        source = _read_spec_text(cu, path, "CUDA source")
    except SpecError as exc:
        raise SpecError(f"cannot read CUDA source {source_name}: {exc.message}", "source",
                        _line_of(text, "source", source_name), str(path)) from None
    return template_from_spec(spec, source, spec_text=text, path=str(path), folder=path.parent, source_path=str(cu))


def user_templates_dir() -> Path:
    """Where the editor saves templates: ``<data dir>/templates`` (``KERNEL_WORKBENCH_DATA_DIR`` honoured)."""
    return user_folder("data") / USER_TEMPLATES


def spec_path(folder: str | os.PathLike[str], name: str) -> Path:
    return Path(folder) / f"{name}{SPEC_SUFFIX}"


def check_template_name(name: str) -> None:
    """Raise SpecError unless ``name`` is a template name the loader accepts (a C identifier):
    callers that make a folder or files from the name check it before touching anything, since
    ``../x`` or an absolute path would otherwise name a place outside their own folder."""
    problem = _name_problem(name)
    if problem is not None:
        raise SpecError(problem, "name")


def reference_file_named(spec: Mapping[str, Any], folder: Path | None) -> Path | None:
    """The Python reference file ``spec`` names, in ``folder`` (the one the spec was read from);
    None when its reference is not Python or there is no folder. The name must be a plain ``.py``
    file name, the loader's rule: a spec that names ``../x.py`` or ``/etc/x`` is refused here,
    before anything copies that file into a template it saves."""
    reference = spec.get("reference")
    if folder is None or not isinstance(reference, Mapping) or reference.get("kind") != "python":
        return None
    file = reference.get("file")
    if not isinstance(file, str) or not file:
        raise SpecError("choose the file with the reference function", "reference.file")
    if not _plain_reference_file(file):
        raise SpecError(REFERENCE_FILE_RULE, "reference.file")
    return folder / file


def save_template_folder(folder: str | os.PathLike[str], spec: Mapping[str, Any], source: str,
                         reference_file: str | os.PathLike[str] | None = None) -> Path:
    """Write the template's CUDA source and ``<name>.kernel.json`` (atomically) into ``folder``;
    returns the spec's path.

    The spec is checked first (a template that would not load is not written). Files the workbench
    did not write are never replaced: a spec already at ``<name>.kernel.json`` keeps the source
    file it names (``"source": "main.cu"`` stays ``main.cu``), and only the source and reference
    files that spec names may be written over; any other file in the way (a ``<name>.cu`` of the
    person's own, a Python spec of the same name) stops the save with one line. A chosen Python
    reference is copied in as ``_<name>_reference.py`` (the leading underscore keeps template
    loading from taking it for a Python spec), read as a spec's own files are: a regular UTF-8
    file of bounded size, never a FIFO.
    """
    name = str(spec.get("name") or "")
    folder = Path(folder)
    target = spec_path(folder, name)
    owned_source, owned = _files_of_saved_spec(target, name)
    spec = dict(spec, format=SPEC_FORMAT, version=SPEC_VERSION, source=owned_source)
    reference_name = f"_{name}_reference.py"
    if reference_file is not None:
        spec["reference"] = dict(spec.get("reference") or {}, kind="python", file=reference_name)
    template_from_spec(spec, source, folder=folder)  # raises SpecError before anything is written
    code = None
    if reference_file is not None:
        chosen = resolved(reference_file)
        code = _read_spec_text(chosen, chosen, "Python reference")
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / f"{name}.py").exists():
        raise TemplateError(f"{folder / (name + '.py')}: a Python spec of that name is there; choose another name")
    written = [(folder / owned_source, source)]
    if code is not None:
        written.append((folder / reference_name, code))
    for path, _ in [*written, (target, "")]:
        if (path.exists() or path.is_symlink()) and path.name not in owned and path != target:
            raise TemplateError(f"{path}: exists and is not part of a saved template; choose another name or folder")
        if read_only(path):  # made read-only: refused as a session or an export is
            raise TemplateError(f"{path}: {read_only_text(path, 'save elsewhere')}")
    for path, text in written:
        _write_text(path, text)
    _write_text(target, json.dumps(spec, indent=2) + "\n")
    return target


def _files_of_saved_spec(target: Path, name: str) -> tuple[str, set[str]]:
    """The source file name a spec already at ``target`` names, and every file of the folder it
    owns (that source and its Python reference): what saving over it may write. Without a spec
    there: ``<name>.cu`` and nothing owned. A spec that cannot be read is taken to own the default
    names, as saving over it always did."""
    default = f"{name}.cu"
    if not (target.exists() or target.is_symlink()):
        return default, set()
    try:
        saved, _ = read_spec(target)
    except SpecError:
        return default, {default, f"_{name}_reference.py"}

    def plain(value: Any) -> str | None:
        ok = isinstance(value, str) and value and Path(value).name == value and "\x00" not in value
        return value if ok else None

    source = plain(saved.get("source")) or default
    owned = {source}
    reference = saved.get("reference")
    if isinstance(reference, Mapping) and reference.get("kind") == "python" and plain(reference.get("file")):
        owned.add(str(reference["file"]))
    return source, owned


def _write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda handle: handle.write(text))


__all__ = [
    "ExpressionProblem", "SPEC_SUFFIX", "SpecError", "expression_problem", "format_values", "load_declarative",
    "parse_values", "read_cuda_file", "save_template_folder", "spec_path", "split_expressions", "template_from_spec",
    "user_templates_dir",
]


def _count(value: float) -> str:
    """A launch figure as its limit is written (``1,000,000``, not ``1e+06``), a fraction or an
    astronomical number as ``g`` writes it."""
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def _field_of(message: str, spec: Mapping[str, Any]) -> str:
    """The spec field a template's own check names in ``message`` (``entry`` for the entry
    function, ``slots[i].name`` for a slot named in it), so the editor marks it and a click on the
    problem leads there; '' when none is named (every such error was '')."""
    if message.startswith("entry function"):
        return "entry"
    named = re.match(r"slot name '([^']*)'", message)
    if named:
        raw = spec.get("slots")
        for i, entry in enumerate(raw if isinstance(raw, list) else []):
            if isinstance(entry, Mapping) and entry.get("name") == named.group(1):
                return f"slots[{i}].name"
    return ""
