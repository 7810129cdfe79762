"""The command line's objective flags: directions, unknown metrics, and what ``show --json`` says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main

KT_EFFICIENCY = {
    "device_name": "Test GPU",
    "kernel_name": "vector_add",
    "problem_size": 1000,
    "tune_params_keys": ["block_size_x"],
    "tune_params": {"block_size_x": [32, 64, 128, 256]},
    "objective": "time",
    "cache": {
        # the fastest config is the least efficient one, as on real boards at high clocks
        "32": {"block_size_x": 32, "time": 0.9, "times": [0.9], "GFLOPS/W": 30.0, "score_x": 1.0},
        "64": {"block_size_x": 64, "time": 0.5, "times": [0.5], "GFLOPS/W": 20.0, "score_x": 3.0},
        "128": {"block_size_x": 128, "time": 0.3, "times": [0.3], "GFLOPS/W": 12.0, "score_x": 2.0},
        "256": {"block_size_x": 256, "time": 0.2, "times": [0.2], "GFLOPS/W": 8.0, "score_x": 4.0},
    },
}


@pytest.fixture()
def session(tmp_path: Path) -> Path:
    cache = tmp_path / "cache.json"
    cache.write_text(json.dumps(KT_EFFICIENCY))
    out = tmp_path / "s.json"
    assert main(["import-kt", str(cache), "--out", str(out)]) == 0
    return out


def show(capsys, path: Path, *flags: str) -> dict:
    capsys.readouterr()
    assert main(["show", str(path), "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


def test_efficiency_metric_from_kernel_tuner_is_maximised(capsys, session: Path) -> None:
    doc = show(capsys, session, "--weight", "gflops_w=1", "--weight", "latency_ms=0")
    assert doc["best"]["config"] == {"block_size_x": 32}  # most GFLOPS/W, not the least
    assert doc["best"]["why"].startswith("highest gflops_w")
    assert doc["weights"]["gflops_w"] == {"weight": 1.0, "direction": "maximize"}
    assert doc["weights"]["latency_ms"]["direction"] == "minimize"


def test_show_states_the_limits_and_weights_its_feasible_count_and_best_are_under(capsys, session: Path) -> None:
    """"feasible 3" and the best config mean something only under the objective in force, which
    the exports state and the text of ``show`` did not: said in a line each, whenever they are not
    the plain "latency alone, no limits"."""
    def lines(*flags: str) -> dict[str, str]:
        capsys.readouterr()
        assert main(["show", str(session), *flags]) == 0
        return {line[:9].strip(): line[9:] for line in capsys.readouterr().out.splitlines()}

    plain = lines()
    assert "limits" not in plain and "weights" not in plain
    alone = lines("--weight", "latency_ms=2", "--maximize", "gflops_w")  # ranks as latency alone
    assert "limits" not in alone and "weights" not in alone
    shown = lines("--constraint", "gflops_w>=10", "--weight", "score_x=1", "--maximize", "score_x")
    assert shown["limits"] == "gflops_w >= 10"
    assert shown["weights"] == "latency_ms=1, score_x=1 (maximized)"
    assert shown["feasible"] == "3"  # the 256-thread config's 8 GFLOPS/W is below the limit


def test_unknown_direction_needs_the_users_word(capsys, session: Path) -> None:
    capsys.readouterr()
    assert main(["show", str(session), "--weight", "score_x=1"]) == 2
    assert "--maximize score_x" in capsys.readouterr().err
    doc = show(capsys, session, "--weight", "score_x=1", "--weight", "latency_ms=0", "--maximize", "score_x")
    assert doc["best"]["config"] == {"block_size_x": 256}
    doc = show(capsys, session, "--weight", "score_x=1", "--weight", "latency_ms=0", "--minimize", "score_x")
    assert doc["best"]["config"] == {"block_size_x": 32} and doc["weights"]["score_x"]["direction"] == "minimize"


@pytest.mark.parametrize("flag, guess", [(["--constraint", "registrs<=32"], None),
                                         (["--constraint", "latency<=0.02"], "latency_ms"),
                                         (["--weight", "latncy_ms=1"], "latency_ms"),
                                         (["--weight", "zzz=1"], None)])
def test_metric_nobody_reports_is_an_error_naming_the_known_ones(capsys, session: Path, flag: list[str],
                                                                 guess: str | None) -> None:
    capsys.readouterr()
    assert main(["show", str(session), *flag]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "known metrics:" in err and "latency_ms" in err
    # the nearest known name is offered (registers is not one this recording reports)
    assert (f"(did you mean {guess!r}?)" in err) if guess else "did you mean" not in err


def test_constraints_report_their_direction(capsys, session: Path) -> None:
    doc = show(capsys, session, "--constraint", "gflops_w>=10", "--max-latency-ms", "0.6")
    bounds = {b["metric"]: b for b in doc["constraints"]["bounds"]}
    assert bounds["gflops_w"] == {"metric": "gflops_w", "op": ">=", "value": 10.0, "direction": "maximize"}
    assert bounds["latency_ms"]["direction"] == "minimize"
    assert doc["best"]["config"] == {"block_size_x": 128}


def test_tune_refuses_a_metric_the_simulator_never_reports(capsys, tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "3", "--out", str(out), "--quiet",
                 "--constraint", "registrs<=32"]) == 2
    assert "(did you mean 'registers'?)" in capsys.readouterr().err
    assert not out.exists()


def test_tunes_last_line_says_the_limits_its_feasible_count_is_under(capsys, tmp_path: Path) -> None:
    """A continued session's limits come from its file, which the person may not have in mind:
    the count of feasible trials says what it counts under (and nothing more without limits)."""
    out = tmp_path / "t.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "3", "--out", str(out), "--executor", "inline",
                 "--resources", "estimated", "--constraint", "registers<=64"]) == 0
    assert " feasible under registers <= 64 (simulated); best " in capsys.readouterr().out
    assert main(["tune", "--resume", str(out), "--budget", "2", "--executor", "inline"]) == 0
    last = next(line for line in capsys.readouterr().out.splitlines() if "5 trials (continued)" in line)
    assert " feasible under registers <= 64 (simulated); best " in last
    plain = tmp_path / "p.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "2", "--out", str(plain), "--executor", "inline",
                 "--resources", "estimated"]) == 0
    assert "2 feasible (simulated); best " in capsys.readouterr().out


def test_a_metric_a_continued_sessions_file_names_is_refused_naming_the_file(capsys, tmp_path: Path) -> None:
    """A typo stored in the session (edited by hand, or from another version) is not one the
    person just typed: the refusal says which file it came from, and the file is left as it was."""
    out = tmp_path / "t.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "2", "--out", str(out), "--quiet",
                 "--executor", "inline", "--constraint", "registers<=64"]) == 0
    doc = json.loads(out.read_text())
    doc["constraints"]["extra"] = ["registrs <= 64"]
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps(doc))
    before = typo.read_bytes()
    capsys.readouterr()
    assert main(["tune", "--resume", str(typo), "--budget", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{typo}: the session's objective names metric 'registrs'" in err and "did you mean 'registers'" in err
    assert typo.read_bytes() == before
    # the same typo given on the command line alone is the person's, said as before
    assert main(["tune", "--resume", str(out), "--budget", "2", "--quiet", "--constraint", "occupncy>=0.5"]) == 2
    err = capsys.readouterr().err
    assert "metric 'occupncy'" in err and "session's objective" not in err


def test_show_says_which_file_a_stored_pareto_objective_typo_is_from_and_shows_the_rest(capsys, tmp_path: Path) -> None:
    """``show`` of a session whose saved ``--objectives`` names a metric no trial reports: a warning
    naming the file, and the summary without the front, not an error that named neither."""
    out = tmp_path / "s.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "3", "--out", str(out), "--quiet",
                 "--executor", "inline", "--resources", "estimated", "--objectives", "latency_ms,registers"]) == 0
    doc = json.loads(out.read_text())
    doc["strategy"]["objectives"] = ["latency_ms", "registrs"]
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["show", str(typo), "--json"]) == 0
    captured = capsys.readouterr()
    assert f"{typo}: the session's objectives: metric 'registrs'" in captured.err and "did you mean 'registers'" in captured.err
    summary = json.loads(captured.out)
    assert summary["best"] is not None and not summary.get("objectives")
    # the person's own --objectives on the command line is checked as theirs, and the good file keeps its front
    assert main(["show", str(typo), "--objectives", "latency_ms,occupncy"]) == 2
    assert "metric 'occupncy'" in capsys.readouterr().err
    assert main(["show", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["objectives"] == ["latency_ms", "registers"]


def test_a_direction_on_a_metric_nobody_reports_is_said_not_passed_over(capsys, session: Path, tmp_path: Path) -> None:
    """A direction alone weighs nothing, so a typo in it would otherwise go unnoticed."""
    doc = show(capsys, session, "--maximize", "gflops_ww")
    assert doc["best"]["config"] == {"block_size_x": 256}  # the score is unchanged
    assert main(["show", str(session), "--maximize", "gflops_ww", "--minimize", "score_x"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    # the typo is warned of; a direction on a metric the session reports, weighed nothing, is noted
    assert err == ["note: --minimize score_x gives score_x a direction only; the score ranks by latency_ms: "
                   "add --weight score_x=1 to rank by it",
                   "warning: direction for 'gflops_ww': no trial reports it and the backend does not declare it "
                   "(did you mean 'gflops_w'?); it has no effect"]
    capsys.readouterr()
    out = tmp_path / "t.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "2", "--quiet", "--executor", "inline",
                 "--out", str(out), "--minimize", "regsters"]) == 0
    assert "direction for 'regsters': no trial reports it and the backend does not declare it (did you mean " \
           "'registers'?)" in capsys.readouterr().err


def test_a_python_benchmarks_direction_on_a_metric_no_trial_reported_is_said_after_the_run(cli, tmp_path: Path) -> None:
    """A python benchmark declares no metrics, so before the run any name may still come; after
    it, a direction on one that no trial reported (a typo) is said, as for a template before."""
    bench = Path(__file__).resolve().parent / "fixtures" / "trivial_bench.py"
    done = cli("tune", bench, "--budget", "3", "--quiet", "--out", tmp_path / "b.json",
               "--maximize", "nope", "--maximize", "quality")
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines() == [
        "warning: direction for 'nope': no trial reports it and the backend does not declare it; it has no effect",
        # (quality is reported, but nothing weighs it: its direction alone ranks nothing)
        "note: --maximize quality gives quality a direction only; the score ranks by latency_ms: "
        "add --weight quality=1 to rank by it"]


def test_a_python_benchmark_weighted_on_a_metric_it_does_not_report_is_said_and_its_session_opens(
        cli, tmp_path: Path) -> None:
    """A weight on a metric the benchmark never returns scores nothing: said after the run (the
    name could not be checked before it), and the session saved with it still opens in ``show``
    and ``export``, with the reason nothing is feasible, instead of refusing the run's own file."""
    bench = Path(__file__).resolve().parent / "fixtures" / "trivial_bench.py"
    out = tmp_path / "b.json"
    done = cli("tune", bench, "--budget", "3", "--quiet", "--out", out,
               "--weight", "throughput_gbs=1", "--weight", "latency_ms=0")
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines() == [
        "warning: weighted metric 'throughput_gbs': no trial of the run reported it (the benchmark reports "
        "latency_ms, memory_mb, quality): it scores no trial; a typo, or a metric the benchmark does not return"]
    shown = cli("show", out)
    assert shown.returncode == 0, shown.stderr
    assert "nothing feasible:" in shown.stdout and "report none of the weighted metrics (throughput_gbs)" in shown.stdout
    assert "metric 'throughput_gbs' of the session's own objective: no trial reports it" in shown.stderr
    assert cli("show", out, "--weight", "latency_ms=1", "--weight", "throughput_gbs=0").returncode == 0
    exported = cli("export", out, "--format", "json", "--weight", "latency_ms=1", "--weight", "throughput_gbs=0",
                   "--out", tmp_path / "e.json")
    assert exported.returncode == 0, exported.stderr
    # a name the command line gives is checked against what the trials report, as before
    typo = cli("show", out, "--weight", "latncy_ms=1")
    assert typo.returncode == 2 and "'latncy_ms': no trial reports it" in typo.stderr
    assert cli("show", out, "--constraint", "occupancy>=0.5").returncode == 2


