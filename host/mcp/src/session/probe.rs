//! What an HTTP server answers a host that sends no token: how `mcp login`
//! learns whether there is anything to log in to, and what the server
//! asks for when there is. The session's own path is used
//! ([`connect::connect`]: `server/discover`, then `initialize` at
//! 2025-11-25 when the server does not answer it), so a server meets the
//! login exactly as it meets every session; only the token is left out.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::super::client::{Handler, Shared};
use super::super::connect::{self, Failure, close};
use super::super::launch::{Endpoint, Launch, Target};
use super::McpSource;
use super::SourceLimits;

/// What a server answered a session opened without a token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unauthenticated {
    /// It opened the session and listed its tools: it asks for no login.
    Answered,
    /// It refused (HTTP 401 or 403) with this `WWW-Authenticate`
    /// challenge.
    Challenged(String),
    /// It could not be reached or did not open a session: why, in one
    /// line.
    Failed(String),
}

impl McpSource {
    /// Opens a session with this HTTP server as every session does, but
    /// without the token of its login (a machine grant's token included),
    /// lists the first page of its tools, and closes it: whether the
    /// server asks for a login. Bounded by the server's start and call
    /// timeouts; the source's own session is not touched. `None` for a
    /// server that is not reached over HTTP or could not be resolved.
    pub async fn without_login(&self) -> Option<Unauthenticated> {
        let launch = self.launch.as_ref()?;
        let Target::Http(endpoint) = &launch.target else {
            return None;
        };
        let bare = Launch {
            server: launch.server.clone(),
            target: Target::Http(Endpoint {
                url: endpoint.url.clone(),
                grant: endpoint.grant.clone(),
                headers: endpoint.headers.clone(),
                #[cfg(feature = "oauth")]
                login: None,
                #[cfg(feature = "oauth")]
                oauth: None,
            }),
            timeout: launch.timeout,
            start_timeout: launch.start_timeout,
            eager: false,
            roots: launch.roots.clone(),
            store_check: None,
        };
        Some(match once(&bare, &self.plugin, &self.limits).await {
            Once::Listed(_) => Unauthenticated::Answered,
            Once::Unopened {
                challenge: Some(challenge),
                ..
            }
            | Once::Unlisted {
                challenge: Some(challenge),
                ..
            } => Unauthenticated::Challenged(challenge),
            Once::Unopened { failure, .. } => Unauthenticated::Failed(failure.reason),
            Once::Unlisted { reason, .. } => Unauthenticated::Failed(reason),
        })
    }
}

/// How one session opened the way every session opens went, with the
/// first page of tools listed.
pub enum Once {
    /// It listed this many tools (on its first page).
    Listed(usize),
    /// No session opened: why (a timeout said as one), and the server's
    /// `WWW-Authenticate` challenge when it refused so.
    Unopened {
        /// Why it did not open.
        failure: Failure,
        /// The server's `WWW-Authenticate` challenge, if it sent one.
        challenge: Option<String>,
    },
    /// A session opened, but the listing failed: why, in one line.
    Unlisted {
        /// Why the listing failed.
        reason: String,
        /// The server's `WWW-Authenticate` challenge, if it sent one.
        challenge: Option<String>,
    },
}

/// Opens one session with `launch`'s server (of plugin `plugin`) through
/// `connect::connect`, with a handler state of its own, lists the first
/// page of its tools and closes it (a program started is stopped with
/// all it started). Bounded by the launch's start and call timeouts.
pub async fn once(launch: &Launch, plugin: &str, limits: &SourceLimits) -> Once {
    let handler = Handler {
        server: format!("{plugin}/{}", launch.server).into(),
        shared: Arc::new(Shared::default()),
        protocol: rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE,
        roots: launch.roots.clone().into(),
    };
    let opened = tokio::time::timeout(
        launch.start_timeout,
        connect::connect(
            launch,
            handler,
            limits.message_bytes(),
            &launch.server,
            &AtomicU64::new(0),
        ),
    )
    .await;
    let open = match opened {
        Err(_) => {
            return Once::Unopened {
                failure: Failure::from(format!(
                    "it did not open a session within {} ms (its start_timeout_ms)",
                    launch.start_timeout.as_millis()
                )),
                challenge: None,
            };
        }
        Ok(Err(failure)) => {
            let challenge = failure.challenge.clone();
            return Once::Unopened { failure, challenge };
        }
        Ok(Ok(open)) => open,
    };
    let listed = tokio::time::timeout(launch.timeout, open.service.peer().list_tools(None)).await;
    let answer = match listed {
        Ok(Ok(page)) => Once::Listed(page.tools.len()),
        Ok(Err(e)) => Once::Unlisted {
            challenge: e.auth_challenge().map(str::to_owned),
            reason: format!(
                "it opened a session but did not list its tools: {}",
                tiny_harness_core::display::one_line(&e.to_string())
            ),
        },
        Err(_) => Once::Unlisted {
            reason: format!(
                "it opened a session but did not list its tools within {} ms",
                launch.timeout.as_millis()
            ),
            challenge: None,
        },
    };
    close(open).await;
    answer
}
