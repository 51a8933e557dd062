"""Helpers for the MCP server tests: the SDK's own stdio client and a bridge that lets a
synchronous lab agent (a scripted controller) act through an MCP session.

The server is the real command (``python -m pytest_sabot.lab mcp SCENARIO --out DIR``)
started as a subprocess by ``mcp.client.stdio.stdio_client``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, Implementation, TextContent

from pytest_sabot.lab.agent import AgentContext, AgentView, LimitReached
from pytest_sabot.lab.observation import Observation

ROOT = Path(__file__).resolve().parents[2]
CONTEXT_URI = "lab://run/context"


def server_env() -> dict[str, str]:
    """The server's environment: this checkout first on the path."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


@asynccontextmanager
async def lab_client(out: Path, scenario: str | Path = "lost-create-response",
                     name: str = "sabot-test") -> AsyncIterator[ClientSession]:
    """An initialized client session with a lab MCP server serving one run into ``out``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pytest_sabot.lab", "mcp", str(scenario), "--out", str(out)],
        env=server_env(), cwd=str(ROOT))
    out.parent.mkdir(parents=True, exist_ok=True)
    with (out.parent / f"{out.name}.server.log").open("w") as errlog:
        async with (stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write, client_info=Implementation(
                        name=name, version="1")) as session):
            await session.initialize()
            yield session


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def view_of(session: ClientSession) -> AgentView:
    read = await session.read_resource(CONTEXT_URI)  # type: ignore[arg-type]
    content = read.contents[0]
    assert hasattr(content, "text")
    return AgentView.model_validate_json(content.text)


async def drive(session: ClientSession,
                controller: Callable[[AgentContext], Any]) -> Any:
    """Run a synchronous lab agent in a worker thread, acting only through the session."""
    view = await view_of(session)

    def call_tool(name: str, arguments: Mapping[str, Any]) -> Observation:
        result = anyio.from_thread.run(session.call_tool, name, dict(arguments))
        if result.structuredContent is None:
            raise LimitReached(text_of(result))
        return Observation.model_validate(result.structuredContent)

    def sleep(ms: int) -> None:
        result = anyio.from_thread.run(session.call_tool, "sleep", {"ms": ms})
        if result.isError:
            raise LimitReached(text_of(result))

    return await anyio.to_thread.run_sync(controller, AgentContext(view, call_tool, sleep))


async def finish(session: ClientSession, output: str = "") -> dict[str, Any]:
    result = await session.call_tool("finish_run", {"output": output})
    assert not result.isError, text_of(result)
    body: dict[str, Any] = json.loads(text_of(result))
    assert body == result.structuredContent
    return body
