//! The plugins bundled in the binary (`path = "builtin:NAME"`): a config
//! that names them works in any directory, and they are pinned like files.

use sha2::{Digest, Sha256};

use super::{fs_wasm, one_error_line, run_in, stderr, stdout};

/// A config in `dir` loading the bundled fs plugin over `dir`, read-only.
fn bundled_fs(dir: &std::path::Path, extra: &str) {
    std::fs::write(
        dir.join("tiny-harness.toml"),
        format!(
            "[plugins.fs]\npath = \"builtin:fs\"\n{extra}\n[plugins.fs.grants]\n\
             dirs = [{{ host = \".\", guest = \"/workspace\", mode = \"read-only\" }}]\n\n\
             [plugins.fs.config]\nroot = \"/workspace\"\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_bundled_plugin_works_in_any_directory_and_is_pinned_like_a_file() {
    // A directory far from any checkout: nothing but the config and a file.
    let dir = tempfile::tempdir().unwrap();
    bundled_fs(dir.path(), "");
    std::fs::write(dir.path().join("note.txt"), "bundled and sandboxed\n").unwrap();
    let call = ["call", "fs/workspace.read_file", r#"{"path":"note.txt"}"#];
    let output = run_in(dir.path(), &call, None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("bundled and sandboxed"),
        "{}",
        stdout(&output)
    );
    // Still sandboxed: nothing outside its grant.
    let output = run_in(
        dir.path(),
        &[
            "call",
            "fs/workspace.read_file",
            r#"{"path":"../../etc/passwd"}"#,
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));

    // Its hash is the component's, shown and locked.
    let built = hex::encode(Sha256::digest(std::fs::read(fs_wasm()).unwrap()));
    let plugins = run_in(dir.path(), &["plugins", "--json"], None);
    let plugins: serde_json::Value = serde_json::from_slice(&plugins.stdout).unwrap();
    let fs = plugins
        .as_array()
        .and_then(|all| all.iter().find(|p| p["name"] == "fs"))
        .unwrap_or_else(|| panic!("{plugins}"));
    assert_eq!(fs["path"], "builtin:fs", "{fs}");
    assert_eq!(fs["sha256"], built.as_str(), "{fs}");
    let lock = std::fs::read_to_string(dir.path().join("tiny-harness.lock")).unwrap();
    assert!(lock.contains(&built), "{lock}");

    // A pin of another hash refuses it, as it would a file.
    bundled_fs(dir.path(), &format!("sha256 = \"{}\"\n", "0".repeat(64)));
    let output = run_in(dir.path(), &["tools"], None);
    one_error_line(&output, &["plugin fs", "sha256", &built]);
}

#[test]
fn an_unknown_bundled_plugin_is_refused_with_the_names_there_are() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tiny-harness.toml"),
        "[plugins.x]\npath = \"builtin:hello\"\n",
    )
    .unwrap();
    let output = run_in(dir.path(), &["tools"], None);
    one_error_line(
        &output,
        &[
            "plugin x",
            "\"hello\"",
            "builtin:fs, builtin:mcp, builtin:net, builtin:shell",
        ],
    );
}

#[test]
fn mcp_import_writes_the_bundled_mcp_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let claude = serde_json::json!({"mcpServers": {"t": {"command": "/bin/true"}}});
    std::fs::write(dir.path().join("claude.json"), claude.to_string()).unwrap();
    let output = run_in(dir.path(), &["mcp", "import", "claude.json"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let block = stdout(&output);
    assert!(block.contains("path = \"builtin:mcp\""), "{block}");
    // The block loads as it is, from this directory.
    std::fs::write(dir.path().join("imported.toml"), &block).unwrap();
    let output = run_in(
        dir.path(),
        &["--config", "imported.toml", "plugins", "--json"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("builtin:mcp"),
        "{}",
        stdout(&output)
    );
}
