//! Programs the command line starts for a plugin: a `tiny-harness` killed
//! with SIGKILL cannot clean up, so the next one to start kills what it
//! left.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::procs::{marker, pids_with};
use super::{run_in, shared_cache};

fn shell_wasm() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/wasm-plugins/wasm32-wasip2/release"
    ))
    .join("shell.wasm")
}

fn wait_for(what: &str, until: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !until() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn what_a_killed_host_left_running_is_killed_by_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("cli-sigkill");
    std::fs::write(
        dir.path().join("shell.toml"),
        format!(
            "[plugins.shell]\npath = {:?}\n[plugins.shell.grants]\nexec = [{{ program = \"sh\", env = [\"TINY_HARNESS_TEST_MARKER\"] }}]\n\
             [plugins.shell.config]\nenv = {{ TINY_HARNESS_TEST_MARKER = {marker:?} }}\n",
            shell_wasm().display().to_string()
        ),
    )
    .unwrap();
    // A program that also leaves its process group, so only its control
    // group still knows it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args([
            "--config",
            "shell.toml",
            "call",
            "shell/exec.run",
            r#"{"program": "sh", "args": ["-c", "setsid sleep 60 < /dev/null > /dev/null 2>&1 & sleep 60"]}"#,
        ])
        .current_dir(dir.path())
        .env("TINY_HARNESS_CACHE_DIR", shared_cache())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("both sleepers", || pids_with(&marker).len() >= 3);
    child.kill().unwrap();
    child.wait().unwrap();
    // The host could not clean up: its programs are still there. Looked
    // at at once: any host that starts meanwhile (another test's, in this
    // same control group) sweeps them, as the next one below does, so a
    // wait here would race the other tests.
    assert!(pids_with(&marker).len() >= 2, "{:?}", pids_with(&marker));

    let output = run_in(dir.path(), &["--config", "shell.toml", "plugins"], None);
    assert_eq!(output.status.code(), Some(0));
    wait_for("the sleepers to be gone", || pids_with(&marker).is_empty());
}
