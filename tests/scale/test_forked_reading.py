"""Issue 27: ``sabot rescore`` reads and scores a wave's records spread over forked
processes, and what it finds is what one process finds: the same verdicts, the same lists
of damaged, missing and unpaired cells, the same model-call tally, in the same order. A
process with another thread alive never forks; an item that raises in a child raises the
very exception a plain map raises; the command, run as the program, prints all it has to
say before it ends the process early."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pytest_sabot.core.trace_io import TRACE_FILE
from pytest_sabot.results.forked import forked_map, usable_processes

REPO = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: a pytest process (an xdist worker above all) has threads, and
# the map never forks beside a thread.
_SAME_SCORES = """
import json, os, sys
from pathlib import Path
from pytest_sabot.results import forked
from pytest_sabot.results.build import read_results
from pytest_sabot.results.rebuild import rebuild
from pytest_sabot.results.recorded import session_standard
from pytest_sabot.results.adjudicate import score_dir

out = Path(sys.argv[1])
forked.MIN_ITEMS_PER_PROCESS = 1  # fork even for the few cells of a test output
forked.CHUNK = 1
assert forked.usable_processes(2) == 2
pids = set()
real = forked._run_chunk
def spy(bounds):
    return [(os.getpid(), r) for r in real(bounds)]
original = read_results(out / "results.json")
with session_standard(out, original.wave, session=original.session.run_id) as std:
    serial = rebuild(original, std, out, processes=1)
    spread = rebuild(original, std, out, processes=2)
    one = score_dir(std, out, std.cells, processes=1)
    two = score_dir(std, out, std.cells, processes=2)
    forked._run_chunk = spy
    forked.forked_map(lambda c: c.id, std.cells[:4], 2)
print(json.dumps({
    "results_same": serial.model_dump(mode="json") == spread.model_dump(mode="json"),
    "lists": [[one.missing, one.damaged, one.unpaired, one.stopped, one.sessions],
              [two.missing, two.damaged, two.unpaired, two.stopped, two.sessions]],
    "verdicts": [[v.model_dump(mode="json") for v in one.verdicts],
                 [v.model_dump(mode="json") for v in two.verdicts]],
    "cells": len(serial.cells),
    "damaged": sorted(one.damaged), "unpaired": sorted(one.unpaired),
}))
"""


def _fresh_python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True,
                          text=True, check=False, timeout=300)


def _scores(out: Path) -> dict[str, object]:
    import json

    done = _fresh_python(_SAME_SCORES, str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_27_records_read_in_forked_processes_score_as_in_one_process(tiny: Path) -> None:
    found = _scores(tiny)
    assert found["results_same"] is True
    lists = found["lists"]
    verdicts = found["verdicts"]
    assert isinstance(lists, list) and isinstance(verdicts, list)
    assert lists[0] == lists[1]
    assert verdicts[0] == verdicts[1]
    assert found["cells"] == 3


def test_27_damaged_and_unpaired_records_read_in_forked_processes_as_in_one(
    tiny: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(tiny, out)
    cells = sorted(p for p in (out / "cells").iterdir())
    fault = next(p for p in cells if "-O3-" in p.name)
    baseline = next(p for p in cells if "-baseline-" in p.name)
    # a fault trace cut before its run_end, and a baseline trace torn mid-line
    lines = (fault / TRACE_FILE).read_text(encoding="utf-8").splitlines()
    (fault / TRACE_FILE).write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    found = _scores(out)
    assert found["damaged"] == [fault.name]
    lists, verdicts = found["lists"], found["verdicts"]
    assert isinstance(lists, list) and isinstance(verdicts, list)
    assert lists[0] == lists[1] and verdicts[0] == verdicts[1]
    text = (baseline / TRACE_FILE).read_text(encoding="utf-8")
    (baseline / TRACE_FILE).write_text(text[: len(text) // 2], encoding="utf-8")
    found = _scores(out)
    assert fault.name in found["damaged"] and baseline.name in found["damaged"]  # type: ignore[operator]
    assert found["unpaired"] != []  # the O1 cell stands without a readable baseline
    lists, verdicts = found["lists"], found["verdicts"]
    assert isinstance(lists, list) and isinstance(verdicts, list)
    assert lists[0] == lists[1] and verdicts[0] == verdicts[1]


_RAISES = """
import sys
from pytest_sabot.results import forked
forked.MIN_ITEMS_PER_PROCESS = 1
def fn(x):
    if x == 7:
        raise KeyError(f"item {x}")
    return x * 2
try:
    forked.forked_map(fn, list(range(40)), 2)
except KeyError as exc:
    print("KeyError", exc)
print(forked.forked_map(lambda x: x * 2, list(range(40)), 2) == [x * 2 for x in range(40)])
"""


def test_27_an_item_that_raises_in_a_child_raises_as_in_a_plain_map() -> None:
    done = _fresh_python(_RAISES)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["KeyError 'item 7'", "True"]


def test_27_a_process_with_another_thread_alive_maps_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_sabot.results import forked

    monkeypatch.setattr(forked, "MIN_ITEMS_PER_PROCESS", 1)
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait, daemon=True)
    helper.start()
    try:
        assert usable_processes(4) == 1
        assert set(forked_map(lambda _x: os.getpid(), list(range(8)), 4)) == {os.getpid()}
    finally:
        stop.set()
        helper.join()


def test_27_too_few_items_are_mapped_in_place() -> None:
    assert forked_map(lambda _x: os.getpid(), list(range(10)), 2) == [os.getpid()] * 10


def test_27_rescore_as_the_program_prints_everything_before_it_ends(tiny: Path) -> None:
    """Run as the program, the command ends the process as soon as it is done; called as a
    function it returns. Both print the same, to the last line, and say the same code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["COLUMNS"] = "120"
    called = ("import sys\nfrom pytest_sabot.commands.cli import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    runs = {
        how: subprocess.run([sys.executable, *how, "rescore", str(tiny)], env=env,
                            capture_output=True, text=True, check=False, timeout=300)
        for how in (("-m", "pytest_sabot"), ("-c", called))
    }
    program, function = runs.values()
    assert program.returncode == function.returncode == 0, program.stderr[-3000:]
    assert program.stdout == function.stdout
    assert program.stdout.rstrip().endswith("answered by the embedded model")
