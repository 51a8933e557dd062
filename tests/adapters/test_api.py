"""The public adapter protocol (docs/ADAPTERS.md, rules AP1 and AP3): one module,
``pytest_sabot.api``, re-exporting the very objects the shipped adapters use, documented
field by field; adapters record their own surfaces with the canonical kinds only."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path

import pytest_sabot.api as api
from pytest_sabot.core.models.trace import (
    ADAPTER_EVENT_KINDS,
    EVENT_KINDS,
    RECORD_ONLY_KINDS,
    REPORTED_EVENT_KINDS,
)

ADAPTERS = Path(__file__).resolve().parents[2] / "pytest_sabot" / "adapters"
HOMES = {
    "FrameworkAdapter": "pytest_sabot.core.frameworks",
    "RunContext": "pytest_sabot.core.context",
    "ToolHandle": "pytest_sabot.core.context",
    "Messages": "pytest_sabot.core.context",
    "TraceSink": "pytest_sabot.core.context",
    "routing_verdict": "pytest_sabot.core.verdict_token",
    "EVENT_KINDS": "pytest_sabot.core.models.trace",
}


def _undocumented_fields(cls: type) -> list[str]:
    """Class-level annotated fields not followed by a string literal (their docstring)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    missing = []
    for position, node in enumerate(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            after = body[position + 1] if position + 1 < len(body) else None
            documented = (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                          and isinstance(after.value.value, str))
            if not documented:
                missing.append(node.target.id)
    return missing


def _undocumented_members(cls: type) -> list[str]:
    """Public methods and properties of a protocol class without a docstring."""
    missing = []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        target = member.fget if isinstance(member, property) else member
        if callable(target) and not (target.__doc__ or "").strip():
            missing.append(name)
    return missing


def test_AP1_the_protocol_is_one_module_of_the_objects_the_shipped_adapters_use() -> None:
    assert len(set(api.__all__)) == len(api.__all__)
    public = {n for n in vars(api) if n[0] not in "_@" and n != "annotations"}
    assert public == set(api.__all__)
    for name, home in HOMES.items():
        assert getattr(api, name) is getattr(importlib.import_module(home), name), name
    # The shipped adapters' declarations are instances of the public type.
    from pytest_sabot.core.frameworks import adapters

    assert all(isinstance(declared, api.FrameworkAdapter) for declared in adapters())


def test_AP1_every_field_of_the_public_types_has_a_docstring() -> None:
    for cls in (api.FrameworkAdapter, api.ToolHandle, api.Messages):
        assert cls.__doc__ and _undocumented_fields(cls) == [], cls.__name__
    for protocol in (api.RunContext, api.TraceSink):
        assert protocol.__doc__ and _undocumented_members(protocol) == [], protocol.__name__


def test_AP3_the_canonical_kinds_are_kinds_of_the_trace() -> None:
    assert set(ADAPTER_EVENT_KINDS) <= set(EVENT_KINDS)
    assert set(REPORTED_EVENT_KINDS) <= set(ADAPTER_EVENT_KINDS)
    assert not set(REPORTED_EVENT_KINDS) & set(RECORD_ONLY_KINDS)
    harness_only = {"run_start", "model_call", "tool_call", "tool_result", "effect", "message",
                    "injection", "probe", "artifact", "run_error"}
    assert set(EVENT_KINDS) - set(ADAPTER_EVENT_KINDS) == harness_only


def test_AP3_the_shipped_adapters_record_only_the_canonical_kinds() -> None:
    found: dict[str, set[str]] = {}
    for path in sorted(ADAPTERS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "emit" and node.args):
                continue
            owner = node.func.value
            on_trace = (isinstance(owner, ast.Attribute) and owner.attr == "trace") or (
                isinstance(owner, ast.Name) and owner.id == "trace")
            first = node.args[0]
            if on_trace and isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.setdefault(path.parent.name, set()).add(first.value)
    assert {"langgraph", "crewai", "autogen", "agent_framework"} <= set(found)
    for framework, kinds in found.items():
        assert kinds <= set(ADAPTER_EVENT_KINDS), (framework, kinds - set(ADAPTER_EVENT_KINDS))
