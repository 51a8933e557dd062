"""Gateway settings: where it listens, which upstream, the spend cap, retries, recording."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from pytest_sabot.core.model_spec import ModelSpec, parse_model
from pytest_sabot.core.models.base import FrozenModel

# The pytest option behind each setting a session chooses (errors name the option).
_OPTION_OF = {
    "prices_path": "--sabot-prices",
    "budget_usd": "--sabot-budget-usd",
    "max_connections": "--sabot-max-connections",
    "base_url": "--sabot-base-url",
    "spend_ledger_dir": "--sabot-spend-ledger",
    "upstream_deadline_s": "--sabot-upstream-deadline",
    "sim_latency_s": "--sabot-sim-latency",
}


class GatewaySettings(FrozenModel):
    """Everything the gateway needs; never holds a key (keys come from the environment)."""

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
    recover_after: int = Field(
        3,
        ge=1,
        description=(
            "Successes before the limit grows by one (3: about 95% of a token-bucket rate "
            "limit in bench/adaptive_rate.py, where 8 reached 86%)."
        ),
    )
    max_retries: int = Field(6, ge=0, description="Upstream retries after the first attempt.")
    backoff_base_s: float = Field(0.5, ge=0, description="First backoff; doubles per retry.")
    backoff_max_s: float = Field(30.0, ge=0, description="Longest wait between retries.")
    upstream_timeout_s: float = Field(
        300.0, gt=0, description="Read timeout of one upstream attempt (the deadline cuts it)."
    )
    upstream_deadline_s: float = Field(
        240.0,
        gt=0,
        description=(
            "Overall deadline of one upstream call: waiting for room under the spend cap, "
            "every attempt and every backoff included. Past it the call is answered 504. "
            "The default stays under the harness's 300 s cell timeout, so a stuck upstream "
            "is a recorded run error, not a timeout."
        ),
    )
    client_timeout_s: float = Field(
        60.0, gt=0, description="How long the server waits for a client's request bytes."
    )
    reserve_output_tokens: int = Field(
        32768, ge=1, description="Output tokens held against the cap when a call sets no cap."
    )
    max_body_bytes: int = Field(32 * 1024 * 1024, ge=1024, description="Largest request body.")
    spend_ledger_dir: Path | None = Field(
        None,
        description=(
            "Output root whose spend-ledger.json keeps the project's spend: the cap then "
            "holds across sessions, waves, resumes and gateways (None: this gateway only)."
        ),
    )
    session: str = Field(
        "",
        description=(
            "Run id of the pytest session the gateway serves, written beside its spend in "
            "the ledger, so every process of the session sees when the cap stopped it."
        ),
    )
    sim_latency_s: float = Field(
        0.0,
        ge=0,
        description=(
            "Median time of one call of the embedded model, in seconds (0: it answers at "
            "once): a seeded lognormal per call, holding a connection of max_connections, "
            "so a keyless run has a live run's shape in time (answers unchanged)."
        ),
    )
    slots_dir: Path | None = Field(
        None,
        description=(
            "Directory of the session's shared connection budget (gateway/slots.py): the "
            "gateways of the session together hold at most max_connections upstream calls, "
            "any one of them all of them (None: this gateway's own max_connections)."
        ),
    )
    workdir: Path | None = Field(
        None,
        description=(
            "Directory relative paths of model specs (replay:<dir>) are read from (None: "
            "the process's working directory). An xdist worker that runs elsewhere is "
            "given the directory its session was started in."
        ),
    )

    @classmethod
    def for_session(
        cls,
        model: str | ModelSpec,
        out_dir: Path,
        *,
        base_url: str | None = None,
        prices: str | Path | None = None,
        budget_usd: float | None = None,
        max_connections: int = 8,
        spend_ledger: str | Path | None = None,
        upstream_deadline_s: float = 240.0,
        sim_latency_s: float = 0.0,
        session: str = "",
        workdir: Path | None = None,
        share: int = 1,
        slots_dir: Path | None = None,
    ) -> GatewaySettings:
        """The settings of a pytest session's own gateway, from the session's model and
        choices and the wave's output directory. A bad value or an unreadable spend ledger
        is a ValueError (SabotDataError for the ledger file) that names the option the value
        came from or the file.

        ``share``: how many gateways of the session hold ``max_connections`` between them
        (one per xdist worker). With ``slots_dir`` (the session's shared budget, usable
        here) they share all of them, any one taking what the others leave; without it
        each holds a fixed share, at least one connection (SPEC I162)."""
        from pytest_sabot.gateway.slots import usable

        spec = parse_model(model)
        live = spec.is_live
        if share > 1 and usable(slots_dir):
            pass  # every gateway's ceiling is the whole budget; the slots cap the sum
        else:
            slots_dir = None
            if share > 1:
                max_connections = max(1, max_connections // share)
        options: dict[str, Any] = {
            "prices_path": Path(prices) if prices else None,
            "allow_live": live,
            "budget_usd": budget_usd if live else None,
            "max_connections": max_connections,
            "record_dir": out_dir / "recordings" if live or spec.is_local else None,
            "spend_ledger_dir": Path(spend_ledger) if spend_ledger else out_dir.resolve().parent,
            "upstream_deadline_s": upstream_deadline_s,
            "sim_latency_s": sim_latency_s,
            "session": session,
            "slots_dir": slots_dir,
            "workdir": workdir,
        }
        if base_url:
            options["base_url"] = base_url
        try:
            settings = cls(**options)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = str(first["loc"][0]) if first.get("loc") else ""
            raise ValueError(
                f"{_OPTION_OF.get(name, name)}: {first['msg']} (got {first.get('input')!r})"
            ) from None
        if live and settings.spend_ledger_dir is not None:
            from pytest_sabot.gateway.ledger import read_ledger

            read_ledger(settings.spend_ledger_dir)
        return settings

    @classmethod
    def from_options(
        cls,
        values: Mapping[str, Any],
        out_dir: Path,
        *,
        session: str = "",
        workdir: Path | None = None,
        share: int = 1,
        slots_dir: Path | None = None,
    ) -> GatewaySettings:
        """:meth:`for_session` from option values by pytest dest (``sabot_model``,
        ``sabot_budget_usd``, ...), for a caller that holds them in that form."""
        return cls.for_session(
            values["sabot_model"],
            out_dir,
            base_url=values.get("sabot_base_url"),
            prices=values.get("sabot_prices"),
            budget_usd=values.get("sabot_budget_usd"),
            max_connections=values.get("sabot_max_connections", 8),
            spend_ledger=values.get("sabot_spend_ledger"),
            upstream_deadline_s=values.get("sabot_upstream_deadline", 240.0),
            sim_latency_s=values.get("sabot_sim_latency", 0.0) or 0.0,
            session=session,
            workdir=workdir,
            share=share,
            slots_dir=slots_dir,
        )
