//! The command line with MCP servers: stopped by a signal, it leaves no
//! server behind.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::procs::{marker, pids_with};
use super::{npm, shared_cache, wait_live};

fn wait_for(what: &str, until: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !until() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn config(dir: &Path, marker: &str) {
    std::fs::write(
        dir.join("mcp.toml"),
        format!(
            "[plugins.mcp]\npath = {:?}\n\n[plugins.mcp.grants]\nexec = [{{ program = \"node\", read = [{:?}], env = [\"TINY_HARNESS_TEST_MARKER\"] }}]\n\n\
             [plugins.mcp.config.mcpServers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
             env = {{ TINY_HARNESS_TEST_MARKER = {marker:?} }}\n",
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/wasm-plugins/wasm32-wasip2/release")).join("mcp.wasm").display().to_string(),
            npm::servers_dir().canonicalize().unwrap().display().to_string(),
            npm::everything_js().display().to_string(),
        ),
    )
    .unwrap();
}

#[test]
fn a_signal_stops_the_command_and_every_server_it_started() {
    for (signal, code) in [
        (rustix::process::Signal::TERM, 143),
        (rustix::process::Signal::INT, 130),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let marker = marker(&format!("cli-signal-{code}"));
        config(dir.path(), &marker);
        let child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
            .args([
                "--config",
                "mcp.toml",
                "call",
                "mcp/everything.trigger-long-running-operation",
                r#"{"duration": 60, "steps": 2}"#,
            ])
            .current_dir(dir.path())
            .env("TINY_HARNESS_CACHE_DIR", shared_cache())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for("the server to start", || !pids_with(&marker).is_empty());
        // The call is under way once the server has been listed twice (at
        // load and for the call's iteration); a moment either way is fine:
        // the signal must stop it wherever it is.
        let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
        let output = wait_live(child);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(String::from_utf8_lossy(&output.stderr).contains("stopped by SIG"));
        wait_for("the server to be gone", || pids_with(&marker).is_empty());
    }
}
