"""Errors that name the file, the field and what was expected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def first_error(err: ValidationError) -> dict[str, Any]:
    """The error to report first: an unknown key before anything else, because a
    misspelled key also shows up as the missing key it was meant to be."""
    errors = err.errors()
    unknown = [e for e in errors if e.get("type") == "extra_forbidden"]
    return dict(unknown[0] if unknown else errors[0])


def unknown_key_text(err: ValidationError, first: dict[str, Any]) -> str:
    """'unknown key 'x'' plus the keys still missing beside it, if any."""
    loc = tuple(first.get("loc", ()))
    key = loc[-1] if loc else "?"
    missing = [
        str(e["loc"][-1])
        for e in err.errors()
        if e.get("type") == "missing" and tuple(e.get("loc", ()))[:-1] == loc[:-1]
    ]
    text = f"only known keys; {key!r} is unknown here (Extra inputs are not permitted)"
    if missing:
        text += f" (missing beside it: {', '.join(repr(m) for m in missing)})"
    return text


def from_validation_error(file: str | Path, err: ValidationError) -> SabotDataError:
    """Turn a pydantic error into a SabotDataError (file, dotted field, expected). An
    unknown key is named as such, with the required keys missing beside it."""
    first = first_error(err)
    field = ".".join(str(p) for p in first.get("loc", ()))
    if first.get("type") == "extra_forbidden":
        return SabotDataError(file, field, unknown_key_text(err, first))
    expected = str(first.get("msg", "a valid value"))
    return SabotDataError(file, field, expected, first.get("input"))
