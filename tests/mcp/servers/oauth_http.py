"""An MCP server over streamable HTTP (2025-11-25, JSON answers) that asks
for OAuth, with its own authorization server on the same port, standard
library only, for the login tests. Prints ``listening on PORT`` once it
listens on 127.0.0.1.

The resource is ``/mcp``; its protected-resource metadata is at
``/.well-known/oauth-protected-resource/mcp`` and names the authorization
server ``/as`` (metadata at ``/.well-known/oauth-authorization-server/as``,
endpoints ``/as/register``, ``/as/authorize``, ``/as/token``). The
authorization endpoint approves at once: it redirects to the client's
``redirect_uri`` with a code and the state.

Every request to ``/mcp`` needs a token the token endpoint issued;
``whoami`` answers the token's scopes. What goes wrong is chosen by the
environment:

- ``PRM_RESOURCE``: the resource the metadata names (another resource).
- ``TOKEN_MODE``: ``garbage`` (the token endpoint answers text that is no
  token response) or ``hang`` (it never answers).
- ``STATE_MODE``: ``wrong`` (the redirect carries another state).
- ``AUTHORIZE_MODE``: ``elsewhere`` (the redirect goes to another host).
- ``REJECT_FIRST``: the first token issued is refused as expired the
  first time it is used (a refresh then gets another).
- ``REJECT_FIRST_CALL``: the same, for the first ``tools/call`` (the
  session's handshake went through with that token).
- ``MACHINE_SECRET``: the token endpoint also grants ``client_credentials``
  to a client that presents this secret (any client id), without a
  refresh token.
- ``PLAIN_TOOL``: ``whoami`` has no annotations (it is not read-only,
  so not retried on a failure that may have let it act).
- ``REFRESH_MODE``: ``reject`` (a refresh answers ``invalid_grant``).
- ``EXPIRES_IN``: the ``expires_in`` of every token issued (else 3600).
- ``CALL_SCOPE``: the scope ``tools/call`` needs; a token without it gets
  ``403 insufficient_scope``.
- ``DISCOVER``: ``empty``: ``server/discover`` answers an empty result
  (else "method not found").
- ``GRANT_ONLY``: the only scopes the token endpoint grants, whatever is
  asked for (space-separated).
- ``STATIC_TOKEN``: a token valid from the start (scope ``read``), for a
  client that sends it as a static header.
- ``EVENTS_FILE``: a file that gets a line per event (``register``,
  ``authorize <scope>``, ``token <grant>``, ``mcp <method> <token>``).
"""

import base64
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ENV = os.environ.get
TOKENS = {}  # token -> scopes
REFRESH = {}  # refresh token -> scopes
CODES = {}  # code -> (scopes, challenge)
LOCK = threading.Lock()
COUNTER = [0]
REJECTED = set()


def event(line):
    if ENV("EVENTS_FILE"):
        with LOCK, open(ENV("EVENTS_FILE"), "a") as f:
            f.write(line + "\n")


