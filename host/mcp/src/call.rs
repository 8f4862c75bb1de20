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
    // A server at 2026-07-28 sends log messages about a request only when
    // the request asks for them (earlier revisions send them unasked).
    let least = sink.as_ref().and_then(|sink| sink.log_level());
    if let Some(least) = least.and_then(tiny_harness_core::progress::LogLevel::convert) {
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
        peer: peer.clone(),
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

/// Sends `notifications/cancelled` for a request abandoned before its
/// answer (its future dropped at a deadline).
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
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
