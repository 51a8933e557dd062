"""Limits a session sets on the runs it starts, read by the options before any run."""

from __future__ import annotations

DEFAULT_MAX_MODEL_CALLS = 200
"""The runaway guard's default cap on the model calls of one attempt: about three times the
shipped pipelines' most on keyless wave 1 (64, an AutoGen Magentic-One cell; CrewAI 16,
LangGraph 15), docs/ADAPTERS.md."""
