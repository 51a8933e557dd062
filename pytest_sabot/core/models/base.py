"""The two bases the file formats' models stand on.

Every model of a format refuses a field it does not know (a misspelt key is an error naming
it, never a value silently dropped). A record, once read or built, does not change
(``FrozenModel``); a document a run fills in place is a ``StrictModel``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class FrozenModel(BaseModel):
    """A record: unknown fields are refused and the model is immutable (and hashable)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class StrictModel(BaseModel):
    """A document: unknown fields are refused; its fields may be set after validation."""

    model_config = ConfigDict(extra="forbid")


def fields_of(view: type[BaseModel], source: object) -> dict[str, Any]:
    """The value ``source`` holds for each field of ``view``, to build a model that
    declares those fields (a view of ``source``) from it."""
    return {name: getattr(source, name) for name in view.model_fields}
