//! What the runtime asks of OAuth, in a host built without the `oauth`
//! feature: no login is kept, attached or refreshed. A server that declares
//! an `oauth` block is refused at launch (see `launch`), and one that asks
//! for a login (its 401 or 403) is refused saying that this host has no
//! logins, never retried.

use std::sync::Arc;

/// A login's token for a session: none exists in this build.
pub(crate) enum Attached {}

impl Attached {
    /// Never called: there is no login.
    pub(crate) fn take_replaced(&self) -> bool {
        match *self {}
    }
}

/// What the OAuth side needs of a server's endpoint: nothing, in this
/// build.
#[derive(Clone, Copy)]
pub(crate) struct Auth<'a> {
    /// The endpoint it is of.
    pub endpoint: std::marker::PhantomData<&'a ()>,
}

impl Auth<'_> {
    /// The key of its login, for `Debug`: none.
    pub(crate) fn login_key(&self) -> Option<&str> {
        None
    }
}

/// A server's refusal of the host's credentials, for people and the model.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    /// One line saying what to do.
    pub reason: String,
    /// Whether `mcp login` would help: never, in this build.
    pub login_would_help: bool,
}

/// No token: this build keeps no logins.
pub(crate) async fn attach(_: Auth<'_>) -> Result<Option<Arc<Attached>>, std::convert::Infallible> {
    Ok(None)
}

/// No token: this build obtains none.
pub(crate) async fn attach_anew(
    _: Auth<'_>,
) -> Result<Option<Arc<Attached>>, std::convert::Infallible> {
    Ok(None)
}

/// The HTTP client of a session: reqwest's own.
pub(crate) fn session_client(http: reqwest::Client, _: Option<Arc<Attached>>) -> reqwest::Client {
    http
}

/// A server that asks for a login, which this build cannot give.
pub(crate) fn refusal(server: &str, _: Auth<'_>, _: &str, _: bool) -> Refusal {
    Refusal {
        reason: format!(
            "server {server} asks for an OAuth login, and this host was built without the oauth \
             feature of tiny-harness-host: build it with that feature to log in"
        ),
        login_would_help: false,
    }
}

/// [`refusal`] of a call on an open session.
pub(crate) fn refusal_during_call(server: &str, auth: Auth<'_>, challenge: &str) -> Refusal {
    refusal(server, auth, challenge, false)
}
