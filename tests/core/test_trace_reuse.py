"""A trace read again with the same text is not parsed again; any change to the text is
(pytest_sabot.core.trace_io.read_trace)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.records import cell_dir
from pytest_sabot.core.trace_io import TRACE_FILE, TraceWriter, read_trace
from pytest_sabot.harness.settings import RunSettings, run_start_data
from pytest_sabot.harness.task_world import task_views
from pytest_sabot.matrix.standard import Standard, load_standard


@pytest.fixture(scope="module")
def wave1() -> Standard:
    return load_standard(1)


def _written(std: Standard, out: Path) -> Path:
    cell = std.cell("langgraph-default-baseline-T1-s11")
    settings = RunSettings(root=std.root, out_dir=out, gateway_url="", session="s-1")
    run_dir = cell_dir(out, cell.id)
    writer = TraceWriter(run_dir)
    view = task_views(std.root, std.wave, "T1")[0]
    writer.emit("run_start", "harness", **run_start_data(cell, std.wave, settings, view, 1))
    writer.emit("message", "worker", "first words", sender="worker", receiver="reviewer",
                channel="worker->reviewer")
    writer.emit("run_end", "harness", status="completed", detail="")
    writer.finish()
    return run_dir


def test_trace_read_again_with_the_same_text_is_the_same_parse(wave1: Standard,
                                                               tmp_path: Path) -> None:
    run_dir = _written(wave1, tmp_path)
    first = read_trace(run_dir)
    assert read_trace(run_dir) is first
    assert read_trace(run_dir / TRACE_FILE) is first


def test_trace_kept_parse_never_outlives_its_text(wave1: Standard, tmp_path: Path) -> None:
    """An edit in place of the same length (same file, same size, maybe the same clock
    tick) is read as the new text: the text, not the file's times, decides."""
    run_dir = _written(wave1, tmp_path)
    path = run_dir / TRACE_FILE
    assert read_trace(run_dir).events[1].text == "first words"
    text = path.read_text(encoding="utf-8")
    with path.open("r+", encoding="utf-8") as fh:
        fh.write(text.replace("first words", "other words"))
    edited = read_trace(run_dir)
    assert edited.events[1].text == "other words"
    path.write_text(text.replace('"kind": "message"', '"kind": "massage"'), encoding="utf-8")
    with pytest.raises(SabotDataError, match="line 2"):
        read_trace(run_dir)
    path.write_text(text, encoding="utf-8")
    assert read_trace(run_dir).events[1].text == "first words"


def test_trace_kept_parses_are_bounded(wave1: Standard, tmp_path: Path) -> None:
    from pytest_sabot.core import trace_io

    dirs = [_written(wave1, tmp_path / str(i)) for i in range(trace_io._ParsedTraces.KEEP + 3)]
    first = read_trace(dirs[0])
    for run_dir in dirs[1:]:
        read_trace(run_dir)
    assert len(trace_io._PARSED._kept) == trace_io._ParsedTraces.KEEP
    assert read_trace(dirs[0]) is not first  # the oldest was let go: parsed again
    assert read_trace(dirs[0]).events == first.events
