"""The command line as a contract: real files, one-line errors.

Most commands run in this process (the ``cli`` fixture: :func:`workbench.cli.main` with the
output captured); what only a process of its own shows stays one: ``main.py``'s exit status and
output end to end, and a tune killed mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def run_cli(*args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "KERNEL_WORKBENCH_FORCE_NO_GPU": "1", **(env or {})}
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=environment)


def show_json(path: Path, *extra: str, cli=run_cli) -> dict:
    result = cli("show", str(path), "--json", *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_python_dash_m_workbench_cli_runs_the_command_line() -> None:
    """``python -m workbench.cli`` is the command line as main.py starts it (it printed nothing and
    exited 0 when the commands were one module with no ``__main__`` guard)."""
    from workbench import __version__

    result = subprocess.run([sys.executable, "-m", "workbench.cli", "--version"], capture_output=True, text=True,
                            timeout=60, cwd=ROOT)
    assert result.returncode == 0 and __version__ in result.stdout, result.stdout + result.stderr
    refused = subprocess.run([sys.executable, "-m", "workbench.cli", "tnue"], capture_output=True, text=True,
                             timeout=60, cwd=ROOT)
    assert refused.returncode == 2 and "did you mean 'tune'" in refused.stderr
    assert "(python -m workbench.cli --help)" in refused.stderr, refused.stderr


def test_tune_sim_then_show_reports_a_simulated_best(tmp_path: Path) -> None:
    out = tmp_path / "va.json"
    result = run_cli("tune", "vector_add", "--backend", "auto", "--strategy", "random", "--budget", "12",
                     "--seed", "3", "--executor", "inline", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "[12/12]" in result.stderr  # the progress line
    summary = show_json(out, "--trials")
    assert summary["kernel"] == "vector_add"
    assert summary["simulated"] is True and "Simulated" in summary["device"]["name"]
    assert summary["trials"] == 12 and sum(summary["by_status"].values()) == 12
    assert summary["best"] is not None and summary["best"]["latency_ms"] > 0
    lats = [t["latency_ms"] for t in summary["trial_list"] if t["status"] == "ok"]
    assert summary["best"]["latency_ms"] == pytest.approx(min(lats))
    assert [t["index"] for t in summary["trial_list"]] == list(range(12))
    # where each was measured, as docs/scaling.md says show --trials --json tells (it left it out)
    assert all(t["worker"].startswith("inline-") for t in summary["trial_list"]), summary["trial_list"][0]
    assert all(isinstance(t["details"], dict) for t in summary["trial_list"])
    # the reason compares with the template's default config (measured first), as the window's does
    assert "than the default" in summary["best"]["why"] or "this is the default config" in summary["best"]["why"]
    # a constraint given to show re-ranks the stored trials without touching the file
    before = out.read_bytes()
    tight = show_json(out, "--max-latency-ms", str(min(lats) * 0.5))
    assert tight["feasible"] == 0 and tight["best"] is None
    assert tight["most_excluding_constraint"]
    assert out.read_bytes() == before


def test_python_benchmark_failures_are_recorded_with_reasons(cli, tmp_path: Path) -> None:
    out = tmp_path / "faulty.json"
    result = cli("tune", str(FIXTURES / "faulty_bench.py"), "--strategy", "grid", "--budget", "12",
                 "--timeout", "1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    summary = show_json(out, "--trials", cli=cli)
    by_mode = {t["config"]["mode"]: t for t in summary["trial_list"] if t["config"]["k"] == 0}
    assert by_mode["hang"]["status"] == "timeout"
    assert by_mode["segv"]["status"] == "crashed"
    assert by_mode["exit3"]["status"] == "crashed"
    assert by_mode["raise"]["status"] == "runtime_error" and "bad config" in by_mode["raise"]["message"]
    assert by_mode["ok"]["status"] == "ok"


def test_a_python_benchmarks_name_names_its_session_and_its_file_continues_it(cli, tmp_path: Path) -> None:
    """``NAME`` is documented as what the benchmark is called, but the file name given on the
    command line always won; continued by naming the file, a session of another NAME was refused."""
    bench = tmp_path / "bench_named.py"
    bench.write_text('NAME = "my_bench"\nSPACE = {"x": [1, 2, 3, 4, 5, 6]}\n\n'
                     'def measure(config):\n    return {"latency_ms": 1.0 + config["x"]}\n')
    out = tmp_path / "s.json"
    assert cli("tune", str(bench), "--budget", "2", "--quiet", "--out", str(out)).returncode == 0
    assert show_json(out, cli=cli)["kernel"] == "my_bench"
    result = cli("tune", str(bench), "--resume", "--budget", "2", "--quiet", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert len(show_json(out, "--trials", cli=cli)["trial_list"]) == 4


def test_a_python_benchmark_edited_in_comments_or_docstrings_continues_an_edit_of_its_code_does_not(
        cli, tmp_path: Path) -> None:
    """Its identity was the file's bytes: a comment added to measure() refused every --resume of a
    session, with no way round it. A session hashed from the bytes still continues (and takes the
    code's hash)."""
    import json

    bench = tmp_path / "edited.py"
    code = ('SPACE = {"x": [1, 2, 3, 4, 5, 6]}\n\n'
            'def measure(config):\n    return {"latency_ms": 1.0 + config["x"]}\n')
    bench.write_text(code)
    out = tmp_path / "s.json"
    assert cli("tune", str(bench), "--budget", "2", "--quiet", "--out", str(out)).returncode == 0
    bench.write_text('"""A docstring added."""\n# and a comment\n' + code.replace("config):", "config):  # x only"))
    result = cli("tune", str(bench), "--resume", "--budget", "1", "--quiet", "--out", str(out))
    assert result.returncode == 0, result.stderr
    # a session from before, hashed from the bytes, continues while the bytes are the same
    import hashlib

    data = json.loads(out.read_text())
    data["source_hash"] = hashlib.sha256(bench.read_bytes()).hexdigest()[:16]
    out.write_text(json.dumps(data))
    assert cli("tune", str(bench), "--resume", "--budget", "1", "--quiet", "--out", str(out)).returncode == 0
    assert json.loads(out.read_text())["source_hash"] != data["source_hash"]  # the code's hash now
    bench.write_text(code.replace("1.0 +", "2.0 +"))  # the code itself changed: another benchmark
    refused = cli("tune", str(bench), "--resume", "--budget", "1", "--quiet", "--out", str(out))
    assert refused.returncode == 2 and "the kernel's code changed since the session was measured" in refused.stderr
    assert len(show_json(out, "--trials", cli=cli)["trial_list"]) == 4


def test_a_python_benchmark_named_at_its_new_place_continues_the_session_copied_here(cli, tmp_path: Path) -> None:
    """A session copied from another machine names its benchmark where it was there: naming the
    file where it is now was refused ("name it to run its code", with the old path), and nothing
    else could continue it. The file named runs if its code is the session's."""
    import json
    import shutil

    code = ('SPACE = {"x": [1, 2, 3, 4, 5, 6]}\nNAME = "toy"  # (the session is of "toy", not of bench.py)\n\n'
            'def measure(config):\n    return {"latency_ms": 1.0 + config["x"]}\n')
    there = tmp_path / "machine a" / "bench.py"
    there.parent.mkdir()
    there.write_text(code)
    out = tmp_path / "s.json"
    assert cli("tune", str(there), "--budget", "2", "--quiet", "--out", str(out)).returncode == 0
    here = tmp_path / "here" / "bench.py"
    here.parent.mkdir()
    shutil.copy(there, here)
    shutil.rmtree(there.parent)
    asked = cli("tune", "--resume", str(out), "--budget", "1", "--quiet")  # named where it was: not there
    assert asked.returncode == 2 and asked.stderr.strip() == (
        f"error: the session's python benchmark {there} is not there any more; name the file where it is now "
        "(tune NEW_PLACE/bench.py --resume ...): the same name and code continue the session"), asked.stderr
    result = cli("tune", str(here), "--resume", str(out), "--budget", "1", "--quiet")
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert len(data["trials"]) == 3 and data["backend"]["options"]["path"] == str(here.resolve())
    elsewhere = tmp_path / "elsewhere" / "bench.py"  # the same name, other code: another benchmark
    elsewhere.parent.mkdir()
    ran = tmp_path / "its top level ran"
    elsewhere.write_text(f"open({str(ran)!r}, 'w').close()\n" + code.replace("1.0 +", "2.0 +"))
    refused = cli("tune", str(elsewhere), "--resume", str(out), "--budget", "1", "--quiet")
    assert refused.returncode == 2 and "the kernel's code changed since the session was measured" in refused.stderr
    assert not ran.exists()  # told from its text: the file of other code was never imported
    from workbench.core.domain.session import load_session
    from workbench.runner.controller import RunRequest, runs_moved_benchmark, why_not_continued

    other = tmp_path / "other.py"  # another benchmark altogether is named as such, not as changed code
    other.write_text(code.replace("NAME = \"toy\"", "NAME = \"other\"").replace("1.0 +", "3.0 +"))
    why = why_not_continued(RunRequest(kernel=str(other), backend="python"), load_session(out))
    assert why is not None and "code changed" not in why, why
    copied = load_session(out)
    assert runs_moved_benchmark(copied, str(here))
    copied.device["name"] = "python on another-machine"  # measured elsewhere: not this machine's session
    assert not runs_moved_benchmark(copied, str(here))
    typo = cli("tune", str(tmp_path / "hre" / "bench.py"), "--resume", str(out), "--budget", "1", "--quiet")
    assert typo.returncode == 2 and typo.stderr.strip() == f"error: python benchmark {tmp_path / 'hre' / 'bench.py'}: no such file"
    assert json.loads(out.read_text())["backend"]["options"]["path"] == str(here.resolve())


@pytest.mark.parametrize("default, said", [
    ('{"x": 1, "y": 1}', 'DEFAULT: config x=1, y=1 violates restriction "x > 1"'),
    ('{"x": 2}', "DEFAULT: missing slot 'y'"),
])
def test_a_python_benchmarks_bad_default_is_named_as_such(cli, tmp_path: Path, default: str, said: str) -> None:
    """The refusal read as a fault of SPACE ("missing slot 'y'"), not of DEFAULT."""
    bench = tmp_path / "bd.py"
    bench.write_text(f'SPACE = {{"x": [1, 2], "y": [1, 2]}}\nRESTRICTIONS = ["x > 1"]\nDEFAULT = {default}\n\n'
                     'def measure(config):\n    return {"latency_ms": 1.0}\n')
    result = cli("tune", str(bench), "--budget", "2", "--out", str(tmp_path / "s.json"))
    assert result.returncode == 2 and f"python benchmark {bench}: {said}" in result.stderr, result.stderr


def test_failures_that_all_differ_are_not_summed_up_as_most_often_one(cli, tmp_path: Path) -> None:
    """Three different errors were summed up as "most often runtime_error (1)"."""
    bench = tmp_path / "fails.py"
    bench.write_text('SPACE = {"x": [1, 2, 3]}\n\ndef measure(config):\n'
                     '    raise ValueError(f"bad {config[\'x\']}")\n')
    out = tmp_path / "s.json"
    result = cli("tune", str(bench), "--strategy", "grid", "--budget", "3", "--quiet", "--out", str(out))
    assert "3 different failures, the first runtime_error: ValueError: bad 1" in result.stdout, result.stdout
    assert "most often" not in result.stdout


@pytest.mark.parametrize(
    "args, expected",
    [
        (["tune", "no_such_kernel", "--out", "{tmp}/x.json"], "unknown kernel"),
        (["tune", "vector_add", "--backend", "sim", "--set", "bogus=3", "--out", "{tmp}/x.json"], "bogus"),
        (["tune", "vector_add", "--backend", "sim", "--budget", "0", "--out", "{tmp}/x.json"], "--budget"),
        (["tune", "vector_add", "--backend", "sim", "--patience", "0", "--out", "{tmp}/x.json"],
         "--patience must be at least 1, got 0"),
        (["tune", "vector_add", "--strategy", "nope", "--out", "{tmp}/x.json"], "unknown strategy"),
        (["tune", "vector_add", "--strategy", "agnets", "--out", "{tmp}/x.json"],
         "unknown strategy 'agnets' (did you mean 'agents'?); choose one of: agents, "),
        # Kernel Tuner's names get their counterpart, not a spelling guess (dual_annealing was
        # sent to plain simulated annealing)
        (["tune", "vector_add", "--strategy", "genetic_algorithm", "--out", "{tmp}/x.json"],
         "unknown strategy 'genetic_algorithm': Kernel Tuner's genetic_algorithm is 'genetic' here; choose one of: "),
        (["tune", "vector_add", "--strategy", "dual_annealing", "--out", "{tmp}/x.json"],
         "unknown strategy 'dual_annealing': Kernel Tuner's dual_annealing has no counterpart here; choose one of: "),
        (["tune", "vector_add", "--strategy", "hybrid_vndx", "--out", "{tmp}/x.json"],
         "unknown strategy 'hybrid_vndx': Kernel Tuner's hybrid_vndx has no counterpart here; choose one of: "),
        (["tune", "vector_add", "--min-quality", "2", "--out", "{tmp}/x.json"], "quality"),
        (["tune", "vector_add", "--out", "{tmp}/missing/dir/x.json"], "does not exist"),
        (["tune", "vector_add", "--out", "{tmp}/garbage.json/x.json"], "garbage.json is not a folder"),
        (["show", "{tmp}/does-not-exist.json"], "does-not-exist.json"),
        (["show", "{tmp}/garbage.json"], "garbage.json"),
        (["show", "{tmp}/newer.json"], "version"),
        (["import-kt", "{tmp}/garbage.json", "--out", "{tmp}/y.json"], "garbage.json"),
        (["tune", "--replay", "{tmp}/garbage.json", "--out", "{tmp}/x.json"], "garbage.json"),
    ],
)
def test_bad_input_is_one_line_no_traceback_and_touches_nothing(cli, tmp_path: Path, args: list[str], expected: str) -> None:
    (tmp_path / "garbage.json").write_text("{ this is not json")
    (tmp_path / "newer.json").write_text(json.dumps({"format": "kernel-workbench-session", "version": 999}))
    keep = tmp_path / "x.json"
    keep.write_text("precious")
    result = cli(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert "Traceback" not in result.stderr
    assert expected in lines[0]
    assert keep.read_text() == "precious"
    assert not (tmp_path / "y.json").exists()


def test_bad_input_through_main_py_exits_2_with_one_line_on_stderr(tmp_path: Path) -> None:
    """The same contract end to end in a process of its own: ``main.py``'s exit status and streams."""
    (tmp_path / "garbage.json").write_text("{ this is not json")
    result = run_cli("show", str(tmp_path / "garbage.json"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "garbage.json" in result.stderr
    assert result.stderr.startswith("error:") and "Traceback" not in result.stderr


def test_only_show_json_computes_slot_importance(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Importance (Optuna's evaluator imports scikit-learn: a second of start-up) is computed for
    the one output that carries it, ``show --json``; ``tune``'s summary and the text ``show`` do not pay for it."""
    from workbench.core.domain import importance

    out = tmp_path / "s.json"
    calls: list[int] = []
    real = importance.session_importance
    monkeypatch.setattr(importance, "session_importance", lambda *a, **k: calls.append(1) or real(*a, **k))
    done = cli("tune", "vector_add", "--backend", "sim", "--strategy", "random", "--budget", "24",
               "--executor", "inline", "--out", str(out))
    assert done.returncode == 0, done.stderr
    text = cli("show", str(out))
    assert text.returncode == 0 and "feasible" in text.stdout
    assert calls == []
    shown = show_json(out, cli=cli)
    assert calls == [1] and shown["importance"] and shown["importance_note"].startswith("PED-ANOVA")
    assert shown["importance_fixed"] == []
    # a recording's parameter of one value has no share, and is named as such
    cache = {"device_name": "GPU X", "kernel_name": "k", "problem_size": 64, "tune_params_keys": ["block", "filter"],
             "tune_params": {"block": list(range(32, 32 * 31, 32)), "filter": [15]},
             "cache": {f"{b},15": {"block": b, "filter": 15, "time": 1.0 + abs(b - 320) / 100}
                       for b in range(32, 32 * 31, 32)}}
    (tmp_path / "kt.json").write_text(json.dumps(cache))
    assert cli("import-kt", tmp_path / "kt.json", "--out", tmp_path / "kt_session.json").returncode == 0
    recorded = show_json(tmp_path / "kt_session.json", cli=cli)
    assert recorded["importance_fixed"] == ["filter"] and set(recorded["importance"]) == {"block"}


def test_unsafe_restriction_in_a_benchmark_is_refused(cli, tmp_path: Path) -> None:
    bench = tmp_path / "evil.py"
    bench.write_text(
        "SPACE = {'a': [1, 2]}\n"
        "RESTRICTIONS = [\"__import__('os').system('touch pwned')\"]\n"
        "def measure(config):\n    return {'latency_ms': 1.0}\n"
    )
    result = cli("tune", str(bench), "--out", str(tmp_path / "o.json"))
    assert result.returncode == 2
    assert "not allowed" in result.stderr or "restriction" in result.stderr
    assert not (ROOT / "pwned").exists() and not (tmp_path / "pwned").exists()


def test_kernels_json_lists_the_library(cli) -> None:
    result = cli("kernels", "--json")
    assert result.returncode == 0, result.stderr
    listing = {k["name"]: k for k in json.loads(result.stdout)}
    expected = {"vector_add", "gelu", "reduce_sum", "softmax", "layernorm", "transpose", "sgemm", "conv2d",
                "stencil", "histogram"}
    assert expected <= set(listing)
    for item in listing.values():
        assert item["valid_configs"] >= 100
        assert {s["group"] for s in item["slots"]} <= {"launch", "memory", "compute", "reduction"}


def test_kill_tune_mid_run_then_show_recovers_every_finished_trial(cli, tmp_path: Path) -> None:
    out = tmp_path / "killed.json"
    env = {**os.environ, "KERNEL_WORKBENCH_FORCE_NO_GPU": "1", "WORKBENCH_SLOW_S": "0.05"}
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), "tune", str(FIXTURES / "slow_bench.py"), "--strategy", "grid",
         "--budget", "400", "--out", str(out), "--quiet"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    journal = Path(str(out) + ".journal")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_text().count("\n") >= 6:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    lines_at_kill = journal.read_text().count("\n")
    summary = show_json(out, "--trials", cli=cli)
    # every trial whose line reached the journal is recovered (the header is one line)
    assert summary["trials"] >= lines_at_kill - 1 >= 5
    assert [t["index"] for t in summary["trial_list"]] == list(range(summary["trials"]))


def test_import_kt_then_replay_tune(cli, tmp_path: Path, landscape) -> None:
    imported = tmp_path / "pnpoly.json"
    result = cli("import-kt", str(landscape("pnpoly_RTX_3090.json")), "--out", str(imported))
    assert result.returncode == 0, result.stderr
    summary = show_json(imported, cli=cli)
    assert summary["trials"] == 4092 and summary["simulated"] is False
    assert summary["by_status"].get("runtime_error") == 330
    out = tmp_path / "replayed.json"
    result = cli("tune", "--replay", str(imported), "--strategy", "random", "--budget", "20",
                 "--executor", "inline", "--out", str(out))
    assert result.returncode == 0, result.stderr
    replayed = show_json(out, cli=cli)
    assert replayed["trials"] == 20 and replayed["device"].get("replayed") is True


def test_show_says_how_the_trials_were_searched(cli, tmp_path: Path) -> None:
    """A session records its strategy, seed, options, pruning and stop rule; show named none of
    them, so repeating a run meant reading the file."""
    out = tmp_path / "g.json"
    result = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--strategy", "genetic",
                 "--option", "population=6", "--seed", "3", "--patience", "20", "--prune", "0.5", "--budget", "4",
                 "--executor", "inline", "--quiet", "--out", out)
    assert result.returncode == 0, result.stderr
    search = show_json(out, cli=cli)["search"]
    assert search["strategy"] == "genetic" and search["seed"] == 3 and search["options_changed"] == {"population": 6}
    assert search["options"]["population"] == 6 and len(search["options"]) > 1  # every option, as recorded
    assert (search["prune_keep"], search["patience"], search["budget"]) == (0.5, 20, 4)
    line = next(x for x in cli("show", out).stdout.splitlines() if x.startswith("search"))
    assert line == ("search   genetic (seed 3, population=6, pruned to 0.5 by the cost model, "
                    "stop after 20 evaluations without progress)")
    # and what else decides the configs a rerun measures: a run with noise off, at another size or
    # with several workers searched otherwise, and show named none of it
    noiseless = tmp_path / "n.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--no-noise", "--set", "n=4096",
               "--seed", "3", "--budget", "2", "--workers", "2", "--quiet", "--out", noiseless).returncode == 0
    search = show_json(noiseless, cli=cli)["search"]
    assert search["problem"]["n"] == 4096 and search["workers"] == 2
    assert search["backend"]["noise"] is False and search["backend"]["compile"] == "estimate"
    rerun = next(x for x in cli("show", noiseless).stdout.splitlines() if x.startswith("rerun"))
    assert rerun.startswith("rerun    n=4096, alpha=") and "noise off" in rerun and "resources estimated" in rerun
    assert "2 workers (local): measured in another order" in rerun
    # a sweep's sizes as --sizes takes them, not its own problem (which it never measured); a Ray run
    # of unrecorded width has several workers too
    swept = tmp_path / "s.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--sizes", "n=1024,2048",
               "--budget", "1", "--quiet", "--out", swept).returncode == 0
    rerun = next(x for x in cli("show", swept).stdout.splitlines() if x.startswith("rerun"))
    assert rerun.startswith("rerun    sizes n=1024,2048; alpha=") and "n=16777216" not in rerun
    doc = json.loads(swept.read_text())
    doc["run"] = {**(doc.get("run") or {}), "executor": "ray", "workers": None}
    doc["backend"]["options"].update(compile="nvrtc", seed=None)
    swept.write_text(json.dumps(doc))
    rerun = next(x for x in cli("show", swept).stdout.splitlines() if x.startswith("rerun"))
    assert "a worker per CPU (ray)" in rerun and "resources compiled" in rerun and "noise seed 0" in rerun
    doc = json.loads(out.read_text())  # options a continued run could not use are said to be ignored
    doc["strategy"]["options"].update(bogus=1, mutation="lots", crossover=[1] * 100_000, tournament="t" * 300)
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    search = show_json(edited, cli=cli)["search"]
    assert set(search["options_ignored"]) == {"bogus", "crossover", "mutation", "tournament"}
    assert "bogus" not in search["options_changed"]  # (a text of 300 characters refused the whole file)
    line = next(x for x in cli("show", edited).stdout.splitlines() if x.startswith("search"))
    # a value of any length is shortened (a list of 300,000 characters was printed in full)
    assert "ignored (a run takes the default): bogus=1, crossover=[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, ..., mutation='lots'" in line
    # values that clash with each other (tournament above population) were listed as changed,
    # while a continued run takes their defaults
    doc["strategy"]["options"] = {**{k: v for k, v in doc["strategy"]["options"].items() if k not in ("bogus", "mutation")},
                                  "tournament": 17, "population": 16}
    edited.write_text(json.dumps(doc))
    search = show_json(edited, cli=cli)["search"]
    assert {"tournament", "population"} & set(search["options_ignored"]) and "tournament" not in search["options_changed"]
    assert "does not go together" in search["options_ignored"][next(iter({"tournament", "population"}
                                                                          & set(search["options_ignored"])))]
    doc["strategy"]["options"].update(population="lots")  # a wrong type beside a clash: said, no traceback
    edited.write_text(json.dumps(doc))
    shown = cli("show", edited)
    assert shown.returncode == 0 and "population='lots'" in shown.stdout, shown.stderr
    doc["strategy"]["name"] = "nosuch"
    edited.write_text(json.dumps(doc))
    assert "not a strategy of this version" in next(
        x for x in cli("show", edited).stdout.splitlines() if x.startswith("search"))
    unpruned = tmp_path / "p1.json"  # a fraction of 1 prunes nothing: not said to be pruned
    assert cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--prune", "1", "--budget", "2",
               "--executor", "inline", "--quiet", "--out", unpruned).returncode == 0
    assert "pruned" not in next(x for x in cli("show", unpruned).stdout.splitlines() if x.startswith("search"))
    imported = tmp_path / "kt.json"  # an imported recording was searched by nobody here
    assert cli("import-kt", FIXTURES / "kt_cache_small.json", "--out", imported).returncode == 0
    assert show_json(imported, cli=cli)["search"]["strategy"] is None
    assert not any(x.startswith("search") for x in cli("show", imported).stdout.splitlines())


def test_tune_labels_replayed_timings_in_its_summary_as_it_labels_simulated_ones(cli, tmp_path: Path) -> None:
    out = tmp_path / "replayed.json"
    result = cli("tune", "--replay", FIXTURES / "kt_cache_small.json", "--budget", "3", "--executor", "inline",
                 "--quiet", "--out", out)
    assert result.returncode == 0, result.stderr
    assert "feasible (replayed); best" in result.stdout


def test_a_replay_naming_another_kernel_is_refused_not_relabelled(cli, tmp_path: Path) -> None:
    """``tune KERNEL --replay FILE`` filed the recorded trials under KERNEL (its exports, its title)."""
    out = tmp_path / "replayed.json"
    result = cli("tune", "reduce_sum", "--replay", FIXTURES / "kt_cache_small.json", "--budget", "3",
                 "--executor", "inline", "--out", out)
    assert result.returncode == 2 and not out.exists()
    assert result.stderr.strip().endswith(f"is a recording of 'vector_add', not 'reduce_sum': a replay's kernel is the "
                                          f"recorded one (leave the kernel out: tune --replay {FIXTURES / 'kt_cache_small.json'})")
    result = cli("tune", "vector_add", "--replay", FIXTURES / "kt_cache_small.json", "--budget", "3",
                 "--executor", "inline", "--quiet", "--out", out)  # naming the recorded kernel is fine
    assert result.returncode == 0, result.stderr


def test_kernel_dir_python_benchmark_is_found_by_name(cli, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "scaled.py").write_text(
        "SPACE = {'n': [1, 2, 3, 4], 'fast': [False, True]}\n"
        "RESTRICTIONS = ['n * 2 <= 6 or fast']\n"
        "def measure(config):\n"
        "    return {'latency_ms': config['n'] * (0.5 if config['fast'] else 1.0), 'memory_mb': 1.0}\n"
    )
    out = tmp_path / "scaled.json"
    result = cli("tune", "scaled", "--kernel-dir", str(folder), "--strategy", "grid", "--budget", "50",
                 "--out", str(out))
    assert result.returncode == 0, result.stderr
    summary = show_json(out, "--trials", cli=cli)
    assert summary["kernel"] == "scaled"
    assert summary["trials"] == 7  # 8 points, one excluded by the restriction; grid stops when exhausted
    assert summary["best"]["config"] == {"n": 1, "fast": True}
    # the same name is refused by the sim backend: it is a python benchmark, not a template
    refused = cli("tune", "scaled", "--kernel-dir", str(folder), "--backend", "sim", "--out", str(out))
    assert refused.returncode == 2 and "python benchmark" in refused.stderr


def test_help_strategy_lists_every_option_with_type_default_and_description(cli) -> None:
    """``tune --help-strategy NAME`` is generated from the strategy's OPTIONS, for every strategy."""
    from workbench.search.base import STRATEGIES, options_help, strategy_class

    for name in STRATEGIES:
        text = options_help(name)
        for option in strategy_class(name).OPTIONS:
            line = next(row for row in text.splitlines() if row.split()[:1] == [option.name])
            assert option.type_name in line.split() and repr(option.default) in line, line
            assert option.description[:30] in line, line
            assert option.range_text in line, line  # the allowed values, e.g. [1, 100]
    done = cli("tune", "--help-strategy", "annealing")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1:3] for line in done.stdout.splitlines()[2:]}
    assert rows["cooling"] == ["float", "0.9"] and rows["t_start"] == ["float", "0.3"]
    assert "[0.01, 0.999]" in next(line for line in done.stdout.splitlines() if line.split()[:1] == ["cooling"])
    bad = cli("tune", "--help-strategy", "nope")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == ["error: unknown strategy 'nope'; choose one of: "
                                               + ", ".join(sorted(STRATEGIES))]


