//! One `tools/call` request, answered as the server's JSON.
//!
//! rmcp's typed `call_tool_once` refuses a whole result it cannot decode
//! (one content part of a type it does not know, a `content` that is not a
//! list) as "unexpected response type", and the call would be reported as
//! a transport failure and retried. Here a result rmcp decoded as a
//! `CallToolResult` is taken as it is ([`super::convert::typed_result`]),
//! and one it decoded as anything else goes back to JSON, for
//! [`super::convert::result`] to decide part by part: unknown parts become
//! a placeholder, a malformed result is a typed `invalid_output`, never
//! retried. Both convert a result alike.
//!
//! Invariants: dropping the future before the answer sends
//! `notifications/cancelled` for the request (that one only), as rmcp's
//! own call does; the server's progress under the request's token goes
//! to the caller's sink ([`tiny_harness_core::progress`]) until the
//! answer, and so do its log messages, every one sent before the answer
//! included ([`super::owed`]).

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, RequestId,
    ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;

use super::client::Shared;
use std::sync::Arc;
use tiny_harness_core::progress::{LogLevel, ProgressSink};

/// What a server answered to `tools/call`.
pub(super) enum Answer {
    /// A result, as JSON (to be checked by `convert::result`).
    Complete(Value),
    /// A result rmcp decoded as one (to be checked by
    /// `convert::typed_result`).
    Typed(rmcp::model::CallToolResult),
    /// The 2026-07-28 multi-round-trip pattern asking for input.
    InputRequired,
    /// A task (SEP-2663), which the host does not follow.
    Task,
}

/// Sends `tools/call` with `params` and waits for the answer.
pub(super) async fn call_tool(
    peer: &Peer<RoleClient>,
    mut params: CallToolRequestParams,
    shared: &Arc<Shared>,
) -> Result<Answer, ServiceError> {
    let sink = tiny_harness_core::progress::current();
    if let Some(least) = wanted_log_level(peer, sink.as_deref()).and_then(LogLevel::convert) {
        params
            .meta
            .get_or_insert_with(Default::default)
            .set_log_level(least);
    }
    // The caller's progress sink, if it gave one, gets what the server
    // sends about the request until the answer: routed before the request
    // is sent (a server may log at once), keyed by the request's progress
    // token once it is known.
    let mut route = sink.and_then(|sink| shared.route_pending(sink));
    let handle = peer
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await?;
    if let Some(route) = &mut route {
        route.settle(&handle.progress_token);
    }
    let mut guard = Abandoned {
        peer,
        id: Some(handle.id.clone()),
    };
    let answered = handle.await_response().await;
    guard.id = None;
    if route.is_some() {
        // What the server sent before its answer may not have reached the
        // handler yet: it does, before the route closes.
        shared.owed.catch_up().await;
    }
    drop(route);
    Ok(match answered? {
        ServerResult::InputRequiredResult(_) => Answer::InputRequired,
        ServerResult::CreateTaskResult(_) => Answer::Task,
        ServerResult::CustomResult(custom) => Answer::Complete(custom.0),
        ServerResult::EmptyResult(_) => Answer::Complete(Value::Object(Default::default())),
        ServerResult::CallToolResult(result) => Answer::Typed(result),
        // Whatever else rmcp decoded it as, back to JSON.
        other => Answer::Complete(serde_json::to_value(&other).unwrap_or(Value::Null)),
    })
}

/// The least level of the log messages a call asks its server for
/// (`_meta.logLevel`), if any: the caller's sink's level, and at
/// 2026-07-28 `info` when something listens on `tracing`, where the
/// session's logs go within its log budget (the CLI's `--verbose`, an
/// embedder's subscriber); the more detailed of the two.
///
/// At 2026-07-28 a server logs only for requests that ask it to (earlier
/// revisions send every log, asked or not). Nobody listening and no sink,
/// nothing is asked: a server asked for logs does work for them, which
/// nobody would read (`docs/performance.md`, "Lines of memory per call").
/// (MCP logging is deprecated by SEP-2577; servers still send it, and it
/// is what tells a user why a server misbehaves.)
fn wanted_log_level(peer: &Peer<RoleClient>, sink: Option<&dyn ProgressSink>) -> Option<LogLevel> {
    let for_sink = sink.and_then(ProgressSink::log_level);
    let for_tracing = (tracing::enabled!(target: "tiny_harness::mcp", tracing::Level::INFO)
        && peer
            .peer_info()
            .is_some_and(|info| !info.protocol_version.has_initialize()))
    .then_some(LogLevel::Info);
    more_detailed(for_sink, for_tracing)
}

/// The more detailed of two wanted levels (levels are ordered from the
/// most detailed), or the one there is.
fn more_detailed(a: Option<LogLevel>, b: Option<LogLevel>) -> Option<LogLevel> {
    a.into_iter().chain(b).min()
}

/// Sends `notifications/cancelled` for a request abandoned before its
/// answer (its future dropped at a deadline). The peer is cloned only
/// then: a call that is answered touches no count of the peer's.
struct Abandoned<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(
                        Some(id),
                        Some("request abandoned by the caller".to_owned()),
                    ))
                    .await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_asks_for_the_more_detailed_of_the_sink_and_the_log() {
        let (info, warning) = (Some(LogLevel::Info), Some(LogLevel::Warning));
        assert_eq!(
            more_detailed(warning, info),
            info,
            "a sink asking less does not hide the log's"
        );
        assert_eq!(
            more_detailed(Some(LogLevel::Debug), info),
            Some(LogLevel::Debug)
        );
        assert_eq!(more_detailed(None, warning), warning);
        assert_eq!(more_detailed(None, None), None);
    }
}
