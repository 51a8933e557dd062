"""Issue 16: faults of the machine. Nothing vanishes, nothing is miscounted (SPEC I44, I45).

Each fault is made for real on a 14-cell keyless slice (LangGraph, both configs, T1, seed
11) run with two xdist workers: a worker process killed with SIGKILL, a worker that dies on
the same cell twice, an output directory on a filesystem too small for the wave (a tmpfs
mounted in an unprivileged user and mount namespace, ``unshare -rm``), and SIGTERM or two
SIGINTs sent to the controller. Afterwards every selected cell is accounted for exactly
once (a verdict, an exclusion, or not run with the reason), the summary, results.json and
the records on disk agree, and a resumed session completes the slice with the verdicts of
an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from plugin_runs import (
    Run,
    accounted_once,
    clean_env,
    default_ctrl_c,
    plugin,
    pytest_command,
    run,
    shared,
    shared_dir,
    verdicts,
)

from pytest_sabot.commands.cli import main
from pytest_sabot.core.manifest import read_manifests
from pytest_sabot.core.trace_io import read_trace
from pytest_sabot.results import read_results
from pytest_sabot.results.adjudicate import read_record

pytestmark = pytest.mark.slow

ROWS = ["--sabot-wave=1", "--sabot-framework=langgraph", "--sabot-task=T1", "--sabot-seed=11"]
CELLS = 14
CRASHING = "langgraph-guardrail-O3-T1-s11"
# One cell at a time per worker, and three in flight with the model answering in time
# (SPEC I161): the faults of the machine end the same way.
IN_FLIGHT = [[], ["--sabot-concurrency=3", "--sabot-sim-latency=30ms"]]
IN_FLIGHT_IDS = ["one-at-a-time", "three-in-flight"]
SLOW_IN_FLIGHT = "--sabot-sim-latency=1s"


@pytest.fixture(scope="module")
def reference(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The slice run without any fault, for comparison."""
    where = shared_dir(pytestconfig, tmp_path_factory, "sabot-faults-reference")
    session = shared(where, *ROWS, "-p", "no:xdist")
    assert session.returncode == 0, session.describe()
    return session


def _start(where: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    where.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        pytest_command(where / "out", *ROWS, "-n", "2", *args),
        cwd=where,
        env=clean_env(env),
        stdout=(where / "stdout.txt").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_ctrl_c,
    )


