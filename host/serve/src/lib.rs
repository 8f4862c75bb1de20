//! # tiny-harness-serve
//!
//! The gateway: a [`Host`]'s registry served to MCP clients (a desktop
//! assistant, an IDE, the MCP Inspector, an agent framework), over stdio
//! or streamable HTTP, at protocol revisions 2025-11-25 (initialize and
//! sessions) and 2026-07-28 (stateless). Every tool a client sees runs
//! behind the host's validation, pins, retries, confinement and untrusted
//! rendering, whether a sandboxed plugin or an upstream MCP server a
//! plugin declares provides it.
//!
//! - **Names.** A tool is listed under its MCP wire name (the codec's
//!   rule: `fs/workspace.read_file` is `fs__workspace.read_file`), the
//!   same for every client, run and replica, in registry-name order.
//! - **Clients.** Each client (a token's name, `stdio`, `anonymous`) may
//!   have a set in `[serve.clients.NAME]`: globs over registry names and
//!   names of its own for some tools. A call outside the set is
//!   `unknown_tool`, as for a tool that does not exist.
//! - **Results.** The text content is the untrusted block; the checked
//!   JSON is `structuredContent`; a refusal is an `isError` result with
//!   its code in `_meta` under [`CODE_META`].
//! - **HTTP.** Loopback unless tokens are given; `Host` and `Origin`
//!   checked against allowlists; bearer tokens compared in constant time;
//!   body size, read time, requests in flight, each client's rate,
//!   sessions and connections bounded ([`ServeLimits`]). `/healthz` and
//!   `/readyz` for a load balancer.
//!
//! Serving a host of one's own, over stdio:
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use tiny_harness_host::{Config, HostBuilder};
//! use tiny_harness_serve::{Gateway, ServeConfig};
//! let config = Config::load("tiny-harness.toml".as_ref())?;
//! let host = HostBuilder::new().config(&config).build().await?;
//! let gateway = Gateway::new(host, ServeConfig::from_config(&config)?)?;
//! gateway.serve_stdio(Default::default()).await?;
//! # Ok(()) }
//! ```
//!
//! And over HTTP on loopback, to the anonymous client:
//!
//! ```no_run
//! # async fn run(gateway: tiny_harness_serve::Gateway) -> Result<(), Box<dyn std::error::Error>> {
//! use tiny_harness_serve::HttpOptions;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! let options = HttpOptions::new("127.0.0.1:8787".parse()?);
//! let bound = gateway.bind_http(options, shutdown.clone()).await?;
//! bound.serve(shutdown).await?;
//! # Ok(()) }
//! ```

mod clients;
mod config;
mod gateway;
mod handler;
mod http;
mod metrics;
mod oauth;
mod stdio;
mod tokens;
mod watch;

pub use clients::{ANONYMOUS_CLIENT, Glob, STDIO_CLIENT};
pub use config::{ClientEntry, MAX_CLIENTS, MAX_PATTERNS, ServeConfig, ServeError, ServeLimits};
pub use gateway::{CODE_META, Gateway};
pub use http::{Bound, DEFAULT_ADDR, HttpOptions, MCP_PATH};
pub use oauth::{Jwks, MAX_JWKS_BYTES, MAX_KEYS, MAX_TOKEN_BYTES, OAuthConfig, REFETCH_AFTER};
pub use tokens::{MAX_TOKENS_BYTES, MIN_TOKEN_LEN, Tokens};
pub use watch::POLL;

use rmcp::ServiceExt;
use tiny_harness_host::Host;
use tokio_util::sync::CancellationToken;

impl Gateway {
    /// Serves the `stdio` client on standard input and output until it
    /// closes them or `shutdown` is cancelled.
    pub async fn serve_stdio(&self, shutdown: CancellationToken) -> Result<(), ServeError> {
        let closed = CancellationToken::new();
        let handler = self.handler(Some(STDIO_CLIENT)).closed_by(closed.clone());
        let (stdin, stdout) = rmcp::transport::stdio();
        let stdin = stdio::UntilEnd::new(stdin, closed.clone());
        let running = handler
            .serve_with_ct((stdin, stdout), shutdown)
            .await
            .map_err(|e| ServeError::Io(std::io::Error::other(e.to_string())))?;
        let gateway = self.clone();
        // Once the input has ended, the requests in flight finish and
        // their answers are written; then `serve` ends. rmcp alone would
        // wait its whole drain time (5 s) for a `subscriptions/listen`
        // stream, whose last answer nobody can read.
        let quiet = async move {
            closed.cancelled().await;
            let mut quiet = 0;
            while quiet < 10 {
                quiet = if gateway.metrics().in_flight() == 0 {
                    quiet + 1
                } else {
                    0
                };
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            waited = running.waiting() => {
                waited.map_err(|e| ServeError::Io(std::io::Error::other(e)))?;
            }
            () = quiet => {}
        }
        Ok(())
    }

    /// Why the gateway is not ready to serve (`/readyz`): an MCP server
    /// that could not be started, or tools that differ from their pins.
    /// `None` when ready.
    pub fn not_ready(&self) -> Option<String> {
        let host: Host = self.host();
        for (plugin, source) in host.mcp_sources() {
            if let tiny_harness_host::mcp::State::Failed(why) = source.status().state {
                return Some(format!(
                    "plugin {plugin}: mcp server {}: {}",
                    source.server(),
                    tiny_harness_core::display::one_line(&why)
                ));
            }
        }
        host.known_drift()
            .first()
            .map(|(server, _)| format!("{server}: its tools differ from their pins"))
    }
}
