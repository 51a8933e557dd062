"""JSON Schema export of every file format pytest-sabot reads or writes (schemas/*.json).

The schemas are generated from the pydantic models, never written by hand, so a file written
by another tool can be checked before it is handed to the scorer. ``python -m
pytest_sabot.schema`` rewrites ``schemas/``; ``--check`` only reports what is out of date.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from pytest_sabot.commands.closed_stdout import guard_if_program
from pytest_sabot.commands.merge import MergeRecord
from pytest_sabot.core.exit_codes import EXIT_GATE, EXIT_PASS
from pytest_sabot.core.manifest import SessionRecord
from pytest_sabot.core.models.anchors import AnchorRegistry
from pytest_sabot.core.models.cells import SeedRegistry, WaveSpec
from pytest_sabot.core.models.defects import PublishedDefects
from pytest_sabot.core.models.mapping import MappingFile
from pytest_sabot.core.models.rules import RuleBook
from pytest_sabot.core.models.task import ContractFile, CriterionFile, OperatorsFile, TaskFile
from pytest_sabot.core.models.trace import TraceEvent
from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.core.records import CrashNote, RunOutcome, SetAside
from pytest_sabot.gateway.ledger import SpendLedger
from pytest_sabot.gateway.prices import PriceTable
from pytest_sabot.gateway.protocol import RecordedExchange
from pytest_sabot.judge.models import SoftRecord
from pytest_sabot.lab.campaign import CampaignFile, CampaignSummary
from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.scenario import Scenario
from pytest_sabot.lab.task import (
    LabCriterionFile,
    LabOperatorsFile,
    LabTaskFile,
    LabWorldFile,
)
from pytest_sabot.results import ResultsFile
from pytest_sabot.results.adjudicate import NotRun

__all__ = [
    "DEFAULT_OUT",
    "FORMATS",
    "FileFormat",
    "main",
    "render",
    "schema_documents",
    "stale_schemas",
    "write_schemas",
]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "schemas"


Patch = Callable[[dict[str, Any]], None]


def _anchors_may_be_plain_strings(schema: dict[str, Any]) -> None:
    """AnchorSet accepts a bare string for ``{text: ...}`` (coerced before validation)."""
    prop = schema["$defs"]["AnchorSet"]["properties"]["anchors"]
    prop["items"] = {"anyOf": [{"type": "string", "minLength": 1}, prop["items"]]}


def _revision_framework_is_inherited(schema: dict[str, Any]) -> None:
    """A mapping revision inherits ``framework`` from the file (filled in before validation)."""
    revision = schema["$defs"]["MappingRevision"]
    revision["required"] = [r for r in revision.get("required", []) if r != "framework"]


@dataclass(frozen=True)
class FileFormat:
    """One file format: its schema file name, where such files live and its model.

    ``patches`` describe what the model accepts before validation (coercions done by
    ``mode="before"`` validators), which pydantic's generated schema cannot see.
    """

    name: str
    files: str
    model: Any
    patches: tuple[Patch, ...] = field(default=())


FORMATS: tuple[FileFormat, ...] = (
    FileFormat("wave", "cells/waveN.yaml", WaveSpec),
    FileFormat("seeds", "cells/seeds/waveN.json", SeedRegistry),
    FileFormat("anchors", "cells/anchors-waveN.yaml", AnchorRegistry,
               (_anchors_may_be_plain_strings,)),
    FileFormat("published-defects", "cells/published-defects.yaml", PublishedDefects),
    FileFormat("mapping", "mappings/<framework>.yaml", MappingFile,
               (_revision_framework_is_inherited,)),
    FileFormat("rules", "mappings/rules.yaml", RuleBook),
    FileFormat("task", "tasks/Tn/public/task.yaml", TaskFile),
    FileFormat("contract", "tasks/Tn/public/<contract file>", ContractFile),
    FileFormat("criterion", "tasks/Tn/private/criterion.yaml", CriterionFile),
    FileFormat("operators", "tasks/Tn/private/operators.yaml", OperatorsFile),
    FileFormat("trace-event", "<run dir>/events.jsonl (one event per line)", TraceEvent),
    FileFormat("cell-verdict", "scorer output for one fault run", CellVerdict),
    FileFormat("baseline-verdict", "scorer output for one baseline run", BaselineVerdict),
    FileFormat("outcome", "<run dir>/outcome.json", RunOutcome),
    FileFormat("not-run", "<run dir>/not_run.json", NotRun),
    FileFormat("soft", "<run dir>/soft.json (the judge's verdict)", SoftRecord),
    FileFormat("results", "<out dir>/results.json", ResultsFile),
    FileFormat("lab-scenario", "lab scenario files (pytest_sabot/lab/scenarios/)", Scenario),
    FileFormat("lab-run", "<lab out dir>/run.json", LabRun),
    FileFormat("lab-campaign", "lab campaign files (campaigns/*.yaml)", CampaignFile),
    FileFormat("lab-campaign-summary", "<campaign out dir>/summary.json", CampaignSummary),
    FileFormat("lab-task", "tasks/T6/public/task.yaml (a lab task)", LabTaskFile),
    FileFormat("lab-criterion", "tasks/T6/private/criterion.yaml", LabCriterionFile),
    FileFormat("lab-world", "tasks/T6/private/world.yaml", LabWorldFile),
    FileFormat("lab-operators", "tasks/T6/private/operators.yaml", LabOperatorsFile),
    FileFormat("spend-ledger", "<output root>/spend-ledger.json", SpendLedger),
    FileFormat("price-table", "the --sabot-prices YAML file", PriceTable),
    FileFormat("recording", "<out dir>/recordings/<cell>/exchanges.jsonl (one per line)",
               RecordedExchange),
    FileFormat("session", "<out dir>/sessions/<run id>.json", SessionRecord),
    FileFormat("set-aside", "<out dir>/superseded/<cell id>~<n>/set-aside.json", SetAside),
    FileFormat("crashed", "<run dir>/crashed.json (a crashed worker's attempt)", CrashNote),
    FileFormat("merge", "<merged out dir>/merge.json (sabot merge)", MergeRecord),
)


def _document(fmt: FileFormat) -> dict[str, Any]:
    schema: dict[str, Any] = TypeAdapter(fmt.model).json_schema(mode="validation")
    schema = {
        "$schema": DRAFT,
        "$id": f"https://pytest-sabot.invalid/schemas/{fmt.name}.schema.json",
        **schema,
    }
    for patch in fmt.patches:
        patch(schema)
    schema.setdefault("title", fmt.name)
    schema["$comment"] = f"Generated from the pydantic models; describes {fmt.files}."
    return schema


def schema_documents() -> dict[str, dict[str, Any]]:
    """File name -> JSON Schema document, for every format in ``FORMATS``."""
    return {f"{fmt.name}.schema.json": _document(fmt) for fmt in FORMATS}


def render(document: dict[str, Any]) -> str:
    """The exact text committed for one schema (stable key order, trailing newline)."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def stale_schemas(out_dir: Path = DEFAULT_OUT) -> list[str]:
    """Schema files that are missing, differ from the models, or belong to no model."""
    expected = {name: render(doc) for name, doc in schema_documents().items()}
    stale: list[str] = []
    for name, text in sorted(expected.items()):
        path = out_dir / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    if out_dir.is_dir():
        stale.extend(
            sorted(p.name for p in out_dir.glob("*.schema.json") if p.name not in expected)
        )
    return stale


def write_schemas(out_dir: Path = DEFAULT_OUT) -> list[Path]:
    """Write every schema under ``out_dir`` (and remove schemas no model backs)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    documents = schema_documents()
    written: list[Path] = []
    for name, document in sorted(documents.items()):
        path = out_dir / name
        text = render(document)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    for orphan in out_dir.glob("*.schema.json"):
        if orphan.name not in documents:
            orphan.unlink()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    guard_if_program(argv)
    parser = argparse.ArgumentParser(
        prog="python -m pytest_sabot.schema",
        description="Write (or check) the JSON Schemas of every pytest-sabot file format.",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="target directory")
    parser.add_argument("--check", action="store_true",
                        help="only report out-of-date schemas; exit 1 if any")
    args = parser.parse_args(argv)
    out_dir: Path = args.out
    if args.check:
        stale = stale_schemas(out_dir)
        for name in stale:
            print(f"out of date: {out_dir / name}")
        return EXIT_GATE if stale else EXIT_PASS
    for path in write_schemas(out_dir):
        print(path)
    return EXIT_PASS


def cmd_schema(args: argparse.Namespace) -> int:
    written = write_schemas(args.out)
    for path in written:
        print(path)
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
