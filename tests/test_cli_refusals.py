"""Refusals and failures the command line must say in one line, before it harms anything:
a picture never written over a session, a kernel spec's bad field named when it loads, a failed
run's cause printed, a resource table of failed compiles never taken for a complete one."""

from __future__ import annotations

import math
import json
import os

import shutil
import struct
from pathlib import Path

import pytest

from cli_errors import one_line_error

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = FIXTURES.parents[1]
EXAMPLES = ROOT / "docs" / "examples"


@pytest.fixture
def no_window(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """``gui`` with the window replaced by a recorder: the checks before it opens are under test."""
    from workbench.gui import app

    opened: list[tuple] = []
    monkeypatch.setattr(app, "main", lambda *a, **named: opened.append(a) or 0)
    return opened


def _a_session(tmp_path: Path) -> Path:
    session = FIXTURES / "session_golden.json"
    path = tmp_path / "mine.json"
    shutil.copy(session, path)
    return path


def test_screenshot_over_the_session_it_opens_is_refused_before_the_window(cli, tmp_path, no_window) -> None:
    session = _a_session(tmp_path)
    before = session.read_bytes()
    for force in ((), ("--force",)):  # --force too: it moved the session aside and wrote the picture there
        line = one_line_error(cli("gui", session, "--screenshot", session, "--quit-when-done", *force))
        assert "--screenshot" in line and "is the file this window opens" in line
        line = one_line_error(cli("gui", "--replay", session, "--screenshot", session, "--quit-when-done", *force))
        assert "is the file this window opens" in line
    assert session.read_bytes() == before and no_window == [] and not (tmp_path / "mine.json.bak").exists()


def test_a_backup_that_cannot_be_written_whole_leaves_nothing(tmp_path, monkeypatch) -> None:
    """A full disk during --force's copy left a cut-off FILE.bak, with the original's time, that
    looked like the backup; the next --force then kept its backup as FILE.2.bak."""
    import errno
    import shutil as shutil_module

    from workbench.core.errors import WorkbenchError, WriteFailed
    from workbench.core.io.output_files import backup_path, keep_backup

    target = tmp_path / "e.csv"
    target.write_text("x" * 100_000)

    def full_after_some(source, copy, *args, **kwargs):
        copy.write(source.read(5_000))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(shutil_module, "copyfileobj", full_after_some)
    with pytest.raises(WriteFailed, match=r"cannot keep a backup as e\.csv\.bak \(No space left on device\)"):
        keep_backup(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.csv"] and backup_path(target).name == "e.csv.bak"
    monkeypatch.undo()
    assert keep_backup(target).read_text() == "x" * 100_000
    fifo = tmp_path / "f.json"  # a FIFO put where the file was: refused at once, never waited on
    os.mkfifo(fifo)
    with pytest.raises(WorkbenchError, match=r"cannot keep a backup as f\.json\.bak \(.*f\.json is not a regular file\)"):
        keep_backup(fifo)
    assert not (tmp_path / "f.json.bak").exists()


def test_force_never_writes_over_an_existing_backup(cli, tmp_path) -> None:
    """``--force`` copied the replaced file to FILE.bak over whatever was there: a second --force
    lost the first backup, and a file of the person's own named so was silently overwritten."""
    from workbench.core.domain.session import load_session
    from workbench.core.io.output_files import backup_path

    session = tmp_path / "s.json"
    assert cli("tune", "transpose", "--backend", "sim", "--budget", "2", "--out", session, "--quiet").returncode == 0
    target = tmp_path / "x.json"
    target.write_text("mine\n")
    (tmp_path / "x.json.bak").write_text("precious\n")
    (tmp_path / "x.json.2.bak.journal").write_text("a journal\n")  # a backup's name takes its journal's too
    for n in (1, 2):
        done = cli("export", session, "--format", "json", "--out", target, "--force")
        assert done.returncode == 0, done.stderr
        target.write_text(f"mine {n}\n")
    assert (tmp_path / "x.json.bak").read_text() == "precious\n"
    assert (tmp_path / "x.json.3.bak").read_text() == "mine\n" and (tmp_path / "x.json.4.bak").read_text() == "mine 1\n"
    assert not (tmp_path / "x.json.2.bak").exists() and backup_path(target).name == "x.json.5.bak"
    for n in (1, 2):  # a session replaced twice keeps both sessions that were there, and says where
        done = cli("tune", "transpose", "--backend", "sim", "--budget", str(2 + n), "--out", session, "--force",
                   "--quiet")
        assert done.returncode == 0
        kept = tmp_path / ("s.json.bak" if n == 1 else "s.json.2.bak")
        assert f"kept the file that was there as {kept}" in done.stdout, done.stdout
    assert len(load_session(tmp_path / "s.json.bak").trials) == 2
    assert len(load_session(tmp_path / "s.json.2.bak").trials) == 3
    # import-kt said nothing of where --force kept the file (the name FILE.bak was promised, and taken)
    mine = tmp_path / "mine.txt"
    mine.write_text("mine\n")
    (tmp_path / "mine.txt.bak").write_text("precious\n")
    done = cli("import-kt", Path(__file__).parent / "fixtures" / "kt_cache_small.json", "--out", mine, "--force")
    assert done.returncode == 0, done.stderr
    assert f"kept the file that was there as {tmp_path / 'mine.txt.2.bak'}" in done.stdout, done.stdout
    assert (tmp_path / "mine.txt.2.bak").read_text() == "mine\n" and (tmp_path / "mine.txt.bak").read_text() == "precious\n"


def test_screenshot_over_a_file_that_is_not_a_picture_needs_force(cli, tmp_path, no_window) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("notes\n")
    pic = tmp_path / "pic.png"
    pic.write_text("not a picture\n")
    for target in (notes, pic):
        line = one_line_error(cli("gui", "--screenshot", target, "--quit-when-done"))
        assert "not a screenshot of this program" in line and "--force" in line
    assert notes.read_text() == "notes\n" and pic.read_text() == "not a picture\n" and no_window == []
    assert cli("gui", "--screenshot", notes, "--force", "--quit-when-done").returncode == 0
    assert (tmp_path / "notes.txt.bak").read_text() == "notes\n"  # kept, as every command does
    assert len(no_window) == 1


def test_a_screenshot_is_never_written_where_a_runs_journal_waits(cli, tmp_path, no_window) -> None:
    """With --force, the picture moved a session being written aside and took its name, beside
    the run's journal: once the run was stopped, no command opened the session or its journal
    ("not UTF-8 text"). Refused as an export there is, --force or not."""
    from workbench.core.domain.session import journal_path

    session = tmp_path / "s.json"
    session.write_text("{}")
    journal_path(session).write_text("")
    for force in ((), ("--force",)):
        line = one_line_error(cli("gui", "--screenshot", session, "--quit-when-done", *force))
        assert line.startswith(f"error: --screenshot {session}: the journal of a run is beside it"), line
        assert "a screenshot there would leave those trials unreadable" in line
    assert session.read_text() == "{}" and no_window == [] and not (tmp_path / "s.json.bak").exists()

def _png(*text_chunks: bytes) -> bytes:
    """A PNG file's start: its signature, the given tEXt chunks, then image data."""
    import struct

    chunks = b"".join(struct.pack(">I", len(data)) + b"tEXt" + data + b"\0" * 4 for data in text_chunks)
    return b"\x89PNG\r\n\x1a\n" + chunks + struct.pack(">I", 4) + b"IDAT" + b"\0" * 8


def test_an_earlier_screenshot_is_replaced_without_force_a_persons_picture_is_not(cli, tmp_path, no_window) -> None:
    """Any PNG signature was taken for an earlier screenshot: a person's photo.png was replaced
    without a copy kept. Only a picture carrying the window's mark is its own."""
    from workbench.core.io.screenshots import SCREENSHOT_MARK, seal

    shot = tmp_path / "shot.png"
    shot.write_bytes(seal(_png(b"Author\0someone")))
    assert cli("gui", "--screenshot", shot, "--quit-when-done").returncode == 0
    assert no_window and not (tmp_path / "shot.png.bak").exists()
    photo = tmp_path / "photo.png"
    drawn_on = seal(_png()).replace(b"IDAT" + b"\0" * 8, b"IDAT" + b"\1" * 8)  # a screenshot someone drew on
    note = struct.pack(">I", 9) + b"tEXt" + b"Comment\0x" + b"\0" * 4
    annotated = seal(_png()).replace(b"\0\0\0\x04IDAT", note + b"\0\0\0\x04IDAT")  # a text chunk of theirs
    for data in (_png(), _png(b"Software\0another program"), _png(b"Software\0" + SCREENSHOT_MARK.encode()),
                 drawn_on, seal(_png()) + b"appended", annotated):
        photo.write_bytes(data)
        line = one_line_error(cli("gui", "--screenshot", photo, "--quit-when-done"))
        assert "not a screenshot of this program" in line and photo.read_bytes() == data
    assert len(no_window) == 1


def test_a_screenshot_sealed_by_its_image_data_alone_is_ours_while_nothing_follows_its_end(tmp_path) -> None:
    import hashlib

    from workbench.core.io.screenshots import SCREENSHOT_MARK, is_own_screenshot

    end = struct.pack(">I", 0) + b"IEND" + b"\0" * 4
    earlier = _png(b"Software\0" + f"{SCREENSHOT_MARK} sha256:{hashlib.sha256(bytes(4)).hexdigest()}".encode()) + end
    (tmp_path / "a.png").write_bytes(earlier)
    (tmp_path / "b.png").write_bytes(earlier + b"appended")
    assert is_own_screenshot(tmp_path / "a.png") and not is_own_screenshot(tmp_path / "b.png")


def test_a_failed_picture_write_leaves_the_file_there_and_says_why(tmp_path, monkeypatch) -> None:
    """A full disk left the file there, but printed libpng's own "libpng error: Write Error" line
    and an error line that gave no cause."""
    import errno

    from workbench.core.io.screenshots import is_own_screenshot
    from workbench.gui import app

    class Failing:
        def save(self, device, fmt: str) -> bool:
            device.write(b"half")  # what an encoding that breaks off leaves
            return False

    class Working:
        def save(self, device, fmt: str) -> bool:
            device.write(_png())
            return True

    target = tmp_path / "shot.png"
    target.write_bytes(b"earlier")
    assert app._save_picture(Failing(), target) == "the picture could not be encoded as PNG"
    assert target.read_bytes() == b"earlier" and [p.name for p in tmp_path.iterdir()] == ["shot.png"]
    real_fsync = os.fsync

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(app.os, "fsync", disk_full)
    assert app._save_picture(Working(), target) == "No space left on device"
    assert target.read_bytes() == b"earlier" and [p.name for p in tmp_path.iterdir()] == ["shot.png"]
    monkeypatch.setattr(app.os, "fsync", real_fsync)
    assert app._save_picture(Working(), target) is None
    assert is_own_screenshot(target) and [p.name for p in tmp_path.iterdir()] == ["shot.png"]


def test_a_spec_with_a_bad_dtype_is_one_line_naming_file_line_and_field(cli, tmp_path) -> None:
    import json

    example = Path(__file__).resolve().parents[1] / "docs" / "examples" / "saxpy"
    spec = json.loads((example / "saxpy.kernel.json").read_text())
    spec["args"][0]["dtype"] = "float128x"
    (tmp_path / "saxpy.kernel.json").write_text(json.dumps(spec, indent=1))
    shutil.copy(example / "saxpy.cu", tmp_path / "saxpy.cu")
    for args in (("kernels", "--kernel-dir", tmp_path),
                 ("tune", "saxpy", "--kernel-dir", tmp_path, "--backend", "sim", "--executor", "inline",
                  "--budget", "3", "--out", tmp_path / "s.json")):
        line = one_line_error(cli(*args))
        assert "saxpy.kernel.json:" in line and "args[0].dtype" in line and "float128x" in line
    assert not (tmp_path / "s.json").exists()


WORKER_FAILS = '''
import multiprocessing, os, sys
if multiprocessing.current_process().name.startswith("workbench-"):  # only in a pool's worker, as a missing
    # device would (not in the process that reads the declarations)
    {failure}
SPACE = {{"a": [1, 2]}}
def measure(config):
    return {{"latency_ms": 1.0}}
'''


def _bench(tmp_path: Path, failure: str) -> Path:
    path = tmp_path / "bench.py"
    path.write_text(WORKER_FAILS.format(failure=failure))
    return path


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("quiet", [False, True])
def test_a_run_that_cannot_start_says_why_and_leaves_no_session_in_the_way(cli, tmp_path, quiet) -> None:
    bench = _bench(tmp_path, 'raise RuntimeError("no device in the worker")')
    out = tmp_path / "s.json"
    args = ["tune", bench, "--backend", "python", "--budget", "3", "--out", out] + (["--quiet"] if quiet else [])
    for _ in range(2):  # the retry is not refused by what the first attempt left
        done = cli(*args)
        assert done.returncode == 1, done.stderr
        errors = _error_lines(done.stderr)
        assert len(errors) == 1 and "RuntimeError: no device in the worker" in errors[0], done.stderr
        assert "Traceback" not in done.stderr and "0 trials" not in done.stdout
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.py"]


def test_a_worker_that_exits_without_a_report_is_described_by_its_last_output(cli, tmp_path) -> None:
    bench = _bench(tmp_path, 'print("cannot open the widget", file=sys.stderr, flush=True); os._exit(2)')
    done = cli("tune", bench, "--backend", "python", "--budget", "3", "--out", tmp_path / "s.json", "--quiet")
    assert done.returncode == 1
    assert _error_lines(done.stderr) == ["error: python backend failed to start: worker exited with code 2; "
                                         "its last output: cannot open the widget"]


def test_a_failed_start_over_a_forced_session_keeps_the_old_one(cli, tmp_path) -> None:
    from workbench.core.domain.session import load_session

    out = _a_session(tmp_path)
    trials = len(load_session(out).trials)
    assert trials
    bench = _bench(tmp_path, 'raise RuntimeError("no device")')
    done = cli("tune", bench, "--backend", "python", "--budget", "3", "--out", out, "--force", "--quiet")
    assert done.returncode == 1 and "no device" in done.stderr
    assert len(load_session(tmp_path / "mine.json.bak").trials) == trials  # --force kept it; nothing replaced it
    assert not out.exists()  # the failed start wrote no empty session in its place


def test_a_benchmark_that_calls_sys_exit_at_import_is_one_error_line(cli, tmp_path) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text('import sys\nsys.exit(3)\nSPACE = {"a": [1]}\ndef measure(config):\n    return {}\n')
    line = one_line_error(cli("tune", bench, "--backend", "python", "--budget", "2", "--out", tmp_path / "s.json"))
    assert "failed to import" in line and "sys.exit(3)" in line
    assert not (tmp_path / "s.json").exists()


def test_a_bool_is_not_a_latency(tmp_path) -> None:
    from workbench.backends.python import _metrics_of

    assert _metrics_of({"latency_ms": True}) == "measure() returned latency_ms=True: a bool is not a number of milliseconds"
    metrics, details = _metrics_of({"latency_ms": 2, "checked": True})
    assert metrics == {"latency_ms": 2.0} and details == {"checked": True}  # a flag is a detail, not a metric
    import numpy as np

    _, details = _metrics_of({"latency_ms": 2, "checked": np.bool_(False)})
    assert details == {"checked": False} and type(details["checked"]) is bool  # NumPy's flag too, as a flag


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_metric_that_is_not_a_finite_number_is_kept_as_text_and_the_measurement_stays(value) -> None:
    """Accepted before as a metric, whose infinity was saved as null and came back as NaN; failing
    the candidate instead would lose its latency (an exact result may report -inf dB of error)."""
    from workbench.backends.python import _metrics_of

    metrics, details = _metrics_of({"latency_ms": 2.0, "error_db": value})
    assert metrics == {"latency_ms": 2.0} and details["error_db"] == repr(value)
    assert details["notes"] == [f"error_db={value!r} is not a finite number: kept as text, not as a metric"]


def test_a_decimal_is_a_metric_and_an_integer_past_a_float_is_kept_as_text() -> None:
    """A Decimal latency was refused as "not a finite number > 0" (a Decimal is no numbers.Real),
    and an integer past a float's range in another metric failed the whole trial."""
    import decimal

    from workbench.backends.python import _metrics_of

    metrics, _ = _metrics_of({"latency_ms": decimal.Decimal("1.5"), "error": decimal.Decimal("0.25")})
    assert metrics == {"latency_ms": 1.5, "error": 0.25}
    metrics, details = _metrics_of({"latency_ms": 2.0, "states": 10**400, "odd": decimal.Decimal("sNaN"),
                                    "huge": 10**5000})  # (its repr raises past 4,300 digits)
    assert metrics == {"latency_ms": 2.0} and details["states"] == "an integer of 1,329 bits"
    assert details["huge"] == "an integer of 16,610 bits" and details["odd"] == "sNaN"
    assert details["notes"][0] == "states is a number a float cannot hold: kept as text, not as a metric"
    assert _metrics_of({"latency_ms": 10**400}) == "measure() returned 'latency_ms': a number a float cannot hold"
    from fractions import Fraction

    _, details = _metrics_of({"latency_ms": 2.0, "ratio": Fraction(10**5000, 3)})  # (its str() raises too)
    assert details["ratio"] == "a Fraction too large to write out"


def test_a_metric_name_no_session_would_open_with_fails_the_candidate_with_why() -> None:
    """The trial was recorded, and the session saved with it did not open again."""
    from workbench.backends.python import _metrics_of

    assert _metrics_of({"latency_ms": 2.0, "m" * 201: 1.0}) == \
        "measure() returned a metric name of 201 characters (at most 200)"
    metrics, _ = _metrics_of({"latency_ms": 2.0, "m" * 200: 1.0})
    assert "m" * 200 in metrics

@pytest.mark.parametrize("text, said", [
    # a spec whose TEMPLATE sits in a try block is a spec: its own exception is what is reported
    ("try:\n    import no_such_module_here\n    TEMPLATE = None\nexcept ImportError:\n"
     "    raise RuntimeError('needs no_such_module_here')\n", "myk.py:5: RuntimeError: needs no_such_module_here"),
    ("import sys\nsys.exit(4)\nTEMPLATE = None\n", "myk.py:2: called sys.exit(4) while loading"),
    # neither kind of spec: not run, but the raise its author wrote is pointed at
    ("raise ValueError('line one')\n", "its top level raises at line 1"),
])
def test_a_python_spec_that_fails_to_load_says_why(cli, tmp_path, text, said) -> None:
    (tmp_path / "myk.py").write_text(text)
    line = one_line_error(cli("kernels", "--kernel-dir", tmp_path))
    assert said in line, line


@pytest.mark.parametrize("restriction, said", [
    ("block_size * itemz <= 1024", "unknown name 'itemz'"),
    ("__import__('os').system('touch pwned')", "restriction"),
])
def test_a_python_specs_bad_restriction_is_its_load_error_naming_the_file(cli, tmp_path, restriction, said) -> None:
    """A JSON spec's bad restriction names its file and line and stops the listing (exit 2); a
    Python spec's named neither file nor template, and check-kernels showed it as a row that failed."""
    root = Path(__file__).resolve().parents[1]
    for suffix in (".py", ".cu"):
        text = (root / "kernels" / f"vector_add{suffix}").read_text()
        (tmp_path / f"myadd{suffix}").write_text(text.replace('name="vector_add"', 'name="myadd"'))
    spec = tmp_path / "myadd.py"
    assert "restrictions=RESTRICTIONS," in spec.read_text()
    spec.write_text(spec.read_text().replace("restrictions=RESTRICTIONS,", f"restrictions=({restriction!r},),", 1))
    for command in ("kernels", "check-kernels"):
        result = cli(command, "--kernel-dir", tmp_path)
        line = one_line_error(result)
        assert result.returncode == 2 and line.startswith(f"error: {spec}: template 'myadd': ") and said in line, line
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


@pytest.mark.parametrize(
    "args, expected",
    [
        (["tune", "vector_add", "--budget", "abc", "--out", "x.json"],
         "error: argument --budget: invalid int value: 'abc' (python main.py tune --help)"),
        (["tune", "vector_add", "--bogus", "--out", "x.json"],
         "error: unrecognized arguments: --bogus (python main.py tune --help)"),
        (["tune", "vector_add", "--backend", "foo"], "error: argument --backend: invalid choice: 'foo'"),
        (["frobnicate"], "error: argument command: invalid choice: 'frobnicate'"),
        (["--bogus"], "error: unrecognized arguments: --bogus (python main.py --help)"),
        (["export", "a.json"], "error: the following arguments are required: --out"),
    ],
)
def test_usage_errors_are_one_line_naming_the_help_that_shows_the_usage(cli, args: list[str], expected: str) -> None:
    """argparse's own error prints the whole usage (twenty lines for tune) above the line that matters."""
    line = one_line_error(cli(*args))
    assert line.startswith(expected)
    assert line.endswith("--help)")


@pytest.mark.parametrize(
    "args, guess",
    [
        (["tune", "vector_add", "--budegt", "5"], "unrecognized arguments: --budegt 5; did you mean --budget? "),
        (["tune", "vector_add", "--max-latency-mss=3"], "; did you mean --max-latency-ms? "),
        (["show", "a.json", "--jsno"], "unrecognized arguments: --jsno; did you mean --json? "),
        (["tune", "vector_add", "--backend", "smi"], "; did you mean 'sim'? "),
        (["tnue"], "invalid choice: 'tnue' (choose from "),
        (["tnue"], "; did you mean 'tune'? (python main.py --help)"),
        # a prefix is no flag: --js was taken for --json, and would change meaning with a --json-lines
        (["show", "a.json", "--js"], "unrecognized arguments: --js; did you mean --json? "),
        (["tune", "vector_add", "--bud", "3"], "unrecognized arguments: --bud 3; did you mean --budget? "),
    ],
)
def test_a_misspelt_flag_or_choice_names_the_close_one(cli, args: list[str], guess: str) -> None:
    """A person who mistyped a flag should not have to read the whole --help to find its spelling."""
    assert guess in one_line_error(cli(*args))


def test_the_guess_reads_the_choices_as_every_python_lists_them() -> None:
    """Python 3.12.8+ and 3.13.1+ list the choices without quotes; the guess read only 3.11's."""
    from workbench.cli.parser import build_parser

    parser = build_parser()
    for listed in ("'tune', 'show', 'export'", "tune, show, export"):
        guess = parser._guess(f"argument command: invalid choice: 'tnue' (choose from {listed})")  # type: ignore[attr-defined]
        assert guess == "; did you mean 'tune'?", listed


def test_nothing_is_guessed_when_nothing_is_close(cli) -> None:
    assert "did you mean" not in one_line_error(cli("tune", "vector_add", "--bogus"))
    assert "did you mean" not in one_line_error(cli("frobnicate"))


def test_help_still_prints_the_usage(cli) -> None:
    result = cli("tune", "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage: main.py tune") and "--budget" in result.stdout


@pytest.mark.parametrize(
    "args, expected",
    [
        (["{fixtures}/trivial_bench.py", "--gpu-model", "T4"],
         "--gpu-model applies to the sim backend (this session's python backend"),
        (["--replay", "{fixtures}/kt_cache_small.json", "--gpu-model", "T4"],
         "--gpu-model applies to the sim backend (the replay backend"),
        (["--replay", "{fixtures}/kt_cache_small.json", "--no-noise"], "--no-noise applies to the sim backend"),
        (["vector_add", "--backend", "sim", "--allow-mixed-gpus"], "--allow-mixed-gpus applies to the cuda backend"),
        (["vector_add", "--allow-mixed-gpus"],  # auto: sim on this machine, said once resolved
         "--allow-mixed-gpus applies to the cuda backend (this session's sim backend"),
        (["vector_add", "--backend", "cuda", "--no-noise"], "--no-noise applies to the sim backend (the cuda"),
        (["--replay", "{fixtures}/kt_cache_small.json", "--resources", "estimated"],
         "--resources applies to the sim backend (the replay backend models no resources)"),
        # a limit on the time a lookup takes: trials timed out or not by the replaying machine's speed
        (["--replay", "{fixtures}/kt_cache_small.json", "--timeout", "0.001"],
         "--timeout applies to the cuda, sim and python backends (the replay backend reads recorded figures"),
        (["--replay", "{fixtures}/kt_cache_small.json", "--compile-timeout", "5"],
         "--compile-timeout applies to the cuda, sim and python backends (the replay backend compiles nothing)"),
        (["--replay", "{fixtures}/kt_cache_small.json", "--kernel-dir", "{fixtures}"],
         "--kernel-dir applies to the cuda, sim and python backends (the replay backend loads no template"),
    ],
)
def test_a_flag_the_backend_would_ignore_is_refused(cli, tmp_path: Path, args: list[str], expected: str) -> None:
    out = tmp_path / "x.json"
    line = one_line_error(cli("tune", *[a.replace("{fixtures}", str(FIXTURES)) for a in args], "--budget", "2",
                              "--out", out))
    assert expected in line
    assert list(tmp_path.iterdir()) == []  # no session, journal or lock left


@pytest.mark.parametrize("flags", [["--backend", "sim"], ["--budget", "5"], ["--seed", "1"], ["--strategy", "random"],
                                   ["--gpu-model", "T4"], ["--set", "n=4096"]])
def test_gui_run_flags_without_a_run_are_refused(cli, tmp_path: Path, no_window, flags: list[str]) -> None:
    line = one_line_error(cli("gui", _a_session(tmp_path), *flags))
    assert f"{flags[0]} applies to a run the window starts" in line and no_window == []


def test_gui_run_defaults_reach_the_window(cli, no_window) -> None:
    assert cli("gui", "--run", "vector_add").returncode == 0
    run = no_window[0][1]
    assert (run["backend"], run["budget"], run["seed"]) == ("auto", 100, 0)
    assert no_window[0][4] is False  # not in presentation mode unless asked
    assert cli("gui", "--presentation").returncode == 0 and no_window[1][4] is True


def test_gui_set_picks_the_size_of_a_sweep_recording_that_the_refusal_asks_for(cli, no_window) -> None:
    """A sweep recording replayed by ``gui --replay`` was refused with "choose it with --set n=VALUE",
    a flag ``gui`` did not have: it has it now, for --replay and --run alike."""
    assert cli("gui", "--replay", FIXTURES / "kt_cache_small.json", "--set", "n=65536", "--set", "m=2").returncode == 0
    assert no_window[0][1]["problem"] == {"n": 65536, "m": 2}
    assert cli("gui", "--run", "vector_add").returncode == 0 and "problem" not in no_window[1][1]


def test_set_is_refused_for_a_python_benchmark_whose_measure_gets_no_problem(cli, tmp_path: Path) -> None:
    """``measure(config)`` sees only its file's PROBLEM: a --set value (a known name or a typo) was
    stored in the session and never reached the benchmark."""
    bench = str(FIXTURES / "trivial_bench.py")
    out = tmp_path / "b.json"
    for assignment in ("n=5", "m=1"):
        line = one_line_error(cli("tune", bench, "--set", assignment, "--budget", "2", "--out", out))
        assert f"--set {assignment}: " in line and "python benchmark" in line
    assert not out.exists()
    assert cli("tune", bench, "--budget", "2", "--quiet", "--out", out).returncode == 0
    line = one_line_error(cli("tune", bench, "--resume", "--out", out, "--set", "n=5", "--budget", "2"))
    assert "--set n=5: trivial_bench is a python benchmark" in line


def test_trials_a_failed_save_would_lose_are_kept_apart_in_a_file_of_their_own(cli, tmp_path, monkeypatch) -> None:
    """Another run that took the file over (its lock removed by another hand) left this run's last
    trials in neither the file nor a journal, and the line said the journal kept them: a
    `tune --resume` of it found the other run's trials alone."""
    from workbench.core.domain import session as session_module
    from workbench.core.domain.session import journal_path, load_session

    out = tmp_path / "q.json"
    real_save = session_module.save_session

    def taken_over(session, path, **kwargs):
        if Path(path) == out:  # the run's own file: its journal gone, its save refused
            journal_path(out).unlink(missing_ok=True)
            raise session_module.WorkbenchError(f"{out} changed since it was opened (another run's)")
        return real_save(session, path, **kwargs)

    monkeypatch.setattr(session_module, "save_session", taken_over)
    done = cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--budget", "4", "--quiet",
               "--out", out)
    last = done.stderr.strip().splitlines()[-1]
    kept = tmp_path / "q.unsaved.json"
    assert done.returncode == 1 and last.endswith(
        f"not saved to {out}; 4 trials of them are in neither {out} nor its journal, so the session is kept apart "
        f"as {kept} (tune --resume --out {kept} continues it)"), last
    monkeypatch.undo()
    assert len(load_session(kept).trials) == 4 and not out.exists()
    kept.write_text("a file of the person's own")  # never written over: the next name is taken
    monkeypatch.setattr(session_module, "save_session", taken_over)
    assert "kept apart as " + str(tmp_path / "q.unsaved-2.json") in cli(
        "tune", "vector_add", "--backend", "sim", "--executor", "inline", "--budget", "2", "--quiet", "--out", out).stderr
    assert kept.read_text() == "a file of the person's own"
    # a folder put at the file's name, the run's own journal whole: its trials are there, said so
    monkeypatch.undo()
    other = tmp_path / "f.json"

    def folder_put_there(session, path, **kwargs):
        if Path(path) == other:
            other.mkdir()
            raise session_module.WorkbenchError(f"{other} is a folder")
        return real_save(session, path, **kwargs)

    monkeypatch.setattr(session_module, "save_session", folder_put_there)
    done = cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--budget", "3", "--quiet",
               "--out", other)
    assert done.returncode == 1 and f"the journal {other}.journal keeps 3 trials" in done.stderr, done.stderr
    assert not (tmp_path / "f.unsaved.json").exists()


