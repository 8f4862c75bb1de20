#!/usr/bin/env python3
"""Regenerates tests/retrieval/servers/*.json: installs each MCP server of
SERVERS at its pinned version from npm or PyPI, runs it over stdio, asks it
for tools/list and writes what it answered, with the package's name,
version and licence.

Needs node and npm (for the npm servers) and python3 3.11 or later with
venv (for the PyPI ones), and the two registries; nothing else (the MCP
client below is a few lines of JSON-RPC over stdio). Not run by CI.

    python3 tests/retrieval/collect.py                # every server
    python3 tests/retrieval/collect.py github time    # some of them
    python3 tests/retrieval/collect.py --work /tmp/x  # keep the installs

Tokens and URLs given to the servers are dummies: listing tools needs no
account, and no server is called. A server whose licence is not in
REDISTRIBUTABLE is still collected, into the file its name says, but
that file is ignored by git (servers/.gitignore): whoever wants it
runs this script.
"""

import argparse
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Licences under which the tool lists may be kept in the repository.
REDISTRIBUTABLE = {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "0BSD"}

# The reference servers' package.json says "SEE LICENSE IN LICENSE" but
# the package ships no such file; the LICENSE of the repository they are
# published from puts new code under Apache-2.0 and keeps earlier
# contributions under MIT.
REFERENCE = "Apache-2.0 AND MIT"

# Seconds a server has to start and answer.
TIMEOUT = 120


@dataclass
class Server:
    short: str
    registry: str  # "npm" or "pypi"
    package: str
    version: str
    # The command the package installs; by default its only one.
    bin: str | None = None
    # Arguments; "{dir}" is a scratch directory of the server's own.
    args: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    # Python interpreter for the venv (PyPI), when the package needs a
    # newer one than the default.
    python: str | None = None
    # Further requirements pinned beside it (PyPI), where the package's
    # own leave a broken set.
    pins: list = field(default_factory=list)
    # The licence, where the package's metadata only points at a file
    # the package does not ship (see README.md).
    licence: str | None = None


TOKEN = "dummy-token-for-listing-tools"