def _wait_for(condition: object, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the session")


def _recorded(out: Path) -> int:
    return len(list((out / "cells").glob("*/outcome.json"))) if out.exists() else 0


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


def _running_a_cell(pid: int) -> int | None:
    """The worker process that has a cell's trace open for writing right now."""
    for child in _children(pid):
        try:
            for fd in os.listdir(f"/proc/{child}/fd"):
                target = os.readlink(f"/proc/{child}/fd/{fd}")
                if target.endswith("events.jsonl.partial") and "/cells/" in target:
                    return child
        except OSError:
            continue
    return None


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def _finished(where: Path, proc: subprocess.Popen[str]) -> Run:
    returncode = proc.wait(timeout=600)
    stdout = (where / "stdout.txt").read_text()
    return Run(where, where / "out", returncode, stdout, "")


def _same_as_reference(session: Run, reference: Run) -> None:
    assert session.results.selection.complete, session.describe()
    assert verdicts(session.results) == verdicts(reference.results)
    accounted_once(session.results)
    assert main(["rescore", str(session.out)]) == 0


def _no_temp_files(out: Path) -> None:
    leftovers = [p for p in out.rglob("*") if ".tmp" in p.name or p.name.startswith(".sabot-")]
    assert not leftovers, leftovers


def _records_intact(out: Path) -> None:
    """Every finished record still reads: its trace parses and ends, its outcome loads."""
    if not (out / "cells").is_dir():
        return
    for cell in (out / "cells").iterdir():
        record = read_record(out, cell.name)
        if record.kind == "run":
            trace = read_trace(cell)
            assert trace.events[-1].kind == "run_end", cell.name


@pytest.mark.parametrize("in_flight", IN_FLIGHT, ids=IN_FLIGHT_IDS)
def test_16_a_killed_worker_cell_runs_again_and_the_wave_completes(
    reference: Run, tmp_path: Path, in_flight: list[str]
) -> None:
    """With cells in flight (SPEC I161) the killed worker leaves several unfinished: the one
    its test waited for keeps its crashed attempt, the others run again where xdist sends
    them; the slice completes with the verdicts of an uninterrupted run."""
    proc = _start(tmp_path, *in_flight)
    victim: list[int] = []

    def a_worker_is_running_a_cell() -> bool:
        pid = _running_a_cell(proc.pid) if _recorded(tmp_path / "out") >= 2 else None
        if pid is not None:
            victim.append(pid)
        return pid is not None

    _wait_for(a_worker_is_running_a_cell)
    os.kill(victim[0], signal.SIGKILL)
    session = _finished(tmp_path, proc)
    assert session.returncode == 0, session.describe()
    assert "1 rerun" in session.stdout and "replacing crashed worker" in session.stdout
    sel = session.results.selection
    assert sel.selected == sel.recorded == CELLS
    assert f"cells: {CELLS} recorded / {CELLS} selected" in session.stdout
    crashed = [p for p in (tmp_path / "out" / "cells").glob("*/attempt-1/crashed.json")]
    if in_flight:  # the cell its test waited for may have finished already: kept as it is
        assert len(crashed) <= 1, crashed
    else:
        assert len(crashed) == 1, "the killed worker's cell kept its crashed attempt"
    _same_as_reference(session, reference)


def test_16_a_cell_whose_worker_crashes_twice_is_recorded_run_error(tmp_path: Path) -> None:
    crasher, env = plugin(
        tmp_path / "plugins",
        "crasher",
        "import os, signal\n"
        "def pytest_runtest_setup(item):\n"
        f"    if '{CRASHING}' in item.nodeid:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n",
    )
    session = run(tmp_path, *crasher, *ROWS, "-n", "2", env=env)
    assert session.returncode == pytest.ExitCode.TESTS_FAILED, session.describe()
    assert "1 rerun" in session.stdout
    assert f"ERROR at setup of test_cell[{CRASHING}]" in session.stdout
    results = session.results
    (cell,) = [c for c in results.cells if c.cell_id == CRASHING]
    assert cell.excluded is not None and cell.excluded.code == "RUN_ERROR"  # type: ignore[union-attr]
    assert "crashed while running" in cell.excluded.reason  # type: ignore[union-attr]
    outcome = read_record(session.out, CRASHING).outcome
    assert outcome is not None and outcome.attempts == 2
    assert results.selection.recorded == CELLS and results.selection.complete
    accounted_once(results)
    assert main(["rescore", str(session.out)]) == 0


def _unshare_available(where: Path) -> str | None:
    if shutil.which("unshare") is None:
        return "unshare(1) is not installed"
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {where}"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return (
            "mounting a small tmpfs needs a user and mount namespace (unshare -rm), which "
            f"this machine refuses: {probe.stderr.strip()}"
        )
    return None


DRIVER = '''
import json, shutil, subprocess, sys
from pathlib import Path

mount, host, size, command = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], check=True)
out = mount / "out"
facts = {}
for name, extra in (("full", []), ("resumed", ["--sabot-resume"])):
    if name == "resumed":  # free space: the same filesystem, made larger
        subprocess.run(["mount", "-o", "remount,size=256m", str(mount)], check=True)
    proc = subprocess.run([*command, f"--sabot-out={out}", *extra], cwd=host,
                          capture_output=True, text=True, timeout=900)
    facts[name] = {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}
    shutil.copytree(out, host / f"out-{name}")
(host / "facts.json").write_text(json.dumps(facts))
'''