def test_directions_are_saved_with_the_session(tmp_path: Path) -> None:
    from workbench.core.domain.objective import Weights
    from workbench.core.domain.session import Session, load_session, save_session

    s = Session(kernel="k", weights=Weights({"score_x": 1.0}, directions={"score_x": "maximize"}))
    save_session(s, tmp_path / "d.json")
    assert load_session(tmp_path / "d.json").weights.directions == {"score_x": 1}


def test_show_json_says_a_direction_given_for_a_metric_no_weight_names(cli, tmp_path: Path) -> None:
    """``--maximize merit --objectives latency_ms,merit``: no key of show --json said which way the
    front was built, since merit had no weight."""
    bench = tmp_path / "merit_bench.py"
    bench.write_text('SPACE = {"x": [1, 2, 3, 4]}\n\n\ndef measure(config):\n'
                     '    return {"latency_ms": 1.0 + config["x"], "merit": float(config["x"])}\n')
    out = tmp_path / "m.json"
    done = cli("tune", bench, "--budget", "4", "--maximize", "merit", "--objectives", "latency_ms,merit",
               "--workers", "1", "--quiet", "--out", out)
    assert done.returncode == 0, done.stderr
    doc = json.loads(cli("show", out, "--json").stdout)
    assert doc["directions"] == {"merit": "maximize"} and "merit" not in doc["weights"]
    assert doc["objective_directions"] == {"latency_ms": "minimize", "merit": "maximize"}


