//! Python MCP servers for the tests: the scripts in `tests/mcp/servers`,
//! run with PyPI's `mcp` SDK (a second implementation besides npm's
//! server-everything) from a venv in `tests/mcp/.venv`. `.ci/run` installs
//! it; otherwise the first test that needs it does, from the hash-pinned
//! `tests/mcp/requirements.txt`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tiny_harness_host::{CallOutcome, Host, HostBuilder, PluginSpec};
use tiny_harness_mcp::{McpSource, Status};

use super::mcp::{exec, gone, mcp_plugin, servers_dir};

pub use super::venv::python;

/// The script `name` (`crashy`, `hang`, `flood`, `http_server`).
pub fn server(name: &str) -> PathBuf {
    let path = servers_dir().join("servers").join(format!("{name}.py"));
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// An `mcpServers` entry that runs script `name` with `args` and `env` on
/// the venv's interpreter, with `marker` in its environment (so that a test
/// can find its processes).
pub fn stdio(name: &str, args: &[&str], env: &[(&str, &str)], marker: &str) -> Value {
    let mut argv = vec![server(name).display().to_string()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    let mut vars: serde_json::Map<String, Value> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    vars.insert("TINY_HARNESS_TEST_MARKER".into(), json!(marker));
    json!({
        "command": python().display().to_string(),
        "args": argv,
        "env": vars,
    })
}

/// The `mcp` plugin with `servers` as its `mcpServers`, granted the venv's
/// interpreter and the system temp directory read-write: the servers write
/// their event files (`CALLS_FILE`, ...) in the tests' temp directories,
/// and run confined, so they may write nowhere else.
pub fn plugin(servers: Value) -> PluginSpec {
    let mut spec = mcp_plugin(servers);
    spec.grants
        .add_exec(exec(&python().display().to_string()))
        .unwrap();
    spec.grants
        .add_dir(
            tiny_harness_host::DirGrant::new(
                std::env::temp_dir().canonicalize().expect("the temp dir"),
                "/tmp",
                tiny_harness_host::DirMode::ReadWrite,
            )
            .unwrap(),
        )
        .unwrap();
    spec
}

/// A host with `spec` loaded (its failed sources included).
pub async fn host_of(spec: PluginSpec) -> Host {
    HostBuilder::new()
        .plugin(spec)
        .build()
        .await
        .expect("the mcp plugin loads")
}

/// Runs `f` on the source of `server`.
pub fn with_source<R>(host: &Host, server: &str, f: impl FnOnce(&McpSource) -> R) -> R {
    let sources = host.mcp_sources();
    let (_, source) = sources
        .iter()
        .find(|(_, s)| s.server() == server)
        .unwrap_or_else(|| panic!("no source {server}"));
    f(source)
}

/// The status of the source of `server`.
pub fn status(host: &Host, server: &str) -> Status {
    with_source(host, server, McpSource::status)
}

/// The error message of a failed call.
pub fn message(outcome: &CallOutcome) -> String {
    outcome.result.as_ref().expect_err("an error").to_string()
}

/// The lines of the file at `path` (none if it does not exist yet), as the
/// servers write them to the files their environment names.
pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `path` as the `&str` a server's environment takes.
pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temp path")
}

/// Waits (up to 10 s) until `done` holds; true if it did.
pub async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

/// Drops the host and checks that no process carrying `marker` outlived it.
pub async fn finish(host: Host, marker: &str) {
    drop(host);
    assert!(gone(marker).await, "a server outlived the host");
}

/// `http_server.py` over streamable HTTP on a free loopback port, with
/// `marker` in its environment, once it accepts connections; killed when
/// dropped.
pub fn http_server(marker: &str) -> super::mcp::HttpServer {
    let port = super::mcp::free_port();
    let mut command = Command::new(python());
    command
        .arg(server("http_server"))
        .arg(port.to_string())
        .env("TINY_HARNESS_TEST_MARKER", marker);
    super::mcp::HttpServer::listen(command, port, "http_server.py")
}
