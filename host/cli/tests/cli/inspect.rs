//! `plugin inspect`: a component described before anything is granted to
//! it, from the real components in `plugins/`.

use std::path::PathBuf;

use serde_json::Value;

use super::run_in;

fn wasm(name: &str) -> PathBuf {
    super::fs_wasm().with_file_name(format!("{name}.wasm"))
}

fn inspect(args: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec!["plugin", "inspect"];
    all.extend_from_slice(args);
    let out = run_in(dir.path(), &all, None);
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_plugin_is_described_with_its_hash_version_imports_and_tools() {
    let path = wasm("hello");
    let (code, out, err) = inspect(&[path.to_str().unwrap(), "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let seen: Value = serde_json::from_str(&out).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    {
        use sha2::Digest as _;
        let sha = hex::encode(sha2::Sha256::digest(&bytes));
        assert_eq!(seen["sha256"], sha.as_str());
    }
    assert_eq!(seen["bytes"], bytes.len());
    assert_eq!(seen["loads"], true);
    assert_eq!(seen["package_version"], "0.3.0");
    assert_eq!(seen["host_version"], "0.3.0");
    let exports: Vec<&str> = seen["exports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(exports, ["register", "call"]);
    let tools = seen["tools"].as_array().unwrap();
    let greet = tools
        .iter()
        .find(|t| t["server"] == "hello" && t["name"] == "greet")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(greet["input_schema"]["type"], "object");
    assert_eq!(seen["mcp_servers"], serde_json::json!([]));
}

#[test]
fn imports_say_which_grants_they_can_use_and_a_block_to_paste_follows() {
    let (code, out, err) = inspect(&[wasm("net").to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("wasi:http/outgoing-handler@0.2.12  can use net grants"),
        "{out}"
    );
    // Ready to paste: a grants table whose every line is commented out, one
    // per kind of grant its imports can use, in a form the config takes.
    let block: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("grants it can use"))
        .skip(1)
        .map(str::trim)
        .collect();
    assert_eq!(
        block,
        [
            "[plugins.net.grants]",
            "# env = [\"HOME\"]",
            "# net = [\"https://api.example.com\"]"
        ],
        "{out}"
    );
    let dir = tempfile::tempdir().unwrap();
    let uncommented: String = block
        .iter()
        .map(|l| format!("{}\n", l.trim_start_matches("# ")))
        .collect();
    std::fs::write(
        dir.path().join("t.toml"),
        format!("[plugins.net]\npath = \"builtin:net\"\n{uncommented}"),
    )
    .unwrap();
    let listed = super::run_in(dir.path(), &["--config", "t.toml", "tools"], None);
    assert_eq!(listed.status.code(), Some(0), "{}", super::stderr(&listed));
    assert!(out.contains("targets: tiny-harness:plugin@0.3.0"), "{out}");
    assert!(
        out.contains("http.get [read-only, idempotent, open-world]"),
        "{out}"
    );

    let (code, out, err) = inspect(&["builtin:shell", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let seen: Value = serde_json::from_str(&out).unwrap();
    let exec = seen["imports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "tiny-harness:plugin/exec@0.3.0")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(exec["needs"].as_str().unwrap().starts_with("exec grants"));
    assert_eq!(seen["expects"], Value::Null, "{out}");
}

/// A plugin that says what it expects (fs, with the SDK's `expects!`):
/// shown, put in the block to paste in place of the example, and in the
/// JSON; it grants nothing.
#[test]
fn what_a_plugin_says_it_expects_is_shown_and_fills_the_block() {
    let (code, out, err) = inspect(&["builtin:fs"]);
    assert_eq!(code, Some(0), "{err}");
    let dirs = "dirs = [{ host = \"HOST\", guest = \"/workspace\", mode = \"read-only\" }]";
    assert!(
        out.contains(&format!(
            "expects (what the plugin says it needs; only the config grants):\n  {dirs}\n"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("[plugins.fs.grants]\n  # {dirs}\n")),
        "{out}"
    );
    let (_, out, _) = inspect(&["builtin:fs", "--json"]);
    let seen: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        seen["expects"]["dirs"],
        serde_json::json!([{"guest": "/workspace", "mode": "read-only"}]),
        "{out}"
    );
}

#[test]
fn a_component_that_does_not_load_is_described_as_far_as_it_can_be() {
    // A WASI command, not a plugin: its imports and exports are read, and
    // why it does not load is said; exit code 1.
    let (code, out, err) = inspect(&[wasm("not_a_plugin").to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("exports: wasi:cli/run@"), "{out}");
    assert!(
        out.contains("targets: no tiny-harness:plugin interface"),
        "{out}"
    );
    let why = out
        .lines()
        .find(|l| l.starts_with("it does not load: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(why.contains("no export `call`"), "{why}");

    // Not WebAssembly at all: it does not load, so exit 1 as --help says,
    // with one line saying why, nothing on stdout.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("tool.wasm");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let (code, out, err) = inspect(&[script.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("plugin tool: ") && err.contains("not WebAssembly"),
        "{err}"
    );

    let (code, _, err) = inspect(&["builtin:nothing"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("the bundled ones are builtin:fs"), "{err}");
}