def test_a_full_disk_is_one_error_line_and_no_claim_that_the_session_was_written(tmp_path) -> None:
    """The journal's failed flush was raised again when it closed (a bare OSError replaced the
    line naming the file), and the summary still ended '-> FILE' for a file never written."""
    import re
    import resource
    import subprocess
    import sys

    def small_files() -> None:  # what a full disk does to the journal (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    # no bytecode written under the limit: a module compiled there (its source changed since the
    # last run) left a truncated .pyc that broke every later start ("marshal data too short")
    limited = {**os.environ, "WORKBENCH_SLOW_S": "0.001", "PYTHONDONTWRITEBYTECODE": "1"}

    out = tmp_path / "s.json"
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "tune", str(FIXTURES / "slow_bench.py"), "--budget",
                           "300", "--quiet", "--out", str(out)], capture_output=True, text=True, timeout=120,
                          preexec_fn=small_files, env=limited)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("error: ") and "cannot append to journal" in lines[0], lines
    assert "not saved to" in lines[-1] and "--resume" in lines[-1] and "->" not in done.stdout
    # how many the journal holds, said, as --resume will find them (one cut by the full disk is not)
    from workbench.core.domain.session import read_journal

    holds = re.search(r"the journal \S+ keeps (\d+) trials?, and tune --resume", lines[-1])
    assert holds and int(holds.group(1)) == len(read_journal(out)[1]) > 0, lines[-1]

    # continuing a session: the line counts what this run measured apart from what the file held

    kept = tmp_path / "kept.json"
    assert subprocess.run([sys.executable, str(ROOT / "main.py"), "tune", str(FIXTURES / "slow_bench.py"), "--budget",
                           "3", "--quiet", "--out", str(kept)], capture_output=True, timeout=120,
                          env={**os.environ, "WORKBENCH_SLOW_S": "0.001"}).returncode == 0
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "tune", str(FIXTURES / "slow_bench.py"), "--resume",
                           "--budget", "300", "--quiet", "--out", str(kept)], capture_output=True, text=True,
                          timeout=120, preexec_fn=small_files, env=limited)
    counted = re.search(r"(\d+) trials? measured by this run \((\d+) in the session\) not saved", done.stderr)
    assert done.returncode == 1 and counted, done.stderr
    assert int(counted.group(2)) == int(counted.group(1)) + 3



