"""The run controller and the command line's run lifecycle: continuing and resuming sessions,
refusing to overwrite, one writer per session, journals that belong to their session, and no
finished trial lost to a kill (workbench.runner.controller, core.io.session_lock, core.io.output_files)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cli_errors import one_line_error

from workbench.core.domain.assignments import parse_assignment_list, parse_assignments
from workbench.core.errors import SessionFormatError, WorkbenchError
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import Journal, Session, journal_path, load_session, save_session
from workbench.core.io.session_lock import SessionInUse, SessionLock, lock_path
from workbench.runner.controller import RunRequest, continues, prepare_run, resume_run, run_to_end, start_run

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
TRIVIAL = str(FIXTURES / "trivial_bench.py")
SLOW = str(FIXTURES / "slow_bench.py")

# Runs started in this process evaluate inline (they test sessions, locks and continuation, not
# isolation), command lines included (the `cli` fixture); a run that is killed, or holds the lock
# another run meets, is a process of its own with worker processes.
pytestmark = pytest.mark.usefixtures("inline_runs")


def new_trivial(path: Path, budget: int, **fields) -> None:
    session, finished = run_to_end(RunRequest(kernel=TRIVIAL, strategy="random", budget=budget, **fields), path)
    assert finished.reason == "budget", finished.message


# --- name=value parsing is one rule --------------------------------------------------------------


def test_name_value_parsing_is_one_rule_for_flags_and_the_window() -> None:
    assert parse_assignments(["flag=true", "n=1024", "scale=0.5", "mode=fast"]) == {
        "flag": True, "n": 1024, "scale": 0.5, "mode": "fast"}
    assert parse_assignment_list("flag=true, n=1024") == {"flag": True, "n": 1024}
    # a size as show and a replay's refusal write it, copied into one --at or --set: it was the text
    # value "16384, cols=1024" of rows, refused as "rows is a number"
    assert parse_assignments(["rows=16384, cols=1024; eps=1e-05"], "--at") == {"rows": 16384, "cols": 1024, "eps": 1e-05}
    assert parse_assignments(["tag=a,b", "n=1"]) == {"tag": "a,b", "n": 1}  # a comma before no name= stays
    with pytest.raises(WorkbenchError, match="given twice"):
        parse_assignments(["n=1, n=2"])
    for bad in (["n=nan"], ["n=inf"], ["n 3"], ["n=1", "n=2"], ["n=" + "9" * 5000]):
        with pytest.raises(WorkbenchError):
            parse_assignments(bad)


# --- refusing to overwrite ------------------------------------------------------------------------


def test_tune_refuses_an_existing_session_then_resume_extends_and_force_keeps_a_backup(cli, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    new_trivial(out, 12)
    before = out.read_bytes()
    line = one_line_error(cli("tune", TRIVIAL, "--budget", "3", "--out", str(out)))
    assert "--resume" in line and "--force" in line and "12 trials" in line
    assert out.read_bytes() == before

    done = cli("tune", TRIVIAL, "--budget", "5", "--out", str(out), "--resume", "--quiet")
    assert done.returncode == 0, done.stderr
    resumed = load_session(out)
    assert len(resumed.trials) == 17 and len({t.config.id for t in resumed.trials}) == 17
    assert [t.index for t in resumed.trials] == list(range(17))
    assert resumed.run.budget == 17

    done = cli("tune", TRIVIAL, "--budget", "2", "--out", str(out), "--force", "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(load_session(out).trials) == 2
    assert len(load_session(tmp_path / "s.json.bak").trials) == 17


def test_resume_uses_the_sessions_own_settings_and_flags_override_and_are_recorded(cli, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    done = cli("tune", TRIVIAL, "--strategy", "random", "--seed", "7", "--budget", "10", "--time-limit", "600",
               "--timeout", "5", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    session = load_session(out)
    assert session.run.budget == 10 and session.run.run_timeout_s == 5.0 and session.run.time_limit_s == 600.0
    one_line_error(cli("tune", "--resume", str(out)))  # its 10 evaluations are done: say how to go on

    done = cli("tune", "--resume", str(out), "--budget", "4", "--timeout", "3", "--quiet")
    # the python benchmark the session names is not run unless the person names it
    assert done.returncode == 2 and "name it" in done.stderr
    done = cli("tune", TRIVIAL, "--resume", str(out), "--budget", "4", "--timeout", "3", "--quiet")
    assert done.returncode == 0, done.stderr
    session = load_session(out)
    assert len(session.trials) == 14
    assert session.strategy["name"] == "random" and session.strategy["seed"] == 7
    assert session.run.run_timeout_s == 3.0 and session.run.budget == 14 and session.run.time_limit_s == 600.0


def test_switching_strategy_and_back_restores_the_options_it_had(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    run_to_end(RunRequest(kernel=TRIVIAL, strategy="annealing", strategy_options={"cooling": 0.8}, budget=4), out)
    for strategy, budget in (("local", 2), ("random", 2)):  # two other strategies in between
        resume_run(out, RunRequest(kernel=TRIVIAL, strategy=strategy, budget=budget)).run()
    stored = load_session(out).strategy
    assert stored["name"] == "random" and stored["options"] == {}
    assert set(stored["earlier_options"]) == {"annealing", "local"}  # random has no options: nothing to keep
    assert stored["earlier_options"]["annealing"]["cooling"] == 0.8

    resume_run(out, RunRequest(kernel=TRIVIAL, strategy="annealing", budget=2)).run()
    stored = load_session(out).strategy
    assert stored["name"] == "annealing" and stored["options"]["cooling"] == 0.8
    assert set(stored["earlier_options"]) == {"local"}  # annealing's moved back to the running strategy's place
    resume_run(out, RunRequest(kernel=TRIVIAL, strategy="annealing", strategy_options={}, budget=1)).run()
    assert load_session(out).strategy["options"]["cooling"] == 0.9  # named options (none) win over the kept ones
    assert len(load_session(out).trials) == 11


def test_resume_with_one_option_keeps_the_others_the_session_set(cli, tmp_path: Path) -> None:
    """``tune --resume --option X=...`` ran with only X set: every other option the session had set
    went back to its default, unsaid. A stored value that clashes with one given takes its default
    and says so (the run refused the pair, blaming an option the person had not named)."""
    out = tmp_path / "g.json"
    assert cli("tune", TRIVIAL, "--strategy", "genetic", "--option", "population=4", "--option", "tournament=4",
               "--option", "elite=1", "--budget", "2", "--quiet", "--out", out).returncode == 0
    done = cli("tune", TRIVIAL, "--resume", out, "--option", "mutation=0.3", "--budget", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    options = load_session(out).strategy["options"]
    assert (options["population"], options["tournament"], options["elite"], options["mutation"]) == (4, 4, 1, 0.3)
    done = cli("tune", TRIVIAL, "--resume", out, "--option", "population=3", "--budget", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "this session's tournament=4 of strategy 'genetic' does not go with the options given" in done.stderr
    options = load_session(out).strategy["options"]
    assert options["population"] == 3 and options["elite"] == 1 and options["mutation"] == 0.3
    assert options["tournament"] <= 3
    # where the default clashes too, the run is refused in one line, with no warning before it
    # that promised the default ("tournament takes the default", then "tournament is at its default")
    refused = cli("tune", TRIVIAL, "--resume", out, "--option", "population=2", "--budget", "1", "--quiet")
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        "error: strategy 'genetic': tournament=3 cannot exceed population=2; tournament is at its default: give it too"]


def test_stored_options_this_version_cannot_take_fall_back_to_defaults_with_a_warning(cli, tmp_path: Path) -> None:
    """A session records every option of its strategy; one since removed, or a value outside
    what the option now accepts, must not make the session impossible to continue: it runs with
    the default and says so. An option a person names is still checked strictly."""
    out = tmp_path / "s.json"
    run_to_end(RunRequest(kernel=TRIVIAL, strategy="annealing", strategy_options={"cooling": 0.8}, budget=2), out)
    data = json.loads(out.read_text())
    data["strategy"]["options"].update({"retired_option": 3, "cooling": 7.5})
    data["strategy"]["earlier_options"] = {"local": {"renamed_option": True}}
    out.write_text(json.dumps(data))

    result = cli("tune", TRIVIAL, "--resume", str(out), "--budget", "1")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert any("'retired_option'" in line and "ignored" in line for line in warnings)
    assert any("cooling=7.5" in line and "default 0.9 is used" in line for line in warnings)
    assert load_session(out).strategy["options"]["cooling"] == 0.9
    assert "retired_option" not in load_session(out).strategy["options"]
    result = cli("tune", TRIVIAL, "--resume", str(out), "--budget", "1", "--strategy", "local")
    assert result.returncode == 0 and "'renamed_option' of strategy 'local'" in result.stderr

    # stored values that clash with each other: those the clash names take their defaults, the rest stay
    data = json.loads(out.read_text())
    data["strategy"] = {**data["strategy"], "name": "genetic",
                        "options": {"population": 2, "elite": 5, "tournament": 1, "mutation": 0.4}}
    out.write_text(json.dumps(data))
    result = cli("tune", TRIVIAL, "--resume", str(out), "--budget", "1")
    assert result.returncode == 0, result.stderr
    assert "do not go together (elite=5 cannot exceed population=2); elite, population take the default" in result.stderr
    kept = load_session(out).strategy["options"]
    assert (kept["population"], kept["elite"], kept["tournament"], kept["mutation"]) == (16, 2, 1, 0.4)
    refused = cli("tune", TRIVIAL, "--resume", str(out), "--budget", "1", "--option", "retired_option=3")
    assert refused.returncode != 0 and "has no option 'retired_option'" in one_line_error(refused)
    assert len(load_session(out).trials) == 5


@pytest.mark.parametrize("stored", [[1], {"annealing": 3}])
def test_a_malformed_record_of_earlier_options_is_one_line(tmp_path: Path, stored) -> None:
    out = tmp_path / "s.json"
    new_trivial(out, 2)
    data = json.loads(out.read_text())
    data["strategy"]["earlier_options"] = stored
    out.write_text(json.dumps(data))
    with pytest.raises(SessionFormatError, match="strategy.earlier_options"):
        load_session(out)


def test_a_sessions_stored_worker_count_is_held_to_the_same_limit_as_the_flag(cli, tmp_path: Path) -> None:
    """A file must not start more worker processes than --workers could: a million stored workers is
    one line and no run, the flag still overrides the stored count."""
    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--budget", "3", "--out", str(out), "--quiet").returncode == 0
    data = json.loads(out.read_text())
    data["run"]["workers"] = 10**6
    out.write_text(json.dumps(data))
    line = one_line_error(cli("tune", "--resume", str(out), "--budget", "2"))
    assert "workers 1000000: must be from 1 to" in line
    # refining always uses local worker processes, so a stored Ray executor does not lift the limit
    data["run"].update(workers=4000, executor="ray")
    data["trials"][0]["details"]["resources_pending"] = True
    out.write_text(json.dumps(data))
    assert "workers 4000: must be from 1 to" in one_line_error(cli("tune", "--resume", "--out", str(out), "--refine-only"))
    data["run"].update(workers=None, executor="local")
    data["trials"][0]["details"].pop("resources_pending")
    out.write_text(json.dumps(data))
    assert len(load_session(out).trials) == 3
    done = cli("tune", "--resume", str(out), "--budget", "2", "--workers", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(load_session(out).trials) == 5


def test_a_cuda_session_continued_without_a_usable_device_is_one_line(cli, tmp_path: Path) -> None:
    from workbench.runner import plan

    plan.cuda_device_count.cache_clear()
    if plan.cuda_device_count() > 0 and not plan.cuda_missing():
        pytest.skip("a CUDA device is usable here: the session would really continue on it")
    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--budget", "3", "--out", str(out), "--quiet").returncode == 0
    data = json.loads(out.read_text())
    data["backend"]["kind"] = "cuda"  # recorded on a GPU machine, continued on this one
    out.write_text(json.dumps(data))
    line = one_line_error(cli("tune", "--resume", str(out), "--budget", "3"))
    assert "CUDA device 0 is not usable here" in line
    assert len(load_session(out).trials) == 3


def test_a_stopped_run_continues_with_what_its_budget_has_left(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    run = start_run(RunRequest(kernel=TRIVIAL, strategy="random", budget=20), out)
    stopped = {"n": 0}

    def stop_after_six(event) -> None:
        from workbench.runner.events import TrialFinished

        if isinstance(event, TrialFinished):
            stopped["n"] += 1
            if stopped["n"] == 6:
                run.stop()

    run.subscribe(stop_after_six)
    assert run.run().reason == "stopped"
    assert len(load_session(out).trials) == 6
    session, finished = run_to_end(RunRequest(kernel=TRIVIAL), out, resume=True)
    assert finished.reason == "budget" and len(session.trials) == 20


def test_no_session_is_written_under_a_code_files_name(cli, tmp_path: Path) -> None:
    """``--force`` moved a --kernel-dir template's own source to .bak, then the run could not read
    it; a new session named ``run.py`` in the folder broke every later run of it (a spec that does
    not load)."""
    folder = tmp_path / "k"
    folder.mkdir()
    for suffix in (".cu", ".py"):
        text = (ROOT / "kernels" / f"vector_add{suffix}").read_text().replace("vector_add", "myadd")
        (folder / f"myadd{suffix}").write_text(text)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    # existing sources, and new names a later run of the folder would take for template code
    for name in ("myadd.cu", "myadd.py", "run.py", "other.kernel.json", "common.cuh"):
        line = one_line_error(cli("tune", "myadd", "--backend", "sim", "--resources", "estimated", "--budget", "2",
                                  "--kernel-dir", str(folder), "--out", str(folder / name), "--force"))
        assert f"{name}: a name ending in " in line and "a session is a JSON file" in line, line
    line = one_line_error(cli("import-kt", str(FIXTURES / "kt_cache_small.json"), "--out", str(folder / "c.py")))
    assert "a session is a JSON file" in line
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert cli("tune", "myadd", "--backend", "sim", "--resources", "estimated", "--budget", "2",
               "--kernel-dir", str(folder), "--out", str(folder / "myadd.session.json")).returncode == 0


@pytest.mark.parametrize("suffix", [".journal", ".lock"])
def test_no_command_writes_at_the_name_of_a_sessions_journal_or_lock(cli, tmp_path: Path, suffix: str) -> None:
    """``FILE.journal`` stood for the session ``FILE`` itself (``tune``, ``import-kt`` and Save As
    wrote over ``FILE``: a benchmark's source, a recording, a 20-trial session), and ``FILE.lock``
    is truncated and removed by the next run of ``FILE``; such names are refused as outputs,
    ``--force`` or not, and nothing is written."""
    session = tmp_path / "s.json"
    new_trivial(session, 3)
    bench = tmp_path / "bench.py"
    bench.write_bytes(Path(TRIVIAL).read_bytes())
    cache = tmp_path / "c.json"
    cache.write_bytes((FIXTURES / "kt_cache_small.json").read_bytes())
    before = {p: p.read_bytes() for p in (session, bench, cache)}
    for args in (["tune", str(bench), "--budget", "2", "--out", f"{bench}{suffix}"],
                 ["tune", TRIVIAL, "--resume", str(session), "--budget", "1", "--out", f"{tmp_path / 'other.json'}{suffix}"],
                 ["import-kt", str(cache), "--out", f"{cache}{suffix}", "--force"],
                 ["export", str(session), "--format", "json", "--out", f"{session}{suffix}", "--force"],
                 ["gui", str(session), "--quit-when-done", "--screenshot", f"{session}{suffix}"]):
        line = one_line_error(cli(*args))
        assert f"names ending in {suffix}" in line and "choose another name" in line, (args, line)
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.py", "c.json", "s.json"]


@pytest.mark.parametrize("command", ["tune", "import-kt", "export"])
def test_no_command_writes_over_its_input(cli, tmp_path: Path, command: str) -> None:
    session = tmp_path / "s.json"
    new_trivial(session, 3)
    cache = tmp_path / "c.json"
    cache.write_bytes((FIXTURES / "kt_cache_small.json").read_bytes())
    bench = tmp_path / "bench.py"
    bench.write_bytes(Path(TRIVIAL).read_bytes())
    args, victim = {
        "tune": (["tune", str(bench), "--budget", "2", "--out", str(bench)], bench),
        "import-kt": (["import-kt", str(cache), "--out", str(cache)], cache),
        "export": (["export", str(session), "--format", "json", "--out", str(session)], session),
    }[command]
    before = victim.read_bytes()
    line = one_line_error(cli(*args))
    assert "input" in line
    assert victim.read_bytes() == before and not Path(str(victim) + ".bak").exists()


@pytest.mark.parametrize("command", ["tune", "import-kt", "export"])
def test_no_command_replaces_what_is_not_a_regular_file_or_writes_into_a_missing_folder(cli, tmp_path: Path, command: str) -> None:
    session = tmp_path / "s.json"
    new_trivial(session, 3)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    make = {
        "tune": lambda out: ["tune", TRIVIAL, "--budget", "2", "--force", "--out", out],
        "import-kt": lambda out: ["import-kt", str(FIXTURES / "kt_cache_small.json"), "--force", "--out", out],
        "export": lambda out: ["export", str(session), "--format", "json", "--force", "--out", out],
    }[command]
    assert "not a regular file" in one_line_error(cli(*make(str(fifo))))
    assert fifo.exists() and not fifo.is_file()
    assert "symbolic link" in one_line_error(cli(*make(str(link))))
    assert link.is_symlink() and not (tmp_path / "elsewhere.json").exists()
    assert "does not exist" in one_line_error(cli(*make(str(tmp_path / "missing" / "x.json"))))
    assert not (tmp_path / "missing").exists()


def test_the_windows_refusal_of_its_session_file_names_no_command_line_flag(tmp_path: Path) -> None:
    """A window's run writes its session file or an autosave; "--out" there named a flag the
    person never typed."""
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(WorkbenchError) as refused:
        prepare_run(RunRequest(kernel=TRIVIAL, budget=1), None, link)
    assert str(refused.value) == f"session file {link}: is a symbolic link; name the file it points to"
    assert not (tmp_path / "elsewhere.json").exists()
    with pytest.raises(WorkbenchError, match=r"^session file .*missing.*does not exist"):
        prepare_run(RunRequest(kernel=TRIVIAL, budget=1), None, tmp_path / "missing" / "x.json")


def test_import_and_export_replace_their_own_kind_of_file_and_refuse_others(cli, tmp_path: Path) -> None:
    session = tmp_path / "s.json"
    new_trivial(session, 3)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    line = one_line_error(cli("export", str(session), "--format", "header", "--out", str(notes)))
    assert "--force" in line and notes.read_text() == "my notes"
    header = tmp_path / "tuned.h"
    for _ in range(2):  # an earlier export is replaced without --force
        assert cli("export", str(session), "--format", "header", "--out", str(header)).returncode == 0
    done = cli("export", str(session), "--format", "header", "--out", str(notes), "--force")
    assert done.returncode == 0 and (tmp_path / "notes.txt.bak").read_text() == "my notes"

    imported = tmp_path / "imported.json"
    for _ in range(2):  # an earlier session is replaced without --force
        assert cli("import-kt", str(FIXTURES / "kt_cache_small.json"), "--out", str(imported)).returncode == 0
    one_line_error(cli("import-kt", str(FIXTURES / "kt_cache_small.json"), "--out", str(header)))


# --- journals belong to their session -------------------------------------------------------------


def _trial(index: int, latency: float) -> Trial:
    from workbench.core.domain.space import Config

    return Trial(index=index, config=Config({"x": index, "y": 1, "mode": "a"}),
                 measurement=Measurement(Status.OK, {"latency_ms": latency}))


def test_the_journal_of_another_session_is_refused_never_merged(cli, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    new_trivial(out, 5)
    other = tmp_path / "other.json"
    new_trivial(other, 3)
    with Journal(other) as journal:  # a journal of the other session ...
        journal.start(load_session(other))
        journal.append(_trial(99, 1.0))
    os.replace(journal_path(other), journal_path(out))  # ... lying beside this one
    with pytest.raises(SessionFormatError, match="journal of another session"):
        load_session(out)
    line = one_line_error(cli("tune", TRIVIAL, "--out", str(out), "--resume", "--budget", "2"))
    assert "another session" in line
    # a new run at that name: the reason, not "exists and is not a workbench session" (it is one)
    line = one_line_error(cli("tune", TRIVIAL, "--out", str(out), "--budget", "2"))
    assert line.startswith(f"error: --out {out}: does not open (") and "journal of another session" in line, line
    assert line.endswith("--force replaces it (keeping it as s.json.bak)")
    assert len(load_session(other).trials) == 3 and out.exists()


def test_the_journals_newer_trial_wins_over_the_files_older_one(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    new_trivial(out, 5)
    session = load_session(out)
    newer = Trial(index=3, config=session.trials[3].config, measurement=Measurement(Status.OK, {"latency_ms": 0.125}))
    with Journal(out) as journal:
        journal.start(session)
        journal.append(newer)
    merged = load_session(out)
    assert len(merged.trials) == 5 and merged.trials[3].metric("latency_ms") == 0.125


def journal_only(out: Path, trials: int = 3) -> Path:
    """What a run killed before its first save leaves: ``out``'s journal, and no ``out``."""
    new_trivial(out, trials)
    session = load_session(out)
    with Journal(out) as journal:
        journal.start(session)
        for trial in session.trials:
            journal.append(trial)
    out.unlink()
    return journal_path(out)


def test_a_session_named_by_the_journal_a_killed_run_left_is_continued_into_its_own_file(cli, tmp_path: Path) -> None:
    """Refusing outputs named *.journal refused ``--resume k.json.journal`` too, which continues
    the session ``k.json``; the journal stands for that file, as it always did."""
    out = tmp_path / "k.json"
    journal = journal_only(out)
    done = cli("tune", TRIVIAL, "--resume", str(journal), "--budget", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(load_session(out).trials) == 4 and not journal.exists()
    journal_only(tmp_path / "m.json")
    done = cli("tune", TRIVIAL, "--resume", "--out", str(journal_path(tmp_path / "m.json")), "--budget", "1", "--quiet")
    assert done.returncode == 0 and len(load_session(tmp_path / "m.json").trials) == 4, done.stderr
    journal = journal_only(tmp_path / "n.json")  # the same journal spelt twice, relative and absolute
    done = cli("tune", TRIVIAL, "--resume", os.path.relpath(journal), "--out", str(journal), "--budget", "1", "--quiet")
    assert done.returncode == 0 and len(load_session(tmp_path / "n.json").trials) == 4, done.stderr
    journal = journal_only(tmp_path / "r.json")
    done = cli("tune", "--remeasure-aborted", "--out", str(journal))
    assert done.returncode == 0 and "nothing to re-measure" in done.stdout, done.stderr


@pytest.mark.parametrize("journal", ["of a killed run", "damaged"])
def test_the_refusal_of_a_journal_at_out_names_the_file_force_keeps_it_as(cli, tmp_path: Path, journal: str) -> None:
    """It promised ``n.json.bak`` whatever the journal: --force keeps a journal that opens as that
    session file, but one that opens with nothing as ``n.journal-only.json.bak.journal``."""
    out = tmp_path / "n.json"
    if journal == "damaged":
        journal_path(out).write_text("junk\n")
        expected = "n.journal-only.json.bak.journal"
    else:
        journal_only(out)
        expected = "n.json.bak"
    refused = cli("tune", TRIVIAL, "--budget", "1", "--out", str(out), "--quiet")
    assert refused.returncode == 2 and f"--force replaces it (keeping it as {expected})" in refused.stderr
    # a file that is no journal is not called one, nor offered to --resume, which cannot read it
    assert ("--resume recovers" in refused.stderr) == (journal != "damaged")
    assert ("does not open as a session's journal" in refused.stderr) == (journal == "damaged")
    done = cli("tune", TRIVIAL, "--budget", "1", "--out", str(out), "--quiet", "--force")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / expected).exists()
    if journal != "damaged":  # said, as for a file there (the journal alone is kept as that session)
        assert f"kept the file that was there as {tmp_path / expected}" in done.stdout, done.stdout


# --- one writer per session -----------------------------------------------------------------------


@pytest.mark.parametrize("linked", ["file", "journal"])
def test_a_session_with_another_name_is_refused_before_anything_runs(cli, tmp_path: Path, linked: str) -> None:
    """The lock goes by the name: two runs of one file under two hard-linked names both ran, and
    each save renamed a new file over its own name, so the names parted with half the trials each."""
    out = tmp_path / "a.json"
    new_trivial(out, 3)
    if linked == "journal":
        out.unlink()
        journal_only(out)
    source = out if linked == "file" else journal_path(out)
    os.link(source, tmp_path / "b.json")
    before = source.read_bytes()
    line = one_line_error(cli("tune", TRIVIAL, "--resume", "--budget", "2", "--out", str(out)))
    assert f"{source}: the file has 2 names (hard links)" in line and "copy it" in line
    assert source.read_bytes() == before and source.stat().st_nlink == 2 and not lock_path(out).exists()
    assert "2 names" in one_line_error(cli("tune", "--remeasure-aborted", "--out", str(out)))
    with pytest.raises(WorkbenchError, match="2 names"):  # the window continuing the session it shows
        prepare_run(RunRequest(kernel=TRIVIAL, budget=1), load_session(out), out)
    assert not lock_path(out).exists()
    # replacing it is another matter: the old content stays under the other name, and as the backup
    done = cli("tune", TRIVIAL, "--force", "--budget", "2", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "b.json").read_bytes() == before and len(load_session(out).trials) == 2


def test_a_second_writer_stops_at_once_naming_the_first(cli, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    first = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "tune", SLOW, "--budget", "400", "--out",
                              str(out), "--quiet"], cwd=ROOT, env={**os.environ, "WORKBENCH_SLOW_S": "0.05"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the first run has finished a trial
            if journal_path(out).exists() and journal_path(out).read_text().count("\n") >= 2:
                break
            time.sleep(0.05)
        assert journal_path(out).exists(), "the first run never started"
        started = time.monotonic()
        second = cli("tune", SLOW, "--budget", "5", "--out", str(out), "--resume")
        assert time.monotonic() - started < 30
        line = one_line_error(second)
        assert f"is in use by pid {first.pid}" in line
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(60)
    session = load_session(out)
    assert len(session.trials) == len({t.index for t in session.trials}) >= 1


def test_a_stale_lock_of_a_dead_owner_does_not_block(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    new_trivial(out, 3)
    lock_path(out).write_text("999999999\n")  # left behind by a killed run of a version before the mark
    session, finished = run_to_end(RunRequest(kernel=TRIVIAL, budget=2), out, resume=True)
    assert finished.reason == "budget" and len(session.trials) == 5
    assert not lock_path(out).exists()
    from workbench.core.io.session_lock import LOCK_MARK

    lock_path(out).write_text(f"{LOCK_MARK}{os.getppid()}\n")  # marked: ours, whatever process has that pid now
    session, finished = run_to_end(RunRequest(kernel=TRIVIAL, budget=1), out, resume=True)
    assert finished.reason == "budget" and len(session.trials) == 6 and not lock_path(out).exists()


def test_a_file_of_ones_own_at_the_locks_name_is_neither_emptied_nor_removed(cli, tmp_path: Path) -> None:
    """``tune --out poetry`` takes ``poetry.lock``: a person's file there was truncated and then
    removed by the run. A lock file holds nothing but its owner's pid; anything else, or a file with
    another name too (a hard link), is refused in one line and left as it was."""
    project = tmp_path / "poetry.lock"
    project.write_text("[[package]]\nname = 'numpy'\n")
    line = one_line_error(cli("tune", TRIVIAL, "--budget", "2", "--out", str(tmp_path / "poetry")))
    assert "poetry.lock: holds other data, not a lock of this program" in line
    assert project.read_text() == "[[package]]\nname = 'numpy'\n" and not (tmp_path / "poetry").exists()

    linked = tmp_path / "elsewhere"
    linked.write_text("")
    os.link(linked, tmp_path / "s.json.lock")
    with pytest.raises(WorkbenchError, match="has another name too"):
        SessionLock(tmp_path / "s.json").acquire()
    assert linked.exists() and (tmp_path / "s.json.lock").exists()

    # another program's pid file: the pid of a live process (an old lock's pid is its dead owner's)
    (tmp_path / "server.lock").write_text(f"{os.getppid()}\n")
    with pytest.raises(WorkbenchError, match="holds the pid of a running process"):
        SessionLock(tmp_path / "server").acquire()
    assert (tmp_path / "server.lock").read_text() == f"{os.getppid()}\n"

    held = SessionLock(tmp_path / "t.json").acquire()
    lock_path(tmp_path / "t.json").unlink()
    lock_path(tmp_path / "t.json").write_text("put here meanwhile")
    held.release()  # removes only the file it holds
    assert lock_path(tmp_path / "t.json").read_text() == "put here meanwhile"


def test_a_lock_being_made_or_let_go_meanwhile_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock is empty from its creation until its creator writes its line, and another run may
    take it in between: an empty lock file was refused as "not ours" and left in the way of every
    later run. A holder that lets go between our two opens (exists, then gone) means: try again."""
    from workbench.core.io import session_lock

    lock_path(tmp_path / "made.json").write_text("")  # as its creator leaves it before writing
    SessionLock(tmp_path / "made.json").acquire().release()
    assert not lock_path(tmp_path / "made.json").exists()

    holder = SessionLock(tmp_path / "s.json").acquire()
    real_open = os.open

    def holder_lets_go(path, flags, *rest):
        if str(path).endswith(".lock") and not flags & os.O_CREAT and holder.held:
            holder.release()
        return real_open(path, flags, *rest)

    monkeypatch.setattr(session_lock.os, "open", holder_lets_go)
    SessionLock(tmp_path / "s.json").acquire().release()
    monkeypatch.setattr(session_lock.os, "open", real_open)
    with pytest.raises(WorkbenchError, match="cannot create the lock file"):  # a missing folder is no retry
        SessionLock(tmp_path / "missing" / "s.json").acquire()


def test_a_lock_that_cannot_be_written_leaves_nothing_in_the_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk while the lock's line was written left an empty lock file (and a bare OSError)."""
    from workbench.core.io import session_lock

    def full(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session_lock.os, "write", full)
    with pytest.raises(WorkbenchError, match="cannot write the lock file .No space left on device"):
        SessionLock(tmp_path / "s.json").acquire()
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []
    SessionLock(tmp_path / "s.json").acquire().release()

    real_write = os.write
    monkeypatch.setattr(session_lock.os, "write", lambda fd, data: real_write(fd, data[:1]))  # a byte at a time
    held = SessionLock(tmp_path / "t.json").acquire()
    assert lock_path(tmp_path / "t.json").read_text() == f"{session_lock.LOCK_MARK}{os.getpid()}\n"
    held.release()


def test_the_lock_names_its_owner_within_one_process(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    with SessionLock(out):
        with pytest.raises(SessionInUse, match=f"in use by pid {os.getpid()}"):
            SessionLock(out).acquire()
        with pytest.raises(SessionInUse):
            start_run(RunRequest(kernel=TRIVIAL, budget=1), out)
    SessionLock(out).acquire().release()


def test_a_run_prepared_and_dropped_lets_go_of_its_output(tmp_path: Path) -> None:
    """A script's run prepared and never run kept its output locked until the process ended: a
    notebook cell run again was refused ("in use by pid" of itself) until the kernel restarted.
    Dropped, it lets go; while it is held the refusal says it is this process's own run."""
    import gc

    out = tmp_path / "s.json"
    run = start_run(RunRequest(kernel="vector_add", backend="sim", budget=2, executor="inline"), out)
    with pytest.raises(SessionInUse, match=r"\(this process: a run of it still holds the file; .*release\(\)"):
        start_run(RunRequest(kernel="vector_add", backend="sim", budget=2, executor="inline"), out)
    del run
    gc.collect()
    again = start_run(RunRequest(kernel="vector_add", backend="sim", budget=2, executor="inline"), out)
    assert again.run().reason == "budget" and len(load_session(out).trials) == 2
    assert not lock_path(out).exists()


def test_a_run_runs_once_so_it_never_writes_without_its_lock(tmp_path: Path) -> None:
    """The lock is let go when a run ends; a second run() of the same run would write the session
    unguarded (beside a writer that took the file meanwhile), so it is refused in one line."""
    out = tmp_path / "s.json"
    run = start_run(RunRequest(kernel=TRIVIAL, strategy="random", budget=2), out)
    assert run.run().reason == "budget"
    before = out.read_bytes()
    with SessionLock(out):  # another writer owns the file now
        with pytest.raises(WorkbenchError, match="already started") as refused:
            run.run()
    assert "\n" not in str(refused.value)
    assert out.read_bytes() == before and len(load_session(out).trials) == 2
    sweep = start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=1,
                                 sizes={"n": [1024, 2048]}, backend_options={"compile": "estimate"}),
                      tmp_path / "w.json")
    assert sweep.run().evaluations == 2
    with pytest.raises(WorkbenchError, match="already started"):
        sweep.run()
    assert len(load_session(tmp_path / "w.json").trials) == 2


def test_counts_beyond_64_bits_are_refused_before_a_session_is_written(cli, tmp_path: Path) -> None:
    """A budget or patience the file could not hold back would write a session nothing can read."""
    out = tmp_path / "s.json"
    for flag, value in (("--budget", "20000000000000000000"), ("--patience", "99999999999999999999"),
                        ("--budget", str(2**63))):
        budget = [] if flag == "--budget" else ["--budget", "2"]
        line = one_line_error(cli("tune", TRIVIAL, *budget, flag, value, "--out", str(out)))
        assert value in line and "2**63-1" in line
        assert not out.exists() and not journal_path(out).exists()
    new_trivial(out, 2)
    line = one_line_error(cli("tune", TRIVIAL, "--resume", "--budget", str(2**63 - 2), "--out", str(out)))
    assert str(2**63 - 2) in line and len(load_session(out).trials) == 2


def test_a_session_on_a_read_only_file_system_is_not_blamed_on_its_mode(cli, tmp_path: Path, monkeypatch) -> None:
    """On a read-only mount the refusal said "make it writable", which no chmod can do; and it exited
    2, the status of input to fix, where a new file on the same mount exited 1 (a write the machine
    refuses, as docs/cli.md says of a file system mounted read-only)."""
    from workbench.core.errors import WriteFailed

    import os as _os
    from types import SimpleNamespace

    import workbench.core.fs as fs

    out = tmp_path / "s.json"
    new_trivial(out, 3)
    out.chmod(0o444)  # (what the mount does to every file, as this test cannot mount)
    monkeypatch.setattr(fs.os, "statvfs", lambda path: SimpleNamespace(f_flag=_os.ST_RDONLY))
    done = cli("tune", TRIVIAL, "--resume", "--budget", "2", "--out", str(out))
    assert done.returncode == 1 and done.stderr.strip() == (
        f"error: {out} is on a read-only file system; continue into another file with --out OTHER")
    with pytest.raises(WriteFailed, match="is on a read-only file system; save to another file$"):
        save_session(load_session(out), out)


def test_a_read_only_session_is_refused_before_a_run_and_left_as_it_is(cli, tmp_path: Path) -> None:
    """A save renames a new file over the old one, which the old one's mode does not stop (nor
    does it stop root): a session the person made read-only is refused before anything runs."""
    from workbench.runner.controller import remeasure_aborted

    out = tmp_path / "s.json"
    new_trivial(out, 3)
    out.chmod(0o444)
    before, inode = out.read_bytes(), out.stat().st_ino
    line = one_line_error(cli("tune", TRIVIAL, "--resume", "--budget", "2", "--out", str(out)))
    assert line == f"error: {out} is read-only; make it writable or continue into another file with --out OTHER"
    assert "is read-only" in one_line_error(cli("tune", TRIVIAL, "--force", "--budget", "2", "--out", str(out)))
    with pytest.raises(WorkbenchError, match="is read-only; make it writable$"):
        remeasure_aborted(out)
    assert out.read_bytes() == before and out.stat().st_ino == inode and out.stat().st_mode & 0o777 == 0o444
    assert not journal_path(out).exists() and not lock_path(out).exists()
    other = tmp_path / "other.json"  # what the refusal offers: continuing into another file
    done = cli("tune", TRIVIAL, "--resume", str(out), "--budget", "2", "--out", str(other), "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(load_session(other).trials) == 5 and out.read_bytes() == before
    other.chmod(0o644)
    journal_path(other).write_text("")  # a journal made read-only is refused the same way
    journal_path(other).chmod(0o444)
    assert "other.json.journal is read-only" in one_line_error(
        cli("tune", TRIVIAL, "--resume", "--budget", "1", "--out", str(other)))


def test_a_read_only_file_that_is_no_session_is_refused_for_what_it_is(cli, tmp_path: Path) -> None:
    """``--resume`` of a read-only Kernel Tuner cache said "make it writable"; done, the next try
    said it is no session. What it is comes first."""
    import gzip

    cache = tmp_path / "cache.json.gz"
    cache.write_bytes(gzip.compress(b'{"cache": {}}'))
    cache.chmod(0o444)
    line = one_line_error(cli("tune", "--resume", str(cache), "--budget", "2"))
    assert "a gzip-compressed file, not a session" in line and "read-only" not in line
    assert cache.stat().st_mode & 0o777 == 0o444 and not lock_path(cache).exists()
    large = tmp_path / "large.json"  # past the size read to say what it is: refused as read-only, unread
    large.write_text('{"cache": {}, "pad": "' + "x" * (16 * 1024 * 1024) + '"}')
    large.chmod(0o444)
    assert "is read-only" in one_line_error(cli("tune", "--resume", str(large), "--budget", "2"))


def test_a_lent_lock_stays_with_its_holder_after_the_run(tmp_path: Path) -> None:
    """The window lends its autosave's lock to each run: the run writes under it, and the file is
    still locked when the run ends (no moment another window could take it for a crashed run)."""
    from workbench.core.io.session_lock import locked_by_other

    out = tmp_path / "auto.json"
    held = SessionLock(out).acquire()
    run = prepare_run(RunRequest(kernel=TRIVIAL, strategy="random", budget=2), None, out, held=held)
    assert run.run().reason == "budget" and len(load_session(out).trials) == 2
    assert held.held and locked_by_other(out) and lock_path(out).exists()
    with pytest.raises(WorkbenchError, match="lock given"):
        prepare_run(RunRequest(kernel=TRIVIAL, budget=1), None, tmp_path / "other.json", held=held)
    held.release()
    with pytest.raises(WorkbenchError, match="not held"):
        held.lent()
    assert not locked_by_other(out) and not lock_path(out).exists()


# --- kills lose nothing ---------------------------------------------------------------------------


def test_a_killed_tune_is_resumed_from_its_journal_without_losing_a_trial(cli, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    first = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "tune", SLOW, "--budget", "400", "--out",
                              str(out), "--quiet"], cwd=ROOT, env={**os.environ, "WORKBENCH_SLOW_S": "0.02"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if journal_path(out).exists() and journal_path(out).read_text().count("\n") >= 8:
            break
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    assert not out.exists()
    recovered = [t.config.id for t in load_session(out).trials]
    assert len(recovered) >= 7
    line = one_line_error(cli("tune", SLOW, "--budget", "3", "--out", str(out)))
    assert "journal" in line and "--resume" in line
    assert [t.config.id for t in load_session(out).trials] == recovered  # the refusal touched nothing
    done = cli("tune", SLOW, "--budget", "3", "--out", str(out), "--resume", "--quiet")
    assert done.returncode == 0, done.stderr
    final = [t.config.id for t in load_session(out).trials]
    assert final[: len(recovered)] == recovered and len(final) == len(recovered) + 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_a_kill_during_save_loses_nothing_and_the_next_run_cleans_up(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    new_trivial(out, 6)
    script = textwrap.dedent(f"""
        import sys
        from workbench.core.domain.session import Journal, load_session, save_session
        session = load_session({str(out)!r})
        base = session.trials[0]
        journal = Journal({str(out)!r})
        journal.start(session)
        for i in range(6, 100000):
            trial = type(base)(index=i, config=base.config, measurement=base.measurement)
            session.add(trial)
            journal.append(trial)
            print(i, flush=True)
            save_session(session, {str(out)!r}, keep_journal=True)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    last = -1
    for line in child.stdout:
        last = int(line)
        if last >= 60:
            break
    child.send_signal(signal.SIGKILL)  # most of its time is spent inside save_session
    child.wait(30)
    indices = {t.index for t in load_session(out).trials}
    assert set(range(last + 1)) <= indices
    run = start_run(RunRequest(kernel=TRIVIAL, budget=1), out, resume=True)  # takes the lock and cleans up
    run.release()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# --- continuing any backend -----------------------------------------------------------------------


def test_a_replay_session_continues_with_its_trials_kernel_and_budget(tmp_path: Path) -> None:
    recording = tmp_path / "rec.json"
    new_trivial(recording, 30)
    out = tmp_path / "replay.json"
    session, _ = run_to_end(RunRequest(replay=str(recording), strategy="random", budget=10), out)
    assert session.kernel == "trivial_bench" and len(session.trials) == 10
    reopened = load_session(out)
    assert continues(RunRequest(), reopened)
    session, finished = run_to_end(RunRequest(budget=5), out, resume=True)
    assert len(session.trials) == 15 and len({t.config.id for t in session.trials}) == 15
    assert session.kernel == "trivial_bench" and session.backend["kind"] == "replay"


def test_continuing_refuses_another_device_or_problem(tmp_path: Path) -> None:
    out = tmp_path / "sim.json"
    session, _ = run_to_end(RunRequest(kernel="vector_add", backend="sim", gpu_model="H200", strategy="random",
                                       budget=2, backend_options={"compile": "estimate"}), out)
    with pytest.raises(WorkbenchError, match="device"):
        resume_run(out, RunRequest(gpu_model="A100", budget=1))
    with pytest.raises(WorkbenchError, match="problem"):
        resume_run(out, RunRequest(problem={"n": 4096}, budget=1))
    assert not lock_path(out).exists()  # a refused continuation lets go of the session
    assert not continues(RunRequest(kernel="vector_add", backend="sim", gpu_model="A100"), session)


def test_resume_into_another_file_leaves_the_source_untouched(tmp_path: Path) -> None:
    source = tmp_path / "a.json"
    new_trivial(source, 4)
    before = source.read_bytes()
    target = tmp_path / "b.json"
    run = resume_run(source, RunRequest(kernel=TRIVIAL, budget=3), target)
    run.run()
    assert source.read_bytes() == before
    assert len(load_session(target).trials) == 7
    assert json.loads(target.read_text())["id"] != json.loads(before)["id"]  # a copy is a session of its own
    # again into the same file: refused, with the flags that act on it (not "--resume", given already)
    with pytest.raises(WorkbenchError) as refused:
        resume_run(source, RunRequest(kernel=TRIVIAL, budget=3), target)
    assert f"holds a session of 'trivial_bench' with 7 trials; --resume {target} (without --out) continues it, " \
           f"--force replaces it with {source} continued (keeping it as b.json.bak)" in str(refused.value)


# --- what a review of the first version found ------------------------------------------------------


def test_a_refused_force_moves_nothing(cli, tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    new_trivial(out, 3)
    before = out.read_bytes()
    one_line_error(cli("tune", TRIVIAL, "--force", "--out", str(out), "--strategy", "nope"))
    # refused only once the run is planned (after the lock is taken): still nothing moved
    one_line_error(cli("tune", "vector_add", "--backend", "sim", "--force", "--out", str(out), "--devices", "3"))
    assert out.read_bytes() == before and not (tmp_path / "c.json.bak").exists()


def test_resume_into_another_file_checks_the_kernel_named(cli, tmp_path: Path) -> None:
    source = tmp_path / "a.json"
    new_trivial(source, 3)
    line = one_line_error(cli("tune", "vector_add", "--resume", str(source), "--out", str(tmp_path / "b.json")))
    assert "not of 'vector_add'" in line and not (tmp_path / "b.json").exists()


def test_a_lock_file_planted_as_a_link_is_refused_and_its_target_untouched(cli, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    lock_path(tmp_path / "x.json").symlink_to(victim)
    line = one_line_error(cli("tune", TRIVIAL, "--budget", "1", "--out", str(tmp_path / "x.json")))
    assert "symbolic link" in line and victim.read_text() == "keep me"


def test_import_kt_never_drops_a_journal_or_replaces_measured_trials(cli, tmp_path: Path) -> None:
    cache = str(FIXTURES / "kt_cache_small.json")
    measured = tmp_path / "measured.json"
    new_trivial(measured, 4)
    before = measured.read_bytes()
    assert "--force" in one_line_error(cli("import-kt", cache, "--out", str(measured)))
    assert measured.read_bytes() == before
    killed = tmp_path / "killed.json"
    with Journal(killed) as journal:
        journal.start(load_session(measured))
    line = one_line_error(cli("import-kt", cache, "--out", str(killed)))
    assert "journal" in line and journal_path(killed).exists()
    done = cli("import-kt", cache, "--out", str(measured), "--force")
    assert done.returncode == 0 and len(load_session(tmp_path / "measured.json.bak").trials) == 4
    # a journal beside the replaced file goes beside its backup, not beside the next free name
    with Journal(measured) as journal:
        journal.start(load_session(measured))
    done = cli("import-kt", cache, "--out", str(measured), "--force")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "measured.json.2.bak").exists() and journal_path(tmp_path / "measured.json.2.bak").exists()
    assert not journal_path(measured).exists() and not (tmp_path / "measured.json.3.bak").exists()
    # replacing an earlier import needs no backup, so a folder full of them does not stop it
    for n in range(3, 1001):
        (tmp_path / f"measured.json.{n}.bak").write_text("")
    done = cli("import-kt", cache, "--out", str(measured))
    assert done.returncode == 0, done.stderr


def test_a_version_1_file_and_its_journal_are_matched_by_kernel_and_creation_time(tmp_path: Path) -> None:
    out = tmp_path / "old.json"
    new_trivial(out, 3)
    data = json.loads(out.read_text())
    data.update(version=1)
    del data["id"], data["run"]
    out.write_text(json.dumps(data))
    header = {k: v for k, v in data.items() if k != "trials"}
    record = dict(data["trials"][0], index=3)
    journal_path(out).write_text(json.dumps(header) + "\n" + json.dumps(record) + "\n")
    session = load_session(out)
    assert len(session.trials) == 4 and session.id  # an identity from now on
    header["created_at"] += 1  # a journal of another old session
    journal_path(out).write_text(json.dumps(header) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(SessionFormatError, match="another session"):
        load_session(out)


def test_the_owner_removes_only_its_own_leftover_temporaries(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    new_trivial(out, 2)
    leftover = tmp_path / ".s.json.ab12cd_9.tmp"  # what a save killed before its rename leaves
    leftover.write_text("{")
    other = tmp_path / ".s.json.bak.ab12cd_9.tmp"  # another file's write in progress
    other.write_text("{")
    empty = tmp_path / ".s.json.journal.x0000000.tmp"  # a journal's start killed before it wrote
    empty.write_text("")
    notes = tmp_path / ".s.json.mynotes1.tmp"  # a person's file that only has the shape of the name
    notes.write_text("my notes")
    fifo = tmp_path / ".s.json.fifo0000.tmp"
    os.mkfifo(fifo)
    start_run(RunRequest(kernel=TRIVIAL, budget=1), out, resume=True).release()
    assert not leftover.exists() and not empty.exists() and other.exists()
    assert notes.read_text() == "my notes" and fifo.exists()


def test_narrowing_a_domain_when_continuing_keeps_the_earlier_trials_loadable(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    new_trivial(out, 15)
    session = load_session(out)
    domains = {slot.name: list(slot.values) for slot in session.space.slots}
    domains["x"] = [5, 6, 7]
    run = resume_run(out, RunRequest(kernel=TRIVIAL, budget=4, domains=domains))
    finished = run.run()
    assert finished.reason == "budget", finished.message  # the final save holds every trial
    reloaded = load_session(out)  # earlier trials outside the narrowed domain are still its own
    assert len(reloaded.trials) == 19
    assert all(t.config["x"] in (5, 6, 7) for t in reloaded.trials[15:])
    # the narrowing is kept, as a restriction beside a domain wide enough for every trial, in the
    # declared order: stored widened alone, the next plain continuation searched every value again,
    # and the values appended in the trials' order made neighbours of values far apart
    declared = [v for v in session.space.slot("x").values]
    stored = reloaded.space.slot("x").values
    # every value the benchmark declares, tried or not: one left out that no trial had was gone
    # from the stored domain, so the window could not show it unticked (nor tick it back)
    assert list(stored) == declared
    assert "x in (5, 6, 7,)" in reloaded.space.restrictions
    finished = resume_run(out, RunRequest(kernel=TRIVIAL, budget=6)).run()
    assert finished.reason in ("budget", "exhausted"), finished.message
    assert {t.config["x"] for t in load_session(out).trials[19:]} <= {5, 6, 7}
    # the domains given again in full are the whole of them: the stored narrowing goes
    finished = resume_run(out, RunRequest(kernel=TRIVIAL, budget=30, domains=dict(domains, x=declared))).run()
    assert finished.reason in ("budget", "exhausted"), finished.message
    again = load_session(out)
    assert not any(" in (" in text for text in again.space.restrictions), again.space.restrictions
    assert {t.config["x"] for t in again.trials[25:]} - {5, 6, 7}


def test_narrowing_a_wide_slot_to_values_no_trial_has_continues_and_holds(tmp_path: Path) -> None:
    """800 values narrowed to the 400 no trial had: the narrowing, one restriction of 2,800
    characters, was refused by the space, and the continuation with it."""
    bench = tmp_path / "wide_bench.py"
    bench.write_text("SPACE = {'x': list(range(10000, 10800))}\n\n\ndef measure(config):\n"
                     "    return {'latency_ms': 1.0 + (config['x'] % 97) / 100}\n")
    out = tmp_path / "s.json"
    session, finished = run_to_end(RunRequest(kernel=str(bench), strategy="random", budget=5), out)
    assert finished.reason == "budget", finished.message
    measured = {t.config["x"] for t in session.trials}
    keep = [x for x in range(10000, 10800) if x % 2 == 0 and x not in measured]
    finished = resume_run(out, RunRequest(kernel=str(bench), budget=6, domains={"x": keep})).run()
    assert finished.reason == "budget", finished.message
    finished = resume_run(out, RunRequest(kernel=str(bench), budget=12)).run()  # no edits: the narrowing holds
    assert finished.reason == "budget", finished.message
    assert {t.config["x"] for t in load_session(out).trials[5:]} <= set(keep)


def test_a_restriction_added_by_hand_to_a_replays_session_is_refused_not_ignored(cli, tmp_path: Path) -> None:
    """A recording's space is what was measured (the window refuses to edit it): a restriction
    written into such a session's file was kept there while every continued run ignored it."""
    cache = FIXTURES / "kt_cache_small.json"
    out = tmp_path / "r.json"
    assert cli("tune", "--replay", cache, "--budget", "3", "--quiet", "--out", out).returncode == 0
    data = json.loads(out.read_text())
    name = data["space"]["slots"][0]["name"]
    data["space"]["restrictions"] = [*data["space"]["restrictions"], f"{name} > 0"]
    out.write_text(json.dumps(data))
    before = out.read_bytes()
    done = cli("tune", "--resume", out, "--budget", "5", "--quiet")
    assert done.returncode == 2 and f"the session's space has the restriction '{name} > 0'" in one_line_error(done)
    assert out.read_bytes() == before


def test_out_dash_is_refused_where_a_command_writes_a_session(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """export --out - prints to standard output; tune and import-kt write session files, so '-'
    is refused there rather than creating a file called '-'."""
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "c.json"
    cache.write_text(json.dumps({"tune_params_keys": ["b"], "tune_params": {"b": [1]},
                                 "cache": {"1": {"b": 1, "time": 1.0}}}))
    for argv in (["tune", "vector_add", "--backend", "sim", "--budget", "2", "--out", "-"],
                 ["import-kt", str(cache), "--out", "-"]):
        assert "--out -: this command writes a file" in one_line_error(cli(*argv))
    assert not (tmp_path / "-").exists() and not (ROOT / "-").exists()


VECTOR_ADD_RESTRICTIONS = ("grid_stride or grid_blocks == 264", "block_size * items_per_thread * vector_width <= 32768")
VECTOR_ADD_DOMAINS = {"block_size": [32, 64, 128, 256, 512, 1024], "items_per_thread": [1, 2, 4, 8, 16],
                      "grid_stride": [False, True], "grid_blocks": [264, 528, 1056, 2112, 4224],
                      "vector_width": [1, 2, 4]}


def test_an_edited_space_holds_when_the_session_is_continued_without_edits(tmp_path: Path) -> None:
    """Resuming with no edits searches the session's edited space, not the template's (a value
    outside it was measured, and the session could not be saved with it); a default config the
    edit left out is no part of the session, which opens again."""
    out = tmp_path / "s.json"
    narrow = dict(VECTOR_ADD_DOMAINS, block_size=[64, 512], items_per_thread=[1, 2])  # the default is 256 x 1
    session, finished = run_to_end(RunRequest(kernel="vector_add", backend="sim", budget=4, domains=narrow), out)
    assert finished.reason == "budget" and session.default_config is None
    session, finished = run_to_end(RunRequest(budget=12), out, resume=True)
    assert finished.reason == "budget", finished.message
    reloaded = load_session(out)
    assert len(reloaded.trials) == 16
    assert {t.config["block_size"] for t in reloaded.trials} <= {64, 512}
    assert {t.config["items_per_thread"] for t in reloaded.trials} <= {1, 2}


def test_continuing_with_domains_that_leave_out_measured_values_runs_every_strategy(tmp_path: Path) -> None:
    """The earlier trials stay the session's; the strategy learns from those within its domains
    (before: the agents, genetic, hybrid and tpe ended the run with a KeyError encoding them)."""
    for name in ("agents", "genetic", "tpe", "hybrid"):
        out = tmp_path / f"{name}.json"
        session, _ = run_to_end(RunRequest(kernel="vector_add", backend="sim", budget=4, strategy=name), out)
        measured = {t.config["block_size"] for t in session.trials}
        keep = [v for v in VECTOR_ADD_DOMAINS["block_size"] if v not in measured][:2]
        session, finished = run_to_end(RunRequest(budget=3, domains=dict(VECTOR_ADD_DOMAINS, block_size=keep)), out,
                                       resume=True)
        assert finished.reason == "budget", (name, finished.message)
        reloaded = load_session(out)
        assert len(reloaded.trials) == 7 and {t.config["block_size"] for t in reloaded.trials[4:]} <= set(keep)


@pytest.mark.parametrize("strategy", ["agents", "annealing", "genetic", "grid", "hybrid", "local", "random", "tpe"])
def test_continuing_under_tighter_restrictions_measures_what_is_left_of_the_narrowed_space(tmp_path: Path,
                                                                                          strategy: str) -> None:
    """The trials outside the narrowed space are not the strategy's to count: six of the eight
    strategies counted them as taken and ended the run "exhausted" with nothing measured."""
    out = tmp_path / "s.json"
    run_to_end(RunRequest(kernel=TRIVIAL, strategy=strategy, budget=40), out)
    narrowed = ["x < 3"]  # with the fixture's own restriction: 24 configs
    session, finished = run_to_end(RunRequest(kernel=TRIVIAL, strategy=strategy, budget=40, restrictions=narrowed),
                                   out, resume=True)
    inside = {t.config.id for t in session.trials if t.config["x"] < 3}
    assert finished.reason == "exhausted" and len(inside) == 24, (finished.evaluations, len(inside))


def test_a_space_whose_restrictions_exclude_every_config_is_refused_before_the_run(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    with pytest.raises(WorkbenchError, match=r"^vector_add: no config of the search space meets its restrictions "
                                             r"\(.*; block_size > 100000\)"):  # which kernel, which rules
        start_run(RunRequest(kernel="vector_add", backend="sim", budget=3,
                             restrictions=[*VECTOR_ADD_RESTRICTIONS, "block_size > 100000"]), out)
    assert not out.exists() and not journal_path(out).exists()


def test_a_restriction_that_cannot_be_computed_at_all_is_named_with_why_when_it_leaves_no_config(tmp_path: Path) -> None:
    """A restriction reading no slot whose arithmetic fails (a power too large) rules out every
    config; the refusal blamed the space, where the show and export of the same session recommend."""
    with pytest.raises(WorkbenchError, match=r"restriction '9\*\*9\*\*9 > 1' cannot be computed "
                                             r"\(9 \*\* 387420489 is too large\), so no config is valid"):
        start_run(RunRequest(kernel="vector_add", backend="sim", budget=3,
                             restrictions=[*VECTOR_ADD_RESTRICTIONS, "9**9**9 > 1"]), tmp_path / "s.json")


def test_a_space_too_sparse_to_search_is_refused_after_a_bounded_search_not_a_silent_minute(tmp_path: Path,
                                                                                            monkeypatch) -> None:
    """One restriction over every slot is checked only at the walk's last level: in 16.7 million
    configs none of which met it, the check took 54 s before saying anything."""
    import time

    from workbench.runner import controller

    bench = tmp_path / "sparse.py"
    bench.write_text('SPACE = {n: [1, 2, 4, 8, 16, 32, 64, 128] for n in "abcdefgh"}\n'
                     'RESTRICTIONS = ["a * b * c * d * e * f * g * h > 2 ** 60"]\n'
                     "def measure(c):\n    return {'latency_ms': 1.0}\n")
    monkeypatch.setattr(controller, "FIRST_VALID_SEARCH_S", 0.5)
    out = tmp_path / "s.json"
    started = time.monotonic()
    with pytest.raises(WorkbenchError, match=r"^sparse: no config meeting the restrictions \(a \* b .*\) was found "
                                             r"in 0\.5 s \([\d,]+ steps of a walk over 16,777,216 configs\): .*split "
                                             "it into restrictions of fewer slots"):
        start_run(RunRequest(kernel=str(bench), budget=3), out)
    assert time.monotonic() - started < 20 and not out.exists() and not journal_path(out).exists()
    # a sparse space that holds valid configs is searched: 3,003 of its 16.7 million meet this one,
    # which the ordered walk meets only after 13 s; configs drawn at random find one at once
    bench.write_text(bench.read_text().replace("> 2 ** 60", ">= 2 ** 50"))
    started = time.monotonic()
    run = start_run(RunRequest(kernel=str(bench), budget=1, workers=1, strategy="random"), out)
    run.release()  # (prepared: measuring its first config would count the space's valid configs first)
    assert time.monotonic() - started < 5
    # configs known to be valid (a session's, those to measure) answer without any search
    from workbench.core.domain.space import ProductSpace, Slot

    sparse = ProductSpace([Slot(n, (1, 2, 4, 8, 16, 32, 64, 128), "launch") for n in "abcdefgh"],
                          ["a * b * c * d * e * f * g * h >= 2 ** 55"])  # nine valid configs
    valid = {n: 128 for n in "abcdefgh"}
    assert sparse.first_valid(0.001, [{n: 1 for n in "abcdefgh"}, valid]) == valid


def test_an_objective_set_during_a_run_is_the_one_saved_with_the_session(tmp_path: Path, monkeypatch) -> None:
    """A re-targeted run saved the objective it started with, so ``--resume`` went back to it."""
    import threading

    from workbench.core.domain.objective import Constraints, Weights
    from workbench.core.domain.search_objective import Objective

    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.02")
    out = tmp_path / "s.json"
    run = start_run(RunRequest(kernel=SLOW, budget=400), out)
    worker = threading.Thread(target=run.run)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while len(run.session.trials) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        run.set_objective(Objective(Constraints(max_latency_ms=80.0), Weights({"latency_ms": 2.0})))
        while run.objective is None or run.objective.max_latency_ms != 80.0:
            time.sleep(0.01)
    finally:
        run.stop()
        worker.join(30)
    saved = load_session(out)
    assert saved.constraints.max_latency_ms == 80.0 and saved.weights.active() == {"latency_ms": 2.0}


def test_an_objective_the_start_would_refuse_is_refused_mid_run_and_the_run_keeps_its_own(tmp_path: Path) -> None:
    """``Run.set_objective`` took anything: a bound on a metric nothing reports (the rest of the run
    searched for nothing feasible), a bound no measurement meets, two objectives for a strategy of
    one score; the saved session then could not be continued. After the end it changed the session
    in memory only. Each is refused as the start refuses it, and nothing changes."""
    from workbench.core.domain.objective import Bound, Constraints, Weights
    from workbench.core.domain.search_objective import Objective

    out = tmp_path / "s.json"
    run = start_run(RunRequest(kernel="vector_add", backend="sim", budget=4, executor="inline"), out)
    kept = (run.session.constraints, run.session.weights, dict(run.session.strategy))
    refusals = {
        Objective(Constraints(extra=(Bound("foo_metric", "<=", 3.0),))): "metric 'foo_metric': no trial reports it",
        Objective(Constraints(extra=(Bound("regsters", "<=", 32.0),))): "did you mean 'registers'?",
        Objective(Constraints(max_latency_ms=-1.0)): "max latency must be positive",
        Objective(Constraints(extra=(Bound("dram_mb", "<=", -1.0),))): "dram_mb cannot be negative",
        Objective(weights=Weights({"zzz_score": 1.0}, directions={"zzz_score": 1})): "metric 'zzz_score'",
        Objective(objectives=("latency_ms", "registers")): "strategy 'agents' searches one score",
    }
    for objective, said in refusals.items():
        with pytest.raises(WorkbenchError, match=re.escape(said)):
            run.set_objective(objective)
        assert (run.session.constraints, run.session.weights, dict(run.session.strategy)) == kept
        assert run.objective is None or run.objective.constraints == kept[0]
    with pytest.raises(WorkbenchError, match="takes an Objective"):
        run.set_objective(Constraints(max_latency_ms=1.0))
    run.set_objective(Objective(Constraints(extra=(Bound("registers", "<=", 64.0),))))  # a metric the backend declares
    assert run.run().reason == "budget"
    with pytest.raises(WorkbenchError, match=r"the run has ended \(budget\)"):
        run.set_objective(Objective(Constraints(max_latency_ms=1.0)))
    assert run.session.constraints.max_latency_ms is None
    assert load_session(out).constraints.extra == (Bound("registers", "<=", 64.0),)


def test_two_runs_over_one_session_object_take_turns_and_both_save(tmp_path: Path) -> None:
    """Two runs prepared over one Session object (a script continuing it into two files) measured
    into it at once, numbered their trials alike, and neither could be saved ("index: 10 appears
    twice"). The second is refused while the first measures, keeps its lock, and runs afterwards."""
    import threading

    from workbench.runner.events import TrialFinished

    first_out, second_out = tmp_path / "a.json", tmp_path / "b.json"
    start = start_run(RunRequest(kernel="vector_add", backend="sim", budget=3, executor="inline"), first_out)
    start.run()
    session = load_session(first_out)
    request = RunRequest(kernel="vector_add", backend="sim", budget=4, executor="inline")
    first, second = prepare_run(request, session, first_out), prepare_run(request, session, second_out)
    refused: list[str] = []

    def try_second(event: object) -> None:
        if isinstance(event, TrialFinished) and not refused:
            with pytest.raises(WorkbenchError, match="is being measured by another run of this process") as caught:
                second.run()
            refused.append(str(caught.value))

    first.subscribe(try_second)
    worker = threading.Thread(target=first.run)
    worker.start()
    worker.join(60)
    assert refused and first.saved and len(load_session(first_out).trials) == 3 + 4
    with pytest.raises(SessionInUse):  # the refused run still holds its output
        start_run(request, second_out)
    assert second.run().reason == "budget" and second.saved  # its turn: numbered after the first's trials
    assert [t.index for t in load_session(second_out).trials] == list(range(3 + 4 + 4))


def test_a_subscriber_that_raises_is_said_once_and_the_run_measures_and_saves_all(tmp_path: Path, caplog) -> None:
    """A script's callback that raised ended the run with its error after a few trials and skipped
    the final save: the trials were in the journal only, and the next plain start asked for
    --resume. The run goes on; the error is said once, with its traceback."""
    import logging

    from workbench.runner.events import TrialFinished

    out = tmp_path / "s.json"
    run = start_run(RunRequest(kernel="vector_add", backend="sim", budget=6, executor="inline"), out)
    calls: list[int] = []

    def broken(event: object) -> None:
        if isinstance(event, TrialFinished):
            calls.append(event.trial.index)
            if len(calls) >= 3:
                raise ValueError("a bug in the script's callback")

    run.subscribe(broken)
    with caplog.at_level(logging.ERROR, logger="workbench.runner.events"):
        finished = run.run()
    assert finished.reason == "budget" and run.saved and len(load_session(out).trials) == 6
    assert len(calls) == 6  # it still gets every event
    said = [r for r in caplog.records if "a subscriber of the run" in r.getMessage()]
    assert len(said) == 1 and "raised on TrialFinished" in said[0].getMessage() and said[0].exc_info is not None


def test_a_file_copied_over_the_output_during_a_run_is_kept_as_bak(tmp_path: Path, monkeypatch, caplog) -> None:
    """The lock keeps other runs away, not a ``cp``: the final save wrote over the file put there."""
    import shutil
    import threading

    from workbench.runner.events import TrialFinished

    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.01")
    other = tmp_path / "other.json"
    new_trivial(other, 4)
    out = tmp_path / "s.json"
    run = start_run(RunRequest(kernel=SLOW, budget=12), out)
    copied = threading.Event()

    def on_event(event) -> None:
        if isinstance(event, TrialFinished) and not copied.is_set():
            shutil.copy(other, out)  # what a person's cp or editor does while the run goes on
            copied.set()

    run.subscribe(on_event)
    finished = run.run()
    assert finished.reason == "budget" and copied.is_set()
    assert load_session(tmp_path / "s.json.bak").id == load_session(other).id  # the copied session, kept
    assert len(load_session(out).trials) == 12
    assert "was replaced by something else during the run" in finished.message


def test_a_session_saved_during_its_own_run_is_no_replacement(tmp_path: Path, monkeypatch) -> None:
    """The window saves the session it runs into the same file: that is the run's own file."""
    from workbench.core.domain.session import save_session
    from workbench.runner.events import TrialFinished

    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.01")
    out = tmp_path / "s.json"
    run = start_run(RunRequest(kernel=SLOW, budget=6), out)
    run.subscribe(lambda e: run.engine.save_output(lambda: save_session(run.session, out, keep_journal=True))
                  if isinstance(e, TrialFinished) else None)
    assert run.run().reason == "budget"
    assert not (tmp_path / "s.json.bak").exists() and len(load_session(out).trials) == 6


def test_a_save_between_a_sweeps_sizes_is_no_replacement_either(tmp_path: Path) -> None:
    """Between sizes no size's run was there to take the window's Save through: a save still
    writing when the next size's run first looked at the file was kept as .bak at its end."""
    import threading
    import time

    from workbench.core.domain.session import save_session

    out = tmp_path / "s.json"
    sweep = start_run(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=3,
                                 sizes={"n": [4096, 1 << 16]},
                                 backend_options={"compile": "estimate", "delay_s": 0.25}), out)
    prepare, calls, saves = sweep._prepare, [], []

    def slow_save() -> None:
        time.sleep(0.3)  # a large session takes a while to write
        save_session(sweep.session, out, keep_journal=True)

    def prepare_next(problem, budget):
        calls.append(problem)
        if len(calls) == 2:  # between the sizes: the window's Save starts now
            saves.append(threading.Thread(target=sweep.save_output, args=(slow_save,)))
            saves[0].start()
            time.sleep(0.05)
        return prepare(problem, budget)

    sweep._prepare = prepare_next
    finished = sweep.run()
    saves[0].join()
    assert finished.reason == "budget", finished.message
    assert not (tmp_path / "s.json.bak").exists() and len(load_session(out).trials) == 6


def test_another_programs_edit_of_the_session_during_its_run_is_kept(tmp_path: Path, monkeypatch) -> None:
    """A file rewritten under the run with the same session in it (its notes edited by a script or
    an editor) was written over by the final save: the edit was gone, with no backup or word."""
    import json
    import threading

    from workbench.runner.events import TrialFinished

    monkeypatch.setenv("WORKBENCH_SLOW_S", "0.01")
    out = tmp_path / "s.json"
    run_to_end(RunRequest(kernel=SLOW, budget=2), out)
    run = start_run(RunRequest(kernel=SLOW, budget=4), out, resume=True)
    edited = threading.Event()

    def edit(event) -> None:
        if isinstance(event, TrialFinished) and not edited.is_set():
            doc = json.loads(out.read_text())
            doc["notes"] = "IMPORTANT NOTE"
            (tmp_path / "new.json").write_text(json.dumps(doc))
            os.replace(tmp_path / "new.json", out)
            edited.set()

    run.subscribe(edit)
    finished = run.run()
    assert edited.is_set() and "was replaced by something else during the run" in finished.message
    assert load_session(tmp_path / "s.json.bak").notes == "IMPORTANT NOTE"
    assert len(load_session(out).trials) == 6


def test_a_templates_own_restriction_cannot_be_dropped(tmp_path: Path) -> None:
    """Dropped, it let the search propose configs the template refuses to render: each one failed
    when measured, and with --prune the cost model's refusal ended the run in an error."""
    out = tmp_path / "s.json"
    with pytest.raises(WorkbenchError, match="restriction 'grid_stride or grid_blocks == 264' is vector_add's own"):
        start_run(RunRequest(kernel="vector_add", backend="sim", budget=3, restrictions=["block_size == 128"]), out)
    assert not out.exists()
    session, finished = run_to_end(RunRequest(kernel="vector_add", backend="sim", budget=400, prune_keep=0.5,
                                              restrictions=[*VECTOR_ADD_RESTRICTIONS, "block_size == 128"],
                                              backend_options={"compile": "estimate"}), out)
    assert finished.reason == "exhausted" and all(t.ok for t in session.trials), finished.message


def _stored_vector_add(out: Path) -> Session:
    run_to_end(RunRequest(kernel="vector_add", backend="sim", budget=3, backend_options={"compile": "estimate"}), out)
    return load_session(out)


def test_a_session_whose_slots_are_not_its_templates_is_refused_before_anything_is_measured(tmp_path: Path) -> None:
    """An edited file (or a template changed since the save) with a slot the template lacks was
    measured against the template's space, then could not be saved: the new trials were lost and
    the journal left behind made the session unopenable until deleted by hand."""
    import dataclasses

    from workbench.core.domain.space import Config, SearchSpace, Slot

    out = tmp_path / "s.json"
    session = _stored_vector_add(out)
    space = session.space
    session.space = SearchSpace([*space.slots, Slot("zz", (0, 1), "launch")], list(space.restrictions), dict(space.params))
    session.trials = [dataclasses.replace(t, config=Config({**t.config.to_dict(), "zz": 0})) for t in session.trials]
    save_session(session, out)
    before = out.read_bytes()
    with pytest.raises(WorkbenchError, match=r"^the session's slots \(block_size, .*, zz\) are not vector_add's "):
        resume_run(out, RunRequest(budget=3))
    assert out.read_bytes() == before and not journal_path(out).exists()
    assert len(load_session(out).trials) == 3


@pytest.mark.parametrize("edit, message", [
    ({"domains": {"block_size": [32, 33, 64]}}, r"the session's space: block_size=33 is not among the values vector_add "
                                                r"declares \(32, 64, 128, 256, 512, 1024\)"),
    ({"restrictions": [VECTOR_ADD_RESTRICTIONS[1]]}, r"the session's space: restriction 'grid_stride or grid_blocks == 264' "
                                                    r"is vector_add's own"),
])
def test_a_session_space_beyond_its_templates_values_or_restrictions_is_refused(tmp_path: Path, edit: dict,
                                                                                message: str) -> None:
    """The window refuses such edits; a session file carried them past it, and every config outside
    the template's declared values or restrictions became a failed trial of the run."""
    out = tmp_path / "s.json"
    session = _stored_vector_add(out)
    kept = {name: sorted({t.config[name] for t in session.trials}) for name in session.space.names}
    if "domains" in edit:
        domain = sorted(set(edit["domains"]["block_size"]) | set(kept["block_size"]))
        session.space = session.space.with_domains({"block_size": domain})
    else:
        session.space = session.space.with_restrictions(edit["restrictions"])
    save_session(session, out)
    with pytest.raises(WorkbenchError, match=message):
        resume_run(out, RunRequest(budget=3))
    assert len(load_session(out).trials) == 3 and not journal_path(out).exists()


def test_an_edited_domain_with_a_value_the_template_does_not_declare_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    with pytest.raises(WorkbenchError, match=r"^the edited space: block_size=48 is not among the values vector_add declares"):
        start_run(RunRequest(kernel="vector_add", backend="sim", budget=3,
                             domains=dict(VECTOR_ADD_DOMAINS, block_size=[32, 48, 64])), out)
    assert not out.exists()


def test_the_cost_model_predicts_failure_for_a_config_its_template_refuses() -> None:
    import math

    from workbench.backends.base import BackendSpec
    from workbench.core.domain.space import Config
    from workbench.runner.costmodel import sim_predictor

    predict = sim_predictor(BackendSpec("sim", {"kernel": "vector_add"}))
    refused = Config({"block_size": 128, "items_per_thread": 16, "grid_stride": False, "grid_blocks": 4224,
                      "vector_width": 4})
    assert predict.predict(refused) == math.inf and not predict(refused).ok


def test_a_space_too_large_for_the_default_strategy_runs_with_the_fallback_and_says_so(tmp_path: Path) -> None:
    noop = str(FIXTURES / "noop_bench.py")  # one slot of 100,000 values
    run = start_run(RunRequest(kernel=noop, budget=3), tmp_path / "s.json")
    assert run.session.strategy["name"] == "tpe"
    assert any("default strategy 'agents' cannot search this space" in w for w in run.warnings)
    assert run.run().reason == "budget"
    with pytest.raises(WorkbenchError, match="strategy 'agents' cannot search this space"):  # named: said, not swapped
        start_run(RunRequest(kernel=noop, strategy="agents", budget=3), tmp_path / "t.json")


def test_a_replay_pace_longer_than_the_run_timeout_times_nothing_out(tmp_path) -> None:
    """The pace is kept between candidates, not inside them: a pace over the run timeout (slept in
    each evaluation, it turned every recorded trial into a timeout and had to be refused) plays
    the recording as recorded."""
    from workbench.runner.controller import start_run

    cache = str(FIXTURES / "kt_cache_small.json")
    out = tmp_path / "paced.json"
    run = start_run(RunRequest(replay=cache, budget=2, backend_options={"delay_s": 0.8}, run_timeout_s=0.5), out)
    run.run()
    assert [t.status for t in load_session(out).trials] == [Status.OK, Status.OK]


def test_no_command_writes_over_an_output_the_person_made_read_only(cli, tmp_path: Path) -> None:
    """An earlier export is replaced without --force, and the replace is a rename the file's mode
    does not stop: a read-only one was written over (and came back writable). Every command's
    output goes through one rule: a read-only file is refused, --force or not."""
    out = tmp_path / "s.json"
    new_trivial(out, 3)
    export = tmp_path / "best.json"
    assert cli("export", str(out), "--format", "json", "--out", str(export)).returncode == 0
    export.chmod(0o444)
    before = export.read_bytes()
    for extra in ((), ("--force",)):
        line = one_line_error(cli("export", str(out), "--format", "header", "--out", str(export), *extra))
        assert line == f"error: {export} is read-only; make it writable or write to another --out"
    imported = tmp_path / "imported.json"
    assert cli("import-kt", str(FIXTURES / "kt_cache_small.json"), "--out", str(imported)).returncode == 0
    imported.chmod(0o444)
    assert "is read-only" in one_line_error(
        cli("import-kt", str(FIXTURES / "kt_cache_small.json"), "--out", str(imported), "--force"))
    assert export.read_bytes() == before and export.stat().st_mode & 0o777 == 0o444


def _with_journal(path: Path, session: Session, extra: int) -> None:
    """``session`` saved at ``path`` with ``extra`` more trials in a journal beside it, as a run
    killed after measuring them leaves it."""
    from workbench.core.domain.measurement import Measurement, Status, Trial
    from workbench.core.domain.session import save_session

    save_session(session, path)
    journal = Journal(path)
    journal.start(session)
    configs = [c for c in session.space if c.id not in {t.config.id for t in session.trials}][:extra]
    for k, config in enumerate(configs):
        journal.append(Trial(len(session.trials) + k, config, Measurement(Status.OK, {"latency_ms": 1.0 + k})))
    journal.close()


def test_saving_over_a_file_a_killed_run_left_a_journal_beside_keeps_both_as_one_backup(tmp_path: Path) -> None:
    """The window's Save As onto such a file copied the file alone to .bak: the journal stayed beside
    the saved session, which then would not open, and the killed run's trials were in no file that
    did."""
    from workbench.core.domain.session import load_session
    from workbench.runner.controller import catch_up

    target, other = tmp_path / "target.json", tmp_path / "other.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", budget=3, backend_options={"compile": "estimate"}), target)
    _with_journal(target, load_session(target), 4)
    run_to_end(RunRequest(kernel="vector_add", backend="sim", budget=2, seed=9, backend_options={"compile": "estimate"}),
               other)
    mine = load_session(other)
    target.chmod(0o444)  # made read-only: refused before anything is kept or moved
    with pytest.raises(WorkbenchError, match="is read-only"):
        catch_up(mine, target, replace=True)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("target")) == [
        "target.json", "target.json.journal"]
    target.chmod(0o644)
    catch_up(mine, target, replace=True)  # what Save As does once replacing was confirmed
    assert len(load_session(target).trials) == 3  # the file stays until the save renames over it
    from workbench.core.domain.session import save_session

    save_session(mine, target)
    assert len(load_session(target).trials) == 2 and not journal_path(target).exists()
    assert len(load_session(tmp_path / "target.json.bak").trials) == 7


def test_force_over_a_file_beside_another_sessions_journal_keeps_each_openable(tmp_path: Path) -> None:
    """tune --force paired such a journal with the backup, which then would not open either."""
    from workbench.core.domain.session import load_session

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    run_to_end(RunRequest(kernel="vector_add", backend="sim", budget=2, backend_options={"compile": "estimate"}), a)
    run_to_end(RunRequest(kernel="vector_add", backend="sim", budget=2, seed=3, backend_options={"compile": "estimate"}), b)
    _with_journal(tmp_path / "journal_of_b.json", load_session(b), 3)
    os.replace(journal_path(tmp_path / "journal_of_b.json"), journal_path(a))  # b's killed run, beside a
    (tmp_path / "journal_of_b.json").unlink()
    run_to_end(RunRequest(kernel="vector_add", backend="sim", budget=2, seed=5, backend_options={"compile": "estimate"}),
               a, force=True)
    assert len(load_session(a).trials) == 2 and len(load_session(tmp_path / "a.json.bak").trials) == 2
    alone = tmp_path / "a.journal-only.json.bak"  # b's journal, kept apart: it opens by itself
    assert not journal_path(tmp_path / "a.json.bak").exists() and len(load_session(alone).trials) == 5
    # beside a file that is no session at all, the same
    (tmp_path / "c.json").write_text('{"hello": 1}')
    _with_journal(tmp_path / "journal_of_b.json", load_session(b), 3)
    os.replace(journal_path(tmp_path / "journal_of_b.json"), journal_path(tmp_path / "c.json"))
    run_to_end(RunRequest(kernel="vector_add", backend="sim", budget=2, seed=5, backend_options={"compile": "estimate"}),
               tmp_path / "c.json", force=True)
    assert len(load_session(tmp_path / "c.journal-only.json.bak").trials) == 5


def test_force_over_a_file_beside_a_damaged_journal_keeps_it_without_promising_it_opens(tmp_path: Path, caplog) -> None:
    """The warning said "show X opens it" of a journal that opens nowhere (a damaged line)."""
    import logging

    d = tmp_path / "d.json"
    request = RunRequest(kernel="vector_add", backend="sim", budget=2, backend_options={"compile": "estimate"})
    run_to_end(request, d)
    journal_path(d).write_text("garbage that is no journal\n{}\n")
    with caplog.at_level(logging.WARNING):
        run_to_end(request, d, force=True)
    kept = journal_path(tmp_path / "d.journal-only.json.bak")
    assert kept.read_text() == "garbage that is no journal\n{}\n"
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "kept as d.journal-only.json.bak.journal (it does not open on its own either: " in said
    assert "opens it" not in said


def test_a_damaged_autosave_is_never_carried_out_of_the_autosave_folder(tmp_path: Path) -> None:
    """A link planted as the ``damaged`` folder took the damaged autosave to where it pointed."""
    from workbench.runner.autosave import DAMAGED_FOLDER, set_aside

    folder, outside = tmp_path / "autosave", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    bad = folder / "bad-2.json"
    bad.write_bytes(b"\x00garbage")
    (folder / DAMAGED_FOLDER).symlink_to(outside)
    assert set_aside(bad) is None
    assert bad.read_bytes() == b"\x00garbage" and list(outside.iterdir()) == []
    (folder / DAMAGED_FOLDER).unlink()
    assert set_aside(bad) == folder / DAMAGED_FOLDER and (folder / DAMAGED_FOLDER / "bad-2.json").exists()


def test_a_folder_named_like_an_autosave_is_not_offered_before_the_real_ones(tmp_path: Path, monkeypatch) -> None:
    """A folder ``dir-2.json`` in the autosave folder, the newest entry, was offered at every start
    and refused, and the older, readable autosave behind it was never offered."""
    import os as _os

    from workbench.runner.autosave import recoverable

    folder = tmp_path / "autosave"
    folder.mkdir()
    good = folder / "good-1.json"
    new_trivial(tmp_path / "made.json", 2)
    (tmp_path / "made.json").rename(good)  # (what a crashed window's run leaves there)
    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(folder))
    (folder / "dir-2.json").mkdir()
    _os.mkfifo(folder / "fifo-3.json.journal")
    assert recoverable() == [good]


@pytest.mark.parametrize("lock", ["link", "pid"])
def test_an_autosave_whose_lock_is_not_ours_is_said_and_not_offered_before_the_others(tmp_path: Path, monkeypatch,
                                                                                       lock: str) -> None:
    """Its recovery was refused at every start and, the newest, it stood before every older one."""
    import os as _os
    import time as _time

    from workbench.core.io.session_lock import lock_path
    from workbench.runner.autosave import recoverable

    folder = tmp_path / "autosave"
    folder.mkdir()
    for name in ("good-1.json", "bad-2.json"):
        new_trivial(tmp_path / "made.json", 2)
        (tmp_path / "made.json").rename(folder / name)
        _time.sleep(0.01)
    bad = folder / "bad-2.json"
    if lock == "link":
        lock_path(bad).symlink_to(tmp_path / "elsewhere")
    else:
        lock_path(bad).write_text(f"{_os.getpid()}\n")  # another program's pid file of a live process
    monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(folder))
    skipped: list[str] = []
    assert recoverable(skipped=skipped) == [folder / "good-1.json"]
    assert len(skipped) == 1 and skipped[0].startswith("autosave bad-2.json not offered: its lock file bad-2.json.lock ")
    assert bad.exists()


def test_an_autosave_a_live_earlier_version_holds_is_left_alone_not_called_foreign(tmp_path: Path, monkeypatch) -> None:
    """A running window of an earlier version holds its autosave's lock with a bare pid in it: that
    is a lock in use, to be left out quietly, not another program's file to be removed."""
    import subprocess
    import sys

    from workbench.core.io.session_lock import lock_path
    from workbench.runner.autosave import recoverable

    folder = tmp_path / "autosave"
    folder.mkdir()
    held = folder / "live-1.json"
    new_trivial(tmp_path / "made.json", 2)
    (tmp_path / "made.json").rename(held)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(lock_path(held))!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.write(fd, str(os.getpid()).encode())\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("KERNEL_WORKBENCH_AUTOSAVE_DIR", str(folder))
        skipped: list[str] = []
        assert recoverable(skipped=skipped) == [] and skipped == []
    finally:
        holder.kill()
        holder.wait()


def test_every_per_user_folder_reads_its_override_the_same_way(tmp_path: Path, monkeypatch) -> None:
    """``KERNEL_WORKBENCH_DATA_DIR=~/wb`` (an environment file does not expand ``~``) put the editor's
    templates in the home folder and the autosaves in a folder named ``~`` under the working
    directory: each folder read the variable its own way."""
    from workbench.core.domain.kernel_spec import user_templates_dir
    from workbench.core.model.compiler import cache_dir
    from workbench.core.fs import user_folder
    from workbench.runner.autosave import autosave_dir, data_dir

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    for kind in ("DATA", "CONFIG", "CACHE", "AUTOSAVE"):
        monkeypatch.setenv(f"KERNEL_WORKBENCH_{kind}_DIR", f"~/wb-{kind.lower()}")
    assert data_dir() == home / "wb-data" and user_templates_dir() == home / "wb-data" / "templates"
    assert autosave_dir() == home / "wb-autosave"
    assert user_folder("config") == home / "wb-config" and cache_dir() == home / "wb-cache"
    monkeypatch.delenv("KERNEL_WORKBENCH_AUTOSAVE_DIR")
    assert autosave_dir() == home / "wb-data" / "autosave"
    monkeypatch.delenv("KERNEL_WORKBENCH_DATA_DIR")  # the platform's folder, never the working directory
    assert data_dir().is_absolute() and data_dir().name == "kernel-workbench"


def test_an_export_or_copy_of_a_session_a_run_still_writes_says_it_is_of_the_trials_so_far(cli, tmp_path: Path) -> None:
    """Both worked on a snapshot without a word, so a recommendation exported from a half-finished
    run read as a final one."""
    from workbench.core.io.session_lock import SessionLock

    session = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--executor", "inline",
               "--budget", "3", "--out", str(session), "--quiet").returncode == 0
    with SessionLock(session):  # a run writing it (a lock held is held, whichever process holds it)
        exported = cli("export", str(session), "--format", "csv", "--out", str(tmp_path / "t.csv"))
        assert exported.returncode == 0 and "is open in a run or window that may still add trials to it: this " \
            "export is of the trials it holds now" in exported.stderr, exported.stderr
        copied = cli("tune", "--resume", str(session), "--out", str(tmp_path / "copy.json"), "--budget", "1", "--quiet")
        assert copied.returncode == 0 and "the session continued into" in copied.stderr, copied.stderr
        shown = cli("show", str(session), "--json")  # a partial count said (a nightly job read it as final)
        assert shown.returncode == 0 and "may still add trials to it: what is shown is of the trials it holds now" in shown.stderr
        assert json.loads(shown.stdout)["trials"] == 3  # the JSON on stdout alone, whole
    assert "being written" not in cli("show", str(session)).stderr
    again = cli("export", str(session), "--format", "csv", "--out", str(tmp_path / "t2.csv"))
    assert again.returncode == 0 and "being written" not in again.stderr
    resumed = cli("tune", "--resume", str(session), "--budget", "1", "--quiet")  # in place: its own lock
    assert resumed.returncode == 0 and "being written" not in resumed.stderr, resumed.stderr


def test_a_session_whose_indices_are_used_up_is_not_continued_past_them(cli, tmp_path: Path) -> None:
    """A trial at index 2**63-1 (which a file may hold): the continued run saved its new trials at
    2**63 and on, a file its own loader refused, with every trial in it, and ended in a traceback."""
    session = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--executor", "inline",
               "--budget", "3", "--out", str(session), "--quiet").returncode == 0
    doc = json.loads(session.read_text())
    doc["trials"][2]["index"] = 2**63 - 2
    session.write_text(json.dumps(doc))
    before = session.read_bytes()
    refused = cli("tune", "--resume", str(session), "--budget", "3")
    assert "leaves room for 1 more trial of the 2**63 a session holds, not 3" in one_line_error(refused)
    assert session.read_bytes() == before
    done = cli("tune", "--resume", str(session), "--budget", "1", "--quiet")  # the last index there is
    assert done.returncode == 0, done.stderr
    assert max(t.index for t in load_session(session).trials) == 2**63 - 1


