//! Stand-ins for the world outside a plugin, for tests: a [`StandIn`] in a
//! [`PluginSpec`](crate::PluginSpec) answers the programs the plugin asks
//! to run and the HTTP requests it sends, instead of running or sending
//! them. The `tiny-harness-testing` crate scripts one.
//!
//! Invariants:
//! - Everything before the answer is the production path: an exec `cwd`
//!   must lie in a granted directory, an HTTP request must match a net
//!   grant (its scheme, host and port; no lookup is made, since nothing is
//!   sent) and stay within the call's request count, and its body within
//!   the request limit; a response body is capped at the response limit
//!   exactly as a real one.
//! - Which programs may run is the stand-in's to decide (a test's program
//!   need not exist on the machine), so it also answers `denied`.
//! - A config file never sets one: only code that builds a spec can.

use super::bindings::tiny_harness::plugin::exec::{Command, ExecError, Output};

/// One HTTP request a plugin sent, as the host received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The method, such as `GET`.
    pub method: String,
    /// The URL, as the plugin wrote it (scheme, authority, path, query).
    pub url: String,
    /// The headers, names in lower case, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body.
    pub body: Vec<u8>,
}

/// The answer to an HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body (the plugin reads at most its response limit of it).
    pub body: Vec<u8>,
}

/// Answers a plugin's programs and requests in place of the world.
pub trait StandIn: Send + Sync + std::fmt::Debug {
    /// The outcome of running `command` (its `cwd` already checked against
    /// the grants), or why it did not run (`denied` when the test grants no
    /// such program).
    fn exec(&self, command: &Command) -> Result<Output, ExecError>;

    /// The response to `request`, which the plugin's net grants allow, or
    /// why it could not be reached (the plugin sees `internal-error` with
    /// its one-line message).
    fn http(&self, request: &HttpRequest) -> Result<HttpResponse, StandInError>;
}

/// Why a stand-in did not answer an HTTP request. The plugin sees
/// `internal-error` with the one-line message; the cause, when there is
/// one, stays the error's source for the test to inspect.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StandInError {
    /// The stand-in has no answer for it: what the test says.
    #[error("{0}")]
    Unanswered(String),
    /// Reaching the answer failed: the error, shown by its own message.
    #[error("{0}")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync>),
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::StandInError;

    #[test]
    fn a_failed_answer_keeps_its_cause_on_one_line() {
        let cause = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let error = StandInError::Failed(cause.into());
        assert_eq!(error.to_string(), "refused");
        let source = error.source().expect("the cause is the source");
        assert_eq!(
            source
                .downcast_ref::<std::io::Error>()
                .map(std::io::Error::kind),
            Some(std::io::ErrorKind::ConnectionRefused)
        );
        assert!(
            StandInError::Unanswered("no page".into())
                .source()
                .is_none()
        );
    }
}