@pytest.mark.parametrize("made_again", [True, False], ids=["made-again", "removed"])
def test_a_candidate_that_removes_the_working_folder_loses_no_trial_silently(tmp_path, made_again) -> None:
    """A relative --out names a file of the folder the run started in. A candidate that removed
    that folder (a benchmark cleaning its build folder), and maybe made it again, left the run
    writing relative to a folder that no longer exists: every trial was lost, with two bare
    'No such file or directory' lines. Fixed at the start, the output is written where it was
    asked for, or the lines say which file could not be written and what it would have held."""
    import subprocess
    import sys

    work = tmp_path / "work"
    work.mkdir()
    bench = tmp_path / "clean.py"
    again = f"        os.mkdir({str(work)!r})\n" if made_again else ""
    bench.write_text("import os, shutil\nSPACE = {'k': [1, 2, 3, 4]}\n"
                     f"def measure(c):\n    if c['k'] == 2:\n        shutil.rmtree({str(work)!r})\n{again}"
                     "    return {'latency_ms': float(c['k'])}\n")
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "tune", str(bench), "--strategy", "grid",
                           "--budget", "4", "--quiet", "--out", "s.json"], capture_output=True, text=True,
                          timeout=120, cwd=work, env={**os.environ, "KERNEL_WORKBENCH_FORCE_NO_GPU": "1"})
    if made_again:
        assert done.returncode == 0, done.stderr
        from workbench.core.domain.session import load_session

        assert len(load_session(work / "s.json").trials) == 4
        assert sorted(os.listdir(work)) == ["s.json"]  # no lock or journal left behind
        assert done.stdout.strip().endswith("-> s.json"), done.stdout  # said as it was given
    else:
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert str(work / "s.json.journal") in lines[0] and "cannot append to journal" in lines[0], lines
        assert "not saved to s.json;" in lines[-1], lines  # (as it was given)


