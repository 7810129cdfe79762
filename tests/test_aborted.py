"""Early abort keeps the fact: a lower bound on the latency and why, re-measurable in one action."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core.domain.measurement import Status
from workbench.core.domain.session import load_session

pytestmark = pytest.mark.timeout(120)


def test_an_abort_is_neither_ok_nor_a_failure_and_every_other_outcome_but_ok_is_one() -> None:
    """The one rule the run's counts, the failure log, the table's "failed" filter and the search
    share: an aborted candidate was stopped on purpose."""
    assert [s for s in Status if not s.is_failure] == [Status.OK, Status.ABORTED]
    assert Status.ABORTED.failed and not Status.OK.failed


def test_aborted_candidates_keep_a_bound_and_come_back_when_the_limit_is_relaxed(tmp_path: Path, capsys) -> None:
    out = tmp_path / "s.json"
    assert main(["tune", "transpose", "--backend", "sim", "--budget", "12", "--seed", "1", "--quiet",
                 "--executor", "inline", "--max-latency-ms", "0.06", "--out", str(out)]) == 0
    session = load_session(out)
    aborted = [t for t in session.trials if t.status is Status.ABORTED]
    assert aborted, "a 0.06 ms limit on transpose aborts most candidates"
    for t in aborted:
        bound = t.metric("latency_bound_ms")
        assert bound > 1.5 * 0.06 and t.measurement.message.startswith(f"aborted above {bound:.4g} ms")
    capsys.readouterr()
    assert main(["show", str(out), "--json", "--trials"]) == 0
    listed = json.loads(capsys.readouterr().out)["trial_list"]
    assert all(item["latency_bound_ms"] is not None for item in listed if item["status"] == "aborted")

    limit = sorted(t.metric("latency_bound_ms") for t in aborted)[len(aborted) // 2]  # half come back
    assert main(["tune", "--remeasure-aborted", "--out", str(out), "--max-latency-ms", str(limit), "--quiet"]) == 0
    again = load_session(out)
    back = [t for t in again.trials[len(session.trials):]]
    expected = {t.config.id for t in aborted if t.metric("latency_bound_ms") <= limit}
    assert {t.config.id for t in back} == expected  # exactly those the relaxed limit no longer rules out
    assert all(t.ok for t in back)
    for t in back:  # the bound was a lower bound on what full timing measured
        bound = next(a.metric("latency_bound_ms") for a in aborted if a.config.id == t.config.id)
        assert t.metric("latency_ms") >= bound
    assert again.constraints.max_latency_ms == limit
    assert len(again.trials) == len(session.trials) + len(back)  # the aborted records stay: facts
    # asked again: the ones measured since are said apart from those still over the limit
    capsys.readouterr()
    before = out.read_bytes()
    assert main(["tune", "--remeasure-aborted", "--out", str(out), "--max-latency-ms", str(limit), "--quiet"]) == 0
    said = capsys.readouterr()
    assert (f"{len(aborted)} candidates stopped early, {len(back)} of them measured again in full since, "
            f"the other {len(aborted) - len(back)} still over the latency limit in force ({limit!r} ms)") in said.out
    # the objective flags given then are not stored (nothing is written), and that is said
    assert out.read_bytes() == before
    assert f"note: {out} is unchanged: the objective flags become the session's with what they re-measure" in said.err


def test_remeasure_aborted_refuses_a_session_of_other_code(tmp_path: Path, capsys) -> None:
    """Re-measuring adds trials of the code found now beside the session's: code other than what
    the session measured is refused, as a continued run refuses it, and nothing is written."""
    from workbench.core.domain.session import save_session

    out = tmp_path / "s.json"
    assert main(["tune", "transpose", "--backend", "sim", "--budget", "12", "--seed", "1", "--quiet",
                 "--executor", "inline", "--max-latency-ms", "0.06", "--out", str(out)]) == 0
    session = load_session(out)
    session.source_hash = "0" * 16  # measured with other code than the template has now
    save_session(session, out)
    before = out.read_bytes()
    capsys.readouterr()
    assert main(["tune", "--remeasure-aborted", "--out", str(out), "--max-latency-ms", "10", "--quiet"]) == 2
    assert "the kernel's code changed since the session was measured" in capsys.readouterr().err
    assert out.read_bytes() == before


def test_a_replays_aborted_candidates_are_not_re_measured_in_a_loop(tmp_path: Path, capsys) -> None:
    """A recording holds only where an aborted candidate stopped: re-measuring a replay of it
    replayed the same stop, added it beside the first and advised re-measuring again, for ever."""
    from workbench.runner.controller import nothing_to_remeasure

    recorded, replayed = tmp_path / "rec.json", tmp_path / "rep.json"
    assert main(["tune", "transpose", "--backend", "sim", "--budget", "12", "--seed", "1", "--quiet",
                 "--executor", "inline", "--max-latency-ms", "0.06", "--out", str(recorded)]) == 0
    assert main(["tune", "--replay", str(recorded), "--budget", "12", "--quiet", "--executor", "inline",
                 "--max-latency-ms", "100", "--out", str(replayed)]) == 0
    session = load_session(replayed)
    assert any(t.status is Status.ABORTED for t in session.trials)
    before = replayed.read_bytes()
    capsys.readouterr()
    assert main(["tune", "--remeasure-aborted", "--out", str(replayed), "--quiet"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("error: nothing to re-measure: this session replays a recording"), said
    assert replayed.read_bytes() == before
    assert (nothing_to_remeasure(session) or "").startswith("nothing to re-measure: this session replays")  # the window's button


def test_a_replay_with_nothing_feasible_does_not_advise_re_measuring_it(tmp_path: Path, capsys) -> None:
    """The tune summary and show of a replay whose candidates all stopped early said "relax it to
    re-measure them", pointing at a command that a replay refuses."""
    recorded, replayed = tmp_path / "rec.json", tmp_path / "rep.json"
    assert main(["tune", "transpose", "--backend", "sim", "--budget", "12", "--seed", "1", "--quiet",
                 "--executor", "inline", "--max-latency-ms", "0.001", "--out", str(recorded)]) == 0
    capsys.readouterr()
    assert main(["tune", "--replay", str(recorded), "--budget", "12", "--executor", "inline",
                 "--max-latency-ms", "0.001", "--out", str(replayed)]) == 0
    said = capsys.readouterr().out
    assert "stopped early as hopeless under a latency limit; the recording holds only the bound each stopped " \
           "at: re-measure them in the session that recorded them" in said, said
    assert "re-measure them (" not in said and "relax it to re-measure" not in said
    assert main(["show", str(replayed), "--json"]) == 0
    why = json.loads(capsys.readouterr().out)["why_none"]
    assert "re-measure them in the session that recorded them" in why and "--remeasure-aborted" not in why
    assert main(["show", str(recorded), "--json"]) == 0  # the recording's own session says how
    assert "relax it to re-measure them" in json.loads(capsys.readouterr().out)["why_none"]


