//! A call's caller gets the log messages its MCP server sent before the
//! answer, all of them, before the call returns: rmcp hands each
//! notification to the host's handler in a task of its own, and the call
//! waits for those tasks (`tiny_harness_mcp`'s `owed`), however far behind
//! they are.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tiny_harness_core::progress::{Log, LogLevel, Progress, ProgressSink, with_sink};

use crate::common::mcp::marker;
use crate::common::py::{self, finish, host_of};
use crate::common::{call, text_of};

/// A sink that counts the log messages it takes, each slowly (as a
/// gateway's client on a loaded machine), so that the handler's tasks
/// fall behind the server.
#[derive(Debug, Default)]
struct Slow {
    logs: AtomicUsize,
}

impl ProgressSink for Slow {
    fn report(&self, _: Progress) {}

    fn log_level(&self) -> Option<LogLevel> {
        Some(LogLevel::Debug)
    }

    fn log(&self, _: Log) {
        std::thread::sleep(Duration::from_micros(200));
        self.logs.fetch_add(1, Ordering::SeqCst);
    }
}

/// The `log-flood` server (5000 log messages, then the answer) in `era`.
async fn all_before_the_answer(test: &str, era: &[(&str, &str)]) {
    let marker = marker(test);
    let host = host_of(py::plugin(json!({
        "logs": py::stdio("flood", &["log-flood"], era, &marker),
    })))
    .await;
    let sink = Arc::new(Slow::default());
    let outcome = with_sink(sink.clone(), call(&host, "mcp/logs.noisy", json!({}))).await;
    assert_eq!(text_of(&outcome), "done");
    assert_eq!(
        sink.logs.load(Ordering::SeqCst),
        5000,
        "every log message sent before the answer reached the sink before the call returned"
    );
    finish(host, &marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_log_message_before_the_answer_reaches_the_caller_at_2025_11_25() {
    all_before_the_answer("py-sink-logs", &[("MCP_ERA", "handshake")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_log_message_before_the_answer_reaches_the_caller_at_2026_07_28() {
    // At 2026-07-28 the request asks for them, at the sink's level.
    all_before_the_answer("py-sink-logs-modern", &[]).await;
}