def test_a_continued_session_spelt_through_a_linked_folder_is_not_taken_for_its_out(tmp_path) -> None:
    """``--resume link/../s.json --out s.json`` names two files (the system goes up from the link's
    target); compared as text they were one, and the run continued the source in place, its
    --out never written. And a run continued from a file given relatively says its closing line
    whatever its candidates do to the working folder (the autosave check read it after the run:
    a bare 'No such file or directory', exit 2, for a run that had saved)."""
    import shutil
    import subprocess
    import sys

    from workbench.core.domain.session import load_session

    real, work = tmp_path / "real", tmp_path / "work"
    (real / "dir").mkdir(parents=True)
    work.mkdir()
    (work / "link").symlink_to(real / "dir")
    bench = tmp_path / "clean.py"
    bench.write_text("import os, shutil\nSPACE = {'k': [1, 2, 3, 4, 5, 6]}\n"
                     f"def measure(c):\n    if c['k'] == 5:\n        shutil.rmtree({str(work)!r})\n"
                     f"        os.mkdir({str(work)!r})\n"
                     "    return {'latency_ms': float(c['k'])}\n")
    env = {**os.environ, "KERNEL_WORKBENCH_FORCE_NO_GPU": "1"}

    def tune(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(ROOT / "main.py"), "tune", str(bench), "--strategy", "grid",
                               "--quiet", *args], capture_output=True, text=True, timeout=120, cwd=work, env=env)

    assert tune("--budget", "2", "--out", str(real / "s.json")).returncode == 0
    done = tune("--resume", "link/../s.json", "--out", "s.json", "--budget", "2")
    assert done.returncode == 0, done.stderr
    assert len(load_session(real / "s.json").trials) == 2 and len(load_session(work / "s.json").trials) == 4
    shutil.copy(work / "s.json", tmp_path / "t.json")
    done = tune("--resume", "../t.json", "--budget", "2")  # measures k=5, which makes the folder anew
    assert done.returncode == 0 and done.stdout.strip().endswith("-> ../t.json"), done.stderr
    assert len(load_session(tmp_path / "t.json").trials) == 6

