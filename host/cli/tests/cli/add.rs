//! `tiny-harness mcp add`, as a newcomer uses it: in a fresh directory,
//! with real servers (npm's server-everything and server-filesystem run by
//! node, a Python server run by a venv's interpreter), then `tools` and
//! `call`, confined by default.

use std::path::Path;

use super::{npm, one_error_line, run_in, stderr, stdout, venv};

fn add(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["mcp", "add"];
    all.extend_from_slice(args);
    run_in(dir, &all, None)
}

fn text(output: &std::process::Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

#[test]
fn an_installed_npm_server_added_with_node_runs_confined_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    let js = npm::everything_js().display().to_string();
    let output = add(dir.path(), &["everything", "--", "node", &js, "stdio"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let review = stdout(&output);
    let package = npm::servers_dir().canonicalize().unwrap();
    assert!(
        review.contains(&format!("read {}", package.display())) && review.contains("network: none"),
        "{review}"
    );
    let config = std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap();
    assert!(config.contains("path = \"builtin:mcp\""), "{config}");
    let call = run_in(
        dir.path(),
        &["call", "mcp/everything.echo", r#"{"message":"added"}"#],
        None,
    );
    assert_eq!(call.status.code(), Some(0), "{}", text(&call));
    assert!(stdout(&call).contains("Echo: added"), "{}", stdout(&call));
    let plugins = stdout(&run_in(dir.path(), &["plugins"], None));
    assert!(plugins.contains("landlock"), "{plugins}");
}

#[test]
fn the_filesystem_server_reads_the_root_its_arguments_name_and_nothing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("inside.txt"), "granted words").unwrap();
    std::fs::write(dir.path().join("canary.txt"), "CANARY-NEVER-READ").unwrap();
    let js = npm::filesystem_js().display().to_string();
    let root_arg = root.display().to_string();
    let output = add(dir.path(), &["files", "--", "node", &js, &root_arg]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let root = root.canonicalize().unwrap();
    assert!(
        stdout(&output).contains(&format!("dir grant: {} (read-only", root.display())),
        "{}",
        stdout(&output)
    );
    let read = |path: &Path| {
        let arguments = serde_json::json!({ "path": path }).to_string();
        let output = run_in(
            dir.path(),
            &["call", "mcp/files.read_text_file", &arguments],
            None,
        );
        text(&output)
    };
    let inside = read(&root.join("inside.txt"));
    assert!(inside.contains("granted words"), "{inside}");
    let beside = read(&dir.path().canonicalize().unwrap().join("canary.txt"));
    assert!(!beside.contains("CANARY-NEVER-READ"), "{beside}");
    // Read-only: the grant holds even where the server would write.
    let arguments = serde_json::json!({"path": root.join("new.txt"), "content": "x"}).to_string();
    let wrote = run_in(
        dir.path(),
        &["call", "mcp/files.write_file", &arguments],
        None,
    );
    assert!(!root.join("new.txt").exists(), "{}", text(&wrote));
}

#[test]
fn a_python_server_added_with_its_venvs_interpreter_runs_confined() {
    let dir = tempfile::tempdir().unwrap();
    let python = venv::python().display().to_string();
    let script = npm::servers_dir().join("servers/changing.py");
    let state = dir.path().join("state");
    let env = format!("STATE_FILE={}", state.display());
    let output = add(
        dir.path(),
        &[
            "changing",
            "--env",
            &env,
            "--",
            &python,
            &script.display().to_string(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let call = run_in(dir.path(), &["call", "mcp/changing.stable", "{}"], None);
    assert_eq!(call.status.code(), Some(0), "{}", text(&call));
    assert!(stdout(&call).contains("stable"), "{}", stdout(&call));
}

#[test]
fn refusals_say_what_to_do_and_leave_the_config_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let missing = add(dir.path(), &["x", "--", "tiny-harness-no-such-server"]);
    one_error_line(&missing, &["server x was not added", "not found on PATH"]);
    assert!(!dir.path().join("tiny-harness.toml").exists());

    let first = add(dir.path(), &["x", "--", "/bin/sh", "-c", "true"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let before = std::fs::read(dir.path().join("tiny-harness.toml")).unwrap();
    let again = add(dir.path(), &["x", "--", "/bin/sh"]);
    one_error_line(&again, &["server x was not added", "in the config already"]);
    let bad = add(dir.path(), &["Bad/Name", "--", "/bin/sh"]);
    one_error_line(&bad, &["was not added", "a server name is"]);
    assert_eq!(
        std::fs::read(dir.path().join("tiny-harness.toml")).unwrap(),
        before
    );

    // A launcher that fetches at every start (npx comes with the npm the
    // MCP tests need) is added, with what to do.
    let fetched = add(dir.path(), &["fetched", "--", "npx", "-y", "some-server"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    assert!(
        stderr(&fetched).contains("will not start confined")
            && stderr(&fetched).contains("tiny-harness mcp install"),
        "{}",
        text(&fetched)
    );
}
