//! A plugin marked `dev` (its author's, under development): rebuilt with
//! other tools, it is pinned again as it is at the next load, and the host
//! says what changed; a plugin not so marked is still held to the lock.

use std::path::Path;

use serde_json::json;
use tiny_harness_host::{Change, Host, HostBuilder, HostError, PluginSpec};

use crate::common::{call, error_code, plugin_wasm};

async fn load(dir: &Path, dev: bool, locked: bool) -> Result<Host, HostError> {
    let mut spec = PluginSpec::new("mine", dir.join("mine.wasm"));
    spec.dev = dev;
    HostBuilder::new()
        .lock_file(dir.join("mine.lock"))
        .locked(locked)
        .plugin(spec)
        .build()
        .await
}

/// "Rebuilds" the author's plugin as the component of `plugin`.
fn rebuild_as(dir: &Path, plugin: &str) {
    std::fs::copy(plugin_wasm(plugin), dir.join("mine.wasm")).unwrap();
}

#[tokio::test]
async fn a_dev_plugin_rebuilt_with_other_tools_is_pinned_again_and_says_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    rebuild_as(dir.path(), "hello");
    let host = load(dir.path(), true, false).await.unwrap();
    assert!(host.repinned().is_empty(), "a first load pins, as always");
    assert!(host.registry().get("mine/hello.greet").is_some());

    // Not marked dev, the rebuilt plugin is held to the lock: the tool it
    // no longer has is refused as changed, not merely unknown.
    rebuild_as(dir.path(), "fs");
    let held = load(dir.path(), false, false).await.unwrap();
    assert!(held.repinned().is_empty());
    let greet = call(&held, "mine/hello.greet", json!({"name": "Ada"})).await;
    assert_eq!(error_code(&greet), "schema_changed");
    drop(held);
    std::fs::remove_file(dir.path().join("mine.lock")).unwrap();
    rebuild_as(dir.path(), "hello");
    load(dir.path(), true, false).await.unwrap();
    rebuild_as(dir.path(), "fs");

    let host = load(dir.path(), true, false).await.unwrap();
    let told = host.repinned();
    let servers: Vec<&str> = told.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(servers, ["mine/hello", "mine/workspace"], "{told:?}");
    assert!(
        matches!(told[0].1.changed.as_slice(), [(pin, Change::Removed)] if pin.definition.name == "greet"),
        "{told:?}"
    );
    let added: Vec<&str> = told[1].1.added.iter().map(|t| t.name.as_str()).collect();
    assert!(
        added.contains(&"stat") && added.contains(&"read_file"),
        "{added:?}"
    );
    // Callable at once: the plugin runs it (and finds nothing granted).
    let stat = call(&host, "mine/workspace.stat", json!({"path": "."})).await;
    assert_ne!(error_code(&stat), "not_pinned");
    assert_eq!(
        error_code(&call(&host, "mine/hello.greet", json!({"name": "Ada"})).await),
        "unknown_tool"
    );
    drop(host);

    // The lock now pins the rebuilt plugin: a next load tells nothing, and
    // a host held to the lock refuses the plugin for being dev at all.
    assert!(
        load(dir.path(), true, false)
            .await
            .unwrap()
            .repinned()
            .is_empty()
    );
    let locked = load(dir.path(), true, true).await.unwrap_err();
    assert!(matches!(locked, HostError::Locked { .. }), "{locked}");
    assert!(load(dir.path(), false, true).await.is_ok());
}