def test_remeasure_aborted_needs_an_existing_session(tmp_path: Path, capsys) -> None:
    assert main(["tune", "--remeasure-aborted", "--out", str(tmp_path / "none.json")]) == 2
    assert "existing session" in capsys.readouterr().err


def test_relaxing_the_latency_limit_mid_run_stops_aborting_at_the_old_bound(tmp_path: Path) -> None:
    """The early-abort threshold travels with each candidate: after the limit is relaxed mid-run, new
    candidates are timed in full instead of being aborted at the bound the run started with."""
    from workbench.core.domain.objective import Constraints
    from workbench.core.domain.search_objective import Objective
    from workbench.runner.controller import RunRequest, start_run
    from workbench.runner.events import TrialFinished

    tight = 0.06
    request = RunRequest(kernel="transpose", backend="sim", budget=14, seed=1, workers=1,
                         constraints=Constraints(max_latency_ms=tight))
    run = start_run(request, tmp_path / "s.json")
    assert run.engine.limits.max_latency_ms == tight
    switch_after = 6
    seen: list[int] = []

    def relax(event: object) -> None:
        if isinstance(event, TrialFinished):
            seen.append(event.trial.index)
            if len(seen) == switch_after:
                run.engine.set_objective(Objective(Constraints(max_latency_ms=100.0), run.session.weights))

    run.subscribe(relax)
    run.run()
    trials = sorted(run.session.trials, key=lambda t: t.index)
    before, after = trials[:switch_after], trials[switch_after + 1:]  # one may have been in flight at the switch
    assert sum(t.status is Status.ABORTED for t in before) >= 3, "the tight limit aborts most candidates"
    assert after and not [t for t in after if t.status is Status.ABORTED]
    assert any(t.ok and t.metric("latency_ms") > 1.5 * tight for t in after)  # once aborted, now timed in full
    assert run.engine.limits.max_latency_ms == 100.0