def test_tune_with_objectives_reports_a_pareto_front(capsys, tmp_path: Path) -> None:
    out = tmp_path / "mo.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "12", "--quiet", "--out", str(out),
                 "--objectives", "latency_ms,registers", "--executor", "inline"]) == 0
    said = capsys.readouterr().out  # the run's own line names the front, not one best alone
    doc = show(capsys, out)
    assert (f"; {len(doc['pareto'])} feasible config{'s' if len(doc['pareto']) > 1 else ''} on the front of "
            "latency_ms, registers (show lists them) ->") in said
    assert doc["objectives"] == ["latency_ms", "registers"] and doc["pareto"]
    assert doc["objective_directions"] == {"latency_ms": "minimize", "registers": "minimize"}
    lat = [p["latency_ms"] for p in doc["pareto"]]
    reg = [p["registers"] for p in doc["pareto"]]
    assert lat == sorted(lat) and reg == sorted(reg, reverse=True) and len(set(reg)) == len(reg)
    capsys.readouterr()
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "3", "--quiet", "--out", str(tmp_path / "x.json"),
                 "--objectives", "latency_ms,registers", "--strategy", "agents"]) == 2
    assert "searches one score" in capsys.readouterr().err


def test_a_pareto_run_that_names_no_strategy_takes_the_options_of_the_one_it_runs(capsys, tmp_path: Path) -> None:
    """``--objectives`` without ``--strategy`` runs tpe (multi-objective TPE): its options were checked against
    the default strategy instead, so ``--option startup=5`` was refused as no option of 'agents'."""
    out = tmp_path / "mo.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "6", "--quiet", "--out", str(out),
                 "--objectives", "latency_ms,registers", "--option", "startup=5", "--executor", "inline"]) == 0, \
        capsys.readouterr().err
    assert json.loads(out.read_text())["strategy"]["name"] == "tpe"
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "3", "--quiet", "--out", str(tmp_path / "o.json"),
                 "--objectives", "latency_ms,registers", "--option", "patience=3", "--executor", "inline"]) == 2
    assert "strategy 'tpe' has no option 'patience'" in capsys.readouterr().err


def test_objectives_none_continues_a_multi_objective_session_with_one_score(cli, tmp_path: Path) -> None:
    """A Pareto session otherwise keeps its objectives when continued, so a single-score strategy
    could never continue it; ``--objectives none`` says "one score now", and the session keeps that."""
    out = tmp_path / "mo.json"
    common = ["--budget", "3", "--quiet", "--executor", "inline"]
    assert cli("tune", "vector_add", "--backend", "sim", "--out", out, "--objectives", "latency_ms,memory_mb",
               *common).returncode == 0
    refused = cli("tune", "--resume", "--out", out, "--strategy", "agents", *common)
    assert refused.returncode == 2 and "--objectives none" in refused.stderr
    assert cli("tune", "--resume", "--out", out, "--strategy", "agents", "--objectives", "none", *common).returncode == 0
    doc = json.loads(cli("show", out, "--json").stdout)
    assert "objectives" not in doc and doc["trials"] == 6
    assert cli("tune", "--resume", "--out", out, *common).returncode == 0  # agents, one score, as recorded
    assert json.loads(cli("show", out, "--json").stdout)["trials"] == 9
    for bad in ("", "latency_ms"):
        assert "or none" in cli("tune", "--resume", "--out", out, "--objectives", bad, *common).stderr


def test_a_recording_where_every_config_failed_can_be_shown_and_replayed(cli, tmp_path: Path) -> None:
    """Latency is what every successful trial reports, so the default score's metric is no typo even
    before any trial succeeded; another unreported metric still is."""
    cache = tmp_path / "failed.json"
    cache.write_text(json.dumps({**KT_EFFICIENCY, "cache": {
        "32": {"block_size_x": 32, "time": "RuntimeFailedConfig"},
        "64": {"block_size_x": 64, "__error__": "CompilationFailedConfig"},
    }}))
    out = tmp_path / "s.json"
    assert cli("import-kt", str(cache), "--out", str(out)).returncode == 0
    shown = cli("show", str(out))
    assert shown.returncode == 0 and "feasible 0" in shown.stdout, shown.stderr
    replayed = cli("tune", "--replay", str(out), "--budget", "2", "--out", str(tmp_path / "r.json"), "--quiet")
    assert replayed.returncode == 0, replayed.stderr
    typo = cli("show", str(out), "--weight", "gflops=1")
    assert typo.returncode == 2 and "known metrics: latency_ms" in typo.stderr


