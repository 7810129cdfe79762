"""Offline CUDA compilation with NVRTC from pip: no toolkit, no GPU, no driver needed.

``compile_cuda`` turns rendered source into a CUBIN for one architecture and reads what ptxas
reports (registers, static shared memory, stack frame, spills, constant memory), so the simulator,
``check-kernels`` and the GUI can show resource use without a device. Results are cached twice: an
in-process LRU (identical rendered sources compile once per process) and a disk cache keyed by
sha256(source, options, arch, NVRTC version), written atomically, so reruns skip compilation.

The NVRTC binding (``cuda.bindings.nvrtc``) is imported inside :func:`compile_cuda`, never at module
import, so ``workbench.core`` stays importable on machines without it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import struct
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from workbench.core.errors import WorkbenchError
from workbench.core.fs import read_capped, user_folder
from workbench.core.domain.includes import included_files, with_toolkit_headers

#: Bump when the cached record's layout or the parser changes, so stale entries are ignored.
_CACHE_FORMAT = 1
_MEMORY_CACHE_SIZE = 512
_ARCH = re.compile(r"(sm|compute)_(\d+)([af]?)\Z")


@dataclass(frozen=True)
class CompileResult:
    """What compiling one source produced: the CUBIN (when ``ok``), the full log and ptxas's figures.

    Resource figures describe the entry function (or the largest figure over all kernels when no
    entry was named); they are 0 when ptxas did not report them (e.g. after a compile error).
    ``cmem_bytes`` is the function's constant banks plus the module's ``__constant__`` data, as far
    as ptxas reports them (it lists constant banks for sm_80 and older, not for sm_90).
    ``compile_s`` is the time this call took (tiny for cache hits, where ``cached`` is True).
    """

    ok: bool
    cubin: bytes
    log: str
    registers: int = 0
    smem_bytes: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    cmem_bytes: int = 0
    barriers: int = 0
    arch: str = "sm_90"
    compile_s: float = 0.0
    cached: bool = False
    compiler_version: str = ""
    key: str = ""

    @property
    def spill_bytes(self) -> int:
        """Spill stores plus spill loads (the figure tables show)."""
        return self.spill_store_bytes + self.spill_load_bytes

    @property
    def error(self) -> str:
        """The first error line of the log (one line for tables), or "" when ``ok``."""
        if self.ok:
            return ""
        return first_error_line(self.log)


@dataclass(frozen=True)
class KernelResources:
    """ptxas's report for one entry function."""

    name: str
    registers: int = 0
    smem_bytes: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    cmem_bytes: int = 0
    barriers: int = 0


_FUNCTION = re.compile(r"(?:Compiling entry function|Function properties for)\s+'?([A-Za-z_$][\w$]*)'?")
_STACK = re.compile(r"(\d+)\s+bytes stack frame,\s*(\d+)\s+bytes spill stores,\s*(\d+)\s+bytes spill loads")
_REGS = re.compile(r"Used\s+(\d+)\s+registers")
_SMEM = re.compile(r"(\d+)\s+bytes smem")
_CMEM = re.compile(r"(\d+)\s+bytes cmem\[\d+\]")
_BARRIERS = re.compile(r"used\s+(\d+)\s+barriers")


def parse_ptxas_log(log: str) -> dict[str, KernelResources]:
    """Per-function resources from ``ptxas -v`` output (as NVRTC returns it with ``-Xptxas=-v``).

    Handles both the CUDA 12 layout (``Used 32 registers, used 1 barriers, 1024 bytes smem``) and
    the one ptxas uses up to sm_80 that lists ``bytes cmem[N]`` banks (summed into ``cmem_bytes``).
    """
    found: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in log.splitlines():
        match = _FUNCTION.search(line)
        if match:
            current = match.group(1)
            found.setdefault(current, {})
            continue
        if current is None:
            continue
        figures = found[current]
        stack = _STACK.search(line)
        if stack:
            figures["stack_bytes"] = int(stack.group(1))
            figures["spill_store_bytes"] = int(stack.group(2))
            figures["spill_load_bytes"] = int(stack.group(3))
        regs = _REGS.search(line)
        if regs:
            figures["registers"] = int(regs.group(1))
            smem = _SMEM.search(line)
            figures["smem_bytes"] = int(smem.group(1)) if smem else 0
            figures["cmem_bytes"] = sum(int(m) for m in _CMEM.findall(line))
            barriers = _BARRIERS.search(line)
            figures["barriers"] = int(barriers.group(1)) if barriers else 0
    return {name: KernelResources(name=name, **figures) for name, figures in found.items()}


