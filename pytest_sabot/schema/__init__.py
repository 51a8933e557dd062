"""``python -m pytest_sabot.schema`` keeps working: the command lives in
``pytest_sabot.commands.schema`` (also ``sabot schema``)."""

from pytest_sabot.commands.schema import (
    DEFAULT_OUT,
    FORMATS,
    main,
    render,
    schema_documents,
    stale_schemas,
    write_schemas,
)

__all__ = [
    "DEFAULT_OUT",
    "FORMATS",
    "main",
    "render",
    "schema_documents",
    "stale_schemas",
    "write_schemas",
]