def test_re_measuring_or_sweeping_a_session_whose_indices_are_used_up_is_refused_before_it_runs(
        cli, tmp_path: Path) -> None:
    """The index check held for a continued run only: re-measuring aborted trials went past
    2**63-1 (a traceback, and a file that did not open), and a sweep ran its first sizes first."""
    session = tmp_path / "s.json"
    assert cli("tune", "sgemm", "--backend", "sim", "--resources", "estimated", "--executor", "inline",
               "--budget", "3", "--max-latency-ms", "0.001", "--out", str(session), "--quiet").returncode == 0
    doc = json.loads(session.read_text())
    doc["trials"][2]["index"] = 2**63 - 1
    session.write_text(json.dumps(doc))
    before = session.read_bytes()
    refused = cli("tune", "--remeasure-aborted", "--out", str(session), "--max-latency-ms", "100")
    said = one_line_error(refused)
    assert "leaves room for 0 more trials of the 2**63 a session holds, not 3; re-measure them in a new session" in said
    refused = cli("tune", "--resume", str(session), "--sizes", "m=64,128", "--budget", "2")
    assert "leaves room for 0 more trials" in one_line_error(refused)
    assert session.read_bytes() == before


@pytest.mark.parametrize("field, value, kind", [
    ("budget", "10", "a whole number"), ("workers", 2.0, "a whole number"), ("kernel", 123, "text"),
    ("constraints", {"max_latency_ms": 1.0}, "a Constraints"), ("weights", {"latency_ms": 1.0}, "a Weights"),
    ("objectives", "latency_ms", "a list or tuple of text (not one string)"), ("devices", 0, "a list or tuple"),
    ("sizes", {"n"}, "a dict"), ("time_limit_s", "60", "a number"), ("warm_start", 1, "True or False"),
])
def test_a_request_of_the_wrong_kind_of_value_is_refused_where_it_is_built(field, value, kind) -> None:
    """A script's RunRequest(budget="10") failed deep in the run with a TypeError, a dict of
    constraints with an AttributeError, and objectives="latency_ms" was read letter by letter."""
    with pytest.raises(WorkbenchError, match=rf"^RunRequest {field}: expected {re.escape(kind)}"):
        RunRequest(**{"kernel": "vector_add", field: value})
    # a path object names a file as its text does; NumPy's numbers, flags and arrays are taken
    assert RunRequest(kernel=Path("bench.py"), kernel_dirs=[Path("k")]).kernel_dirs == ("k",)
    import numpy as np

    taken = RunRequest(kernel="k", budget=np.int64(3), noise=np.bool_(False), time_limit_s=np.float32(2.5),
                       devices=np.array([0, 1]))
    assert taken.devices == (0, 1) and taken.budget == 3
    assert RunRequest(kernel=Path("bench.py")).kernel == "bench.py"


