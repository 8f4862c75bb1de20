//! What a hostile stdio MCP server (`tests/mcp/servers/hostile.py`, raw
//! JSON-RPC) or a hostile plugin (`plugins/hostile`'s `exec_as_told`) gets
//! under the default confinement: no signal to the host or to any process
//! outside its own, no socket file outside its grants, no variable its exec
//! grant does not list, no secret quoted back, and no schema or protocol
//! version that stops the rest of the config. The terminal is tested from
//! the command line (`host/cli/tests/cli/terminal.rs`), under a real
//! pseudo-terminal.

use std::io::Read as _;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tiny_harness_host::{Host, HostBuilder};
use tiny_harness_mcp::State;

use crate::common::mcp::marker;
use crate::common::{call, error_code, hostile, py, text_of};

/// The hostile server with `env`, run by the venv's interpreter under the
/// tests' usual grants (`py::plugin`) but for the temp directory: it is
/// granted no directory at all.
fn server(env: &[(&str, &str)], marker: &str) -> tiny_harness_host::PluginSpec {
    let mut spec = py::plugin(json!({ "h": py::stdio("hostile", &[], env, marker) }));
    spec.grants.remove_dir("/tmp").unwrap();
    spec
}

/// Where a program stands towards its host and a bystander: unable to
/// signal them (`EPERM`: Landlock's signal scope), or unable even to name
/// them (in a PID namespace of its own, where the host keeps an ordinary
/// user's programs: no parent, and a bystander's pid names nothing).
fn unsignalled(report: &Value) {
    assert!(
        matches!(
            report["signal_parent"].as_str(),
            Some("EPERM" | "invisible")
        ),
        "{report}"
    );
    assert!(
        matches!(report["signal_pid"].as_str(), Some("EPERM" | "ESRCH")),
        "{report}"
    );
}

/// A sleeping process of the test's own: outside every program the host
/// starts. Killed when dropped.
struct Bystander(std::process::Child);

