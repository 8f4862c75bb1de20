"""Shared by the test servers: how a server is served, and how it tells the
test what happened to it.

Every server is configured by its arguments and environment only:

- ``MCP_ERA``: ``auto`` (the default) serves whichever protocol era the
  client opens with, as ``Server.run`` does: the stateless 2026-07-28
  revision when the first request carries its ``_meta`` envelope (rmcp's
  ``server/discover`` probe does), else the ``initialize`` handshake.
  ``handshake`` serves only the handshake era (up to 2025-11-25), as a
  server built on an older SDK would: the probe is refused and the client
  falls back to ``initialize``.
- Files named by variables (``CALLS_FILE``, ``EVENTS_FILE``, ...) get one
  line per event, appended and flushed at once, so that a test can read
  them while the server runs (or after it died).
"""

import os
import warnings

import anyio
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

# The servers use deprecated features on purpose (sampling, roots, logging):
# keep their standard error for real failures.
warnings.filterwarnings("ignore")


def record(variable: str, line: str) -> None:
    """Appends ``line`` to the file named by the environment ``variable``, if set."""
    path = os.environ.get(variable)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()


def serve_stdio(server: Server) -> None:
    """Serves ``server`` on stdin and stdout until stdin closes."""
    era = os.environ.get("MCP_ERA", "auto")
    if era not in ("auto", "handshake"):
        raise SystemExit(f"MCP_ERA must be auto or handshake, not {era!r}")

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            options = server.create_initialization_options()
            if era == "handshake":
                async with server.lifespan(server) as state:
                    await serve_loop(
                        server, read_stream, write_stream, lifespan_state=state, init_options=options
                    )
            else:
                await server.run(read_stream, write_stream, options)

    anyio.run(main)


def text(value: str):
    """A ``tools/call`` result of one text part."""
    import mcp.types as types

    return types.CallToolResult(content=[types.TextContent(text=value)])
