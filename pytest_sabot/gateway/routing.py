"""Model specs and URL paths: which backend serves a run, and who is calling."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from pytest_sabot.gateway.backends.sim import DEFAULT_PERSONA, weak_tier
from pytest_sabot.gateway.protocol import Downgrade

_AGENT_PATH = re.compile(r"^/run/(?P<run>[^/]+)/agent/(?P<agent>[^/]+)(?P<rest>/.*)?$")


@dataclass(frozen=True)
class ModelSpec:
    """'scheme:name', e.g. sim:realistic, openai:gpt-5.6-terra, replay:/path."""

    scheme: str
    name: str

    @property
    def text(self) -> str:
        return f"{self.scheme}:{self.name}"


def parse_model(text: str) -> ModelSpec:
    """Parse a run's model string; 'sim' alone is the realistic persona."""
    text = text.strip()
    if text == "sim":
        return ModelSpec("sim", DEFAULT_PERSONA)
    scheme, sep, name = text.partition(":")
    if not sep or not scheme or not name:
        raise ValueError(
            f"model {text!r} is not 'sim', 'sim:<persona>', 'openai:<model>' or 'replay:<dir>'"
        )
    return ModelSpec(scheme, name)


def downgrade_spec(run: ModelSpec, plan: Downgrade) -> ModelSpec:
    """The spec that serves the swapped calls of an O4 run."""
    if run.scheme == "sim" and (plan.model is None or not plan.model.startswith("sim:")):
        # The embedded model's downgrade is always its persona's weak tier; a live model
        # name handed over from the wave (e.g. gpt-5.6-luna) has no meaning here.
        return ModelSpec("sim", weak_tier(run.name))
    if plan.model is None:
        raise ValueError(f"a downgrade of a {run.scheme!r} run must name its model")
    if ":" in plan.model:
        return parse_model(plan.model)
    return ModelSpec(run.scheme, plan.model)


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