def test_a_known_metrics_direction_cannot_be_turned_round(capsys, session: Path) -> None:
    """--maximize latency_ms would recommend the slowest config; it is refused, as is a direction
    for something that is not a metric name. Stating a known metric's own direction is harmless."""
    for flags in (["--maximize", "latency_ms"], ["--minimize", "occupancy"], ["--maximize", ""]):
        capsys.readouterr()
        assert main(["show", str(session), *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: direction") and err.count("\n") == 1, err
    assert show(capsys, session, "--minimize", "latency_ms")["best"]["config"] == {"block_size_x": 256}


def test_huge_weights_rank_like_their_ratio(capsys, session: Path) -> None:
    """Weights are relative: two of 1e308 must rank like two of 1, not overflow into no score at all."""
    huge = show(capsys, session, "--weight", "latency_ms=1e308", "--weight", "score_x=1e308", "--maximize", "score_x")
    plain = show(capsys, session, "--weight", "latency_ms=1", "--weight", "score_x=1", "--maximize", "score_x")
    assert huge["feasible"] == plain["feasible"] == 4
    assert huge["best"]["config"] == plain["best"]["config"]


def test_a_stored_direction_that_turns_a_known_metric_round_is_left_out_on_load(capsys, session: Path) -> None:
    """Written before the rule (by --maximize latency_ms): the session still opens and ranks the
    known metric its own way; the flag itself stays refused."""
    data = json.loads(session.read_text())
    data["directions"] = {"latency_ms": "maximize", "gflops_w": "maximize"}
    session.write_text(json.dumps(data))
    doc = show(capsys, session)
    assert doc["best"]["config"] == {"block_size_x": 256}  # the fastest, as latency wants
    assert doc["weights"]["latency_ms"]["direction"] == "minimize"


def test_a_session_whose_stored_limit_cannot_be_met_is_named_and_left_alone(capsys, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "2", "--quiet", "--executor", "inline",
                 "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    doc["constraints"]["max_latency_ms"] = -1
    out.write_text(json.dumps(doc))
    before = out.read_bytes()
    for command in (["show", str(out)], ["export", str(out), "--format", "json", "--out", "-"],
                    ["tune", "--out", str(out), "--resume", "--budget", "2", "--quiet", "--executor", "inline"],
                    ["tune", "--out", str(out), "--resume", "--budget", "2", "--quiet", "--executor", "inline",
                     "--min-quality", "0.5"]):
        capsys.readouterr()
        assert main(command) == 2, command
        err = capsys.readouterr().err.strip()
        assert err == (f"error: {out}: the session's constraints cannot be met: max latency must be positive, "
                       "got -1 ms; set that limit again"), command
        assert out.read_bytes() == before
    # giving the limit again replaces the stored one
    assert main(["tune", "--out", str(out), "--resume", "--budget", "2", "--quiet", "--executor", "inline",
                 "--max-latency-ms", "4"]) == 0
    assert json.loads(out.read_text())["constraints"]["max_latency_ms"] == 4


def _stored(tmp_path: Path, name: str, *flags: str, **constraints) -> Path:
    """A small simulated session whose file stores ``constraints`` as given (no check)."""
    out = tmp_path / name
    assert main(["tune", "vector_add", "--backend", "sim", "--budget", "2", "--quiet", "--executor", "inline",
                 "--out", str(out), *flags]) == 0
    doc = json.loads(out.read_text())
    doc["constraints"].update(constraints)
    out.write_text(json.dumps(doc))
    return out


def test_the_stored_limit_is_blamed_on_the_file_it_came_from_and_a_flag_on_itself(capsys, tmp_path: Path) -> None:
    source = _stored(tmp_path, "s.json", max_memory_mb=-1)
    capsys.readouterr()
    # continued into another file: the file named is the one that holds the limit
    assert main(["tune", "--resume", str(source), "--out", str(tmp_path / "t.json"), "--budget", "1", "--quiet",
                 "--executor", "inline"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {source}: the session's constraints cannot be met")
    assert not (tmp_path / "t.json").exists()
    # a flag that cannot be met is the flag's fault, whatever the file holds
    assert main(["show", str(source), "--max-latency-ms", "-2"]) == 2
    assert capsys.readouterr().err.strip() == "error: max latency must be positive, got -2 ms"


def test_a_constraint_flag_replaces_the_stored_bound_on_the_same_metric_and_side(capsys, tmp_path: Path) -> None:
    source = _stored(tmp_path, "e.json", extra=["registers<=-1", "occupancy>=0.25"])
    capsys.readouterr()
    assert main(["show", str(source)]) == 2
    doc = show(capsys, source, "--constraint", "registers<=64")
    assert doc["constraints"]["extra"] == ["occupancy >= 0.25", "registers <= 64"]


def test_an_objective_over_several_sessions_warns_once_and_export_checks_it(capsys, tmp_path: Path) -> None:
    first, second = _stored(tmp_path, "a.json"), _stored(tmp_path, "b.json", "--gpu-model", "RTX_A4000")
    capsys.readouterr()
    assert main(["show", str(first), "--portability", str(second), "--maximize", "gflops_ww"]) == 0
    assert capsys.readouterr().err.count("direction for 'gflops_ww'") == 1
    assert main(["export", str(first), str(second), "--format", "json", "--out", "-", "--maximize", "gflops_ww"]) == 0
    assert capsys.readouterr().err.count("direction for 'gflops_ww'") == 1
    assert main(["export", str(first), "--format", "json", "--out", "-", "--weight", "registrs=1"]) == 2
    assert "known metrics:" in capsys.readouterr().err


def test_the_windows_runs_refuse_a_stored_limit_that_cannot_be_met(tmp_path: Path) -> None:
    from workbench.core.domain.session import load_session
    from workbench.core.errors import WorkbenchError
    from workbench.runner.controller import RunRequest, prepare_run, remeasure_aborted

    source = _stored(tmp_path, "w.json", min_quality=2)
    before = source.read_bytes()
    with pytest.raises(WorkbenchError, match=f"^{source}: the session's constraints cannot be met: min quality"):
        prepare_run(RunRequest(budget=1), load_session(source), source)
    with pytest.raises(WorkbenchError, match=f"^{source}: the session's constraints cannot be met"):
        remeasure_aborted(source)
    assert source.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("w.json.")]  # no lock or journal left


def test_a_named_limit_and_the_bound_it_states_are_one_limit(cli, tmp_path: Path) -> None:
    """``--constraint latency_ms<=10`` left a stored ``--max-latency-ms 3.5`` in force (12 feasible of
    31), and the reverse: the two spellings are one limit, replaced in either spelling, and a
    limit no measurement can meet is refused in either."""
    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--strategy", "random",
               "--budget", "12", "--constraint", "latency_ms<=0.06", "--out", str(out)).returncode == 0
    stored = json.loads(out.read_text())["constraints"]
    assert stored.get("max_latency_ms") == 0.06 and not stored.get("extra")  # the limit, which also aborts

    def feasible(*flags: str) -> int:
        return json.loads(cli("show", str(out), "--json", *flags).stdout)["feasible"]

    loose = feasible("--max-latency-ms", "100")
    assert loose == 12 and feasible("--constraint", "latency_ms<=100") == loose
    assert feasible("--constraint", "latency_ms<=100", "--max-latency-ms", "0.06") == feasible()  # the tighter
    old = json.loads(out.read_text())  # a file an earlier version wrote: the limit as a typed bound
    old["constraints"] = {"extra": ["latency_ms <= 0.06"]}
    out.write_text(json.dumps(old))
    assert feasible("--max-latency-ms", "100") == loose
    for flags, said in ((["--constraint", "quality>=1.5"], "min quality is at most 1"),
                        (["--constraint", "latency_ms<=0"], "max latency must be positive"),
                        (["--min-quality", "-0.5"], "min quality is between 0 and 1"),
                        (["--min-quality", "0.5", "--constraint", "quality>=-1"], "min quality is between 0 and 1")):
        result = cli("show", str(out), *flags)
        assert result.returncode == 2 and said in result.stderr, (flags, result.stderr)
    # what a file stores as a typed bound (the window keeps what it cannot show) still opens
    for stored in ({"extra": ["quality >= 1.5"]}, {"min_quality": -0.5}, {"extra": ["quality >= -0.5"]}):
        old["constraints"] = stored
        out.write_text(json.dumps(old))
        assert cli("show", str(out), "--json").returncode == 0, stored


def test_an_export_says_the_direction_that_decided_its_config(capsys, session: Path, tmp_path: Path) -> None:
    """``--maximize score_x`` and ``--minimize score_x`` export different configs, and the exports
    did not say which way the metric was ranked, nor its value in the header's figures."""
    chosen = {}
    for word in ("maximize", "minimize"):
        out = tmp_path / f"{word}.json"
        flags = ["--weight", "latency_ms=0", "--weight", "score_x=1", f"--{word}", "score_x"]
        assert main(["export", str(session), "--format", "json", "--out", str(out), *flags]) == 0
        doc = json.loads(out.read_text())
        assert doc["directions"] == {"score_x": word}
        chosen[word] = doc["config"]["block_size_x"]
        header = tmp_path / f"{word}.h"
        assert main(["export", str(session), "--format", "header", "--out", str(header), *flags]) == 0
        text = header.read_text()
        assert f"score_x=1 ({word}d)" in text
        assert any(line.startswith("// metrics:") and "score_x=" in line for line in text.splitlines())
    assert chosen == {"maximize": 256, "minimize": 32}


_ODD_NAMES = '''SPACE = {"a": [1, 2, 3, 4]}
def measure(config):
    a = config["a"]
    return {"latency_ms": 1.0 + a, "GFLOP/s": 10.0 * a, "error-db": -3.0 * a, "my score": 1.0 / a}
'''


def test_a_benchmarks_metric_names_are_recorded_as_names_a_weight_or_bound_can_give(cli, tmp_path: Path) -> None:
    """``GFLOP/s``, ``error-db`` and ``my score`` were listed as known metrics, yet no weight, bound
    or direction could name them; a bound below 0 on a minimised metric (an error in dB) was
    refused as if every such metric were an amount; and asking for the direction of a typo led
    to a second refusal."""
    bench = tmp_path / "odd.py"
    bench.write_text(_ODD_NAMES)
    out = tmp_path / "s.json"
    assert cli("tune", bench, "--budget", "4", "--out", out, "--workers", "1", "--quiet").returncode == 0
    doc = json.loads(out.read_text())
    assert set(doc["trials"][0]["metrics"]) >= {"gflops", "error_db", "my_score"}
    best = json.loads(cli("show", out, "--json", "--weight", "gflops=1", "--weight", "latency_ms=0").stdout)
    assert best["best"]["config"] == {"a": 4}  # GFLOP/s is larger-is-better, known as gflops
    dB = cli("show", out, "--json", "--constraint", "error_db<=-6", "--weight", "my_score=1", "--maximize", "my_score")
    assert dB.returncode == 0, dB.stderr
    assert json.loads(dB.stdout)["best"]["config"] == {"a": 2}
    for args, said in ((["--weight", "GFLOP/s=1"], "weight for 'GFLOP/s': not a metric name (metrics are recorded "
                                                  "under names like 'gflops')"),
                       (["--constraint", "error-db<=3"], "metric 'error-db': not a metric name (metrics are recorded "
                                                         "under names like 'error_db')")):
        refused = cli("show", out, *args)
        assert refused.returncode == 2 and said in refused.stderr
    typo = cli("show", out, "--objectives", "latency_ms,foo")
    assert typo.returncode == 2 and "no trial reports it" in typo.stderr and "--maximize" not in typo.stderr


def test_a_session_written_with_a_benchmarks_own_metric_names_is_read_under_the_recorded_ones(cli, tmp_path: Path) -> None:
    """A session from before the names were recorded as identifiers kept 'GFLOP/s'; a run
    continuing it added 'gflops', so one metric had two names and neither could be weighted for all."""
    bench = tmp_path / "odd.py"
    bench.write_text(_ODD_NAMES)
    out = tmp_path / "s.json"
    assert cli("tune", bench, "--budget", "2", "--out", out, "--workers", "1", "--quiet").returncode == 0
    doc = json.loads(out.read_text())
    for record in doc["trials"]:  # as the earlier version wrote them
        metrics = record["measurement"]["metrics"] if "measurement" in record else record["metrics"]
        metrics["GFLOP/s"] = metrics.pop("gflops")
    out.write_text(json.dumps(doc))
    assert cli("tune", bench, "--resume", "--budget", "2", "--out", out, "--workers", "1", "--quiet").returncode == 0
    shown = json.loads(cli("show", out, "--json", "--trials").stdout)
    assert len(shown["trial_list"]) == 4
    from workbench.core.domain.session import load_session

    assert all("gflops" in t.measurement.metrics and "GFLOP/s" not in t.measurement.metrics
               for t in load_session(out).trials)
    # a renamed metric is checked as a recorded one: GB/s below zero is a corrupt record
    doc = json.loads(out.read_text())
    record = doc["trials"][0]
    (record["measurement"]["metrics"] if "measurement" in record else record["metrics"])["GB/s"] = -5.0
    out.write_text(json.dumps(doc))
    refused = cli("show", out)
    assert refused.returncode == 2 and "GB/s: -5.0 is negative" in refused.stderr


@pytest.mark.parametrize("bound", ["energy_j<=-1", "compile_s<=-0.5", "gflops<=-3", "time<=-1"])
def test_a_negative_limit_on_an_amount_the_registry_knows_is_refused(cli, session: Path, bound: str) -> None:
    result = cli("show", session, "--constraint", bound)
    assert result.returncode == 2 and "cannot be negative" in result.stderr


@pytest.mark.parametrize("flags", [["--constraint", "latency_bound_ms<=1"], ["--weight", "latency_bound_ms=1"],
                                   ["--objectives", "latency_ms,latency_bound_ms"]])
def test_the_bound_an_aborted_candidate_keeps_is_no_metric_to_rank_by(cli, tmp_path: Path, flags) -> None:
    """Only an aborted trial, never feasible, carries it: a limit on it made every trial
    infeasible, a weight on it ranked nothing, and the simulator listed it among its metrics."""
    out = tmp_path / "s.json"
    refused = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
                  "--executor", "inline", "--out", out, *flags)
    assert refused.returncode == 2 and not out.exists() and len(refused.stderr.strip().splitlines()) == 1
    assert refused.stderr.strip().endswith("'latency_bound_ms': the bound an aborted candidate's latency was "
                                           "stopped above, which no feasible trial carries; constrain or weigh latency_ms"
                                           ) or "constraint latency_bound_ms <= 1: the bound" in refused.stderr
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", out).returncode == 0
    assert cli("show", out, *flags).returncode == 2
    typo = cli("show", out, "--constraint", "latncy<=1")
    assert "did you mean 'latency_ms'" in typo.stderr and "latency_bound_ms" not in typo.stderr


def test_a_metric_given_twice_is_one_bound_the_tighter_and_a_weight_given_twice_differently_is_refused(cli, tmp_path):
    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", out).returncode == 0
    shown = cli("show", out, "--constraint", "registers<=32", "--constraint", "registers<=64",
                "--constraint", "occupancy>=0.5", "--constraint", "occupancy>=0.25")
    assert "limits   registers <= 32, occupancy >= 0.5\n" in shown.stdout, shown.stdout
    refused = cli("show", out, "--weight", "latency_ms=1", "--weight", "latency_ms=2")
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "error: --weight latency_ms given twice (1 and 2); give it once")
    assert cli("show", out, "--weight", "latency_ms=1", "--weight", "latency_ms=1").returncode == 0
    refused = cli("tune", "vector_add", "--backend", "sim", "--budget", "2", "--max-latency-ms", "-1",
                  "--out", tmp_path / "x.json")
    assert refused.returncode == 2 and "must be a finite number > 0" in refused.stderr
    refused = cli("tune", "vector_add", "--backend", "sim", "--budget", "2", "--max-latency-ms", "0",
                  "--out", tmp_path / "x.json")  # as given, not as a float prints it ("0.0")
    assert refused.returncode == 2 and "error: --max-latency-ms 0: must be" in refused.stderr


def test_a_constraint_on_kernel_tuners_time_names_what_an_import_records_it_as(cli, tmp_path):
    """``time`` is Kernel Tuner's field, which an import records as ``kt_time_ms`` (and the median of
    the repetitions as ``latency_ms``): the refusal listed every metric and suggested none."""
    imported = tmp_path / "imported.json"
    assert cli("import-kt", Path(__file__).parent / "fixtures" / "kt_cache_small.json", "--out", imported).returncode == 0
    refused = cli("show", imported, "--constraint", "time<=3")
    assert refused.returncode == 2 and "is 'kt_time_ms', the median of its repetitions 'latency_ms'" in refused.stderr
    own = tmp_path / "own.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "2", "--quiet",
               "--out", own).returncode == 0
    refused = cli("show", own, "--constraint", "time<=3")
    assert refused.returncode == 2 and "(a kernel's time is 'latency_ms')" in refused.stderr
    refused = cli("tune", "vector_add", "--backend", "sim", "--budget", "2", "--max-memory-mb", "-1234567.25",
                  "--out", tmp_path / "x.json")
    assert "error: --max-memory-mb -1234567.25: must be" in refused.stderr


