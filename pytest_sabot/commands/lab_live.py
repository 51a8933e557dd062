"""The live model agent of the lab's commands: ``--agent openai:MODEL --live``.

``sabot lab run SCENARIO --agent openai:gpt-4o-mini --live --out DIR`` (and an
``openai:MODEL`` agent of a campaign) runs :func:`pytest_sabot.lab.openai_agent.openai_agent`
against a model gateway started for the run, as a wave's pipeline reaches its model:

* refused (exit 2, before anything starts) without ``--live``, the explicit opt-in, and
  without the key in ``OPENAI_API_KEY`` (read from this process's environment only);
* the gateway holds the key and forwards the calls to the OpenAI-compatible upstream
  (``--sabot-base-url``, default OpenAI's), stops at ``--budget-usd`` (default 500) and
  records every exchange, scrubbed, in ``DIR/recordings/<run>/exchanges.jsonl``; a model
  the price table (``--sabot-prices`` of a wave; the shipped table here) does not price
  is refused, since it cannot be budgeted;
* the agent is given only the gateway's door for its run: no key, no upstream URL;
* the run record's ``measurement.provider_usage`` is what the gateway observed (calls,
  tokens, cost; ``unknown`` where the upstream did not say).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.lab.campaign import LIVE_PREFIX, Trial, slug
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.record import LabRun, ProviderUsage
from pytest_sabot.lab.scenario import Scenario

LIVE_FLAG = "--live"
KEY_ENV = "OPENAI_API_KEY"
DEFAULT_BUDGET_USD = 500.0
MAX_MODEL_CALLS = 60


@dataclass(frozen=True)
class LiveSettings:
    """What the command line says about live models."""

    allow_live: bool = False
    base_url: str | None = None
    budget_usd: float = DEFAULT_BUDGET_USD


def is_live_agent(spec: str) -> bool:
    return spec.startswith(LIVE_PREFIX)


def live_problem(spec: str, live: LiveSettings | None) -> str | None:
    """Why ``spec`` cannot run with these settings (None when it can)."""
    if not spec[len(LIVE_PREFIX):].strip():
        return "'openai:MODEL' with a model name"
    if live is None or not live.allow_live:
        return (f"a live model agent, which runs only with {LIVE_FLAG} (it spends money at "
                "the provider; --sabot-base-url names another OpenAI-compatible server)")
    if not os.environ.get(KEY_ENV):
        return (f"a live model agent with its key: {KEY_ENV} is not set in this process's "
                "environment")
    return None


def _usage(exchanges: list[dict[str, object]]) -> ProviderUsage:
    def total(field: str) -> int | float | str:
        values = [e.get(field) for e in exchanges]
        if not values or any(not isinstance(v, int | float) for v in values):
            return "unknown"
        return sum(v for v in values if isinstance(v, int | float))

    prompt, completion, cost = total("prompt_tokens"), total("completion_tokens"), \
        total("cost_usd")
    return ProviderUsage(
        source="gateway", model_calls=len(exchanges),
        prompt_tokens=prompt if isinstance(prompt, int) else "unknown",
        completion_tokens=completion if isinstance(completion, int) else "unknown",
        cost_usd=float(cost) if isinstance(cost, int | float) else "unknown")


def run_live(scenario: Scenario, spec: str, out_dir: Path, *, source: str,
             live: LiveSettings) -> LabRun:
    """One lab run of the model ``spec`` names, through a gateway of its own."""
    from pytest_sabot.gateway.client import GatewayClient, GatewayError
    from pytest_sabot.gateway.server import start_gateway
    from pytest_sabot.gateway.settings import GatewaySettings
    from pytest_sabot.lab.openai_agent import ModelEndpoint, openai_agent

    options: dict[str, object] = {"allow_live": True, "budget_usd": live.budget_usd,
                                  "record_dir": out_dir / "recordings"}
    if live.base_url:
        options["base_url"] = live.base_url
    gateway = start_gateway(GatewaySettings.model_validate(options))
    try:
        client = GatewayClient(gateway.url)
        label = slug(f"{scenario.name}-s{scenario.world.seed}")
        try:
            client.register_run(label, cell_id=label, seed=scenario.world.seed, model=spec,
                                max_calls=MAX_MODEL_CALLS)
        except GatewayError as exc:  # e.g. a model the price table cannot budget
            raise SabotDataError("--agent", "agent", f"a model the gateway accepts "
                                 f"({exc.code}: {exc})", spec) from None
        endpoint = ModelEndpoint(base_url=client.base_url(label, "agent"),
                                 api_key="sabot-lab", model=spec[len(LIVE_PREFIX):])

        def usage() -> ProviderUsage:
            return _usage([e.model_dump() for e in client.close_run(label)])

        return run_scenario(scenario, openai_agent(endpoint, name=spec), out_dir,
                            source=source, usage=usage)
    finally:
        gateway.close()


def live_runner(live: LiveSettings | None) -> Callable[[Trial, Scenario, Path, Path], LabRun]:
    """A campaign's runner of ``openai:MODEL`` trials (checked by :func:`live_problem`
    before any trial runs)."""
    def run(trial: Trial, scenario: Scenario, source: Path, trial_dir: Path) -> LabRun:
        assert live is not None, "live_problem refuses a live agent without settings"
        return run_live(scenario, trial.agent, trial_dir, source=str(source), live=live)

    return run


__all__ = ["LIVE_FLAG", "LiveSettings", "is_live_agent", "live_problem", "live_runner",
           "run_live"]