def test_the_progress_line_counts_aborted_candidates_apart_from_failures(tmp_path: Path, capsys) -> None:
    """An aborted candidate is a kept fact (a latency bound over the limit), not a candidate that
    could not be measured: the progress line says how many were aborted, and failures stay 0."""
    out = tmp_path / "s.json"
    assert main(["tune", "transpose", "--backend", "sim", "--budget", "12", "--seed", "1", "--executor", "inline",
                 "--max-latency-ms", "0.06", "--out", str(out)]) == 0
    aborted = sum(t.status is Status.ABORTED for t in load_session(out).trials)
    failed = sum(t.status.failed and t.status is not Status.ABORTED for t in load_session(out).trials)
    last = [line for line in capsys.readouterr().err.replace("\r", "\n").splitlines() if line.startswith("[")][-1]
    assert aborted and f"failures {failed}  aborted {aborted}  best" in last, last


def test_a_limit_that_aborts_every_candidate_is_named_as_the_cause(tmp_path: Path, capsys) -> None:
    """Every candidate stopped under the limit read "no successful trials among 12" (show, export)
    and "See the failure log" in the window, where there is no failure: the limit is the cause."""
    from workbench.core.domain.objective import rank

    out = tmp_path / "s.json"
    assert main(["tune", "sgemm", "--backend", "sim", "--resources", "estimated", "--budget", "6",
                 "--max-latency-ms", "0.01", "--out", str(out), "--quiet"]) == 0
    session = load_session(out)
    assert all(t.status is Status.ABORTED for t in session.trials)
    capsys.readouterr()
    main(["show", str(out)])
    line = capsys.readouterr().out.splitlines()[-1]
    assert "6 stopped early as hopeless under a latency limit, the fastest at least" in line
    assert ", over the limit in force (0.01 ms); relax it to re-measure them" in line
    # no command named: as written it would measure nothing under this limit
    assert line.endswith("; relax it to re-measure them") and "tune --remeasure-aborted" not in line
    assert main(["export", str(out), "--format", "json", "--out", str(tmp_path / "e.json")]) == 2
    assert "stopped early as hopeless under a latency limit" in capsys.readouterr().err
    ranking = rank(session.trials, session.constraints, session.weights)
    assert ranking.aborted_count() == 6 and "stopped early" in ranking.why_none()
    # what show --json names to relax: no successful trial to count, and it read null
    assert ranking.most_excluding is None and ranking.to_relax == "latency_ms <= 0.01"
    capsys.readouterr()
    main(["show", str(out), "--json"])
    assert json.loads(capsys.readouterr().out)["most_excluding_constraint"] == "latency_ms <= 0.01"
    # the limit relaxed since: re-measuring is what is left, not relaxing it again
    relaxed = rank(session.trials, session.constraints.__class__(max_latency_ms=100.0), session.weights)
    assert relaxed.why_none().endswith("6 stopped early as hopeless under an earlier latency limit; re-measure them "
                                       "(tune --remeasure-aborted)")
    # relaxed past some of them only: it said all 6 could be re-measured where the rule takes those
    # whose bound the limit in force admits
    bounds = sorted(t.metric("latency_bound_ms") for t in session.trials)
    limit = (bounds[1] + bounds[2]) / 2
    partly = rank(session.trials, session.constraints.__class__(max_latency_ms=limit), session.weights)
    assert (f"6 stopped early as hopeless under an earlier latency limit; 2 of them may meet the limit in force "
            f"({limit!r} ms): re-measure them (tune --remeasure-aborted); the other 4 are at least {bounds[2]:.4g} ms"
            ) in partly.why_none()