def _slowly_compiling_template(tmp_path: Path) -> dict[str, str]:
    """A new ``counting`` template in ``tmp_path`` whose resource-table entry says its compiles
    take minutes (and knows only its default config), with nothing compiled before: the
    environment a command needs to meet it so."""
    import gzip
    import uuid

    from test_sim_backend import _counting_template

    from workbench.backends.sim import SimBackend
    from workbench.core.model.resource_table import (
        COLUMNS,
        FORMAT,
        VERSION,
        problem_key,
        table_path,
    )
    from workbench.core.domain.templates import load_template

    spec = _counting_template(tmp_path, uuid.uuid4().hex)
    template = load_template(tmp_path / "counting.py")
    target = SimBackend.target(spec)
    tables = tmp_path / "tables"
    tables.mkdir()
    entry = {"source_hash": template.source_hash(), "problem": problem_key(target.problem), "compile_options": [],
             "complete": False, "seconds": 600.0, "workers": 1,
             "configs": {target.default_config.id: [16, 0, 0, 0, 0]}}
    table = {"format": FORMAT, "version": VERSION, "arch": "sm_90", "compiler": "test", "columns": list(COLUMNS),
             "templates": {"counting": entry}}
    with gzip.open(table_path("sm_90", tables), "wt", encoding="utf-8") as handle:
        json.dump(table, handle)
    return {"KERNEL_WORKBENCH_RESOURCE_TABLES": str(tables), "KERNEL_WORKBENCH_CACHE_DIR": str(tmp_path / "empty-cache")}


