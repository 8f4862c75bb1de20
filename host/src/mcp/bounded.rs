//! A reader that refuses a line longer than a limit, for a stdio server's
//! output: rmcp drops an over-long line and waits on, so without this a
//! call whose answer is too large would wait for its timeout.
//!
//! Invariant: once a line passes the limit, every read fails and the
//! shared flag is set, so the session ends at once and the call that was
//! waiting is answered `too_large`, not `timeout`.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// `inner`, with lines of at most `limit` bytes.
pub struct BoundedLines<R> {
    inner: R,
    limit: usize,
    run: usize,
    tripped: Arc<AtomicBool>,
}

impl<R> BoundedLines<R> {
    /// Wraps `inner`; `tripped` is set when a line passes `limit`.
    pub fn new(inner: R, limit: usize, tripped: Arc<AtomicBool>) -> Self {
        BoundedLines {
            inner,
            limit,
            run: 0,
            tripped,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let over = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "the server sent a message over the host's size limit",
            )
        };
        if self.tripped.load(Ordering::SeqCst) {
            return Poll::Ready(Err(over()));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let mut run = this.run;
                let mut over_limit = false;
                for &byte in &buf.filled()[before..] {
                    if byte == b'\n' {
                        run = 0;
                    } else {
                        run += 1;
                        over_limit |= run > this.limit;
                    }
                }
                this.run = run;
                if over_limit {
                    // A read that fails hands over no bytes.
                    buf.set_filled(before);
                    this.tripped.store(true, Ordering::SeqCst);
                    return Poll::Ready(Err(over()));
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_line_over_the_limit_fails_every_read_after() {
        let tripped = Arc::new(AtomicBool::new(false));
        let text: &[u8] = b"short\nline\n0123456789abcdef\nmore\n";
        let mut reader = BoundedLines::new(text, 10, tripped.clone());
        let mut out = Vec::new();
        let error = reader.read_to_end(&mut out).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(tripped.load(Ordering::SeqCst));
        let mut more = [0u8; 4];
        assert!(reader.read(&mut more).await.is_err());

        let tripped = Arc::new(AtomicBool::new(false));
        let mut reader = BoundedLines::new(&b"exactly10!\nok\n"[..], 10, tripped.clone());
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        assert!(
            !tripped.load(Ordering::SeqCst),
            "a line of exactly the limit passes"
        );
    }
}
