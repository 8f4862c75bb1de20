//! What a plugin writes to its standard output and standard error: kept
//! per call up to a cap, then logged through `tracing` (target
//! `tiny_harness::plugin`, at info) with the plugin's name and the stream,
//! inside the invoker's `call` span, which holds the call's id.
//!
//! Invariants:
//! - Writing never fails and never blocks the plugin: past
//!   [`LOG_CAPTURE_BYTES`] a stream's bytes are counted and dropped (a
//!   plugin that logs much must not trap for it), and the log says how
//!   many were.
//! - At most [`LOG_LINES`] lines per stream per call reach the log, each
//!   made one line with its control characters escaped; none of it ever
//!   reaches the model.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// How much of each stream one call (or `register`) keeps: 16 KiB.
pub const LOG_CAPTURE_BYTES: usize = 16 * 1024;

/// The most lines of each stream one call logs.
pub const LOG_LINES: usize = 200;

/// How much of the end of each stream is kept besides its start: what a
/// trap quotes, and what the log shows after a cut (a traceback comes
/// last, after whatever filled the start).
pub const LOG_TAIL_BYTES: usize = 2 * 1024;

/// The most lines of that end logged after a cut.
pub const LOG_TAIL_LINES: usize = 20;

/// How much a plugin may write at once (what `check-write` grants).
const WRITE_BUDGET: usize = 64 * 1024;

#[derive(Debug, Default)]
struct Kept {
    /// The first [`LOG_CAPTURE_BYTES`].
    bytes: Vec<u8>,
    dropped: usize,
    /// The last bytes written, at most twice [`LOG_TAIL_BYTES`] (cut back
    /// to [`LOG_TAIL_BYTES`] when it grows past that).
    tail: Vec<u8>,
}

impl Kept {
    fn keep(&mut self, bytes: &[u8]) {
        let room = LOG_CAPTURE_BYTES.saturating_sub(self.bytes.len());
        let taken = bytes.len().min(room);
        self.bytes.extend_from_slice(&bytes[..taken]);
        self.dropped = self.dropped.saturating_add(bytes.len() - taken);
        let last = &bytes[bytes.len().saturating_sub(LOG_TAIL_BYTES)..];
        self.tail.extend_from_slice(last);
        if self.tail.len() > 2 * LOG_TAIL_BYTES {
            let cut = self.tail.len() - LOG_TAIL_BYTES;
            self.tail.drain(..cut);
        }
    }

    /// The last `max` bytes written (at most [`LOG_TAIL_BYTES`]).
    fn last(&self, max: usize) -> &[u8] {
        let max = max.min(LOG_TAIL_BYTES);
        &self.tail[self.tail.len().saturating_sub(max)..]
    }
}

/// One stream of one call: what it wrote, up to the cap.
#[derive(Debug, Clone, Default)]
pub(crate) struct LogPipe(Arc<Mutex<Kept>>);

impl LogPipe {
    fn keep(&self, bytes: &[u8]) {
        if let Ok(mut kept) = self.0.lock() {
            kept.keep(bytes);
        }
    }

    /// Forgets everything written, for the stream's next call.
    pub(crate) fn clear(&self) {
        if let Ok(mut kept) = self.0.lock() {
            kept.bytes.clear();
            kept.tail.clear();
            kept.dropped = 0;
        }
    }

    /// What it kept from the start, and how many bytes it dropped after.
    pub(crate) fn contents(&self) -> (Vec<u8>, usize) {
        self.0
            .lock()
            .map(|kept| (kept.bytes.clone(), kept.dropped))
            .unwrap_or_default()
    }

    /// The last `max` bytes written (at most [`LOG_TAIL_BYTES`]), however
    /// much came before.
    pub(crate) fn last(&self, max: usize) -> Vec<u8> {
        self.0
            .lock()
            .map(|kept| kept.last(max).to_vec())
            .unwrap_or_default()
    }

    /// Whether anything was written.
    fn is_empty(&self) -> bool {
        self.0
            .lock()
            .map(|kept| kept.bytes.is_empty() && kept.dropped == 0)
            .unwrap_or(true)
    }

    /// Logs what `plugin` wrote to `stream` (while `during` ran).
    pub(crate) fn emit(&self, plugin: &str, stream: &'static str, during: &'static str) {
        if self.is_empty() {
            return;
        }
        let (bytes, dropped) = self.contents();
        let text = String::from_utf8_lossy(&bytes);
        let mut lines = text.lines();
        for line in lines.by_ref().take(LOG_LINES) {
            tracing::info!(
                target: "tiny_harness::plugin",
                plugin,
                stream,
                during,
                "{}",
                tiny_harness_core::display::one_line(line)
            );
        }
        let more = lines.count();
        if more > 0 || dropped > 0 {
            tracing::info!(
                target: "tiny_harness::plugin",
                plugin,
                stream,
                during,
                "({more} more lines and {dropped} more bytes not logged: at most {LOG_LINES} lines and {LOG_CAPTURE_BYTES} bytes per call; the last lines follow)"
            );
            let last = self.last(LOG_TAIL_BYTES);
            let last = String::from_utf8_lossy(&last);
            let lines: Vec<&str> = last.lines().collect();
            for line in &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..] {
                tracing::info!(
                    target: "tiny_harness::plugin",
                    plugin,
                    stream,
                    during,
                    "{}",
                    tiny_harness_core::display::one_line(line)
                );
            }
        }
    }
}

impl OutputStream for LogPipe {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.keep(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(WRITE_BUDGET)
    }
}

#[async_trait::async_trait]
impl Pollable for LogPipe {
    async fn ready(&mut self) {}
}

impl AsyncWrite for LogPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.keep(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for LogPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_of_a_long_stream_is_kept_beside_its_start() {
        let pipe = LogPipe::default();
        pipe.keep(b"first line\n");
        for _ in 0..1000 {
            pipe.keep(&[b'x'; 333]);
            assert!(pipe.0.lock().unwrap().tail.len() <= 2 * LOG_TAIL_BYTES);
        }
        pipe.keep(&vec![b'y'; 3 * WRITE_BUDGET]);
        pipe.keep(b"\nTraceback: the error comes last\n");
        let (start, dropped) = pipe.contents();
        assert_eq!(start.len(), LOG_CAPTURE_BYTES);
        assert!(start.starts_with(b"first line\n"));
        assert_eq!(
            dropped,
            11 + 333_000 + 3 * WRITE_BUDGET + 33 - LOG_CAPTURE_BYTES
        );
        let last = pipe.last(usize::MAX);
        assert_eq!(last.len(), LOG_TAIL_BYTES);
        assert!(last.ends_with(b"y\nTraceback: the error comes last\n"));
        assert_eq!(pipe.last(10), b"omes last\n".to_vec());
    }
}