def test_16_a_full_disk_ends_the_session_with_one_clear_message_and_resume_completes_it(
    reference: Run, tmp_path: Path
) -> None:
    mount = tmp_path / "mnt"
    mount.mkdir()
    why = _unshare_available(mount)
    if why is not None:
        pytest.skip(why)
    (tmp_path / "driver.py").write_text(DRIVER)
    command = pytest_command(Path("unused"), *ROWS, "-n", "2")
    command = [a for a in command if not a.startswith("--sabot-out=")]
    subprocess.run(
        ["unshare", "-rm", sys.executable, str(tmp_path / "driver.py"), str(mount),
         str(tmp_path), "420k", *command],
        env=clean_env(), check=True, timeout=1200,
    )
    facts = json.loads((tmp_path / "facts.json").read_text())
    full, resumed = facts["full"], facts["resumed"]
    text = full["stdout"] + full["stderr"]
    assert full["rc"] == pytest.ExitCode.INTERRUPTED, text[-4000:]
    assert "Traceback" not in text and "INTERNALERROR" not in text
    assert text.count("the session stopped because the output could not be written") == 1
    assert "No space left on device" in text and "--sabot-resume" in text
    assert "ERROR ::test_cell[" in text  # the harness's own failure is a pytest error
    out = tmp_path / "out-full"
    results = read_results(out)
    assert not results.selection.complete
    assert results.session is not None and results.session.status == "output-unwritable"
    reasons = {n.reason for n in results.selection.not_run}
    assert reasons == {"output unwritable"}
    assert f"{results.selection.recorded} of {CELLS} selected cells are safely recorded" in text
    accounted_once(results)
    _no_temp_files(out)
    _records_intact(out)
    assert main(["rescore", str(out)]) == 3  # reproduced, and inconclusive
    assert resumed["rc"] == 0, resumed["stdout"][-4000:]
    done = Run(tmp_path, tmp_path / "out-resumed", 0, resumed["stdout"], resumed["stderr"])
    _same_as_reference(done, reference)


def _junit_cases(path: Path) -> list[Any]:
    from junitparser import JUnitXml

    xml = JUnitXml.fromfile(str(path))
    suites = [xml] if xml._tag == "testsuite" else list(xml)
    return [case for suite in suites for case in suite]


def _signalled(
    tmp_path: Path, sig: signal.Signals, again: float | None, *args: str
) -> tuple[Run, list[int]]:
    proc = _start(tmp_path, *args)
    _wait_for(lambda: _recorded(tmp_path / "out") >= 3)
    workers = _children(proc.pid)
    assert len(workers) == 2
    proc.send_signal(sig)
    if again is not None:
        time.sleep(again)
        proc.send_signal(sig)
    return _finished(tmp_path, proc), workers


@pytest.mark.parametrize("in_flight", IN_FLIGHT, ids=IN_FLIGHT_IDS)
def test_16_sigterm_of_the_controller_records_an_interrupted_session(
    reference: Run, tmp_path: Path, in_flight: list[str]
) -> None:
    """With cells in flight (SPEC I161) the cells running ahead of their tests stop as the
    interrupted one does; the resume completes the slice as an uninterrupted run."""
    # The model answers slowly enough that the signal lands while cells are still running
    # and others are still queued (the latency changes no record, only the time).
    in_flight = [SLOW_IN_FLIGHT if a.startswith("--sabot-sim-latency") else a for a in in_flight]
    junit = tmp_path / "junit.xml"
    session, workers = _signalled(tmp_path, signal.SIGTERM, None, *in_flight,
                                  f"--junitxml={junit}")
    assert session.returncode == pytest.ExitCode.INTERRUPTED, session.describe()
    _wait_for(lambda: not _alive(workers), timeout=30)
    results = session.results
    assert results.session is not None and results.session.status == "interrupted"
    assert not results.selection.complete
    assert {n.reason for n in results.selection.not_run} == {"interrupted"}
    assert "INCOMPLETE:" in session.stdout and "(interrupted)" in session.stdout
    accounted_once(results)
    # The count line and the JUnit XML count the cells results.json counts (SPEC I96),
    # those a stopped worker recorded without reporting them included; a cell not run is
    # a skipped testcase naming why, as sabot export files it.
    counted = {c.cell_id for c in results.cells} - set(results.selection.pulled_in)
    cases = {c.name[len("test_cell["):-1]: c for c in _junit_cases(junit)
             if c.name.startswith("test_cell[")}
    assert {cid for cid, c in cases.items() if not c.is_skipped} == counted
    assert {cid for cid, c in cases.items() if c.is_skipped} == {
        n.cell_id for n in results.selection.not_run}
    words = ("baseline_pass|baseline_fail|run_error|injection_unverified|detected_hard|"
             "detected_soft|missed|unjudged")
    count_line = [line for line in session.stdout.splitlines()
                  if re.search(rf"\d+ ({words})\b", line)][-1]
    counts = re.findall(rf"(\d+) ({words})\b", count_line)
    assert sum(int(n) for n, _ in counts) == len(counted), session.stdout[-600:]
    _no_temp_files(session.out)
    _records_intact(session.out)
    (manifest,) = read_manifests(session.out)
    assert manifest.status == "interrupted" and manifest.ended is not None
    assert main(["rescore", str(session.out)]) == 3
    resumed = run(tmp_path, *ROWS, "-n", "2", "--sabot-resume", *in_flight)
    assert resumed.returncode == 0, resumed.describe()
    _same_as_reference(resumed, reference)


