//! Hosts sharing one lock file: a host writes only what it changed, onto
//! the lock as it is on disk when it writes (read again under the lock's
//! edit lock), so what another host pinned meanwhile is kept.

use serde_json::Value;
use tiny_harness_host::{HostBuilder, PluginSpec};

use crate::common::plugin_wasm;

fn pinned_plugins(lock: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(lock).unwrap();
    let lock: Value = serde_json::from_str(&text).unwrap();
    lock["plugins"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_hosts_lock_write_keeps_what_another_host_pinned_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("shared.lock");
    let hello = plugin_wasm("hello");
    let first = HostBuilder::new()
        .plugin(PluginSpec::new("first", &hello))
        .lock_file(&lock)
        .build()
        .await
        .unwrap();
    assert_eq!(pinned_plugins(&lock), ["first"]);
    // Another host pins its plugin into the same lock.
    let _second = HostBuilder::new()
        .plugin(PluginSpec::new("second", &hello))
        .lock_file(&lock)
        .build()
        .await
        .unwrap();
    assert_eq!(pinned_plugins(&lock), ["first", "second"]);
    // The first host pins its servers again and writes the lock: the
    // second's pins stay.
    let done = first.reregister(None).await.unwrap();
    assert!(!done.is_empty());
    assert_eq!(pinned_plugins(&lock), ["first", "second"]);
    let text = std::fs::read_to_string(&lock).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    for plugin in ["first", "second"] {
        let servers = value["plugins"][plugin]["servers"].as_object().unwrap();
        assert!(!servers.is_empty(), "{plugin}: {text}");
    }
}