_GMEM = re.compile(r"bytes gmem(.*)$")


def module_constant_bytes(log: str) -> int:
    """User ``__constant__`` data of the whole module (``0 bytes gmem, 256 bytes cmem[3]``, sm_80 and older)."""
    total = 0
    for line in log.splitlines():
        match = _GMEM.search(line)
        if match:
            total += sum(int(m) for m in _CMEM.findall(match.group(1)))
    return total


def first_error_line(log: str) -> str:
    """The first line that reports an error (falls back to the first non-empty line)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in lines:
        if re.search(r"\berror\b", line, re.IGNORECASE):
            return line
    return lines[0] if lines else "compilation failed"


def cache_dir() -> Path:
    """Where CUBINs are cached: ``$KERNEL_WORKBENCH_CACHE_DIR`` or the user cache folder + ``/cubin``."""
    return user_folder("cache", default_under="cubin")


def nvrtc_version() -> str:
    """``"NVRTC 12.9"``; raises WorkbenchError when the NVRTC package is missing."""
    nvrtc = _nvrtc()
    result, major, minor = nvrtc.nvrtcVersion()
    _check(nvrtc, result, "nvrtcVersion")
    return f"NVRTC {major}.{minor}"


def supported_archs() -> list[str]:
    """The ``sm_XX`` targets this NVRTC can compile for."""
    nvrtc = _nvrtc()
    result, archs = nvrtc.nvrtcGetSupportedArchs()
    _check(nvrtc, result, "nvrtcGetSupportedArchs")
    return [f"sm_{a}" for a in archs]


def check_arch(arch: str) -> None:
    """Refuse an ``arch`` this NVRTC cannot compile for, before a batch of compiles that would each
    fail alike (and be stored as if they were the kernel's own errors)."""
    match = _ARCH.match(arch)
    if not match:
        raise WorkbenchError(f"unknown GPU architecture {arch!r}; expected e.g. sm_90")
    supported = supported_archs()
    if f"sm_{match.group(2)}" not in supported:
        raise WorkbenchError(f"{arch!r} is not a GPU architecture {nvrtc_version()} compiles for "
                             f"(it knows {', '.join(supported)})")


def compile_cuda(
    source: str,
    arch: str = "sm_90",
    options: Sequence[str] = (),
    name: str = "kernel.cu",
    *,
    entry: str | None = None,
    use_cache: bool = True,
) -> CompileResult:
    """Compile CUDA C source to a CUBIN for ``arch`` with NVRTC and report ptxas's resource figures.

    A compile error is not an exception: it returns ``ok=False`` with the full log (``.error`` is its
    first error line). Bad arguments (an unknown arch) and a missing NVRTC raise WorkbenchError.
    ``entry`` selects which kernel's figures to report when the source holds several.
    """
    started = time.perf_counter()
    options = with_toolkit_headers(source, options)
    included = included_files(source, options)
    if isinstance(included, str):  # refused before NVRTC opens anything
        version = nvrtc_version()
        return CompileResult(False, b"", f"{name}: error: {included}", arch=arch, compiler_version=version,
                             key=_TRANSIENT, compile_s=time.perf_counter() - started)
    version, opts, key = _keyed(source, arch, options, name, included)
    if use_cache:
        hit = _memory_get(key) or _disk_get(key)
        if hit is not None:
            _memory_put(key, hit)
            return _for_entry(replace(hit, cached=True, compile_s=time.perf_counter() - started), entry)
    result = _compile(source, arch, opts, name, version, key)
    result = replace(result, compile_s=time.perf_counter() - started)
    if use_cache and result.key != _TRANSIENT:
        # disk first: whoever finds the result in memory (another thread, while this one is still
        # writing) can rely on it being on disk for the next process too
        _disk_put(key, result)
        _memory_put(key, result)
    return _for_entry(result, entry)


def cached_compile(
    source: str, arch: str = "sm_90", options: Sequence[str] = (), name: str = "kernel.cu", *, entry: str | None = None,
) -> CompileResult | None:
    """What :func:`compile_cuda` would return from its caches (memory, then disk), or None: never
    compiles, so a caller can take a cached figure at once and queue only the real compiles."""
    options = with_toolkit_headers(source, options)
    included = included_files(source, options)
    if isinstance(included, str):
        return None
    _, _, key = _keyed(source, arch, options, name, included)
    started = time.perf_counter()
    hit = _memory_get(key) or _disk_get(key)
    if hit is None:
        return None
    _memory_put(key, hit)
    return _for_entry(replace(hit, cached=True, compile_s=time.perf_counter() - started), entry)


def _keyed(source: str, arch: str, options: Sequence[str], name: str,
           included: Sequence[tuple[str, str]] = ()) -> tuple[str, list[str], str]:
    """(NVRTC version, full option list, cache key) of a compile. ``included``: (path, content hash)
    of the files on disk the source includes, so that editing a header is a new compile."""
    if not _ARCH.match(arch):
        raise WorkbenchError(f"unknown GPU architecture {arch!r}; expected e.g. sm_90")
    version = nvrtc_version()
    opts = _options(arch, options)
    parts: list[Any] = [_CACHE_FORMAT, source, opts, arch, version, name]
    if included:  # only then: every key of a self-contained source stays what it was
        parts.append([list(pair) for pair in included])
    key = hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()
    return version, opts, key


# --- NVRTC ------------------------------------------------------------------------------------------

_TRANSIENT = "transient"  # key of results that must not be cached


def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise WorkbenchError(
            "NVRTC is not available: pip install 'cuda-bindings>=12.8,<13' 'nvidia-cuda-nvrtc-cu12>=12.8,<13'"
        ) from None
    return nvrtc


def _check(nvrtc: Any, result: Any, what: str) -> None:
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise WorkbenchError(f"{what} failed: {result.name if hasattr(result, 'name') else result}")


def _options(arch: str, options: Sequence[str]) -> list[str]:
    """Our fixed options first, then the template's; ``-arch``/``-Xptxas=-v`` are always ours."""
    fixed = [f"-arch={arch}", "-Xptxas=-v", "-std=c++17"]
    extra = [o for o in options if not o.startswith(("-arch", "--gpu-architecture"))]
    return fixed + [o for o in extra if o not in fixed]


def _compile(source: str, arch: str, opts: list[str], name: str, version: str, key: str) -> CompileResult:
    nvrtc = _nvrtc()
    try:
        result, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    except RuntimeError as exc:  # the shared library could not be found or loaded
        raise WorkbenchError(f"NVRTC could not be loaded: {exc}") from None
    _check(nvrtc, result, "nvrtcCreateProgram")
    try:
        # (surrogateescape: a folder named in bytes that are not UTF-8, an include path, gets its own bytes back)
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode("utf-8", "surrogateescape") for o in opts])
        log = _program_log(nvrtc, prog)
        ok = status == nvrtc.nvrtcResult.NVRTC_SUCCESS
        if not ok and status not in (
            nvrtc.nvrtcResult.NVRTC_ERROR_COMPILATION,
            nvrtc.nvrtcResult.NVRTC_ERROR_INVALID_OPTION,
        ):
            # Out of memory or an internal error: report it, but never cache it.
            return CompileResult(False, b"", log or f"nvrtc: error: {status.name}", arch=arch, compiler_version=version, key=_TRANSIENT)
        if not ok and not log.strip():
            log = f"nvrtc: error: {status.name}"
        cubin = _cubin(nvrtc, prog) if ok else b""
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return CompileResult(ok=ok, cubin=cubin, log=log, arch=arch, compiler_version=version, key=key)