def test_a_cli_run_saves_what_its_compiles_have_not_refined_and_says_so(cli, tmp_path: Path) -> None:
    """A table entry that says the template compiles slowly: the run does not wait for compiles,
    ``--refine-wait 0`` saves at once, the trials keep their mark and one line says how to refine
    them; continuing the session refines them."""
    env = _slowly_compiling_template(tmp_path)
    out = tmp_path / "run.json"
    result = cli("tune", "counting", "--kernel-dir", str(tmp_path), "--backend", "sim", "--strategy", "grid",
                 "--budget", "3", "--refine-wait", "0", "--out", str(out), env=env)
    assert result.returncode == 0, result.stderr
    assert "note: 2 trials keep estimated resources" in result.stderr and "--resume" in result.stderr
    trials = json.loads(out.read_text())["trials"]
    assert sum(bool(t["details"].get("resources_pending")) for t in trials) == 2
    # show says how many trials rest on estimates, whether the best does, and how to refine them
    shown = json.loads(cli("show", str(out), "--json").stdout)
    assert shown["resources_pending"] == 2
    best_pending = bool(trials[shown["best"]["index"]]["details"].get("resources_pending"))
    assert shown["best"]["resources_pending"] is best_pending
    text = cli("show", str(out)).stdout
    assert "estimate 2 trials simulated with estimated resources" in text
    assert f"tune --resume --out {out} --refine-only" in text
    assert ("(resources estimated" in text) is best_pending
    assert ("(resources estimated)" in result.stdout) is best_pending
    listed = json.loads(cli("show", str(out), "--json", "--trials").stdout)["trial_list"]
    assert [t["resources_pending"] for t in listed] == [bool(t["details"].get("resources_pending")) for t in trials]
    assert cli("show", str(out), "--trials").stdout.count("(resources estimated)") == 2 + best_pending
    again = cli("tune", "--resume", "--out", str(out), "--kernel-dir", str(tmp_path), "--budget", "1",
                "--refine-wait", "600", env=env)
    assert again.returncode == 0, again.stderr
    assert "keep estimated resources" not in again.stderr
    trials = json.loads(out.read_text())["trials"]
    assert not any(t["details"].get("resources_pending") for t in trials)
    assert sum(bool(t["details"].get("refined_from_estimate")) for t in trials) == 2
    shown = json.loads(cli("show", str(out), "--json").stdout)
    assert shown["resources_pending"] == 0 and shown["best"]["resources_pending"] is False
    assert "estimate " not in cli("show", str(out)).stdout


