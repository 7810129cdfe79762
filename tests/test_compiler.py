"""NVRTC offline compilation, the ptxas log parser, the two compile caches and check-kernels."""

from __future__ import annotations

import dataclasses
import sys
import os
from pathlib import Path

import pytest

from workbench.core.model import compiler
from workbench.core.model.checks import CheckResult, check_kernels, format_check_table
from workbench.core.model.compiler import (
    clear_memory_cache,
    compile_cuda,
    first_error_line,
    module_constant_bytes,
    parse_ptxas_log,
)
from workbench.core.domain.includes import included_files
from workbench.core.errors import WorkbenchError
from workbench.core.domain.templates import load_templates

KERNEL = 'extern "C" __global__ void k(float* x) { __shared__ float s[256]; s[threadIdx.x] = x[threadIdx.x];\n' \
         "__syncthreads(); x[threadIdx.x] = s[255 - threadIdx.x] * 2.0f; }\n"

# Real NVRTC 12.9 output (-Xptxas=-v, -maxrregcount=32) for two kernels, one of them spilling.
LOG_CUDA12 = """\
ptxas info    : Overriding maximum register limit 256 for 'small' with  32 of maxrregcount option
ptxas info    : Overriding maximum register limit 256 for 'big' with  32 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'small' for 'sm_90'
ptxas info    : Function properties for small
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 2.811 ms
ptxas info    : Compiling entry function 'big' for 'sm_90'
ptxas info    : Function properties for big
ptxas         .     1360 bytes stack frame, 2384 bytes spill stores, 2412 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 1360 bytes cumulative stack size
ptxas info    : Compile time = 262.358 ms
"""

# Real NVRTC 12.9 output for one kernel with a 1 KiB shared array and a local array.
LOG_SMEM = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 256 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Compile time = 47.643 ms
"""

# Real NVRTC 12.9 output for sm_80, which still lists constant banks (a 64-float __constant__ array).
LOG_SM80 = """\
ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
ptxas info    : Compiling entry function 'k' for 'sm_80'
ptxas info    : Function properties for k
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 364 bytes cmem[0]
ptxas info    : Compile time = 1.793 ms
"""

# The CUDA 11 layout (smem and cmem on the registers line, stack line without the ptxas prefix).
LOG_CUDA11 = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z6kernelPfi' for 'sm_80'
ptxas info    : Function properties for _Z6kernelPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, 4096 bytes smem, 364 bytes cmem[0], 8 bytes cmem[2]
"""

