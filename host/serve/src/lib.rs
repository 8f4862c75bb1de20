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
//!   `unknown_tool`, as for a tool that does not exist. A search client
//!   (`search = true`) is listed `search_tools` and `call_tool` instead
//!   of its whole set, and finds the rest by searching.
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
//!
//! Cancelling `shutdown` stops at once: the calls in flight are
//! cancelled. For a rolling update behind a load balancer, drain instead
//! ([`Bound::serve_until`]): cancelling `drain` makes `/readyz` answer
//! 503, keeps serving for `drain_grace_secs`, then refuses connections,
//! lets the calls in flight finish for up to `drain_secs` and cancels
//! those left ([`ServeLimits`]); `shutdown` still stops at once, during
//! the drain too. [`Gateway::serve_stdio_until`] drains stdio the same
//! way, without the grace.
//!
//! ```no_run
//! # async fn run(gateway: tiny_harness_serve::Gateway) -> Result<(), Box<dyn std::error::Error>> {
//! use tiny_harness_serve::HttpOptions;
//! use tokio_util::sync::CancellationToken;
//! let (drain, shutdown) = (CancellationToken::new(), CancellationToken::new());
//! // Cancel `drain` when the process is to stop (a SIGTERM handler, an
//! // orchestrator's call), and `shutdown` to stop at once, mid-drain too.
//! let options = HttpOptions::new("127.0.0.1:8787".parse()?);
//! let bound = gateway.bind_http(options, shutdown.clone()).await?;
//! bound.serve_until(drain, shutdown).await?;
//! // Served and drained: the MCP servers the host started are stopped.
//! gateway.host().shutdown().await;
//! # Ok(()) }
//! ```

mod clients;
mod config;
mod forward;
mod gateway;
mod handler;
mod http;
mod metrics;
mod oauth;
mod search;
mod stdio;
mod tokens;
mod upstream;
mod watch;

pub use clients::{ANONYMOUS_CLIENT, Glob, STDIO_CLIENT};
pub use config::{ClientEntry, MAX_CLIENTS, MAX_PATTERNS, ServeConfig, ServeError, ServeLimits};
pub use gateway::{CODE_META, Gateway, MEDIA_TYPE_META};
pub use http::{Bound, DEFAULT_ADDR, HttpOptions, MCP_PATH};
pub use oauth::{Jwks, MAX_JWKS_BYTES, MAX_KEYS, MAX_TOKEN_BYTES, OAuthConfig, REFETCH_AFTER};
pub use tokens::{MAX_TOKENS_BYTES, MIN_TOKEN_LEN, Tokens};
pub use watch::POLL;

use std::time::{Duration, Instant};

use tiny_harness_host::Host;
use tokio_util::sync::CancellationToken;

impl Gateway {
    /// Serves the `stdio` client on standard input and output until it
    /// closes them (once the calls in flight are answered) or `shutdown`
    /// is cancelled (at once: the calls in flight are cancelled).
    pub async fn serve_stdio(&self, shutdown: CancellationToken) -> Result<(), ServeError> {
        stdio::serve(self, CancellationToken::new(), shutdown).await
    }

    /// Serves the `stdio` client as [`Gateway::serve_stdio`] does until
    /// `drain` is cancelled, then drains: nothing more is read from the
    /// input, subscriptions end, and the calls in flight are answered;
    /// those still running `drain_secs` ([`ServeLimits`]) after the drain
    /// began are cancelled. One log line says when the drain begins and
    /// one when it ends. `shutdown` still stops at once.
    pub async fn serve_stdio_until(
        &self,
        drain: CancellationToken,
        shutdown: CancellationToken,
    ) -> Result<(), ServeError> {
        stdio::serve(self, drain, shutdown).await
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

/// How long what is cancelled (calls, connections) is given to go, at the
/// end of a drain or at a shutdown, before the gateway returns without
/// it.
pub(crate) const CUT_WAIT: Duration = Duration::from_secs(1);

/// Returns once no call is in flight (checked every 20 ms).
pub(crate) async fn no_calls(gateway: &Gateway) {
    while gateway.metrics().in_flight() > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A drain under way, for its two log lines: the calls in flight when it
/// began, and how many finished and how many were cancelled when it ends.
pub(crate) struct Drain {
    gateway: Gateway,
    began: Instant,
    /// Calls in flight when the drain began.
    in_flight: u64,
    /// [`Gateway::calls`] when the drain began.
    calls: u64,
    /// Calls still in flight at the deadline, cancelled.
    cancelled: Option<u64>,
}

impl Drain {
    /// Logs the drain's start over `transport`, with its grace and its
    /// deadline.
    pub(crate) fn begin(
        gateway: &Gateway,
        transport: &'static str,
        grace: Duration,
        deadline: Duration,
    ) -> Drain {
        let in_flight = gateway.metrics().in_flight();
        tracing::info!(
            target: "tiny_harness::serve",
            transport,
            calls_in_flight = in_flight,
            grace_secs = grace.as_secs(),
            drain_secs = deadline.as_secs(),
            "draining: the calls in flight finish, or are cancelled at the deadline",
        );
        Drain {
            gateway: gateway.clone(),
            began: Instant::now(),
            in_flight,
            calls: gateway.calls(),
            cancelled: None,
        }
    }

    /// The deadline has passed: the calls in flight now are the ones
    /// cancelled.
    pub(crate) fn cut(&mut self) {
        if self.cancelled.is_none() {
            self.cancelled = Some(self.gateway.metrics().in_flight());
        }
    }

    /// Logs the drain's end.
    pub(crate) fn end(self) {
        let cancelled = self.cancelled.unwrap_or(0);
        let started = self.gateway.calls().saturating_sub(self.calls);
        let finished = (self.in_flight + started).saturating_sub(cancelled);
        tracing::info!(
            target: "tiny_harness::serve",
            finished,
            cancelled,
            took_ms = u64::try_from(self.began.elapsed().as_millis()).unwrap_or(u64::MAX),
            "drain ended",
        );
    }
}
