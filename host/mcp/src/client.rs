//! The host's side of one MCP session: what it tells a server about itself
//! and how it answers what a server sends unasked.
//!
//! Invariants:
//! - A server's request never hangs a call: `roots/list` is answered (with
//!   the declared roots, none by default), sampling and elicitation are
//!   refused with an error at once.
//! - What a server sends unasked costs bounded memory: log messages go to
//!   `tracing` (at most [`MAX_LOG_MESSAGES`] per session), and to the sink
//!   of the one call in flight when there is only one (at most
//!   [`MAX_PASSED_LOG_BYTES`] each), progress
//!   notifications are kept as the last [`MAX_PROGRESS`], and passed to
//!   the sink of the call whose request carried their token (a caller's
//!   [`tiny_harness_core::progress`] sink), at most
//!   [`MAX_PROGRESS_SINKS`] calls at once.
//! - `notifications/tools/list_changed` marks the session stale at once
//!   and bumps a count its source's watchers wait on (a watch: a flood of
//!   notifications wakes a watcher once).

// Sampling, roots and logging are deprecated by the 2026-07-28 revision,
// and still what servers speaking 2025-11-25 use: they must be answered.
#![allow(deprecated)]

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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
use tiny_harness_core::progress::{Log, LogLevel, Progress, ProgressSink};

/// Log messages from one session passed to `tracing`; the rest are counted.
pub const MAX_LOG_MESSAGES: usize = 1000;

/// Progress notifications kept per session.
pub const MAX_PROGRESS: usize = 64;

/// The most calls at once whose progress is passed on, per session.
pub const MAX_PROGRESS_SINKS: usize = 1024;

/// The largest log message (its data as JSON) passed to a caller's sink;
/// a larger one is passed as a line saying so.
pub const MAX_PASSED_LOG_BYTES: usize = 16 * 1024;

