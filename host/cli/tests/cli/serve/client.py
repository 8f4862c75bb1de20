"""Drives `tiny-harness serve` with the official Python SDK's client, as an
MCP client would: reads a JSON request from stdin, prints a JSON answer.

The request: {"mode": "legacy" | "2026-07-28" | "auto", "log_level": LEVEL?,
              "url": URL, "token": TOKEN?}  (streamable HTTP)
          or {"mode": ..., "command": [PROGRAM, ARG...]}  (stdio)
          with "steps": [["list"], ["call", NAME, ARGS], ...,
                         ["call_with_progress", NAME, ARGS],
                         ["cancel", NAME, ARGS, SECONDS], ["sleep", SECONDS],
                         ["replace", SRC, DST, SECONDS], ["describe"]]
The answer: {"version": ..., "steps": [...]}, one entry per step: a list
of tool names, a call's {"is_error", "text", "structured", "meta", "kinds",
"progress", "logs"} (each report [progress, total, message] and each log
message [level, data] the client got during the call, and its first embedded
resource {"uri", "mime_type", "text", "meta"} or null; "log_level" asks for
them at 2026-07-28, ["set_level", LEVEL] sets the session's level), for
"describe" each listed tool's description by its name, or for
"cancel" (the call abandoned after SECONDS, which sends the server
`notifications/cancelled`) whether it was still running then, for
"replace" (SRC copied over DST while listening for changes: on the session
at 2025-11-25, through `subscriptions/listen` at 2026-07-28) whether the
server said the tool list changed within SECONDS, and the same for
["changed_after", ACTION, SECONDS], listening while ACTION runs: either
["call", NAME, ARGS] (answered with "is_error" and "text" beside
"changed") or ["run", [PROGRAM, ARG...], ENV] (a program run to its end
with ENV added to the client's environment, answered with its "status"
and the end of its "output").
"""

import asyncio
import json
import sys
import time

import os
import shutil
import subprocess

import httpx2
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


async def heard_after(client, changed, act, seconds):
    """Runs ``act`` while listening for the tool list's change, and whether
    the server told of one within ``seconds``: on the session at
    2025-11-25, through ``subscriptions/listen`` at 2026-07-28 (only the
    subscription's own events count; the message handler may see them
    too, later)."""
    if client.protocol_version >= "2026":
        async with client.listen(tools_list_changed=True) as subscription:
            await act()
            try:
                async with asyncio.timeout(seconds):
                    async for _ in subscription:
                        return True
            except TimeoutError:
                return False
        return False
    changed.clear()
    await act()
    try:
        await asyncio.wait_for(changed.wait(), seconds)
        return True
    except TimeoutError:
        return False


async def run(request):
    if "command" in request:
        program, *args = request["command"]
        server = StdioServerParameters(command=program, args=args, env=request.get("env"))
    elif "token" in request:
        http = httpx2.AsyncClient(headers={"Authorization": "Bearer " + request["token"]})
        server = streamable_http_client(request["url"], http_client=http)
    else:
        server = request["url"]
    answers = []
    changed = asyncio.Event()
    logs = []

    async def on_log(params):
        logs.append([params.level, params.data])

    async def on_message(message):
        inner = getattr(message, "root", message)
        if isinstance(inner, types.ToolListChangedNotification):
            changed.set()

    async with Client(
        server,
        mode=request["mode"],
        cache=None,
        message_handler=on_message,
        logging_callback=on_log,
        log_level=request.get("log_level"),
    ) as client:
        for step in request["steps"]:
            if step[0] == "list":
                tools = await client.list_tools()
                answers.append([tool.name for tool in tools.tools])
            elif step[0] in ("call", "call_with_progress"):
                reports = []

                async def on_progress(progress, total, message):
                    reports.append([progress, total, message])

                callback = on_progress if step[0] == "call_with_progress" else None
                logs.clear()
                result = await client.call_tool(step[1], step[2], progress_callback=callback)
                answers.append(
                    {
                        "is_error": bool(result.is_error),
                        "text": "".join(getattr(c, "text", "") for c in result.content),
                        "structured": result.structured_content,
                        "meta": result.meta,
                        "kinds": [c.type for c in result.content],
                        "progress": reports,
                        "logs": list(logs),
                        "resource": next(
                            (
                                {
                                    "uri": str(c.resource.uri),
                                    "mime_type": c.resource.mime_type,
                                    "text": getattr(c.resource, "text", None),
                                    "meta": c.resource.meta,
                                }
                                for c in result.content
                                if c.type == "resource"
                            ),
                            None,
                        ),
                    }
                )
            elif step[0] == "cancel":
                try:
                    await asyncio.wait_for(client.call_tool(step[1], step[2]), step[3])
                    answers.append({"cancelled": False})
                except TimeoutError:
                    answers.append({"cancelled": True})
            elif step[0] == "replace":

                async def copy():
                    shutil.copyfile(step[1], step[2])

                answers.append({"changed": await heard_after(client, changed, copy, step[3])})
            elif step[0] == "changed_after":
                action, seconds = step[1], step[2]
                done = {}

                async def act():
                    if action[0] == "call":
                        result = await client.call_tool(action[1], action[2])
                        done["is_error"] = bool(result.is_error)
                        done["text"] = "".join(getattr(c, "text", "") for c in result.content)
                    else:
                        ran = await asyncio.to_thread(
                            subprocess.run,
                            action[1],
                            env={**os.environ, **action[2]},
                            capture_output=True,
                            text=True,
                            timeout=120,
                        )
                        done["status"] = ran.returncode
                        done["output"] = (ran.stdout + ran.stderr)[-4000:]

                heard = await heard_after(client, changed, act, seconds)
                answers.append({"changed": heard, **done})
            elif step[0] == "describe":
                tools = await client.list_tools()
                answers.append({tool.name: tool.description for tool in tools.tools})
            elif step[0] == "set_level":
                await client.set_logging_level(step[1])
                answers.append(None)
            elif step[0] == "sleep":
                time.sleep(step[1])
                answers.append(None)
        return {"version": client.protocol_version, "steps": answers}


print(json.dumps(asyncio.run(run(json.load(sys.stdin)))))
