"""A writer/critic team in AutoGen AgentChat, in the style of the framework's public
examples: two assistants take turns (the writer with its tools) in a round-robin group
chat, and the team stops when the critic's reply mentions "APPROVE". Nothing here knows of
pytest-sabot.
"""

from __future__ import annotations

from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TerminationCondition
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat

CRITIC_PROMPT = (
    "You are a critic. Provide constructive feedback on the writer's report: check its "
    "facts, completeness and format. Respond with 'APPROVE' when your feedback has been "
    "addressed."
)


def build_team(
    writer_client: Any,
    critic_client: Any,
    *,
    writer_system: str,
    writer_tools: Any = None,
    critic_system: str = CRITIC_PROMPT,
    critic_context: Any = None,
    max_messages: int | None = None,
) -> RoundRobinGroupChat:
    writer = AssistantAgent(
        "writer", model_client=writer_client, system_message=writer_system,
        tools=writer_tools, max_tool_iterations=8, reflect_on_tool_use=True,
    )
    critic = AssistantAgent(
        "critic", model_client=critic_client, system_message=critic_system,
        model_context=critic_context,
    )
    stop: TerminationCondition = TextMentionTermination("APPROVE")
    if max_messages is not None:
        stop = stop | MaxMessageTermination(max_messages)
    return RoundRobinGroupChat([writer, critic], termination_condition=stop)