def test_refine_only_refines_the_estimated_trials_of_a_sweep_at_every_size(cli, tmp_path: Path) -> None:
    """A sweep whose sizes all have their evaluations cannot be continued with a budget, yet its
    estimated trials are refined by ``--refine-only``, which measures nothing new; the note at the
    end of the run names that command."""
    env = _slowly_compiling_template(tmp_path)
    out = tmp_path / "run.json"
    result = cli("tune", "counting", "--kernel-dir", str(tmp_path), "--backend", "sim", "--strategy", "grid",
                 "--set", "n=512", "--sizes", "n=512,256", "--budget", "3", "--refine-wait", "0",
                 "--out", str(out), env=env)
    assert result.returncode == 0, result.stderr
    assert f"tune --resume --out {out} --refine-only" in result.stderr
    before = json.loads(out.read_text())["trials"]
    pending = sum(bool(t["details"].get("resources_pending")) for t in before)
    assert pending >= 2
    # each size's best says whether it rests on an estimate, in the json and in its line
    sizes = json.loads(cli("show", str(out), "--json").stdout)["sizes"]
    marks = [size["best"]["resources_pending"] for size in sizes]
    assert marks == [bool(before[size["best"]["index"]]["details"].get("resources_pending")) for size in sizes]
    size_lines = [line for line in cli("show", str(out)).stdout.splitlines() if line.startswith("size ")]
    assert ["(resources estimated)" in line for line in size_lines] == marks
    again = cli("tune", "--resume", "--out", str(out), "--kernel-dir", str(tmp_path), "--refine-only", env=env)
    assert again.returncode == 0, again.stderr
    after = json.loads(out.read_text())["trials"]
    assert len(after) == len(before)
    assert not any(t["details"].get("resources_pending") for t in after)
    assert sum(bool(t["details"].get("refined_from_estimate")) for t in after) == pending
    assert f"refined {pending} trials" in again.stdout
    assert "finished (" not in again.stderr  # "finished (exhausted) after 0 evaluations" read as a fault
    nothing = cli("tune", "--resume", "--out", str(out), "--kernel-dir", str(tmp_path), "--refine-only", env=env)
    assert nothing.returncode == 0 and "nothing to refine" in nothing.stdout
    extra = cli("tune", "--resume", "--out", str(out), "--refine-only", "--budget", "2", env=env)
    assert extra.returncode == 2 and "drop --budget" in extra.stderr
    for flags, named in ((["--backend", "cuda"], "--backend"), (["--option", "elite=3"], "--option"),
                         (["--max-latency-ms", "1"], "--max-latency-ms"), (["--seed", "4"], "--seed"),
                         (["--executor", "inline"], "--executor")):
        ignored = cli("tune", "--resume", "--out", str(out), "--refine-only", *flags, env=env)
        assert ignored.returncode == 2 and f"drop {named}" in ignored.stderr, (flags, ignored.stderr)


