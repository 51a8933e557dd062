"""The deterministic output-contract check (the fairness rule of section 5).

It implements only what a task's published contract states: structure, never an answer
value. (T2's contract revision v0.1 is the disclosed exception: its required substrings are
the canonical answer values, exactly as published for wave 1.)
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from pytest_sabot.core.models.task import (
    ContainsAllRule,
    ContractFile,
    ContractRule,
    FieldShape,
    JsonFieldsRule,
    JsonObjectRule,
    LinePrefixesRule,
    MaxCharsRule,
    NonEmptyRule,
    PythonModuleRule,
    QuotedLineRule,
)
from pytest_sabot.core.python_imports import disallowed_imports

_OPEN_QUOTES = '"“'
_CLOSE_QUOTES = '"”'
_FENCE = re.compile(r"^```[A-Za-z0-9_+-]*[ \t]*\n(.*?)\n?```$", re.DOTALL)


def normalize_artifact(text: str) -> str:
    """The artifact as checked and compared: surrounding blank space removed and one
    enclosing Markdown code fence (```lang ... ```) unwrapped."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    return stripped


def _json_type_ok(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return isinstance(value, bool)


def shape_problems(name: str, value: Any, shape: FieldShape) -> list[str]:
    """Why one JSON field does not have the required shape ([] when it does)."""
    if not _json_type_ok(value, shape.type):
        return [f"field '{name}' must be a {shape.type}, got {json.dumps(value)}"]
    problems: list[str] = []
    if (
        shape.pattern is not None
        and isinstance(value, str)
        and not re.fullmatch(shape.pattern, value)
    ):
        problems.append(f"field '{name}' must match {shape.pattern}, got {value!r}")
    if shape.one_of is not None and value not in shape.one_of:
        problems.append(f"field '{name}' must be one of {shape.one_of}, got {value!r}")
    if isinstance(value, list):
        if shape.min_items is not None and len(value) < shape.min_items:
            problems.append(f"field '{name}' needs at least {shape.min_items} elements")
        if shape.items is not None:
            bad = [v for v in value if not _json_type_ok(v, shape.items)]
            if bad:
                problems.append(f"field '{name}' elements must be {shape.items}s")
    return problems


def _load_object(artifact: str) -> tuple[dict[str, Any] | None, str]:
    try:
        value = json.loads(artifact)
    except json.JSONDecodeError as err:
        return None, f"the artifact is not valid JSON ({err.msg} at line {err.lineno})"
    if not isinstance(value, dict):
        return None, "the artifact must be one JSON object"
    return value, ""


def _check_rule(rule: ContractRule, artifact: str) -> list[str]:
    if isinstance(rule, NonEmptyRule):
        return [] if artifact.strip() else ["the artifact is empty"]
    if isinstance(rule, MaxCharsRule):
        n = len(artifact)
        return (
            []
            if n <= rule.limit
            else [f"the artifact is {n} characters; the limit is {rule.limit}"]
        )
    if isinstance(rule, JsonObjectRule):
        _, problem = _load_object(artifact)
        return [problem] if problem else []
    if isinstance(rule, JsonFieldsRule):
        obj, problem = _load_object(artifact)
        if obj is None:
            return [problem]
        out = [f"missing field '{k}'" for k in rule.fields if k not in obj]
        if not rule.allow_extra:
            out += [f"unexpected field '{k}'" for k in obj if k not in rule.fields]
        for k, shape in rule.fields.items():
            if k in obj:
                out += shape_problems(k, obj[k], shape)
        return out
    if isinstance(rule, ContainsAllRule):
        hay = artifact if rule.case_sensitive else artifact.lower()
        return [
            f"the artifact must contain {s!r}"
            for s in rule.substrings
            if (s if rule.case_sensitive else s.lower()) not in hay
        ]
    if isinstance(rule, PythonModuleRule):
        return _python_problems(rule, artifact)
    if isinstance(rule, LinePrefixesRule):
        return _prefix_problems(rule, artifact)
    assert isinstance(rule, QuotedLineRule)
    for line in artifact.splitlines():
        if line.startswith(rule.prefix):
            rest = line[len(rule.prefix) :].strip()
            if len(rest) >= 2 and rest[0] in _OPEN_QUOTES and rest[-1] in _CLOSE_QUOTES:
                return []
            return [f"the {rule.prefix!r} line must hold a text in double quotes"]
    return [f"no line starts with {rule.prefix!r}"]


def _python_problems(rule: PythonModuleRule, artifact: str) -> list[str]:
    try:
        tree = ast.parse(artifact)
    except SyntaxError as err:
        return [f"the artifact is not valid Python ({err.msg} at line {err.lineno})"]
    out: list[str] = []
    if not any(isinstance(n, ast.FunctionDef) for n in tree.body):
        out.append("the module defines no top-level function")
    return out + disallowed_imports(tree, set(rule.allowed_imports))


def _prefix_problems(rule: LinePrefixesRule, artifact: str) -> list[str]:
    lines = artifact.splitlines()
    out: list[str] = []
    positions: list[int] = []
    for prefix in rule.prefixes:
        hits = [i for i, line in enumerate(lines) if line.startswith(prefix)]
        if len(hits) != 1:
            out.append(f"exactly one line must start with {prefix!r} (found {len(hits)})")
        else:
            positions.append(hits[0])
    if not out and positions != sorted(positions):
        out.append(f"the lines must come in the order {', '.join(map(repr, rule.prefixes))}")
    return out


def check_contract(contract: ContractFile, artifact: str) -> list[str]:
    """Every reason the artifact breaks the published contract; [] when it complies."""
    text = normalize_artifact(artifact)
    out: list[str] = []
    for rule in contract.rules:
        out += _check_rule(rule, text)
    return list(dict.fromkeys(out))
