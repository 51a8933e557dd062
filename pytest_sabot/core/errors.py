"""Errors that name the file, the field and what was expected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError


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


def _first_error(err: ValidationError) -> dict[str, Any]:
    """The error to report first: an unknown key before anything else, because a
    misspelled key also shows up as the missing key it was meant to be."""
    errors = err.errors()
    unknown = [e for e in errors if e.get("type") == "extra_forbidden"]
    return dict(unknown[0] if unknown else errors[0])


def _unknown_key_text(err: ValidationError, first: dict[str, Any]) -> str:
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


def _json_syntax_error(file: str | Path, first: dict[str, Any], where: str) -> SabotDataError:
    """A document pydantic's JSON parser refused, as :func:`core.loading.parse_json` names
    one: the line it stopped at as the field, 'valid JSON' expected, the parser's words
    (without the position) as what was found."""
    error = str((first.get("ctx") or {}).get("error") or first.get("msg") or "")
    words, at, position = error.rpartition(" at line ")
    if at:
        return SabotDataError(file, f"line {position.split(' ')[0]}", "valid JSON", words)
    return SabotDataError(file, where, "valid JSON", error)


def from_validation_error(
    file: str | Path,
    err: ValidationError,
    *,
    model: type[BaseModel] | None = None,
    top_field: str = "",
) -> SabotDataError:
    """The one translation of a pydantic error into a SabotDataError (file, dotted field,
    expected, got), for every file format.

    An unknown key is named as such, with the required keys missing beside it (and, at the
    top level of ``model``, the keys that are known); a missing key says it is required; a
    validator's message is given without pydantic's 'Value error, ' prefix. ``top_field``
    names a problem of the whole document (no field of its own)."""
    first = _first_error(err)
    loc = tuple(first.get("loc", ()))
    field = ".".join(str(p) for p in loc) or top_field
    kind = first.get("type", "")
    if kind == "extra_forbidden":
        expected = _unknown_key_text(err, first)
        if model is not None and len(loc) == 1:
            expected += f"; known fields are: {', '.join(sorted(model.model_fields))}"
        return SabotDataError(file, field, expected)
    if kind == "missing":
        return SabotDataError(file, field, "a value (this field is required)")
    if kind == "json_invalid":  # the text is no JSON document: name its line, as parse_json
        return _json_syntax_error(file, first, field or top_field)
    if kind == "union_tag_invalid":  # a tagged union given a tag it does not know
        ctx = first.get("ctx") or {}
        return SabotDataError(
            file, field,
            f"{ctx.get('discriminator', 'kind')} to be one of {ctx.get('expected_tags', '')}",
            ctx.get("tag"),
        )
    message = str(first.get("msg", "a valid value")).removeprefix("Value error, ")
    # pydantic's own words read after "expected": "Input should be a valid integer" says
    # "a valid integer"; a validator's message that already quotes the value keeps it once.
    expected = message.removeprefix("Input should be ")
    got = None if ", got " in message or not loc else first.get("input")
    return SabotDataError(file, field, expected, got)


REFUSED_CODE = "sabot_sim_refused"
"""The error code of a request the embedded model refused (SPEC I151)."""
REFUSED_MARK = "the embedded model refused"
"""Every refusal's message starts with this, so a trace's model-call error reads as one."""


class ModelRefused(Exception):
    """The embedded model does not recognise a request, so it refuses it (SPEC I151).

    ``role`` is the role it read for the request (``reviewer``, ``worker``, ``orchestrator``
    or ``unknown``), ``agent`` the agent the request came from, ``part`` the part of the
    request it looked for and did not find. The gateway serves it as an HTTP error
    (``sabot_sim_refused``), so the pipeline sees a model error, never an answer."""

    def __init__(self, role: str, agent: str, part: str) -> None:
        self.role = role
        self.agent = agent
        self.part = part
        super().__init__(
            f"{REFUSED_MARK} a {role} request of agent {agent!r}: {part} was not found. "
            "Keyless, it answers only the harness's own prompts; run a live or local model "
            "(--sabot-model=local:<model>@<url>), or hand this agent the harness's prompt "
            "(docs/ADAPTERS.md, 'Keyless wiring check')"
        )
