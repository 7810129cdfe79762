"""``check-kernels``: compile every template's default config and a sample of others, offline.

This is the CI guard for the template library: a template whose default config or a sampled
config no longer compiles (or that spills badly) shows up here, on a machine with no GPU, in well
under a minute (NVRTC from pip, with the compile cache making reruns near-instant).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence, TextIO

import numpy as np

from workbench.core.model.compiler import CompileResult, compile_cuda, max_threads, over_launch_bounds
from workbench.core.model.kernel_draft import (MAX_CHECKED_BYTES, launch_problem, parse_compiler_log, small_problem_values,
                                             undeclared_macro_hint)
from workbench.core.errors import WorkbenchError, did_you_mean, printable
from workbench.core.domain.figures import duration
from workbench.core.domain.space import Config
from workbench.core.domain.templates import KernelTemplate, non_finite_reference

#: Configs sampled per template besides the default: enough to catch a broken slot combination,
#: few enough that ten templates compile in CI in well under a minute on two cores.
DEFAULT_SAMPLE = 3


@dataclass(frozen=True)
class CheckResult:
    """One template's check: how many configs compiled, which failed and why, resource ranges."""

    kernel: str
    valid_configs: int
    compiled: int = 0  # configs that compiled (one can still fail: see failures)
    failures: tuple[tuple[str, str], ...] = ()  # (config id, first error line)
    # (min, max) over compiled configs; None when none compiled (no figure, not a figure of 0)
    registers: tuple[int, int] | None = None
    smem_bytes: tuple[int, int] | None = None
    spill_bytes: tuple[int, int] | None = None
    stack_bytes: tuple[int, int] | None = None
    cached: int = 0  # how many compiles were cache hits
    seconds: float = 0.0
    problem: str = ""  # set when the template itself is broken (no default config, render error)
    configs: tuple[str, ...] = field(default=(), repr=False)  # ids checked, default first
    #: The slot values of each failed config, as a failure line shows them (its id alone told nothing).
    failed_values: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)
    #: The compiler's warnings over the checked configs, each once ("line 64: warning: ..."): a
    #: template that compiles with warnings is not broken, but a warning often names a real slip
    #: (an unused variable, a pointless comparison), and an exported kernel repeats it in a build.
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failures and not self.problem

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``check-kernels --json``)."""
        out = asdict(self)
        out["failures"] = [{"config": config_id, **({"values": dict(self.failed_values[config_id])}
                                                    if config_id in self.failed_values else {}), "error": error}
                           for config_id, error in self.failures]
        out.pop("failed_values")
        for name in ("registers", "smem_bytes", "spill_bytes", "stack_bytes", "configs", "warnings"):
            out[name] = None if out[name] is None else list(out[name])
        out["ok"] = self.ok
        return out


def check_kernels(
    templates: Mapping[str, KernelTemplate] | Iterable[KernelTemplate],
    arch: str = "sm_90",
    sample: int = DEFAULT_SAMPLE,
    seed: int = 0,
    kernel: str | None = None,
    workers: int = 2,
    progress: Callable[[CheckProgress], None] | None = None,
) -> list[CheckResult]:
    """Compile the default config plus ``sample`` random valid configs of each template.

    ``kernel`` restricts the check to one template (an unknown name is a WorkbenchError).
    Compiles run on ``workers`` threads (NVRTC releases the GIL while it compiles).
    ``progress`` is called before and after each template (a cold check takes a minute).
    """
    if sample < 0:
        raise WorkbenchError(f"sample must be >= 0, got {sample}")
    chosen = list(templates.values()) if isinstance(templates, Mapping) else list(templates)
    if kernel is not None:
        chosen = [t for t in chosen if t.name == kernel]
        if not chosen:
            names = sorted(t.name for t in (templates.values() if isinstance(templates, Mapping) else templates))
            raise WorkbenchError(f"unknown kernel {kernel!r}{did_you_mean(kernel, names)}; choose one of: {', '.join(names)}")
    ordered = sorted(chosen, key=lambda t: t.name)
    results: list[CheckResult] = []
    started = time.perf_counter()
    per_template = 1 + sample
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        for number, template in enumerate(ordered, 1):
            if progress is not None:
                progress(CheckProgress(template.name, number, len(ordered), None, time.perf_counter() - started, None))
            result = _check_one(template, arch, sample, seed, pool)
            results.append(result)
            if progress is not None:
                elapsed = time.perf_counter() - started
                compiled = sum(len(r.configs) - r.cached for r in results)
                left = (len(ordered) - number) * per_template
                # Cached configs cost nothing; the rest cost what the uncached ones cost so far.
                eta = elapsed / compiled * left if compiled else (0.0 if number == len(ordered) else None)
                progress(CheckProgress(template.name, number, len(ordered), result, elapsed, eta))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # a stop does not wait for the compile in hand
        raise
    pool.shutdown()
    return results


@dataclass(frozen=True)
class CheckProgress:
    """Before (``result`` None) or after one template of a check; ``eta_s`` for the rest."""

    kernel: str
    number: int
    templates: int
    result: CheckResult | None
    elapsed_s: float
    eta_s: float | None


def print_progress(stream: TextIO) -> Callable[[CheckProgress], None]:
    """A ``check_kernels`` progress callback printing one line per template to ``stream``."""

    def show(p: CheckProgress) -> None:
        if p.result is None:
            print(f"[{p.number}/{p.templates}] {p.kernel}: compiling...", file=stream, flush=True)
            return
        r = p.result
        print(f"[{p.number}/{p.templates}] {p.kernel}: {r.compiled}/{len(r.configs)} configs compiled "
              f"({r.cached} cached) in {r.seconds:.1f} s; elapsed {duration(p.elapsed_s)}, ETA {duration(p.eta_s)}",
              file=stream, flush=True)

    return show


def print_table_progress(stream: TextIO, every_s: float = 5.0) -> Callable[[Any], None]:
    """A ``write_table`` progress callback: a line per template start and end, and every ``every_s``."""
    last = [0.0]

    def show(p: Any) -> None:
        now = time.monotonic()
        if not p.finished and p.done not in (0, p.total) and now - last[0] < every_s:
            return
        last[0] = now
        state = "done" if p.finished else "compiling"
        print(f"table {p.arch} {p.kernel}: {p.done}/{p.total} configs {state}, {duration(p.elapsed_s)} elapsed, "
              f"ETA {duration(p.eta_s)}", file=stream, flush=True)

    return show


def _check_one(template: KernelTemplate, arch: str, sample: int, seed: int, pool: ThreadPoolExecutor) -> CheckResult:
    started = time.perf_counter()
    try:
        problem = template.resolve_problem()
        space = template.space(problem)
        count = space.count()
        if count == 0:
            return CheckResult(template.name, 0, problem="no config of the space meets its restrictions ("
                                                         + "; ".join(space.restrictions) + ")")
        default = space.default_config()
        declared = any(slot.default is not None for slot in space.slots)
        if default is None and declared:
            return CheckResult(template.name, count, problem="the default config is missing or invalid")
        reference = reference_problem(template)
        if reference is not None:
            return CheckResult(template.name, count, problem=reference)
        wrong_call = next((message for severity, message in template.signature_problems() if severity == "error"), None)
        if wrong_call is not None:  # every launch would pass the kernel what it does not take
            return CheckResult(template.name, count, problem=wrong_call)
        rng = np.random.default_rng(seed)
        # a template without defaults (allowed: the run then starts from its strategy's picks) is
        # checked on a sample alone
        configs: list[Config] = ([default, *space.sample(rng, sample, exclude={default.id})] if default is not None
                                 else space.sample(rng, sample + 1))
        candidates = space.sample(np.random.default_rng([seed, 1]), LARGEST_BLOCK_POOL)  # (both extremes' pool)
        for extreme in (_largest_block(template, problem, candidates, configs),
                        _largest_values(space, candidates, configs)):
            if extreme is not None and extreme.id not in {c.id for c in configs}:
                configs.append(extreme)
        sources = [template.render(c, problem) for c in configs]
    except WorkbenchError as exc:
        return CheckResult(template.name, 0, problem=str(exc))
    options = template.nvrtc_options
    futures = [pool.submit(compile_cuda, src, arch=arch, options=options, name=f"{template.name}.cu",
                           entry=template.entry) for src in sources]
    results = _results_of(futures)
    good = [r for r in results if r.ok]
    failures: list[tuple[str, str]] = []
    failed_values: dict[str, dict[str, Any]] = {}
    for config, result in zip(configs, results):
        why = result.error if not result.ok else _unlaunchable(template, problem, config, result)
        if why and not result.ok:
            why += undeclared_macro_hint(why, template)
        if why:
            failures.append((config.id, why))
            failed_values[config.id] = config.to_dict()

    def span(values: list[int]) -> tuple[int, int] | None:
        return (min(values), max(values)) if values else None

    last_line = len(template.source.rstrip().splitlines())
    warnings = [str(found) for result in results
                for found in parse_compiler_log(result.log, f"{template.name}.cu", last_line=last_line)
                if found.severity == "warning"]

    return CheckResult(
        kernel=template.name,
        valid_configs=count,
        compiled=len(good),
        failures=tuple(failures),
        registers=span([r.registers for r in good]),
        smem_bytes=span([r.smem_bytes for r in good]),
        spill_bytes=span([r.spill_bytes for r in good]),
        stack_bytes=span([r.stack_bytes for r in good]),
        cached=sum(r.cached for r in results),
        seconds=time.perf_counter() - started,
        configs=tuple(c.id for c in configs),
        failed_values=failed_values,
        warnings=tuple(dict.fromkeys(warnings)),
    )


#: How often (seconds) the wait for compiles looks up, so that a stop is taken at once.
POLL_S = 0.2


def _results_of(futures: Sequence[Future[CompileResult]]) -> list[CompileResult]:
    """The futures' results in order, waited for in short steps: a stop (Ctrl+C) reaches the main
    thread only between them, and the compiles still queued are then dropped. Waiting on each result
    in turn, the stop waited for the compile in hand and the queue's other compiles kept starting
    (13 s for the convolution's sample after the person asked to stop)."""
    try:
        while True:
            done, pending = wait(futures, timeout=POLL_S, return_when=FIRST_EXCEPTION)
            error = next((f.exception() for f in done if not f.cancelled() and f.exception() is not None), None)
            if error is not None:  # raised at once, the rest dropped, as a map of them did
                raise error
            if not pending:
                return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        raise


#: Valid configs compared to find the largest block and the largest values (:func:`_largest_block`,
#: :func:`_largest_values`), one pool for both.
LARGEST_BLOCK_POOL = 256


def _largest_block(template: KernelTemplate, problem: Mapping[str, Any], pool: Sequence[Config],
                   checked: Sequence[Config]) -> Config | None:
    """The config of most threads per block among a pool of valid ones, when it has more than every
    config checked already: the block a fixed ``__launch_bounds__`` or a resource limit refuses
    first, which a small random sample often misses (a space with one block size of 1,024 among six
    passed with three configs sampled, and a run then met its launch errors). None otherwise."""
    def threads(config: Config) -> int:
        try:
            return math.prod(int(d) for d in template.block(problem, config))
        except Exception:  # noqa: BLE001 - a block that cannot be computed is the launch check's to say
            return -1

    if not pool:
        return None
    largest = max(pool, key=threads)
    most = max((threads(c) for c in checked), default=-1)
    return largest if threads(largest) > most and largest.id not in {c.id for c in checked} else None


def _largest_values(space: Any, pool: Sequence[Config], checked: Sequence[Config]) -> Config | None:
    """The config with the largest values of its numeric and switch slots among a pool of valid
    ones (each slot's position in its domain, as a share of the domain, summed), when it is larger
    than every config checked already: the corner where per-thread tiles, unrolling and shared
    staging add up to more registers or shared memory than a block may have, which a small random
    sample often misses (a saved kernel checked "ok" while its largest tile with shared staging
    could not compile: too much shared data). None otherwise."""
    slots = [slot for slot in space.slots if len(slot.values) > 1 and (slot.ordered or slot.kind == "bool")]
    if not slots:
        return None

    def size(config: Config) -> float:
        return sum(slot.index(config[slot.name]) / (len(slot.values) - 1) for slot in slots)

    if not pool:
        return None
    largest = max(pool, key=size)
    return largest if size(largest) > max((size(c) for c in checked), default=-1.0) else None


def _unlaunchable(template: KernelTemplate, problem: Mapping[str, Any], config: Config, compiled: CompileResult) -> str | None:
    """Why a config that compiled can never launch, on any GPU, or None: its block or grid breaks
    the limits every CUDA device has or cannot be computed (the editor's rule, :func:`launch_problem`),
    or its block has more threads than the kernel's ``__launch_bounds__`` allows (read from the
    cubin). A run shows such a config as a failure on every trial that meets it; the check says so
    before any run, as a hint that the space's restrictions let the config through (the grid was
    not checked, and a table said "ok" for slot values whose every trial failed to launch)."""
    why = launch_problem(template, problem, config)
    if why:
        return f"cannot launch on any GPU: {why}; a restriction on its slots would leave it out"
    threads = math.prod(int(d) for d in template.block(problem, config))
    over = over_launch_bounds(threads, max_threads(compiled.cubin, template.entry))
    if over:
        return f"cannot launch: {over}; a restriction on its slots would leave it out"
    return None


def reference_problem(template: KernelTemplate) -> str | None:
    """What is wrong with the template's reference on its small problem (it cannot be computed,
    gives an output of another shape, or values that are not finite, which no kernel's output
    could match), or None. A run computes it before its first trial, so a template that passed
    this check was refused at the start of every run, or failed every trial's verification."""
    if not template.has_reference or template.reference_runs_a_file:
        return None  # a reference in a Python file the author chose runs only in a run's worker
    problem = dict(template.small_problem)
    if small_problem_values(template) * 8 > MAX_CHECKED_BYTES:  # computed in float64 in this process: left to the run
        return None
    try:
        expected = template.reference(template.make_inputs(problem, np.random.default_rng(0)), problem)
    except WorkbenchError as exc:
        return f"the reference on the small problem: {exc}"
    except MemoryError:
        return None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a Python spec's own reference code failing
        return f"the reference on the small problem raised {type(exc).__name__}: {exc}"
    return non_finite_reference(expected, "the small problem")


def format_check_table(results: Iterable[CheckResult]) -> str:
    """A fixed-width table, one row per template, then one line per failure."""
    results = list(results)
    header = ("kernel", "valid", "compiled", "failed", "registers", "smem B", "spill B", "time s", "status")
    rows = []
    for r in results:
        attempted = len(r.configs)  # a config can compile and still fail (one that cannot launch)
        rows.append(
            (
                r.kernel,
                str(r.valid_configs),
                f"{r.compiled}/{attempted}",
                str(len(r.failures)),
                _span(r.registers),
                _span(r.smem_bytes),
                _span(r.spill_bytes),
                f"{r.seconds:.2f}",
                "ok" if r.ok else "FAIL",
            )
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for r in results:
        if r.problem:
            lines.append(f"{r.kernel}: {_inert(r.problem)}")
        for config_id, error in r.failures:
            values = ", ".join(f"{name}={value}" for name, value in r.failed_values.get(config_id, {}).items())
            lines.append(f"{r.kernel} config {config_id}{f' ({values})' if values else ''}: {_inert(error)}")
        lines += [f"{r.kernel}: {_inert(warning)}" for warning in r.warnings]
    return "\n".join(lines)


#: The longest compiler line the table prints (a template's #error text is the compiler's to repeat).
MAX_LINE_CHARS = 400


def _inert(text: str) -> str:
    """A compiler's line as the table prints it: control and bidi characters escaped, cut to
    :data:`MAX_LINE_CHARS`. A template's ``#warning`` or ``#error`` text reached the terminal raw:
    an escape sequence in it set the terminal's title and cleared the screen."""
    line = printable(text)
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"


def _span(pair: tuple[int, int] | None) -> str:
    if pair is None:
        return "-"
    low, high = pair
    return str(low) if low == high else f"{low}-{high}"