SERVERS = [
    # npm: the reference servers.
    Server("everything", "npm", "@modelcontextprotocol/server-everything", "2026.8.31",
           args=["stdio"], licence=REFERENCE),
    Server("filesystem", "npm", "@modelcontextprotocol/server-filesystem", "2026.8.31",
           args=["{dir}"], licence=REFERENCE),
    Server("memory", "npm", "@modelcontextprotocol/server-memory", "2026.8.31",
           env={"MEMORY_FILE_PATH": "{dir}/memory.jsonl"}, licence=REFERENCE),
    Server("sequential-thinking", "npm",
           "@modelcontextprotocol/server-sequential-thinking", "2026.8.31", licence=REFERENCE),
    Server("github", "npm", "@modelcontextprotocol/server-github", "2025.4.8",
           env={"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN}),
    Server("gitlab", "npm", "@modelcontextprotocol/server-gitlab", "2025.4.25",
           env={"GITLAB_PERSONAL_ACCESS_TOKEN": TOKEN}),
    Server("slack", "npm", "@modelcontextprotocol/server-slack", "2025.4.25",
           env={"SLACK_BOT_TOKEN": "xoxb-" + TOKEN, "SLACK_TEAM_ID": "T00000000"}),
    Server("brave-search", "npm", "@modelcontextprotocol/server-brave-search", "0.6.2",
           env={"BRAVE_API_KEY": TOKEN}),
    Server("puppeteer", "npm", "@modelcontextprotocol/server-puppeteer", "2025.5.12"),
    Server("postgres", "npm", "@modelcontextprotocol/server-postgres", "0.6.2",
           args=["postgresql://127.0.0.1:1/none"]),
    Server("google-maps", "npm", "@modelcontextprotocol/server-google-maps", "0.6.2",
           env={"GOOGLE_MAPS_API_KEY": TOKEN}),
    # npm: vendors' and community servers.
    Server("playwright", "npm", "@playwright/mcp", "0.0.86"),
    Server("notion", "npm", "@notionhq/notion-mcp-server", "2.5.2",
           env={"NOTION_TOKEN": "ntn_" + TOKEN}),
    Server("firecrawl", "npm", "firecrawl-mcp", "3.26.0",
           env={"FIRECRAWL_API_KEY": "fc-" + TOKEN}),
    Server("context7", "npm", "@upstash/context7-mcp", "4.1.1"),
    Server("desktop-commander", "npm", "@wonderwhy-er/desktop-commander", "0.2.52",
           bin="desktop-commander"),
    Server("mongodb", "npm", "mongodb-mcp-server", "3.0.4"),
    Server("chrome-devtools", "npm", "chrome-devtools-mcp", "1.11.0",
           bin="chrome-devtools-mcp"),
    Server("tavily", "npm", "tavily-mcp", "0.2.22", env={"TAVILY_API_KEY": "tvly-" + TOKEN}),
    Server("kubernetes", "npm", "mcp-server-kubernetes", "4.1.7"),
    Server("airtable", "npm", "airtable-mcp-server", "1.14.0",
           env={"AIRTABLE_API_KEY": "pat" + TOKEN}),
    Server("todoist", "npm", "@doist/todoist-mcp", "11.0.0", bin="todoist-mcp",
           env={"TODOIST_API_KEY": TOKEN}),
    Server("git-mcp", "npm", "@cyanheads/git-mcp-server", "2.15.3"),
    Server("playwright-ea", "npm", "@executeautomation/playwright-mcp-server", "1.0.12"),
    Server("hubspot", "npm", "@hubspot/mcp-server", "0.4.0",
           env={"PRIVATE_APP_ACCESS_TOKEN": TOKEN}),
    Server("elasticsearch", "npm", "@elastic/mcp-server-elasticsearch", "0.3.1",
           env={"ES_URL": "http://127.0.0.1:1", "ES_API_KEY": TOKEN}),
    Server("circleci", "npm", "@circleci/mcp-server-circleci", "0.20.0",
           env={"CIRCLECI_TOKEN": TOKEN}),
    Server("perplexity", "npm", "@perplexity-ai/mcp-server", "1.2.1",
           env={"PERPLEXITY_API_KEY": "pplx-" + TOKEN}),
    # PyPI.
    Server("time", "pypi", "mcp-server-time", "2026.10.19"),
    Server("fetch", "pypi", "mcp-server-fetch", "2026.10.24"),
    Server("git", "pypi", "mcp-server-git", "2026.10.19"),
    Server("sqlite", "pypi", "mcp-server-sqlite", "2025.4.25",
           args=["--db-path", "{dir}/test.db"], pins=["mcp==1.30.0"]),
    Server("atlassian", "pypi", "mcp-atlassian", "0.23.1",
           env={"JIRA_URL": "https://example.atlassian.net", "JIRA_USERNAME": "a@example.com",
                "JIRA_API_TOKEN": TOKEN, "CONFLUENCE_URL": "https://example.atlassian.net/wiki",
                "CONFLUENCE_USERNAME": "a@example.com", "CONFLUENCE_API_TOKEN": TOKEN}),
    Server("duckduckgo", "pypi", "duckduckgo-mcp-server", "0.7.0"),
    Server("arxiv", "pypi", "arxiv-mcp-server", "0.8.2",
           env={"ARXIV_STORAGE_PATH": "{dir}/papers"}),
    Server("clickhouse", "pypi", "mcp-clickhouse", "0.7.0",
           env={"CLICKHOUSE_HOST": "127.0.0.1", "CLICKHOUSE_USER": "default",
                "CLICKHOUSE_PASSWORD": ""}),
    Server("excel", "pypi", "excel-mcp-server", "2.2.2", args=["stdio"]),
    Server("obsidian", "pypi", "mcp-obsidian", "0.2.3", env={"OBSIDIAN_API_KEY": TOKEN}),
    Server("chroma", "pypi", "chroma-mcp", "0.2.6",
           args=["--client-type", "persistent", "--data-dir", "{dir}/chroma"],
           pins=["pydantic==2.10.6"]),
]


def fill(value: str, scratch: Path) -> str:
    return value.replace("{dir}", str(scratch))


def run(cmd, **kw):
    print("+", " ".join(map(str, cmd)), file=sys.stderr)
    subprocess.run(cmd, check=True, **kw)


# --- installing ---------------------------------------------------------


def install_npm(s: Server, work: Path) -> tuple[list[str], str | None]:
    prefix = work / "npm" / s.short
    prefix.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PUPPETEER_SKIP_DOWNLOAD="1", PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1",
               npm_config_cache=str(work / "npm-cache"))
    run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
         "--loglevel=error", f"{s.package}@{s.version}"], env=env, stdout=subprocess.DEVNULL)
    meta = json.loads((prefix / "node_modules" / s.package / "package.json").read_text())
    if meta["version"] != s.version:
        raise RuntimeError(f"installed {meta['version']}, not {s.version}")
    bins = meta.get("bin")
    if isinstance(bins, str):
        target = bins
    elif s.bin:
        target = bins[s.bin]
    else:
        (target,) = bins.values()
    script = prefix / "node_modules" / s.package / target
    licence = meta.get("license")
    if isinstance(licence, dict):
        licence = licence.get("type")
    return ["node", str(script)], licence