impl Bystander {
    fn start() -> Bystander {
        Bystander(
            std::process::Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("sleep"),
        )
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A listening socket file in a directory no grant names, accepting
/// without blocking.
fn listener() -> (tempfile::TempDir, PathBuf, UnixListener) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("s.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    listener.set_nonblocking(true).unwrap();
    (dir, path, listener)
}

/// What reached `listener`: the bytes of the first connection, if any.
fn received(listener: &UnixListener) -> Option<String> {
    let (mut stream, _) = listener.accept().ok()?;
    stream.set_nonblocking(false).unwrap();
    let mut got = String::new();
    let _ = stream.read_to_string(&mut got);
    Some(got)
}

/// The JSON report of the server's `probe` tool.
async fn probe(host: &Host) -> Value {
    let outcome = call(host, "mcp/h.probe", json!({})).await;
    serde_json::from_str(&text_of(&outcome)).unwrap_or_else(|e| panic!("{e}: {outcome:?}"))
}

#[tokio::test]
async fn a_server_cannot_signal_the_host_or_a_bystander_nor_reach_a_socket_file() {
    let bystander = Bystander::start();
    let (_dir, socket, listener) = listener();
    let marker = marker("hostile-probe");
    let host = py::host_of(server(
        &[
            ("SIGNAL_PID", &bystander.pid()),
            ("UNIX_SOCKET", py::path_str(&socket)),
        ],
        &marker,
    ))
    .await;
    let report = probe(&host).await;
    unsignalled(&report);
    assert_eq!(report["unix_connect"], "EACCES", "{report}");
    // A stream pair (runtimes pipe their children with them) still works;
    // a datagram pair, which could name a socket file in `sendto`, not.
    assert_eq!(report["stream_pair"], "ok", "{report}");
    assert_eq!(report["dgram_pair"], "EACCES", "{report}");
    // No io_uring, whose socket and connect operations bypass the filter.
    assert_eq!(report["io_uring"], "EPERM", "{report}");
    // Its standard streams are pipes, and it has no terminal.
    assert_ne!(report["tty_open"], "ok", "{report}");
    assert_ne!(report["tty_inject"], "ok", "{report}");
    assert_eq!(received(&listener), None, "the listener was reached");
    py::finish(host, &marker).await;
}

#[tokio::test]
async fn a_socket_grant_lets_the_program_connect() {
    let (_dir, socket, listener) = listener();
    let marker = marker("hostile-socket");
    let mut spec = server(&[("UNIX_SOCKET", py::path_str(&socket))], &marker);
    let python = spec.grants.exec()[0].written().to_owned();
    let granted = spec.grants.remove_exec(&python).unwrap();
    spec.grants
        .add_exec(granted.allow_socket(&socket).unwrap())
        .unwrap();
    let host = py::host_of(spec).await;
    let report = probe(&host).await;
    assert_eq!(report["unix_connect"], "ok", "{report}");
    assert_eq!(received(&listener).as_deref(), Some("hello"));
    // Signals stay scoped all the same.
    assert!(
        matches!(
            report["signal_parent"].as_str(),
            Some("EPERM" | "invisible")
        ),
        "{report}"
    );
    py::finish(host, &marker).await;
}

#[tokio::test]
async fn a_program_the_shell_plugin_runs_is_held_the_same() {
    let bystander = Bystander::start();
    let (_dir, socket, listener) = listener();
    let mut spec = crate::common::spec("shell", "shell");
    spec.grants
        .add_exec(crate::common::mcp::exec(
            &py::python().display().to_string(),
        ))
        .unwrap();
    spec.config = json!({"env": {
        "SIGNAL_PID": bystander.pid(),
        "UNIX_SOCKET": py::path_str(&socket),
    }});
    let host = crate::common::host(vec![spec]).await;
    let outcome = call(
        &host,
        "shell/exec.run",
        json!({
            "program": py::python().display().to_string(),
            "args": [py::server("hostile").display().to_string(), "probe"],
        }),
    )
    .await;
    let output = crate::common::json_of(&outcome);
    let report: Value = serde_json::from_str(output["stdout"].as_str().unwrap())
        .unwrap_or_else(|e| panic!("{e}: {output}"));
    unsignalled(&report);
    assert_eq!(report["unix_connect"], "EACCES", "{report}");
    assert_eq!(report["stream_pair"], "ok", "{report}");
    assert_ne!(report["tty_open"], "ok", "{report}");
    assert_eq!(received(&listener), None, "the listener was reached");
}

#[tokio::test]
async fn a_plugin_cannot_widen_an_exec_grant_through_the_environment() {
    let mut spec = hostile("normal");
    let grant = tiny_harness_sandbox::grant::ExecGrant::resolve(
        "git",
        Path::new("."),
        std::env::var_os("PATH").as_deref(),
    )
    .unwrap()
    .with_args(tiny_harness_sandbox::grant::ArgPatterns::new(&["status".to_owned()]).unwrap());
    spec.grants.add_exec(grant.clone()).unwrap();
    let host = crate::common::host(vec![spec]).await;
    // git would run core.fsmonitor's command through the shell.
    let told = json!({
        "program": "git",
        "args": ["status"],
        "env": {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "core.fsmonitor",
            "GIT_CONFIG_VALUE_0": "id >&2; false",
        },
    });
    let outcome = call(&host, "hostile/chaos.exec_as_told", told.clone()).await;
    let text = text_of(&outcome);
    assert!(
        text.starts_with("denied: ")
            && text.contains("variable \"GIT_CONFIG_COUNT\" for program \"git\" is not granted")
            && text.contains(r#"add exec = [{ program = "git", env = ["GIT_CONFIG_COUNT"] }]"#),
        "{text}"
    );
    assert!(!text.contains("uid="), "the command ran: {text}");

    // Listed names may be set; the loader's never, whatever is listed.
    let mut spec = hostile("normal");
    let names = tiny_harness_sandbox::grant::EnvNames::new(&["*".to_owned()]).unwrap();
    spec.grants.add_exec(grant.with_env(names)).unwrap();
    let host = crate::common::host(vec![spec]).await;
    let outcome = call(
        &host,
        "hostile/chaos.exec_as_told",
        json!({"program": "git", "args": ["status"], "env": {"LD_PRELOAD": "/tmp/evil.so"}}),
    )
    .await;
    let text = text_of(&outcome);
    assert!(
        text.starts_with("denied: ") && text.contains("\"LD_PRELOAD\" is the dynamic loader's"),
        "{text}"
    );
    let outcome = call(
        &host,
        "hostile/chaos.exec_as_told",
        json!({"program": "git", "args": ["--version"], "env": {}}),
    )
    .await;
    assert!(
        text_of(&outcome).contains("matches none of its grant's args patterns"),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_server_declaration_may_set_only_what_its_program_is_granted() {
    let marker = marker("hostile-env");
    let mut spec = server(&[("NODE_OPTIONS", "--require /tmp/evil.js")], &marker);
    let python = spec.grants.exec()[0].written().to_owned();
    let granted = spec.grants.remove_exec(&python).unwrap();
    // Only the test's marker is listed.
    let names = tiny_harness_sandbox::grant::EnvNames::new(&["TINY_HARNESS_TEST_*".to_owned()]);
    spec.grants
        .add_exec(granted.with_env(names.unwrap()))
        .unwrap();
    let host = py::host_of(spec).await;
    let State::Failed(why) = py::status(&host, "h").state else {
        panic!("an ungranted variable must refuse the source")
    };
    assert!(
        why.contains("variable \"NODE_OPTIONS\" for program")
            && why.contains(r#"env = ["TINY_HARNESS_TEST_*", "NODE_OPTIONS"]"#),
        "{why}"
    );
    assert!(crate::common::mcp::pids_with(&marker).is_empty());
}

#[tokio::test]
async fn a_servers_last_words_are_redacted_and_never_reach_the_model() {
    let secret = "tok-7f3a9c1e5b2d";
    // SAFETY: no other test reads this variable.
    unsafe { std::env::set_var("TINY_HARNESS_TEST_TOKEN_SRC", secret) };
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("tiny-harness.lock");
    let marker = marker("hostile-secret");
    let spec = |say: bool| {
        let mut env = vec![("TOKEN", "${TINY_HARNESS_TEST_TOKEN_SRC}")];
        if say {
            env.push(("SAY_AND_EXIT", "1"));
        }
        let mut spec = server(&env, &marker);
        spec.grants.add_env("TINY_HARNESS_TEST_TOKEN_SRC").unwrap();
        spec
    };
    // A first run pins its tools; in the second it fails as it starts,
    // lazily, at the model's call.
    let first = HostBuilder::new()
        .lock_file(&lock)
        .plugin(spec(false))
        .build()
        .await
        .unwrap();
    assert!(lock.exists(), "the first run writes the lock");
    first.shutdown().await;
    drop(first);

    let second = HostBuilder::new()
        .lock_file(lock)
        .plugin(spec(true))
        .build()
        .await
        .unwrap();
    assert_eq!(py::status(&second, "h").state, State::NotStarted);
    let outcome = call(&second, "mcp/h.echo", json!({})).await;
    assert_eq!(error_code(&outcome), "unavailable", "{outcome:?}");
    let shown = format!("{outcome:?} {}", py::message(&outcome));
    assert!(
        !shown.contains(secret) && !shown.contains("my token is"),
        "the model was shown the server's words: {shown}"
    );
    assert!(shown.contains("tiny-harness plugins"), "{shown}");
    // People see them, redacted.
    let State::Failed(why) = py::status(&second, "h").state else {
        panic!("the start failed")
    };
    assert!(
        why.contains("its last words: my token is [redacted]") && !why.contains(secret),
        "{why}"
    );
}

#[tokio::test]
async fn a_schema_too_deep_for_the_lock_is_skipped_and_the_rest_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("hostile-deep");
    let lock = dir.path().join("tiny-harness.lock");
    let host = HostBuilder::new()
        .lock_file(&lock)
        .plugin(server(&[("DEEP", "121")], &marker))
        .build()
        .await
        .unwrap();
    let status = py::status(&host, "h");
    let skipped: Vec<_> = status.skipped.iter().map(|s| &s.name).collect();
    assert_eq!(skipped, ["deep"], "{status:?}");
    assert!(
        status.skipped[0]
            .reason
            .contains("more than the 119 a tool may"),
        "{status:?}"
    );
    assert!(host.registry().get("mcp/h.echo").is_some());
    // The lock takes everything that was registered, and nothing else.
    let pins = std::fs::read_to_string(&lock).expect("the lock is written");
    assert!(pins.contains("echo") && !pins.contains("deep"), "{pins}");
    py::finish(host, &marker).await;
}

#[tokio::test]
async fn a_protocol_version_the_host_did_not_offer_is_refused() {
    let marker = marker("hostile-version");
    let host = py::host_of(server(
        &[("PROTOCOL", "2099-01-01\u{1b}[31m\u{202e}")],
        &marker,
    ))
    .await;
    let State::Failed(why) = py::status(&host, "h").state else {
        panic!("an unknown version must fail the source")
    };
    assert!(why.contains("which the host did not offer"), "{why}");
    assert!(
        !why.contains('\u{1b}') && !why.contains('\u{202e}'),
        "raw text: {why:?}"
    );
    assert!(host.registry().get("mcp/h.echo").is_none());
    py::finish(host, &marker).await;
}