def test_16_a_second_ctrl_c_still_exits_and_stops_the_workers(tmp_path: Path) -> None:
    session, workers = _signalled(tmp_path, signal.SIGINT, 0.2)
    # the second interrupt lands while results are written (pytest's status 2), or earlier,
    # while pytest itself reports the first one: then the interpreter ends on the signal
    assert session.returncode in (pytest.ExitCode.INTERRUPTED, 130, -signal.SIGINT), (
        session.describe()
    )
    _wait_for(lambda: not _alive(workers), timeout=30)
    _no_temp_files(session.out)
    _records_intact(session.out)
    results = read_results(session.out)
    assert not results.selection.complete  # whatever got written, it never looks complete


# --------------------------------------------------------------------------- issue 21.4

DAMAGED = "langgraph-default-O2-T1-s11"
DAMAGED_BASELINE = "langgraph-guardrail-baseline-T1-s11"


def _damage(out: Path, how: str) -> tuple[str, Path, str]:
    """Damage one record of a finished output the way a disk or an editor would; returns
    the cell, the damaged file and where in it (as the message names it)."""
    cell = DAMAGED_BASELINE if how == "cut-baseline" else DAMAGED
    run_dir = out / "cells" / cell
    trace = run_dir / "events.jsonl"
    lines = trace.read_text().splitlines()
    if how == "torn-trace":  # a line that stops in the middle
        lines[3] = lines[3][:40]
        trace.write_text("\n".join(lines) + "\n")
        return cell, trace, "line 4"
    if how in ("cut-trace", "cut-baseline"):  # cut at a line boundary: every line reads
        kept = len(lines) // 2
        trace.write_text("\n".join(lines[:kept]) + "\n")
        return cell, trace, f"line {kept}"
    if how == "deep-trace":
        lines[2] = "[" * 100_000 + "]" * 100_000
        trace.write_text("\n".join(lines) + "\n")
        return cell, trace, "line 3"
    outcome = run_dir / "outcome.json"
    if how == "outcome-not-json":
        outcome.write_text('{"cell_id": "' + cell[:10])
        return cell, outcome, "line 1"
    data = json.loads(outcome.read_text())
    data["attempts"] = "two"
    outcome.write_text(json.dumps(data))
    return cell, outcome, "attempts"


