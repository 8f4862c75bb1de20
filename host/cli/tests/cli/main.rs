//! The `tiny-harness` binary, run as a user runs it: real processes, the
//! real fs and hostile plugins, exit codes and output checked.
//!
//! Every run is bounded: a child still running after [`LIVENESS`] is
//! killed and the test fails, which is how a hang shows up.

// Every function here is a test or serves one: a failed unwrap is a
// failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod add;
mod bundled;
mod cases;
mod concurrent;
mod conformance;
mod docs;
mod doctor;
mod files;
mod inspect;
mod install;
mod install_pypi;
mod intrinsics;
mod journal;
mod login;
mod logs;
mod mcp;
#[path = "../../../../tests/all/common/npm.rs"]
mod npm;
mod npm_registry;
mod oci;
mod pins;
mod pip_index;
mod plugins;
#[path = "../../../../tests/all/common/procs.rs"]
mod procs;
mod programs;
mod providers;
mod replay;
mod scaffold;
mod sdks;
mod search;
mod serve;
mod terminal;
mod untrusted;
mod unusable;
#[path = "../../../../tests/all/common/venv.rs"]
mod venv;
mod wkg;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

/// How long a run may take before it counts as hung: far beyond any real
/// run (a cold compile of every plugin takes seconds), so that only a
/// process that never ends reaches it.
const LIVENESS: Duration = Duration::from_secs(60);

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fs_wasm() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/wasm-plugins/wasm32-wasip2/release"
    ))
    .join("fs.wasm")
}

fn hostile_wasm() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/wasm-plugins/wasm32-wasip2/release"
    ))
    .join("hostile.wasm")
}

/// A compile cache shared by this test process's runs, so that they never
/// write to the user's own.
fn shared_cache() -> &'static Path {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    CACHE.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// Runs the binary in `dir` with `args` (and `stdin`, if any).
fn run_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    run_with_cache(dir, args, stdin, shared_cache())
}

/// Runs the binary in `dir` with `args` (and `stdin`, if any), with its
/// compile cache in `cache`.
fn run_with_cache(dir: &Path, args: &[&str], stdin: Option<&str>, cache: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        // A child that refuses its input early closes the pipe: fine.
        match input.write_all(text.as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("stdin: {e}"),
            _ => {}
        }
    }
    drop(input);
    wait_live(child)
}

/// Waits for `child` and its output, killing it and failing the test if
/// it has not exited within [`LIVENESS`].
fn wait_live(child: Child) -> Output {
    wait_live_for(child, LIVENESS, "tiny-harness")
}

/// Waits for `child` (`what`, in the failure) and its output, killing it
/// and failing the test if it has not exited within `limit`.
fn wait_live_for(child: Child, limit: Duration, what: &str) -> Output {
    let pid = child.id();
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(child.wait_with_output());
    });
    match receive.recv_timeout(limit) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            panic!("{what} did not exit within {limit:?}: it hangs");
        }
    }
}

/// Makes a FIFO at `path` that nothing ever writes to.
fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .unwrap();
}

/// Asserts that `output` is a usage or config error: exit code 2, nothing
/// on standard output, and exactly one line on standard error that holds
/// every one of `needles`. Returns that line.
fn one_error_line(output: &Output, needles: &[&str]) -> String {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(output.stdout.is_empty(), "{}", stdout(output));
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(err.ends_with('\n') && !err.trim_end_matches('\n').contains('\n'));
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
    err
}

/// A directory holding `name.toml`, a config that loads the hostile plugin
/// with `extra` appended to its `[plugins.hostile]` table.
fn hostile_config(dir: &Path, name: &str, extra: &str) {
    std::fs::write(
        dir.join(format!("{name}.toml")),
        format!(
            "[plugins.hostile]\npath = {:?}\n{extra}",
            hostile_wasm().display().to_string()
        ),
    )
    .unwrap();
}