def test_usage_errors_name_the_command_as_it_was_started(capsys) -> None:
    """The installed command's hint said 'python main.py', which that person does not have."""
    from workbench.cli.parser import build_parser

    for prog, hint in (("kernel-workbench", "(kernel-workbench tune --help)"), ("main.py", "(python main.py tune --help)")):
        with pytest.raises(SystemExit):
            build_parser(prog).parse_args(["tune", "--budget", "x"])
        assert capsys.readouterr().err.strip().endswith(hint)


@pytest.mark.parametrize("make", [os.mkdir, os.mkfifo, lambda path: os.symlink(str(path) + ".nowhere", path)])
def test_a_journal_name_taken_by_a_folder_or_a_pipe_is_refused_before_the_run(cli, tmp_path: Path, make) -> None:
    """A folder at FILE.journal let the run start and fail at its first write (exit 1, after the
    workers had started); it is bad input, said before anything runs, and left where it is. A link
    to nothing there was removed by the run."""
    out = tmp_path / "s.json"
    make(tmp_path / "s.json.journal")
    result = cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--budget", "2", "--out", out)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "its journal's name, s.json.journal, is taken by" in result.stderr and not out.exists()
    assert os.path.lexists(tmp_path / "s.json.journal")


@pytest.mark.parametrize("args, said", [
    (["tune", "saxpy", "--kernel-dir", "", "--backend", "sim"], "--kernel-dir: an empty name names no folder"),
    (["kernels", "--kernel-dir", " "], "--kernel-dir: an empty name names no folder"),
    (["tune", "vector_add", "--backend", "sim", "--gpu-model", ""], "--gpu-model: an empty name names no GPU model"),
    (["tune", "vector_add", "--backend", "sim", "--strategy", ""], "--strategy: an empty name names no strategy"),
])
def test_an_empty_name_is_refused_not_taken_for_the_default(cli, tmp_path: Path, monkeypatch, args: list[str],
                                                           said: str) -> None:
    """``--kernel-dir ''`` resolved to the current folder, whose code a run then loaded (a saxpy
    there ran); an empty ``--gpu-model`` or ``--strategy`` ran the default without a word."""
    (tmp_path / "saxpy.cu").write_text((EXAMPLES / "saxpy" / "saxpy.cu").read_text())
    (tmp_path / "saxpy.kernel.json").write_text((EXAMPLES / "saxpy" / "saxpy.kernel.json").read_text())
    monkeypatch.chdir(tmp_path)
    result = cli(*args, "--budget", "2", "--out", str(tmp_path / "s.json")) if args[0] == "tune" else cli(*args)
    assert result.returncode == 2 and result.stderr == f"error: {said}" + (
        " (. for the current one)\n" if "kernel-dir" in said else "\n")
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("args", [
    ["show", "."], ["show", ""], ["show", "/"], ["show", "./"],
    ["export", "{s}", "--format", "json", "--out", "."],
    ["export", "{s}", "--format", "header", "--out", "{d}/sub/"],
    ["tune", "vector_add", "--backend", "sim", "--budget", "2", "--out", "{d}/tsub/"],
    ["tune", "--remeasure-aborted", "--out", "."],
    ["show", "--portability", ".", "{s}"],
    ["tune", "vector_add", "--backend", "sim", "--budget", "2", "--out", "{d}/sub/."],  # Path() drops the "."
])
def test_a_file_argument_that_names_a_folder_by_its_form_is_one_line(cli, tmp_path: Path, args: list[str]) -> None:
    """``show .`` was a ValueError traceback (a path with an empty name has no journal name) and
    ``--out sub/`` wrote a file called ``sub``: a path object drops the trailing slash."""
    session = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--budget", "2", "--out", session,
               "--quiet").returncode == 0
    result = cli(*[a.format(s=session, d=tmp_path) for a in args])
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "names a folder" in result.stderr or "names no file" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_resume_into_another_name_of_the_same_file_or_with_force_alone_is_refused(cli, tmp_path: Path) -> None:
    """``--resume A --out B`` with B a link to A wrote A under its own name (a hard link B kept the
    old trials, a symbolic one was left as it was), and ``--resume A --force`` ignored --force."""
    source = tmp_path / "a.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--budget", "2", "--out", source,
               "--quiet").returncode == 0
    before = source.read_bytes()
    os.link(source, tmp_path / "hard.json")
    (tmp_path / "soft.json").symlink_to(source)
    for extra, said in ((["--out", tmp_path / "hard.json"], "is another name (a hard link) of"),
                        (["--out", tmp_path / "soft.json"], "is a symbolic link"),
                        (["--force"], "choose one"), (["--out", source, "--force"], "choose one")):
        result = cli("tune", "--resume", source, "--budget", "1", "--quiet", *extra)
        assert result.returncode == 2 and said in result.stderr and result.stderr.count("\n") == 1
    assert source.read_bytes() == before and (tmp_path / "hard.json").samefile(source)
    into_other = cli("tune", "--resume", source, "--budget", "1", "--quiet", "--out", tmp_path / "b.json")
    assert into_other.returncode == 0 and source.read_bytes() == before


