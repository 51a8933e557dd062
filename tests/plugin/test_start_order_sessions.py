"""SPEC I163 in real plugin sessions: a session leaves how long every cell ran in pytest's
cache, and the next session of the wave and model collects the cells that ran longest
first, in every xdist worker alike, with the same records as in the collected order."""

from __future__ import annotations

import json
from pathlib import Path

from plugin_runs import BASELINE, SLICE, SLICE_CELLS, run, verdicts

from pytest_sabot.session.start_order import CACHE_KEY

WAVE = ["--sabot-wave=1", *SLICE, "--sabot-history=none"]
TABLE = "wave 1 sim:realistic"  # the wave and the model spec


def _cache_file(cwd: Path) -> Path:
    return cwd / ".pytest_cache" / "v" / CACHE_KEY


def _seconds_in_traces(out: Path, cell_id: str) -> float:
    """From the first event to the last of each of the cell's traces, every attempt's."""
    cell = out / "cells" / cell_id
    total = 0.0
    for trace in [cell / "events.jsonl", *sorted(cell.glob("attempt-*/events.jsonl"))]:
        if trace.is_file():
            events = [json.loads(line) for line in trace.read_text("utf-8").splitlines()
                      if line]
            total += events[-1]["t"] - events[0]["t"]
    return round(total, 3)


def _collected(cwd: Path, *extra: str) -> list[str]:
    got = run(cwd, *WAVE, "--collect-only", "-q", *extra, out=cwd / "collect-out", cache=True)
    assert got.returncode == 0, got.describe()
    return [line.split("[", 1)[1].rstrip("]") for line in got.stdout.splitlines()
            if "::test_cell[" in line]


def test_I163_a_session_leaves_how_long_each_cell_ran_in_pytests_cache(tmp_path: Path) -> None:
    got = run(tmp_path, *WAVE, cache=True)
    assert got.returncode == 0, got.describe()
    stored = json.loads(_cache_file(tmp_path).read_text("utf-8"))
    assert list(stored) == [TABLE]
    expected = {cid: _seconds_in_traces(got.out, cid) for cid in SLICE_CELLS}
    assert all(n > 0 for n in expected.values()), expected
    assert stored[TABLE] == expected
    # ... and the next session's order by them: the longest first.
    order = _collected(tmp_path)
    faults = sorted(
        (c for c in SLICE_CELLS if c != BASELINE),
        key=lambda c: (-expected[c], SLICE_CELLS.index(c)),
    )
    assert order == [BASELINE, *faults]


def test_I163_the_next_session_starts_the_longest_recorded_first_in_every_worker(
    tmp_path: Path,
) -> None:
    plain = run(tmp_path / "plain", *WAVE)  # no cache: the collected order
    assert plain.returncode == 0, plain.describe()
    assert _collected(tmp_path / "plain") == SLICE_CELLS

    ordered = tmp_path / "ordered"
    counts = {cid: 1.5 for cid in SLICE_CELLS}
    counts["langgraph-default-O6-T1-s11"] = 64.0
    counts["langgraph-default-O3-T1-s11"] = 40.25
    _cache_file(ordered).parent.mkdir(parents=True)
    _cache_file(ordered).write_text(json.dumps({TABLE: counts, "wave 1 openai:other": {
        "langgraph-default-O1-T1-s11": 999.0}}), "utf-8")
    assert _collected(ordered) == [
        BASELINE, "langgraph-default-O6-T1-s11", "langgraph-default-O3-T1-s11",
        "langgraph-default-O1-T1-s11", "langgraph-default-O2-T1-s11",
        "langgraph-default-O4-T1-s11", "langgraph-default-O5-T1-s11",
    ], "another model's times are not this model's"

    # Two workers collect in the controller's order (xdist refuses a session whose
    # workers collected different orders) and record what the collected order recorded.
    got = run(ordered, *WAVE, "-n", "2", cache=True)
    assert got.returncode == 0, got.describe()
    assert verdicts(got.results) == verdicts(plain.results)
    # The session replaced the made-up times with the ones it recorded.
    stored = json.loads(_cache_file(ordered).read_text("utf-8"))
    assert stored[TABLE] == {cid: _seconds_in_traces(got.out, cid) for cid in SLICE_CELLS}
    assert stored["wave 1 openai:other"] == {"langgraph-default-O1-T1-s11": 999.0}
    # --cache-clear forgets them: the wave's order again.
    assert _collected(ordered, "--cache-clear") == SLICE_CELLS