def test_show_json_says_what_the_score_ranks_by_also_when_every_weight_is_zero(cli, tmp_path):
    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", out).returncode == 0
    zero = json.loads(cli("show", out, "--json", "--weight", "latency_ms=0", "--weight", "occupancy=0").stdout)
    assert zero["score_metrics"] == ["latency_ms"] and {w["weight"] for w in zero["weights"].values()} == {0}
    mixed = json.loads(cli("show", out, "--json", "--weight", "occupancy=2").stdout)
    assert mixed["score_metrics"] == ["latency_ms", "occupancy"]


def test_a_weight_the_file_stores_without_a_direction_is_named_with_the_file(cli, tmp_path):
    """A hand-edited weight on a metric of no known direction was refused as if a flag had named
    it; the line now says which file weighs it, and --maximize there still answers it."""
    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", out).returncode == 0
    doc = json.loads(out.read_text())
    doc["weights"] = {"latency_ms": 1, "foo": 1}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    refused = cli("show", edited)
    assert refused.returncode == 2 and refused.stderr.strip() == (
        f"error: {edited}: the session weighs metric 'foo', which has no known direction: "
        "say --maximize foo or --minimize foo")
    answered = cli("show", edited, "--maximize", "foo")
    assert answered.returncode == 0 and "latency_bound_ms" not in answered.stderr