def _program_log(nvrtc: Any, prog: Any) -> str:
    result, size = nvrtc.nvrtcGetProgramLogSize(prog)
    _check(nvrtc, result, "nvrtcGetProgramLogSize")
    buffer = b" " * size
    (result,) = nvrtc.nvrtcGetProgramLog(prog, buffer)
    _check(nvrtc, result, "nvrtcGetProgramLog")
    return log_text(buffer)


#: The ``.nv.info`` attribute holding a kernel's ``__launch_bounds__`` maximum (x, y, z threads).
_EIATTR_MAX_THREADS = 0x05
#: Its format: a 2-byte size, then that many bytes of value.
_EIFMT_SVAL = 0x04


def over_launch_bounds(threads: int, bound: int) -> str | None:
    """Why a block of ``threads`` cannot launch under a ``__launch_bounds__`` of ``bound`` threads
    (:func:`max_threads`; 0: none), or None: the one wording of the simulator's launch refusal
    and the offline check's."""
    if bound and threads > bound:
        return f"a block of {threads} threads, and the kernel's __launch_bounds__ allows {bound}"
    return None


def max_threads(cubin: bytes, entry: str = "") -> int:
    """The most threads a block of ``entry`` may have by its ``__launch_bounds__`` (0 when it sets
    none, or the CUBIN cannot be read): the product of the maximum the compiler records in the
    function's ``.nv.info.<entry>`` section (EIATTR_MAX_THREADS, three little-endian uint32). A
    launch of a larger block fails on a GPU; without it, a block twice the bound looked feasible on
    the simulator. No entry: the smallest bound of any function."""
    try:
        sections = _elf_sections(cubin)
    except (struct.error, ValueError, IndexError):
        return 0
    bounds = []
    for name, body in sections.items():
        if not name.startswith(".nv.info.") or (entry and name != f".nv.info.{entry}"):
            continue
        at = 0
        while at + 4 <= len(body):
            fmt, attribute = body[at], body[at + 1]
            if fmt != _EIFMT_SVAL:
                at += 4  # the other formats hold their value in the two bytes after the attribute
                continue
            size = struct.unpack_from("<H", body, at + 2)[0]
            if attribute == _EIATTR_MAX_THREADS and size >= 12:
                x, y, z = struct.unpack_from("<III", body, at + 4)
                bounds.append(x * y * z)
            at += 4 + size
    return min(bounds) if bounds else 0


