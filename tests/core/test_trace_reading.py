"""Issue 27: a trace line (and a JSON record) is parsed and validated in one step, and reads
exactly as the line-by-line reading (``json`` then the event model) read it: the same
events for every line that reading accepts, the same error, naming the file, the line and
field, for every line it refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.trace import Trace, TraceEvent
from pytest_sabot.core.records import OUTCOME_FILE, cell_dir
from pytest_sabot.core.trace_io import TRACE_FILE, TraceWriter, parse_events, read_trace
from pytest_sabot.results.adjudicate import read_record

CELL = "langgraph-default-baseline-T1-s11"
_EVENT: TypeAdapter[Any] = TypeAdapter(TraceEvent)

START = {"seq": 0, "t": 1.0, "component": "harness", "text": "", "kind": "run_start",
         "data": {"cell_id": CELL, "wave": 1, "framework": "langgraph", "config": "default",
                  "operator": None, "task": "T1", "seed": 11, "rules": "v0.1.3",
                  "model": "sim:realistic"}}
END = ('{"seq": 2, "t": 3, "component": "harness", "kind": "run_end", '
       '"data": {"status": "completed"}}')


def _call(arguments: str, extra: str = "") -> str:
    return ('{"seq": 1, "t": 2.5, "component": "worker"' + extra + ', "kind": "tool_call", '
            '"data": {"tool": "lookup", "call_id": "c1", "arguments": ' + arguments + "}}")


# Lines both readers could read differently: what ``json`` accepts that a stricter parser
# might not, and values whose Python form depends on the parser.
LINES = {
    "not-a-number": _call('{"x": NaN, "y": Infinity, "z": -Infinity}'),
    "big integer": _call('{"n": 123456789012345678901234567890}'),
    "exponent out of range": _call('{"f": 1e400, "g": 2.5e-320, "h": -0.0}'),
    "float digits": _call('{"f": 0.1, "g": 1796149781.3039386}'),
    "a key given twice": _call('{"k": 1, "k": 2}', ', "component": "other"'),
    "a lone surrogate": _call('{"s": "\\ud800"}'),
    "nested 400 deep": _call('{"deep": ' + "[" * 400 + "]" * 400 + "}"),
    "blanks around": "  \t" + _call("{}") + " \t",
    "an integer where a float is": _call("{}").replace('"t": 2.5', '"t": 2'),
    "numbers as text": _call("{}").replace('"seq": 1', '"seq": "1"'),
}


def _line_by_line(lines: list[str]) -> Trace:
    """The reading before issue 27: ``json.loads`` then the event model, one line at a time."""
    return Trace(events=[_EVENT.validate_python(json.loads(line)) for line in lines if
                         line.strip()])


@pytest.mark.parametrize("name", sorted(LINES))
def test_27_a_trace_line_read_in_one_step_reads_as_line_by_line(name: str) -> None:
    lines = [json.dumps(START), LINES[name], "", END]
    expected = _line_by_line(lines)
    got = parse_events(lines, "events.jsonl")
    assert repr(got) == repr(expected)  # repr: NaN is never equal to itself
    assert repr(got.model_dump()) == repr(expected.model_dump())


@pytest.mark.parametrize(("line", "where", "expected"), [
    (_call("{}") + ", {}", "line 2", "one JSON object per line"),  # two values on one line
    (_call("{}")[:-3], "line 2", "one JSON object per line"),  # cut mid-line
    (_call("{}").replace('"seq": 1', '"seq": "one"'), "line 2.tool_call.seq",
     "a valid integer"),
    (_call("{}").replace('"tool_call"', '"tool_cal"'), "line 2", "tool_call"),
    (_call("{}").replace('"worker"', '"worker", "mood": "good"'), "line 2.tool_call.mood",
     "known keys"),
])
def test_27_a_bad_trace_line_is_named_as_line_by_line_named_it(
    tmp_path: Path, line: str, where: str, expected: str
) -> None:
    path = tmp_path / TRACE_FILE
    path.write_text("\n".join([json.dumps(START), line, END]) + "\n", encoding="utf-8")
    with pytest.raises(SabotDataError) as caught:
        read_trace(path)
    assert caught.value.field.startswith(where), str(caught.value)
    assert expected in str(caught.value)
    assert str(path) in str(caught.value)


def test_27_an_unknown_event_kind_names_its_line_alone(tmp_path: Path) -> None:
    path = tmp_path / TRACE_FILE
    bad = _call("{}").replace('"tool_call"', '"tool_cal"')
    path.write_text("\n".join([json.dumps(START), bad, END]) + "\n", encoding="utf-8")
    with pytest.raises(SabotDataError) as caught:
        read_trace(path)
    assert caught.value.field == "line 2"  # not "line 2." with an empty field after it
    assert "field 'line 2': expected 'kind' to be one of" in str(caught.value)


def _record(out: Path) -> Path:
    run_dir = cell_dir(out, CELL)
    trace = TraceWriter(run_dir)
    trace.emit("run_start", "harness", **START["data"])  # type: ignore[arg-type]
    trace.emit("run_end", "harness", status="completed")
    trace.finish()
    return run_dir


def test_27_a_json_record_only_json_reads_is_read_as_before(tmp_path: Path) -> None:
    run_dir = _record(tmp_path)
    (run_dir / OUTCOME_FILE).write_text(
        '{"cell_id": "' + CELL + '", "attempts": 1, "passed": true, '
        '"pass_reason": "\\ud800", "effects": {"a": true, "a": false}}', encoding="utf-8")
    record = read_record(tmp_path, CELL)
    assert record.kind == "run" and record.outcome is not None
    assert record.outcome.pass_reason == "\ud800" and record.outcome.effects == {"a": False}


def test_27_a_bad_json_record_is_named_by_file_and_field(tmp_path: Path) -> None:
    run_dir = _record(tmp_path)
    (run_dir / OUTCOME_FILE).write_text(
        '{"cell_id": "' + CELL + '", "attempts": "two", "passed": true}', encoding="utf-8")
    record = read_record(tmp_path, CELL)
    assert record.kind == "damaged"
    assert record.damage is not None
    assert f"{run_dir / OUTCOME_FILE}: field 'attempts': expected" in record.damage
    (run_dir / OUTCOME_FILE).write_text('{"cell_id": "' + CELL + '", ', encoding="utf-8")
    damage = read_record(tmp_path, CELL).damage
    assert damage is not None and str(run_dir / OUTCOME_FILE) in damage


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("a seq that skips", [json.dumps(START), END]),
        ("a first event that is not run_start", [_call("{}").replace('"seq": 1', '"seq": 0'),
                                                  END.replace('"seq": 2', '"seq": 1')]),
        ("no event at all", ["", "  "]),
    ],
)
def test_27_an_ill_formed_trace_is_named_as_the_trace_model_names_it(
    tmp_path: Path, name: str, lines: list[str]
) -> None:
    """Events read line by line are not validated again as a whole trace: only its shape is
    checked, and a trace of the wrong shape is refused with the model's own words."""
    path = tmp_path / TRACE_FILE
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SabotDataError) as got:
        read_trace(path)
    events = [_EVENT.validate_json(line) for line in lines if line.strip()]
    with pytest.raises(ValueError) as model:
        Trace(events=events)
    assert str(path) in str(got.value), name
    said = str(model.value).split("Value error, ")[1].split(" [type=")[0]
    assert said in str(got.value), (name, str(got.value))


def test_27_a_trace_read_line_by_line_is_the_trace_the_model_validates() -> None:
    lines = [json.dumps(START), _call('{"q": [1, 2]}'), END]
    read = parse_events(lines, "events.jsonl")
    assert read == _line_by_line(lines)
    assert read.model_dump(mode="json") == _line_by_line(lines).model_dump(mode="json")
