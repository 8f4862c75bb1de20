//! The host's side of one MCP session: what it tells a server about itself
//! and how it answers what a server sends unasked.
//!
//! Invariants:
//! - A server's request never hangs a call: `roots/list` is answered (with
//!   the declared roots, none by default), sampling and elicitation are
//!   refused with an error at once.
//! - What a server sends unasked costs bounded memory: log messages go to
//!   `tracing` (at most [`MAX_LOG_MESSAGES`] per session), progress
//!   notifications are kept as the last [`MAX_PROGRESS`], and passed to
//!   the sink of the call whose request carried their token (a caller's
//!   [`tiny_harness_core::progress`] sink), at most
//!   [`MAX_PROGRESS_SINKS`] calls at once.
//! - `notifications/tools/list_changed` marks the session stale at once.

// Sampling, roots and logging are deprecated by the 2026-07-28 revision,
// and still what servers speaking 2025-11-25 use: they must be answered.
#![allow(deprecated)]

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, Implementation, ListRootsResult,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion, Root,
    RootsCapabilities,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tiny_harness_core::progress::{Progress, ProgressSink};

/// Log messages from one session passed to `tracing`; the rest are counted.
pub const MAX_LOG_MESSAGES: usize = 1000;

/// Progress notifications kept per session.
pub const MAX_PROGRESS: usize = 64;

/// The most calls at once whose progress is passed on, per session.
pub const MAX_PROGRESS_SINKS: usize = 1024;

/// What a session's handler shares with its source.
#[derive(Debug, Default)]
pub struct Shared {
    /// Set by `tools/list_changed`: re-list before the next call.
    pub stale: AtomicBool,
    logged: AtomicUsize,
    progress: Mutex<VecDeque<ProgressNotificationParam>>,
    /// The callers' sinks of the calls in flight, by the progress token
    /// each call's request carries.
    sinks: Mutex<HashMap<String, Arc<dyn ProgressSink>>>,
}

/// A call's progress token, routed to its caller's sink until dropped.
#[derive(Debug)]
pub struct ProgressRoute {
    shared: Arc<Shared>,
    token: String,
}

/// A progress token as the key of its sink.
fn token_key(token: &rmcp::model::ProgressToken) -> String {
    match &token.0 {
        rmcp::model::NumberOrString::Number(n) => format!("n{n}"),
        rmcp::model::NumberOrString::String(s) => format!("s{s}"),
    }
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        if let Ok(mut sinks) = self.shared.sinks.lock() {
            sinks.remove(&self.token);
        }
    }
}

impl Shared {
    /// Routes the progress the server reports under `token` (a call's
    /// request's) to `sink`, while the returned route lives; `None` when
    /// too many calls already have one.
    pub fn route_progress(
        self: &Arc<Self>,
        token: &rmcp::model::ProgressToken,
        sink: Arc<dyn ProgressSink>,
    ) -> Option<ProgressRoute> {
        let mut sinks = self.sinks.lock().ok()?;
        if sinks.len() >= MAX_PROGRESS_SINKS {
            return None;
        }
        let token = token_key(token);
        sinks.insert(token.clone(), sink);
        Some(ProgressRoute {
            shared: self.clone(),
            token,
        })
    }

    /// The progress notifications kept, oldest first.
    pub fn progress(&self) -> Vec<ProgressNotificationParam> {
        self.progress
            .lock()
            .map(|p| p.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// How many log messages the server sent.
    pub fn log_messages(&self) -> usize {
        self.logged.load(Ordering::Relaxed)
    }
}

/// The host as an MCP client, for one server.
#[derive(Debug, Clone)]
pub struct Handler {
    /// `<plugin>/<server>`, for logs.
    pub server: Arc<str>,
    /// State shared with the source.
    pub shared: Arc<Shared>,
    /// The version offered in `initialize`.
    pub protocol: ProtocolVersion,
    /// What `roots/list` answers (`file://` URIs); the roots capability is
    /// declared only when there are some.
    pub roots: Arc<[String]>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if !self.roots.is_empty() {
            capabilities.roots = Some(RootsCapabilities::default());
        }
        let mut info = ClientConfig::new(
            capabilities,
            Implementation::new("tiny-harness", env!("CARGO_PKG_VERSION")),
        );
        info.protocol_version = self.protocol.clone();
        info
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Err(ErrorData::invalid_request(
            "this client does not offer sampling",
            None,
        ))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Err(ErrorData::invalid_request(
            "this client does not offer elicitation",
            None,
        ))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(
            self.roots
                .iter()
                .map(|uri| Root::new(uri.clone()))
                .collect(),
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.stale.store(true, Ordering::SeqCst);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let seen = self.shared.logged.fetch_add(1, Ordering::Relaxed);
        if seen < MAX_LOG_MESSAGES {
            let mut text = params.data.to_string();
            text.truncate(text.floor_char_boundary(1024));
            tracing::info!(
                target: "tiny_harness::mcp",
                server = %self.server,
                level = ?params.level,
                "{}",
                tiny_harness_core::display::one_line(&text)
            );
        } else if seen == MAX_LOG_MESSAGES {
            tracing::info!(target: "tiny_harness::mcp", server = %self.server, "further log messages are not shown");
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let token = token_key(&params.progress_token);
        let sink = self
            .shared
            .sinks
            .lock()
            .ok()
            .and_then(|sinks| sinks.get(&token).cloned());
        if let Some(sink) = sink {
            let mut message = params.message.clone();
            if let Some(text) = &mut message {
                text.truncate(text.floor_char_boundary(1024));
            }
            sink.report(Progress::new(params.progress, params.total, message));
        }
        if let Ok(mut progress) = self.shared.progress.lock() {
            if progress.len() == MAX_PROGRESS {
                progress.pop_front();
            }
            progress.push_back(params);
        }
    }
}