def _elf_sections(data: bytes) -> dict[str, bytes]:
    """The sections of a 64-bit little-endian ELF file (what NVRTC's CUBINs are), by name."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    offset = struct.unpack_from("<Q", data, 0x28)[0]
    entry_size, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, offset + i * entry_size) for i in range(count)]
    names_at = headers[names_index][4]
    sections = {}
    for name, _kind, _flags, _address, start, size in headers:
        end = data.index(b"\0", names_at + name)
        sections[data[names_at + name:end].decode("ascii", "replace")] = data[start:start + size]
    return sections


def log_text(buffer: bytes) -> str:
    """NVRTC's log as text: NUL ends each of its parts (the front end's, then ptxas's), read as line
    breaks, not as characters a message then began with ("\x00ptxas error ...")."""
    return "\n".join(part.decode(errors="replace") for part in buffer.split(b"\0") if part.strip())


def _cubin(nvrtc: Any, prog: Any) -> bytes:
    result, size = nvrtc.nvrtcGetCUBINSize(prog)
    _check(nvrtc, result, "nvrtcGetCUBINSize")
    buffer = b" " * size
    (result,) = nvrtc.nvrtcGetCUBIN(prog, buffer)
    _check(nvrtc, result, "nvrtcGetCUBIN")
    return bytes(buffer)


def _for_entry(result: CompileResult, entry: str | None) -> CompileResult:
    """Fill the resource figures from the log, for ``entry`` (or the maxima over all kernels)."""
    kernels = parse_ptxas_log(result.log)
    if not kernels:
        return result
    constants = module_constant_bytes(result.log)
    if entry is not None and entry not in kernels:
        # a C++ kernel's name is mangled (_Z6blur1dPKf...): the module has no function the launch
        # could look up, which a GPU run would find only when it loads the module
        found = ", ".join(sorted(kernels)[:3])
        mangled = any(name.startswith("_Z") and entry in name for name in kernels)
        hint = ' (declare it extern "C": a C++ name is mangled)' if mangled else ""
        return replace(result, ok=False, cubin=b"", log=(
            f"error: entry {entry!r} is not a kernel of the compiled module; it has {found}{hint}\n{result.log}"))
    if entry is not None:
        chosen = asdict(kernels[entry])
        chosen.pop("name")
    else:
        fields = [f for f in asdict(next(iter(kernels.values()))) if f != "name"]
        chosen = {f: max(getattr(k, f) for k in kernels.values()) for f in fields}
    chosen["cmem_bytes"] += constants
    return replace(result, **chosen)


# --- caches -----------------------------------------------------------------------------------------

_memory: OrderedDict[str, CompileResult] = OrderedDict()
_memory_lock = threading.Lock()


def _memory_get(key: str) -> CompileResult | None:
    with _memory_lock:
        hit = _memory.get(key)
        if hit is not None:
            _memory.move_to_end(key)
        return hit


def _memory_put(key: str, result: CompileResult) -> None:
    with _memory_lock:
        _memory[key] = result
        _memory.move_to_end(key)
        while len(_memory) > _MEMORY_CACHE_SIZE:
            _memory.popitem(last=False)


def clear_memory_cache() -> None:
    """Forget the in-process cache (tests use it to exercise the disk cache)."""
    with _memory_lock:
        _memory.clear()


#: Largest compile cache record read (a CUBIN of a few hundred kilobytes, base64, and its log).
_MAX_RECORD_BYTES = 64 * 1024 * 1024


def _disk_get(key: str) -> CompileResult | None:
    path = cache_dir() / f"{key}.json"
    try:
        # a regular file of bounded size only (a FIFO there would block the open for ever)
        record = json.loads(read_capped(path, "compile cache record", _MAX_RECORD_BYTES))
        # any JSON at all may be there (another program's file, a damaged disk): only our object counts
        if not isinstance(record, dict) or record.get("format") != _CACHE_FORMAT or record.get("key") != key:
            return None
        result = CompileResult(
            ok=bool(record["ok"]),
            cubin=base64.b64decode(record["cubin"]),
            log=str(record["log"]),
            arch=str(record["arch"]),
            compiler_version=str(record["compiler_version"]),
            key=key,
        )
        return result if _plausible_figures(result.log) else None
    except (WorkbenchError, OSError, ValueError, KeyError, TypeError, RecursionError):
        return None  # missing, half-written by an old version, or corrupt: compile again


#: The most any ptxas report can say per kernel (beyond them a record was not written by ptxas):
#: registers per thread (the architectural limit), shared memory per block, a thread's local
#: memory (stack frame and spills), constant memory.
_FIGURE_LIMITS = {"registers": 255, "smem_bytes": 256 * 1024, "stack_bytes": 512 * 1024,
                  "spill_store_bytes": 512 * 1024, "spill_load_bytes": 512 * 1024,
                  "cmem_bytes": 1024 * 1024, "barriers": 16}


def _plausible_figures(log: str) -> bool:
    """Whether the resource figures a cached log reports are ones ptxas could have written. The
    figures are read from the log each time, so a damaged or edited record would otherwise pass
    for the compiler's word: 1e23 bytes of spills, or a number too long to read (every candidate
    of the source failing on it for good). A plausible edit (fewer registers) is not caught."""
    try:
        kernels = parse_ptxas_log(log)
        constants = module_constant_bytes(log)
    except ValueError:  # a number of thousands of digits
        return False
    return constants <= _FIGURE_LIMITS["cmem_bytes"] and all(
        0 <= getattr(kernel, name) <= limit for kernel in kernels.values() for name, limit in _FIGURE_LIMITS.items())


def _disk_put(key: str, result: CompileResult) -> None:
    """Write the record atomically (temporary file in the same folder, then rename)."""
    folder = cache_dir()
    record = {
        "format": _CACHE_FORMAT,
        "key": key,
        "ok": result.ok,
        "cubin": base64.b64encode(result.cubin).decode(),
        "log": result.log,
        "arch": result.arch,
        "compiler_version": result.compiler_version,
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(record, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, folder / f"{key}.json")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a read-only or full cache folder only costs recompilation