LICENCE_PROBE = r"""
import importlib.metadata as m, json, sys
d = m.distribution(sys.argv[1])
md = d.metadata
texts = [str(f.read_text()) for f in (d.files or [])
         if f.name.upper().startswith(("LICENSE", "LICENCE", "COPYING"))]
readme = md.get_payload() or ""
at = readme.find("## License")
if at >= 0:
    texts.append(readme[at + 10:])
print(json.dumps({"expression": md.get("License-Expression"), "license": md.get("License"),
                  "classifiers": [c for c in md.get_all("Classifier") or [] if "License" in c],
                  "texts": [t[:300] for t in texts],
                  "scripts": [e.name for e in d.entry_points if e.group == "console_scripts"]}))
"""


def spdx_of(found: dict) -> str | None:
    """The licence's SPDX id from the package's metadata: its expression,
    its short licence field, its classifiers, or its licence file."""
    if found["expression"]:
        return found["expression"]
    short = (found["license"] or "").strip()
    if short and "\n" not in short and len(short) < 40:
        return {"MIT License": "MIT", "Apache 2.0": "Apache-2.0",
                "Apache License 2.0": "Apache-2.0"}.get(short, short)
    words = " ".join(found["classifiers"] + [short[:200]] + found["texts"])
    for needle, spdx in [("MIT License", "MIT"), ("Apache", "Apache-2.0"),
                         ("BSD 3-Clause", "BSD-3-Clause"), ("GNU GENERAL PUBLIC", "GPL-3.0"),
                         ("Permission is hereby granted, free of charge", "MIT"),
                         ("licensed under the MIT License", "MIT")]:
        if needle in words:
            return spdx
    return None


def install_pypi(s: Server, work: Path) -> tuple[list[str], str | None]:
    venv = work / "venv" / s.short
    python = s.python or sys.executable
    if not (venv / "bin" / "python").exists():
        run([python, "-m", "venv", str(venv)])
    env = dict(os.environ, PIP_CACHE_DIR=str(work / "pip-cache"))
    run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
         f"{s.package}=={s.version}", *s.pins], env=env)
    out = subprocess.run([str(venv / "bin" / "python"), "-c", LICENCE_PROBE, s.package],
                         check=True, capture_output=True, text=True).stdout
    found = json.loads(out)
    scripts = found["scripts"]
    name = s.bin or (s.package if s.package in scripts else scripts[0])
    return [str(venv / "bin" / name)], spdx_of(found)


# --- listing tools ------------------------------------------------------