def test_show_says_when_a_sessions_resources_are_estimates_no_refinement_replaces(cli, tmp_path: Path) -> None:
    """A run with ``--resources estimated`` compiles nothing: every figure that follows from the
    registers rests on the work-profile rule, which show says (it said nothing: only pending
    estimates were marked)."""
    out = tmp_path / "e.json"
    assert cli("tune", "transpose", "--backend", "sim", "--resources", "estimated", "--budget", "4",
               "--executor", "inline", "--out", str(out)).returncode == 0
    shown = json.loads(cli("show", str(out), "--json").stdout)
    assert shown["resources_estimated"] == 4 and shown["resources_pending"] == 0
    line = next(line for line in cli("show", str(out)).stdout.splitlines() if line.startswith("estimate "))
    assert "4 trials hold estimated resources that no refinement replaces" in line and "--resources estimated" in line


def test_an_interrupted_refinement_keeps_what_it_refined(cli, tmp_path: Path, monkeypatch) -> None:
    """A refined trial replaces its estimate in memory and, at once, in the session's journal: an
    interrupt before the closing save (Ctrl-C while the last compiles were awaited) lost every
    refinement of the run."""
    from workbench.core.domain import session as session_module
    from workbench.core.domain.session import load_session

    env = _slowly_compiling_template(tmp_path)
    out = tmp_path / "run.json"
    first = cli("tune", "counting", "--kernel-dir", str(tmp_path), "--backend", "sim", "--strategy", "grid",
                "--budget", "3", "--refine-wait", "0", "--out", str(out), env=env)
    assert first.returncode == 0, first.stderr
    pending = sum(bool(t.measurement.details.get("resources_pending")) for t in load_session(out).trials)
    assert pending == 2

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(session_module, "save_session", interrupted)
    again = cli("tune", "--resume", "--out", str(out), "--kernel-dir", str(tmp_path), "--refine-only", env=env)
    assert again.returncode == 130, again.stderr
    monkeypatch.undo()
    trials = load_session(out).trials  # the file and its journal, as the next command reads them
    assert len(trials) == 3 and not any(t.measurement.details.get("resources_pending") for t in trials)
    assert sum(bool(t.measurement.details.get("refined_from_estimate")) for t in trials) == 2