def test_resume_through_a_linked_folder_is_the_same_file_in_place(cli, tmp_path: Path) -> None:
    """--resume real/a.json --out link/a.json (link -> real) is the same path, not a hard link:
    it was refused as 'another name (a hard link)'."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    source = tmp_path / "real" / "a.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--budget", "2", "--out", source,
               "--quiet").returncode == 0
    result = cli("tune", "--resume", source, "--budget", "1", "--quiet", "--out", tmp_path / "link" / "a.json")
    assert result.returncode == 0, result.stderr
    assert json.loads(source.read_text())["trials"].__len__() == 3


@pytest.mark.parametrize("flag", ["--sizes", "--set"])
def test_a_size_the_templates_default_config_does_not_fit_is_searched_without_it(cli, tmp_path, flag) -> None:
    """A size whose restrictions exclude the template's default config was refused, though other
    configs fit it: such a size could not be tuned without editing the template. It is searched
    now, without a default to compare with, and the run says so once."""
    value = "cols=8,1024" if flag == "--sizes" else "cols=8"
    out = tmp_path / "s.json"
    done = cli("tune", "softmax", "--backend", "sim", flag, value, "--budget", "3", "--out", out)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "default config is not valid" in line]
    assert len(said) == 1 and "cols=8" in said[0] and "searched without it" in said[0]
    assert 'violates restriction "threads_per_row * vector_width <= cols"' in said[0]
    from workbench.core.domain.session import load_session

    session = load_session(out)
    small = [t for t in session.trials if session.problem_of(t)["cols"] == 8]
    assert len(small) == 3 and all(t.ok for t in small)


@pytest.mark.parametrize("flag", ["--sizes", "--set"])
def test_a_size_no_config_fits_is_refused_naming_the_restriction(cli, tmp_path, flag) -> None:
    """It was blamed on the template's default, with advice to change it, which could not help."""
    value = "cols=2,1024" if flag == "--sizes" else "cols=2"
    line = one_line_error(cli("tune", "softmax", "--backend", "sim", flag, value, "--budget", "2",
                              "--out", tmp_path / "s.json"))
    assert "no config is valid at" in line and "cols=2" in line and "change the template's default" not in line
    assert 'violates restriction "threads_per_row * vector_width <= cols"' in line
    assert not (tmp_path / "s.json").exists()


def test_a_session_whose_budget_is_used_up_names_the_flag_that_gives_more(cli, tmp_path) -> None:
    out = tmp_path / "v.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "3",
               "--executor", "inline", "--quiet", "--out", out).returncode == 0
    done = cli("tune", "--resume", out, "--executor", "inline", "--quiet")
    assert done.returncode == 2
    assert "the session already has 3 of its 3 evaluations; give a budget to measure more (--budget N)" in done.stderr


def test_sessions_and_exports_into_the_autosave_folder_are_refused(cli, tmp_path, landscape) -> None:
    """A session written there was offered at the window's next start as a crashed run, and
    recovering it, then saving it elsewhere, removed the person's file."""
    autosave = tmp_path / "autosave"
    env = {"KERNEL_WORKBENCH_AUTOSAVE_DIR": str(autosave)}
    autosave.mkdir()
    target = autosave / "mine.json"
    line = one_line_error(cli("tune", "vector_add", "--backend", "sim", "--budget", "2", "--resources", "estimated",
                              "--out", target, env=env))
    assert "autosave folder" in line and not target.exists()
    elsewhere = tmp_path / "mine.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--budget", "2", "--resources", "estimated",
               "--out", elsewhere, env=env).returncode == 0
    # nor an export or an imported recording: every .json there is offered as a crashed run
    for argv in (["export", elsewhere, "--format", "json", "--out", autosave / "best.json"],
                 ["import-kt", landscape("pnpoly_RTX_3090.json"), "--out", autosave / "kt.json"]):
        assert "autosave folder" in one_line_error(cli(*argv, env=env))
    assert list(autosave.iterdir()) == []