@pytest.mark.parametrize(
    ("how", "workers"),
    [("torn-trace", []), ("cut-trace", []), ("deep-trace", []), ("outcome-not-json", []),
     ("outcome-field", ["-n", "2"]), ("cut-baseline", ["-n", "2"])],
)
def test_21_4_a_damaged_record_is_named_set_aside_and_its_cell_run_again_on_resume(
    reference: Run, tmp_path: Path, how: str, workers: list[str]
) -> None:
    out = tmp_path / "out"
    shutil.copytree(reference.out, out)
    cell, damaged, where = _damage(out, how)
    damaged_bytes = damaged.read_bytes()
    junit = tmp_path / "junit.xml"
    xdist = workers or ["-p", "no:xdist"]
    session = run(tmp_path, *ROWS, *xdist, "--sabot-resume", f"--junitxml={junit}", out=out)
    text = session.stdout + session.stderr
    assert session.returncode == 0, session.describe()
    assert "Traceback" not in text and "INTERNALERROR" not in text
    # named: the cell, the file and the line or field, and what is wrong
    said = next(line for line in text.splitlines() if "damaged record of" in line)
    assert cell in said and f"{damaged}: field '{where}" in said, said
    # set aside, never deleted: the damaged file as it was, with the reason beside it
    (aside,) = sorted((out / "superseded").glob(f"{cell}~*"))
    assert (aside / damaged.name).read_bytes() == damaged_bytes
    note = json.loads((aside / "set-aside.json").read_text())
    assert note["reason"].startswith("a damaged record (") and where in note["reason"]
    newest = read_manifests(out)[-1]
    assert newest.set_aside == {cell: note["reason"]}
    # the cell ran again and nothing intact was lost: the slice reads as an unbroken run
    assert junit.is_file() and junit.read_text().count("<testcase ") == CELLS
    _same_as_reference(session, reference)


