//! Outbound HTTP for plugins: `wasi:http/outgoing-handler`, with the host
//! doing every connect itself under the plugin's `net` grants.
//!
//! Invariants (each request, every redirect hop included, since `wasi:http`
//! follows none and a plugin that follows one sends a new request):
//! - The URL's scheme, host and port must match one of the plugin's
//!   [`NetGrant`]s; a host must be written in its standard form (an IPv4
//!   address as four decimal numbers: `2130706433`, `0x7f.1` and
//!   `127.000.000.001` are refused, whatever the grants).
//! - A name is resolved once, through the plugin's [`Resolve`]; every
//!   address it returns is checked, and the connection is made to one of
//!   those very addresses (no second lookup). If any of them is
//!   [special](address::Special) (loopback, link-local, private, CGNAT,
//!   unspecified, multicast, reserved, or an IPv6 form embedding one of
//!   these), the request is refused unless the grant that matched names
//!   the host literally: `http://127.0.0.1:8080` reaches that loopback port,
//!   `http://localhost:8080` reaches whatever `localhost` is, but
//!   `http://*.example.com:*` never reaches a special address.
//! - Every request is bounded ([`HttpLimits`]): its time (connect, headers
//!   and body together, never past the call's deadline), its request and
//!   response body sizes, and the number of requests in one call.
//! - A plugin without net grants, or one registering, can send nothing.
//!   Refusals reach the guest as `internal-error` with a one-line message
//!   beginning `denied: `, which says what to grant.
//!
//! `wasi:sockets` is not affected: no grant opens a raw socket (see
//! [`crate::CallState`]).

pub mod address;
pub mod resolve;
#[cfg(feature = "http")]
mod send;

use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(feature = "http")]
use wasmtime_wasi_http::{RequestOptions, WasiBody, WasiHttpHooks};

pub use address::Special;
pub use resolve::{Resolve, ResolveError, StaticResolver, SystemResolver};
use tiny_harness_sandbox::grant::{NetDenied, NetGrant};

/// How much outbound HTTP one call may use. Part of a plugin's
/// [`Limits`](crate::Limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpLimits {
    /// The most bytes of one response body the host passes to the plugin;
    /// reading further fails with `HTTP-response-body-size`. Without it a
    /// server could stream into the host for as long as the call lasts.
    pub response_bytes: usize,
    /// The most bytes of one request body the host sends.
    pub request_bytes: usize,
    /// The longest one request may take, from its start to the end of its
    /// response body; never longer than what remains of the call.
    pub timeout: Duration,
    /// The most requests one call may send (redirect hops count, so this
    /// also bounds a redirect loop).
    pub requests: usize,
}

impl HttpLimits {
    /// 4 MiB.
    pub const DEFAULT_RESPONSE_BYTES: usize = 4 << 20;
    /// 4 MiB.
    pub const DEFAULT_REQUEST_BYTES: usize = 4 << 20;
    /// 30 seconds.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// 32 requests.
    pub const DEFAULT_REQUESTS: usize = 32;
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            response_bytes: Self::DEFAULT_RESPONSE_BYTES,
            request_bytes: Self::DEFAULT_REQUEST_BYTES,
            timeout: Self::DEFAULT_TIMEOUT,
            requests: Self::DEFAULT_REQUESTS,
        }
    }
}

/// What one plugin's requests may reach, and how they are resolved.
#[derive(Debug)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub struct HttpPolicy {
    grants: Vec<NetGrant>,
    limits: HttpLimits,
    resolver: Arc<dyn Resolve>,
    stand_in: Option<Arc<dyn crate::StandIn>>,
}

impl HttpPolicy {
    /// A policy allowing exactly `grants`, within `limits`, resolving names
    /// with `resolver`.
    pub fn new(grants: Vec<NetGrant>, limits: HttpLimits, resolver: Arc<dyn Resolve>) -> Self {
        HttpPolicy {
            grants,
            limits,
            resolver,
            stand_in: None,
        }
    }

    /// The same, with `stand_in` answering every request the grants allow
    /// instead of sending it (for tests; see [`crate::StandIn`]).
    pub fn with_stand_in(self, stand_in: Option<Arc<dyn crate::StandIn>>) -> Self {
        HttpPolicy { stand_in, ..self }
    }
}

/// Why the host refused a request. Display is one line that says what to
/// change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpDenied {
    /// No grant allows the URL.
    #[error(transparent)]
    NotGranted(#[from] NetDenied),
    /// The host is written in a form other than its standard one.
    #[error(
        "{scheme}://{written}/ writes its host in a non-standard form: write it as {canonical}"
    )]
    NonStandardHost {
        /// The URL's scheme.
        scheme: String,
        /// The host as the plugin wrote it.
        written: String,
        /// The same host in standard form.
        canonical: String,
    },
    /// The URL is not `scheme://host[:port]` with a path.
    #[error("{0}")]
    BadUrl(String),
    /// The destination is a special address and the grant does not name
    /// the host literally.
    #[error(
        "{url} resolves to {address}, {why}, and the grant {grant:?} names no host literally: grant it by name with net = [{suggestion:?}]"
    )]
    SpecialAddress {
        /// The URL (scheme, host and port only).
        url: String,
        /// The address it resolved to.
        address: std::net::IpAddr,
        /// What kind of address it is.
        why: Special,
        /// The grant that matched.
        grant: String,
        /// The grant that would allow it.
        suggestion: String,
    },
    /// The call already sent its [`HttpLimits::requests`].
    #[error(
        "this call already sent {limit} HTTP requests (limits.http_requests); redirects count as requests"
    )]
    TooManyRequests {
        /// The limit.
        limit: usize,
    },
    /// The plugin may not send requests now.
    #[error("{0}")]
    Closed(&'static str),
}

/// One call's outbound HTTP: the plugin's policy (if it may send at all),
/// the call's deadline and how many requests it sent. The `wasi:http`
/// hooks of every store.
#[derive(Debug)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub struct OutboundHttp {
    /// The policy and the call's deadline; none while nothing may be sent.
    policy: Option<(Arc<HttpPolicy>, Instant)>,
    sent: usize,
}

impl OutboundHttp {
    /// Nothing may be sent (while registering, or with no grants).
    pub fn closed() -> Self {
        OutboundHttp {
            policy: None,
            sent: 0,
        }
    }

    /// Requests allowed by `policy`, until `deadline`.
    pub fn new(policy: Arc<HttpPolicy>, deadline: Instant) -> Self {
        OutboundHttp {
            policy: Some((policy, deadline)),
            sent: 0,
        }
    }
}

#[cfg(feature = "http")]
type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                ),
                wasmtime_wasi_http::Error,
            >,
        > + Send,
>;

#[cfg(feature = "http")]
impl WasiHttpHooks for OutboundHttp {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> SendFuture {
        let refuse = |denied: HttpDenied| -> SendFuture {
            Box::new(async move { Err(send::denied(&denied)) })
        };
        let Some((policy, deadline)) = self.policy.clone() else {
            return refuse(HttpDenied::Closed(
                "this plugin may not send HTTP requests now (none while registering)",
            ));
        };
        if policy.grants.is_empty() {
            return refuse(HttpDenied::Closed(
                "this plugin has no net grants: add net = [\"https://host:port\"] to its grants",
            ));
        }
        self.sent += 1;
        if self.sent > policy.limits.requests {
            return refuse(HttpDenied::TooManyRequests {
                limit: policy.limits.requests,
            });
        }
        Box::new(async move { send::send(&policy, request, options, deadline).await })
    }
}

#[cfg(test)]
#[cfg(feature = "http")]
mod tests;