def test_an_autosave_continued_into_a_file_of_ones_own_is_no_longer_offered(cli, tmp_path) -> None:
    """A window that quits by itself says to recover an autosave with tune --resume AUTOSAVE --out
    FILE; done so, the autosave stayed, and every later window offered it again as an unfinished
    run. Removed once FILE holds its trials, as the window's own recovery removes it; continued in
    place, it stays."""
    import shutil

    from workbench.core.domain.session import load_session

    autosave = tmp_path / "autosave"
    autosave.mkdir()
    env = {"KERNEL_WORKBENCH_AUTOSAVE_DIR": str(autosave)}
    made = tmp_path / "made.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--budget", "3", "--resources", "estimated",
               "--out", made, env=env).returncode == 0
    left = autosave / "vector_add-1.json"  # a window's unsaved run, as that folder holds it
    shutil.copy(made, left)
    assert cli("tune", "--resume", left, "--budget", "1", env=env).returncode == 0
    assert len(load_session(left).trials) == 4  # continued in place: still the autosave
    mine = tmp_path / "mine.json"
    done = cli("tune", "--resume", left, "--out", mine, "--budget", "2", env=env)
    assert done.returncode == 0, done.stderr
    assert f"note: removed the autosave {left.name}: its trials are in {mine} now" in done.stderr
    assert list(autosave.iterdir()) == [] and len(load_session(mine).trials) == 6
    # continued through a link of the person's to an autosave: neither the link nor the autosave
    # is removed (the link was, as "the autosave", and the autosave stayed to be offered again)
    shutil.copy(made, left)
    link = tmp_path / "link.json"
    link.symlink_to(left)
    done = cli("tune", "--resume", link, "--out", tmp_path / "other.json", "--budget", "1", env=env)
    assert done.returncode == 0 and "removed the autosave" not in done.stderr, done.stderr
    assert link.is_symlink() and left.exists()

def test_tune_help_lists_every_strategy_and_marks_the_default(cli) -> None:
    """It said "the benchmarked default", naming neither it nor the others; only a wrong name listed them."""
    from workbench.search.base import DEFAULT_PARETO_STRATEGY, DEFAULT_STRATEGY, STRATEGIES

    for command, default in (("tune", f"{DEFAULT_STRATEGY} (default; {DEFAULT_PARETO_STRATEGY} with --objectives)"),
                             ("gui", f"{DEFAULT_STRATEGY} (default),")):  # (gui has no --objectives to name)
        shown = " ".join(cli(command, "--help").stdout.split())
        assert default in shown, shown
        assert all(name in shown for name in STRATEGIES), shown


def test_a_negative_latency_is_refused_saying_what_a_latency_must_be() -> None:
    """Said as for NaN: "must be >= 0" read as if 0 were a latency, which the next line refuses."""
    from workbench.backends.python import _metrics_of

    assert _metrics_of({"latency_ms": -1.0}) == "measure() returned latency_ms=-1.0; it must be a finite number > 0"
    assert _metrics_of({"latency_ms": 1.0, "memory_mb": -1}) == "measure() returned memory_mb=-1.0; it must be >= 0"


@pytest.mark.parametrize("seed", ["-1", str(2**63)])
def test_check_kernels_refuses_a_seed_out_of_range_in_one_line(cli, seed: str) -> None:
    """A negative seed reached NumPy's generator and ended in a traceback."""
    line = one_line_error(cli("check-kernels", "--kernel", "vector_add", "--seed", seed))
    assert line == f"error: --seed {seed}: a seed is an integer from 0 to 2**63-1"


def test_check_kernels_refuses_a_table_time_limit_without_a_table_to_write(cli) -> None:
    """It was accepted and ignored, where every other flag that would be ignored is refused."""
    line = one_line_error(cli("check-kernels", "--kernel", "vector_add", "--table-time-limit", "5"))
    assert line == "error: --table-time-limit bounds --write-table; give that too, or drop it"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["--help"], ["tune", "--help"], ["kernels"]])
def test_standard_output_on_a_full_disk_is_named_and_fails_the_command(args) -> None:
    """`kernels > /dev/full` said "[Errno 28] No space left on device", naming no file, and the help
    texts exited 0 with their text lost: argparse drops a write error of its own."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, str(ROOT / "main.py"), *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60, env={**os.environ, "KERNEL_WORKBENCH_FORCE_NO_GPU": "1"})
    assert (done.returncode, done.stderr.strip()) == (1, "error: standard output: cannot write (No space left on device)")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_output_lost_to_a_full_disk_leaves_the_commands_own_errors_and_status(tmp_path) -> None:
    """As with a closed pipe, the command carries on when its output cannot be written: the first
    refused write ended it, so a broken spec's error and exit 2 were never said."""
    import subprocess
    import sys

    shutil.copytree(ROOT / "docs" / "examples" / "saxpy", tmp_path, dirs_exist_ok=True)  # one that lists
    (tmp_path / "bad.kernel.json").write_text("{broken")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, str(ROOT / "main.py"), "kernels", "--kernel-dir", str(tmp_path)],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
                              env={**os.environ, "KERNEL_WORKBENCH_FORCE_NO_GPU": "1"})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert any("bad.kernel.json" in line and "not valid JSON" in line for line in lines), lines
    assert lines[-1] == "error: standard output: cannot write (No space left on device)"