# Real NVRTC 12.9 error output.
LOG_ERROR = """\
k.cu(1): error: identifier "y" is undefined
  extern "C" __global__ void k(float* x){ x[0] = y; }
                                                 ^

1 error detected in the compilation of "k.cu".
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cubin"
    monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(folder))
    clear_memory_cache()
    return folder


# --- parser ------------------------------------------------------------------------------------------


def test_parser_reads_each_function() -> None:
    kernels = parse_ptxas_log(LOG_CUDA12)
    assert set(kernels) == {"small", "big"}
    assert kernels["small"].registers == 8 and kernels["small"].spill_store_bytes == 0
    big = kernels["big"]
    assert (big.registers, big.stack_bytes, big.spill_store_bytes, big.spill_load_bytes) == (32, 1360, 2384, 2412)
    smem = parse_ptxas_log(LOG_SMEM)["k"]
    assert (smem.registers, smem.smem_bytes, smem.stack_bytes, smem.barriers) == (32, 1024, 256, 1)


def test_parser_reads_constant_banks() -> None:
    old = parse_ptxas_log(LOG_CUDA11)["_Z6kernelPfi"]
    assert (old.registers, old.smem_bytes, old.cmem_bytes) == (18, 4096, 372)
    assert parse_ptxas_log(LOG_SM80)["k"].cmem_bytes == 364
    assert module_constant_bytes(LOG_SM80) == 256 and module_constant_bytes(LOG_SMEM) == 0


def test_constant_memory_reaches_the_result() -> None:
    source = '__constant__ float cc[64];\nextern "C" __global__ void k(float* x, int n) { x[threadIdx.x] = cc[threadIdx.x % 64] * n; }\n'
    result = compile_cuda(source, arch="sm_80", entry="k")
    assert result.ok and result.cmem_bytes >= 256 + 4


def test_first_error_line() -> None:
    assert first_error_line(LOG_ERROR) == 'k.cu(1): error: identifier "y" is undefined'
    assert first_error_line("") == "compilation failed"


# --- compiling ---------------------------------------------------------------------------------------


def test_compiles_to_a_cubin_with_figures() -> None:
    result = compile_cuda(KERNEL, name="k.cu", entry="k")
    assert result.ok and result.error == ""
    assert result.cubin[:4] == b"\x7fELF"
    assert result.registers > 0 and result.smem_bytes == 1024 and result.barriers == 1
    assert result.arch == "sm_90" and result.compiler_version.startswith("NVRTC 12.")
    assert not result.cached and result.compile_s > 0


def test_compile_error_is_a_result_not_an_exception() -> None:
    result = compile_cuda('extern "C" __global__ void k(float* x) { x[0] = y; }\n', name="bad.cu")
    assert not result.ok and result.cubin == b""
    assert result.error.startswith("bad.cu(1): error") and "undefined" in result.error
    assert "1 error detected" in result.log


def test_an_include_of_the_systems_live_state_is_refused_before_nvrtc_quotes_it(tmp_path: Path) -> None:
    """/proc/self/environ is a regular file: included, NVRTC's errors quoted the process's
    environment, and the compile log is kept in the session. Refused by name, also through a link
    or a header; an ordinary header outside the template's folder is still the person's to include."""
    for name in ("/proc/self/environ", "/proc/cpuinfo", "/sys/kernel/osrelease"):
        if not os.path.isfile(name):
            continue
        # (the digraph %: and #include_next open the file as #include does: they got past the check)
        for directive in ("#include", "%:include", "#include_next", "  %: include_next", "#inc\\\nlude"):
            result = compile_cuda(f'{directive} "{name}"\n__global__ void k() {{}}\n', name="e.cu")
            assert not result.ok and "live state" in result.error and "=" not in result.log, (directive, result.log[:200])
    (tmp_path / "env.h").symlink_to("/proc/self/environ")
    (tmp_path / "outer.h").write_text('#include "env.h"\n')
    linked = included_files(f'#include "{tmp_path / "outer.h"}"\n')
    assert isinstance(linked, str) and "live state (/proc)" in linked
    (tmp_path / "fine.h").write_text("#define FINE 1\n")
    assert compile_cuda(f'#include "{tmp_path / "fine.h"}"\nextern "C" __global__ void k(int* x) {{ x[0] = FINE; }}\n',
                        name="f.cu", entry="k").ok


def test_a_toolkit_header_is_found_whichever_spelling_includes_it() -> None:
    """``# include <cuda_fp16.h>`` and ``%:include`` failed ("could not open source file") where
    ``#include`` compiled: only that spelling made the toolkit's folder searched."""
    body = 'extern "C" __global__ void k(__half* x) { x[0] = __float2half(1.0f); }\n'
    for directive in ("#include", "# include", "%:include", "#inc\\\nlude"):
        result = compile_cuda(f"{directive} <cuda_fp16.h>\n{body}", name="h.cu", entry="k")
        assert result.ok, (directive, result.error)


def test_an_include_commented_out_after_a_character_literal_is_not_looked_for() -> None:
    """A u8'a' literal read as the digit separator of a number made its closing quote start a
    literal that ran to the end of the line, so the comment after it was code."""
    assert included_files("char c = u8'a'; /* old:\n#include \"missing.h\"\n*/\n__global__ void k() {}\n") == []
    assert included_files("int n = 1'024; /* old:\n#include \"missing.h\"\n*/\n") == []