def test_refine_only_refuses_a_template_changed_since_the_run(cli, tmp_path: Path) -> None:
    """Refining re-measures with the template found now: an edited one would put another kernel's
    figures into the session (a launch that failed, a compile error), so it is refused as
    ``--resume`` refuses it, and the file is left as it was."""
    env = _slowly_compiling_template(tmp_path)
    out = tmp_path / "run.json"
    result = cli("tune", "counting", "--kernel-dir", str(tmp_path), "--backend", "sim", "--strategy", "grid",
                 "--budget", "3", "--refine-wait", "0", "--out", str(out), env=env)
    assert result.returncode == 0, result.stderr
    before = out.read_bytes()
    source = tmp_path / "counting.cu"
    source.write_text(source.read_text().replace("K * 1.0f", "K * 2.0f"))
    for extra in ((), ("--budget", "1")):
        flags = ("--refine-only",) if not extra else extra
        refused = cli("tune", "--resume", "--out", str(out), "--kernel-dir", str(tmp_path), *flags, env=env)
        assert refused.returncode == 2, refused.stdout
        assert "the kernel's code changed since the session was measured" in refused.stderr
    assert out.read_bytes() == before


def test_out_of_range_strategy_options_are_refused_before_the_run_in_one_line(cli, tmp_path: Path) -> None:
    """``--option elite=0`` crashed the agents mid-run (no session saved). A hand-edited session's
    stored options never reach the strategy unchecked either: on ``--resume`` each value the option
    does not take is replaced by its default, said in one warning line (as the window does)."""
    out = tmp_path / "s.json"
    bad = cli("tune", "vector_add", "--backend", "sim", "--budget", "4", "--executor", "inline",
              "--out", str(out), "--option", "elite=0")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and not out.exists()
    assert bad.stderr.strip().splitlines() == ["error: strategy 'agents': option elite=0 must be in [1, 100]"]
    bad = cli("tune", "vector_add", "--backend", "sim", "--budget", "4", "--executor", "inline",
              "--out", str(out), "--strategy", "genetic", "--option", "tournament=-1")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "tournament=-1" in bad.stderr
    done = cli("tune", "vector_add", "--backend", "sim", "--budget", "4", "--executor", "inline", "--out", str(out))
    assert done.returncode == 0, done.stderr
    for stored in ("x", 10**12, [1], "no"):
        data = json.loads(out.read_text())
        data["strategy"]["options"]["learn_all" if stored == "no" else "elite"] = stored
        edited = tmp_path / "edited.json"
        edited.write_text(json.dumps(data))
        again = cli("tune", "--resume", "--out", str(edited), "--budget", "2", "--executor", "inline")
        assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
        warned = [line for line in again.stderr.splitlines() if line.startswith("warning:")]
        name, default = ("learn_all", True) if stored == "no" else ("elite", 4)
        assert len(warned) == 1 and f"option {name}=" in warned[0] and f"its default {default!r} is used" in warned[0]
        assert json.loads(edited.read_text())["strategy"]["options"][name] == default


