"""Errors that name the file, the field and what was expected."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError


class SabotDataError(Exception):
    """A data file (cells, task, mapping, trace) is malformed or refers to something unknown.

    The message always names the file, the field (a dotted path) and what was expected,
    so a user can fix it before any model call is made.
    """

    def __init__(self, file: str | Path, field: str, expected: str, got: object = None) -> None:
        self.file = str(file)
        self.field = field
        self.expected = expected
        self.got = got
        where = f"{self.file}: field '{field}'" if field else self.file
        detail = f"{where}: expected {expected}"
        if got is not None:
            detail += f", got {got!r}"
        super().__init__(detail)


def from_validation_error(file: str | Path, err: ValidationError) -> SabotDataError:
    """Turn the first pydantic error into a SabotDataError (file, dotted field, expected)."""
    first = err.errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ()))
    expected = str(first.get("msg", "a valid value"))
    return SabotDataError(file, field, expected, first.get("input"))
