"""Issue 21.6: a record nested a hundred thousand levels deep is refused with a message
naming the file and the line, by every reader of records, never raised as a
RecursionError (a traceback)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

from pytest_sabot.commands.cli import main
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.loading import read_yaml
from pytest_sabot.core.paths import standard_root
from pytest_sabot.core.trace_io import read_trace
from pytest_sabot.gateway import GatewaySettings, start_gateway
from pytest_sabot.lab.record import read_run
from pytest_sabot.matrix.standard import load_standard

DEPTH = 100_000
DEEP = "[" * DEPTH + "]" * DEPTH


def _run_start() -> str:
    return json.dumps({
        "seq": 0, "t": 0.0, "kind": "run_start", "component": "harness", "text": "",
        "data": {"cell_id": "langgraph-default-baseline-T1-s11", "wave": 1,
                 "framework": "langgraph", "config": "default", "operator": None,
                 "task": "T1", "seed": 11, "rules": "v0.1.3", "model": "sim:realistic"},
    })


def test_21_6_a_trace_line_nested_100000_deep_is_named_not_raised(tmp_path: Path) -> None:
    trace = tmp_path / "events.jsonl"
    trace.write_text(_run_start() + "\n" + DEEP + "\n")
    with pytest.raises(SabotDataError) as info:
        read_trace(trace)
    assert info.value.file == str(trace)
    assert info.value.field == "line 2"
    assert "nested no deeper" in str(info.value)


def test_21_6_sabot_rescore_of_a_results_file_nested_100000_deep_says_which_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "results.json").write_text('{"schema_version": ' + DEEP + "}")
    assert main(["rescore", str(tmp_path)]) == 2
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "RecursionError" not in err
    assert f"{tmp_path / 'results.json'}" in err and "nested no deeper" in err


def test_21_6_a_yaml_file_and_a_seed_registry_nested_100000_deep_are_refused(
    tmp_path: Path,
) -> None:
    deep_yaml = tmp_path / "deep.yaml"
    deep_yaml.write_text("key: " + DEEP + "\n")
    with pytest.raises(SabotDataError, match="nest") as yaml_info:
        read_yaml(deep_yaml)
    assert yaml_info.value.file == str(deep_yaml)
    root = tmp_path / "root"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(standard_root() / folder, root / folder)
    (root / "cells" / "seeds" / "wave1.json").write_text('{"wave": ' + DEEP + "}")
    with pytest.raises(SabotDataError) as info:
        load_standard(1, root)
    assert info.value.file.endswith("wave1.json") and "nested no deeper" in str(info.value)


def test_21_6_a_lab_run_record_nested_100000_deep_is_refused(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text('{"format": ' + DEEP + "}")
    with pytest.raises(SabotDataError, match="nested no deeper"):
        read_run(tmp_path)


def test_21_6_a_request_body_nested_100000_deep_is_a_bad_request_of_the_client() -> None:
    gateway = start_gateway(GatewaySettings())
    try:
        body = '{"model": "sim:realistic", "messages": ' + DEEP + "}"
        answer = httpx.post(
            f"{gateway.url}/run/r1/agent/worker/v1/chat/completions",
            content=body,
            headers={"content-type": "application/json"},
        )
    finally:
        gateway.close()
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "invalid_json"
    assert "maximum recursion depth" in answer.json()["error"]["message"]
