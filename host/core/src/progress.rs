//! Progress of a call in flight, passed to whoever made the call.
//!
//! A caller that wants the progress a source reports (an upstream MCP
//! server's `notifications/progress`) runs the call inside
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

/// Where a call's progress goes. `report` must return at once.
pub trait ProgressSink: Send + Sync + std::fmt::Debug {
    /// Takes one report (or drops it, when the sink is full).
    fn report(&self, progress: Progress);
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
