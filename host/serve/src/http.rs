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

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::clients::ANONYMOUS_CLIENT;
use crate::config::ServeError;
use crate::gateway::{ClientName, Gateway};
use crate::oauth::{Rejection, Verifier};
use crate::tokens::Tokens;

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

/// What the guard holds for every request.
struct Guard {
    gateway: Gateway,
    tokens: Option<Tokens>,
    oauth: Option<Verifier>,
    in_flight: Arc<Semaphore>,
    buckets: Mutex<HashMap<Arc<str>, Bucket>>,
    sessions: Arc<LocalSessionManager>,
}

/// A client's token bucket: `requests_per_second` sustained, as many in
/// a burst.
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A bound listener, ready to serve (so that a caller knows the port
/// before the first request, as with `--http 127.0.0.1:0`).
#[derive(Debug)]
pub struct Bound {
    listener: tokio::net::TcpListener,
    router: Router,
    gateway: Gateway,
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
            .with_cancellation_token(shutdown.child_token());
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(limits.session_idle);
        let sessions = Arc::new(manager);
        let gateway = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(gateway.handler(None)),
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
        });
        let mcp = Router::new().route_service(MCP_PATH, service).layer(
            axum::middleware::from_fn_with_state(guard.clone(), guard_request),
        );
        let ready = self.clone();
        let router = Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(move || readiness(ready.clone())))
            .route("/metrics", get(metrics).with_state(guard.clone()))
            .route(
                "/.well-known/oauth-protected-resource",
                get(resource_metadata).with_state(guard.clone()),
            )
            .route(
                &format!("/.well-known/oauth-protected-resource{MCP_PATH}"),
                get(resource_metadata).with_state(guard),
            )
            .merge(mcp);
        Ok(Bound {
            listener,
            router,
            gateway: self.clone(),
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
    /// request's headers.
    pub async fn serve(self, shutdown: CancellationToken) -> Result<(), ServeError> {
        let limits = *self.gateway.limits();
        let connections = Arc::new(Semaphore::new(limits.connections));
        let service = hyper_util::service::TowerToHyperService::new(self.router);
        loop {
            let permit = tokio::select! {
                permit = connections.clone().acquire_owned() => permit,
                () = shutdown.cancelled() => return Ok(()),
            };
            let Ok(permit) = permit else { return Ok(()) };
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = shutdown.cancelled() => return Ok(()),
            };
            let (stream, _) = match accepted {
                Ok(accepted) => accepted,
                // A connection reset before it was accepted, or out of
                // descriptors for a moment: the next accept may succeed.
                Err(error) => {
                    tracing::warn!(target: "tiny_harness::serve", %error, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let service = service.clone();
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(limits.read_timeout);
                let connection =
                    builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                tokio::pin!(connection);
                tokio::select! {
                    _ = connection.as_mut() => {}
                    () = shutdown.cancelled() => {
                        connection.as_mut().graceful_shutdown();
                        let _ = connection.await;
                    }
                }
                drop(permit);
            });
        }
    }
}

/// `/readyz`: 200 unless an MCP server failed or tools differ from their
/// pins (503 with the first reason); see [`Gateway::not_ready`].
async fn readiness(gateway: Gateway) -> Response {
    match gateway.not_ready() {
        None => (StatusCode::OK, "ready\n").into_response(),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response(),
    }
}

/// A refusal with a one-line body, counted and logged.
fn refuse(
    guard: &Guard,
    client: Option<&str>,
    reason: &'static str,
    status: StatusCode,
    why: &str,
) -> Response {
    guard.gateway.metrics().refused(reason);
    tracing::info!(
        target: "tiny_harness::serve",
        client = client.unwrap_or(""),
        status = status.as_u16(),
        outcome = reason,
        "refused a request"
    );
    let mut response = (status, format!("{why}\n")).into_response();
    if matches!(reason, "rate_limited" | "busy" | "sessions") {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// The client a request comes from: the anonymous one when neither a
/// tokens file nor `[serve.oauth]` is in force, else the one its bearer
/// token names (a token of the file, or an access token), or the 401 or
/// 403 that refuses it.
async fn authenticate(guard: &Guard, headers: &http::HeaderMap) -> Result<Arc<str>, Box<Response>> {
    if guard.tokens.is_none() && guard.oauth.is_none() {
        return Ok(Arc::from(ANONYMOUS_CLIENT));
    }
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, token) = value.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
    if let (Some(tokens), Some(token)) = (&guard.tokens, presented)
        && let Some(client) = tokens.client(token.as_bytes())
    {
        return Ok(Arc::from(client));
    }
    let mut challenge = "Bearer realm=\"tiny-harness\"".to_owned();
    if let Some(oauth) = &guard.oauth {
        challenge.push_str(&format!(
            ", resource_metadata=\"{}\"",
            oauth.config().metadata_url()
        ));
        if let Some(token) = presented {
            match oauth.verify(token).await {
                Ok(client) if guard.gateway.has_client(&client) => return Ok(Arc::from(client)),
                Ok(client) => {
                    return Err(Box::new(refuse(
                        guard,
                        Some(&client),
                        "unknown_client",
                        StatusCode::FORBIDDEN,
                        &format!(
                            "the token's client {client} has no [serve.clients.{client}] entry"
                        ),
                    )));
                }
                Err(Rejection::Scope(scope)) => {
                    let mut response = refuse(
                        guard,
                        None,
                        "insufficient_scope",
                        StatusCode::FORBIDDEN,
                        &format!("the token lacks the scope {scope}"),
                    );
                    let value =
                        format!("{challenge}, error=\"insufficient_scope\", scope=\"{scope}\"");
                    if let Ok(value) = HeaderValue::from_str(&value) {
                        response
                            .headers_mut()
                            .insert(header::WWW_AUTHENTICATE, value);
                    }
                    return Err(Box::new(response));
                }
                Err(Rejection::Invalid(why)) => {
                    tracing::debug!(target: "tiny_harness::serve", "access token refused: {why}");
                }
            }
        }
    }
    if presented.is_some() {
        challenge.push_str(", error=\"invalid_token\"");
    }
    let mut response = refuse(
        guard,
        None,
        "unauthorized",
        StatusCode::UNAUTHORIZED,
        "a bearer token is required: one of the gateway's tokens file or an access token of its authorization server",
    );
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    Err(Box::new(response))
}

/// `/.well-known/oauth-protected-resource`: where to get an access token
/// (404 without `[serve.oauth]`).
async fn resource_metadata(State(guard): State<Arc<Guard>>) -> Response {
    match &guard.oauth {
        Some(oauth) => {
            let mut response = oauth.config().metadata().to_string().into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `/metrics`: the Prometheus text; with a tokens file, for a request
/// carrying one of its tokens only.
async fn metrics(State(guard): State<Arc<Guard>>, request: Request) -> Response {
    if let Err(refusal) = authenticate(&guard, request.headers()).await {
        return *refusal;
    }
    let mut response = guard.gateway.metrics_text().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// Everything a request must pass before rmcp sees it.
async fn guard_request(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let limits = *guard.gateway.limits();
    let client = match authenticate(&guard, request.headers()).await {
        Ok(client) => client,
        Err(refusal) => return *refusal,
    };
    let refused = |reason, status, why: &str| refuse(&guard, Some(&client), reason, status, why);
    if !guard.admit(&client, limits.requests_per_second) {
        return refused(
            "rate_limited",
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests; slow down",
        );
    }
    let Ok(permit) = guard.in_flight.clone().try_acquire_owned() else {
        return refused(
            "busy",
            StatusCode::SERVICE_UNAVAILABLE,
            "too many requests in flight",
        );
    };
    let (mut parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, limits.request_bytes);
    let bytes = match tokio::time::timeout(limits.read_timeout, limited.collect()).await {
        Err(_) => {
            return refused(
                "read_timeout",
                StatusCode::REQUEST_TIMEOUT,
                "the request body was not sent in time",
            );
        }
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
            return refused(
                "too_large",
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "the request body is larger than {} bytes",
                    limits.request_bytes
                ),
            );
        }
        Ok(Err(_)) => {
            return refused(
                "unreadable",
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            );
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    if parts.method == http::Method::POST
        && !parts.headers.contains_key("mcp-session-id")
        && opens_session(&bytes)
        && guard.sessions.sessions.read().await.len() >= limits.sessions
    {
        return refused(
            "sessions",
            StatusCode::SERVICE_UNAVAILABLE,
            "too many sessions are open",
        );
    }
    let delete = parts.method == http::Method::DELETE;
    parts.extensions.insert(ClientName(client.clone()));
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    // The permit is held until the response's body (an SSE stream of a
    // call in progress) ends.
    let (mut parts, body) = response.into_parts();
    // A session closed is answered 204, as clients expect (rmcp says 202,
    // which the Python SDK logs as a failure).
    if delete && parts.status == StatusCode::ACCEPTED {
        parts.status = StatusCode::NO_CONTENT;
    }
    // rmcp's refusal of a foreign `Host` or `Origin`.
    if parts.status == StatusCode::FORBIDDEN {
        guard.gateway.metrics().refused("forbidden");
        tracing::info!(target: "tiny_harness::serve", client = &*client, status = 403, outcome = "forbidden", "refused a request");
    }
    Response::from_parts(
        parts,
        Body::new(Held {
            inner: body,
            _permit: permit,
        }),
    )
}

/// A response body holding a request slot until it is dropped, and
/// otherwise the body itself: its size, so that a whole answer goes out
/// with a `Content-Length` in one write rather than chunked.
struct Held {
    inner: Body,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl http_body::Body for Held {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Whether a request body is an `initialize` request (which opens a
/// 2025-11-25 session).
fn opens_session(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    serde_json::from_slice::<Method<'_>>(body).is_ok_and(|m| m.method == Some("initialize"))
}

impl Guard {
    /// Takes one request from `client`'s bucket.
    fn admit(&self, client: &Arc<str>, per_second: u32) -> bool {
        let now = Instant::now();
        let rate = f64::from(per_second);
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let bucket = buckets.entry(client.clone()).or_insert(Bucket {
            tokens: rate,
            at: now,
        });
        bucket.tokens =
            (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate).min(rate);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}
