//! The gateway over streamable HTTP: rmcp's service at `/mcp`, behind a
//! guard that names the client and bounds what any one request or client
//! may cost, beside `/healthz` and `/readyz`.
//!
//! Invariants:
//! - Nothing reaches rmcp (and so nothing runs) before the guard has
//!   accepted the request: a known bearer token when there is a tokens
//!   file (401 with `WWW-Authenticate` otherwise), the client's rate (429),
//!   the requests in flight (503), the body read whole within
//!   `read_timeout_secs` (408) and `request_kib` (413), and for a new
//!   2025-11-25 session, the sessions open (503).
//! - rmcp then checks `Host` against loopback plus `allowed_hosts`, and
//!   `Origin` against `allowed_origins` and, on loopback, the gateway's
//!   own origin (every other `Origin` sent is refused; a request without
//!   one, as non-browser clients send, passes),
//!   both with 403; and the 2026-07-28 headers against the body (400).
//! - Without a tokens file, only a loopback address is served, to one
//!   client named `anonymous`; a non-loopback address without one is
//!   refused at start.
//! - A drain ([`Bound::serve_until`]) never cuts an answer that can still
//!   be given in time: `/readyz` answers 503 and the streams that only
//!   wait (a session's `GET` stream, `subscriptions/listen`) end at once;
//!   connections and requests are taken for `drain_grace_secs` more; then
//!   the listener is closed, idle connections are closed and busy ones
//!   after their answer; only at `drain_secs` past that are the calls
//!   left cancelled. Every wait is bounded, and nothing outlives the
//!   return but the calls' cancellation, awaited up to [`CUT_WAIT`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::StatusCode;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::config::ServeError;
use crate::gateway::Gateway;
use crate::oauth::Verifier;
use crate::tokens::Tokens;
use crate::{CUT_WAIT, Drain};

mod guard;

use guard::{Front, Guard, metrics, resource_metadata};

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// The default address of `serve --http`.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8787";

/// How the gateway is served over HTTP.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The address to listen on.
    pub addr: SocketAddr,
    /// The clients' tokens; `None` serves one anonymous client, on
    /// loopback only.
    pub tokens: Option<Tokens>,
    /// `Host` values accepted besides the loopback ones (and the config's
    /// `allowed_hosts`).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted besides the config's `allowed_origins`.
    pub allowed_origins: Vec<String>,
}

