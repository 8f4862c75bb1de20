//! The log messages and progress a call's caller is owed before its answer.
//!
//! rmcp reads a session's messages in order, and hands each notification
//! to the handler in a task of its own: when a call's answer arrives, the
//! log messages and progress the server sent just before it may not have
//! reached the handler yet, and the call's sink would close without them
//! (on a loaded machine, several of them). Here the transport counts the
//! notifications it passes on that the handler routes to a sink, the
//! handler counts those it has routed, and a call with a sink waits, after
//! its answer, until the second count reaches what the first was.
//!
//! Invariants: the wait is at most [`CATCH_UP`] (the handler is the host's
//! own code, quick; the bound holds only if a task never runs, as when the
//! session is closing); a call without a sink never waits; counting is an
//! atomic add per message, without parsing anything.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage, ServerNotification};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

/// The longest a call's answer waits for its handler to catch up.
pub(crate) const CATCH_UP: Duration = Duration::from_secs(5);

/// The two counts of one session.
#[derive(Debug, Default)]
pub(crate) struct Owed {
    received: AtomicU64,
    routed: AtomicU64,
    caught_up: Notify,
}

impl Owed {
    /// The handler has routed one notification the transport counted
    /// (whether a sink took it or not).
    pub(crate) fn routed(&self) {
        self.routed.fetch_add(1, Ordering::SeqCst);
        self.caught_up.notify_waiters();
    }

    /// Waits (at most [`CATCH_UP`]) until the handler has routed every
    /// counted notification received so far.
    pub(crate) async fn catch_up(&self) {
        let received = self.received.load(Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + CATCH_UP;
        loop {
            let woken = self.caught_up.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.routed.load(Ordering::SeqCst) >= received {
                return;
            }
            if tokio::time::timeout_at(deadline, woken).await.is_err() {
                tracing::debug!(
                    target: "tiny_harness::mcp",
                    "a call's log messages or progress did not reach its caller in time"
                );
                return;
            }
        }
    }
}

/// Whether the handler routes `message` to a call's sink (and so counts
/// it with [`Owed::routed`]).
fn owed(message: &ServerJsonRpcMessage) -> bool {
    matches!(
        message,
        JsonRpcMessage::Notification(notification)
            if matches!(
                notification.notification,
                ServerNotification::LoggingMessageNotification(_)
                    | ServerNotification::ProgressNotification(_)
            )
    )
}

/// A client transport that counts, in its session's [`Owed`], what it
/// passes on that a call's sink may be owed.
pub(crate) struct Counted<T> {
    inner: T,
    owed: Arc<Owed>,
}

impl<T> Counted<T> {
    /// `inner`, counting into `owed`.
    pub(crate) fn new(inner: T, owed: Arc<Owed>) -> Counted<T> {
        Counted { inner, owed }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Counted<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if message.as_ref().is_some_and(owed) {
            self.owed.received.fetch_add(1, Ordering::SeqCst);
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
