//! Real MCP servers for the tests: npm's server-everything (installed into
//! `tests/mcp` by `.ci/run`, or here on first use with `npm ci`), started
//! over stdio by the host or over streamable HTTP by the test.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tiny_harness_host::PluginSpec;
use tiny_harness_sandbox::grant::{ExecGrant, NetGrant};

pub use super::npm::{everything_js, servers_dir};
pub use super::procs::{marker, pids_with};

/// An exec grant for `program` as a config would give it, which may read
/// the test servers (`tests/mcp`) when it runs confined, and may be given
/// any variable (the tests set markers and event files; what a grant's
/// `env` refuses is tested in `hostile.rs`).
pub fn exec(program: &str) -> ExecGrant {
    ExecGrant::resolve(program, Path::new("."), std::env::var_os("PATH").as_deref())
        .unwrap_or_else(|e| panic!("granting {program}: {e}"))
        .allow_read(servers_dir())
        .expect("tests/mcp")
        .with_env(any_env())
}

/// A grant's `env = ["*"]`: any variable but the loader's.
pub fn any_env() -> tiny_harness_sandbox::grant::EnvNames {
    tiny_harness_sandbox::grant::EnvNames::new(&["*".to_owned()]).expect("a pattern")
}

/// A net grant.
pub fn net(grant: &str) -> NetGrant {
    NetGrant::parse(grant).unwrap_or_else(|e| panic!("{grant}: {e}"))
}

/// The `mcp` plugin with `servers` as its `mcpServers` and nothing granted.
pub fn mcp_plugin(servers: serde_json::Value) -> PluginSpec {
    let mut spec = super::spec("mcp", "mcp");
    spec.config = serde_json::json!({ "mcpServers": servers });
    spec
}

/// server-everything over stdio, with `marker` in its environment (so that
/// a test can find its processes).
pub fn everything_stdio(marker: &str) -> serde_json::Value {
    serde_json::json!({
        "command": "node",
        "args": [everything_js(), "stdio"],
        "env": { "TINY_HARNESS_TEST_MARKER": marker },
    })
}

/// Fails the test unless, within 10 s, no process carries `marker`.
pub async fn assert_gone(marker: &str) {
    assert!(gone(marker).await, "left running: {:?}", pids_with(marker));
}

/// Waits (up to 10 s) until no process carries `marker`; true if none does.
pub async fn gone(marker: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if pids_with(marker).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pids_with(marker).is_empty()
}

/// server-everything over streamable HTTP on a free loopback port; killed
/// when dropped.
pub struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:<port>/mcp`.
    pub url: String,
}

impl HttpServer {
    /// Starts server-everything and waits until it accepts connections.
    pub fn start() -> HttpServer {
        let port = free_port();
        let mut command = Command::new("node");
        command
            .arg("--require")
            .arg(servers_dir().join("loopback.cjs"))
            .arg(everything_js())
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        HttpServer::listen(command, port, "server-everything")
    }

    /// Starts `command`, a server `what` that listens on 127.0.0.1:`port`,
    /// and waits (up to 20 s) until it accepts connections.
    pub fn listen(mut command: Command, port: u16, what: &str) -> HttpServer {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {what}: {e}"));
        let until = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            let exited = child.try_wait().ok().flatten();
            assert!(exited.is_none(), "{what} exited: {exited:?}");
            assert!(Instant::now() < until, "{what} did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