def test_estimated_resources_make_a_simulated_run_repeat_exactly(cli, tmp_path: Path, monkeypatch) -> None:
    """In the default mode a trial's figures depend on which compiles had landed (and on the
    compile cache), so two runs with one seed could diverge; ``--resources estimated`` compiles
    nothing and is what a repeatable run or a demo needs."""
    runs = []
    for name in ("a", "b"):
        monkeypatch.setenv("KERNEL_WORKBENCH_CACHE_DIR", str(tmp_path / f"cache-{name}"))
        out = tmp_path / f"{name}.json"
        done = cli("tune", "conv2d", "--backend", "sim", "--resources", "estimated", "--budget", "12",
                   "--executor", "inline", "--quiet", "--out", out)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(out.read_text()))
    first, second = ([(t["config"], t["metrics"]["latency_ms"]) for t in run["trials"]] for run in runs)
    assert first == second and len(first) == 12
    assert runs[0]["backend"]["options"]["compile"] == "estimate"
    assert all(t["details"]["estimated"] is True for t in runs[0]["trials"])


def test_the_trial_listing_has_a_header_with_units_and_a_sweeps_trials_say_their_size(cli, tmp_path) -> None:
    """``show --trials`` printed bare numbers (``1 ok 20.45``: no unit), and a sweep's trials of
    different sizes were listed alike."""
    out = tmp_path / "sw.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--resources", "estimated",
               "--sizes", "n=1024,65536", "--budget", "2", "--out", out, "--quiet").returncode == 0
    lines = cli("show", out, "--trials").stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:4] == ["trial", "status", "latency", "ms"])
    assert "size" in lines[header].split()
    rows = lines[header + 1:]
    assert len(rows) == 4 and {row.split()[3] for row in rows} == {"n=1024", "n=65536"}


def test_refine_only_with_nothing_pending_says_why_the_estimates_stay(cli, tmp_path) -> None:
    """'no trial holds estimated resources' where show said every trial holds estimates (chosen
    with --resources estimated): the two now agree."""
    out = tmp_path / "e.json"
    assert cli("tune", "vector_add", "--backend", "sim", "--executor", "inline", "--resources", "estimated",
               "--budget", "2", "--out", out, "--quiet").returncode == 0
    result = cli("tune", "--resume", "--out", out, "--refine-only")
    assert result.returncode == 0 and "nothing to refine" in result.stdout
    assert "2 trials hold estimated resources that no refinement replaces: the run chose estimated" in result.stdout


@pytest.mark.parametrize("args", [["--replay", str(Path(__file__).parent / "fixtures" / "kt_cache_small.json")],
                                  ["vector_add", "--backend", "sim", "--resources", "estimated"]])
def test_a_time_limit_shorter_than_the_start_still_measures_one_config(cli, tmp_path, args) -> None:
    """A replay with --time-limit 1e-9 wrote an empty session (and resuming it, with the stored
    limit, again), where a template's run measured its default config."""
    out = tmp_path / "t.json"
    result = cli("tune", *args, "--budget", "5", "--time-limit", "1e-9", "--executor", "inline", "--out", out)
    assert result.returncode == 0, result.stderr
    assert "finished (time_limit) after 1 evaluation\n" in result.stderr
    assert len(json.loads(out.read_text())["trials"]) == 1


def test_a_run_that_measured_the_whole_space_says_so_where_it_says_exhausted(cli, tmp_path) -> None:
    """"finished (exhausted) after 0 evaluations", for a continued session whose space was all
    measured, read as a fault: the line now says what the word means."""
    bench = tmp_path / "three.py"
    bench.write_text("SPACE = {'a': [1, 2, 3]}\n\ndef measure(config):\n    return {'latency_ms': float(config['a'])}\n")
    out = tmp_path / "three.json"
    first = cli("tune", bench, "--backend", "python", "--budget", "5", "--workers", "1", "--out", out)
    assert first.returncode == 0, first.stderr
    assert "finished (exhausted: no config left to measure, the strategy proposed every one it can) " \
           "after 3 evaluations" in first.stderr
    again = cli("tune", bench, "--backend", "python", "--resume", out, "--budget", "3", "--workers", "1")
    assert again.returncode == 0, again.stderr
    assert "finished (exhausted: no config left to measure" in again.stderr and "after 0 evaluations" in again.stderr


def test_tunes_last_line_counts_one_trial_in_the_singular(cli, tmp_path):
    result = cli("tune", "vector_add", "--backend", "sim", "--resources", "estimated", "--budget", "1",
                 "--executor", "inline", "--quiet", "--out", tmp_path / "one.json")
    assert result.returncode == 0, result.stderr
    assert "vector_add: 1 trial (new session), 1 feasible" in result.stdout, result.stdout
    exported = cli("export", tmp_path / "one.json", "--format", "csv", "--out", tmp_path / "one.csv")
    assert "exported csv (1 trial;" in exported.stdout + exported.stderr, exported


def test_the_packages_logged_warnings_are_said_as_warning_lines(cli, capsys, monkeypatch) -> None:
    """A run's note logged by the package (the output file replaced during the run, a journal kept
    apart) came out bare through Python's last-resort handler: no `warning:` for a script to find.
    Said while the command runs, with a record's traceback, and only then."""
    import logging

    import workbench.cli as cli_module

    def logs(_args: object) -> int:
        logging.getLogger("workbench.runner.engine").warning("%s was replaced by something else during the run",
                                                             "s.json")
        try:
            1 / 0
        except ZeroDivisionError:
            logging.getLogger("workbench.runner.controller").error("a step failed", exc_info=True)
        return 0

    monkeypatch.setitem(cli_module.COMMANDS, "kernels", logs)
    result = cli("kernels")
    lines = result.stderr.splitlines()
    assert result.returncode == 0 and lines[0] == "warning: s.json was replaced by something else during the run"
    assert lines[1] == "warning: a step failed" and lines[-1] == "ZeroDivisionError: division by zero"
    assert "error:" not in result.stderr  # a logged note does not make the command fail
    logging.getLogger("workbench.runner.engine").warning("after the command")  # the handler went with it
    assert "warning: after the command" not in capsys.readouterr().err


