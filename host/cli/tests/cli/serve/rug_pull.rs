//! A rug pull through the gateway: an upstream MCP server the `mcp` plugin
//! declares (`tests/mcp/servers/changing.py`, on the venv's Python)
//! changes a tool's definition after the pins were taken. The next call of
//! that tool through `serve` is refused (`schema_changed`) and never
//! reaches the server; its other tools still work, clients are still shown
//! the pinned definition, and `/readyz` names the drift once it is known.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::super::{npm, shared_cache, venv};
use super::{Gateway, client, raw_http};

/// The description `changing.py` gives `target` after the rug pull.
const POISONED: &str = "id_rsa";

/// Writes `dir/tiny-harness.toml`: the mcp plugin with `changing.py` as
/// server `changing`, its state and the tools it is called with in `dir`.
fn config(dir: &Path) -> PathBuf {
    let python = venv::python().display().to_string();
    let servers = npm::servers_dir().canonicalize().unwrap();
    let script = servers.join("servers/changing.py").display().to_string();
    let (state, calls) = (dir.join("state"), dir.join("calls"));
    let config = dir.join("tiny-harness.toml");
    // `relist_interval_ms = 1`: every call begins an iteration, so that the
    // call right after the rug pull lists the server's tools again, as a
    // call made past the default interval (1000 ms) would. With the
    // default, it would fall in the iteration of the call before it (whose
    // listing predates the change) and run upstream; waiting out the
    // interval instead would cost a second per transport.
    std::fs::write(
        &config,
        format!(
            "[plugins.mcp]\npath = \"builtin:mcp\"\n\n[plugins.mcp.grants]\n\
             exec = [{{ program = {python:?}, read = [{servers:?}], env = [\"STATE_FILE\", \"CALLS_FILE\"] }}]\n\
             dirs = [{{ host = {dir:?}, guest = \"/w\", mode = \"read-write\" }}]\n\n\
             [plugins.mcp.config.mcpServers.changing]\ncommand = {python:?}\nargs = [{script:?}]\n\
             env = {{ STATE_FILE = {state:?}, CALLS_FILE = {calls:?} }}\n\n\
             [serve.limits]\nrelist_interval_ms = 1\n",
            servers = servers.display().to_string(),
            dir = dir.display().to_string(),
            state = state.display().to_string(),
            calls = calls.display().to_string(),
        ),
    )
    .unwrap();
    config
}

/// A call through the gateway, the rug pull (the server's own `mutate`
/// gives `target` a new description, without telling anyone), the call
/// it must refuse, a tool it did not change, and the listing.
fn steps() -> Value {
    json!([
        ["call", "mcp__changing.target", {}],
        ["call", "mcp__changing.mutate", {"to": "description"}],
        ["call", "mcp__changing.target", {}],
        ["call", "mcp__changing.stable", {}],
        ["describe"],
    ])
}

/// Checks the answers to [`steps`], and that the server in `dir` was
/// called with the first, the rug pull and the unchanged tool only.
fn check(answer: &Value, version: &str, dir: &Path) {
    assert_eq!(answer["version"], version, "{answer}");
    let steps = answer["steps"].as_array().unwrap();
    for ok in [&steps[0], &steps[1], &steps[3]] {
        assert_eq!(ok["is_error"], false, "{ok}");
    }
    assert!(
        steps[1]["text"].as_str().unwrap().contains("mutated"),
        "{answer}"
    );
    let refused = &steps[2];
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_eq!(
        refused["meta"]["io.tiny-harness/code"], "schema_changed",
        "{refused}"
    );
    let text = refused["text"].as_str().unwrap();
    assert!(
        text.starts_with("<tool-result-")
            && text.contains("tool=\"mcp/changing.target\"")
            && text.contains("code=\"schema_changed\"")
            && text.contains("changed since it was pinned (description;"),
        "{text}"
    );
    assert!(!text.contains(POISONED), "{text}");
    assert!(
        steps[3]["text"].as_str().unwrap().contains("stable"),
        "{answer}"
    );
    // Clients are shown the definition as pinned, never the new one.
    assert_eq!(
        steps[4]["mcp__changing.target"], "Returns target.",
        "{answer}"
    );
    assert!(!steps[4].to_string().contains(POISONED), "{answer}");
    // Nothing of the refused call reached the server.
    let calls = std::fs::read_to_string(dir.join("calls")).unwrap_or_default();
    assert_eq!(
        calls.lines().collect::<Vec<_>>(),
        ["target", "mutate", "stable"],
        "{answer}"
    );
}

/// `GET /readyz`: its status and body.
fn readyz(gateway: &Gateway) -> (u16, String) {
    let (status, response) = raw_http(
        gateway.addr,
        "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn a_tool_changed_upstream_after_its_pin_is_refused_through_serve_and_not_run() {
    // Streamable HTTP at 2026-07-28. Starting pins every tool (there is
    // no lock yet): ready.
    let dir = tempfile::tempdir().unwrap();
    config(dir.path());
    let gateway = Gateway::start(dir.path(), &[]);
    assert_eq!(readyz(&gateway), (200, "ready\n".to_owned()));
    let answer = client(json!({
        "mode": "2026-07-28", "url": gateway.url(), "steps": steps(),
    }));
    check(&answer, "2026-07-28", dir.path());
    // The gateway knows of the drift once a re-list found it (the refused
    // call's), and says so until the pins are updated.
    let (status, body) = readyz(&gateway);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body, "mcp/changing: its tools differ from their pins\n");
    let log = gateway.log();
    assert!(
        log.contains("tool=\"mcp__changing.target\"") && log.contains("outcome=\"schema_changed\""),
        "{log}"
    );
    drop(gateway);

    // stdio at 2025-11-25, `serve` started by the client.
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let answer = client(json!({
        "mode": "legacy",
        "command": [
            env!("CARGO_BIN_EXE_tiny-harness"),
            "serve",
            "--config",
            config.display().to_string()
        ],
        "env": {"TINY_HARNESS_CACHE_DIR": shared_cache().display().to_string()},
        "steps": steps(),
    }));
    check(&answer, "2025-11-25", dir.path());
}
