"""Issue 21.4: a record that does not read is named, never raised (SPEC I108). Each damage is
made to a record written the way the harness writes one (TraceWriter, outcome.json), then
read with ``read_record`` and scored with ``score_dir``: the record is ``damaged`` with the
file, the line or field, and what is wrong; scoring leaves the cell out with that reason and
keeps every intact cell."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_sabot.core.records import OUTCOME_FILE, RunOutcome, cell_dir
from pytest_sabot.core.trace_io import TRACE_FILE, TraceWriter, write_json_atomic
from pytest_sabot.results.adjudicate import NOT_RUN_FILE, read_record

CELL = "langgraph-default-baseline-T1-s11"


def _record(out: Path, cell_id: str = CELL) -> Path:
    run_dir = cell_dir(out, cell_id)
    trace = TraceWriter(run_dir)
    trace.emit("run_start", "harness", cell_id=cell_id, wave=1, framework="langgraph",
               config="default", operator=None, task="T1", seed=11, rules="v0.1.3",
               model="sim:realistic")
    trace.emit("agent_output", "worker", "a draft", stage="worker")
    trace.emit("run_end", "harness", status="completed")
    trace.finish()
    outcome = RunOutcome(cell_id=cell_id, attempts=1, passed=True, session="s1",
                         model="sim:realistic", registration_hash="h" * 64, rules="v0.1.3")
    write_json_atomic(run_dir / OUTCOME_FILE, outcome.model_dump(mode="json"))
    return run_dir


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _cut(run_dir: Path) -> None:  # cut at a line boundary: every line left reads
    trace = run_dir / TRACE_FILE
    trace.write_text("\n".join(_lines(trace)[:2]) + "\n")


def _torn(run_dir: Path) -> None:
    trace = run_dir / TRACE_FILE
    lines = _lines(trace)
    lines[1] = lines[1][:25]
    trace.write_text("\n".join(lines) + "\n")


def _outcome_not_json(run_dir: Path) -> None:
    (run_dir / OUTCOME_FILE).write_text('{"cell_id": "langgraph-def')


def _outcome_field(run_dir: Path) -> None:
    path = run_dir / OUTCOME_FILE
    data = json.loads(path.read_text())
    data["attempts"] = "two"
    path.write_text(json.dumps(data))


def _another_cell(run_dir: Path) -> None:
    path = run_dir / OUTCOME_FILE
    data = json.loads(path.read_text())
    data["cell_id"] = "langgraph-default-O1-T1-s11"
    path.write_text(json.dumps(data))


def _soft(run_dir: Path) -> None:
    (run_dir / "soft.json").write_text("[]")


def _not_run(run_dir: Path) -> None:
    (run_dir / NOT_RUN_FILE).write_text('{"cell_id": 7}')


DAMAGES: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("cut", _cut, f"{TRACE_FILE}: field 'line 2'", "it was cut"),
    ("torn", _torn, f"{TRACE_FILE}: field 'line 2'", "one JSON object per line"),
    ("outcome-not-json", _outcome_not_json, f"{OUTCOME_FILE}: field 'line 1'", "valid JSON"),
    ("outcome-field", _outcome_field, f"{OUTCOME_FILE}: field 'attempts'", "'two'"),
    ("another-cell", _another_cell, f"{OUTCOME_FILE}: field 'cell_id'", "the cell whose"),
    ("soft", _soft, "soft.json", "a mapping at the top level"),
    ("not-run", _not_run, f"{NOT_RUN_FILE}: field 'cell_id'", "string"),
]


@pytest.mark.parametrize(("damage", "expected_where", "expected_what"),
                         [(d, w, e) for _, d, w, e in DAMAGES],
                         ids=[name for name, *_ in DAMAGES])
def test_I108_a_damaged_record_is_named_with_its_file_and_line(
    tmp_path: Path, damage: Callable[[Path], None], expected_where: str, expected_what: str
) -> None:
    run_dir = _record(tmp_path)
    assert read_record(tmp_path, CELL).kind == "run"
    damage(run_dir)
    record = read_record(tmp_path, CELL)
    assert record.kind == "damaged" and not record.finished
    assert record.damage is not None
    assert str(run_dir) in record.damage
    assert expected_where in record.damage and expected_what in record.damage, record.damage


def test_I108_a_finished_trace_without_its_outcome_is_an_unfinished_run_named_as_such(
    tmp_path: Path,
) -> None:
    """A run's outcome.json is written after its trace's run_end: a folder with the trace and
    no outcome is a run that did not finish (or lost a file). It is not counted, and what
    is missing is said wherever the cell is listed as not run."""
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.results.adjudicate import score_dir

    run_dir = _record(tmp_path)
    (run_dir / OUTCOME_FILE).unlink()
    record = read_record(tmp_path, CELL)
    assert record.kind == "partial" and not record.finished
    assert record.unfinished is not None
    assert f"no {OUTCOME_FILE}" in record.unfinished and TRACE_FILE in record.unfinished
    std = load_standard(1)
    scored = score_dir(std, tmp_path, [std.cell(CELL)])
    assert scored.missing == [CELL]
    assert scored.unfinished == {CELL: record.unfinished}


def test_I108_a_damaged_session_manifest_is_named_with_its_line_and_stops_its_own_reading(
    tmp_path: Path,
) -> None:
    """A session's manifest holds its root, adapters and outside row: reading that session's
    records again without it would score them against another matrix, so it stops with the
    file and line; another session's damaged manifest is named and does not stop it."""
    from pytest_sabot.core.errors import SabotDataError
    from pytest_sabot.core.manifest import read_manifest
    from pytest_sabot.core.records import SESSIONS_DIR
    from pytest_sabot.results.recorded import session_manifests, session_standard

    folder = tmp_path / SESSIONS_DIR
    folder.mkdir()
    broken = folder / "s-broken.json"
    broken.write_text('{"run_id": "s-broken",\n "wave" 1}')
    with pytest.raises(SabotDataError) as caught:
        read_manifest(broken)
    assert str(broken) in str(caught.value) and "line 2" in str(caught.value)
    found, damaged = session_manifests(tmp_path)
    assert found == [] and list(damaged) == [broken]
    with pytest.raises(SabotDataError, match="line 2"), \
            session_standard(tmp_path, 1, session="s-broken"):
        pass
    with session_standard(tmp_path, 1, session="s-other") as std:
        assert std.wave.wave == 1
