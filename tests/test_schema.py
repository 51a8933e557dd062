"""schemas/ is generated from the models and describes the committed data files."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from pytest_sabot.schema import FORMATS, render, schema_documents, stale_schemas, write_schemas

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas"

# Which committed files each schema must accept.
DATA_FILES = {
    "wave": "cells/wave*.yaml",
    "seeds": "cells/seeds/wave*.json",
    "anchors": "cells/anchors-wave*.yaml",
    "mapping": "mappings/[!r]*.yaml",
    "rules": "mappings/rules.yaml",
    "task": "tasks/T[1-5]/public/task.yaml",
    "contract": "tasks/T*/public/contract*.yaml",
    "criterion": "tasks/T[1-5]/private/criterion.yaml",
    "operators": "tasks/T[1-5]/private/operators.yaml",
    "lab-task": "tasks/T6/public/task.yaml",
    "lab-criterion": "tasks/T6/private/criterion.yaml",
    "lab-world": "tasks/T6/private/world.yaml",
    "lab-operators": "tasks/T6/private/operators.yaml",
    "lab-campaign": "campaigns/*.yaml",
}


def _load(path: Path) -> object:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_committed_schemas_are_up_to_date_with_the_models() -> None:
    stale = stale_schemas(SCHEMAS)
    assert stale == [], "run: python -m pytest_sabot.schema"


def test_every_file_format_has_a_schema() -> None:
    names = {fmt.name for fmt in FORMATS}
    assert set(DATA_FILES) <= names
    assert {"trace-event", "cell-verdict", "baseline-verdict"} <= names
    assert set(schema_documents()) == {f"{n}.schema.json" for n in names}


@pytest.mark.slow
def test_stale_schemas_reports_a_changed_missing_and_orphan_file(tmp_path: Path) -> None:
    write_schemas(tmp_path)
    assert stale_schemas(tmp_path) == []
    (tmp_path / "wave.schema.json").write_text("{}\n")
    (tmp_path / "seeds.schema.json").unlink()
    (tmp_path / "old.schema.json").write_text("{}\n")
    assert stale_schemas(tmp_path) == ["seeds.schema.json", "wave.schema.json",
                                       "old.schema.json"]
    write_schemas(tmp_path)
    assert stale_schemas(tmp_path) == []


@pytest.mark.slow
def test_render_is_stable() -> None:
    first = {name: render(doc) for name, doc in schema_documents().items()}
    second = {name: render(doc) for name, doc in schema_documents().items()}
    assert first == second


@pytest.mark.parametrize("name", sorted(DATA_FILES))
def test_schema_accepts_the_committed_data_files(name: str) -> None:
    validator = _validator(name)
    paths = sorted(ROOT.glob(DATA_FILES[name]))
    if not paths:
        pytest.skip(f"no {DATA_FILES[name]} in this checkout")
    for path in paths:
        errors = [e.message for e in validator.iter_errors(_load(path))]
        assert errors == [], path


def test_schema_rejects_what_the_loader_rejects() -> None:
    wave = _validator("wave")
    good = _load(ROOT / "cells" / "wave2.yaml")
    assert isinstance(good, dict)
    assert list(wave.iter_errors({**good, "temperature": 0}))
    assert list(wave.iter_errors({**good, "rules": "v9"}))
    anchors = _validator("anchors")
    assert list(anchors.iter_errors(
        {"registry": "x", "registered": "2026-07-25",
         "cells": [{"task": "T1", "operator": "O1", "anchors": []}]}
    ))


@pytest.mark.slow
def test_trace_event_schema_accepts_an_emitted_event() -> None:
    validator = _validator("trace-event")
    event = {"seq": 3, "t": 0.0, "kind": "review", "component": "reviewer",
             "text": "FLAGS: none\nVERDICT: APPROVE", "data": {"round": 0}}
    assert list(validator.iter_errors(event)) == []
    assert list(validator.iter_errors({**event, "kind": "gossip"}))
