//! Standard input that says when it ends: a stdio client that closes its
//! input cancels no request, so what waits on the connection (a
//! `subscriptions/listen` stream, a session's change watcher) waits on
//! this instead, and `serve` ends at once rather than after rmcp's drain.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// `inner`, cancelling `ended` when a read finds its end or fails.
pub(crate) struct UntilEnd<R> {
    inner: R,
    ended: CancellationToken,
}

impl<R> UntilEnd<R> {
    /// Reads `inner`, cancelling `ended` at its end.
    pub(crate) fn new(inner: R, ended: CancellationToken) -> Self {
        UntilEnd { inner, ended }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilEnd<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
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
