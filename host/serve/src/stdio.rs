//! The gateway over stdio: one client, `stdio`, on standard input and
//! output.
//!
//! Invariants:
//! - A client that closes its input cancels no request: what waits on
//!   the connection (a `subscriptions/listen` stream, a session's change
//!   watcher) waits on its end instead, the requests in flight are
//!   answered, and `serve` ends then rather than after rmcp's own drain.
//! - A drain reads nothing more from the input, ends what only waits,
//!   answers the calls in flight, and cancels those still running at
//!   `drain_secs`; every wait of it is bounded.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::ServiceExt as _;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::clients::STDIO_CLIENT;
use crate::config::ServeError;
use crate::gateway::Gateway;
use crate::{CUT_WAIT, Drain};

/// How long rmcp is given to write the last answers and close the output
/// once the service is cancelled (its own bound is 2 s).
const FLUSH_WAIT: Duration = Duration::from_secs(3);

/// Serves the `stdio` client until its input ends, `drain` is cancelled
/// (then drains) or `shutdown` is (then stops at once).
pub(crate) async fn serve(
    gateway: &Gateway,
    drain: CancellationToken,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let limits = *gateway.limits();
    // Cancelled when the input ends or a drain begins: subscriptions and
    // a session's change watcher end then.
    let closed = CancellationToken::new();
    let handler = gateway
        .handler(Some(STDIO_CLIENT))
        .closed_by(closed.clone());
    let (stdin, stdout) = rmcp::transport::stdio();
    let stdin = UntilEnd::new(stdin, closed.clone(), drain.clone());
    // rmcp's token: cancelling it cancels the requests in flight.
    let service = shutdown.child_token();
    let running = tokio::select! {
        running = handler.serve_with_ct((stdin, stdout), service.clone()) => running
            .map_err(|e| ServeError::Io(std::io::Error::other(e.to_string())))?,
        // No request has been taken yet, so none is in flight.
        () = drain.cancelled() => {
            Drain::begin(gateway, "stdio", Duration::ZERO, limits.drain).end();
            return Ok(());
        }
    };
    let waiting = running.waiting();
    tokio::pin!(waiting);
    // Once the input has ended, the requests in flight finish and their
    // answers are written; then `serve` ends. rmcp alone would wait its
    // whole drain time (5 s) for a `subscriptions/listen` stream, whose
    // last answer nobody can read.
    let input_ended = async {
        closed.cancelled().await;
        let mut quiet = 0;
        while quiet < 10 {
            quiet = if gateway.metrics().in_flight() == 0 {
                quiet + 1
            } else {
                0
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        waited = &mut waiting => {
            waited.map_err(|e| ServeError::Io(std::io::Error::other(e)))?;
            return Ok(());
        }
        () = input_ended => return Ok(()),
        () = drain.cancelled() => {}
    }
    closed.cancel();
    let mut record = Drain::begin(gateway, "stdio", Duration::ZERO, limits.drain);
    let in_time = tokio::select! {
        // The output failed: nobody is left to answer.
        _ = &mut waiting => {
            record.cut();
            let _ = tokio::time::timeout(CUT_WAIT, crate::no_calls(gateway)).await;
            record.end();
            return Ok(());
        }
        () = crate::no_calls(gateway) => true,
        () = tokio::time::sleep(limits.drain) => false,
        () = shutdown.cancelled() => false,
    };
    if !in_time {
        record.cut();
    }
    // The calls left are cancelled; rmcp writes the answers given and
    // closes the output.
    service.cancel();
    let _ = tokio::time::timeout(FLUSH_WAIT, &mut waiting).await;
    let _ = tokio::time::timeout(CUT_WAIT, crate::no_calls(gateway)).await;
    record.end();
    Ok(())
}

/// Standard input that says when it ends, and reads nothing more once a
/// drain has begun.
pub(crate) struct UntilEnd<R> {
    inner: R,
    ended: CancellationToken,
    drain: CancellationToken,
}

impl<R> UntilEnd<R> {
    /// Reads `inner`, cancelling `ended` at its end, until `drain` is
    /// cancelled.
    pub(crate) fn new(inner: R, ended: CancellationToken, drain: CancellationToken) -> Self {
        UntilEnd {
            inner,
            ended,
            drain,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilEnd<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        // Draining: no request more is taken. Neither an end (rmcp would
        // then cancel the calls in flight after 5 s) nor an error; the
        // drain ends the service itself.
        if self.drain.is_cancelled() {
            return Poll::Pending;
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &polled {
            Poll::Ready(Ok(())) if buf.filled().len() == before && buf.remaining() > 0 => {
                self.ended.cancel();
            }
            Poll::Ready(Err(_)) => self.ended.cancel(),
            _ => {}
        }
        polled
    }
}