def test_a_run_continuing_a_file_whose_weight_has_no_direction_names_the_file(cli, tmp_path):
    """``tune --resume`` of such a file said "metric 'threads_per_block' has no known direction",
    a name the person never typed, where ``show`` named the file; both name it now, and a flag
    that weighs the metric itself is the command line's to answer for."""
    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "2",
               "--executor", "inline", "--quiet", "--out", out).returncode == 0
    doc = json.loads(out.read_text())
    doc["weights"] = {"latency_ms": 1, "threads_per_block": 1}  # a figure the simulator reports, no direction
    out.write_text(json.dumps(doc))
    said = (f"error: {out}: the session weighs metric 'threads_per_block', which has no known direction: "
            "say --maximize threads_per_block or --minimize threads_per_block")
    refused = cli("tune", "vector_add", "--backend", "sim", "--resume", "--budget", "2", "--executor", "inline",
                  "--quiet", "--out", out)
    assert refused.returncode == 2 and refused.stderr.strip() == said
    flagged = cli("tune", "vector_add", "--backend", "sim", "--resume", "--budget", "2", "--executor", "inline",
                  "--quiet", "--weight", "threads_per_block=2", "--out", out)
    assert flagged.returncode == 2 and flagged.stderr.strip() == (
        "error: metric 'threads_per_block' has no known direction: "
        "say --maximize threads_per_block or --minimize threads_per_block")
    answered = cli("tune", "vector_add", "--backend", "sim", "--resume", "--budget", "2", "--executor", "inline",
                   "--quiet", "--minimize", "threads_per_block", "--out", out)
    assert answered.returncode == 0, answered.stderr
    assert json.loads(out.read_text())["weights"]["threads_per_block"] == 1


def test_a_front_metric_whose_direction_the_file_holds_continues_whatever_flags_are_given(cli, tmp_path):
    """The check naming the file looked at the front's metrics without the file's directions
    whenever the continuation carried weights of its own (any objective flag, every Start of the
    window): a front of latency and a figure maximised by the file was refused."""
    out = tmp_path / "front.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "3", "--executor",
               "inline", "--strategy", "tpe", "--objectives", "latency_ms,threads_per_block", "--maximize",
               "threads_per_block", "--quiet", "--out", out).returncode == 0
    for flags in ((), ("--max-latency-ms", "100"), ("--maximize", "threads_per_block")):
        done = cli("tune", "vector_add", "--backend", "sim", "--resume", "--budget", "1", "--executor", "inline",
                   "--quiet", *flags, "--out", out)
        assert done.returncode == 0, (flags, done.stderr)


def test_a_stored_constraint_on_the_aborted_bound_is_refused_naming_the_file(cli, tmp_path):
    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", out).returncode == 0
    doc = json.loads(out.read_text())
    doc["constraints"] = {"extra": ["latency_bound_ms <= 1"]}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    refused = cli("show", edited)
    assert refused.returncode == 2 and refused.stderr.startswith(f"error: {edited}: ")
    assert "latency_bound_ms" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1


def test_show_writes_a_limit_and_the_weights_so_that_they_read_back_as_themselves(cli, tmp_path):
    """show wrote limits and weights to six significant digits: ``latency_ms <= 0.00598288`` for
    0.00598288365, pasted back into --constraint, was a tighter limit that left nothing feasible,
    and a weight of 1234567 read 1.23457e+06. The fewest digits that read back as the value."""
    out = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--quiet", "--out", out).returncode == 0
    shown = cli("show", out, "--constraint", "latency_ms<=0.0684916504792001", "--weight", "latency_ms=1234567",
                "--weight", "gflops=0.123456789")
    assert "limits   latency_ms <= 0.0684916504792001\n" in shown.stdout, shown.stdout
    assert "latency_ms=1234567, gflops=0.123456789" in shown.stdout, shown.stdout
    latency = json.loads(cli("show", out, "--json").stdout)["best"]["latency_ms"]
    limit = f"latency_ms<={latency!r}"  # exactly the best's latency: it stays feasible
    line = next(x for x in cli("show", out, "--constraint", limit).stdout.splitlines() if x.startswith("limits"))
    again = cli("show", out, "--json", "--constraint", line.split(None, 1)[1].replace(" ", ""))
    assert json.loads(again.stdout)["best"]["latency_ms"] == latency  # the limit as written admits it still
    as_json = json.loads(cli("show", out, "--json", "--constraint", "latency_ms<=0.0684916504792001").stdout)
    assert "0.0684916504792001" in json.dumps(as_json["constraints"])  # a file's figure stays exact


