//! What a call's client is sent while the call runs: the progress its
//! tool reports and the log messages its upstream server sends.
//!
//! Invariants:
//! - A call whose tool reports nothing costs no task and no channel: the
//!   task that sends to the client starts with the first event.
//! - At most [`QUEUE`] events wait to be sent; more are dropped, so a
//!   chatty upstream server never holds a call or grows memory.
//! - Every event taken before the answer is sent before it (within a
//!   second: a client that stops reading does not hold the answer).

#![allow(deprecated)] // Logging, deprecated at 2026-07-28, still what 2025-11-25 clients use.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken};
use tiny_harness_core::progress::{Log, LogLevel, Progress, ProgressSink};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The events a call's client is sent at most at once.
pub(crate) const QUEUE: usize = 64;

/// How long the answer waits for the events before it to be sent.
const FLUSH: Duration = Duration::from_secs(1);

#[derive(Debug)]
enum Event {
    Progress(Progress),
    Log(Log),
}

/// A call's sink: progress under the request's token (if it carried one),
/// log messages at `log_level` and above (if the client wants them).
#[derive(Debug)]
pub(crate) struct Forward {
    peer: rmcp::Peer<RoleServer>,
    token: Option<ProgressToken>,
    log_level: Option<LogLevel>,
    /// The channel to the sending task, once an event started it.
    started: Mutex<Option<(mpsc::Sender<Event>, JoinHandle<()>)>>,
}

impl Forward {
    /// The sink of a call whose client wants its progress under `token`
    /// and its log messages at `log_level` and above; `None` if it wants
    /// neither.
    pub(crate) fn new(
        peer: rmcp::Peer<RoleServer>,
        token: Option<ProgressToken>,
        log_level: Option<LogLevel>,
    ) -> Option<Arc<Forward>> {
        if token.is_none() && log_level.is_none() {
            return None;
        }
        Some(Arc::new(Forward {
            peer,
            token,
            log_level,
            started: Mutex::new(None),
        }))
    }

    fn send(&self, event: Event) {
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        let (events, _) = started.get_or_insert_with(|| {
            let (events, receive) = mpsc::channel(QUEUE);
            let task = tokio::spawn(deliver(self.peer.clone(), self.token.clone(), receive));
            (events, task)
        });
        let _ = events.try_send(event);
    }

    /// Waits (at most [`FLUSH`]) for the events taken so far to be sent.
    pub(crate) async fn finish(&self) {
        let started = self
            .started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((events, task)) = started {
            drop(events);
            let _ = tokio::time::timeout(FLUSH, task).await;
        }
    }
}

impl ProgressSink for Forward {
    fn report(&self, progress: Progress) {
        if self.token.is_some() {
            self.send(Event::Progress(progress));
        }
    }

    fn log_level(&self) -> Option<LogLevel> {
        self.log_level
    }

    fn log(&self, log: Log) {
        if self.log_level.is_some_and(|least| log.level >= least) {
            self.send(Event::Log(log));
        }
    }
}

/// Sends each event to the client until the channel closes or the client
/// is gone.
async fn deliver(
    peer: rmcp::Peer<RoleServer>,
    token: Option<ProgressToken>,
    mut events: mpsc::Receiver<Event>,
) {
    while let Some(event) = events.recv().await {
        let sent = match event {
            Event::Progress(progress) => {
                let Some(token) = token.clone() else { continue };
                let mut param = ProgressNotificationParam::new(token, progress.progress);
                param.total = progress.total;
                param.message = progress.message;
                peer.notify_progress(param).await
            }
            Event::Log(log) => {
                let Some(level) = LogLevel::convert(log.level) else {
                    continue;
                };
                let mut param = LoggingMessageNotificationParam::new(level, log.data);
                param.logger = log.logger;
                peer.notify_logging_message(param).await
            }
        };
        if sent.is_err() {
            return;
        }
    }
}
