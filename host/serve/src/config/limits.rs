//! `[serve.limits]`: the gateway's bounds, each checked against its
//! range when the config is read.

use std::time::Duration;

use serde::Deserialize;

use super::ServeError;

/// The gateway's bounds, each with its config key under `[serve.limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeLimits {
    /// `request_kib`: the largest request body read (413 past it).
    pub request_bytes: usize,
    /// `concurrent_requests`: requests served at once over HTTP, all
    /// clients together (503 past it).
    pub concurrent_requests: usize,
    /// `requests_per_second`: one client's sustained rate over HTTP, with
    /// a burst of as many (429 past it).
    pub requests_per_second: u32,
    /// `sessions`: 2025-11-25 sessions open at once (503 for a new one).
    pub sessions: usize,
    /// `session_idle_secs`: a session unused this long is closed.
    pub session_idle: Duration,
    /// `connections`: HTTP connections open at once (further ones wait in
    /// the kernel's backlog).
    pub connections: usize,
    /// `read_timeout_secs`: the time a client has to send a request's
    /// headers and its whole body.
    pub read_timeout: Duration,
    /// `relist_interval_ms`: the shortest time between two iterations (an
    /// iteration re-lists an upstream MCP server's tools before the first
    /// call to them).
    pub relist_interval: Duration,
    /// `drain_grace_secs`: how long a drain keeps taking connections and
    /// requests after it began, with `/readyz` answering 503, so that a
    /// load balancer's health check takes the gateway out of rotation
    /// before it refuses connections (HTTP only; 0 by default: connections
    /// are refused at once).
    pub drain_grace: Duration,
    /// `drain_secs`: how long the calls in flight when the gateway stops
    /// taking requests (at the end of `drain_grace_secs`) have to finish;
    /// those still running then are cancelled. Over stdio, from the start
    /// of the drain.
    pub drain: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            request_bytes: 1 << 20,
            concurrent_requests: 64,
            requests_per_second: 200,
            sessions: 256,
            session_idle: Duration::from_secs(300),
            connections: 512,
            read_timeout: Duration::from_secs(10),
            relist_interval: Duration::from_secs(1),
            drain_grace: Duration::ZERO,
            drain: Duration::from_secs(30),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of limits such as { request_kib = 1024 }"
)]
pub(super) struct RawLimits {
    request_kib: Option<u64>,
    concurrent_requests: Option<u64>,
    requests_per_second: Option<u64>,
    sessions: Option<u64>,
    session_idle_secs: Option<u64>,
    connections: Option<u64>,
    read_timeout_secs: Option<u64>,
    relist_interval_ms: Option<u64>,
    drain_grace_secs: Option<u64>,
    drain_secs: Option<u64>,
}

impl RawLimits {
    pub(super) fn check(self) -> Result<ServeLimits, ServeError> {
        let mut limits = ServeLimits::default();
        let get = |value: Option<u64>, key: &str, max: u64| -> Result<Option<u64>, ServeError> {
            match value {
                None => Ok(None),
                Some(n) if (1..=max).contains(&n) => Ok(Some(n)),
                Some(n) => Err(ServeError::Config(format!(
                    "limits.{key}: {n} is outside 1..={max}"
                ))),
            }
        };
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        if let Some(kib) = get(self.request_kib, "request_kib", 64 << 10)? {
            limits.request_bytes = size(kib << 10);
        }
        if let Some(n) = get(self.concurrent_requests, "concurrent_requests", 65_536)? {
            limits.concurrent_requests = size(n);
        }
        if let Some(n) = get(self.requests_per_second, "requests_per_second", 1_000_000)? {
            limits.requests_per_second = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(n) = get(self.sessions, "sessions", 65_536)? {
            limits.sessions = size(n);
        }
        if let Some(n) = get(self.session_idle_secs, "session_idle_secs", 86_400)? {
            limits.session_idle = Duration::from_secs(n);
        }
        if let Some(n) = get(self.connections, "connections", 65_536)? {
            limits.connections = size(n);
        }
        if let Some(n) = get(self.read_timeout_secs, "read_timeout_secs", 3_600)? {
            limits.read_timeout = Duration::from_secs(n);
        }
        if let Some(n) = get(self.relist_interval_ms, "relist_interval_ms", 3_600_000)? {
            limits.relist_interval = Duration::from_millis(n);
        }
        // A grace of 0 is the default (no grace), so it may be written.
        match self.drain_grace_secs {
            None => {}
            Some(n) if n <= 3_600 => limits.drain_grace = Duration::from_secs(n),
            Some(n) => {
                return Err(ServeError::Config(format!(
                    "limits.drain_grace_secs: {n} is outside 0..=3600"
                )));
            }
        }
        if let Some(n) = get(self.drain_secs, "drain_secs", 3_600)? {
            limits.drain = Duration::from_secs(n);
        }
        Ok(limits)
    }
}