impl HttpOptions {
    /// Options for `addr`, without tokens or extra allowlist entries.
    pub fn new(addr: SocketAddr) -> HttpOptions {
        HttpOptions {
            addr,
            tokens: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }
}

/// A bound listener, ready to serve (so that a caller knows the port
/// before the first request, as with `--http 127.0.0.1:0`).
#[derive(Debug)]
pub struct Bound {
    listener: tokio::net::TcpListener,
    front: Front,
    gateway: Gateway,
    /// rmcp's token (a child of the one given to [`Gateway::bind_http`]):
    /// cancelling it cancels the calls in flight and ends the sessions.
    stop: CancellationToken,
    /// Cancelled when a drain begins: `/readyz` answers 503, and what
    /// only waits (a `GET` stream, a subscription) ends.
    draining: CancellationToken,
}

impl Gateway {
    /// Binds `options.addr` and checks that serving there is safe: a
    /// non-loopback address needs tokens, and every client of the tokens
    /// file needs an entry in `[serve.clients]`.
    pub async fn bind_http(
        &self,
        options: HttpOptions,
        shutdown: CancellationToken,
    ) -> Result<Bound, ServeError> {
        let served = self.served();
        let oauth = match &served.config.oauth {
            Some(config) => Some(
                Verifier::load(config.clone())
                    .await
                    .map_err(|e| ServeError::Config(e.to_string()))?,
            ),
            None => None,
        };
        if options.tokens.is_none() && oauth.is_none() && !options.addr.ip().is_loopback() {
            return Err(ServeError::Http(format!(
                "serve: {} is not a loopback address and no --tokens file or [serve.oauth] is \
                 given, so anyone who reaches it could call every tool; give --tokens FILE (one \
                 `NAME TOKEN` line per client) or listen on 127.0.0.1",
                options.addr
            )));
        }
        if let Some(tokens) = &options.tokens {
            let served = self.served();
            let missing: Vec<&str> = tokens.names().filter(|n| !served.clients.has(n)).collect();
            if !missing.is_empty() {
                return Err(ServeError::Config(format!(
                    "clients: {} of the tokens file {} no [serve.clients.NAME] entry; add one \
                     with the tools it may use (tools = [\"*\"] for every tool)",
                    missing.join(", "),
                    if missing.len() == 1 { "has" } else { "have" },
                )));
            }
        }
        let limits = *self.limits();
        let served = self.served();
        let config = &served.config;
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        hosts.extend(config.allowed_hosts.iter().cloned());
        hosts.extend(options.allowed_hosts.iter().cloned());
        let listener = tokio::net::TcpListener::bind(options.addr)
            .await
            .map_err(|e| {
                ServeError::Http(format!("serve: cannot listen on {}: {e}", options.addr))
            })?;
        let mut origins = config.allowed_origins.clone();
        origins.extend(options.allowed_origins.iter().cloned());
        // On loopback, the gateway's own origin (a page it served, or a
        // client that names where it connects) is not a foreign one.
        if options.addr.ip().is_loopback() {
            let port = listener.local_addr().map_err(ServeError::Io)?.port();
            for host in ["localhost", "127.0.0.1", "[::1]"] {
                origins.push(format!("http://{host}:{port}"));
            }
        }
        let stop = shutdown.child_token();
        let draining = CancellationToken::new();
        let rmcp_config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(limits.request_bytes)
            // A stateless answer that is only its result goes out as one
            // JSON body, in one write: an event stream's closing chunk,
            // written apart, could be cut off by the replica's death after
            // a load balancer forwarded the result, and then neither be
            // finished nor retried.
            .with_json_response(true)
            .with_cancellation_token(stop.child_token());
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(limits.session_idle);
        let sessions = Arc::new(manager);
        let gateway = self.clone();
        // A subscription, and a session's change watcher, end when a
        // drain begins.
        let ending = draining.clone();
        let service = StreamableHttpService::new(
            move || Ok(gateway.handler_closed_by(None, ending.clone())),
            sessions.clone(),
            rmcp_config,
        );
        let guard = Arc::new(Guard {
            gateway: self.clone(),
            tokens: options.tokens,
            oauth,
            in_flight: Arc::new(Semaphore::new(limits.concurrent_requests)),
            buckets: Mutex::new(HashMap::new()),
            sessions,
            draining: draining.clone(),
            anonymous: Arc::from(crate::clients::ANONYMOUS_CLIENT),
        });
        let (ready, drained) = (self.clone(), draining.clone());
        let router = Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route(
                "/readyz",
                get(move || readiness(ready.clone(), drained.clone())),
            )
            .route("/metrics", get(metrics).with_state(guard.clone()))
            .route(
                "/.well-known/oauth-protected-resource",
                get(resource_metadata).with_state(guard.clone()),
            )
            .route(
                &format!("/.well-known/oauth-protected-resource{MCP_PATH}"),
                get(resource_metadata).with_state(guard.clone()),
            );
        let front = Front {
            guard,
            mcp: std::sync::Arc::new(service),
            router,
        };
        Ok(Bound {
            listener,
            front,
            gateway: self.clone(),
            stop,
            draining,
        })
    }
}

impl Bound {
    /// The address listened on.
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        self.listener.local_addr().map_err(ServeError::Io)
    }

    /// Serves connections until `shutdown` is cancelled: at most
    /// `connections` at once, each given `read_timeout_secs` to send a
    /// request's headers. Cancelling `shutdown` stops at once: the calls
    /// in flight are cancelled and the connections closed. For a drain,
    /// see [`Bound::serve_until`].
    pub async fn serve(self, shutdown: CancellationToken) -> Result<(), ServeError> {
        self.serve_until(CancellationToken::new(), shutdown).await
    }

