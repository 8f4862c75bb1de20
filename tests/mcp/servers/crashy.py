"""A stdio MCP server that crashes in the middle of a call, once.

Tools:
- ``read_slowly`` (readOnlyHint: true, so a client may retry it): sleeps
  ``ms`` milliseconds, then returns the text ``read``.
- ``write_once`` (no hints: not idempotent, a client must not retry it):
  returns the text ``written``.

Every call the server *receives* appends its tool name to the file named by
``CALLS_FILE``, before anything else happens. If the file named by
``CRASH_ONCE`` exists when a call arrives, the server deletes it and exits
at once (``os._exit(1)``) without answering: the call reached the server,
and the client sees the connection break mid-call. With ``CRASH_ALWAYS``
set (to anything), every server started so crashes on every call.
"""

import os

import mcp.types as types
from mcp.server.lowlevel import Server

from common import record, serve_stdio, text

TOOLS = [
    types.Tool(
        name="read_slowly",
        description="Sleeps ms milliseconds, then answers read.",
        input_schema={
            "type": "object",
            "properties": {"ms": {"type": "integer", "minimum": 0}},
            "required": ["ms"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="write_once",
        description="Answers written; not safe to repeat.",
        input_schema={"type": "object"},
    ),
]


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    record("CALLS_FILE", params.name)
    crash = os.environ.get("CRASH_ONCE")
    if crash and os.path.exists(crash):
        os.remove(crash)
        os._exit(1)
    if os.environ.get("CRASH_ALWAYS"):
        os._exit(1)
    if params.name == "read_slowly":
        import anyio

        await anyio.sleep((params.arguments or {}).get("ms", 0) / 1000)
        return text("read")
    if params.name == "write_once":
        return text("written")
    raise ValueError(f"unknown tool {params.name}")


if __name__ == "__main__":
    serve_stdio(Server("crashy", on_list_tools=list_tools, on_call_tool=call_tool))
