//! `tiny-harness mcp install` of PyPI servers as `uvx` starts them
//! (mcp-server-time), with uv on the machine and without it: installed
//! once by pip, then run from the store, confined.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use super::install::{lock, text};
use super::{npm, stdout};

/// `tests/mcp/.uv/bin`, holding PyPI's uv (for its `uvx`), installed first
/// if it is missing.
fn uv_bin() -> PathBuf {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let venv = npm::servers_dir().join(".uv");
            let uvx = venv.join("bin/uvx");
            if !uvx.is_file() {
                let lock = std::fs::File::create(npm::servers_dir().join(".uv.lock")).unwrap();
                lock.lock().unwrap();
                if !uvx.is_file() {
                    let made = Command::new("/usr/bin/python3")
                        .args(["-m", "venv", "--clear"])
                        .arg(&venv)
                        .status()
                        .unwrap();
                    assert!(made.success());
                    let installed = Command::new(venv.join("bin/pip"))
                        .args(["install", "--quiet", "--require-hashes", "-r"])
                        .arg(npm::servers_dir().join("uv-requirements.txt"))
                        .status()
                        .unwrap();
                    assert!(installed.success(), "pip install uv failed");
                }
            }
            venv.join("bin")
        })
        .clone()
}

#[test]
fn a_pypi_server_as_uvx_starts_it_is_installed_and_runs_confined() {
    let dir = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        uv_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
            .args(args)
            .current_dir(dir.path())
            .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
            .env("PATH", &path)
            .output()
            .unwrap()
    };
    let add = run(&[
        "mcp",
        "add",
        "time",
        "--",
        "uvx",
        "mcp-server-time==2026.10.19",
        "--local-timezone",
        "UTC",
    ]);
    assert_eq!(add.status.code(), Some(0), "{}", text(&add));
    let install = run(&["mcp", "install"]);
    assert_eq!(install.status.code(), Some(0), "{}", text(&install));
    assert!(
        stdout(&install).contains("pypi mcp-server-time 2026.10.19 (sha256:"),
        "{}",
        text(&install)
    );
    let code = &lock(dir.path())["plugins"]["mcp"]["servers"]["time"]["code"];
    assert!(
        code["dependencies"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("mcp@")),
        "{code}"
    );
    let now = run(&["call", "mcp/time.get_current_time", r#"{"timezone":"UTC"}"#]);
    assert_eq!(now.status.code(), Some(0), "{}", text(&now));
    assert!(
        stdout(&now).contains("\"timezone\":\"UTC\""),
        "{}",
        text(&now)
    );
}

#[test]
fn a_pasted_uvx_server_installs_and_runs_on_a_machine_without_uv() {
    let dir = tempfile::tempdir().unwrap();
    // A PATH with python3 (pip installs the server) and no uv, whatever
    // this machine has.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink("/usr/bin/python3", bin.join("python3")).unwrap();
    let claude = serde_json::json!({"mcpServers": {"time": {
        "command": "uvx", "args": ["mcp-server-time==2026.10.19", "--local-timezone", "UTC"],
    }}});
    std::fs::write(dir.path().join("claude.json"), claude.to_string()).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
            .args(args)
            .current_dir(dir.path())
            .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
            .env("PATH", &bin)
            .output()
            .unwrap()
    };
    // `mcp add` takes it too, with the advice to install it.
    let added = run(&[
        "--config",
        "added.toml",
        "mcp",
        "add",
        "time",
        "--",
        "uvx",
        "mcp-server-time==2026.10.19",
    ]);
    assert_eq!(added.status.code(), Some(0), "{}", text(&added));
    assert!(text(&added).contains("mcp install"), "{}", text(&added));
    let written = std::fs::read_to_string(dir.path().join("added.toml")).unwrap();
    assert!(written.contains("{ program = \"uvx\" }"), "{written}");

    let block = run(&["mcp", "import", "claude.json"]);
    assert_eq!(block.status.code(), Some(0), "{}", text(&block));
    std::fs::write(dir.path().join("tiny-harness.toml"), &block.stdout).unwrap();

    // Before: the config loads; the server says what to run.
    let before = run(&["call", "mcp/time.get_current_time", r#"{"timezone":"UTC"}"#]);
    assert_eq!(before.status.code(), Some(1), "{}", text(&before));
    assert!(
        stdout(&before).contains("run tiny-harness mcp install time"),
        "{}",
        text(&before)
    );
    let plugins = stdout(&run(&["plugins"]));
    assert!(
        plugins.contains("exec unusable here: uvx (tiny-harness.toml:")
            && plugins.contains("program \"uvx\" was not found on PATH"),
        "{plugins}"
    );

    let install = run(&["mcp", "install"]);
    assert_eq!(install.status.code(), Some(0), "{}", text(&install));
    assert!(
        stdout(&install).contains("mcp/time: pypi mcp-server-time 2026.10.19 (sha256:"),
        "{}",
        text(&install)
    );
    // After: from its install, confined; uvx, which would not run
    // confined anyway, is not needed.
    let now = run(&["call", "mcp/time.get_current_time", r#"{"timezone":"UTC"}"#]);
    assert_eq!(now.status.code(), Some(0), "{}", text(&now));
    assert!(
        stdout(&now).contains("\"timezone\":\"UTC\""),
        "{}",
        text(&now)
    );
}
