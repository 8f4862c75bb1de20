//! What an HTTP server answers a host that sends no token: how `mcp login`
//! learns whether there is anything to log in to, and what the server
//! asks for when there is. The session's own path is used
//! ([`connect::connect`]: `server/discover`, then `initialize` at
//! 2025-11-25 when the server does not answer it), so a server meets the
//! login exactly as it meets every session; only the token is left out.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::super::client::{Handler, Shared};
use super::super::connect::{self, close};
use super::super::launch::{Endpoint, Launch, Target};
use super::McpSource;

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
                login: None,
                oauth: None,
            }),
            timeout: launch.timeout,
            start_timeout: launch.start_timeout,
            eager: false,
            roots: launch.roots.clone(),
        };
        let handler = Handler {
            server: format!("{}/{}", self.plugin, self.server).into(),
            shared: Arc::new(Shared::default()),
            protocol: rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE,
            roots: bare.roots.clone().into(),
        };
        let opened = tokio::time::timeout(
            bare.start_timeout,
            connect::connect(
                &bare,
                handler,
                &self.limits,
                &self.server,
                &AtomicU64::new(0),
            ),
        )
        .await;
        let open = match opened {
            Err(_) => {
                return Some(Unauthenticated::Failed(format!(
                    "it did not open a session within {} ms (its start_timeout_ms)",
                    bare.start_timeout.as_millis()
                )));
            }
            Ok(Err(failure)) => {
                return Some(match failure.challenge {
                    Some(challenge) => Unauthenticated::Challenged(challenge),
                    None => Unauthenticated::Failed(failure.reason),
                });
            }
            Ok(Ok(open)) => open,
        };
        let listed = tokio::time::timeout(bare.timeout, open.service.peer().list_tools(None)).await;
        let answer = match listed {
            Ok(Ok(_)) => Unauthenticated::Answered,
            Ok(Err(e)) => match e.auth_challenge() {
                Some(challenge) => Unauthenticated::Challenged(challenge.to_owned()),
                None => Unauthenticated::Failed(format!(
                    "it opened a session but did not list its tools: {}",
                    crate::display::one_line(&e.to_string())
                )),
            },
            Err(_) => Unauthenticated::Failed(format!(
                "it opened a session but did not list its tools within {} ms",
                bare.timeout.as_millis()
            )),
        };
        close(open).await;
        Some(answer)
    }
}