def test_21_4_sabot_rescore_names_the_cell_whose_trace_was_cut_at_a_line_boundary(
    reference: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    shutil.copytree(reference.out, out)
    cell, trace, where = _damage(out, "cut-trace")
    assert main(["rescore", str(out)]) == 2  # a damaged record: corruption, exit 2
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert "DIFFERS from results.json" in text
    named = f"cell {cell}: no verdict now (damaged record: {trace}: field '{where}'"
    assert named in text, text
    assert "it was cut" in text
    assert f"damaged record: cell {cell}: {trace}" in printed.err
    # every other cell still scores as it did
    assert f"rescored {CELLS - 1} cells" in text


def test_21_4_rescore_write_keeps_results_json_when_a_counted_record_is_damaged(
    reference: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing recorded is lost: a verdict results.json holds is never traded for a cell
    whose record cannot be read now; the damage is named and nothing is written."""
    out = tmp_path / "out"
    shutil.copytree(reference.out, out)
    before = {name: (out / name).read_bytes() for name in ("results.json", "RESULTS.md")}
    cell, _trace, _where = _damage(out, "cut-trace")
    assert main(["rescore", str(out), "--write"]) == 2
    err = capsys.readouterr().err
    assert "results.json is not rewritten: 1 cell(s)" in err and cell in err
    assert {name: (out / name).read_bytes() for name in before} == before


def test_I10_inspect_labels_a_keyless_cell_a_fixture_of_the_embedded_model(
    reference: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = next(p for p in sorted((reference.out / "cells").iterdir()) if "-O" in p.name)
    assert main(["inspect", str(cell)]) == 0
    assert "keyless: fixtures of the embedded model" in capsys.readouterr().out
    assert main(["inspect", str(cell), "--json"]) == 0
    label = json.loads(capsys.readouterr().out)["label"]
    assert label.startswith("keyless: fixtures of the embedded model") and "not a measurement" \
        in label


@pytest.mark.parametrize("command", ["inspect", "replay"])
def test_21_4_inspect_and_replay_name_a_trace_cut_at_a_line_boundary(
    reference: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """A cut trace still parses line by line; scored as it is it would read as a run that
    never landed its fault. Both commands name the cut, as rescore does, and score nothing."""
    out = tmp_path / "out"
    shutil.copytree(reference.out, out)
    cell, trace, _where = _damage(out, "cut-trace")
    assert main([command, str(out / "cells" / cell)]) == 2
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert str(trace) in text and "it was cut" in text, text
    assert "verdict:" not in printed.out


# --------------------------------------------------------------------------- issue 21.5

# Sends the controller SIGTERM at one point of its session, named by SIGTERM_AT:
# "<hook>[:n]" at the n-th call of that hook, or "timer:<seconds>" that long after the first
# cell's setup (while its pipeline runs, the framework still importing).
SIGTERM_AT = '''
import os, signal, threading, time
import pytest

AT = os.environ.get("SIGTERM_AT", "")
NAME, _, ARG = AT.partition(":")
SEEN = {}
STATE = {"config": None}


def pytest_configure(config):
    STATE["config"] = config


def _controller():
    return not hasattr(STATE["config"], "workerinput")


def _hit(hook):
    if hook != NAME or not _controller():
        return
    SEEN[hook] = SEEN.get(hook, 0) + 1
    if SEEN[hook] == int(ARG or 1):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)


def pytest_collectstart(collector): _hit("collectstart")
def pytest_itemcollected(item): _hit("itemcollected")
def pytest_collection_modifyitems(session, config, items): _hit("modifyitems")
@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session): _hit("collection_finish")
def pytest_runtest_logreport(report): _hit("logreport")
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session): _hit("sessionfinish")
def pytest_terminal_summary(terminalreporter): _hit("summary")
@pytest.hookimpl(optionalhook=True)
def pytest_testnodeready(node): _hit("nodeready")
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids): _hit("node_collection_finished")


def pytest_runtest_setup(item):
    _hit("setup")
    if NAME == "timer" and _controller() and not SEEN.get("timer"):
        SEEN["timer"] = 1
        pid = os.getpid()
        threading.Timer(float(ARG), lambda: os.kill(pid, signal.SIGTERM)).start()
'''

# (where, worker options, what the session must have left: "nothing" written, an
# "interrupted" record, or a "complete" one)
SIGTERM_POINTS = [
    ("collectstart", "no:xdist", "nothing"),
    ("modifyitems", "no:xdist", "nothing"),
    ("collection_finish", "no:xdist", "nothing"),
    ("timer:0.6", "no:xdist", "interrupted"),
    ("timer:1.0", "no:xdist", "interrupted"),
    ("timer:1.4", "no:xdist", "interrupted"),
    ("sessionfinish", "no:xdist", "complete"),
    ("summary", "no:xdist", "complete"),
    ("nodeready", "2", "nothing"),
    ("node_collection_finished:2", "2", "interrupted"),
    ("logreport:3", "2", "interrupted"),
    ("summary", "2", "complete"),
]


@pytest.mark.parametrize(("at", "workers", "left"), SIGTERM_POINTS,
                         ids=[f"{at}-{'n2' if w == '2' else 'n0'}" for at, w, _ in SIGTERM_POINTS])
def test_21_5_sigterm_at_any_point_never_aborts_nor_prints_a_traceback(
    tmp_path: Path, at: str, workers: str, left: str
) -> None:
    args, env = plugin(tmp_path / "plugins", "sigterm_at", SIGTERM_AT)
    xdist = ["-p", "no:xdist"] if workers == "no:xdist" else ["-n", workers]
    junit = tmp_path / "junit.xml"
    session = run(tmp_path, *args, *ROWS, *xdist, f"--junitxml={junit}",
                  env={**env, "SIGTERM_AT": at})
    text = session.stdout + session.stderr
    assert "FATAL" not in text and session.returncode not in (134, -signal.SIGABRT), text[-3000:]
    assert "Traceback" not in text and "INTERNALERROR" not in text, text[-3000:]
    assert junit.is_file()
    if left == "nothing":  # stopped before its selection was fixed: nothing was opened
        assert session.returncode == pytest.ExitCode.INTERRUPTED, session.describe()
        assert not session.out.exists()
        return
    results = session.results
    assert results.session is not None
    accounted_once(results)
    _no_temp_files(session.out)
    _records_intact(session.out)
    (manifest,) = read_manifests(session.out)
    if left == "complete":  # the results were being written: the session ends as it was
        assert session.returncode == 0, session.describe()
        assert results.session.status == manifest.status == "complete"
        return
    assert session.returncode == pytest.ExitCode.INTERRUPTED, session.describe()
    assert results.session.status == manifest.status == "interrupted"
    assert not results.selection.complete
    assert "INCOMPLETE:" in session.stdout
