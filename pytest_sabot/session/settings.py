"""The session's options, typed and resolved once (command line > environment > ini >
default). A value that does not fit its option is a pytest usage error naming the
option, where the value came from, what was expected and what was given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pytest_sabot.core.model_spec import ModelSpec, parse_model
from pytest_sabot.session.options import BY_DEST, OPTIONS, OptionValueError, resolve

FILTERS = ("framework", "config", "operator", "task", "seed")


@dataclass(frozen=True)
class Settings:
    """Every ``--sabot-*`` option of the session, typed."""

    wave: str | None
    adapters: list[str]
    agent: str | None
    agent_row: str | None
    agent_mapping: str | None
    agent_env: list[str]
    trust_local_agent: bool
    sandbox: bool
    model: ModelSpec
    base_url: str | None
    downgrade_model: str | None
    root: str | None
    out: str | None
    rules: str | None
    filters: dict[str, list[str]]
    fail_under: float | None
    max_run_errors: float
    resume: bool
    rerun_errors: bool
    timeout: float
    max_model_calls: int
    budget_usd: float
    prices: str | None
    max_connections: int
    judge: str
    judge_same_lineage: bool
    gateway_url: str | None
    spend_ledger: str | None
    upstream_deadline: float
    sim_latency: float
    concurrency: int  # 0: auto
    history: str | None
    secret_env: list[str]

    @property
    def live(self) -> bool:
        return self.model.is_live

    @property
    def mode(self) -> str:
        return "resume" if self.resume else "fresh"

    @property
    def downgrade_in_use(self) -> str | None:
        """The --sabot-downgrade-model the session's O4 calls are served by, as recorded:
        None when none was given or the model ignores it (a replay serves each call as
        recorded; the embedded model serves its persona's weak tier unless a
        ``sim:<persona>`` is named), as gateway/routing.py decides."""
        given = self.downgrade_model
        if given is None or self.model.is_replay:
            return None
        if self.model.is_sim:
            try:
                return given if parse_model(given).is_sim else None
            except ValueError:
                return None
        return given


def _ini(config: pytest.Config, name: str) -> Any:
    try:
        return config.getini(name)
    except ValueError:
        return None


def read_settings(config: pytest.Config) -> Settings:
    """Resolve every option; a bad value is a usage error (no traceback)."""
    values: dict[str, Any] = {}
    for spec in OPTIONS:
        try:
            values[spec.dest] = resolve(
                spec, config.getoption(spec.dest, None), _ini(config, spec.dest)
            )
        except OptionValueError as exc:
            raise pytest.UsageError(f"pytest-sabot: {exc}") from None
    if values["sabot_rerun_errors"] and not values["sabot_resume"]:
        raise pytest.UsageError(
            "pytest-sabot: --sabot-rerun-errors only makes sense with --sabot-resume "
            "(a fresh session runs every selected cell anyway)"
        )
    wave = values["sabot_wave"]
    return Settings(
        wave=None if wave is None else str(wave),
        adapters=list(values["sabot_adapter"] or []),
        agent=values["sabot_agent"],
        agent_row=values["sabot_agent_row"],
        agent_mapping=values["sabot_agent_mapping"],
        agent_env=list(values["sabot_agent_env"] or []),
        trust_local_agent=bool(values["trust_local_agent"]),
        sandbox=bool(values["sabot_sandbox"]),
        model=_model(str(values["sabot_model"]), wave is not None),
        base_url=values["sabot_base_url"],
        downgrade_model=values["sabot_downgrade_model"],
        root=values["sabot_root"],
        out=values["sabot_out"],
        rules=values["sabot_rules"],
        filters={
            name: list(values[f"sabot_{name}"])
            for name in FILTERS
            if values[f"sabot_{name}"]
        },
        fail_under=values["sabot_fail_under"],
        max_run_errors=float(values["sabot_max_run_errors"]),
        resume=bool(values["sabot_resume"]),
        rerun_errors=bool(values["sabot_rerun_errors"]),
        timeout=float(values["sabot_timeout"]),
        max_model_calls=int(values["sabot_max_model_calls"]),
        budget_usd=float(values["sabot_budget_usd"]),
        prices=values["sabot_prices"],
        max_connections=int(values["sabot_max_connections"]),
        judge=str(values["sabot_judge"]),
        judge_same_lineage=bool(values["sabot_judge_same_lineage"]),
        gateway_url=values["sabot_gateway_url"],
        spend_ledger=values["sabot_spend_ledger"],
        upstream_deadline=float(values["sabot_upstream_deadline"]),
        sim_latency=float(values["sabot_sim_latency"]),
        concurrency=int(values["sabot_concurrency"]),
        history=values["sabot_history"],
        secret_env=list(values["sabot_secret_env"] or []),
    )


def _model(text: str, wave_given: bool) -> ModelSpec:
    """The pipeline model, parsed once; a malformed spec is a usage error when a wave runs
    (without a wave no model is used, so nothing is refused)."""
    try:
        return parse_model(text)
    except ValueError as exc:
        if wave_given:
            raise pytest.UsageError(f"pytest-sabot: --sabot-model={text}: {exc}") from None
        return parse_model(str(BY_DEST["sabot_model"].default))


def add_options(parser: pytest.Parser) -> None:
    """Register every option once, with its type, in one group, and its ini key."""
    group = parser.getgroup("sabot", "Sabot: plant faults in multi-agent pipelines")
    for o in OPTIONS:
        if o.kind == "bool":
            group.addoption(o.flag, action="store_true", dest=o.dest, default=None, help=o.help)
        elif o.kind == "list":  # repeatable, each a comma list (``convert`` joins them)
            group.addoption(o.flag, action="append", dest=o.dest, default=None, help=o.help)
        elif o.parse is not None:
            group.addoption(
                o.flag, action="store", dest=o.dest, default=None, type=o.parse, help=o.help
            )
        else:
            group.addoption(o.flag, action="store", dest=o.dest, default=None, help=o.help)
        parser.addini(o.dest, o.help, default=None)
