"""Each real framework client talks to the gateway through its ordinary base_url."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from pytest_sabot.gateway import GatewayClient


class Verdict(BaseModel):
    verdict: str
    score: int


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_rate",
        "description": "Look up a currency conversion rate.",
        "parameters": {
            "type": "object",
            "properties": {"pair": {"type": "string"}},
            "required": ["pair"],
            "additionalProperties": False,
        },
    },
}


def _sdk(client: GatewayClient, key: str, agent: str = "worker") -> openai.OpenAI:
    return openai.OpenAI(base_url=client.base_url(key, agent), api_key="run-token", max_retries=0)


# --------------------------------------------------------------------------- openai SDK


def test_openai_sdk_plain_completion_echoes_requested_model(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    key = run("script:terra")
    reply = _sdk(client, key).chat.completions.create(
        model="gpt-5.6-terra", messages=[{"role": "user", "content": "status?"}]
    )
    assert reply.model == "gpt-5.6-terra"
    assert reply.choices[0].message.content == "[terra] worker#0 seed=11 heard: status?"
    [record] = client.drain(key)
    assert (record.agent, record.call_index, record.stream) == ("worker", 0, False)
    assert record.response_text == reply.choices[0].message.content
    assert reply.usage is not None and record.prompt_tokens == reply.usage.prompt_tokens


def test_openai_sdk_streaming_with_final_usage_chunk(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    key = run("script:terra")
    stream = _sdk(client, key).chat.completions.create(
        model="gpt-5.6-terra",
        messages=[{"role": "user", "content": "a long enough question to be cut in pieces " * 3}],
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces: list[str] = []
    usage = None
    content_chunks = 0
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
            content_chunks += 1
        if chunk.usage is not None:
            assert chunk.choices == []
            usage = chunk.usage
    [record] = client.drain(key)
    assert "".join(pieces) == record.response_text
    assert content_chunks > 1
    assert usage is not None and usage.completion_tokens == record.completion_tokens
    assert record.stream is True


def test_openai_sdk_json_schema_structured_output(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    key = run("script:terra")
    parsed = _sdk(client, key).chat.completions.parse(
        model="gpt-5.6-terra",
        messages=[{"role": "user", "content": "judge it"}],
        response_format=Verdict,
    )
    assert parsed.choices[0].message.parsed == Verdict(verdict="ok", score=7)


def test_openai_sdk_json_object_mode(client: GatewayClient, run: Callable[..., str]) -> None:
    key = run("script:terra")
    reply = _sdk(client, key).chat.completions.create(
        model="gpt-5.6-terra",
        messages=[{"role": "user", "content": "answer in JSON"}],
        response_format={"type": "json_object"},
    )
    assert json.loads(reply.choices[0].message.content or "") == {"answer": "terra"}


def test_openai_sdk_tool_calls_plain_and_streamed(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    key = run("script:terra")
    sdk = _sdk(client, key)
    messages: list[Any] = [{"role": "user", "content": "convert EUR to USD"}]
    plain = sdk.chat.completions.create(
        model="gpt-5.6-terra",
        messages=messages,
        tools=[WEATHER_TOOL],
        tool_choice="auto",
        parallel_tool_calls=False,
    )
    [call] = plain.choices[0].message.tool_calls or []
    assert call.function.name == "lookup_rate"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"pair": "ok"}  # type: ignore[union-attr]
    assert plain.choices[0].finish_reason == "tool_calls"

    name, args, call_id = "", "", ""
    for chunk in sdk.chat.completions.create(
        model="gpt-5.6-terra", messages=messages, tools=[WEATHER_TOOL], stream=True
    ):
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call_id = delta.id or call_id
            if delta.function is not None:
                name += delta.function.name or ""
                args += delta.function.arguments or ""
    assert (name, json.loads(args)) == ("lookup_rate", {"pair": "ok"})
    assert call_id.startswith("call_")
    records = client.drain(key)
    assert [r.tool_calls[0]["function"]["name"] for r in records] == ["lookup_rate"] * 2


def test_openai_sdk_models_probe(client: GatewayClient, run: Callable[..., str]) -> None:
    key = run("script:terra")
    sdk = _sdk(client, key)
    assert [m.id for m in sdk.models.list().data] == ["terra"]
    assert sdk.models.retrieve("terra").id == "terra"


# --------------------------------------------------------------------------- langchain-openai


def test_langchain_chatopenai_invoke_stream_structured_and_tools(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    from langchain_core.messages import AIMessageChunk
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    key = run("script:terra")
    llm = ChatOpenAI(
        model="gpt-5.6-terra",
        base_url=client.base_url(key, "reviewer"),
        api_key="run-token",
        max_retries=0,
        stream_usage=True,
    )
    plain = llm.invoke("check the draft")
    assert plain.content == "[terra] reviewer#0 seed=11 heard: check the draft"

    total: AIMessageChunk | None = None
    for chunk in llm.stream("check again"):
        assert isinstance(chunk, AIMessageChunk)
        total = chunk if total is None else total + chunk
    assert total is not None
    assert total.content == "[terra] reviewer#1 seed=11 heard: check again"
    assert total.usage_metadata is not None and total.usage_metadata["output_tokens"] > 0

    structured = llm.with_structured_output(Verdict, method="json_schema").invoke("judge")
    assert structured == Verdict(verdict="ok", score=7)

    @tool
    def lookup_rate(pair: str) -> str:
        """Look up a currency conversion rate."""
        return "1.038"

    with_tools = llm.bind_tools([lookup_rate]).invoke("convert EUR to USD")
    assert [c["name"] for c in with_tools.tool_calls] == ["lookup_rate"]
    assert with_tools.tool_calls[0]["args"] == {"pair": "ok"}
    records = client.drain(key)
    assert [r.call_index for r in records] == [0, 1, 2, 3]
    assert [r.stream for r in records] == [False, True, False, False]


# --------------------------------------------------------------------------- crewai


@pytest.fixture
def crewai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CREWAI_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    monkeypatch.setenv("CREWAI_TRACING_ENABLED", "false")


def test_crewai_llm_call_plain_streaming_structured_and_tools(
    client: GatewayClient, run: Callable[..., str], crewai_env: None
) -> None:
    from crewai import LLM

    key = run("script:terra")
    base = client.base_url(key, "worker")
    llm = LLM(model="openai/gpt-5.6-terra", base_url=base, api_key="run-token")
    assert llm.call("summarize the sources") == (
        "[terra] worker#0 seed=11 heard: summarize the sources"
    )
    streaming = LLM(model="openai/gpt-5.6-terra", base_url=base, api_key="run-token", stream=True)
    assert streaming.call("again, streamed") == "[terra] worker#1 seed=11 heard: again, streamed"

    structured = llm.call("judge", response_model=Verdict)
    value = (
        structured
        if isinstance(structured, Verdict)
        else Verdict.model_validate_json(str(structured))
    )
    assert value == Verdict(verdict="ok", score=7)

    calls = llm.call(
        "convert EUR to USD",
        tools=[
            {
                "name": "lookup_rate",
                "description": "Look up a rate.",
                "parameters": WEATHER_TOOL["function"]["parameters"],
            }
        ],  # type: ignore[index]
    )
    assert isinstance(calls, list)
    first = calls[0]
    function = first["function"] if isinstance(first, dict) else first.function
    name = function["name"] if isinstance(function, dict) else function.name
    assert name == "lookup_rate"
    records = client.drain(key)
    assert [r.stream for r in records] == [False, True, False, False]
    assert records[1].prompt_tokens is not None


# --------------------------------------------------------------------------- autogen


def test_autogen_openai_chat_completion_client_with_model_info(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, UserMessage
    from autogen_core.tools import FunctionTool
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    key = run("script:terra")
    model = OpenAIChatCompletionClient(
        model="sabot-pipeline-model",
        base_url=client.base_url(key, "critic"),
        api_key="run-token",
        max_retries=0,
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": True,
            "family": "unknown",
            "structured_output": True,
        },
    )

    def lookup_rate(pair: str) -> str:
        return "1.038"

    async def scenario() -> tuple[Any, ...]:
        plain = await model.create([UserMessage(content="review this", source="user")])
        final: CreateResult | None = None
        streamed = ""
        async for item in model.create_stream(
            [UserMessage(content="stream it", source="user")], include_usage=True
        ):
            if isinstance(item, str):
                streamed += item
            else:
                final = item
        structured = await model.create(
            [UserMessage(content="judge", source="user")], json_output=Verdict
        )
        tooled = await model.create(
            [UserMessage(content="convert", source="user")],
            tools=[FunctionTool(lookup_rate, description="Look up a rate.")],
        )
        await model.close()
        return plain, streamed, final, structured, tooled

    plain, streamed, final, structured, tooled = asyncio.run(scenario())
    assert plain.content == "[terra] critic#0 seed=11 heard: review this"
    assert streamed == "[terra] critic#1 seed=11 heard: stream it"
    assert final is not None and final.usage.completion_tokens > 0
    assert Verdict.model_validate_json(structured.content) == Verdict(verdict="ok", score=7)
    assert isinstance(tooled.content, list) and isinstance(tooled.content[0], FunctionCall)
    assert tooled.content[0].name == "lookup_rate"
    assert [r.model_requested for r in client.drain(key)] == ["sabot-pipeline-model"] * 4


@pytest.mark.slow
def test_importing_the_gateway_imports_no_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pytest_sabot.gateway; "
        "print(sorted(m for m in ('crewai','langgraph','autogen_agentchat','langchain_openai') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ}
    )
    assert out.stdout.strip() == "[]"
