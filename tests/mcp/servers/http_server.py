"""An MCP server over streamable HTTP on 127.0.0.1 only.

    http_server.py PORT

Tools: ``quick`` (returns ``quick``) and ``echo`` (readOnlyHint and
idempotentHint: returns ``Echo: <message>``). The endpoint is
``http://127.0.0.1:PORT/mcp``; the SDK serves both eras there (2026-07-28
requests statelessly, one POST each; older clients with a session).
"""

import sys

import mcp.types as types
import uvicorn
from mcp.server.lowlevel import Server

from common import text

TOOLS = [
    types.Tool(name="quick", description="Answers quick.", input_schema={"type": "object"}),
    types.Tool(
        name="echo",
        description="Echoes its message.",
        input_schema={
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    ),
]


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "quick":
        return text("quick")
    if params.name == "echo":
        return text(f"Echo: {(params.arguments or {}).get('message', '')}")
    raise ValueError(f"unknown tool {params.name}")


def main() -> None:
    port = int(sys.argv[1])
    server = Server("http-server", on_list_tools=list_tools, on_call_tool=call_tool)
    # Loopback only; the SDK's DNS-rebinding protection is on for 127.0.0.1.
    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