def test_show_says_what_kept_the_fastest_config_out(capsys, session: Path) -> None:
    """Under a constraint that excludes the fastest config, ``show`` said only what the
    recommendation now was; the window's card said what excluded the fastest, and ``show`` says it
    in the same words. A fastest config the weights rank lower is said as such."""
    def text(*flags: str) -> dict[str, str]:
        capsys.readouterr()
        assert main(["show", str(session), *flags]) == 0
        return {line[:9].strip(): line[9:] for line in capsys.readouterr().out.splitlines()}

    assert "fastest" not in text()  # the recommendation is the fastest
    excluded = text("--constraint", "gflops_w>=10")
    assert excluded["fastest"] == "trial 3, 0.2 ms (1.50x faster): excluded by gflops_w 8 < 10"
    doc = show(capsys, session, "--constraint", "gflops_w>=10")
    assert doc["fastest_left_out"]["excluded_by"] == ["gflops_w 8 < 10"]
    assert doc["fastest_left_out"]["config"] == {"block_size_x": 256}
    weighed = text("--weight", "gflops_w=1", "--weight", "latency_ms=0.5")
    assert weighed["fastest"].startswith("trial 3, 0.2 ms (") and " scores " in weighed["fastest"]
    assert weighed["fastest"].endswith(" under the weights")


def test_a_weighted_explanation_gives_each_metric_to_the_scores_digits(capsys, session: Path) -> None:
    """"highest score 0.998 (latency 1.00, memory 1.00 of best)": parts at two decimals read as
    perfect where the score beside them is not."""
    why = show(capsys, session, "--weight", "gflops_w=1", "--weight", "latency_ms=1")["best"]["why"]
    parts = why.split("(")[1].split(" of best")[0]
    assert all(len(part.split()[-1].split(".")[1]) == 3 for part in parts.split(", ")), why


def test_show_says_which_aborted_candidates_a_relaxed_latency_limit_lets_back(cli, tmp_path: Path) -> None:
    """Relaxing the limit on ``show``'s command line said nothing of the candidates it had stopped
    early, though they may now meet it (the window offers *Re-measure aborted*)."""
    out = tmp_path / "r.json"
    assert cli("tune", "reduce_sum", "--backend", "sim", "--resources", "estimated", "--budget", "40",
               "--max-latency-ms", "0.03", "--out", out, "--quiet").returncode == 0
    doc = json.loads(cli("show", out, "--json").stdout)
    assert doc["by_status"].get("aborted"), doc["by_status"]  # the limit stopped some early
    relaxed = cli("show", out, "--max-latency-ms", "1000").stdout
    line = next(line for line in relaxed.splitlines() if line.startswith("aborted  "))
    assert "under an earlier latency limit" in line
    assert f"re-measure them (tune --remeasure-aborted --out {out} --max-latency-ms 1000)" in line
    assert json.loads(cli("show", out, "--json", "--max-latency-ms", "1000").stdout)["aborted_note"] == line[9:]