/// Whether `text` holds a character a terminal would act on: ESC, a
/// carriage return, a C1 control or a bidi override.
fn has_raw_controls(text: &str) -> bool {
    text.chars()
        .any(|c| matches!(c, '\u{1b}' | '\r' | '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}'))
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// A directory holding a config that grants fs a read-only `work/`.
fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    std::fs::write(
        dir.path().join("work/hello.txt"),
        "hello from the workspace\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("outside.txt"), "not granted\n").unwrap();
    let config = format!(
        "[plugins.fs]\npath = {:?}\n[plugins.fs.grants]\ndirs = [{{ host = \"work\", guest = \"/workspace\" }}]\n",
        fs_wasm().display().to_string()
    );
    std::fs::write(dir.path().join("tiny-harness.toml"), config).unwrap();
    dir
}

#[test]
fn the_readme_quick_start_call_works_from_the_repository_root() {
    let output = run_in(
        &workspace_root(),
        &["call", "fs/workspace.read_file", r#"{"path":"README.md"}"#],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let first_line = readme.lines().next().unwrap();
    assert!(text.starts_with("<tool-result-"), "{text}");
    assert!(text.contains("tool=\"fs/workspace.read_file\" call=\"cli-1\" status=\"ok\""));
    assert!(text.contains(first_line), "{text}");
}

#[test]
fn tools_lists_names_idempotency_plugin_and_schema_hash() {
    let dir = sandbox();
    let output = run_in(dir.path(), &["tools"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let read = text
        .lines()
        .find(|l| l.starts_with("fs/workspace.read_file "))
        .unwrap_or_else(|| panic!("{text}"));
    let columns: Vec<&str> = read.split_whitespace().collect();
    assert_eq!(columns[1], "yes");
    assert_eq!(columns[2], "fs");
    assert_eq!(columns[3].len(), 64);
    assert_eq!(text.lines().count(), 6, "a header and five tools:\n{text}");

    let output = run_in(dir.path(), &["tools", "--json"], None);
    assert_eq!(output.status.code(), Some(0));
    let tools: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 5);
    let read = tools
        .iter()
        .find(|t| t["name"] == "fs/workspace.read_file")
        .unwrap();
    assert_eq!(read["plugin"], "fs");
    assert_eq!(read["idempotent"], true);
    assert_eq!(read["input_schema_sha256"], columns[3]);
    let output_hash = read["output_schema_sha256"].as_str().unwrap();
    assert_eq!(output_hash.len(), 64);
    assert_ne!(output_hash, columns[3]);
    assert_eq!(read["output_schema"]["type"], "object");
    assert_eq!(read["annotations"]["read_only"], true);
}

#[test]
fn an_empty_config_has_no_tools() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.toml"), "").unwrap();
    let output = run_in(
        dir.path(),
        &["--config", "empty.toml", "tools", "--json"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap(),
        serde_json::json!([])
    );
}

#[test]
fn call_exit_codes_follow_the_outcome() {
    let dir = sandbox();
    let ok = run_in(
        dir.path(),
        &["call", "fs/workspace.read_file", r#"{"path":"hello.txt"}"#],
        None,
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("\nhello from the workspace\n"));

    let unknown = run_in(
        dir.path(),
        &["call", "fs/workspace.delete_everything"],
        None,
    );
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stdout(&unknown).contains("code=\"unknown_tool\""));

    let invalid = run_in(
        dir.path(),
        &["call", "fs/workspace.read_file", r#"{"path":1}"#],
        None,
    );
    assert_eq!(invalid.status.code(), Some(1));
    assert!(stdout(&invalid).contains("code=\"invalid_arguments\""));

    let outside = run_in(
        dir.path(),
        &[
            "call",
            "fs/workspace.read_file",
            r#"{"path":"../outside.txt"}"#,
        ],
        None,
    );
    assert_eq!(outside.status.code(), Some(1));
    assert!(!stdout(&outside).contains("not granted"));

    let from_stdin = run_in(
        dir.path(),
        &["call", "fs/workspace.stat", "-", "--id", "c-7"],
        Some(r#"{"path":"hello.txt"}"#),
    );
    assert_eq!(from_stdin.status.code(), Some(0), "{}", stderr(&from_stdin));
    assert!(stdout(&from_stdin).contains("call=\"c-7\""));
}

#[test]
fn call_json_is_machine_readable() {
    let dir = sandbox();
    let output = run_in(
        dir.path(),
        &[
            "call",
            "--json",
            "fs/workspace.read_file",
            r#"{"path":"hello.txt"}"#,
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0));
    let outcome: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcome["is_error"], false);
    assert_eq!(
        outcome["result"]["content"][0]["text"],
        "hello from the workspace\n"
    );
    assert_eq!(outcome["result"]["content"][1]["data"]["total_lines"], 1);

    let output = run_in(
        dir.path(),
        &[
            "call",
            "--json",
            "fs/workspace.read_file",
            r#"{"offset":0}"#,
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    let outcome: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcome["error"]["code"], "invalid_arguments");
    let pointers: Vec<&str> = outcome["error"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["instance_path"].as_str().unwrap())
        .collect();
    assert!(
        pointers.contains(&"/offset") && pointers.contains(&""),
        "{pointers:?}"
    );
}

#[test]
fn usage_and_config_errors_exit_2_with_one_line() {
    let dir = sandbox();
    let one_line = |output: &Output, needle: &str| {
        assert_eq!(output.status.code(), Some(2), "{}", stderr(output));
        let err = stderr(output);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
        assert!(output.stdout.is_empty());
    };

    let bad_json = run_in(
        dir.path(),
        &["call", "fs/workspace.read_file", r#"{"path":"#],
        None,
    );
    one_line(&bad_json, "ARGS_JSON is not valid JSON");

    std::fs::write(
        dir.path().join("bad.toml"),
        "[plugins.fs]\npath = \"x.wasm\"\n\n[plugins.fs.limits]\nmemory_mb = 3\n",
    )
    .unwrap();
    let bad_config = run_in(dir.path(), &["--config", "bad.toml", "tools"], None);
    one_line(
        &bad_config,
        "bad.toml:5:1: plugins.fs.limits.memory_mb: unknown field `memory_mb`",
    );

    let missing = run_in(dir.path(), &["--config", "nope.toml", "tools"], None);
    one_line(&missing, "nope.toml: cannot read the config");

    std::fs::write(
        dir.path().join("nowasm.toml"),
        "[plugins.fs]\npath = \"gone.wasm\"\n",
    )
    .unwrap();
    let no_wasm = run_in(dir.path(), &["--config", "nowasm.toml", "tools"], None);
    one_line(&no_wasm, "plugin fs: cannot read");

    std::fs::write(
        dir.path().join("pinned.toml"),
        format!(
            "[plugins.fs]\npath = {:?}\nsha256 = \"{}\"\n",
            fs_wasm().display().to_string(),
            "ab".repeat(32)
        ),
    )
    .unwrap();
    let pinned = run_in(dir.path(), &["--config", "pinned.toml", "tools"], None);
    one_line(&pinned, "plugin fs: sha256 mismatch");

    let no_command = run_in(dir.path(), &[], None);
    assert_eq!(no_command.status.code(), Some(2));
}

#[test]
fn compiled_plugins_are_cached_unless_no_cache_is_given() {
    let dir = sandbox();
    let cache = dir.path().join("cache");
    let count = || std::fs::read_dir(&cache).map_or(0, |d| d.count());
    let args = ["call", "fs/workspace.read_file", r#"{"path":"hello.txt"}"#];

    let uncached = run_with_cache(
        dir.path(),
        &["--no-cache", args[0], args[1], args[2]],
        None,
        &cache,
    );
    assert_eq!(uncached.status.code(), Some(0), "{}", stderr(&uncached));
    assert_eq!(count(), 0, "--no-cache writes nothing");

    let first = run_with_cache(dir.path(), &args, None, &cache);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(count(), 1, "the first run stores the compiled fs plugin");
    let second = run_with_cache(dir.path(), &args, None, &cache);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert_eq!(count(), 1);
    assert!(stdout(&second).contains("hello from the workspace"));

    // Without TINY_HARNESS_CACHE_DIR the cache is under XDG_CACHE_HOME;
    // an empty TINY_HARNESS_CACHE_DIR turns it off.
    let xdg = dir.path().join("xdg");
    let run = |cache_var: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tiny-harness"));
        command
            .args(args)
            .current_dir(dir.path())
            .env("XDG_CACHE_HOME", &xdg)
            .env_remove("TINY_HARNESS_CACHE_DIR");
        if let Some(value) = cache_var {
            command.env("TINY_HARNESS_CACHE_DIR", value);
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    };
    run(Some(""));
    assert!(
        !xdg.exists(),
        "an empty TINY_HARNESS_CACHE_DIR writes nothing"
    );
    run(None);
    assert_eq!(
        std::fs::read_dir(xdg.join("tiny-harness")).unwrap().count(),
        1
    );
}
