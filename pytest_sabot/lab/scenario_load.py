"""Reading scenario files: YAML -> ``Scenario``, with errors that name file, field, expected.

Structure is checked by the pydantic models; this module adds what a schema cannot say
(references to customers and assignees, unique ids, a fault aimed at a tool it can act on
and the agent may call). Shipped scenarios live in ``pytest_sabot/lab/scenarios/`` and
may be named without a path.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.loading import read_yaml, validate
from pytest_sabot.lab.faults import FAULTS
from pytest_sabot.lab.scenario import Scenario

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"

Problem = tuple[str, str, object]  # (field, expected, got)


def shipped_scenarios() -> list[Path]:
    """Every scenario file shipped with the package, sorted."""
    return sorted(SCENARIO_DIR.rglob("*.yaml"))


def resolve_scenario(name: str | Path) -> Path:
    """A path as given if it exists, else the shipped scenario of that name or stem."""
    path = Path(name)
    if path.is_file():
        return path
    text = str(name).removesuffix(".yaml")
    for candidate in shipped_scenarios():
        rel = candidate.relative_to(SCENARIO_DIR).with_suffix("").as_posix()
        if text in (rel, candidate.stem):
            return candidate
    raise SabotDataError(name, "", "an existing scenario file or the name of a shipped "
                         f"scenario ({', '.join(p.stem for p in shipped_scenarios())})")


def parse_scenario(raw: object, source: str | Path) -> Scenario:
    """Validate already-parsed YAML/JSON as a scenario; errors name ``source``."""
    scenario = validate(source, Scenario, raw)
    problems = list(reference_problems(scenario))
    if problems:
        field, expected, got = problems[0]
        raise SabotDataError(source, field, expected, got)
    return scenario


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate one scenario file."""
    return parse_scenario(read_yaml(path), path)


def scenario_digest(scenario: Scenario) -> str:
    """sha256 of the scenario's canonical JSON (what a run record pins)."""
    text = json.dumps(scenario.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _duplicates(values: list[str]) -> Iterator[int]:
    seen: set[str] = set()
    for i, value in enumerate(values):
        if value in seen:
            yield i
        seen.add(value)


def reference_problems(s: Scenario) -> Iterator[Problem]:
    """Cross-reference problems, each as (dotted field, expected, got)."""
    customers = [c.customer_id for c in s.world.customers]
    assignees = [a.assignee_id for a in s.world.assignees]
    for i in _duplicates(customers):
        yield f"world.customers.{i}.customer_id", "an id not listed before", customers[i]
    for i in _duplicates(assignees):
        yield f"world.assignees.{i}.assignee_id", "an id not listed before", assignees[i]
    known_c, known_a = f"one of {customers}", f"one of {assignees}"
    for i, ticket in enumerate(s.world.existing_tickets):
        where = f"world.existing_tickets.{i}"
        if ticket.customer_id not in customers:
            yield f"{where}.customer_id", known_c, ticket.customer_id
        if ticket.assignee_id is not None and ticket.assignee_id not in assignees:
            yield f"{where}.assignee_id", known_a, ticket.assignee_id
        for j, rev in enumerate(ticket.revisions):
            if rev.assignee_id is not None and rev.assignee_id not in assignees:
                yield f"{where}.revisions.{j}.assignee_id", known_a, rev.assignee_id
            if rev == type(rev)():
                yield f"{where}.revisions.{j}", "at least one changed field", {}
    if s.task.customer_id not in customers:
        yield "task.customer_id", known_c, s.task.customer_id
    if s.task.assignee_id not in assignees:
        yield "task.assignee_id", known_a, s.task.assignee_id
    for i in _duplicates([f.id for f in s.faults]):
        yield f"faults.{i}.id", "an id not used by an earlier fault", s.faults[i].id
    for i, entry in enumerate(s.faults):
        targets = sorted(FAULTS[entry.fault].targets)
        if entry.tool not in targets:
            yield f"faults.{i}.tool", f"a tool {entry.fault} can act on ({targets})", entry.tool
        elif entry.tool not in s.task.capabilities:
            yield (f"faults.{i}.tool", "a tool listed in task.capabilities (the agent can "
                   "never call any other)", entry.tool)