def test_a_direction_alone_on_a_reported_metric_says_that_it_ranks_nothing(capsys, session: Path) -> None:
    """``--maximize gflops_w --weight latency_ms=0`` ranked by latency (every weight 0 falls back
    to it) and said nothing: a direction gives no weight."""
    capsys.readouterr()
    assert main(["show", str(session), "--maximize", "gflops_w", "--weight", "latency_ms=0"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["note: --maximize gflops_w gives gflops_w a direction only; the score ranks by latency_ms: "
                   "add --weight gflops_w=1 to rank by it"]
    assert main(["show", str(session), "--maximize", "gflops_w", "--weight", "gflops_w=1"]) == 0
    assert "note:" not in capsys.readouterr().err


def test_a_direction_on_a_stored_fronts_objective_is_no_direction_only(cli, tmp_path: Path) -> None:
    """A session that searched a front of latency_ms and gflops takes gflops's direction from
    --maximize: the note that it "gives gflops a direction only" was false there."""
    out = tmp_path / "mo.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "6", "--quiet",
               "--executor", "inline", "--objectives", "latency_ms,gflops", "--out", out).returncode == 0
    assert "note:" not in cli("show", out, "--maximize", "gflops").stderr
    assert "gives gflops a direction only" in cli("show", out, "--maximize", "gflops", "--objectives", "none").stderr


def test_tune_says_once_that_a_direction_alone_ranks_nothing(cli, tmp_path: Path) -> None:
    """`tune BENCH --maximize accuracy` ranked the run by latency and said nothing; show said it
    only when the flag was given to it again."""
    bench = Path(__file__).resolve().parent / "fixtures" / "trivial_bench.py"
    out = tmp_path / "b.json"
    done = cli("tune", bench, "--budget", "2", "--quiet", "--out", out, "--maximize", "quality")
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: ")]
    assert done.returncode == 0 and notes == [
        "note: --maximize quality gives quality a direction only; the score ranks by latency_ms: "
        "add --weight quality=1 to rank by it"], done.stderr
    again = cli("tune", bench, "--resume", out, "--budget", "3", "--quiet", "--maximize", "quality")
    assert again.returncode == 0 and again.stderr.count("gives quality a direction only") == 1, again.stderr
    weighed = cli("tune", bench, "--resume", out, "--budget", "4", "--quiet", "--maximize", "quality",
                  "--weight", "quality=1")
    assert "direction only" not in weighed.stderr


def test_metric_names_beyond_ascii_are_kept_apart_and_read_back_alike(cli, tmp_path) -> None:
    """A name's letters beyond ASCII were dropped: 'énergie µJ' was recorded as 'nergie_j' while the
    refusal of 'énergie_µJ' pointed to 'nergie__j', and two names in Chinese were both 'metric',
    which failed every trial reporting them."""
    import json

    from workbench.core.domain.metrics import metric_name

    assert metric_name("énergie µJ") == metric_name("énergie_µJ") == "energie_uj"
    assert len({metric_name("時間"), metric_name("温度"), metric_name("metric")}) == 3
    bench = tmp_path / "u.py"
    bench.write_text('SPACE = {"a": [1, 2]}\n\ndef measure(config):\n'
                     '    return {"latency_ms": 1.0 + config["a"], "時間": 2.0, "温度": 3.0, "énergie µJ": 4.0}\n')
    out = tmp_path / "u.json"
    assert cli("tune", str(bench), "--budget", "2", "--quiet", "--out", str(out)).returncode == 0
    metrics = json.loads(out.read_text())["trials"][0]["metrics"]
    assert {metric_name("時間"), metric_name("温度"), "energie_uj"} <= set(metrics), metrics
    hinted = cli("show", str(out), "--constraint", "énergie_µJ<=5")  # the hint names what the trials hold
    assert hinted.returncode == 2 and "(metrics are recorded under names like 'energie_uj')" in hinted.stderr
    assert cli("show", str(out), "--constraint", "energie_uj<=5").returncode == 0


@pytest.mark.parametrize("command", ["show", "tune"])
def test_a_bound_or_weight_on_a_slot_is_told_that_it_is_a_slot(capsys, session: Path, tmp_path: Path,
                                                                  command: str) -> None:
    """A Kernel Tuner user bounding a tunable parameter (``block_size_x<=64``) was told that no
    trial reports it, though every trial has that value."""
    capsys.readouterr()
    flags = ["show", str(session)] if command == "show" else ["tune", "--replay", str(session), "--budget", "2",
                                                              "--executor", "inline", "--out", str(tmp_path / "r.json")]
    assert main([*flags, "--constraint", "block_size_x<=64"]) == 2
    assert ("metric 'block_size_x': no trial reports it and the backend does not declare it (block_size_x is a "
            "tunable slot of the kernel, not a measured figure: constraints and weights apply to what trials "
            "measure, and a slot's values are the search space's)") in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_a_metric_nothing_reports_is_refused_naming_the_flags_that_asked_for_it(cli, tmp_path: Path) -> None:
    """On a replayed recording (no quality, no memory figures), ``--min-quality 0.9`` was refused
    as "metric 'quality': ...", a name the person never typed; the flags that named the metric
    come first, as typed. A name the session file brought still names the file alone."""
    cache = Path(__file__).parent / "fixtures" / "kt_cache_small.json"
    out = tmp_path / "s.json"
    for flags, said in ((["--min-quality", "0.9"], "error: --min-quality 0.9: metric 'quality': no trial reports it"),
                        (["--min-quality", "0.9999999"], "error: --min-quality 0.9999999: metric 'quality'"),
                        (["--min-quality", "1234567"], "error: min quality is at most 1 (exact result), got 1234567"),
                        (["--max-memory-mb", "10"], "error: --max-memory-mb 10: metric 'memory_mb': no trial"),
                        (["--constraint", "quality>=0.9", "--weight", "quality=1"],
                         "error: --constraint quality>=0.9, --weight quality=1: metric 'quality': no trial"),
                        (["--maximize", "qualty", "--weight", "qualty=1"],
                         "error: --weight qualty=1, --maximize qualty: metric 'qualty': no trial")):
        refused = cli("tune", "--replay", cache, "--budget", "3", "--out", out, *flags)
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr
        assert not out.exists()
    assert cli("tune", "--replay", cache, "--budget", "3", "--out", out).returncode == 0
    shown = cli("show", out, "--min-quality", "0.5")
    assert shown.returncode == 2 and "error: --min-quality 0.5: metric 'quality'" in shown.stderr
    session = json.loads(out.read_text())
    session["constraints"] = {"extra": [{"metric": "qualty", "op": ">=", "value": 0.5}]}
    out.write_text(json.dumps(session))
    continued = cli("tune", "--resume", out, "--budget", "1", "--min-quality", "0.5")
    assert continued.returncode == 2 and f"error: {out}: the session's objective names metric 'qualty'" in \
        continued.stderr, continued.stderr


def test_a_continued_python_benchmark_checks_metric_names_against_what_its_trials_report(cli, tmp_path: Path) -> None:
    """A python benchmark declares no metrics, but a continued session's trials report what its
    (unchanged) code returns: a misspelt constraint, a near spelling of a name they report, was
    taken with a "counts once trials report it" warning, searched under (nothing feasible) and
    stored in the file, where show and export refuse the same name."""
    bench = Path(__file__).resolve().parent / "fixtures" / "trivial_bench.py"
    out = tmp_path / "b.json"
    assert cli("tune", bench, "--budget", "3", "--quiet", "--out", out).returncode == 0
    before = out.read_bytes()
    typo = cli("tune", bench, "--resume", out, "--budget", "2", "--quiet", "--constraint", "qualty>=0.5")
    assert typo.returncode == 2 and "metric 'qualty': no trial reports it" in typo.stderr, typo.stderr
    assert "did you mean 'quality'?" in typo.stderr and out.read_bytes() == before
    done = cli("tune", bench, "--resume", out, "--budget", "2", "--quiet", "--constraint", "quality>=0.5")
    assert done.returncode == 0, done.stderr
    # a name like none of them stays possible (such a benchmark may report a figure for some configs
    # only), said as before; and a stored one never stops the session from going on
    other = cli("tune", bench, "--resume", out, "--budget", "1", "--quiet", "--weight", "error_db=1",
                "--minimize", "error_db")
    assert other.returncode == 0 and "counts once trials report it" in other.stderr, other.stderr
    # nor is a name like a reported one but no slip of the hand from it (quality_2 beside quality:
    # another figure, which such a benchmark may report for some configs only)
    near = cli("tune", bench, "--resume", out, "--budget", "1", "--quiet", "--constraint", "quality_2>=0.5")
    assert near.returncode == 0 and "counts once trials report it" in near.stderr, near.stderr
    assert cli("tune", bench, "--resume", out, "--budget", "1", "--quiet").returncode == 0


def test_a_benchmarks_own_figure_named_like_a_simulator_amount_may_be_negative(cli, tmp_path: Path) -> None:
    """A benchmark of one's own may report ``dram_mb`` as it likes (traffic saved against a
    baseline), and bound it below 0: made a non-negative amount, such trials failed, such bounds
    were refused and such sessions no longer opened."""
    bench = tmp_path / "delta.py"
    bench.write_text("SPACE = {'x': list(range(6))}\n"
                     "def measure(c):\n    return {'latency_ms': 1.0 + abs(c['x'] - 4), 'dram_mb': 2.0 - c['x']}\n")
    out = tmp_path / "d.json"
    done = cli("tune", bench, "--strategy", "grid", "--budget", "6", "--quiet", "--out", out)
    assert done.returncode == 0 and "6 feasible; best 1 ms {'x': 4}" in done.stdout, done.stdout + done.stderr
    assert cli("show", out).returncode == 0
    bounded = cli("tune", bench, "--strategy", "grid", "--budget", "6", "--quiet", "--out", tmp_path / "b.json",
                  "--constraint", "dram_mb<=-1")
    assert bounded.returncode == 0 and "3 feasible under dram_mb <= -1" in bounded.stdout, bounded.stdout + bounded.stderr
    assert cli("show", tmp_path / "b.json").returncode == 0
    # where the backend itself reports the figure (the simulator), no config meets such a bound
    refused = cli("tune", "sgemm", "--backend", "sim", "--budget", "2", "--resources", "estimated", "--quiet",
                  "--out", tmp_path / "s.json", "--constraint", "threads_per_block<=-1")
    assert refused.returncode == 2 and "threads_per_block cannot be negative" in refused.stderr, refused.stderr
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("typed, known, slip", [
    ("qualty", "quality", True), ("error_dbb", "error_db", True), ("qaulity", "quality", True),
    ("err_l2", "err_l1", False), ("quality_2", "quality", False), ("time_gpu1", "time_gpu0", False),
    ("quality", "quality", False), ("Quality", "quality", True), ("qualityy", "quality", True),
    ("quality2", "quality", False)])
def test_one_slip_of_the_hand_is_told_from_another_name(typed: str, known: str, slip: bool) -> None:
    from workbench.core.domain.metrics import one_slip

    assert one_slip(typed, known) is slip
