"""A stdio MCP server that sends what a client must bound or refuse.

    flood.py MODE [ARG]

Modes:
- ``many-tools N``: lists N tools, ``t0`` to ``t<N-1>``, 500 a page (the
  rest behind ``nextCursor``); each page served appends its cursor to the
  file named by ``PAGES_FILE``.
- ``big-result BYTES``: tool ``big`` returns one text part of BYTES bytes.
- ``bad-tools``: lists, as raw JSON the SDK would not let through, a good
  tool ``ok``, a tool named ``bad name!``, one whose inputSchema does not
  compile (``{"type": 12}``), one with no inputSchema at all, and two tools
  both named ``dup``.
- ``media``: tool ``media`` returns an image, an audio clip, a resource
  link, an embedded text resource and an embedded blob resource; tools
  ``structured`` and ``structured_wrong`` declare an outputSchema
  (``{n: integer}``, required) and return structuredContent ``{n: 1}``
  and ``{n: "one"}``.
- ``log-flood``: tool ``noisy`` sends 5000 log notifications, then returns
  ``done`` (at 2026-07-28 a client receives them only if it opted in on
  the request, so run it with ``MCP_ERA=handshake`` to see them all).
- ``asks``: tools ``ask_sampling``, ``ask_elicitation`` and ``ask_roots``
  ask the client for a sampling, an elicitation or its roots and return
  what came back, or the error, as text. On a 2026-07-28 connection a
  server may not send requests, so they return an ``input_required``
  result for the same ask instead (the multi-round-trip pattern).
"""

import base64
import io
import sys
import wave

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from common import record, serve_stdio, text

OBJECT = {"type": "object"}
PAGE = 500

# A 1x1 transparent PNG.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def wav() -> str:
    """Ten milliseconds of silence as a WAV file, base64."""
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(1)
        clip.setframerate(8000)
        clip.writeframes(b"\x80" * 80)
    return base64.b64encode(out.getvalue()).decode()


def tool(name: str, **extra) -> types.Tool:
    return types.Tool(name=name, input_schema=OBJECT, **extra)


def many_tools(count: int) -> Server:
    async def list_tools(ctx, params) -> types.ListToolsResult:
        start = int(params.cursor) if params and params.cursor else 0
        record("PAGES_FILE", str(start))
        end = min(start + PAGE, count)
        return types.ListToolsResult(
            tools=[tool(f"t{i}") for i in range(start, end)],
            next_cursor=str(end) if end < count else None,
        )

    async def call_tool(ctx, params):
        return text(params.name)

    return Server("many-tools", on_list_tools=list_tools, on_call_tool=call_tool)


def big_result(size: int) -> Server:
    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool("big")])

    async def call_tool(ctx, params):
        return text("x" * size)

    return Server("big-result", on_list_tools=list_tools, on_call_tool=call_tool)


def bad_tools() -> Server:
    good = {"type": "object", "properties": {}}
    listing = [
        {"name": "ok", "description": "The one good tool.", "inputSchema": good},
        {"name": "bad name!", "inputSchema": good},
        {"name": "bad_schema", "inputSchema": {"type": 12}},
        {"name": "no_schema", "description": "It has no inputSchema."},
        {"name": "dup", "description": "The first dup.", "inputSchema": good},
        {"name": "dup", "description": "The second dup.", "inputSchema": good},
    ]

    async def raw_listing(ctx, call_next):
        # A middleware that answers without calling the handler is trusted to
        # return its own result, unchecked: the only way past the SDK's
        # validation of tools/list results.
        if ctx.method != "tools/list":
            return await call_next(ctx)
        result = {"tools": listing}
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            result.update(resultType="complete", ttlMs=0, cacheScope="private")
        return result

    async def list_tools(ctx, params) -> types.ListToolsResult:
        raise AssertionError("answered by the middleware")

    async def call_tool(ctx, params):
        return text(f"called {params.name}")

    server = Server("bad-tools", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.insert(0, raw_listing)
    return server


def media() -> Server:
    output_schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                tool("media"),
                tool("structured", output_schema=output_schema),
                tool("structured_wrong", output_schema=output_schema),
            ]
        )

    async def call_tool(ctx, params):
        if params.name == "media":
            return types.CallToolResult(
                content=[
                    types.ImageContent(data=PNG, mime_type="image/png"),
                    types.AudioContent(data=wav(), mime_type="audio/wav"),
                    types.ResourceLink(
                        uri="file:///srv/report.txt",
                        name="report",
                        description="A linked report.",
                        mime_type="text/plain",
                    ),
                    types.EmbeddedResource(
                        resource=types.TextResourceContents(
                            uri="memo://note", mime_type="text/plain", text="an embedded note"
                        )
                    ),
                    types.EmbeddedResource(
                        resource=types.BlobResourceContents(
                            uri="memo://blob",
                            mime_type="application/octet-stream",
                            blob=base64.b64encode(b"\x00\x01\x02").decode(),
                        )
                    ),
                ]
            )
        n = 1 if params.name == "structured" else "one"
        return types.CallToolResult(
            content=[types.TextContent(text=f'{{"n": {n!r}}}')],
            structured_content={"n": n},
        )

    return Server("media", on_list_tools=list_tools, on_call_tool=call_tool)


def log_flood() -> Server:
    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool("noisy")])

    async def call_tool(ctx, params):
        for i in range(5000):
            await ctx.session.send_log_message(
                level="info", data=f"log line {i}", related_request_id=ctx.request_id
            )
        return text("done")

    return Server("log-flood", on_list_tools=list_tools, on_call_tool=call_tool)


def asks() -> Server:
    question = [types.SamplingMessage(role="user", content=types.TextContent(text="Say hi."))]
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[tool("ask_sampling"), tool("ask_elicitation"), tool("ask_roots")]
        )

    async def legacy(ctx, name: str) -> str:
        """Sends the request over the session; what came back, as text."""
        try:
            if name == "ask_sampling":
                got = await ctx.session.create_message(messages=question, max_tokens=16)
            elif name == "ask_elicitation":
                got = await ctx.session.elicit_form("Your answer?", schema)
            else:
                got = await ctx.session.list_roots()
        except Exception as error:  # the client's refusal is the point
            return f"error: {type(error).__name__}: {error}"
        return "result: " + got.model_dump_json(by_alias=True, exclude_none=True)

    def input_request(name: str):
        if name == "ask_sampling":
            return types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(messages=question, max_tokens=16)
            )
        if name == "ask_elicitation":
            return types.ElicitRequest(
                params=types.ElicitRequestFormParams(message="Your answer?", requested_schema=schema)
            )
        return types.ListRootsRequest()

    async def call_tool(ctx, params):
        if params.input_responses:
            return text("responses: " + repr(params.input_responses))
        if ctx.session.can_send_request:
            return text(await legacy(ctx, params.name))
        return types.InputRequiredResult(
            input_requests={"ask": input_request(params.name)}, request_state="asked"
        )

    return Server("asks", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    modes = {
        "many-tools": lambda: many_tools(int(args[0])),
        "big-result": lambda: big_result(int(args[0])),
        "bad-tools": bad_tools,
        "media": media,
        "log-flood": log_flood,
        "asks": asks,
    }
    if mode not in modes:
        raise SystemExit(f"unknown mode {mode!r}; one of {', '.join(modes)}")
    serve_stdio(modes[mode]())


if __name__ == "__main__":
    main()
