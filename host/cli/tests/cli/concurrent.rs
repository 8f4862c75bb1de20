//! Commands that change the config or the lock, run at the same time in
//! one directory as real processes: every change lands, in either order,
//! and the files are whole (each edit is made under the file's edit lock,
//! on the file as read under it).

use std::process::Child;

use tiny_harness_oci::test_registry::Registry;

use crate::oci::{ok, project, run, start};
use crate::{fs_wasm, stderr, stdout, wait_live};

/// Waits for each `(name, child)`, requiring that it succeeded and said
/// `said` with its name.
fn all_succeed(children: Vec<(String, Child)>, said: &str) {
    for (name, child) in children {
        let output = wait_live(child);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{name}: {}{}",
            stdout(&output),
            stderr(&output)
        );
        assert!(stdout(&output).contains(&format!("{said} {name}")));
    }
}

#[test]
fn mcp_adds_at_once_all_land_in_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..8).map(|i| format!("server{i}")).collect();
    let children = names
        .iter()
        .map(|name| {
            let script = format!("echo {name}");
            let args = ["mcp", "add", name, "--", "/bin/sh", "-c", &script];
            (name.clone(), start(dir.path(), &args))
        })
        .collect();
    all_succeed(children, "added mcp server");
    let text = std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap();
    let config: toml::Table = toml::from_str(&text).unwrap();
    let servers = config["plugins"]["mcp"]["config"]["mcpServers"]
        .as_table()
        .unwrap();
    let mut found: Vec<&String> = servers.keys().collect();
    found.sort();
    assert_eq!(found, names.iter().collect::<Vec<_>>(), "{text}");
    for name in &names {
        assert_eq!(
            servers[name.as_str()]["args"][1].as_str(),
            Some(format!("echo {name}").as_str()),
            "{text}"
        );
    }
    // The config loads as a whole.
    ok(&run(dir.path(), &["plugins"], None));
}

#[test]
fn plugin_adds_at_once_both_land_with_their_pins() {
    let registry = Registry::start();
    let reference = registry.reference("plugins/fs:1.0");
    let dir = project();
    ok(&run(
        dir.path(),
        &["plugin", "publish", fs_wasm().to_str().unwrap(), &reference],
        None,
    ));
    let children = ["first", "second"]
        .map(|name| {
            let args = ["plugin", "add", name, &reference];
            (name.to_owned(), start(dir.path(), &args))
        })
        .into();
    all_succeed(children, "added plugin");
    let text = std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap();
    assert!(text.starts_with("# my tools\n"), "{text}");
    let config: toml::Table = toml::from_str(&text).unwrap();
    for name in ["first", "second"] {
        let path = config["plugins"][name]["path"].as_str().unwrap();
        assert!(path.starts_with("oci://"), "{text}");
    }
    // Both load, and a first run pins both into one lock.
    let tools = ok(&run(dir.path(), &["tools"], None));
    assert!(
        tools.contains("first/workspace.read_file") && tools.contains("second/workspace.read_file"),
        "{tools}"
    );
    let lock = std::fs::read_to_string(dir.path().join("tiny-harness.lock")).unwrap();
    let lock: serde_json::Value = serde_json::from_str(&lock).unwrap();
    assert!(lock["plugins"]["first"]["component"].is_string(), "{lock}");
    assert!(lock["plugins"]["second"]["component"].is_string(), "{lock}");
}
