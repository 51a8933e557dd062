"""What the two MCP stdio servers share: ``sabot mcp`` serving one cell
(``commands/mcp.py``) and the lab serving one scenario (``commands/lab_mcp.py``).

Both are the official MCP Python SDK's low-level ``Server`` over stdio with one JSON
context resource, answer every tool call with text (and, for a JSON answer, the same body
as structured content) and serve until the client leaves. Importing this module loads the
SDK, so the commands import it only when they serve.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Awaitable, Callable, Iterable
from types import FrameType
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.stdio import stdio_server
from pydantic import AnyUrl

from pytest_sabot import __version__

CallTool = Callable[["Server[Any, Any]", str, dict[str, Any]], Awaitable[types.CallToolResult]]


def text_result(text: str, *, error: bool, structured: dict[str, Any] | None = None) -> (
        types.CallToolResult):
    """A tool's answer as one text block (``isError`` when it is an error)."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structuredContent=structured, isError=error)


def json_result(body: dict[str, Any]) -> types.CallToolResult:
    """A successful JSON answer: its stable text, and the body as structured content."""
    return text_result(json.dumps(body, sort_keys=True), error=False, structured=body)


def finish_output(arguments: dict[str, Any]) -> str:
    """The finish tool's ``output`` as the text recorded: a string as given, any other JSON
    value as its JSON text (never Python's repr of it)."""
    output = arguments.get("output", "")
    return output if isinstance(output, str) else json.dumps(output)


def finished_result(finish_tool: str, what: str) -> types.CallToolResult:
    """The answer to any call after the finish tool: an error, and nothing reaches ``what``."""
    return text_result(f"the run is finished ({finish_tool} was called); nothing more "
                       f"reaches {what}", error=True)


def context_server(
    name: str,
    instructions: str,
    *,
    tools: Callable[[], list[types.Tool]],
    call: CallTool,
    uri: str,
    description: str,
    context: Callable[[], dict[str, Any]],
) -> Server[Any, Any]:
    """A server listing ``tools()``, answering each call with ``call(server, name,
    arguments)`` and serving ``context()`` as the one JSON resource at ``uri``."""
    server: Server[Any, Any] = Server(name, version=__version__, instructions=instructions)

    @server.list_tools()  # type: ignore[untyped-decorator, no-untyped-call]
    async def list_tools() -> list[types.Tool]:
        return tools()

    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await call(server, tool, arguments)

    @server.list_resources()  # type: ignore[untyped-decorator, no-untyped-call]
    async def list_resources() -> list[types.Resource]:
        return [types.Resource(uri=AnyUrl(uri), name="context", description=description,
                               mimeType="application/json")]

    @server.read_resource()  # type: ignore[untyped-decorator, no-untyped-call]
    async def read_resource(asked: AnyUrl) -> Iterable[ReadResourceContents]:
        if str(asked) != uri:
            raise ValueError(f"no resource {asked}; the only one is {uri}")
        return [ReadResourceContents(content=json.dumps(context(), sort_keys=True),
                                     mime_type="application/json")]

    return server


# Set once a server here was stopped by a signal: the SDK's stdin reader is then still
# blocked in a worker thread the interpreter would wait for at exit (until the client closes
# its end), so a program ends its process once its records are written
# (closed_stdout.end_if_reader_left).
reader_left_behind = False
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


def serve_until_left(server: Server[Any, Any], finish_tool: str) -> str:
    """Serve on stdin/stdout until the client leaves or the process is stopped (SIGINT,
    SIGTERM, SIGHUP); why the run ends there (the run itself ends only through
    ``finish_tool``). A stop is the end of a run without its finish, as a client that
    leaves is: the caller records it."""
    global reader_left_behind
    stopped: list[str] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped.append(signal.Signals(signum).name)
        raise KeyboardInterrupt

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for name in STOP_SIGNALS:
            number = getattr(signal, name, None)
            if number is not None:
                previous[number] = signal.signal(number, stop)
    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        reader_left_behind = True
        return f"the MCP server was stopped ({stopped[0] if stopped else 'SIGINT'}) " \
            f"before {finish_tool}"
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return f"the MCP client left before {finish_tool}"
