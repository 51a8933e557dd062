"""Price table (USD per 1M tokens) and the cost of one exchange from reported usage."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from pydantic import Field

from pytest_sabot.core.loading import load_yaml_model, read_yaml_mapping, validate
from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.gateway.protocol import Usage

_PER = 1_000_000.0


class ModelPrice(FrozenModel):
    """Prices of one model in USD per 1M tokens."""

    input: float = Field(ge=0, description="USD per 1M uncached input tokens.")
    cached_input: float = Field(ge=0, description="USD per 1M cached input tokens.")
    output: float = Field(ge=0, description="USD per 1M output tokens (reasoning included).")
    max_output_tokens: int | None = Field(
        None,
        ge=1,
        description=(
            "The most output tokens (reasoning included) one call can produce; a call that "
            "sets no output limit is budgeted at this many (None: the gateway's "
            "reserve_output_tokens setting)."
        ),
    )


class PriceTable(FrozenModel):
    """A price table file: ``version`` and ``models: {name: {input, cached_input, output}}``."""

    version: int = Field(1, description="Format version of the table.")
    models: dict[str, ModelPrice] = Field(description="Prices keyed by upstream model name.")

    def price(self, model: str) -> ModelPrice | None:
        return self.models.get(model)

    def cost(self, model: str, usage: Usage) -> float | None:
        """Cost from reported usage; None when the model has no price or usage is unknown."""
        price = self.models.get(model)
        if price is None or usage.prompt_tokens is None or usage.completion_tokens is None:
            return None
        cached = min(usage.cached_tokens or 0, usage.prompt_tokens)
        return (
            (usage.prompt_tokens - cached) * price.input
            + cached * price.cached_input
            + usage.completion_tokens * price.output
        ) / _PER

    def max_output(self, model: str) -> int | None:
        price = self.models.get(model)
        return None if price is None else price.max_output_tokens

    def ceiling(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """An upper bound for a call with at most these token counts (every input token at
        the dearer of the cached and uncached rates)."""
        price = self.models.get(model)
        if price is None:
            return None
        per_input = max(price.input, price.cached_input)
        return (input_tokens * per_input + output_tokens * price.output) / _PER


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The packaged table, or the YAML file at ``path`` (errors name file and field)."""
    if path is None:
        text = resources.files("pytest_sabot.gateway").joinpath("prices.yaml").read_text("utf-8")
        source = Path("pytest_sabot/gateway/prices.yaml")
        return validate(source, PriceTable, read_yaml_mapping(source, text))
    return load_yaml_model(path, PriceTable)