def test_an_include_is_checked_before_nvrtc_opens_it_and_its_contents_key_the_cache(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """NVRTC opens what an #include names itself: a FIFO blocked the compile (and check-kernels)
    for ever, and a header edited after a compile left the cached figures of the old one."""
    import threading

    headers = tmp_path / "inc"
    headers.mkdir()
    os.mkfifo(headers / "pipe.h")
    kernel = '#include "tile.h"\nextern "C" __global__ void k(float* x) { __shared__ float s[TILE]; s[threadIdx.x] = 1; ' \
             '__syncthreads(); x[threadIdx.x] = s[TILE - 1 - threadIdx.x]; }\n'
    (headers / "tile.h").write_text("#define TILE 64\n")
    results: list = []
    worker = threading.Thread(target=lambda: results.append(
        compile_cuda('#include "inc/pipe.h"\n__global__ void k() {}\n', name="p.cu")), daemon=True)
    monkeypatch.chdir(tmp_path)  # a quoted name is looked for in the working folder, as NVRTC does
    worker.start()
    worker.join(60)
    assert results, "the compile blocked on the FIFO"
    assert not results[0].ok and "inc/pipe.h" in results[0].error and "not a regular file" in results[0].error
    for options in ([f"-I{headers}"], ["--include-path", str(headers)]):
        first = compile_cuda(kernel, options=options, name="t.cu", entry="k")
        assert first.ok and first.smem_bytes == 64 * 4
    (headers / "tile.h").write_text("#define TILE 128\n")
    second = compile_cuda(kernel, options=[f"-I{headers}"], name="t.cu", entry="k")
    assert second.ok and not second.cached and second.smem_bytes == 128 * 4
    made = compile_cuda('#define H "inc/pipe.h"\n#include H\n__global__ void k() {}\n', name="m.cu")
    assert not made.ok and "not a regular file" in made.error  # a name the source makes with a macro of its own
    (headers / "outer.h").write_text('#include "pipe.h"\n')  # through another header, in its own folder
    assert "pipe.h" in compile_cuda('#include "inc/outer.h"\n__global__ void k() {}\n', name="o.cu").error
    # a header reached through a link looks for its own names beside the link, as NVRTC does
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "via.h").write_text('#include "pipe.h"\n')
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "via.h").symlink_to(tmp_path / "real" / "via.h")
    os.mkfifo(tmp_path / "linked" / "pipe.h")
    assert "linked/pipe.h" in compile_cuda('#include "linked/via.h"\n__global__ void k() {}\n', name="l.cu").error


@pytest.mark.parametrize("source", [
    '#include "tile.h" /* why */\n',  # a comment after the name
    '#define A "tile.h"\n#define B A\n#include B\n',  # made by macros the source defines once
    '#include \\\n  "tile.h"\n',  # a directive continued on the next line
    '// a note \\\n#include "sub/pipe.h"\n#include "tile.h"\n',  # a comment continued: not code
    '/*\n#include "sub"\n*/\n#include "tile.h"\n',  # commented out (and a folder)
    '// #include "sub"\n#include "tile.h"\n',
    '#include "sub"\n',  # a folder: passed over, left to NVRTC's own error
])
def test_includes_that_compile_are_not_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    from workbench.core.domain.includes import included_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tile.h").write_text("#define TILE 4\n")
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / "pipe.h")
    found = included_files(source)
    assert not isinstance(found, str), found
    assert [Path(p).name for p, _ in found] == (["tile.h"] if "tile.h" in source or "#include B" in source else [])


@pytest.mark.parametrize("source, options", [
    ("#include SOME_HEADER\n", ()),  # defined nowhere: could name anything
    ('#define H "inc/pipe.h"\n#undef H\n#define H "inc/tile.h"\n#include H\n', ()),  # which one holds is not followed
    ("#include HDR\n", ("-DHDR=\"inc/pipe.h\"",)),  # from the options: followed, and a FIFO
    ('#define H2 "inc/pipe.h"\n#define H H2\n#include H\n', ()),
    ('#include \\\n"inc/pipe.h"\n', ()),
])
def test_an_include_name_that_is_not_checked_is_refused_in_the_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      source: str, options: tuple[str, ...]) -> None:
    """A name made by a macro (two deep, from -D, redefined) or continued on the next line was passed
    unchecked: a FIFO hung the compile, and an edited header kept its stale cached figures."""
    from workbench.core.domain.includes import included_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "tile.h").write_text("#define TILE 4\n")
    os.mkfifo(tmp_path / "inc" / "pipe.h")
    found = included_files(source, options)
    assert isinstance(found, str) and ("cannot be resolved" in found or "not a regular file" in found), found


