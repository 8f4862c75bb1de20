"""A stdio MCP server with the tools the official conformance suite's
server scenarios call (``@modelcontextprotocol/conformance``, pinned in
``tests/conformance/package.json``), each doing what its scenario asks.

The suite calls them by bare names (``test_simple_text``, ...) on the
server under test; ``tiny-harness serve`` serves them from this server,
which the ``mcp`` plugin declares, under those names through a client's
``rename`` table (``host/cli/tests/cli/serve/conformance.rs``).

- ``test_simple_text``, ``test_image_content``, ``test_audio_content``,
  ``test_embedded_resource``, ``test_multiple_content_types``: one result
  of each content type (the 1x1 PNG and short WAV of ``flood.py``).
- ``test_error_handling``: a tool error (``isError``).
- ``test_tool_with_logging``: three ``info`` log messages 50 ms apart.
- ``test_tool_with_progress``: progress 0, 50 and 100 of 100, 50 ms apart,
  when the request carries a progress token.
- ``test_sampling``, ``test_elicitation``: ask the client (a host that
  refuses sampling and elicitation makes these fail, by design).
- ``json_schema_2020_12_tool``: an input schema with ``$schema``,
  ``$defs``, ``$ref`` and ``additionalProperties``.
"""

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server

from common import serve_stdio
from flood import PNG, wav


NO_ARGUMENTS = {"type": "object", "properties": {}}

SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def tools() -> list:
    plain = [
        ("test_simple_text", "Returns simple text."),
        ("test_image_content", "Returns an image."),
        ("test_audio_content", "Returns an audio clip."),
        ("test_embedded_resource", "Returns an embedded resource."),
        ("test_multiple_content_types", "Returns text, an image and a resource."),
        ("test_error_handling", "Always fails."),
        ("test_tool_with_logging", "Logs three messages while it runs."),
        ("test_tool_with_progress", "Reports progress while it runs."),
        ("test_elicitation", "Asks the user for input."),
    ]
    listed = [types.Tool(name=name, description=about, input_schema=NO_ARGUMENTS) for name, about in plain]
    listed.append(
        types.Tool(
            name="test_sampling",
            description="Asks the client's model.",
            input_schema={
                "type": "object",
                "properties": {"prompt": {"type": "string"}},
                "required": ["prompt"],
            },
        )
    )
    listed.append(
        types.Tool(
            name="json_schema_2020_12_tool",
            description="Tool with JSON Schema 2020-12 features",
            input_schema=SCHEMA_2020_12,
        )
    )
    return listed


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=tools())


def result(*content, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), is_error=is_error)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    name = params.name
    if name == "test_simple_text":
        return result(types.TextContent(text="This is a simple text response for testing."))
    if name == "test_image_content":
        return result(types.ImageContent(data=PNG, mime_type="image/png"))
    if name == "test_audio_content":
        return result(types.AudioContent(data=wav(), mime_type="audio/wav"))
    if name == "test_embedded_resource":
        return result(
            types.EmbeddedResource(
                resource=types.TextResourceContents(
                    uri="test://embedded-resource",
                    mime_type="text/plain",
                    text="This is an embedded resource content.",
                )
            )
        )
    if name == "test_multiple_content_types":
        return result(
            types.TextContent(text="Multiple content types test:"),
            types.ImageContent(data=PNG, mime_type="image/png"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text='{"test":"data","value":123}',
                )
            ),
        )
    if name == "test_error_handling":
        return result(types.TextContent(text="This tool intentionally returns an error for testing"), is_error=True)
    if name == "test_tool_with_logging":
        for i, said in enumerate(["Tool execution started", "Tool processing data", "Tool execution completed"]):
            if i:
                await anyio.sleep(0.05)
            await ctx.session.send_log_message(level="info", data=said, related_request_id=ctx.request_id)
        return result(types.TextContent(text="Logged three messages."))
    if name == "test_tool_with_progress":
        token = (ctx.meta or {}).get("progress_token")
        for i, done in enumerate([0, 50, 100]):
            if i:
                await anyio.sleep(0.05)
            if token is not None:
                await ctx.session.send_progress_notification(
                    token, done, total=100, related_request_id=ctx.request_id
                )
        return result(types.TextContent(text="Reported progress."))
    if name == "test_sampling":
        prompt = (params.arguments or {}).get("prompt", "")
        question = [types.SamplingMessage(role="user", content=types.TextContent(text=prompt))]
        got = await ctx.session.create_message(messages=question, max_tokens=100)
        return result(types.TextContent(text=f"LLM response: {getattr(got.content, 'text', '')}"))
    if name == "test_elicitation":
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
        got = await ctx.session.elicit_form("Please answer.", schema)
        return result(types.TextContent(text=f"Elicitation: {got.action}"))
    if name == "json_schema_2020_12_tool":
        return result(types.TextContent(text="Schema accepted."))
    raise ValueError(f"unknown tool {name}")


if __name__ == "__main__":
    serve_stdio(Server("conformance", on_list_tools=list_tools, on_call_tool=call_tool))