class Peer:
    """A server on stdio, spoken to in newline-delimited JSON-RPC."""

    def __init__(self, cmd, env, cwd, log):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log, env=env, cwd=cwd, start_new_session=True)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.buf = b""
        self.next_id = 0

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def line(self, deadline):
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                raise TimeoutError("no answer in time")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError(f"the server exited ({self.proc.wait()})")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + TIMEOUT
        while True:
            line = self.line(deadline).strip()
            if not line.startswith(b"{"):
                continue  # a server's stray log line
            msg = json.loads(line)
            if "method" in msg and "id" in msg:  # the server asks something
                result = {"roots": []} if msg["method"] == "roots/list" else {}
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            elif msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def close(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=5)
                return
            except ProcessLookupError:
                return
            except subprocess.TimeoutExpired:
                continue


KEEP = ("name", "title", "description", "inputSchema", "annotations")


def list_tools(cmd, env, cwd, log) -> list:
    peer = Peer(cmd, env, cwd, log)
    try:
        peer.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "retrieval-collect", "version": "1.0.0"}})
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools, cursor = [], None
        while True:
            page = peer.request("tools/list", {"cursor": cursor} if cursor else {})
            tools += page.get("tools", [])
            cursor = page.get("nextCursor")
            if not cursor:
                return [{k: t[k] for k in KEEP if k in t} for t in tools]
    finally:
        peer.close()


def collect(s: Server, work: Path, out: Path):
    cmd, licence = (install_npm if s.registry == "npm" else install_pypi)(s, work)
    if s.licence:
        licence = s.licence
    scratch = Path(tempfile.mkdtemp(prefix=f"{s.short}-", dir=work))
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TERM")}
    # A fixed hash seed: a Python server that lists a set in a schema
    # (a parameter's default, say) lists it in the same order each time.
    env.update(HOME=str(scratch), TMPDIR=str(scratch), PYTHONHASHSEED="0")
    env.update({k: fill(v, scratch) for k, v in s.env.items()})
    args = [fill(a, scratch) for a in s.args]
    with open(work / f"{s.short}.log", "wb") as log:
        tools = list_tools(cmd + args, env, scratch, log)
    tools.sort(key=lambda t: t["name"])
    doc = {"package": s.package, "registry": s.registry, "version": s.version,
           "licence": licence, "tools": tools}
    (out / f"{s.short}.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    ids = (licence or "").replace("(", " ").replace(")", " ").split()
    kept = bool(ids) and all(i in REDISTRIBUTABLE for i in ids if i not in ("AND", "OR"))
    if not kept:
        ignore = out / ".gitignore"
        listed = ignore.read_text().split() if ignore.exists() else []
        if f"{s.short}.json" not in listed:
            ignore.write_text("".join(f"{n}\n" for n in sorted(listed + [f"{s.short}.json"])))
    print(f"{s.short}: {len(tools)} tools, licence {licence}"
          + ("" if kept else " (not redistributable: ignored by git)"), file=sys.stderr)
    return kept


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("only", nargs="*", help="short names of the servers to collect")
    parser.add_argument("--work", type=Path, help="where to install (kept); default a temp dir")
    parser.add_argument("--out", type=Path, default=HERE / "servers")
    opts = parser.parse_args()
    unknown = set(opts.only) - {s.short for s in SERVERS}
    if unknown:
        parser.error(f"no such server: {', '.join(sorted(unknown))}")
    work = opts.work or Path(tempfile.mkdtemp(prefix="retrieval-collect-"))
    work.mkdir(parents=True, exist_ok=True)
    opts.out.mkdir(parents=True, exist_ok=True)
    failed, ignored = [], []
    try:
        for s in SERVERS:
            if opts.only and s.short not in opts.only:
                continue
            try:
                if not collect(s, work, opts.out):
                    ignored.append(s.short)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{s.short}: FAILED: {e} (log in {work})", file=sys.stderr)
                failed.append(s.short)
    finally:
        if opts.work is None and not failed:
            shutil.rmtree(work, ignore_errors=True)
    if ignored:
        print("not redistributable:", " ".join(ignored), file=sys.stderr)
    if failed:
        sys.exit(f"failed: {' '.join(failed)}")


if __name__ == "__main__":
    main()