def test_kernels_lists_a_template_whose_space_is_too_linked_to_count(tmp_path, monkeypatch, capsys) -> None:
    """One template of a folder whose restriction links three long slots made `kernels` fail
    whole (exit 2, no listing) after the count gave up: it is listed with its count unknown."""
    import shutil

    from workbench.cli import main as cli_main
    from workbench.core.domain import space_count

    folder = tmp_path / "mine"
    shutil.copytree(ROOT / "docs" / "examples" / "saxpy", folder)
    spec_path = folder / "saxpy.kernel.json"
    spec = json.loads(spec_path.read_text())
    for name in ("pad_a", "pad_b", "pad_c"):
        spec["slots"].append({"name": name, "values": list(range(100)), "group": "compute", "default": 0})
    spec["restrictions"] = [*spec.get("restrictions", []), "(pad_a * 7 + pad_b * 3 + pad_c) % 11 != 5"]
    spec_path.write_text(json.dumps(spec))
    source = folder / spec.get("source", "saxpy.cu")
    source.write_text(source.read_text() + "\n__device__ int workbench_pads() { return PAD_A + PAD_B + PAD_C; }\n")
    # counted by backtracking (not the vectorised count of a space under a million points), giving
    # up soon, as a space of three 3,000-value slots does after 10,000,000 checks (15 s)
    monkeypatch.setattr(space_count, "VECTOR_MAX_POINTS", 1_000)
    monkeypatch.setattr(space_count, "MAX_COUNT_CHECKS", 200_000)
    capsys.readouterr()
    assert cli_main(["kernels", "--kernel-dir", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert any(line.split()[:3] == ["saxpy", "?", "configs"] for line in out.splitlines()), out
    assert "vector_add" in out  # the others are listed still
    assert "warning: saxpy: its valid configs are not counted (counting the valid configs needs more than" in err
    assert cli_main(["kernels", "--kernel-dir", str(folder), "--json"]) == 0
    listing = {item["name"]: item for item in json.loads(capsys.readouterr().out)}
    assert listing["saxpy"]["valid_configs"] is None and listing["vector_add"]["valid_configs"] > 0


def test_a_python_benchmark_edited_during_its_run_is_not_measured_into_the_session(cli, tmp_path: Path) -> None:
    """A worker that replaces one lost mid-run (a crash, a timeout) imported the file as it was
    then: an edit made during the run was measured into the session under the first version's code
    identity, and recommended. Such a worker refuses to start and the run ends, keeping what the
    code it started with measured."""
    import json

    bench = tmp_path / "edited_live.py"
    bench.write_text(
        "import os\n"
        "SPACE = {'a': list(range(8))}\n\n"
        "def measure(config):\n"
        "    if config['a'] == 1:  # the person saves an edit while the run goes on\n"
        "        text = open(__file__).read()\n"
        "        open(__file__, 'w').write(text.replace('5.0 +', '0.001 +'))\n"
        "    if config['a'] == 2:\n"
        "        os._exit(1)  # the worker is lost: a new one imports the file\n"
        "    return {'latency_ms': 5.0 + config['a']}\n")
    out = tmp_path / "s.json"
    result = cli("tune", str(bench), "--strategy", "grid", "--budget", "8", "--out", str(out))
    assert f"python benchmark {bench} changed since the run started" in result.stderr, result.stderr
    trials = json.loads(out.read_text())["trials"]
    assert all(t.get("metrics", {}).get("latency_ms", 5.0) >= 5.0 for t in trials), trials  # no new code's figure


def test_a_python_benchmark_in_a_folder_named_in_bytes_that_are_not_utf8_runs(cli, tmp_path) -> None:
    """A folder from an old Latin-1 archive (``caf\\xe9``): its benchmark was refused with
    "UnicodeEncodeError while reading its declarations", which reads as a broken module, where
    templates, replays and sessions in the same folder worked."""
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    folder.mkdir()
    bench = folder / "plain.py"
    bench.write_text("SPACE = {'i': [1, 2, 3]}\ndef measure(c):\n    return {'latency_ms': 1.0 + c['i']}\n")
    out = folder / "s.json"
    said = cli("tune", bench, "--strategy", "grid", "--budget", "3", "--quiet", "--out", out)
    assert said.returncode == 0, said.stderr
    assert cli("tune", bench, "--resume", out, "--budget", "1", "--quiet").returncode == 0
    assert json.loads(cli("show", out, "--json").stdout)["trials"] == 3


def test_a_run_whose_output_folder_is_removed_keeps_its_trials_where_it_runs(cli, tmp_path) -> None:
    """A clean-up script removed the output's folder mid-run: the journal could not be appended
    to, the final save was not made, and keeping the session apart beside the file failed with
    the folder gone, so every trial measured (the session's earlier ones too) was lost."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    bench = tmp_path / "b.py"
    bench.write_text("import shutil\nSPACE = {'i': list(range(8))}\ndef measure(c):\n"
                     f"    if c['i'] == 3:\n        shutil.rmtree({str(out_dir)!r}, ignore_errors=True)\n"
                     "    return {'latency_ms': 1.0 + c['i']}\n")
    here = tmp_path / "here"  # (the folder the command runs in: a process of its own, started there)
    here.mkdir()
    said = subprocess.run([sys.executable, str(ROOT / "main.py"), "tune", str(bench), "--strategy", "grid", "--budget",
                           "8", "--quiet", "--out", str(out_dir / "s.json")], capture_output=True, text=True,
                          timeout=120, cwd=here, env={**os.environ, "KERNEL_WORKBENCH_FORCE_NO_GPU": "1"})
    assert said.returncode == 1 and not out_dir.exists(), said.stderr
    kept = here / "s.unsaved.json"
    assert f"kept apart as {kept}" in said.stderr, said.stderr
    assert json.loads(cli("show", kept, "--json").stdout)["trials"] >= 4


def test_durations_read_at_any_scale():
    """tune's progress line and the window wrote a long run's ETA as ``ETA 14990s``; the compile
    table's lines already wrote minutes and hours. One writing for all of them."""
    from workbench.core.domain.figures import duration

    assert [duration(s) for s in (None, float("nan"), -3.0, 0.4, 42.0, 625.0, 14990.0, 360000.0)] == [
        "?", "?", "0s", "0s", "42s", "10m25s", "4h09m", "100h00m"]