    /// Serves connections as [`Bound::serve`] does until `drain` is
    /// cancelled, then drains, and returns when the drain is over (or at
    /// once when `shutdown` is cancelled, during the drain too):
    ///
    /// 1. `/readyz` answers `503 draining`; a session's `GET` stream and
    ///    every `subscriptions/listen` stream end (their clients would
    ///    otherwise hold the drain open for ever).
    /// 2. For `drain_grace_secs` (`[serve.limits]`, 0 by default) the
    ///    gateway goes on taking connections and requests, so that a load
    ///    balancer's health check sees the 503 and takes it out of
    ///    rotation before it refuses anything.
    /// 3. The listener is closed (connections are refused); idle
    ///    connections are closed at once, busy ones after their answer.
    /// 4. Once no connection is open and no call is in flight, or
    ///    `drain_secs` after step 3, the calls left are cancelled (their
    ///    plugin instances dropped, their programs' process groups
    ///    killed, their upstream requests cancelled; a client waiting
    ///    for a 2026-07-28 answer gets a 500), the 2025-11-25 sessions
    ///    are closed and the last connections dropped.
    ///
    /// One log line (target `tiny_harness::serve`) says when the drain
    /// begins, with the calls in flight, and one when it ends, with how
    /// many finished and how many were cancelled. The MCP servers are
    /// the caller's to shut down ([`tiny_harness_host::Host::shutdown`]).
    pub async fn serve_until(
        self,
        drain: CancellationToken,
        shutdown: CancellationToken,
    ) -> Result<(), ServeError> {
        let Bound {
            listener,
            front,
            gateway,
            stop,
            draining,
        } = self;
        let limits = *gateway.limits();
        let connections = Arc::new(Semaphore::new(limits.connections));
        let all = u32::try_from(limits.connections).unwrap_or(u32::MAX);
        let service = hyper_util::service::TowerToHyperService::new(front);
        // Cancelled when the gateway stops taking requests: each
        // connection is shut down gracefully (closed once idle).
        let closing = CancellationToken::new();
        // Cancelled when what is left is cut: each connection dropped.
        let cut = CancellationToken::new();
        let ending = Ending {
            gateway: &gateway,
            stop: &stop,
            draining: &draining,
            closing: &closing,
            cut: &cut,
            connections: &connections,
            all,
        };
        // The end of the grace, once a drain has begun, and its record.
        let mut grace: Option<(tokio::time::Instant, Drain)> = None;
        loop {
            let accept = async {
                let permit = connections.clone().acquire_owned().await;
                (permit, listener.accept().await)
            };
            let grace_end = grace.as_ref().map(|(end, _)| *end);
            let grace_over = async move {
                match grace_end {
                    Some(end) => tokio::time::sleep_until(end).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = shutdown.cancelled() => {
                    if let Some((_, mut record)) = grace.take() {
                        record.cut();
                        ending.cancel_the_rest().await;
                        record.end();
                    } else {
                        ending.cancel_the_rest().await;
                    }
                    return Ok(());
                }
                () = grace_over => break,
                () = drain.cancelled(), if grace.is_none() => {
                    draining.cancel();
                    let record = Drain::begin(&gateway, "http", limits.drain_grace, limits.drain);
                    grace = Some((tokio::time::Instant::now() + limits.drain_grace, record));
                }
                (permit, accepted) = accept => {
                    // The semaphore is never closed.
                    let Ok(permit) = permit else { continue };
                    let (stream, _) = match accepted {
                        Ok(accepted) => accepted,
                        // A connection reset before it was accepted, or
                        // out of descriptors for a moment: the next
                        // accept may succeed.
                        Err(error) => {
                            tracing::warn!(target: "tiny_harness::serve", %error, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let (service, closing, cut) = (service.clone(), closing.clone(), cut.clone());
                    tokio::spawn(async move {
                        let mut builder = hyper::server::conn::http1::Builder::new();
                        builder
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(limits.read_timeout);
                        let connection = builder
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                        tokio::pin!(connection);
                        tokio::select! {
                            _ = connection.as_mut() => {}
                            () = closing.cancelled() => {
                                connection.as_mut().graceful_shutdown();
                                tokio::select! {
                                    _ = connection.as_mut() => {}
                                    () = cut.cancelled() => {}
                                }
                            }
                            () = cut.cancelled() => {}
                        }
                        drop(permit);
                    });
                }
            }
        }
        // The grace is over: no connection is taken from here on.
        let Some((grace_end, mut record)) = grace else {
            return Ok(());
        };
        drop(listener);
        closing.cancel();
        let idle = async {
            // Every permit back: every connection closed.
            let _every = connections.acquire_many(all).await;
            crate::no_calls(&gateway).await;
        };
        let in_time = tokio::select! {
            () = idle => true,
            () = tokio::time::sleep_until(grace_end + limits.drain) => false,
            () = shutdown.cancelled() => false,
        };
        if !in_time {
            record.cut();
        }
        ending.cancel_the_rest().await;
        record.end();
        Ok(())
    }
}

/// What [`Bound::serve_until`] ends with.
struct Ending<'a> {
    gateway: &'a Gateway,
    stop: &'a CancellationToken,
    draining: &'a CancellationToken,
    closing: &'a CancellationToken,
    cut: &'a CancellationToken,
    connections: &'a Arc<Semaphore>,
    /// Every connection's permit.
    all: u32,
}

impl Ending<'_> {
    /// Cancels the calls in flight and closes the sessions; each client
    /// waiting on a connection gets its answer (a 500 for a cancelled
    /// call) within [`CUT_WAIT`], else its connection is dropped; then
    /// waits up to [`CUT_WAIT`] for the cancelled calls to be dropped.
    async fn cancel_the_rest(&self) {
        self.draining.cancel();
        self.stop.cancel();
        self.closing.cancel();
        let _ = tokio::time::timeout(CUT_WAIT, async {
            let _every = self.connections.acquire_many(self.all).await;
        })
        .await;
        self.cut.cancel();
        let _ = tokio::time::timeout(CUT_WAIT, crate::no_calls(self.gateway)).await;
    }
}

/// `/readyz`: 200 unless the gateway is draining, an MCP server failed or
/// tools differ from their pins (503 with the first reason); see
/// [`Gateway::not_ready`].
async fn readiness(gateway: Gateway, draining: CancellationToken) -> Response {
    if draining.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response();
    }
    match gateway.not_ready() {
        None => (StatusCode::OK, "ready\n").into_response(),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response(),
    }
}
