"""The simulated helpdesk: entities, deterministic generation, tool handlers, the store.

The world contacts nothing real and lives only in the harness process; an agent reaches
it only through the routed tool calls of :mod:`pytest_sabot.lab.boundary`.
"""
