//! Progress of a call in flight, passed to whoever made the call.
//!
//! A caller that wants the progress a source reports (an upstream MCP
//! server's `notifications/progress`), or the log messages it sends while
//! the call runs (`notifications/message`), runs the call inside
//! [`with_sink`]; a source asks for [`current`] when it starts the call
//! and reports to it. The sink travels with the call's task, so nothing in
//! between (the registry, the invoker, retries) needs to know of it.
//!
//! Invariant: reporting never blocks the source or grows without bound: a
//! sink takes a report or drops it.

use std::future::Future;
use std::sync::Arc;

/// One report of progress.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The progress so far (it increases with each report).
    pub progress: f64,
    /// The total, when the source knows it.
    pub total: Option<f64>,
    /// What is happening now, untrusted text from the source.
    pub message: Option<String>,
}

impl Progress {
    /// A report of `progress` out of `total`, with `message`.
    pub fn new(progress: f64, total: Option<f64>, message: Option<String>) -> Self {
        Progress {
            progress,
            total,
            message,
        }
    }
}

/// How severe a log message is: the syslog levels MCP uses, least severe
/// first, named in JSON as MCP names them (`"debug"`, ...).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Informational.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// One log message a source sent while a call ran.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Log {
    /// How severe it is.
    pub level: LogLevel,
    /// The logger's name, untrusted text from the source.
    pub logger: Option<String>,
    /// What it says: untrusted JSON from the source.
    pub data: serde_json::Value,
}

impl LogLevel {
    /// The level another type names the same way in JSON (such as an MCP
    /// SDK's), if it is one.
    pub fn convert<From: serde::Serialize, To: serde::de::DeserializeOwned>(
        level: From,
    ) -> Option<To> {
        serde_json::from_value(serde_json::to_value(level).ok()?).ok()
    }
}

impl Log {
    /// A message at `level` from `logger` saying `data`.
    pub fn new(level: LogLevel, logger: Option<String>, data: serde_json::Value) -> Self {
        Log {
            level,
            logger,
            data,
        }
    }
}

/// Where a call's progress (and log messages) go. `report` and `log` must
/// return at once.
pub trait ProgressSink: Send + Sync + std::fmt::Debug {
    /// Takes one report (or drops it, when the sink is full).
    fn report(&self, progress: Progress);

    /// The least severe log message the caller wants, or `None` (the
    /// default) for none.
    fn log_level(&self) -> Option<LogLevel> {
        None
    }

    /// Takes one log message at or above [`ProgressSink::log_level`] (or
    /// drops it, when the sink is full). The default drops it.
    fn log(&self, log: Log) {
        let _ = log;
    }
}

tokio::task_local! {
    static SINK: Arc<dyn ProgressSink>;
}

/// Runs `call` with its progress going to `sink`.
pub async fn with_sink<F: Future>(sink: Arc<dyn ProgressSink>, call: F) -> F::Output {
    SINK.scope(sink, call).await
}

/// The sink of the call running in this task, if its caller gave one.
pub fn current() -> Option<Arc<dyn ProgressSink>> {
    SINK.try_with(Arc::clone).ok()
}