def fresh(prefix):
    with LOCK:
        COUNTER[0] += 1
        return f"{prefix}-{COUNTER[0]}-{os.urandom(6).hex()}"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def base(self):
        return f"http://127.0.0.1:{self.server.server_port}"

    def send(self, status, body, headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def challenge(self, status, error=None, scope=None):
        parts = [f'resource_metadata="{self.base()}/.well-known/oauth-protected-resource/mcp"']
        if error:
            parts.append(f'error="{error}"')
        if scope:
            parts.append(f'scope="{scope}"')
        self.send(status, {"error": error or "invalid_token"},
                  [("www-authenticate", "Bearer " + ", ".join(parts))])

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            self.send(200, {"resource": ENV("PRM_RESOURCE") or f"{self.base()}/mcp",
                            "authorization_servers": [f"{self.base()}/as"],
                            "scopes_supported": ["read", "write"]})
        elif url.path == "/.well-known/oauth-authorization-server/as":
            base = f"{self.base()}/as"
            self.send(200, {"issuer": base, "authorization_endpoint": f"{base}/authorize",
                            "token_endpoint": f"{base}/token",
                            "registration_endpoint": f"{base}/register",
                            "response_types_supported": ["code"],
                            "grant_types_supported": ["authorization_code", "refresh_token"]
                            + (["client_credentials"] if ENV("MACHINE_SECRET") else []),
                            "code_challenge_methods_supported": ["S256"],
                            "token_endpoint_auth_methods_supported": ["none"]
                            + (["client_secret_basic", "client_secret_post"]
                               if ENV("MACHINE_SECRET") else []),
                            "scopes_supported": ["read", "write"]})
        elif url.path == "/as/authorize":
            scope = query.get("scope", "")
            event(f"authorize {scope}")
            code = fresh("code")
            CODES[code] = (scope.split(), query.get("code_challenge"))
            state = query.get("state", "")
            if ENV("STATE_MODE") == "wrong":
                state += "x"
            target = query.get("redirect_uri", "")
            if ENV("AUTHORIZE_MODE") == "elsewhere":
                target = "http://127.0.0.1:9/elsewhere"
            sep = "&" if "?" in target else "?"
            location = target + sep + urllib.parse.urlencode(
                {"code": code, "state": state, "iss": f"{self.base()}/as"})
            self.send_response(302)
            self.send_header("location", location)
            self.send_header("content-length", "0")
            self.end_headers()
        elif url.path == "/mcp":
            self.send(405, {"error": "no GET stream"})
        else:
            self.send(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        url = urllib.parse.urlparse(self.path)
        if url.path == "/as/register":
            event("register")
            request = json.loads(body or b"{}")
            self.send(201, {"client_id": fresh("client"),
                            "redirect_uris": request.get("redirect_uris", []),
                            "token_endpoint_auth_method": "none"})
        elif url.path == "/as/token":
            self.token(dict(urllib.parse.parse_qsl(body.decode())))
        elif url.path == "/mcp":
            self.mcp(json.loads(body or b"{}"))
        else:
            self.send(404, {"error": "not found"})

    def token(self, form):
        grant = form.get("grant_type")
        event(f"token {grant}")
        if ENV("TOKEN_MODE") == "hang":
            time.sleep(3600)
        if ENV("TOKEN_MODE") == "garbage":
            self.send(200, b"<html>not a token</html>")
            return
        if grant == "authorization_code":
            scopes, _ = CODES.pop(form.get("code"), (None, None))
            if scopes is None:
                self.send(400, {"error": "invalid_grant"})
                return
        elif grant == "refresh_token":
            if ENV("REFRESH_MODE") == "reject":
                self.send(400, {"error": "invalid_grant", "error_description": "expired"})
                return
            scopes = REFRESH.get(form.get("refresh_token"))
            if scopes is None:
                self.send(400, {"error": "invalid_grant"})
                return
        elif grant == "client_credentials" and ENV("MACHINE_SECRET"):
            secret = form.get("client_secret")
            basic = self.headers.get("authorization", "")
            if basic.startswith("Basic "):
                secret = base64.b64decode(basic[6:]).decode().partition(":")[2]
            if secret != ENV("MACHINE_SECRET"):
                self.send(401, {"error": "invalid_client"})
                return
            access = fresh("tok")
            TOKENS[access] = ["read"]
            # No refresh token (RFC 6749, 4.4.3): a new token is obtained.
            self.send(200, {"access_token": access, "token_type": "Bearer",
                            "expires_in": int(ENV("EXPIRES_IN", "3600")), "scope": "read"})
            return
        else:
            self.send(400, {"error": "unsupported_grant_type"})
            return
        if ENV("GRANT_ONLY") is not None:
            scopes = [s for s in scopes if s in ENV("GRANT_ONLY").split()]
        access, refresh = fresh("tok"), fresh("refresh")
        TOKENS[access] = scopes
        REFRESH[refresh] = scopes
        self.send(200, {"access_token": access, "token_type": "Bearer",
                        "expires_in": int(ENV("EXPIRES_IN", "3600")),
                        "refresh_token": refresh, "scope": " ".join(scopes)})

    def mcp(self, message):
        method = message.get("method", "")
        auth = self.headers.get("authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        event(f"mcp {method} {token}")
        if token not in TOKENS:
            self.challenge(401, scope="read")
            return
        first = ENV("REJECT_FIRST") or (ENV("REJECT_FIRST_CALL") and method == "tools/call")
        if first and token.startswith("tok-") and not REJECTED:
            REJECTED.add(token)
            del TOKENS[token]
            self.challenge(401, error="invalid_token")
            return
        scopes = TOKENS[token]
        need = ENV("CALL_SCOPE")
        if method == "tools/call" and need and need not in scopes:
            self.challenge(403, error="insufficient_scope", scope=" ".join(["read", need]))
            return
        if "id" not in message:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        ident = message["id"]
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"],
                      "capabilities": {"tools": {}},
                      "serverInfo": {"name": "oauth-http", "version": "1"}}
        elif method == "server/discover" and ENV("DISCOVER") == "empty":
            result = {}
        elif method == "tools/list":
            result = {"tools": [{"name": "whoami", "description": "The token's scopes.",
                                 "inputSchema": {"type": "object"},
                                 "annotations": {} if ENV("PLAIN_TOOL") else
                                 {"readOnlyHint": True}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "scopes: " + " ".join(scopes)}]}
        else:
            self.send(200, {"jsonrpc": "2.0", "id": ident,
                            "error": {"code": -32601, "message": "method not found"}})
            return
        self.send(200, {"jsonrpc": "2.0", "id": ident, "result": result},
                  [("mcp-session-id", "s1")])


def main():
    if ENV("STATIC_TOKEN"):
        TOKENS[ENV("STATIC_TOKEN")] = ["read"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"listening on {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
