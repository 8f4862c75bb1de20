//! The host's side of one MCP session: what it tells a server about itself
//! and how it answers what a server sends unasked.
//!
//! Invariants:
//! - A server's request never hangs a call: `roots/list` is answered (with
//!   the declared roots, none by default), sampling and elicitation are
//!   refused with an error at once.
//! - What a server sends unasked costs bounded memory: log messages go to
//!   `tracing` (at most [`MAX_LOG_MESSAGES`] per session), progress
//!   notifications are kept as the last [`MAX_PROGRESS`].
//! - `notifications/tools/list_changed` marks the session stale at once.

// Sampling, roots and logging are deprecated by the 2026-07-28 revision,
// and still what servers speaking 2025-11-25 use: they must be answered.
#![allow(deprecated)]

use std::collections::VecDeque;
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

/// Log messages from one session passed to `tracing`; the rest are counted.
pub const MAX_LOG_MESSAGES: usize = 1000;

/// Progress notifications kept per session.
pub const MAX_PROGRESS: usize = 64;

/// What a session's handler shares with its source.
#[derive(Debug, Default)]
pub struct Shared {
    /// Set by `tools/list_changed`: re-list before the next call.
    pub stale: AtomicBool,
    logged: AtomicUsize,
    progress: Mutex<VecDeque<ProgressNotificationParam>>,
}

impl Shared {
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
        if let Ok(mut progress) = self.shared.progress.lock() {
            if progress.len() == MAX_PROGRESS {
                progress.pop_front();
            }
            progress.push_back(params);
        }
    }
}
