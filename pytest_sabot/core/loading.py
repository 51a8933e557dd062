"""The one way a data file becomes a validated pydantic model.

Every YAML file pytest-sabot reads (waves, anchor registries, seed registries' neighbours,
task files, mappings, the rule book, price tables, lab scenarios) goes through
:func:`read_yaml` and :func:`validate`, so a problem reads the same whichever file has it:
the file, the field (a dotted path, or ``line N`` for a syntax error) and what was
expected, as a :class:`~pytest_sabot.core.errors.SabotDataError`.

YAML is read strictly: a mapping that names the same key twice is refused (YAML itself
would keep the last value silently).

JSON records (traces, outcomes, results, seed registries) are parsed by :func:`parse_json`,
which names the file and the line of a syntax error the same way. A document nested deeper
than the parser can follow (``[[[[...`` a hundred thousand levels) is refused as malformed
by both readers, never raised as a RecursionError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from pytest_sabot.core.errors import SabotDataError, from_validation_error

__all__ = ["load_yaml_model", "parse_json", "read_yaml", "read_yaml_mapping", "validate"]

M = TypeVar("M", bound=BaseModel)

TOP_LEVEL = "(top level)"
TOO_DEEP = "a document nested no deeper than the parser can follow (about 1,000 levels)"
"""What a reader expected of a JSON or YAML document that nests deeper than that."""
_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_BASE_LOADER):  # type: ignore[valid-type,misc]
    """The safe loader (libyaml's when installed) refusing a key given twice."""


def _unique_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark
            )
        seen.add(key)
    return dict(loader.construct_mapping(node))


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SabotDataError(path, "", "an existing YAML file") from None
    except UnicodeDecodeError:
        raise SabotDataError(path, "", "UTF-8 text") from None
    except OSError as exc:
        raise SabotDataError(path, "", "a readable YAML file", exc.strerror or str(exc)) from None


def read_yaml(path: str | Path, text: str | None = None) -> Any:
    """Parse a YAML file (or ``text``, read from it already); errors name the file and the
    line of a syntax error."""
    source = Path(path)
    if text is None:
        text = _read_text(source)
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SabotDataError(source, where, "valid YAML", str(problem)) from None
    except RecursionError:
        raise SabotDataError(source, "", TOO_DEEP, "deeper nesting") from None


def parse_json(
    text: str | bytes, source: str | Path, where: str = "", expected: str = "valid JSON"
) -> Any:
    """Parse one JSON document read from ``source``; a syntax error names the line (or
    ``where``, e.g. the line of a JSONL file), and a document nested too deep is refused
    the same way, as a SabotDataError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SabotDataError(source, where or f"line {exc.lineno}", expected, exc.msg) from None
    except RecursionError:
        raise SabotDataError(source, where, TOO_DEEP, "deeper nesting") from None


def read_yaml_mapping(path: str | Path, text: str | None = None) -> dict[str, Any]:
    """:func:`read_yaml` for a file whose top level must be a mapping."""
    raw = read_yaml(path, text)
    if not isinstance(raw, dict):
        raise SabotDataError(path, TOP_LEVEL, "a mapping at the top level", type(raw).__name__)
    return raw


def validate(path: str | Path, model: type[M], raw: object, top_field: str = TOP_LEVEL) -> M:
    """Validate already-read data against ``model``; the first problem becomes a
    SabotDataError naming ``path`` (``top_field`` names a problem of the whole file)."""
    if not isinstance(raw, dict):
        raise SabotDataError(path, TOP_LEVEL, "a mapping at the top level", type(raw).__name__)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise from_validation_error(path, exc, model=model, top_field=top_field) from None


def load_yaml_model(path: str | Path, model: type[M], top_field: str = TOP_LEVEL) -> M:
    """Read a YAML file and validate it against ``model``."""
    return validate(path, model, read_yaml_mapping(path), top_field)
