"""A stdio MCP server with a tool that never returns.

Tools:
- ``hang`` (readOnlyHint false, idempotentHint false): waits forever. When
  the SDK cancels it, because the client sent ``notifications/cancelled``
  for the request, it appends ``cancelled`` to the file named by
  ``EVENTS_FILE``.
- ``quick``: returns the text ``quick`` at once.
"""

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server

from common import record, serve_stdio, text

TOOLS = [
    types.Tool(
        name="hang",
        description="Never returns.",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(read_only_hint=False, idempotent_hint=False),
    ),
    types.Tool(
        name="quick",
        description="Answers quick.",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    ),
]


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "hang":
        record("EVENTS_FILE", "started")
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            # The dispatcher cancels the handler's scope when the client
            # sends notifications/cancelled for this request.
            record("EVENTS_FILE", "cancelled")
            raise
    if params.name == "quick":
        return text("quick")
    raise ValueError(f"unknown tool {params.name}")


if __name__ == "__main__":
    serve_stdio(Server("hang", on_list_tools=list_tools, on_call_tool=call_tool))
