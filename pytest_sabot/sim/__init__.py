"""The embedded keyless pipeline model ("sim").

A deterministic, scripted chat model that the local gateway serves when no API key is in
use. It reads only the messages it is sent (the sectioned prompts of
``pytest_sabot.core.prompt_format``, wherever a framework's own template put them),
works the task with the per-task procedures of ``pytest_sabot.sim.procedures`` and answers
in the OpenAI chat-completion shape. Personas (``vigilant``, ``credulous``, ``realistic``
and their ``-weak`` tiers) decide how carefully the reviewing roles act on what they find.

Everything this package returns is a fixture of the embedded model: an acceptance fixture
for the pipeline, the adapters and the scorer, never a measurement of any LLM.
"""

from __future__ import annotations

from pytest_sabot.sim.engine import respond
from pytest_sabot.sim.personas import PERSONAS, Persona, parse_persona

SIM_LABEL = "fixture of the embedded model (sim), not a measurement of any LLM"

__all__ = ["PERSONAS", "SIM_LABEL", "Persona", "parse_persona", "respond"]