@pytest.mark.parametrize(("errno_name", "status"), [("ENOSPC", 1), ("EIO", 1), ("EACCES", 2)])
def test_a_write_the_machine_refuses_exits_1_and_a_path_a_person_gave_2(tmp_path, monkeypatch, capsys,
                                                                        errno_name, status) -> None:
    """A full disk exited 2 from export and import-kt, the status the docs keep for input to fix,
    and 1 from tune: a script that does not retry on 2 took a full disk for a usage error."""
    import errno

    from workbench.cli import main
    from workbench.core.io import export as export_module

    session = tmp_path / "s.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--executor", "inline",
                 "--budget", "2", "--quiet", "--out", str(session)]) == 0

    def refused(*_a, **_k):
        raise OSError(getattr(errno, errno_name), os.strerror(getattr(errno, errno_name)))

    monkeypatch.setattr(export_module, "atomic_write", refused)
    capsys.readouterr()
    assert main(["export", str(session), "--format", "json", "--out", str(tmp_path / "e.json")]) == status
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ") and "cannot write (" in line
    from workbench.cli import export as export_command
    from workbench.core.domain import session as session_module

    monkeypatch.setattr(export_command, "atomic_write", refused)  # the trial formats' writer
    assert main(["export", str(session), "--format", "kt-cache", "--out", str(tmp_path / "c.json")]) == status
    assert main(["export", str(session), "--out", str(tmp_path / "t.csv")]) == status
    capsys.readouterr()
    assert main(["export", str(session), "--format", "kt-cache", "--out", str(tmp_path / "ok.json")]) == status
    monkeypatch.undo()
    assert main(["export", str(session), "--format", "kt-cache", "--out", str(tmp_path / "k.json")]) == 0
    monkeypatch.setattr(session_module, "atomic_write", refused)  # a session's save: import-kt
    assert main(["import-kt", str(tmp_path / "k.json"), "--out", str(tmp_path / "i.json")]) == status
    assert not (tmp_path / "i.json").exists()
    monkeypatch.undo()
    from workbench.core.io import dispatch

    sweep = tmp_path / "sw.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--executor", "inline",
                 "--sizes", "n=4096,65536", "--budget", "2", "--quiet", "--out", str(sweep)]) == 0
    monkeypatch.setattr(dispatch, "atomic_write", refused)  # it gave the bare "[Errno 28] ...", exit 2
    capsys.readouterr()
    assert main(["export", str(sweep), "--format", "dispatch", "--out", str(tmp_path / "d.h")]) == status
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'd.h'}: cannot write (")
    monkeypatch.undo()
    from workbench.core.io import session_lock

    class RefusingOs:  # the lock file's first write, on a full disk (the first write of tune and import-kt)
        def __getattr__(self, name):
            return refused if name == "write" else getattr(os, name)

    monkeypatch.setattr(session_lock, "os", RefusingOs())
    assert main(["tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--executor", "inline",
                 "--budget", "2", "--quiet", "--out", str(tmp_path / "n.json")]) == status
    assert "cannot write the lock file" in capsys.readouterr().err


def test_a_size_where_a_restriction_cannot_be_computed_says_so_with_why(cli, tmp_path) -> None:
    """``1 // (n - 64)`` at n = 64 rules out every config by a division by zero: the refusal said
    only that the default violates it, as if it computed false."""
    folder = tmp_path / "k"
    shutil.copytree(EXAMPLES / "saxpy", folder)
    spec_file = next(folder.glob("*.kernel.json"))
    spec = json.loads(spec_file.read_text())
    spec["restrictions"] = [*spec.get("restrictions", []), "1 // (n - 64) >= 0"]
    spec_file.write_text(json.dumps(spec))
    line = one_line_error(cli("tune", "saxpy", "--kernel-dir", folder, "--backend", "sim", "--set", "n=64",
                              "--budget", "2", "--out", tmp_path / "s.json"))
    assert "no config is valid at n=64" in line
    assert ("restriction '1 // (n - 64) >= 0' cannot be computed (integer division or modulo by zero), so no config "
            "is valid") in line


def test_a_gpu_session_continued_where_no_gpu_is_usable_says_what_to_do(cli, tmp_path) -> None:
    """The refusal was the driver's line alone; the simulator's said to start a new run."""
    from workbench.backends.cuda_env import probe

    if not probe().missing():
        pytest.skip("a CUDA device is usable here: the session continues")
    session = tmp_path / "s.json"
    shutil.copyfile(ROOT / "resources" / "sessions" / "vector_add_NVIDIA_H200.json", session)
    before = session.read_bytes()
    line = one_line_error(cli("tune", "--resume", session, "--budget", "2"))
    assert line.endswith("; this session was measured on a GPU: continue it where that GPU is usable, or replay its "
                         "trials into a new session (tune --replay SESSION)"), line
    assert session.read_bytes() == before
    # the advice is for a device that is not usable, not for any other fault of the continued run
    doc = json.loads(before)
    doc["kernel"] = doc["backend"]["options"]["kernel"] = "my_kernel"
    session.write_text(json.dumps(doc))
    line = one_line_error(cli("tune", "--resume", session, "--budget", "2"))
    assert "unknown template 'my_kernel'" in line and "measured on a GPU" not in line, line


def test_a_runs_failure_cause_is_printed_inert(cli, tmp_path) -> None:
    """The cause of a run whose every config failed to compile was printed raw: a template's
    #error text with an escape sequence drove the terminal."""
    shutil.copytree(ROOT / "docs" / "examples" / "saxpy", tmp_path / "k")
    source = tmp_path / "k" / "saxpy.cu"
    source.write_text("#error \x1b]0;PWNED\x07 broken\n" + source.read_text())
    done = cli("tune", "saxpy", "--kernel-dir", tmp_path / "k", "--backend", "sim", "--executor", "inline",
               "--budget", "12", "--quiet", "--out", tmp_path / "s.json")
    assert done.returncode == 1 and "\x1b" not in done.stderr and "\\x1b]0;PWNED\\x07 broken" in done.stderr, done.stderr


def test_a_file_put_where_the_screenshot_goes_during_the_run_is_not_written_over(tmp_path, capsys) -> None:
    """The picture's target was checked before the window opened only: a person's file saved there
    during the run was replaced by the picture, with no backup and nothing said."""
    from workbench.core.errors import WorkbenchError
    from workbench.core.io.screenshots import seal
    from workbench.gui.app import _check_still_replaceable, _file_identity

    target = tmp_path / "shot.png"
    _check_still_replaceable(target, False, None)  # nothing there: written
    target.write_text("my own file")
    checked = _file_identity(target)
    _check_still_replaceable(target, True, checked)  # the file the command's --force check kept a backup of
    assert not (tmp_path / "shot.png.bak").exists()
    target.unlink()
    target.write_text("my own file, saved during the run")
    with pytest.raises(WorkbenchError, match="is not a screenshot of this program is there now"):
        _check_still_replaceable(target, False, None)
    assert target.read_text() == "my own file, saved during the run"
    _check_still_replaceable(target, True, None)
    assert (tmp_path / "shot.png.bak").read_text() == "my own file, saved during the run"
    assert "kept as shot.png.bak" in capsys.readouterr().err
    target.write_bytes(seal(_png()))  # one of the program's own pictures: replaced, as before
    _check_still_replaceable(target, False, None)


def test_an_export_whose_name_says_another_kind_of_file_is_said(cli, tmp_path) -> None:
    """--format dispatch --out d.py wrote a C header where a Python module was, with no word: the
    file then no longer imported."""
    session = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--budget", "2", "--quiet",
               "--out", session).returncode == 0
    done = cli("export", session, "--format", "json", "--out", tmp_path / "x.py")
    assert done.returncode == 0 and (f"note: --out {tmp_path / 'x.py'}: a .py name for --format json, which writes "
                                     "JSON (a .json name fits it)") in done.stderr.splitlines(), done.stderr
    for fmt, name in (("header", "x.cuh"), ("header", "x.h"), ("cuda", "x.cu"), ("json", "x.txt")):
        assert "note: --out" not in cli("export", session, "--format", fmt, "--out", tmp_path / name).stderr


def test_a_one_value_flag_given_twice_with_two_values_is_refused_naming_both(cli, tmp_path: Path) -> None:
    """argparse kept the last of ``--budget 10 ... --budget 20`` without a word: a script that set a
    flag in two places ran with whichever came later. Two values are refused, naming both; the
    same value twice is that value."""
    out = tmp_path / "s.json"
    for args, said in ((["tune", "vector_add", "--budget", "10", "--budget", "20", "--out", out],
                        "error: --budget given twice (10 and 20); give it once (python main.py tune --help)"),
                       (["tune", "vector_add", "--backend", "sim", "--out", out, "--out", tmp_path / "t.json"],
                        "error: --out given twice"),
                       (["show", out, "--max-latency-ms", "1", "--max-latency-ms", "2.5"],
                        "error: --max-latency-ms given twice (1 and 2.5); give it once"),
                       (["show", out, "--max-latency-ms", "1", "--max-latency-ms", "1234567"],
                        "error: --max-latency-ms given twice (1 and 1234567); give it once"),
                       (["show", "--portability", "a.json", "b.json", "--portability", "c.json"],
                        "error: --portability given twice (a.json b.json and c.json); give it once")):
        refused = cli(*args)
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr
        assert not out.exists()
    done = cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--budget", "3", "--budget", "3",
               "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    shown = cli("show", out, "--json", "--max-latency-ms", "1", "--max-latency-ms", "1.0")
    assert shown.returncode == 0 and json.loads(shown.stdout)["constraints"]["max_latency_ms"] == 1.0


def test_an_output_that_is_a_symbolic_link_loop_is_one_line(cli, tmp_path) -> None:
    """``tune --resume S --out L`` with L a link loop: the check that the output is not the session
    itself resolved L and raised RuntimeError ("Symlink loop"), a traceback; it is the refusal a
    new session's --out gives such a name."""
    from workbench.core.io.output_files import same_place

    session = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--strategy", "grid", "--budget", "2",
               "--executor", "inline", "--quiet", "--out", session).returncode == 0
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    assert not same_place(tmp_path / "l1", session)
    said = cli("tune", "--resume", session, "--out", tmp_path / "l1", "--budget", "3", "--executor", "inline", "--quiet")
    assert said.returncode == 2 and "is a symbolic link" in said.stderr and "Traceback" not in said.stderr, said.stderr
