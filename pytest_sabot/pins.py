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


def off_pin(installed: dict[str, str]) -> dict[str, str]:
    """Package -> 'installed X, pinned Y' for every pinned package not at its pin."""
    return {
        name: f"installed {installed.get(name, 'not installed')}, pinned {pin}"
        for name, pin in PINS.items()
        if installed.get(name) != pin
    }
