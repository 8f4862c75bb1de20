//! The guard in front of rmcp's service: who a request comes from, and
//! what it may cost, decided before rmcp sees it (see the invariants of
//! [`super`]).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio::sync::Semaphore;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::MCP_PATH;
use crate::gateway::{ClientName, Gateway};
use crate::handler::Handler;
use crate::oauth::{Rejection, Verifier};
use crate::tokens::Tokens;

/// What the guard holds for every request.
pub(super) struct Guard {
    pub(super) gateway: Gateway,
    pub(super) tokens: Option<Tokens>,
    pub(super) oauth: Option<Verifier>,
    pub(super) in_flight: Arc<Semaphore>,
    pub(super) buckets: Mutex<HashMap<Arc<str>, Bucket>>,
    pub(super) sessions: Arc<LocalSessionManager>,
    /// Cancelled when a drain begins: a `GET` stream ends then.
    pub(super) draining: CancellationToken,
    /// The anonymous client's name, made once.
    pub(super) anonymous: Arc<str>,
}

/// A client's token bucket: `requests_per_second` sustained, as many in
/// a burst.
pub(super) struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A refusal with a one-line body, counted and logged.
pub(super) fn refuse(
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
        return Ok(guard.anonymous.clone());
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
pub(super) async fn resource_metadata(State(guard): State<Arc<Guard>>) -> Response {
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
pub(super) async fn metrics(State(guard): State<Arc<Guard>>, request: Request) -> Response {
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

/// rmcp's service, as the gateway configures it.
pub(super) type McpService = StreamableHttpService<Handler, LocalSessionManager>;

/// What serves each connection's requests: those to [`MCP_PATH`] go
/// through the guard straight to rmcp's service (no router or middleware
/// between them, on the path every call takes), the rest to `router`
/// (`/healthz`, `/readyz`, `/metrics`, the resource metadata).
#[derive(Clone)]
pub(super) struct Front {
    pub(super) guard: Arc<Guard>,
    /// Shared, and called through `handle` rather than as a tower
    /// service, which would clone it (its config's host and origin lists
    /// with it) for every request.
    pub(super) mcp: Arc<McpService>,
    pub(super) router: Router,
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front").finish_non_exhaustive()
    }
}

impl tower_service::Service<http::Request<hyper::body::Incoming>> for Front {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Self::Error>> + Send>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<hyper::body::Incoming>) -> Self::Future {
        let request = request.map(Body::new);
        if request.uri().path() == MCP_PATH {
            let (guard, mcp) = (self.guard.clone(), self.mcp.clone());
            Box::pin(async move { Ok(guard_request(guard, request, mcp).await) })
        } else {
            let mut router = self.router.clone();
            Box::pin(async move { router.call(request).await })
        }
    }
}

/// Everything a request must pass before rmcp sees it.
async fn guard_request(guard: Arc<Guard>, request: Request, mcp: Arc<McpService>) -> Response {
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
    // A small body has usually arrived with the headers: taken at once,
    // without arming a timer for it.
    let mut collect = std::pin::pin!(limited.collect());
    let read = match futures_now(collect.as_mut()) {
        Some(read) => Ok(read),
        None => tokio::time::timeout(limits.read_timeout, collect).await,
    };
    let bytes = match read {
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
        && opens_session(&parts.headers, &bytes)
        && guard.sessions.sessions.read().await.len() >= limits.sessions
    {
        return refused(
            "sessions",
            StatusCode::SERVICE_UNAVAILABLE,
            "too many sessions are open",
        );
    }
    let delete = parts.method == http::Method::DELETE;
    // A `GET` stream only waits for what the server may send: it ends when
    // a drain begins.
    let ends = (parts.method == http::Method::GET)
        .then(|| Box::pin(guard.draining.clone().cancelled_owned()));
    parts.extensions.insert(ClientName(client.clone()));
    let response = mcp
        .handle(Request::from_parts(parts, Body::from(bytes)))
        .await
        .map(Body::new);
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
            ends,
        }),
    )
}

/// A response body holding a request slot until it is dropped, and
/// otherwise the body itself: its size, so that a whole answer goes out
/// with a `Content-Length` in one write rather than chunked. A `GET`
/// stream ends where it is once `ends` is ready (a drain began).
struct Held {
    inner: Body,
    _permit: tokio::sync::OwnedSemaphorePermit,
    ends: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
}

impl http_body::Body for Held {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if let Some(ends) = self.ends.as_mut()
            && ends.as_mut().poll(cx).is_ready()
        {
            return std::task::Poll::Ready(None);
        }
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The future's output if it is ready at its first poll.
fn futures_now<F: Future>(future: Pin<&mut F>) -> Option<F::Output> {
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.poll(&mut context) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}

/// Whether a request is an `initialize` request (which opens a
/// 2025-11-25 session). A request of 2026-07-28 names its method in the
/// `Mcp-Method` header (rmcp refuses one whose body says otherwise): it
/// is never `initialize`, and its body need not be parsed here.
fn opens_session(headers: &http::HeaderMap, body: &[u8]) -> bool {
    if let Some(method) = headers.get("mcp-method") {
        return method == "initialize";
    }
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