def test_a_repeated_resolution_notices_what_changed_in_the_search_path(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolution is remembered (a cache lookup per config searched the whole header tree again,
    0.18 s for CuPy's); a header added earlier in the search path, or a file turned into a FIFO,
    must still be seen."""
    from workbench.core.domain.includes import included_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "h.h").write_text('#include "g.h"\n')
    (tmp_path / "lib" / "g.h").write_text("\n")
    source, options = '#include "h.h"\n', [f"-I{tmp_path / 'lib'}"]
    first = included_files(source, options)
    assert [Path(p).name for p, _ in first] == ["h.h", "g.h"] and included_files(source, options) == first
    (tmp_path / "h.h").write_text("\n")  # the working folder comes before -I for a quoted name
    assert [p for p, _ in included_files(source, options)] == [str(tmp_path / "h.h")]
    (tmp_path / "h.h").unlink()
    assert included_files(source, options) == first
    (tmp_path / "lib" / "g.h").unlink()
    os.mkfifo(tmp_path / "lib" / "g.h")
    assert "not a regular file" in included_files(source, options)


def test_a_header_reached_by_two_names_is_checked_beside_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.core.domain.includes import included_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "via.h").write_text('#include "pipe.h"\n')
    (tmp_path / "real" / "pipe.h").write_text("\n")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "via.h").symlink_to(tmp_path / "real" / "via.h")
    os.mkfifo(tmp_path / "linked" / "pipe.h")
    found = included_files('#include "real/via.h"\n#include "linked/via.h"\n')
    assert isinstance(found, str) and "linked/pipe.h" in found


def test_other_arch_and_options() -> None:
    sm80 = compile_cuda(KERNEL, arch="sm_80", entry="k")
    capped = compile_cuda(KERNEL, options=("-maxrregcount=16",), entry="k")
    assert sm80.ok and sm80.arch == "sm_80" and sm80.cubin != compile_cuda(KERNEL, entry="k").cubin
    assert capped.ok and capped.registers <= 16


def test_bad_arch_is_a_workbench_error() -> None:
    with pytest.raises(WorkbenchError, match="architecture"):
        compile_cuda(KERNEL, arch="volta")
    result = compile_cuda(KERNEL, arch="sm_42")  # well-formed but unknown to NVRTC: a failed compile
    assert not result.ok and "arch" in result.error


def test_missing_nvrtc_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    import cuda.bindings

    monkeypatch.delattr(cuda.bindings, "nvrtc", raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)
    with pytest.raises(WorkbenchError, match="pip install"):
        compile_cuda(KERNEL)


# --- caches ------------------------------------------------------------------------------------------


def test_disk_cache_skips_compilation(_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = compile_cuda(KERNEL, entry="k")
    files = list(_cache.glob("*.json"))
    assert len(files) == 1 and files[0].stem == first.key
    assert not list(_cache.glob(".*.tmp"))  # written atomically, nothing left behind
    clear_memory_cache()
    calls = []
    monkeypatch.setattr(compiler, "_compile", lambda *a: calls.append(a))  # a hit must not compile
    again = compile_cuda(KERNEL, entry="k")
    assert again.cached and not calls
    assert again.cubin == first.cubin and again.registers == first.registers and again.smem_bytes == 1024


def test_memory_cache_hits_without_disk(_cache: Path) -> None:
    first = compile_cuda(KERNEL, entry="k")
    for path in _cache.glob("*.json"):
        path.unlink()
    again = compile_cuda(KERNEL, entry="k")
    assert again.cached and again.cubin == first.cubin


def test_cache_key_covers_options_and_arch() -> None:
    keys = {
        compile_cuda(KERNEL).key,
        compile_cuda(KERNEL, options=("-lineinfo",)).key,
        compile_cuda(KERNEL, arch="sm_80").key,
        compile_cuda(KERNEL + "\n").key,
    }
    assert len(keys) == 4


def test_corrupt_cache_entry_recompiles(_cache: Path) -> None:
    first = compile_cuda(KERNEL, entry="k")
    (_cache / f"{first.key}.json").write_text("{not json")
    clear_memory_cache()
    again = compile_cuda(KERNEL, entry="k")
    assert again.ok and not again.cached and again.cubin == first.cubin


@pytest.mark.parametrize("record", ["[1]", '"text"', "null", "[" * 100_000 + "]" * 100_000, None])
def test_a_cache_entry_that_is_not_our_record_recompiles(_cache: Path, record: str | None) -> None:
    """Valid JSON of another shape was an AttributeError traceback (check-kernels, every compile of a
    run), deep nesting a RecursionError, and a FIFO at the entry's name blocked the open for ever."""
    first = compile_cuda(KERNEL, entry="k")
    path = _cache / f"{first.key}.json"
    path.unlink()
    if record is None:
        os.mkfifo(path)
    else:
        path.write_text(record)
    clear_memory_cache()
    again = compile_cuda(KERNEL, entry="k")
    assert again.ok and not again.cached and again.cubin == first.cubin


@pytest.mark.parametrize("edit", [
    (r"Used \d+ registers", "Used " + "9" * 5000 + " registers"),  # too long to read: every candidate failed on it
    (r"\d+ bytes spill stores", "100000000000000000000000 bytes spill stores"),
    (r"Used \d+ registers", "Used 4096 registers"),
    (r"$", "\nptxas info    : 0 bytes gmem, " + "7" * 5000 + " bytes cmem[3]"),  # the module's constant data
])
def test_a_cache_record_with_figures_ptxas_could_not_report_recompiles(_cache: Path, edit: tuple[str, str]) -> None:
    """The figures are read from the cached log each time: an edited or damaged record passed for
    the compiler's word (1e23 bytes of spills made every latency 1e18 ms), or failed every
    candidate of the source for good (a number of 5,000 digits)."""
    import json
    import re

    first = compile_cuda(KERNEL, entry="k")
    path = _cache / f"{first.key}.json"
    record = json.loads(path.read_text())
    pattern, replacement = edit
    assert re.search(pattern, record["log"])
    record["log"] = re.sub(pattern, replacement, record["log"], count=1)
    path.write_text(json.dumps(record))
    clear_memory_cache()
    again = compile_cuda(KERNEL, entry="k")
    assert again.ok and not again.cached
    assert (again.registers, again.spill_bytes) == (first.registers, first.spill_bytes)


def test_compile_errors_are_cached_too(_cache: Path) -> None:
    bad = 'extern "C" __global__ void k() { nope; }\n'
    assert not compile_cuda(bad).ok
    clear_memory_cache()
    again = compile_cuda(bad)
    assert again.cached and not again.ok and "nope" in again.error


# --- check-kernels -----------------------------------------------------------------------------------


def test_check_kernels_compiles_default_and_sample() -> None:
    templates = load_templates()
    results = check_kernels(templates, sample=2, kernel="vector_add")
    assert [r.kernel for r in results] == ["vector_add"]
    (r,) = results
    assert r.ok and r.compiled == 4 and len(set(r.configs)) == 4  # (and the config of the largest values)
    assert r.configs[0] == templates["vector_add"].default_config().id
    assert r.valid_configs == templates["vector_add"].space().count()
    assert 0 < r.registers[0] <= r.registers[1]
    again = check_kernels(templates, sample=2, kernel="vector_add")[0]
    assert again.cached == 4 and again.configs == r.configs  # seeded: same sample, all cache hits


def test_check_kernels_reports_failures() -> None:
    t = load_templates()["vector_add"]
    broken = dataclasses.replace(t, source=t.source + "\n#if VECTOR_WIDTH == 4\n#error float4 path broken\n#endif\n")
    (r,) = check_kernels([broken], sample=12)
    assert not r.ok and r.failures
    assert all("float4 path broken" in line for _, line in r.failures)
    assert r.compiled + len(r.failures) == 14  # (and the config of the largest values)
    table = format_check_table([r])
    assert "FAIL" in table and "float4 path broken" in table


def test_a_template_whose_every_config_fails_shows_no_resource_figures() -> None:
    """Nothing compiled was shown as 'registers 0  smem B 0' and [0, 0] in --json: figures of a
    kernel that has none."""
    t = load_templates()["vector_add"]
    broken = dataclasses.replace(t, source=t.source + "\n#error every config broken\n")
    (r,) = check_kernels([broken], sample=1)
    assert r.compiled == 0 and r.registers is None and r.to_dict()["smem_bytes"] is None
    row = format_check_table([r]).splitlines()[2].split()
    assert row[4:7] == ["-", "-", "-"], row


def test_check_kernels_fails_configs_whose_grid_no_gpu_takes(tmp_path: Path) -> None:
    """Slot values whose grid cannot be computed (a division by zero) or is negative compiled
    fine and the table said "ok"; every trial of them then failed to launch."""
    import json
    import shutil

    example = Path(__file__).resolve().parents[1] / "docs" / "examples" / "saxpy"
    shutil.copytree(example, tmp_path / "mine")
    spec_file = tmp_path / "mine" / "saxpy.kernel.json"
    spec = json.loads(spec_file.read_text())
    spec["slots"][1]["values"] = [-4, 0, 1, 2]
    spec["slots"][1]["default"] = 1
    spec_file.write_text(json.dumps(spec))
    (r,) = check_kernels(load_templates(tmp_path / "mine").values(), sample=30, kernel="saxpy")
    assert not r.ok and r.compiled == len(r.configs)  # every one compiles: it is their launch that fails
    reasons = [why for _, why in r.failures]
    assert any("ZeroDivisionError" in why for why in reasons) and any("a grid of -" in why for why in reasons)
    assert all(why.startswith("cannot launch on any GPU: ") for why in reasons)
    assert r.valid_configs == len(r.configs) == 24 and len(r.failures) == 12  # each block size with items -4 and 0


def test_check_kernels_rejects_unknown_names() -> None:
    with pytest.raises(WorkbenchError, match="unknown kernel"):
        check_kernels(load_templates(), kernel="nope")
    with pytest.raises(WorkbenchError):
        check_kernels(load_templates(), sample=-1)


def test_format_check_table() -> None:
    rows = [
        CheckResult("a_kernel", 1200, compiled=4, registers=(20, 40), smem_bytes=(0, 4096),
                    spill_bytes=(0, 0), seconds=0.5, configs=("c1", "c2", "c3", "c4")),
        CheckResult("b", 0, problem="the default config is missing or invalid"),
    ]
    table = format_check_table(rows).splitlines()
    assert table[0].split() == ["kernel", "valid", "compiled", "failed", "registers", "smem", "B", "spill", "B", "time", "s", "status"]
    assert table[2].split() == ["a_kernel", "1200", "4/4", "0", "20-40", "0-4096", "0", "0.50", "ok"]
    assert table[3].split()[-1] == "FAIL"
    assert table[-1] == "b: the default config is missing or invalid"


def test_check_result_to_dict_is_json() -> None:
    import json

    r = CheckResult("k", 10, compiled=1, failures=(("abc", "k.cu(3): error: boom"),), registers=(8, 9))
    data = json.loads(json.dumps(r.to_dict()))
    assert data["ok"] is False and data["failures"] == [{"config": "abc", "error": "k.cu(3): error: boom"}]
    assert data["registers"] == [8, 9] and data["valid_configs"] == 10
    # a failed config's slot values, when the check knows them (a failure line named its id alone)
    known = CheckResult("k", 10, failures=(("abc", "boom"),), failed_values={"abc": {"block": 64, "fast": True}})
    assert json.loads(json.dumps(known.to_dict()))["failures"] == [
        {"config": "abc", "values": {"block": 64, "fast": True}, "error": "boom"}]
    assert "k config abc (block=64, fast=True): boom" in format_check_table([known])


def test_check_kernels_reports_progress_per_template_with_counts_and_eta() -> None:
    seen = []
    templates = load_templates()
    check_kernels(templates, sample=1, kernel="vector_add", progress=seen.append)
    assert [p.result is None for p in seen] == [True, False]
    done = seen[-1]
    assert (done.kernel, done.number, done.templates) == ("vector_add", 1, 1)
    assert done.result is not None and done.result.compiled == 3 and done.eta_s == 0.0


def test_check_table_command_fails_on_a_stale_table_and_passes_on_a_fresh_one(cli, tmp_path) -> None:
    """The CI mode: no compiling, exit 1 with one line per stale template, 0 when the table matches."""
    import gzip
    import json as json_

    from workbench.core.model import resource_table

    template = load_templates()["vector_add"]
    resource_table.write_table([template], "sm_90", folder=tmp_path, workers=1, time_limit_s=0.01)

    def check():
        return cli("check-kernels", "--check-table", "--kernel", "vector_add",
                   env={resource_table.TABLE_DIR_ENV: str(tmp_path)})

    fresh = check()
    assert fresh.returncode == 0, fresh.stderr
    assert "sm_90 vector_add:" in fresh.stdout and "(partial)" in fresh.stdout
    path = resource_table.table_path("sm_90", tmp_path)
    data = json_.loads(gzip.decompress(path.read_bytes()))
    data["templates"]["vector_add"]["source_hash"] = "0" * 16  # as if the template changed since
    path.write_bytes(gzip.compress(json_.dumps(data).encode()))
    stale = check()
    assert stale.returncode == 1
    assert "error: sm_90 vector_add: stale" in stale.stderr
    as_json = cli("check-kernels", "--check-table", "--kernel", "vector_add", "--json",
                  env={resource_table.TABLE_DIR_ENV: str(tmp_path)})
    assert as_json.returncode == 1
    document = json_.loads(as_json.stdout)  # --json printed the text lines
    assert [(d["arch"], d["ok"], d["templates"]) for d in document] == [("sm_90", False, [])]
    assert "stale" in document[0]["problems"][0] and "error: sm_90 vector_add: stale" in as_json.stderr


def test_check_table_json_counts_each_templates_configs(cli, tmp_path) -> None:
    import json as json_

    from workbench.core.model import resource_table

    template = load_templates()["vector_add"]
    resource_table.write_table([template], "sm_90", folder=tmp_path, workers=1, time_limit_s=0.01)
    result = cli("check-kernels", "--check-table", "--kernel", "vector_add", "--json",
                 env={resource_table.TABLE_DIR_ENV: str(tmp_path)})
    assert result.returncode == 0, result.stderr
    [document] = json_.loads(result.stdout)
    [entry] = document["templates"]
    assert (document["arch"], document["ok"], document["problems"]) == ("sm_90", True, [])
    assert entry["kernel"] == "vector_add" and entry["state"] == "partial"
    assert 0 <= entry["tabulated"] < entry["valid"] == len(list(template.space(template.resolve_problem())))


@pytest.mark.parametrize("flags, said", [
    (("--check-table", "--sample", "5"), "--sample picks the configs"),
    (("--write-table", "--sample", "5"), "--sample picks the configs"),
    (("--check-table", "--seed", "3"), "--seed applies to the compile check and to --write-table"),
    (("--check-table", "--workers", "2"), "--workers applies to the compile check and to --write-table"),
    (("--shipped",), "--shipped adds the shipped templates to those of --kernel-dir"),
    (("--sample", "-1"), "--sample must be 0 or more"),
])
def test_check_kernels_refuses_a_flag_it_would_ignore(cli, flags, said) -> None:
    """A flag that changed nothing was taken without a word (--check-table --sample 5, --shipped alone)."""
    result = cli("check-kernels", *flags)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: ") and said in result.stderr and result.stderr.count("\n") == 1


def test_an_entry_the_module_lacks_is_a_compile_error_naming_extern_c() -> None:
    """A C++ kernel's name is mangled: its figures were taken from all the module's kernels and every
    offline check passed, while a GPU run could not find the function. A compile error instead."""
    source = "__global__ void blur(float* x) { x[threadIdx.x] = 1.0f; }\n"
    result = compile_cuda(source, name="b.cu", entry="blur", use_cache=False)
    assert not result.ok and "entry 'blur' is not a kernel of the compiled module" in result.error
    assert 'extern "C"' in result.error
    fixed = compile_cuda('extern "C" ' + source, name="b.cu", entry="blur", use_cache=False)
    assert fixed.ok and fixed.registers > 0


def test_a_compile_log_in_parts_reads_as_lines_and_its_message_starts_with_text() -> None:
    """NVRTC's log ends each part with NUL (an empty front-end log, then ptxas's): the message of a
    launch that needed too much shared memory began with "\\x00ptxas error", which show printed."""
    from workbench.core.domain.measurement import Measurement, Status
    from workbench.core.model.compiler import log_text

    log = log_text(b"\0ptxas error   : Entry function 'k' uses too much shared data (0x20008 bytes, 0xc000 max)\n\0")
    assert "\0" not in log and log.startswith("ptxas error")
    failure = Measurement.failure(Status.COMPILE_ERROR, "\0ptxas error : too much shared data")
    assert failure.message == "ptxas error : too much shared data"


def test_the_launch_bounds_a_kernel_sets_are_read_from_its_cubin() -> None:
    from workbench.core.model.compiler import compile_cuda, max_threads

    source = ('extern "C" __global__ void __launch_bounds__(128) bounded(float* x) { x[threadIdx.x] = 1.0f; }\n'
              'extern "C" __global__ void free_(float* x) { x[threadIdx.x] = 2.0f; }\n')
    compiled = compile_cuda(source, arch="sm_90")
    assert compiled.ok, compiled.log
    assert max_threads(compiled.cubin, "bounded") == 128 and max_threads(compiled.cubin, "free_") == 0
    assert max_threads(compiled.cubin) == 128  # no entry named: the tightest bound
    assert max_threads(b"\x7fELF" + b"\0" * 10) == max_threads(compiled.cubin[:200]) == max_threads(b"") == 0


def test_a_kernel_that_includes_the_cuda_half_precision_header_compiles_offline() -> None:
    """NVRTC carries none of the CUDA runtime's headers: cuda_fp16.h was "could not open source
    file" in the editor and in check-kernels. The pip package's header folder is searched last, for
    a source that includes anything; a self-contained source's options (and cache key) are as before."""
    from workbench.core.domain.includes import toolkit_include_dir, with_toolkit_headers
    from workbench.core.model.compiler import compile_cuda

    folder = toolkit_include_dir()
    assert folder is not None  # a dependency of the package
    source = ('#include <cuda_fp16.h>\nextern "C" __global__ void twice(const __half* x, __half* y, int n) '
              "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = __hadd(x[i], x[i]); }\n")
    compiled = compile_cuda(source, entry="twice", use_cache=False)
    assert compiled.ok, compiled.log
    plain = 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n'
    assert with_toolkit_headers(plain, ["-O3"]) == ["-O3"]
    assert with_toolkit_headers(source, ["-O3"]) == ("-O3", f"--include-path={folder}")


def test_check_kernels_lists_the_compilers_warnings_once_each_with_their_line() -> None:
    """A template that compiled with warnings was "ok" with nothing else said, while the editor
    showed them: a pointless comparison, an unused variable, often a real slip."""
    t = load_templates()["vector_add"]
    lines = len(t.source.rstrip().splitlines())
    slip = dataclasses.replace(t, source=t.source.rstrip() + "\n__device__ int never_negative(unsigned u) { return u < 0; }\n")
    (r,) = check_kernels([slip], sample=2)
    assert r.ok  # a warning fails nothing
    assert r.warnings == (f"line {lines + 1}: warning: pointless comparison of unsigned integer with zero",)
    assert r.to_dict()["warnings"] == list(r.warnings)
    assert f"vector_add: line {lines + 1}: warning: pointless comparison" in format_check_table([r])


def test_the_shipped_templates_compile_without_warnings() -> None:
    """An exported kernel is built with the user's nvcc, which repeats every warning NVRTC gives
    (three templates compared threadIdx.x with a tail of 0 elements: nvcc's #186)."""
    results = check_kernels(load_templates(), sample=0)
    assert {r.kernel: r.warnings for r in results if r.warnings} == {}


def test_compiler_text_in_the_table_is_escaped_and_cut(tmp_path) -> None:
    """A template's #warning (or #error) text reached the terminal raw: an escape sequence in it set
    the terminal's title and cleared the screen, and a line of 20,000 characters was printed whole."""
    from workbench.core.model.checks import MAX_LINE_CHARS

    t = load_templates()["vector_add"]
    hostile = dataclasses.replace(t, source="#warning \x1b]0;PWNED\x07\x1b[2J evil " + "L" * 3000 + "\n" + t.source)
    (r,) = check_kernels([hostile], sample=0)
    table = format_check_table([r])
    (line,) = [line for line in table.splitlines() if "#warning" in line]
    assert "\x1b" not in table and "\\x1b]0;PWNED\\x07\\x1b[2J evil" in line
    assert len(line) <= len("vector_add: ") + MAX_LINE_CHARS + 1 and line.endswith("…")


def test_a_stop_of_check_kernels_is_taken_at_once_and_drops_the_queued_compiles(monkeypatch) -> None:
    """A Ctrl-C reaches the main thread only while it runs: waiting on one compile's result, it was
    taken when that compile ended, and the queue's other compiles kept starting meanwhile (13 s for
    the convolution's sample)."""
    import _thread
    import threading
    import time

    from workbench.core.model import checks

    release, started = threading.Event(), []

    def a_long_compile(*args, **kwargs):
        started.append(1)
        release.wait(10)  # (a compile NVRTC cannot be stopped in)
        return compile_cuda(*args, **kwargs)

    monkeypatch.setattr(checks, "compile_cuda", a_long_compile)
    threading.Timer(0.3, _thread.interrupt_main).start()
    began = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            check_kernels(load_templates(), sample=6, kernel="vector_add", workers=1)
        assert time.perf_counter() - began < 5  # not when the compile in hand ends, 10 s on
    finally:
        release.set()
    time.sleep(0.2)
    assert len(started) == 1  # the queued ones were dropped


def test_a_compile_that_raises_is_raised_at_once_and_the_queue_dropped(monkeypatch) -> None:
    """Waiting in steps for the compiles, one that raised (an NVRTC internal error) made every step
    return at once: the main thread spun at full CPU until the whole queue had run."""
    import threading
    import time

    from workbench.core.errors import WorkbenchError
    from workbench.core.model import checks

    release, calls = threading.Event(), []

    def compile_or_fail(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise WorkbenchError("nvrtcCompileProgram failed: NVRTC_ERROR_INTERNAL_ERROR")
        release.wait(10)
        return compile_cuda(*args, **kwargs)

    monkeypatch.setattr(checks, "compile_cuda", compile_or_fail)
    began = time.perf_counter()
    try:
        with pytest.raises(WorkbenchError, match="NVRTC_ERROR_INTERNAL_ERROR"):
            check_kernels(load_templates(), sample=6, kernel="vector_add", workers=2)
        assert time.perf_counter() - began < 5
    finally:
        release.set()
