"""The one row of a pipeline outside the harness (a trusted local agent, an MCP client)
that replaced a wave's rows: what results.json and every report say of it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.models.trace import Config, Framework

Pipeline = Literal["trusted local agent", "MCP client"]


class OutsideRow(StrictModel):
    """The row of a candidate matrix whose pipeline is not a framework adapter of the
    harness: its name, its configuration, what kind of pipeline ran it and, for a trusted
    local agent, the callable that ran."""

    row: Framework = Field(description="The row's framework name (its cells' first part).")
    config: Config = Field(description="The row's configuration.")
    pipeline: Pipeline = Field(description="What ran the row's cells.")
    target: str | None = Field(
        None,
        description="The 'module:callable' a trusted local agent's row ran (--sabot-agent); "
        "None for an MCP client, which is not named by the harness.",
    )

    @property
    def line(self) -> str:
        """'row <name>: <module:callable> (trusted local agent)', as every report says it."""
        ran = self.target or "a client of sabot mcp"
        return f"row {self.row}: {ran} ({self.pipeline})"
