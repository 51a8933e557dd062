"""Which model serves an O4 run's swapped calls, and who is calling (URL paths). Model specs
are parsed by ``pytest_sabot.core.model_spec``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from pytest_sabot.core.model_spec import ModelSpec, downgrade_target, parse_model
from pytest_sabot.gateway.backends.sim import weak_tier
from pytest_sabot.gateway.protocol import Downgrade

_AGENT_PATH = re.compile(r"^/run/(?P<run>[^/]+)/agent/(?P<agent>[^/]+)(?P<rest>/.*)?$")


def downgrade_spec(run: ModelSpec, plan: Downgrade) -> ModelSpec:
    """The spec that serves the swapped calls of an O4 run."""
    if run.is_sim and not _names_a_persona(plan.model):
        # The embedded model's downgrade is always its persona's weak tier; a live model
        # name handed over from the wave (e.g. gpt-5.6-luna) has no meaning here.
        return ModelSpec("sim", weak_tier(run.name))
    if plan.model is None:
        raise ValueError(f"a downgrade of a {run.scheme!r} run must name its model")
    return downgrade_target(plan.model, run)


def _names_a_persona(model: str | None) -> bool:
    """Whether a downgrade names an embedded-model persona explicitly ('sim:<persona>')."""
    if model is None or ":" not in model:
        return False
    try:
        return parse_model(model).is_sim
    except ValueError:
        return False


@dataclass(frozen=True)
class AgentRoute:
    run_key: str
    agent: str
    rest: str  # the remaining path, e.g. '/v1/chat/completions'


def parse_agent_path(path: str) -> AgentRoute | None:
    """'/run/<key>/agent/<agent>/...' -> its parts (percent-decoded), else None."""
    match = _AGENT_PATH.match(path.split("?", 1)[0])
    if match is None:
        return None
    return AgentRoute(unquote(match["run"]), unquote(match["agent"]), match["rest"] or "/")


__all__ = ["AgentRoute", "ModelSpec", "downgrade_spec", "parse_agent_path", "parse_model"]
