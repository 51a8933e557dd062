"""Gateway settings: where it listens, which upstream, the spend cap, retries, recording."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class GatewaySettings(BaseModel):
    """Everything the gateway needs; never holds a key (keys come from the environment)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field("127.0.0.1", description="Listen address (loopback only).")
    port: int = Field(0, ge=0, description="0 picks a free ephemeral port.")
    base_url: str = Field(
        "https://api.openai.com/v1", description="OpenAI-compatible upstream for 'openai:' runs."
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="Environment variable holding the upstream key."
    )
    allow_live: bool = Field(
        False, description="Explicit opt-in: without it 'openai:' runs refuse to register."
    )
    budget_usd: float | None = Field(None, ge=0, description="Hard spend cap across all runs.")
    prices_path: Path | None = Field(None, description="Price table YAML overriding the default.")
    record_dir: Path | None = Field(None, description="Where live exchanges are recorded per cell.")
    max_connections: int = Field(8, ge=1, description="Upstream concurrency limit (ceiling).")
    recover_after: int = Field(8, ge=1, description="Successes before the limit grows by one.")
    max_retries: int = Field(6, ge=0, description="Upstream retries after the first attempt.")
    backoff_base_s: float = Field(0.5, ge=0, description="First backoff; doubles per retry.")
    backoff_max_s: float = Field(30.0, ge=0, description="Longest wait between retries.")
    upstream_timeout_s: float = Field(300.0, gt=0, description="Read timeout per upstream call.")
    client_timeout_s: float = Field(
        60.0, gt=0, description="How long the server waits for a client's request bytes."
    )
    reserve_output_tokens: int = Field(
        32768, ge=1, description="Output tokens held against the cap when a call sets no cap."
    )
    max_body_bytes: int = Field(32 * 1024 * 1024, ge=1024, description="Largest request body.")
