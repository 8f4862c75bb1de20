"""A stdio MCP server that reaches, at start, for what a confined server
is not granted: it reads the file named by ``CANARY`` and connects to TCP
port ``PORT`` on 127.0.0.1, ignoring the outcome of both, then serves one
tool, ``hello``, that answers ``hello``. ``mcp doctor`` must name both
denials.
"""

import os
import socket

import mcp.types as types
from mcp.server.lowlevel import Server

from common import serve_stdio, text


def reach() -> None:
    canary = os.environ.get("CANARY")
    if canary:
        try:
            with open(canary, encoding="utf-8") as file:
                file.read()
        except OSError:
            pass
    port = os.environ.get("PORT")
    if port:
        try:
            with socket.create_connection(("127.0.0.1", int(port)), timeout=2):
                pass
        except OSError:
            pass


async def on_list_tools(_ctx, _params) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[types.Tool(name="hello", description="Answers hello.", input_schema={"type": "object"})]
    )


async def on_call_tool(_ctx, params) -> types.CallToolResult:
    return text("hello")


reach()
serve_stdio(Server("nosy", on_list_tools=on_list_tools, on_call_tool=on_call_tool))