def test_aborted_candidates_whose_kept_figures_miss_another_limit_are_not_re_measured(tmp_path: Path, capsys) -> None:
    """Re-measuring looked at the latency limit alone: a candidate stopped early whose kept
    registers already miss the register limit was counted, offered and measured again (a GPU's
    time for a config that cannot be feasible), and the notes said to relax the latency limit
    for it. After a relaxed limit the note also claimed the candidates were stopped under it."""
    from workbench.core.domain.objective import Bound, Constraints, rank
    from workbench.runner.controller import RunRequest, nothing_to_remeasure

    out = tmp_path / "s.json"
    assert main(["tune", "sgemm", "--backend", "sim", "--resources", "estimated", "--budget", "6",
                 "--max-latency-ms", "0.01", "--out", str(out), "--quiet"]) == 0
    session = load_session(out)
    registers = sorted(t.metric("registers") for t in session.trials)
    assert len(set(registers)) > 2, registers
    cut = float(registers[-1] - 1)  # the kept figures of some (the last) miss it
    missing = sum(r > cut for r in registers)
    limit = Bound("registers", "<=", cut)
    relaxed = Constraints(max_latency_ms=100.0, extra=(limit,))
    note = rank(session.trials, relaxed, session.weights).aborted_note()
    assert note == (f"6 stopped early as hopeless under an earlier latency limit; {6 - missing} of them may meet the "
                    f"limit in force (100 ms): re-measure them (tune --remeasure-aborted); the other {missing} "
                    f"already miss{'es' if missing == 1 else ''} {limit.shown}, which measuring again cannot change"), note
    every = Constraints(max_latency_ms=100.0, extra=(Bound("registers", "<=", registers[0] - 1),))
    assert rank(session.trials, every, session.weights).aborted_note().endswith(
        f"; all 6 already miss registers <= {shown_int(registers[0] - 1)}, which measuring again cannot change")
    # no latency limit in force: only the other limit keeps some out (it said "the limit in force")
    unlimited = rank(session.trials, Constraints(extra=(limit,)), session.weights).aborted_note()
    assert f"{6 - missing} of them may meet the limits in force: re-measure them" in unlimited, unlimited
    # over the latency limit in force and missing another: relaxing it helps only the others
    tight = Constraints(max_latency_ms=1e-6, extra=(limit,))
    assert rank(session.trials, tight, session.weights).to_relax == (
        Bound("latency_ms", "<=", 1e-6).label if 6 - missing > missing else limit.label)
    assert rank(session.trials, every, session.weights).to_relax == every.extra[0].label  # settles all 6
    assert rank(session.trials, relaxed, session.weights).to_relax == limit.label  # latency relaxed: registers keeps some out
    assert rank(session.trials, tight, session.weights).aborted_note().endswith(
        f"; {missing} of them already miss{'es' if missing == 1 else ''} {limit.shown}, which measuring again cannot "
        f"change; relax it to re-measure the other {6 - missing}")
    said = nothing_to_remeasure(session, RunRequest(constraints=every))
    assert said == (f"nothing to re-measure: 6 candidates stopped early, 6 already miss registers <= "
                    f"{shown_int(registers[0] - 1)}, which measuring again cannot change"), said
    capsys.readouterr()
    assert main(["tune", "--remeasure-aborted", "--out", str(out), "--max-latency-ms", "100",
                 "--constraint", limit.label, "--quiet"]) == 0
    assert len(load_session(out).trials) == 6 + 6 - missing  # those that can meet every limit, no more


