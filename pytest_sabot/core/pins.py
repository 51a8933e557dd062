"""Framework versions pinned by the standard (section 8). Running off these pins is allowed
(a maintainer testing a development version) and is flagged wherever results are shown."""

from __future__ import annotations

PINS: dict[str, str] = {
    "langgraph": "1.2.9",
    "langchain-openai": "1.4.0",
    "crewai": "1.15.5",
    "autogen-agentchat": "0.7.5",
    "autogen-core": "0.7.5",
    "autogen-ext": "0.7.5",
}
# Candidate rows (not frameworks of the standard): pinned the same way, but an optional
# extra, so a candidate that is not installed at all is not off its pin (it cannot have run).
CANDIDATE_PINS: dict[str, str] = {
    "agent-framework-core": "1.23.0",
    "agent-framework-openai": "1.17.0",
    "agent-framework-orchestrations": "1.4.0",
}


def off_pin(installed: dict[str, str]) -> dict[str, str]:
    """Package -> 'installed X, pinned Y' for every pinned package not at its pin (a candidate
    package only when it is installed)."""
    found = {
        name: f"installed {installed.get(name, 'not installed')}, pinned {pin}"
        for name, pin in PINS.items()
        if installed.get(name) != pin
    }
    for name, pin in CANDIDATE_PINS.items():
        version = installed.get(name, "not installed")
        if version not in (pin, "not installed"):
            found[name] = f"installed {version}, pinned {pin}"
    return found
