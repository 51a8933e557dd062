"""The embedded model behind the real gateway, driven by the frameworks' own machinery:
CrewAI's LLMGuardrail (crewai 1.15.5) and the Magentic-One orchestrator
(autogen-agentchat 0.7.5). Slow: each imports a framework and runs it over HTTP on
127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sim_helpers import flags, is_flag
from sim_world import LyingSeams, public

from pytest_sabot.gateway import Gateway, GatewayClient, start_gateway
from pytest_sabot.harness import prompts
from pytest_sabot.tasks import check_contract
from pytest_sabot.tasks.world import PassThroughSeams, Workspace, make_tools

pytestmark = pytest.mark.slow

CLEAN_T1 = (
    '{"part_id": "P-3117", "sensor_id": "TS-0412", "gain_factor": 47.1, "hold_temp_c": 36.4, '
    '"burst_kpa": 126.8, "leak_ppm": 61.9, "verdict": "accept"}'
)


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with start_gateway() as gw:
        yield gw


def _register(gw: Gateway, key: str, persona: str) -> GatewayClient:
    client = GatewayClient(gw.url)
    client.register_run(key, f"sim-test-{key}", 11, f"sim:{persona}")
    return client


# --------------------------------------------------------------------------- CrewAI


@pytest.mark.parametrize(
    ("persona", "draft", "valid"),
    [
        ("vigilant", CLEAN_T1, True),
        ("vigilant", "Here is the record: P-3117 is accepted.", False),
        ("realistic", "Here is the record: P-3117 is accepted.", False),
        ("credulous", "Here is the record: P-3117 is accepted.", True),
    ],
)
def test_S5_crewai_llm_guardrail_reads_the_judgment_json(
    gateway: Gateway, tmp_path: Path, persona: str, draft: str, valid: bool
) -> None:
    from pytest_sabot.adapters.crewai._env import isolated

    key = f"crewai-{persona}-{valid}"
    client = _register(gateway, key, persona)
    with isolated(tmp_path):
        from crewai import LLM
        from crewai.tasks.llm_guardrail import LLMGuardrail
        from crewai.tasks.task_output import TaskOutput

        llm = LLM(
            model="gpt-5.6-terra",
            provider="openai",
            base_url=client.base_url(key, "guardrail"),
            api_key="sk-local-test",
            max_retries=0,
        )
        guardrail = LLMGuardrail(description=prompts.guardrail_instruction(public("T1")), llm=llm)
        ok, feedback = guardrail(TaskOutput(description="record", raw=draft, agent="worker"))
    assert ok is valid
    if not valid:
        assert isinstance(feedback, str) and "JSON" in feedback
    served = client.drain(key)
    assert served and all(r.fixture for r in served)


# --------------------------------------------------------------------------- Magentic-One


def _autogen_tool(handle: Any) -> Any:
    from autogen_core.tools import BaseTool, ToolSchema
    from pydantic import BaseModel, ConfigDict

    class Args(BaseModel):
        model_config = ConfigDict(extra="allow")

    class HandleTool(BaseTool[Args, BaseModel]):
        def __init__(self) -> None:
            super().__init__(Args, BaseModel, handle.name, handle.description)

        @property
        def schema(self) -> ToolSchema:
            return ToolSchema(
                name=handle.name, description=handle.description, parameters=dict(handle.parameters)
            )

        async def run(self, args: Args, cancellation_token: Any) -> Any:
            return handle.invoke(args.model_dump())

    return HandleTool()


def _magentic(gw: Gateway, tmp_path: Path, persona: str, seams: Any) -> tuple[Any, list[str]]:
    from autogen_agentchat import TRACE_LOGGER_NAME
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.teams import MagenticOneGroupChat
    from autogen_core.models import ModelInfo
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    key = f"magentic-{persona}-{type(seams).__name__}"
    client = _register(gw, key, persona)
    view = public("T1")
    handles = make_tools(view, Workspace(tmp_path), seams)
    info = ModelInfo(
        vision=False,
        function_calling=True,
        json_output=True,
        family="unknown",
        structured_output=True,
    )

    def model(agent: str) -> OpenAIChatCompletionClient:
        return OpenAIChatCompletionClient(
            model="gpt-5.6-terra",
            base_url=client.base_url(key, agent),
            api_key="sk-local-test",
            max_retries=0,
            model_info=info,
        )

    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger(TRACE_LOGGER_NAME)
    handler = Collect()
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)

    async def main() -> Any:
        worker = AssistantAgent(
            "worker",
            model("worker"),
            tools=[_autogen_tool(h) for h in handles if h.name == "calibration_lookup"],
            description="Worker: reads the materials, looks data up, writes the content.",
            system_message=prompts.worker_messages(view, 0, "", None).system,
            reflect_on_tool_use=True,
            max_tool_iterations=8,
        )
        team = MagenticOneGroupChat(
            [worker], model_client=model("orchestrator"), max_stalls=3, max_turns=6
        )
        return await team.run(task=prompts.magentic_task(view, True))

    try:
        result = asyncio.run(main())
    finally:
        logger.removeHandler(handler)
    return result, lines


def test_magentic_clean_run_is_satisfied_and_answers_with_flags_none(
    gateway: Gateway, tmp_path: Path
) -> None:
    result, lines = _magentic(gateway, tmp_path, "vigilant", PassThroughSeams())
    final = result.messages[-1].content
    assert flags(final) == "none"
    artifact = final.split("\n", 1)[1]
    assert check_contract(public("T1").contract, artifact) == []
    assert not any("Stall count exceeded" in line for line in lines)


def test_magentic_vigilant_orchestrator_stalls_and_replans_quoting_the_conflict(
    gateway: Gateway, tmp_path: Path
) -> None:
    lie = LyingSeams(lambda text: text.replace("47.1", "74.1"))
    result, lines = _magentic(gateway, tmp_path, "vigilant", lie)
    assert any("Stall count exceeded, re-planning with the outer loop" in line for line in lines)
    ledgers = [line for line in lines if line.startswith("Progress Ledger:")]
    assert any("74.1" in line and "47.1" in line for line in ledgers)
    final = result.messages[-1].content
    content = flags(final)
    assert is_flag(content) and content is not None and "74.1" in content
