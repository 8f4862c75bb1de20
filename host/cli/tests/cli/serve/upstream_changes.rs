//! An upstream MCP server's own tool changes, through the gateway: the
//! `mcp` plugin declares `tests/mcp/servers/changing.py` (on the venv's
//! Python), whose tool `mutate` changes the server's tools and, asked to,
//! says so (`notifications/tools/list_changed` on its session and on its
//! `subscriptions/listen` streams).
//!
//! - When the server says its tools changed, the gateway lists them again
//!   and tells its clients (over stdio, and over HTTP at 2025-11-25 and
//!   2026-07-28); when it changes them silently, clients hear nothing.
//!   Either way the pins rule: the pinned definitions are shown, and the
//!   tool that went is refused.
//! - `serve --watch` looks at the lock too: after `pins update` in another
//!   process, the host is built again with the new pins, and clients are
//!   told and see the new tool.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::super::{npm, shared_cache, venv};
use super::{Gateway, client};

/// How long a client waits for a notification that must come.
const HEARD_WITHIN: u64 = 20;

/// How long a client waits for one that must not come.
const SILENT_FOR: u64 = 2;

/// Writes `dir/tiny-harness.toml`: the mcp plugin with `changing.py` as
/// server `changing`, its state and calls files in `dir`.
fn config(dir: &Path) -> PathBuf {
    let python = venv::python().display().to_string();
    let servers = npm::servers_dir().canonicalize().unwrap();
    let script = servers.join("servers/changing.py").display().to_string();
    let config = dir.join("tiny-harness.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins.mcp]\npath = \"builtin:mcp\"\n\n[plugins.mcp.grants]\n\
             exec = [{{ program = {python:?}, read = [{servers:?}], env = [\"STATE_FILE\", \"CALLS_FILE\"] }}]\n\
             dirs = [{{ host = {dir:?}, guest = \"/w\", mode = \"read-write\" }}]\n\n\
             [plugins.mcp.config.mcpServers.changing]\ncommand = {python:?}\nargs = [{script:?}]\n\
             env = {{ STATE_FILE = {state:?}, CALLS_FILE = {calls:?} }}\n",
            servers = servers.display().to_string(),
            dir = dir.display().to_string(),
            state = dir.join("state").display().to_string(),
            calls = dir.join("calls").display().to_string(),
        ),
    )
    .unwrap();
    config
}

/// A silent change (the client must hear nothing), a change the server
/// tells of (the client must hear it), then what the client is shown and
/// may call.
fn steps() -> Value {
    json!([
        ["changed_after", ["call", "mcp__changing.mutate", {"to": "description", "notify": false}], SILENT_FOR],
        ["changed_after", ["call", "mcp__changing.mutate", {"to": "removed", "notify": true}], HEARD_WITHIN],
        ["describe"],
        ["call", "mcp__changing.target", {}],
    ])
}

/// Checks the answers to [`steps`]; `log` is the gateway's, for failures.
fn check(answer: &Value, version: &str, log: &dyn Fn() -> String) {
    assert_eq!(answer["version"], version, "{answer}");
    let steps = answer["steps"].as_array().unwrap();
    for step in &steps[..2] {
        assert_eq!(step["is_error"], false, "{answer}\n{}", log());
        assert!(
            step["text"].as_str().unwrap().contains("mutated"),
            "{answer}"
        );
    }
    assert_eq!(
        steps[0]["changed"],
        false,
        "{version}: a change the server kept to itself was announced: {answer}\n{}",
        log()
    );
    assert_eq!(
        steps[1]["changed"],
        true,
        "{version}: the server's list_changed did not reach the client within {HEARD_WITHIN} s: {answer}\n{}",
        log()
    );
    // The pins rule: the tool that went is still shown as pinned (never
    // the description the server gave it in between) and is refused.
    assert_eq!(
        steps[2]["mcp__changing.target"], "Returns target.",
        "{answer}"
    );
    let refused = &steps[3];
    assert_eq!(refused["is_error"], true, "{answer}\n{}", log());
    assert_eq!(
        refused["meta"]["io.tiny-harness/code"], "schema_changed",
        "{answer}"
    );
}

#[test]
fn an_upstream_servers_list_changed_reaches_clients_after_its_relist_and_silence_stays_silent() {
    // Streamable HTTP, both revisions, one gateway (so one upstream
    // session for both clients).
    let dir = tempfile::tempdir().unwrap();
    config(dir.path());
    let gateway = Gateway::start(dir.path(), &[]);
    for (mode, version) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let answer = client(json!({
            "mode": mode, "url": gateway.url(), "steps": steps(),
        }));
        check(&answer, version, &|| gateway.log());
    }
    // Passed on once per notification, after the re-list, which found the
    // tool gone (and, for the second client, the description back).
    let log = gateway.log();
    let passed: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("outcome=\"upstream_changed\""))
        .collect();
    assert_eq!(passed.len(), 2, "{log}");
    assert!(
        passed
            .iter()
            .all(|l| l.contains("mcp/changing said its tools changed") && l.contains("changed=1")),
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
    check(&answer, "2025-11-25", &|| {
        "(stdio: serve's log is the client's stderr)".to_owned()
    });
}

#[test]
fn watch_rebuilds_the_host_after_pins_update_elsewhere_and_tells_clients() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let gateway = Gateway::start(dir.path(), &["--watch"]);
    // The start pinned what the server listed then. Now it lists one more
    // tool, without telling anyone: not callable until accepted.
    std::fs::write(dir.path().join("state"), "added").unwrap();
    let pins_update = json!([
        "run",
        [
            env!("CARGO_BIN_EXE_tiny-harness"),
            "--config",
            config.display().to_string(),
            "pins",
            "update"
        ],
        {"TINY_HARNESS_CACHE_DIR": shared_cache().display().to_string()},
    ]);
    let answer = client(json!({
        "mode": "2026-07-28", "url": gateway.url(),
        "steps": [
            ["list"],
            ["changed_after", pins_update, HEARD_WITHIN],
            ["list"],
            ["call", "mcp__changing.newcomer", {}],
        ],
    }));
    let steps = answer["steps"].as_array().unwrap();
    let log = gateway.log();
    assert!(
        !steps[0]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__changing.newcomer")),
        "{answer}"
    );
    let updated = &steps[1];
    assert_eq!(updated["status"], 0, "pins update failed: {updated}");
    assert_eq!(
        updated["changed"], true,
        "no list_changed within {HEARD_WITHIN} s of pins update: {answer}\n{log}"
    );
    assert!(
        steps[2]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__changing.newcomer")),
        "{answer}\n{log}"
    );
    let called = &steps[3];
    assert_eq!(called["is_error"], false, "{answer}\n{log}");
    assert!(
        called["text"].as_str().unwrap().contains("newcomer"),
        "{answer}"
    );
    assert!(log.contains("outcome=\"reloaded\""), "{log}");
}
