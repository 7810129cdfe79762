"""Kernel Tuner cache files in and out, and CSV out.

Kernel Tuner (https://github.com/KernelTuner/kernel_tuner) records every benchmarked config in a
JSON "cache file": ``device_name``, ``kernel_name``, ``problem_size``, ``tune_params_keys``,
``tune_params`` and ``cache``, a map from ``"v1,v2,..."`` to a record with the parameter values,
``time`` (ms), ``times`` (each iteration), ``compile_time`` / ``verification_time`` /
``benchmark_time`` (ms) and user metrics such as ``GFLOP/s``. A failed config carries the error
name as a string in ``time`` (Kernel Tuner up to 1.3) or in ``__error__`` with no ``time`` (1.4+):
``CompilationFailedConfig``, ``RuntimeFailedConfig``, ``InvalidConfig`` or their base ``ErrorConfig``.
Kernel Tuner never writes a time as text, so a number in a string is refused rather than guessed at.

Imported files become ordinary sessions (kind ``recording``) whose space is exactly the recorded
points, so they can be viewed, ranked and replayed like anything the workbench measured itself.

A record's ``time`` is Kernel Tuner's own figure (the mean of its repetitions with its default
observers, or whatever an observer put there), while the workbench's ``latency_ms`` is the median
of a config's repetitions with ``latency_p20_ms`` / ``latency_p80_ms`` around it. So ``latency_ms``
is the median of the record's ``times`` when it has them (else the median this workbench's own
export carried beside ``time``, :data:`CARRIED_SPREAD`, else ``time``), and ``time`` itself is kept
as the metric ``kt_time_ms``: a mean dragged up by one slow repetition would otherwise be called a
median and fall outside its own p20..p80 band. Exports back to the cache format write
``kt_time_ms`` as ``time``, so Kernel Tuner reads its own figure again, and the median beside it.

Public API:

- ``import_kt_cache(path) -> Session``
- ``read_kt_cache_data(path) -> dict`` (the parsed file, gzipped or unfinished ones included)
- ``export_kt_cache(session, path) -> int`` (records written)
- ``export_csv(session, path) -> int`` (rows written)
- ``render_kt_cache(session) -> (text, records)`` and ``render_csv(session) -> text``: the same, as text
- ``guess_group(name) -> str`` (the slot group a Kernel Tuner parameter most likely belongs to)
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import math
import os
import re
import zlib
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final, Iterable, Mapping, Sequence, TypeGuard

import numpy as np

from workbench.core.errors import SessionFormatError, WorkbenchError, printable, with_hidden_escaped, write_error
from workbench.core.domain.measurement import LATENCY, METRIC_DIRECTION, Measurement, Status, Trial
from workbench.core.domain.metrics import KT_METRICS, identifier_of, known_direction
from workbench.core.domain.records import provenance
from workbench.core.domain.search_objective import LATENCY_BOUND
from workbench.core.fs import MAX_FILE_BYTES, atomic_write, read_capped
from workbench.core.domain.session import (
    MAX_EPOCH_S,
    MAX_NAME_CHARS,
    NON_NEGATIVE_METRICS,
    Session,
    check_name,
    checked_problem,
    decode_session,
    session_failer,
    problem_key,
)
from workbench.core.domain.bounded_json import IntTooLong, loads_bounded
from workbench.core.domain.sizes import problems_of
from workbench.core.domain.space import SearchSpace, Slot, Value

#: Kernel Tuner error name -> our status.
KT_ERRORS: dict[str, Status] = {
    "CompilationFailedConfig": Status.COMPILE_ERROR,
    "RuntimeFailedConfig": Status.RUNTIME_ERROR,
    "InvalidConfig": Status.SKIPPED,
    "ErrorConfig": Status.RUNTIME_ERROR,  # the base class, for a failure Kernel Tuner does not name
}
#: A number written as text: Kernel Tuner writes times as JSON numbers and errors as names, never
#: this, so such a ``time`` is refused rather than read as a failure with the number as its reason.
_NUMERIC_TEXT = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*|\s*[-+]?(inf|infinity|nan)\s*", re.IGNORECASE)
#: Our failed status -> the Kernel Tuner error name that means the same (as near as it has).
STATUS_TO_KT: dict[Status, str] = {
    Status.COMPILE_ERROR: "CompilationFailedConfig",
    Status.LAUNCH_ERROR: "RuntimeFailedConfig",
    Status.RUNTIME_ERROR: "RuntimeFailedConfig",
    Status.TIMEOUT: "RuntimeFailedConfig",
    Status.CRASHED: "RuntimeFailedConfig",
    Status.WRONG_RESULT: "RuntimeFailedConfig",
    Status.SKIPPED: "InvalidConfig",
    Status.ABORTED: "InvalidConfig",
}
#: Kernel Tuner record fields (ms) -> our timing names (s).
KT_TIMINGS: dict[str, str] = {
    "compile_time": "compile_s",
    "verification_time": "verify_s",
    "benchmark_time": "benchmark_s",
    "strategy_time": "strategy_s",
    "framework_time": "framework_s",
}
#: Record fields this workbench writes beside Kernel Tuner's ``time`` of a trial imported with
#: repetitions (Kernel Tuner ignores them): the session's median and 20th / 80th percentile, which
#: the repetitions gave and which the file does not hold. An import of a record without ``times``
#: reads them back, so a cache exported and imported again ranks by the same medians (it ranked by
#: Kernel Tuner's mean, and could recommend another config).
CARRIED_SPREAD = ("workbench_latency_ms", "workbench_latency_p20_ms", "workbench_latency_p80_ms")
_RECORD_FIELDS = frozenset({"time", "times", "timestamp", "__error__", "workbench_status", "workbench_message",
                            "latency_bound_ms", *CARRIED_SPREAD, *KT_TIMINGS})
#: The statuses a record's ``workbench_status`` may name (an ok record's figures are its own).
_FAILED_STATUSES = frozenset(status.value for status in Status if status is not Status.OK)
#: Our timing name -> the Kernel Tuner record field it is read from and written to.
_TIMING_FIELD: dict[str, str] = {ours: kt for kt, ours in KT_TIMINGS.items()}
#: Kernel Tuner's own ``time`` of a record, kept beside the median ``latency_ms`` (see the module
#: docstring): what Kernel Tuner optimised, and what an export writes back as ``time``.
KT_TIME = "kt_time_ms"
#: Metrics the importer derives from ``time`` and ``times``: a record field named (after renaming)
#: like one of them is not read, so it can never stand in for the measured time.
DERIVED_METRICS = frozenset({LATENCY, KT_TIME, "latency_p20_ms", "latency_p80_ms"})
#: The device record's key for how a cache's records were read into metrics, and today's rule. An
#: imported session and every replay of a cache carry it (a replay copies the recording's device
#: record), so a session read under another rule is told apart from one read now: continuing it
#: would rank figures read two ways against each other. Change :data:`KT_READING` whenever what a
#: record's metrics mean changes. A session without the key was read when ``latency_ms`` was
#: Kernel Tuner's ``time``. (Reading the median an export carried, :data:`CARRIED_SPREAD`, kept
#: the rule: it is the same median of the same repetitions, in files that only exports made since
#: write.)
KT_READING_KEY: Final = "kt_reading"
KT_READING = "latency_ms=median(times)"

# Checked in order; the first rule whose pattern occurs in the lower-case name decides.
_GROUP_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reduction", ("reduc", "atomic")),
    ("launch", ("block", "grid", "thread", "warp", "num_blocks", "items_per")),
    ("memory", ("tile", "shmem", "smem", "shared", "padding", "read_only", "vector", "vec", "cmem", "cache", "prefetch")),
    ("compute", ("unroll", "fast", "loop", "method", "math")),
)


def guess_group(name: str) -> str:
    """The group of a Kernel Tuner parameter, guessed from its name (``compute`` when unsure).

    ``block_size_x``/``grid_*`` -> launch; ``tile_*``, ``use_shmem``, ``use_padding``,
    ``read_only``, ``vector*`` -> memory; ``loop_unroll*``, ``fast_*``, ``*_method`` -> compute;
    ``reduce*``/``atomic*`` -> reduction.
    """
    lowered = name.lower()
    for group, patterns in _GROUP_RULES:
        if any(p in lowered for p in patterns):
            return group
    return "compute"


# ------------------------------------------------------------------------------------------------
# Import
# ------------------------------------------------------------------------------------------------


#: Top-level field of a cache this workbench wrote from a simulated session (Kernel Tuner ignores
#: fields it does not know): its timings are a model's, and an import says so again.
SIMULATED_KEY = "workbench_simulated"
#: Record fields of a failed trial this workbench wrote (Kernel Tuner ignores them): its own status
#: and reason, which Kernel Tuner's error names cannot carry (a candidate aborted above a latency
#: limit is no invalid config, and "RuntimeFailedConfig" says nothing of a wrong result's mismatch).
#: An import reads them back, so a failure keeps its reason through the round trip.
STATUS_KEY = "workbench_status"
MESSAGE_KEY = "workbench_message"

#: How :func:`_read_cache_json` repaired a file Kernel Tuner left unfinished: closed after its last
#: record, or closed after the last whole record when the file ends inside one (a write cut short).
CLOSED, CUT = "closed", "cut"


#: How many times its packed size a gzipped cache may unpack to (Kernel Tuner's caches pack 3 to 5
#: times; a file of repeated records, such as all failures, some tens), and the unpacked size
#: always allowed. Parsing holds every JSON number as a Python object, 16 or more times the two
#: bytes "0," takes as text, so a half-megabyte file of zeros that unpacks to the general limit
#: took 15 GB of memory; capped by the packed size, such a file is refused after reading 16 MB.
MAX_PACK_RATIO = 100
ALWAYS_UNPACKED_BYTES = 16 * 1024 * 1024


def unpacked_limit(packed_bytes: int) -> int:
    """The most bytes a gzipped cache of ``packed_bytes`` may unpack to (see :data:`MAX_PACK_RATIO`)."""
    return min(MAX_FILE_BYTES, max(ALWAYS_UNPACKED_BYTES, MAX_PACK_RATIO * packed_bytes))


def _unpacked(path: Path, raw: bytes) -> bytes:
    """``raw`` decompressed when it is gzip data (at most :func:`unpacked_limit` bytes), else as it is."""
    if raw[:2] != b"\x1f\x8b":
        return raw
    limit = unpacked_limit(len(raw))
    try:  # read at most the limit: a small gzip file can expand without bound
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as unzipped:
            unpacked = unzipped.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise SessionFormatError(f"{path}: damaged gzip file ({exc})") from None
    if len(unpacked) > limit:
        raise SessionFormatError(
            f"{path}: decompresses to more than {limit:,} bytes ({limit // max(len(raw), 1):,} times its "
            f"{len(raw):,}; a Kernel Tuner cache packs 3 to 5 times): refused as a decompression bomb"
        )
    return unpacked


def recording_hash(parts: Iterable[tuple[Path, bytes]]) -> str:
    """The identity of a recording (a Kernel Tuner cache, or a session and its journal) from its
    files' bytes: their text without its layout. A recording whose line endings a checkout or a
    file sync changed (CRLF), which an editor saved with a byte-order mark or a final newline, that
    was indented anew, gzipped or unpacked, is the same recording, and a session replaying it
    continues; hashed as raw bytes it was "the recording changed". Whitespace is dropped wherever
    it is (in a name too: a name is checked apart, and every figure is a number), which costs a
    tenth of what parsing a 17,956-record cache again would."""
    digest = hashlib.sha256()
    for path, raw in parts:
        text = _unpacked(path, raw)
        if text.startswith(b"\xef\xbb\xbf"):
            text = text[3:]
        digest.update(text.translate(None, b" \t\r\n\f\v"))
    return digest.hexdigest()[:16]


def _read_cache_json(path: Path, raw: bytes, repeated: list[str] | None = None) -> tuple[Any, str | None]:
    """Parse a (possibly gzipped, possibly unfinished) Kernel Tuner cache file (``raw``: its bytes);
    the second value says how an unfinished file was repaired (:data:`CLOSED`, :data:`CUT`) or is None.
    ``repeated`` gets every name given twice in one object (a record's key in ``cache``, a field in
    a record): JSON keeps the last, and the earlier record or figure went without a word."""
    hook = None
    if repeated is not None:
        def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            out = dict(pairs)
            if len(out) < len(pairs):
                seen: set[str] = set()
                for name, _value in pairs:
                    if name in seen:
                        repeated.append(name)
                    seen.add(name)
            return out
    raw = _unpacked(path, raw)
    try:
        text = raw.decode("utf-8-sig")  # a byte order mark (an editor's save) is no part of the JSON
    except UnicodeDecodeError:
        raise SessionFormatError(f"{path}: not UTF-8 text (is this a Kernel Tuner cache file?)") from None
    if not text.strip():
        raise SessionFormatError(f"{path}: the file is empty")
    try:
        return loads_bounded(text, hook), None
    except json.JSONDecodeError as exc:
        first_error = exc
    except IntTooLong as exc:
        raise SessionFormatError(f"{path}: {exc}") from None
    except RecursionError:
        raise SessionFormatError(f"{path}: JSON nested too deeply") from None
    if first_error.msg == "Extra data" and _whole_cache_at_start(text, hook):
        # a whole cache with more after it: no run cut this file short (the repairs below would
        # read it as cut and drop its last record, the best one as often as not)
        if not text[first_error.pos:].strip(" \t\r\n\x00\x1a"):
            # only padding after it (NULs of a crash's unwritten blocks, an old editor's Ctrl-Z): whole
            if repeated is not None:
                del repeated[:]  # (the readings before named them already)
            return loads_bounded(text[:first_error.pos], hook), None
        raise SessionFormatError(
            f"{path}: more data after the end of the cache (line {first_error.lineno}, column {first_error.colno}): "
            "not a file Kernel Tuner wrote; refused rather than guess which part is the cache"
        ) from None
    # Kernel Tuner appends records while it runs, one line each ending in "},", and closes the
    # object only at the end: a cache of an interrupted run ends in "...}," without the final "}}".
    # A run killed during a write (or a full disk) ends inside a record instead: the records before
    # it are whole, so the file is closed after the last line that ends one.
    # (a file written on Windows ends its lines in "\r\n"; the least repair is tried first: a file
    # that lacks only its last brace keeps every record)
    body = text.replace("\r\n", "\n").rstrip()
    whole_records = body[: body.rfind("},\n") + 1]
    attempts = ((CLOSED, body + "\n}"), (CLOSED, body.rstrip(",") + "\n}\n}"),
                (CUT, whole_records + "\n}\n}" if whole_records else ""))
    for repair, closed in attempts:
        if not closed:
            continue
        if repeated is not None:
            del repeated[:]  # (the failed parse's names come again)
        try:
            data = loads_bounded(closed, hook)
        except IntTooLong as exc:
            raise SessionFormatError(f"{path}: {exc}") from None
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(data, dict) and isinstance(data.get("cache"), dict):  # not a header closed early
            return data, repair
    raise SessionFormatError(
        f"{path}: not valid JSON (line {first_error.lineno}, column {first_error.colno}: {first_error.msg})"
    ) from None


def _whole_cache_at_start(text: str, hook: Any) -> bool:
    """Whether ``text`` starts with a whole JSON object holding a ``cache`` object (what follows it
    being something else)."""
    try:
        first, _ = json.JSONDecoder(object_pairs_hook=hook).raw_decode(text)
    except (json.JSONDecodeError, RecursionError, ValueError):
        return False
    return isinstance(first, dict) and isinstance(first.get("cache"), dict)


def _plain_value(value: Any) -> Value | None:
    """A slot value from JSON, or None when Kernel Tuner stored something we cannot tune over.

    ``-0.0`` reads as ``0.0``: the two are one config (they compare equal), and the record kept of
    the two was labelled with the value of the one dropped."""
    if isinstance(value, float) and value == 0.0:
        return 0.0
    if isinstance(value, (bool, int, float, str)):
        return value
    return None


def _same_problem(problem_size: Any, problem: Mapping[str, Any]) -> bool:
    """Whether Kernel Tuner's ``problem_size`` is ``problem`` as an import reads it (shallow: a
    nested or odd value, which no import makes, is not)."""
    if isinstance(problem_size, (list, tuple)):
        if any(_plain_value(v) is None for v in problem_size):
            return False
    elif _plain_value(problem_size) is None:
        return False
    return _problem(problem_size) == dict(problem)


def _problem(problem_size: Any) -> dict[str, Value]:
    """``4096`` -> ``{"problem_size": 4096}``; ``[4096, 2048]`` -> ``problem_size_x`` / ``_y``."""
    if problem_size is None:
        return {}
    if isinstance(problem_size, (list, tuple)):
        axes = "xyz" if len(problem_size) <= 3 else [str(i) for i in range(len(problem_size))]
        out: dict[str, Value] = {}
        for a, v in zip(axes, problem_size):
            plain = _plain_value(v)
            out[f"problem_size_{a}"] = plain if plain is not None else str(v)
        return out
    value = _plain_value(problem_size)
    return {"problem_size": value if value is not None else str(problem_size)}


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The zones furthest from UTC a time stamp's offset can name (ISO 8601 and Python: under a day).
_FURTHEST_ZONES = (timezone(timedelta(hours=23, minutes=59)), timezone(-timedelta(hours=23, minutes=59)))


def _calendar_stamp(moment: float) -> str | None:
    """``moment`` (seconds since the epoch) as a record's time stamp: in UTC, as Kernel Tuner
    writes it, or else in the zone furthest ahead of or behind it that holds the moment: a cache's
    stamp of the first hours of the year 1 in a zone ahead of UTC, which an import reads, lies
    before the first moment UTC can write, and was left out of the export. None for a moment no
    calendar holds (a session file's time thousands of years before then)."""
    try:
        return str(datetime.fromtimestamp(moment, tz=timezone.utc))
    except (OverflowError, ValueError, OSError):
        pass
    for zone in _FURTHEST_ZONES:
        try:
            return str(_EPOCH.astimezone(zone) + timedelta(seconds=moment))
        except (OverflowError, ValueError):
            continue
    return None


def _kt_error_name(trial: Trial) -> str:
    """The error name a failed trial's record carries: the one Kernel Tuner wrote when the trial
    came from its cache (a name it has and this workbench does not, such as one of a later version,
    came back as ``RuntimeFailedConfig`` after a round trip), else the nearest to its status."""
    name = trial.measurement.details.get("kernel_tuner_error")
    # (an import's own words for a mark without a name are no name: only an identifier, as Kernel
    # Tuner's error names are its exception classes')
    return name if isinstance(name, str) and name.isidentifier() else STATUS_TO_KT[trial.status]


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _timestamp(value: Any) -> float:
    if not isinstance(value, str):
        return 0.0
    try:
        stamp = datetime.fromisoformat(value.strip())
    except ValueError:
        return 0.0
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    moment = stamp.timestamp()
    # a time a session holds (the year 9999 in a zone behind UTC lies past the last second it reads)
    return moment if -MAX_EPOCH_S <= moment <= MAX_EPOCH_S else 0.0


def _repeated_times(record: Mapping[str, Any]) -> list[float]:
    """The finite, non-negative numbers among a record's ``times`` (each repetition's kernel
    time, ms; a negative one is no time, and with them a percentile could overflow)."""
    times = record.get("times")
    if not isinstance(times, list):
        return []
    return [float(t) for t in times if _is_time(t)]


def _is_time(value: Any) -> bool:
    """Whether one entry of a record's ``times`` is a kernel time: a finite number >= 0 (not text,
    not a boolean)."""
    return type(value) in (int, float) and math.isfinite(value) and value >= 0


def _failed_with_times_note(source: str, cache_keys: list[str], records: list[Mapping[str, Any]],
                            trials: list[Trial]) -> list[str]:
    """A line on the records read as failures because their ``time`` is no measurement (NaN,
    infinite, 0 or below) although they hold repetition times: those are not used, and the
    failure log alone did not say that figures were there."""
    held = [(key, count) for key, record, trial in zip(cache_keys, records, trials)
            if not trial.ok and _is_number(record.get("time")) and (count := len(_repeated_times(record)))]
    if not held:
        return []
    key, count = held[0]
    return [f"{source}: {len(held)} record{'s' if len(held) > 1 else ''} read as failed, "
            f"{'their' if len(held) > 1 else 'its'} time being no measurement, though holding repetition times "
            f"(cache[{key!r}] has {count}); they are not used: Kernel Tuner's own time is what says a record "
            "succeeded"]


def _unread_times_note(source: str, cache_keys: list[str], records: list[Mapping[str, Any]]) -> list[str]:
    """A line on the repetition times left out of the medians (text, booleans, negative or
    infinite numbers: none is a kernel time), naming the first record that held one; none when
    every entry was a time. Said, since a median over what is left differs from the record's."""
    unread, first = 0, None
    for cache_key, record in zip(cache_keys, records):
        times = record.get("times")
        if not isinstance(times, list):
            continue
        bad = [t for t in times if not _is_time(t)]
        if bad:
            unread += len(bad)
            if first is None:
                first = (cache_key, bad[0])
    if first is None:
        return []
    return [f"{source}: left out {unread} recorded repetition time{'s' if unread > 1 else ''} that "
            f"{'are' if unread > 1 else 'is'} no kernel time (cache[{first[0]!r}].times holds {first[1]!r}); the "
            "medians are of the others"]


#: A record's repetitions summarised: (median, 20th percentile, 80th percentile) in ms; the
#: percentiles are None under two repetitions, the whole is None without any.
Spread = tuple[float, float | None, float | None]


def _spreads(records: list[Mapping[str, Any]]) -> list[Spread | None]:
    """Each record's median and 20th / 80th percentile of its repeated times (see :data:`Spread`).

    One NumPy call per repetition count rather than per record: a cache holds thousands of records
    that mostly share one count, and a per-record call cost more than the rest of the import.
    """
    samples = [_repeated_times(record) for record in records]
    rows_of_count: dict[int, list[int]] = {}
    for row, values in enumerate(samples):
        if values:
            rows_of_count.setdefault(len(values), []).append(row)
    spreads: list[Spread | None] = [None] * len(records)
    for count, rows in rows_of_count.items():
        low, median, high = np.percentile(np.array([samples[row] for row in rows]), [20, 50, 80], axis=1)
        for row, p20, p50, p80 in zip(rows, low.tolist(), median.tolist(), high.tolist()):
            spreads[row] = (p50, p20, p80) if count >= 2 else (p50, None, None)
    return spreads


def _carried_spread(record: Mapping[str, Any]) -> Spread | None:
    """The median and percentiles an earlier export carried in ``record`` (:data:`CARRIED_SPREAD`),
    or None: a median that is no time (not a number, not finite, 0 or less) carries nothing, and
    percentiles only in order around it (p20 <= median <= p80)."""
    median, low, high = (record.get(name) for name in CARRIED_SPREAD)
    if not (_is_number(median) and math.isfinite(median) and median > 0):
        return None
    if _is_number(low) and _is_number(high) and math.isfinite(low) and math.isfinite(high) \
            and 0 <= low <= median <= high:
        return float(median), float(low), float(high)
    return float(median), None, None


def _measurement(
    record: Mapping[str, Any],
    not_metrics: frozenset[str] | set[str],
    where: str,
    spread: Spread | None,
    unread: dict[str, str] | None = None,
    renamed: dict[str, str] | None = None,
) -> tuple[Measurement, dict[str, float]]:
    """Status, metrics and timings of one cache record; ``spread`` is its repetitions' median and
    20th/80th percentile, ``not_metrics`` the fields never read as metrics (record fields and
    parameters). ``unread`` gets each numeric field left out of the metrics and why (another
    field is that metric already, or a negative amount), for the import's notes; ``renamed`` each
    metric read under another name than its field's (``GFLOPS/W`` as ``gflops_w``) with that
    field's name, which an export as a cache writes back."""
    timings: dict[str, float] = {}
    for kt_name, ours in KT_TIMINGS.items():
        value = record.get(kt_name)
        # a negative duration is no duration (a clock that went back, a hand edit): left out, as a
        # negative kernel time is refused, so it is neither a timing nor a metric to constrain
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
            timings[ours] = float(value) / 1000.0
    if timings:
        timings["total_s"] = sum(timings.values())

    raw_error = record.get("__error__")
    time_value = record.get("time")
    error: Any = raw_error if isinstance(raw_error, str) and raw_error else None
    for field, text in (("__error__", raw_error), ("time", time_value)):
        if isinstance(text, str) and _NUMERIC_TEXT.fullmatch(text):
            raise SessionFormatError(
                f"{where}.{field}: {text!r} is a number written as text; Kernel Tuner writes a time as a "
                "number and a failure as an error name such as 'RuntimeFailedConfig'"
            )
    if error is None and isinstance(time_value, str):
        error = time_value
    if error is None and raw_error is not None and not _is_number(time_value):
        error = raw_error  # some other mark of a failure, and no time to go on
    if error is None and not _is_number(time_value):
        # Kernel Tuner up to 1.3 wrote a failure into the field of the objective it tuned for
        # (`result[objective] = RuntimeFailedConfig()`): a cache tuned for GFLOP/s has the error
        # name there and no time at all. (A record with a time reads as it always did.)
        error = next((value for value in record.values() if isinstance(value, str) and value in KT_ERRORS), None)
    if error is not None:
        # (an empty mark is still a failure, and the failure log shows a reason for every one)
        error_text = str(error).strip() or f"Kernel Tuner recorded a failure without naming it (__error__ {error!r})"
        status = KT_ERRORS.get(error_text, Status.RUNTIME_ERROR)
        message, failure_metrics = error_text, {}
        own_status, own_message = record.get(STATUS_KEY), record.get(MESSAGE_KEY)
        if own_status in _FAILED_STATUSES:  # written by this workbench: its own status and reason
            status = Status(own_status)
            if isinstance(own_message, str) and own_message.strip():
                message = printable(" ".join(own_message.split()))  # one inert line, whatever the file holds
            bound = record.get(LATENCY_BOUND)
            if status is Status.ABORTED and _is_number(bound) and math.isfinite(bound) and bound > 0:
                failure_metrics[LATENCY_BOUND] = float(bound)  # what an aborted timing saw, for re-measuring
        return (
            Measurement(status, failure_metrics, message, message, {"kernel_tuner_error": error_text}),
            timings,
        )
    if "time" not in record:
        raise SessionFormatError(f"{where}.time: missing (a record holds a time in ms or an error name)")
    if not _is_number(time_value):
        raise SessionFormatError(f"{where}.time: {time_value!r} is neither a time in ms nor an error name")
    if not math.isfinite(time_value) or time_value <= 0:  # 0 ms is no measurement, as for our own trials
        message = f"Kernel Tuner recorded time {time_value!r}"
        return Measurement(Status.RUNTIME_ERROR, {}, message, message), timings

    # The median of the repetitions when there are any (and it is a time: not 0), else Kernel
    # Tuner's figure, the only one there is; Kernel Tuner's own stays beside it.
    median = spread[0] if spread is not None and spread[0] > 0 else None
    metrics: dict[str, float] = {LATENCY: float(time_value) if median is None else median, KT_TIME: float(time_value)}
    if "compile_s" in timings:  # also a figure to constrain or weigh (`compile_s <= 1`), not only a timing
        metrics["compile_s"] = timings["compile_s"]
    if median is not None and spread is not None and spread[1] is not None and spread[2] is not None:
        metrics["latency_p20_ms"], metrics["latency_p80_ms"] = spread[1], spread[2]
    field_of: dict[str, str] = {}
    for name, value in record.items():
        if name in not_metrics:
            continue
        if not _is_number(value):
            if isinstance(value, list) and unread is not None:  # (an observer's readings, save_all=True)
                unread.setdefault(name, "a list of values, not one number")
            continue
        ours = KT_METRICS.get(name) or identifier_of(name)  # (an import lower-cases every other name)
        if len(ours) > MAX_NAME_CHARS:  # a session would not open with it
            if unread is not None:
                unread.setdefault(f"{name[:40]}...", f"a name of {len(ours):,} characters as a metric (at most "
                                                    f"{MAX_NAME_CHARS})")
            continue
        if ours in DERIVED_METRICS or ours in metrics:  # the first field of a name wins
            if unread is not None:
                unread.setdefault(name, f"the field {field_of[ours]!r} is the metric {ours} already" if ours in field_of
                                  else f"{ours} is read from the record's {_TIMING_FIELD[ours]}" if ours in _TIMING_FIELD
                                  else f"{ours} is computed from the record's time and times")
            continue
        if math.isfinite(value) and value < 0 and ours in NON_NEGATIVE_METRICS:
            if unread is not None:
                unread.setdefault(name, f"negative ({value:g}), which {ours} cannot be")
        elif math.isfinite(value):
            metrics[ours] = float(value)
            field_of[ours] = name
            if renamed is not None and name != ours and name not in KT_METRICS:
                renamed.setdefault(ours, name)
    return Measurement(Status.OK, metrics), timings


def read_kt_cache_data(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The top-level object of a Kernel Tuner cache file: plain, gzipped, or left unfinished by a crash.

    For readers that need the raw records (the strategy benchmark); a file that is not a cache
    file gives one SessionFormatError line.
    """
    p = Path(path)
    data, _ = _read_cache_json(p, read_capped(p, "Kernel Tuner cache file", MAX_FILE_BYTES))
    if not isinstance(data, dict):
        raise SessionFormatError(f"{p}: expected a JSON object at the top, got {type(data).__name__}")
    for key in ("tune_params_keys", "tune_params", "cache"):
        if key not in data:
            raise SessionFormatError(f"{p}: {key}: missing, not a Kernel Tuner cache file")
    return data


def _value_key(value: Value) -> tuple[bool, Value]:
    """A hashable form of a value where ``True`` and ``1`` are different values (Python's ``==``
    makes them one, which merged a flag and a number into one domain entry); ``1`` and ``1.0`` stay
    one, as ``==`` has them."""
    return (type(value) is bool, value)


class _Domain:
    """A parameter's values in order of first appearance, with a set beside them for membership:
    a linear scan per value made a parameter of 30,000 declared values take a minute to import."""

    def __init__(self) -> None:
        self.values: list[Value] = []
        self._keys: set[tuple[bool, Value]] = set()

    def add(self, value: Value) -> bool:
        """Add ``value`` unless an equal one is there; whether it was added."""
        key = _value_key(value)
        if key in self._keys:
            return False
        self._keys.add(key)
        self.values.append(value)
        return True


def _point_key(point: Mapping[str, Value]) -> tuple[tuple[bool, Value], ...]:
    """A hashable form of a point where ``True`` and ``1`` stay different values."""
    return tuple((type(v) is bool, v) for v in point.values())


def _check_hidden_parameters(
    source: str, cache: Mapping[str, Any], point_keys: list[tuple[tuple[bool, Value], ...]], keys: list[str]
) -> None:
    """Refuse records that share a point yet differ in a field that can only be a parameter.

    When ``tune_params_keys`` lacks a parameter the records carry, distinct configs share a point
    and would be merged. Among the fields of such records, measurements (``time``, timings, user
    metrics, observer readings) are computed floats that may differ between two measurements of one
    config; an integer, bool or string field that differs cannot be a measurement of the same
    config, so the points are not one config.
    """
    first_of: dict[tuple[tuple[bool, Value], ...], str] = {}
    skip = _RECORD_FIELDS | {"times"} | set(keys)
    for cache_key, point_key in zip(cache, point_keys):
        earlier = first_of.setdefault(point_key, cache_key)
        if earlier == cache_key:
            continue
        a, b = cache[earlier], cache[cache_key]
        for name in sorted((set(a) & set(b)) - skip):  # a failed record may lack what a measured one has
            va, vb = a[name], b[name]
            if va == vb and (type(va) is bool) == (type(vb) is bool):
                continue
            if any(isinstance(v, (bool, int, str)) for v in (va, vb)):
                raise SessionFormatError(
                    f"{source}: cache[{earlier!r}] and cache[{cache_key!r}] are one point of tune_params_keys "
                    f"but differ in {name!r} ({va!r} vs {vb!r}): is {name!r} a parameter tune_params_keys lacks?"
                )


def _file_kernel_name(path: Path) -> str:
    """The kernel a cache without ``kernel_name`` is named after: its file name without ``.json``
    and ``.gz`` (``mycache.json.gz`` is ``mycache``, not ``mycache.json``)."""
    name = path.name
    for suffix in (".gz", ".json"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name or path.stem


def import_note(file_name: str) -> str:
    """The notes an import writes into its session: left so, the session is still as imported."""
    return f"Imported from the Kernel Tuner cache file {file_name}."


def import_digest(session: Any) -> str:
    """A digest of everything an import wrote into ``session`` but its id, creation time and this
    digest itself: a file whose content still gives the digest it carries is an import no one has
    changed, whatever they might have changed (notes, objective, a renamed kernel, a trial's message)."""
    data = session.to_dict()
    for volatile in ("id", "created_at"):
        data.pop(volatile, None)
    facts = dict(data.get("extra", {}).get("kernel_tuner") or {})
    facts.pop(IMPORT_DIGEST, None)
    data["extra"] = {**data.get("extra", {}), "kernel_tuner": facts}
    text = json.dumps(data, sort_keys=True, default=str, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


#: Where an import keeps :func:`import_digest` of what it wrote (in ``extra.kernel_tuner``).
IMPORT_DIGEST: Final = "digest"


def is_as_imported(session: Any) -> bool:
    """Whether ``session`` is an import no one has changed since, to the last field: such a file
    is the importer's own to replace (its cache makes it again). One with anything a person
    changed (notes, objective, a renamed kernel, an added baseline), or an import written before
    imports carried their digest, is theirs, and is replaced only with a backup."""
    facts = session.extra.get("kernel_tuner")
    if session.kind != "recording" or not isinstance(facts, dict) or not isinstance(facts.get(IMPORT_DIGEST), str):
        return False
    return bool(facts[IMPORT_DIGEST] == import_digest(session))


def import_kt_cache(path: str | os.PathLike[str], notes: list[str] | None = None,
                    repairs: list[str] | None = None) -> Session:
    """Read a Kernel Tuner cache file as a session of recorded trials (kind ``recording``).

    The space is exactly the recorded points (Kernel Tuner applied its restrictions before
    measuring); every record becomes a trial in file order, failures with their status and
    Kernel Tuner's reason as the message. What the import repaired or added on its own (an
    unfinished file closed, parameter values ``tune_params`` does not declare) is appended to
    ``notes`` as one line each, for a caller that tells the user; ``repairs`` gets the line of a
    file that was not whole (unfinished, or cut inside a record) alone, for a replay that says
    only that whenever it starts.
    """
    p = Path(path)
    source = str(p)
    raw_bytes = read_capped(p, "Kernel Tuner cache file", MAX_FILE_BYTES)
    repeated: list[str] = []
    data, unfinished = _read_cache_json(p, raw_bytes, repeated)
    if not isinstance(data, dict):
        raise SessionFormatError(f"{source}: expected a JSON object at the top, got {type(data).__name__}")
    for key in ("tune_params_keys", "tune_params", "cache"):
        if key not in data:
            compressed = raw_bytes[:2] == b"\x1f\x8b"  # opened only once decompressed
            hint = ((" (this is a workbench session, compressed: decompress it, gunzip -k FILE, and open that)"
                     if compressed else " (this is a workbench session; open it instead)") if "trials" in data else "")
            raise SessionFormatError(f"{source}: {key}: missing, not a Kernel Tuner cache file{hint}")
    keys = data["tune_params_keys"]
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
        raise SessionFormatError(f"{source}: tune_params_keys: expected a list of parameter names")
    tune_params = data["tune_params"]
    if not isinstance(tune_params, dict):
        raise SessionFormatError(f"{source}: tune_params: expected an object of parameter -> values")
    cache = data["cache"]
    if not isinstance(cache, dict):
        raise SessionFormatError(f"{source}: cache: expected an object of records")
    if not cache:  # a session of no trials opens, but nothing in it can be viewed, ranked or replayed
        raise SessionFormatError(f"{source}: cache: no records, nothing to import")

    domains: dict[str, _Domain] = {}
    by_text: dict[str, dict[str, Value]] = {}
    for name in keys:
        values = tune_params.get(name)
        if not isinstance(values, list) or not values:
            raise SessionFormatError(f"{source}: tune_params.{name}: expected a non-empty list of values")
        domain = _Domain()
        for value in values:
            plain = _plain_value(value)
            if plain is None:
                raise SessionFormatError(f"{source}: tune_params.{name}: {value!r} is not a number, bool or string")
            domain.add(plain)
        domains[name] = domain
        by_text[name] = {str(v): v for v in domain.values}

    points: list[dict[str, Value]] = []
    undeclared: dict[str, list[Value]] = {}
    for cache_key, record in cache.items():
        where = f"cache[{cache_key!r}]"
        if not isinstance(record, dict):
            raise SessionFormatError(f"{source}: {where}: expected an object, got {type(record).__name__}")
        parts = str(cache_key).split(",")
        if len(parts) != len(keys):  # Kernel Tuner's key is the values of tune_params_keys, joined by commas
            raise SessionFormatError(
                f"{source}: {where}: the key has {len(parts)} comma-separated values but tune_params_keys "
                f"names {len(keys)} parameters"
            )
        point: dict[str, Value] = {}
        for position, name in enumerate(keys):
            if name in record:
                value = _plain_value(record[name])
                if value is None:
                    raise SessionFormatError(f"{source}: {where}.{name}: {record[name]!r} is not a number, bool or string")
                if isinstance(value, float) and not math.isfinite(value):  # named here, not as a slot of the space
                    raise SessionFormatError(f"{source}: {where}.{name}: {value!r} is not a finite number")
            elif len(parts) == len(keys) and parts[position] in by_text[name]:
                value = by_text[name][parts[position]]
            else:
                raise SessionFormatError(f"{source}: {where}: no value for parameter {name!r}")
            if domains[name].add(value):  # recorded but not declared: the recording is the truth
                undeclared.setdefault(name, []).append(value)
            point[name] = value
        points.append(point)
    point_keys = [_point_key(point) for point in points]
    last_of = {point_key: index for index, point_key in enumerate(point_keys)}
    cache_keys = list(cache)
    records = list(cache.values())
    replaced: list[tuple[str, str]] = []
    if len(last_of) < len(points):
        _check_hidden_parameters(source, cache, point_keys, keys)
        # One config recorded twice keeps its last record, as a replay of the recording would: a
        # session holds one trial per recorded config.
        kept = sorted(last_of.values())
        replaced = [(cache_keys[i], cache_keys[last_of[k]]) for i, k in enumerate(point_keys) if last_of[k] != i]
        records = [records[i] for i in kept]
        points = [points[i] for i in kept]
        cache_keys = [cache_keys[i] for i in kept]
    for name in undeclared:  # keep numeric domains ordered, so neighbours stay adjacent values
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in domains[name].values):
            domains[name].values.sort()

    try:
        slots = [Slot(name, tuple(domains[name].values), guess_group(name), f"Kernel Tuner parameter {name}") for name in keys]
        space = SearchSpace.explicit(slots, points)
    except WorkbenchError as exc:
        raise SessionFormatError(f"{source}: tune_params: {exc}") from None

    repaired = (f"{source}: the file was unfinished (Kernel Tuner stopped before closing it); "
                f"closed it and read the {len(cache)} complete records" if unfinished == CLOSED else
                f"{source}: the file ends inside a record (a write cut short); left that record out, "
                f"closed the file and read the {len(cache)} complete records before it" if unfinished == CUT else "")
    if repairs is not None and repaired:
        repairs.append(repaired)
    if notes is not None:
        if repaired:
            notes.append(repaired)
        if undeclared:
            added = "; ".join(
                f"{name}: {', '.join(repr(v) for v in values[:5])}{', ...' if len(values) > 5 else ''}"
                for name, values in undeclared.items()
            )
            count = sum(map(len, undeclared.values()))
            notes.append(f"{source}: added {count} parameter value{'s' if count > 1 else ''} the records "
                         f"hold but tune_params does not declare ({added})")
        if replaced:
            dropped, keeper = replaced[0]
            notes.append(f"{source}: {len(replaced)} record{'s' if len(replaced) > 1 else ''} of a config recorded "
                         f"again later in the file dropped, the last record of each kept "
                         f"(cache[{dropped!r}] gave way to cache[{keeper!r}])")

    not_metrics = _RECORD_FIELDS | set(keys) | set(tune_params)  # a parameter is never a metric, declared or not
    configs = space.points  # the space holds each (now distinct) point once, in file order
    trials: list[Trial] = []
    unread: dict[str, str] = {}
    renamed: dict[str, str] = {}
    for index, (cache_key, record, config, spread) in enumerate(zip(cache_keys, records, configs, _spreads(records))):
        where = f"{source}: cache[{cache_key!r}]"
        spread = spread or _carried_spread(record)  # the repetitions themselves win over what was carried
        measurement, timings = _measurement(record, not_metrics, where, spread, unread, renamed)
        finished = _timestamp(record.get("timestamp"))
        started = finished - timings.get("total_s", 0.0) if finished else 0.0
        if not -MAX_EPOCH_S <= started <= finished <= MAX_EPOCH_S:  # (durations of millennia: the start unknown)
            started = finished if -MAX_EPOCH_S <= finished <= MAX_EPOCH_S else 0.0
        trials.append(Trial(index, config, measurement, started, finished, timings, ""))

    if notes is not None:
        notes.extend(_objective_note(source, data.get("objective"), trials))
        notes.extend(_unread_times_note(source, cache_keys, records))
        notes.extend(_failed_with_times_note(source, cache_keys, records, trials))
        if repeated:
            count = len(repeated)
            notes.append(f"{source}: {count} name{'s' if count > 1 else ''} given twice in one object (first "
                         f"{printable(repeated[0][:80])!r}: a record's key in cache, or a field of a record); the "
                         "last of each is read, as Kernel Tuner's own reader does, and the earlier one is not")
        if unread:
            fields = "; ".join(f"{name!r}: {why}" for name, why in list(unread.items())[:4])
            more = f"; and {len(unread) - 4} more" if len(unread) > 4 else ""
            notes.append(f"{source}: record field{'s' if len(unread) > 1 else ''} not read as a metric "
                         f"(in some or all records): {printable(fields)}{more}")
    device_name = data.get("device_name")
    kernel_name = data.get("kernel_name")
    fail = session_failer(source)
    kernel = str(kernel_name) if kernel_name else _file_kernel_name(p)
    check_name(kernel, "kernel_name", fail)
    device = str(device_name) if device_name else "unknown"
    check_name(device, "device_name", fail)
    problem = checked_problem(_problem(data.get("problem_size")), "problem_size", fail)
    session = Session(
        kernel=kernel,
        kind="recording",
        source_hash=recording_hash([(p, raw_bytes)]),
        problem=problem,
        space=space,
        backend={"kind": "replay", "options": {"path": str(p.resolve())}},
        device={"name": device, "simulated": data.get(SIMULATED_KEY) is True, "recorded": True,
                KT_READING_KEY: KT_READING},
        trials=trials,
        notes=import_note(p.name),
        extra={
            "kernel_tuner": {
                "file": p.name,
                # as text only: Kernel Tuner writes a metric's name; a number there (NaN) made the
                # session unsavable ("Out of range float values"), and the import ranks by time anyway
                "objective": objective if isinstance(objective := data.get("objective", "time"), str) else None,
                "problem_size": data.get("problem_size"),
                # a metric's name in the cache where it is not ours (GFLOPS/W for gflops_w): an export
                # as a cache writes it back, so that the file's objective names a field it has
                **({METRIC_FIELDS: renamed} if renamed else {}),
                **({INTEGER_VALUES: mixed} if (mixed := _mixed_integers(domains)) else {}),
            }
        },
    )
    _check_header(session, source)
    session.extra["kernel_tuner"][IMPORT_DIGEST] = import_digest(session)
    return session


def _objective_note(source: str, objective: Any, trials: list[Trial]) -> list[str]:
    """What to tell of a cache Kernel Tuner tuned for another objective than time (GFLOP/s, an
    energy figure): the import ranks by latency, as every session does until weighed otherwise,
    and for a figure such as GFLOPS/W that recommends another config than Kernel Tuner's."""
    if not isinstance(objective, str) or not objective.strip() or objective.strip() == "time":
        return []
    named = objective.strip()[:80]
    metric = KT_METRICS.get(named) or identifier_of(named)
    weigh = ""
    # a name the import gives its own figures (latency_ms, compile_s) is not the recorded field's
    ours = metric in DERIVED_METRICS or metric in KT_TIMINGS.values()
    if not ours and any(metric in trial.measurement.metrics for trial in trials):
        direction = "" if known_direction(metric) is not None else f" --maximize {metric} (or --minimize)"
        # (the flags of show, export and a replay's tune alike: a replay searches for what they weigh)
        weigh = (f"; to rank by it, weigh {metric} instead (--weight {metric}=1 --weight latency_ms=0"
                 f"{direction} with show, export or tune --replay, or its slider in the window)")
    notes = [f"{source}: Kernel Tuner tuned this cache for {named!r}; the recommendation ranks by latency{weigh}"]
    ok = [trial for trial in trials if trial.measurement.status is Status.OK]
    lacking = sum(metric not in trial.measurement.metrics for trial in ok)
    if weigh and lacking:
        # (a cache resumed after the objective was added, say): weighed, those score nothing on
        # it, however good they are
        notes.append(f"{source}: {lacking} of {len(ok)} successful records have no {named!r}; weighed by "
                     f"{metric}, they score 0 on it, and a constraint on it leaves them out")
    return notes


def _check_header(session: Session, source: str) -> None:
    """Refuse, in the session loader's words, a header that ``load_session`` would refuse.

    An import that succeeds is saved, and the saved file must open again, so the header goes
    through the loader's own decoder. The space is left out (its slots were built by the very
    checks the loader runs, and decoding an explicit space of thousands of points would cost as
    much as the import). The trials meet the loader's rules as they are built: only finite numbers
    are read from a record, amounts are not negative, every value is in its slot's domain.
    """
    decode_session(replace(session, space=None, trials=[]).to_dict(), source)


# ------------------------------------------------------------------------------------------------
# Export
# ------------------------------------------------------------------------------------------------


def _slot_names(session: Session) -> list[str]:
    if session.space is not None:
        return list(session.space.names)
    names: dict[str, None] = {}
    for trial in session.trials:
        for name in trial.config:
            names.setdefault(name, None)
    return list(names)


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


#: ``Session.extra`` key of a replay's Kernel Tuner facts, taken from its recording (its objective
#: and renamed metric fields, as ``extra.kernel_tuner`` of an import holds them): kept apart from
#: ``kernel_tuner``, which marks a session as an import of the cache itself.
REPLAYED_KT: Final = "replayed_kernel_tuner"


def replayed_facts(recording: Session) -> dict[str, Any]:
    """What a replay of ``recording`` keeps of its Kernel Tuner facts, for ``extra`` (see
    :data:`REPLAYED_KT`): a replay exported as a cache wrote ``objective: time`` and our metric
    names (``gflops_w``) where the recording said ``GFLOPS/W``."""
    facts = _kt_facts(recording)
    kept = {key: facts[key] for key in ("objective", METRIC_FIELDS, INTEGER_VALUES) if key in facts}
    return {REPLAYED_KT: kept} if kept else {}


def _kt_facts(session: Session) -> dict[str, Any]:
    """The Kernel Tuner facts a session carries: an import's own, else a replay's."""
    extra = session.extra if isinstance(session.extra, dict) else {}
    for key in ("kernel_tuner", REPLAYED_KT):
        facts = extra.get(key)
        if isinstance(facts, dict):
            return facts
    return {}


def _recorded_objective(session: Session) -> str:
    """What Kernel Tuner tuned the imported cache for (``GFLOP/s``, an energy figure), else
    ``time``: written back, a file read again still says so (and its import notes it again)."""
    objective = _kt_facts(session).get("objective")
    if isinstance(objective, str) and objective.strip() and len(objective) <= 80 and objective.isprintable():
        return objective
    return "time"


#: ``Measurement.details`` key of when a replayed measurement was recorded (the recording trial's
#: ``finished_at``): what an export as a cache stamps it with.
RECORDED_AT: Final = "recorded_at"

#: Where an import keeps the cache's name of each metric it renamed (in ``extra.kernel_tuner``).
METRIC_FIELDS: Final = "metric_fields"


#: Where an import keeps, per parameter whose values mix integers and floats, the values written
#: as integers (``2`` beside ``0.5``): a slot holds one type, so they read as floats, and an export
#: as a cache writes them as Kernel Tuner keyed them (``...,2,...``, not ``...,2.0,...``).
INTEGER_VALUES: Final = "integer_values"


def recorded_value(session_integers: Mapping[str, set[float]], name: str, value: Any) -> Any:
    """A slot's value as the recording held it: a whole-number float of a parameter that Kernel
    Tuner listed as an integer (``factor: [0.5, 2, 4]``) is that integer, which the kernel was
    compiled with (``#define factor 4``; ``4.0`` is a float constant ``#if`` refuses)."""
    if type(value) is float and value in session_integers.get(name, ()):
        return int(value)
    return value


def recorded_integers(session: Session) -> dict[str, set[float]]:
    """The values an import read as floats from integers, per parameter (:data:`INTEGER_VALUES`),
    as a file may hold them: only whole numbers of a float slot (see :func:`recorded_value`)."""
    stored = _kt_facts(session).get(INTEGER_VALUES)
    if not isinstance(stored, dict):
        return {}
    floats = {s.name for s in session.space.slots if s.kind == "float"} if session.space is not None else set()
    found: dict[str, set[float]] = {}
    for name, values in stored.items():
        if name in floats and isinstance(values, list):
            whole = {float(v) for v in values if type(v) is int and abs(v) < 2**53}
            if whole:
                found[name] = whole
    return found


def _mixed_integers(domains: Mapping[str, "_Domain"]) -> dict[str, list[int]]:
    """Per parameter whose values mix integers and floats, the integers (see :data:`INTEGER_VALUES`)."""
    mixed: dict[str, list[int]] = {}
    for name, domain in domains.items():
        ints = [v for v in domain.values if type(v) is int]
        if ints and any(type(v) is float for v in domain.values):
            mixed[name] = ints
    return mixed


def _recorded_fields(session: Session) -> dict[str, str]:
    """The cache's field name of each metric an import renamed (``gflops_w`` -> ``GFLOPS/W``),
    read as a file may hold it: only names a record could have, each written back once."""
    fields = _kt_facts(session).get(METRIC_FIELDS)
    if not isinstance(fields, dict):
        return {}
    found: dict[str, str] = {}
    for ours, name in fields.items():
        if (isinstance(ours, str) and isinstance(name, str) and 0 < len(name) <= MAX_NAME_CHARS
                and name.isprintable() and name not in found.values() and identifier_of(name) == ours):
            found[ours] = name
    return found


def _problem_size(session: Session, problem: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """Kernel Tuner's ``problem_size`` of ``problem``, the one the trials ran at (a sweep measured
    at one size has the template's default as its own problem), or the recorded one of a session
    imported from a cache; and the problem parameters it leaves out (a cache has no other place
    for them: a tolerance, a fraction), for the export's notes."""
    kt = session.extra.get("kernel_tuner") if isinstance(session.extra, dict) else None
    recorded = kt.get("problem_size") if isinstance(kt, dict) else None
    # the recorded spelling (a list, a text) only where it is the problem the trials ran at: a
    # file's own copy of it, read unchecked, put any text or structure into the cache written
    if recorded is not None and _same_problem(recorded, problem):
        return recorded, []
    if "problem_size" in problem:
        return problem["problem_size"], [k for k in problem if k != "problem_size"]
    named = [k for k in ("problem_size_x", "problem_size_y", "problem_size_z") if k in problem]
    if not named:
        named = [k for k, v in problem.items() if isinstance(v, int) and not isinstance(v, bool)]
    left = [k for k in problem if k not in named]
    if not named:
        return None, left
    if named[0].startswith("problem_size_"):
        return [problem[k] for k in named], left
    return (problem[named[0]] if len(named) == 1 else [problem[k] for k in named]), left


def export_kt_cache(session: Session, path: str | os.PathLike[str], notes: list[str] | None = None) -> int:
    """Write the session as a Kernel Tuner cache file (see :func:`render_kt_cache`, which appends
    to ``notes``); returns the number of records written."""
    text, records = render_kt_cache(session, notes)
    try:
        atomic_write(Path(path), lambda f: f.write(text))
    except OSError as exc:
        raise write_error(f"{path}: cannot write ({exc.strerror or exc})", exc) from None
    return records


def render_kt_cache(session: Session, notes: list[str] | None = None) -> tuple[str, int]:
    """The session as the text of a Kernel Tuner cache file (errors in ``time``, as Kernel Tuner <= 1.3).

    ``time`` is a trial's ``kt_time_ms`` when it has one (it came from a Kernel Tuner cache), else
    its ``latency_ms``. One record per distinct config: an ok trial wins over failed ones of the same config. Ok
    trials without a latency cannot be expressed in that format and are left out. Returns the text
    and the number of records. A session measured at several problem sizes is refused (a cache
    holds one problem, and its records are keyed by config alone). ``notes`` gets what the file
    cannot carry. A trial imported with repetitions keeps their median and percentiles beside
    Kernel Tuner's ``time`` (:data:`CARRIED_SPREAD`).
    """
    problems = problems_of(session)
    if len(problems) > 1:
        raise WorkbenchError(f"{session.kernel}: a Kernel Tuner cache holds one problem and this session has trials "
                             f"at {len(problems)} sizes; export CSV (a row per trial with its size) instead")
    problem_of_file = problems[0] if problems else session.problem
    problem_size, problem_left_out = _problem_size(session, problem_of_file)
    names = _slot_names(session)
    clash = [n for n in names if n in _RECORD_FIELDS]
    if clash:
        raise WorkbenchError(f"{session.kernel}: slot {clash[0]!r} has the name of a field of every Kernel Tuner "
                             f"record ({', '.join(sorted(_RECORD_FIELDS))}), so its values and the measurements "
                             "would overwrite each other in the cache; export CSV instead")
    integers = recorded_integers(session)

    def as_recorded(name: str, value: Any) -> Any:
        return int(value) if name in integers and value in integers[name] else value

    if session.space is not None:
        tune_params = {s.name: [as_recorded(s.name, v) for v in s.values] for s in session.space.slots}
    else:
        tune_params = {n: sorted({t.config[n] for t in session.trials if n in t.config}, key=str) for n in names}
    inverse = {**_recorded_fields(session), **{ours: kt for kt, ours in KT_METRICS.items()}}
    objective = _recorded_objective(session)
    cache: dict[str, dict[str, Any]] = {}
    written: dict[str, Trial] = {}
    # a metric named like a slot or a record field has no field of its own: left out, and said
    unwritable = set(names) | _RECORD_FIELDS
    field_owner: dict[str, str] = {}  # a record field -> the metric written there (the first to claim it)
    left_out: dict[str, str] = {}
    for trial in session.trials:
        if not all(n in trial.config for n in names):
            continue
        key = ",".join(str(as_recorded(n, trial.config[n])) for n in names)
        existing = cache.get(key)
        if existing is not None and (not trial.ok or not isinstance(existing["time"], str)):
            continue  # keep the first ok record, or the first failure until an ok one comes
        # Kernel Tuner's own figure when the trial came from its cache (its median latency is ours)
        kt_time = trial.metric(KT_TIME)
        latency = kt_time if math.isfinite(kt_time) and kt_time > 0 else trial.metric(LATENCY)
        if trial.ok and not math.isfinite(latency):
            continue
        record: dict[str, Any] = {n: as_recorded(n, trial.config[n]) for n in names}
        record["time"] = latency if trial.ok else _kt_error_name(trial)
        if not trial.ok and objective != "time" and objective not in names and objective not in _RECORD_FIELDS:
            # Kernel Tuner reads a record's objective field first: a failure without it was a
            # KeyError there, on the first failed config of a cache tuned for GFLOPS/W
            record[objective] = record["time"]
        spread = (trial.metric(LATENCY), trial.metric("latency_p20_ms"), trial.metric("latency_p80_ms"))
        band = math.isfinite(spread[1]) or math.isfinite(spread[2])
        if trial.ok and (band or (latency == kt_time and spread[0] != kt_time)):
            # the repetitions' median and band go beside `time` (Kernel Tuner's own figure, for a trial
            # of its cache; the median itself otherwise, whose band the record has no field for and
            # a session's own trials lost on the way through a cache)
            record.update({name: value for name, value in zip(CARRIED_SPREAD, spread) if math.isfinite(value)})
        if not trial.ok:  # the status and reason Kernel Tuner's error names lose (see STATUS_KEY)
            record[STATUS_KEY] = trial.status.value
            if trial.measurement.message:
                record[MESSAGE_KEY] = trial.measurement.message
            bound = trial.metric(LATENCY_BOUND)
            if trial.status is Status.ABORTED and math.isfinite(bound):
                record[LATENCY_BOUND] = bound
        phased = any(ours in trial.timings for ours in KT_TIMINGS.values())
        for kt_name, ours in KT_TIMINGS.items():
            if ours in trial.timings:
                record[kt_name] = _finite(float(trial.timings[ours]) * 1000.0)
            elif phased and (kt_name != "compile_time" or not trial.ok):
                # the other timings Kernel Tuner writes, 0 as it writes a verification it did not make:
                # its simulation mode adds them up, and refuses a record without them. Not an ok
                # trial's compile time, which an import reads back as a figure to rank by, nor any for
                # a trial timed as a whole alone (a timeout's total: zeros would read back as its time)
                record[kt_name] = 0.0
        if trial.ok:
            # every figure of the trial, under Kernel Tuner's name where it has one: an import reads
            # numeric record fields back as metrics, so memory, registers or quality survive the trip
            for ours, value in trial.measurement.metrics.items():
                kt_name = inverse.get(ours, ours)
                if ours in DERIVED_METRICS or (ours == "compile_s" and "compile_time" in record):
                    continue  # (compile_s is the record's compile_time, which an import reads back as it: the
                    # only timing it makes a metric; a benchmark's own benchmark_s is a metric to keep)
                if kt_name in unwritable:
                    left_out[ours] = "a slot's" if kt_name in names else "a Kernel Tuner record field's"
                    continue
                owner = field_owner.setdefault(kt_name, ours)
                if owner != ours:  # (two metrics written under one field: the second overwrote the first)
                    left_out[ours] = f"the field of the metric {owner!r}"
                    continue
                if math.isfinite(float(value)):
                    record[kt_name] = float(value)
        # a replayed trial's time is the recording's: stamped "now", thirty replayed configs of
        # two seconds' compile each claimed to have finished within a third of a second today
        if RECORDED_AT in trial.measurement.details:  # a replayed trial: the recording's time, or none
            recorded_at = trial.measurement.details[RECORDED_AT]
            good = isinstance(recorded_at, (int, float)) and not isinstance(recorded_at, bool)
            finished = float(recorded_at) if good and math.isfinite(recorded_at) else None
        else:
            finished = trial.finished_at
        if finished:
            stamp = _calendar_stamp(finished)
            if stamp is not None:  # (a time no calendar holds: none written)
                record["timestamp"] = stamp
        cache[key] = record
        written[key] = trial
    document = {
        "device_name": str(session.device.get("name", "unknown")),
        "kernel_name": session.kernel,
        # (none for a kernel without a problem: Kernel Tuner compares a key it finds, and a null
        # refused the file for every problem size, where a cache without the key loads)
        **({"problem_size": problem_size} if problem_size is not None else {}),
        "tune_params_keys": names,
        "tune_params": tune_params,
        "objective": _recorded_objective(session),
        # the simulator's figures are a model's, not a measurement: the mark survives an import
        **({SIMULATED_KEY: True} if session.device.get("simulated") else {}),
        "cache": cache,
    }
    if notes is not None:
        if problem_left_out:
            shown = ", ".join(f"{k}={problem_of_file[k]!r}" for k in problem_left_out)
            notes.append(f"problem parameter{'s' if len(problem_left_out) > 1 else ''} {shown} "
                         f"{'are' if len(problem_left_out) > 1 else 'is'} not in the file: Kernel Tuner's "
                         "problem_size holds sizes only")
        notes.extend(f"metric {name!r} is not in the file: its name is {whose}" for name, whose in left_out.items())
        aborted = sum(trial.status is Status.ABORTED for trial in written.values())
        if aborted:
            notes.append(f"{aborted} aborted trial{'s are' if aborted != 1 else ' is'} written as InvalidConfig, "
                         f"Kernel Tuner's nearest error name (it has none for a timing stopped above a latency "
                         f"limit); the status, reason and latency bound stay in the record's {STATUS_KEY}, "
                         f"{MESSAGE_KEY} and {LATENCY_BOUND} fields, which an import here reads back")
    return json.dumps(document, indent=1, default=str) + "\n", len(cache)


#: What a spreadsheet reads as the start of a formula in a cell (OWASP's list).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _inert_cell(text: str) -> str:
    """Free text (a trial's message, written by the benchmark or the file) as a cell a spreadsheet
    shows and never evaluates: ``=HYPERLINK(...)`` or ``@SUM(...)`` in a message became a live
    formula in the exported table. Such text gets a leading apostrophe, as spreadsheets themselves
    write a text cell that looks like a formula. A control or bidi character is written as its
    escape (:func:`with_hidden_escaped`): a raw ESC reached the terminal of whoever printed the
    file, and a line break hid a formula behind the first line's start. (A carriage return at
    the start is such a character, escaped; a tab is not, and gets the apostrophe.)"""
    text = with_hidden_escaped(text)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def export_csv(session: Session, path: str | os.PathLike[str], notes: list[str] | None = None) -> int:
    """Write the session's trials as CSV (see :func:`render_csv`, which appends to ``notes``);
    returns the row count."""
    text = render_csv(session, notes)
    try:
        atomic_write(Path(path), lambda f: f.write(text))
    except OSError as exc:
        raise write_error(f"{path}: cannot write ({exc.strerror or exc})", exc) from None
    return len(session.trials)


def _unique_headings(fixed: Sequence[str], slots: Sequence[str], metrics: Sequence[str]) -> list[str]:
    """The headings of the fixed columns, the slots and the metrics, each different from every other.

    A slot or metric named like a fixed column (``status``, ``id``), or a slot and a metric of one
    name, gave two columns of that heading, and a reader that keys a row by heading (every
    spreadsheet lookup, ``csv.DictReader``) kept one of them. Such a slot becomes ``slot.NAME``, such
    a metric ``metric.NAME`` (as a sweep's problem parameters are ``problem.NAME``), with a number
    added in the unlikely case that this is taken too."""
    metric_set, slot_set = set(metrics), set(slots)
    wanted = [*fixed,
              *(f"slot.{n}" if n in fixed or n in metric_set else n for n in slots),
              *(f"metric.{n}" if n in fixed or n in slot_set else n for n in metrics)]
    out: list[str] = []
    taken: set[str] = set()
    for name in wanted:
        heading, number = name, 2
        while heading in taken or (heading != name and heading in wanted):
            heading, number = f"{name}.{number}", number + 1
        taken.add(heading)
        out.append(heading)
    return out


def render_csv(session: Session, notes: list[str] | None = None) -> str:
    """One row per trial: index, id, status, each slot, each metric, message (text cells never a
    formula: see :func:`_inert_cell`), provenance (where the session's figures come from: simulated, replayed,
    recorded or measured, so a table passed on keeps the label every other view shows; last, so
    the columns before it stay where readers of earlier tables found them).

    Metrics the workbench knows come first in its canonical order, then any others alphabetically;
    a metric a trial did not report is an empty cell. A session measured at several problem sizes
    (a sweep) gets a ``problem.NAME`` column after the status for each parameter that differs
    between them, so every row says which size it ran at. Every heading is different
    (:func:`_unique_headings`); ``notes`` gets each one renamed so.
    """
    names = _slot_names(session)
    integers = recorded_integers(session)  # (a recording's whole numbers, as it held them)
    problems = problems_of(session)
    varying = [n for n in problems[0] if len({problem_key({n: p.get(n)}) for p in problems}) > 1] \
        if len(problems) > 1 else []
    seen: set[str] = set()
    for trial in session.trials:
        seen.update(trial.measurement.metrics)
    metrics = [m for m in METRIC_DIRECTION if m in seen] + sorted(seen - set(METRIC_DIRECTION))
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    fixed = ["index", "id", "status", *(f"problem.{n}" for n in varying), "message", "provenance"]
    origin = provenance(session.device)
    headings = _unique_headings(fixed, names, metrics)
    if notes is not None:
        plain = [*names, *metrics]
        notes.extend(f"column {heading!r} is the {'slot' if i < len(names) else 'metric'} {name!r} (its name "
                     "is another column's)" for i, (name, heading) in enumerate(zip(plain, headings[len(fixed):]))
                     if heading != name)
    writer.writerow([*fixed[:-2], *headings[len(fixed):], *fixed[-2:]])  # (the message and provenance last)
    for trial in session.trials:
        cells: list[Any] = [trial.index, trial.config.id, trial.status.value]
        if varying:
            problem = session.problem_of(trial)
            # a problem value may be text the file wrote (a mode, a layout name): inert as a message is
            cells += [_inert_cell(v) if isinstance(v, str) else v for v in (problem.get(n, "") for n in varying)]
        cells += [recorded_value(integers, n, trial.config.get(n, "")) for n in names]
        for m in metrics:
            value = trial.metric(m)
            cells.append(repr(value) if math.isfinite(value) else "")
        cells += [_inert_cell(trial.measurement.message), origin]
        writer.writerow(cells)
    return buffer.getvalue()
