#!/usr/bin/env python3
"""The client the MCP conformance suite drives: the tiny-harness CLI itself.

The suite runs `client.py URL` once per scenario, with the scenario's name
in MCP_CONFORMANCE_SCENARIO and, for some, data in MCP_CONFORMANCE_CONTEXT.
This writes a host config declaring URL as the bundled mcp plugin's only
server, then does what a user does: `tools`, and `call` on every tool
listed, with arguments made from each tool's input schema. Nothing here
speaks MCP or OAuth: the binary (TINY_HARNESS_BIN) does all of it.

Exit status: the first failing command's, else 0.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

SERVER = "conformance"


# The Client ID Metadata Document the suite's authorization servers expect
# (a user who hosts one names its URL the same way).
METADATA_DOCUMENT = "https://conformance-test.local/client-metadata.json"


def config(url, scenario, context):
    """The host config for the server at `url`, and the environment its
    secrets come from: what a user writes for a server whose operator
    gave them a client (the scenario's context) or told them to use the
    client-credentials grant."""
    oauth = {"client_metadata_url": json.dumps(METADATA_DOCUMENT)}
    env = {}
    if context.get("client_id"):
        env["CONFORMANCE_CLIENT_ID"] = context["client_id"]
        oauth["client_id"] = json.dumps("${CONFORMANCE_CLIENT_ID}")
    if context.get("client_secret"):
        env["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        oauth["client_secret"] = json.dumps("${CONFORMANCE_CLIENT_SECRET}")
    if context.get("private_key_pem"):
        env["CONFORMANCE_PRIVATE_KEY"] = context["private_key_pem"]
        oauth["private_key"] = json.dumps("${CONFORMANCE_PRIVATE_KEY}")
        oauth["signing_algorithm"] = json.dumps(context.get("signing_algorithm", "ES256"))
    if "client-credentials" in scenario:
        oauth["grant"] = json.dumps("client_credentials")
    if context.get("idp_id_token"):
        # Enterprise-managed: whatever signed the person in hands over
        # their ID token; the identity provider is the enterprise's.
        env["CONFORMANCE_ID_TOKEN"] = context["idp_id_token"]
        oauth["grant"] = json.dumps("enterprise")
        oauth["identity_provider"] = "{ " + ", ".join([
            f"issuer = {json.dumps(context['idp_issuer'])}",
            f"token_endpoint = {json.dumps(context['idp_token_endpoint'])}",
            f"client_id = {json.dumps(context['idp_client_id'])}",
            'id_token = "${CONFORMANCE_ID_TOKEN}"',
        ]) + " }"
    lines = [
        "[plugins.mcp]",
        'path = "builtin:mcp"',
        "",
        "[plugins.mcp.grants]",
        'net = ["http://localhost:*", "http://127.0.0.1:*"]',
        f"env = {json.dumps(sorted(env))}",
        "",
        f"[plugins.mcp.config.mcpServers.{SERVER}]",
        f"url = {json.dumps(url)}",
        "oauth = { " + ", ".join(f"{k} = {v}" for k, v in oauth.items()) + " }",
    ]
    return "\n".join(lines) + "\n", env


def example(schema):
    """A value that the schema accepts, for the simple schemas tests use."""
    if not isinstance(schema, dict):
        return None
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind in ("number", "integer"):
        return 1
    if kind == "string":
        return "x"
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {
            name: example(properties.get(name, {}))
            for name in schema.get("required", [])
        }
    return None


LOGIN = "tiny-harness mcp login"

# How many times a person would log in again before giving up.
MAX_LOGINS = 3


def run(binary, config_path, *args):
    done = subprocess.run(
        [binary, "--config", config_path, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done


def asks_for_login(done):
    return LOGIN in done.stderr or LOGIN in done.stdout


def as_a_person(binary, config_path, logins, *args):
    """Runs a command; when its output says to log in, logs in (with the
    test browser) and runs it again, as a person would, a bounded number
    of times."""
    done = run(binary, config_path, *args)
    while asks_for_login(done) and logins[0] < MAX_LOGINS:
        logins[0] += 1
        login = run(binary, config_path, "mcp", "login", SERVER, "--wait", "30")
        if login.returncode != 0:
            return login
        done = run(binary, config_path, *args)
    return done


def main():
    url = sys.argv[-1]
    binary = os.environ["TINY_HARNESS_BIN"]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["BROWSER"] = f"{sys.executable} {os.path.join(here, 'browser.py')}"
    logins = [0]
    with tempfile.TemporaryDirectory() as home:
        path = os.path.join(home, "tiny-harness.toml")
        text, env = config(url, os.environ.get("MCP_CONFORMANCE_SCENARIO", ""), context)
        os.environ.update(env)
        with open(path, "w") as f:
            f.write(text)
        report = os.environ.get("TINY_HARNESS_LOGIN_FIRST")
        if report:
            # A person who logs in before anything else: what the login
            # said, how long it took, and what it left beside the config.
            started = time.monotonic()
            login = run(binary, path, "mcp", "login", SERVER, "--wait", "30")
            with open(report, "a") as f:
                f.write(json.dumps({
                    "scenario": os.environ.get("MCP_CONFORMANCE_SCENARIO", ""),
                    "code": login.returncode,
                    "stdout": login.stdout,
                    "stderr": login.stderr,
                    "seconds": time.monotonic() - started,
                    "files": sorted(os.listdir(home)),
                }) + "\n")
        listed = as_a_person(binary, path, logins, "tools", "--json")
        if listed.returncode != 0:
            return listed.returncode
        status = 0
        for tool in json.loads(listed.stdout):
            name = tool["name"]
            if not name.startswith(f"mcp/{SERVER}."):
                continue
            arguments = example(tool.get("input_schema") or {}) or {}
            called = as_a_person(binary, path, logins, "call", name, json.dumps(arguments))
            status = status or called.returncode
        return status


if __name__ == "__main__":
    sys.exit(main())