/// What a session's handler shares with its source.
#[derive(Debug, Default)]
pub struct Shared {
    /// Set by `tools/list_changed`: re-list before the next call.
    pub stale: AtomicBool,
    /// How many times the server said its tools changed, for whoever
    /// waits on it ([`Shared::tool_changes`]); a watch keeps only the last
    /// count, so a flood of notifications wakes a waiter once.
    changes: tokio::sync::watch::Sender<u64>,
    logged: AtomicUsize,
    progress: Mutex<VecDeque<ProgressNotificationParam>>,
    /// The callers' sinks of the calls in flight, by the progress token
    /// each call's request carries.
    sinks: Mutex<HashMap<String, Arc<dyn ProgressSink>>>,
    /// The notifications received for the sinks, and those routed.
    pub(crate) owed: Arc<super::owed::Owed>,
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

impl ProgressRoute {
    /// Keys the route by the request's progress `token` from now on (in
    /// one step: a log message routed meanwhile still finds one sink).
    pub(crate) fn settle(&mut self, token: &rmcp::model::ProgressToken) {
        let key = token_key(token);
        if let Ok(mut sinks) = self.shared.sinks.lock()
            && let Some(sink) = sinks.remove(&self.token)
        {
            sinks.insert(key.clone(), sink);
            self.token = key;
        }
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
    /// The server said its tools changed (on the session, or on a
    /// `subscriptions/listen` stream): the source is stale, and whoever
    /// waits on [`Shared::tool_changes`] is woken.
    pub fn tools_changed(&self) {
        self.stale.store(true, Ordering::SeqCst);
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// A receiver of the count of [`Shared::tools_changed`], marked seen:
    /// its `changed()` resolves at the next change, and errs once the
    /// session's state is dropped with its source.
    pub fn tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Routes to `sink`, before the call's request is sent, what the
    /// server sends for it from the start: its log messages at once (they
    /// go to the one sink in flight, whatever its key), its progress once
    /// [`ProgressRoute::settle`] gives the request's token. A server may
    /// log before the request's send has returned to the caller.
    pub(crate) fn route_pending(
        self: &Arc<Self>,
        sink: Arc<dyn ProgressSink>,
    ) -> Option<ProgressRoute> {
        static PENDING: AtomicU64 = AtomicU64::new(0);
        let mut sinks = self.sinks.lock().ok()?;
        if sinks.len() >= MAX_PROGRESS_SINKS {
            return None;
        }
        let key = format!("p{}", PENDING.fetch_add(1, Ordering::Relaxed));
        sinks.insert(key.clone(), sink);
        Some(ProgressRoute {
            shared: self.clone(),
            token: key,
        })
    }

    /// Passes a log message to the sink of the call in flight, when there
    /// is exactly one (MCP does not say which request a log message is
    /// about: with two calls in flight, either caller could be shown the
    /// other's message, so neither is) and it wants messages this severe.
    fn pass_log(&self, params: &LoggingMessageNotificationParam) {
        let Ok(sinks) = self.sinks.lock() else {
            return;
        };
        let mut sinks = sinks.values();
        let (Some(sink), None) = (sinks.next(), sinks.next()) else {
            return;
        };
        let Some(level) = LogLevel::convert(params.level) else {
            return;
        };
        if sink.log_level().is_none_or(|least| level < least) {
            return;
        }
        let data = if params.data.to_string().len() > MAX_PASSED_LOG_BYTES {
            serde_json::Value::String(format!(
                "[a log message of more than {MAX_PASSED_LOG_BYTES} bytes, not passed on]"
            ))
        } else {
            params.data.clone()
        };
        let mut logger = params.logger.clone();
        if let Some(name) = &mut logger {
            name.truncate(name.floor_char_boundary(256));
        }
        sink.log(Log::new(level, logger, data));
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
        self.shared.tools_changed();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.shared.pass_log(&params);
        self.shared.owed.routed();
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
        self.shared.owed.routed();
        if let Ok(mut progress) = self.shared.progress.lock() {
            if progress.len() == MAX_PROGRESS {
                progress.pop_front();
            }
            progress.push_back(params);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{LoggingLevel, NumberOrString, ProgressToken};

    /// A sink that keeps what it is given, wanting `least` and above.
    #[derive(Debug)]
    struct Kept {
        least: Option<LogLevel>,
        logs: Mutex<Vec<Log>>,
    }

    impl ProgressSink for Kept {
        fn report(&self, _: Progress) {}
        fn log_level(&self) -> Option<LogLevel> {
            self.least
        }
        fn log(&self, log: Log) {
            self.logs.lock().unwrap().push(log);
        }
    }

    fn kept(least: Option<LogLevel>) -> Arc<Kept> {
        Arc::new(Kept {
            least,
            logs: Mutex::new(Vec::new()),
        })
    }

    fn message(level: LoggingLevel, data: serde_json::Value) -> LoggingMessageNotificationParam {
        LoggingMessageNotificationParam::new(level, data)
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    /// A route for `sink`, settled on token `n`.
    fn settled(shared: &Arc<Shared>, n: i64, sink: Arc<Kept>) -> ProgressRoute {
        let mut route = shared.route_pending(sink).unwrap();
        route.settle(&token(n));
        route
    }

    #[test]
    fn a_log_message_reaches_the_only_call_in_flight_at_its_level_and_no_other() {
        let shared = Arc::new(Shared::default());
        let first = kept(Some(LogLevel::Info));
        let route = settled(&shared, 1, first.clone());
        shared.pass_log(&message(LoggingLevel::Debug, "too low".into()));
        shared.pass_log(&message(LoggingLevel::Warning, "passed".into()));
        let big = "x".repeat(MAX_PASSED_LOG_BYTES);
        shared.pass_log(&message(LoggingLevel::Error, big.into()));
        {
            let logs = first.logs.lock().unwrap();
            assert_eq!(logs.len(), 2, "{logs:?}");
            assert_eq!(logs[0].level, LogLevel::Warning);
            assert_eq!(logs[0].data, "passed");
            assert!(logs[1].data.as_str().unwrap().contains("not passed on"));
        }
        // Two calls in flight: neither is told of a message that may be
        // the other's.
        let second = kept(Some(LogLevel::Debug));
        let other = settled(&shared, 2, second.clone());
        shared.pass_log(&message(LoggingLevel::Error, "whose?".into()));
        assert_eq!(first.logs.lock().unwrap().len(), 2);
        assert!(second.logs.lock().unwrap().is_empty());
        drop(route);
        shared.pass_log(&message(LoggingLevel::Error, "yours".into()));
        assert_eq!(second.logs.lock().unwrap().len(), 1);
        drop(other);
        // A caller that wants no log messages gets none.
        let quiet = kept(None);
        let _route = settled(&shared, 3, quiet.clone());
        shared.pass_log(&message(LoggingLevel::Emergency, "no".into()));
        assert!(quiet.logs.lock().unwrap().is_empty());
    }

    #[test]
    fn a_route_made_before_the_request_is_sent_takes_its_first_messages() {
        let shared = Arc::new(Shared::default());
        let sink = kept(Some(LogLevel::Debug));
        let mut route = shared.route_pending(sink.clone()).unwrap();
        shared.pass_log(&message(LoggingLevel::Info, "at once".into()));
        assert_eq!(sink.logs.lock().unwrap().len(), 1, "a log before the token");
        route.settle(&token(7));
        shared.pass_log(&message(LoggingLevel::Info, "later".into()));
        assert_eq!(sink.logs.lock().unwrap().len(), 2);
        {
            let sinks = shared.sinks.lock().unwrap();
            assert_eq!(sinks.len(), 1, "settled in place, not added");
            assert!(sinks.contains_key(&token_key(&token(7))));
        }
        drop(route);
        assert!(shared.sinks.lock().unwrap().is_empty());
    }

    #[test]
    fn log_levels_convert_both_ways_and_order_by_severity() {
        let all = [
            (LoggingLevel::Debug, LogLevel::Debug),
            (LoggingLevel::Info, LogLevel::Info),
            (LoggingLevel::Notice, LogLevel::Notice),
            (LoggingLevel::Warning, LogLevel::Warning),
            (LoggingLevel::Error, LogLevel::Error),
            (LoggingLevel::Critical, LogLevel::Critical),
            (LoggingLevel::Alert, LogLevel::Alert),
            (LoggingLevel::Emergency, LogLevel::Emergency),
        ];
        for (mcp, host) in all {
            assert_eq!(LogLevel::convert::<_, LogLevel>(mcp), Some(host));
            assert_eq!(LogLevel::convert::<_, LoggingLevel>(host), Some(mcp));
        }
        assert!(all.windows(2).all(|pair| pair[0].1 < pair[1].1));
    }
}