def shown_int(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def test_candidates_measured_again_since_are_not_offered_for_re_measuring_again(tmp_path: Path) -> None:
    """After a re-measure, the reason still counted the re-measured candidates as ones the limit in
    force admits and named the command, which then said there was nothing to re-measure; so did a
    re-measure that failed, or that stopped early again over the new limit. Each config's latest
    trial decides, as it does for re-measuring."""
    import dataclasses

    from workbench.core.domain.measurement import Measurement
    from workbench.core.domain.objective import Constraints, rank
    from workbench.runner.controller import RunRequest, nothing_to_remeasure

    out = tmp_path / "s.json"
    assert main(["tune", "sgemm", "--backend", "sim", "--resources", "estimated", "--budget", "4",
                 "--max-latency-ms", "0.01", "--out", str(out), "--quiet"]) == 0
    session = load_session(out)
    first = list(session.trials)
    later = [dataclasses.replace(first[0], index=4, measurement=Measurement(Status.OK, {"latency_ms": 50.0})),
             dataclasses.replace(first[1], index=5, measurement=Measurement(Status.TIMEOUT, message="timed out")),
             dataclasses.replace(first[2], index=6, measurement=Measurement(Status.ABORTED, {"latency_bound_ms": 100.0},
                                                                            message="over the limit"))]
    loose = Constraints(max_latency_ms=60.0)
    note = rank(first + later, loose, session.weights).aborted_note()
    assert note == ("4 stopped early as hopeless under an earlier latency limit (2 of them measured again since); "
                    "1 of the other 2 may meet the limit in force (60 ms): re-measure them (tune --remeasure-aborted); "
                    "the other 1 is at least 100 ms"), note  # (the one stopped again, over the new limit too)
    session.trials = first + later
    assert nothing_to_remeasure(session, RunRequest(constraints=loose)) is None  # the other 1, as offered
    session.trials = first + later + [
        dataclasses.replace(first[k], index=7 + i, measurement=Measurement(Status.OK, {"latency_ms": 50.0}))
        for i, k in enumerate((2, 3))]
    assert rank(session.trials, loose, session.weights).aborted_note() == (
        "4 stopped early as hopeless under a latency limit, all measured again since")
    assert nothing_to_remeasure(session, RunRequest(constraints=loose)) is not None


def test_a_sweeps_size_whose_candidates_were_all_stopped_says_so(tmp_path: Path, capsys) -> None:
    """Its line read "none succeeded", as if the kernel had failed there."""
    out = tmp_path / "s.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "3",
                 "--sizes", "n=4096,67108864", "--max-latency-ms", "0.01", "--out", str(out), "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any("n=67108864: 3 trials, none succeeded (3 stopped early as hopeless under the latency limit)" in line
               for line in lines), lines


def test_a_failed_remeasurement_is_not_counted_as_measured_again(tmp_path: Path) -> None:
    """Any later trial of an aborted config counted as "measured again in full", a failure too."""
    import dataclasses

    from workbench.core.domain.measurement import Measurement
    from workbench.runner.controller import RunRequest, nothing_to_remeasure

    out = tmp_path / "s.json"
    assert main(["tune", "sgemm", "--backend", "sim", "--resources", "estimated", "--budget", "3",
                 "--max-latency-ms", "0.01", "--out", str(out), "--quiet"]) == 0
    session = load_session(out)
    first = session.trials[0]
    session.trials.append(dataclasses.replace(first, index=3, measurement=Measurement(Status.RUNTIME_ERROR, message="x")))
    assert nothing_to_remeasure(session) == ("nothing to re-measure: 3 candidates stopped early, 1 measured again "
                                             "since and failed, the other 2 still over the latency limit in force "
                                             "(0.01 ms)")
    session.trials.append(dataclasses.replace(first, index=4, measurement=Measurement(Status.OK, {"latency_ms": 5.0})))
    assert nothing_to_remeasure(session) == ("nothing to re-measure: 3 candidates stopped early, 1 of them measured "
                                             "again in full since, the other 2 still over the latency limit in force "
                                             "(0.01 ms)")
    # the limit given, not the file's: a relaxed limit under which the failed one is still not offered
    relaxed = RunRequest(constraints=session.constraints.__class__(max_latency_ms=0.02))
    assert "in force (0.02 ms)" in str(nothing_to_remeasure(session, relaxed))


@pytest.mark.parametrize("flag", [["--gpu-model", "A100"], ["--set", "n=4096"], ["--no-noise"], ["--budget", "5"],
                                  ["--seed", "5"], ["--force"], ["--resume"], ["--patience", "2"]])