@pytest.mark.parametrize("seed", [-1, 2**63, 1.5])
def test_a_scripts_run_with_a_seed_that_is_not_one_is_refused_before_anything_is_written(tmp_path, seed):
    """``run_to_end`` from a script: NumPy's own error from inside the generator was all it said."""
    out = tmp_path / "run.json"
    with pytest.raises(WorkbenchError, match=r"seed .*: a seed is an integer from 0 to 2\*\*63-1"):
        run_to_end(RunRequest(kernel="vector_add", backend="sim", strategy="random", budget=2, seed=seed), out)
    assert list(tmp_path.iterdir()) == []


def test_a_relative_output_through_a_linked_folder_is_the_file_the_system_names(tmp_path: Path, monkeypatch) -> None:
    """``link/..`` goes up from the link's target. The output fixed at the start with
    ``os.path.abspath`` dropped ``link/..`` as text: the run wrote another session over one that
    was there, without --force or a backup, and took another file's lock."""
    real, work = tmp_path / "real", tmp_path / "work"
    (real / "dir").mkdir(parents=True)
    work.mkdir()
    (work / "link").symlink_to(real / "dir")
    monkeypatch.chdir(work)
    new_trivial(work / "s.json", 3)
    held = SessionLock(real / "s.json").acquire()
    try:
        assert os.path.realpath(SessionLock("link/../s.json").path) == os.path.realpath(held.path)
        with pytest.raises(SessionInUse):
            start_run(RunRequest(kernel=TRIVIAL, strategy="random", budget=2), "link/../s.json")
    finally:
        held.release()
    session, finished = run_to_end(RunRequest(kernel=TRIVIAL, strategy="random", budget=2), "link/../s.json")
    assert finished.reason == "budget"
    assert len(load_session(real / "s.json").trials) == 2 and len(load_session(work / "s.json").trials) == 3
    # into a folder the link leads to that the text would not: its temporary files go there too
    # (tempfile normalised link/.. as text, and the journal's write failed where work/sub is none)
    (real / "sub").mkdir()
    session, finished = run_to_end(RunRequest(kernel=TRIVIAL, strategy="random", budget=2), "link/../sub/s.json")
    assert finished.reason == "budget" and len(load_session(real / "sub" / "s.json").trials) == 2
