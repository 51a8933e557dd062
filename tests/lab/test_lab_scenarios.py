"""Scenario files: validated by pydantic models with a published JSON Schema; a bad file
names the file, the field and what was expected; the shipped scenarios and the starter
are valid; every field of every lab file format is documented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from lab_helpers import raw, run

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.lab.controllers import CONTROLLERS
from pytest_sabot.lab.scenario_load import (
    load_scenario,
    parse_scenario,
    resolve_scenario,
    shipped_scenarios,
)
from pytest_sabot.lab.starter import write_starter
from pytest_sabot.schema import schema_documents

ROOT = Path(__file__).resolve().parents[2]


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def _error(tmp_path: Path, data: Any) -> SabotDataError:
    path = _write(tmp_path, data)
    with pytest.raises(SabotDataError) as info:
        load_scenario(path)
    assert str(path) in str(info.value)
    return info.value


def _edited(**changes: Any) -> dict[str, Any]:
    data = raw("lost-create-response")
    for dotted, value in changes.items():
        target = data
        *parts, last = dotted.split("__")
        for part in parts:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value  # type: ignore[index]
    return data


@pytest.mark.parametrize(
    ("changes", "field", "expected"),
    [
        ({"temperature": 0}, "temperature", "Extra inputs are not permitted"),
        ({"limits__deadline_ms": "soon"}, "limits.deadline_ms", "valid integer"),
        ({"faults__0__fault": "meteor"}, "faults.0", "'fault' to be one of 'timeout_b"),
        ({"faults__0__tool": "get_ticket"}, "faults.0.tool", "a tool timeout_after_commit"),
        ({"task__customer_id": "C-999"}, "task.customer_id", "one of ['C-104']"),
        ({"task__assignee_id": "A-99"}, "task.assignee_id", "one of ['A-7', 'A-3']"),
        ({"world__customers__0__email": "ada@real.com"}, "world.customers.0.email",
         "should match pattern"),
        ({"format_version": 2}, "format_version", "expected 1, got 2"),
        ({"task__capabilities": ["get_customer"]}, "faults.0.tool",
         "listed in task.capabilities"),
    ],
)
def test_a_bad_scenario_names_the_file_the_field_and_what_was_expected(
        tmp_path: Path, changes: dict[str, Any], field: str, expected: str) -> None:
    err = _error(tmp_path, _edited(**changes))
    assert err.field == field
    assert expected in str(err)  # "expected <what>, got <value>"


def test_a_duplicate_fault_id_is_refused(tmp_path: Path) -> None:
    data = raw("lost-create-response")
    data["faults"].append(dict(data["faults"][0]))
    err = _error(tmp_path, data)
    assert (err.field, err.expected) == ("faults.1.id", "an id not used by an earlier fault")


def test_yaml_syntax_and_shape_errors_name_the_file(tmp_path: Path) -> None:
    err = _error(tmp_path, "name: [unclosed\n")
    assert err.expected == "valid YAML" and err.field.startswith("line ")
    err = _error(tmp_path, "- just\n- a list\n")
    assert err.expected == "a mapping at the top level"
    with pytest.raises(SabotDataError, match="an existing YAML file"):
        load_scenario(tmp_path / "missing.yaml")


def test_shipped_scenarios_are_one_per_fault_and_all_valid() -> None:
    paths = shipped_scenarios()
    loaded = [load_scenario(p) for p in paths]
    kinds = {f.fault for s in loaded for f in s.faults}
    assert kinds == {"timeout_before_commit", "timeout_after_commit", "duplicate_delivery",
                     "rate_limit", "stale_read"}
    assert len({s.name for s in loaded}) == len(loaded)
    assert all(p.stem == s.name for p, s in zip(paths, loaded, strict=True))
    assert resolve_scenario("lost-create-response").name == "lost-create-response.yaml"
    assert resolve_scenario("helpdesk/stale-ticket-read") == \
        resolve_scenario("stale-ticket-read.yaml")


def test_the_published_schema_accepts_the_shipped_scenarios_and_rejects_bad_ones() -> None:
    validator = _validator("lab-scenario")
    for path in shipped_scenarios():
        assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == [], path
    assert list(validator.iter_errors(_edited(temperature=0)))
    assert list(validator.iter_errors(_edited(faults__0__fault="meteor")))


def test_a_run_record_matches_the_published_run_schema(tmp_path: Path) -> None:
    record = run(parse_scenario(raw("stale-ticket-read"), "x"), CONTROLLERS["builtin:naive"])
    validator = _validator("lab-run")
    assert list(validator.iter_errors(record.model_dump(mode="json"))) == []


def test_starter_validates_runs_and_is_never_overwritten(tmp_path: Path) -> None:
    path = write_starter(tmp_path / "mine")
    starter = load_scenario(path)
    assert list(_validator("lab-scenario").iter_errors(yaml.safe_load(path.read_text()))) == []
    assert run(starter, CONTROLLERS["builtin:resilient"]).gate.outcome == "pass"
    with pytest.raises(SabotDataError, match="never overwrites"):
        write_starter(tmp_path / "mine")


def test_every_field_of_the_lab_file_formats_is_documented() -> None:
    documents = schema_documents()
    for name in ("lab-scenario.schema.json", "lab-run.schema.json"):
        doc = documents[name]
        models = {"<root>": doc, **doc.get("$defs", {})}
        undocumented = [f"{model}.{prop}" for model, body in models.items()
                        for prop, spec in body.get("properties", {}).items()
                        if not spec.get("description")]
        assert undocumented == [], name
        assert "format_version" in doc["properties"]