def test_remeasure_aborted_refuses_flags_it_would_ignore(cli, tmp_path, flag) -> None:
    """A device, a problem or a budget given with --remeasure-aborted was ignored without a word:
    the file still said H200 after --gpu-model A100, at the session's problem after --set."""
    out = tmp_path / "a.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--budget", "6", "--max-latency-ms", "0.03", "--out", out,
               "--resources", "estimated", "--executor", "inline", "--quiet").returncode == 0
    before = out.read_bytes()
    result = cli("tune", "--remeasure-aborted", "--out", out, "--max-latency-ms", "0.06", *flag)
    assert result.returncode == 2 and "drop " in result.stderr and result.stderr.count("\n") == 1
    assert out.read_bytes() == before


def test_the_way_back_to_aborted_candidates_is_a_command_that_works_as_written(tmp_path: Path, cli) -> None:
    """show under a relaxed limit said "re-measure them (tune --remeasure-aborted)": run as
    written, that re-measured nothing (the file keeps the old limit). And where some trials
    succeeded, "nothing feasible" never mentioned the ones stopped early at all."""
    out = tmp_path / "ab.json"
    assert cli("tune", "sgemm", "--backend", "sim", "--budget", "12", "--resources", "estimated",
               "--max-latency-ms", "0.5", "--executor", "inline", "--quiet", "--out", out).returncode == 0
    shown = cli("show", out, "--max-latency-ms", "5").stdout
    command = re.search(r"re-measure them \((tune --remeasure-aborted [^)]*)\)", shown)
    assert command is not None and command.group(1) == f"tune --remeasure-aborted --out {out} --max-latency-ms 5", shown
    refused = cli("tune", "--remeasure-aborted", "--out", out)
    assert "none below the latency limit in force (0.5 ms); relax it" in refused.stdout
    done = cli(*shlex.split(command.group(1)))
    assert done.returncode == 0 and "re-measured" in done.stdout, done.stdout + done.stderr
    # a limit tighter than the file's is no way back (it re-measures nothing), and a limit is named exactly
    tighter = cli("show", out, "--max-latency-ms", "0.001").stdout
    assert "--remeasure-aborted --out" not in tighter or "--max-latency-ms 0.001" not in tighter
    exact = cli("show", out, "--max-latency-ms", "1234567.8").stdout
    assert "--max-latency-ms 1.23457e+06" not in exact
    mixed = tmp_path / "mixed.json"
    finished = cli("tune", "sgemm", "--backend", "sim", "--budget", "15", "--resources", "estimated",
                   "--constraint", "latency_ms<=3", "--executor", "inline", "--quiet", "--out", mixed)
    session = load_session(mixed)
    assert any(t.ok for t in session.trials) and any(t.status is Status.ABORTED for t in session.trials)
    assert not any(t.ok and t.metric("latency_ms") <= 3 for t in session.trials)  # nothing feasible
    assert "stopped early as hopeless under a latency limit" in finished.stdout, finished.stdout


def test_remeasuring_from_another_kernel_folder_records_it_as_a_continued_run_does(cli, tmp_path: Path) -> None:
    """``--remeasure-aborted --kernel-dir DIR`` ran the template from DIR and kept the old folder
    in the session, so later refusals sent the person to a folder that was not the one in use."""
    import shutil

    examples = Path(__file__).resolve().parents[1] / "docs" / "examples" / "saxpy"
    home, moved = tmp_path / "home", tmp_path / "moved"
    shutil.copytree(examples, home)
    out = tmp_path / "s.json"
    assert cli("tune", "saxpy", "--kernel-dir", home, "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--max-latency-ms", "1e-6", "--executor", "inline", "--quiet", "--out", out).returncode == 0
    assert all(t.status is Status.ABORTED for t in load_session(out).trials)
    shutil.move(home, moved)
    done = cli("tune", "--remeasure-aborted", "--out", out, "--max-latency-ms", "100", "--kernel-dir", moved, "--quiet")
    assert done.returncode == 0, done.stderr
    session = load_session(out)
    assert session.backend["options"]["kernel_dirs"] == [str(moved)], session.backend["options"]
    assert sum(t.ok for t in session.trials) == 4
