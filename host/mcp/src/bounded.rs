//! A stdio server's output, line by line, checked before rmcp reads it.
//!
//! rmcp drops a line it cannot take (one over its length limit, one nested
//! deeper than serde_json reads) and waits on, so the call it answered
//! would wait for its timeout, and be retried; and it takes a response
//! whose id is the string `"3"` as the answer to request `3`. Here:
//! - a line longer than the limit, or nested more than [`MAX_DEPTH`]
//!   levels, ends the session at once: every read fails from then on and
//!   the shared [`Tripped`] says why, so the waiting call is answered
//!   (`too_large`, `invalid_output`) instead of timing out;
//! - a response (a message with `result` or `error` and no `method`) whose
//!   id is not a number is dropped, with a warning: the host's request ids
//!   are numbers, and JSON-RPC ids match by value and type.
//!
//! Invariant: memory is bounded by the limit (one line is held at a time),
//! and every line that passes reaches rmcp unchanged. One pass over a
//! line measures its nesting and says whether it may carry an id that is
//! not a number; only then is it parsed here: a call's answer is not
//! parsed twice.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};

use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::io::{AsyncRead, ReadBuf};

/// The deepest nesting of arrays and objects a message may have: what
/// serde_json (and so rmcp) reads. A listing this deep still reaches the
/// host, which then skips the one tool whose schema is too deep for a lock
/// file (`tool::MAX_SCHEMA_DEPTH`), keeping the others.
pub const MAX_DEPTH: usize = 127;

/// Why a session's output was cut off, shared with the session.
#[derive(Debug, Default)]
pub struct Tripped(AtomicU8);

/// What [`Tripped`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A line over the size limit.
    TooLong,
    /// A message nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl Tripped {
    /// Why, if it was.
    pub fn cause(&self) -> Option<Cause> {
        match self.0.load(Ordering::SeqCst) {
            1 => Some(Cause::TooLong),
            2 => Some(Cause::TooDeep),
            _ => None,
        }
    }

    fn set(&self, cause: Cause) {
        let code = match cause {
            Cause::TooLong => 1,
            Cause::TooDeep => 2,
        };
        let _ = self
            .0
            .compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// `inner`, with lines of at most `limit` bytes, checked.
pub struct BoundedLines<R> {
    inner: R,
    limit: usize,
    server: String,
    /// The line being read.
    line: Vec<u8>,
    /// Checked bytes not yet handed to the reader.
    out: Vec<u8>,
    sent: usize,
    eof: bool,
    tripped: Arc<Tripped>,
    /// Where the inner reader reads to (allocated once, not per read).
    chunk: Box<[u8]>,
}

/// How much is read from the server at a time.
const CHUNK: usize = 8192;

impl<R> BoundedLines<R> {
    /// Wraps `inner`, the output of server `server`; `tripped` says why it
    /// was cut off, if it is.
    pub fn new(inner: R, limit: usize, server: &str, tripped: Arc<Tripped>) -> Self {
        BoundedLines {
            inner,
            limit,
            server: server.to_owned(),
            line: Vec::new(),
            out: Vec::new(),
            sent: 0,
            eof: false,
            tripped,
            chunk: vec![0; CHUNK].into_boxed_slice(),
        }
    }

    fn error(cause: Cause) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            match cause {
                Cause::TooLong => "the server sent a message over the host's size limit".to_owned(),
                Cause::TooDeep => {
                    format!("the server sent a message nested more than {MAX_DEPTH} levels deep")
                }
            },
        )
    }

    /// Takes the bytes read: complete lines are checked and queued.
    fn take(&mut self, mut bytes: &[u8]) -> Result<(), Cause> {
        while !bytes.is_empty() {
            let end = memchr::memchr(b'\n', bytes);
            let part = &bytes[..end.unwrap_or(bytes.len())];
            if part.len() > self.limit - self.line.len() {
                return Err(Cause::TooLong);
            }
            self.line.extend_from_slice(part);
            let Some(end) = end else {
                break;
            };
            if self.finish_line()? {
                self.out.push(b'\n');
            }
            bytes = &bytes[end + 1..];
        }
        Ok(())
    }

    /// Checks the line read; whether it was kept. The line's buffer is
    /// kept for the next one.
    fn finish_line(&mut self) -> Result<bool, Cause> {
        let scanned = scan(&self.line);
        if scanned.too_deep {
            return Err(Cause::TooDeep);
        }
        let foreign = if scanned.may_have_foreign_id {
            foreign_response_id(&self.line)
        } else {
            None
        };
        let kept = match foreign {
            Some(id) => {
                tracing::warn!(
                    target: "tiny_harness::mcp",
                    server = %self.server,
                    "dropped a response whose id {} is not a number: it answers no request of the host's",
                    tiny_harness_core::display::one_line(&id.chars().take(64).collect::<String>())
                );
                false
            }
            None => {
                self.out.extend_from_slice(&self.line);
                true
            }
        };
        self.line.clear();
        Ok(kept)
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            // What was checked before a trip still goes.
            if this.sent < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.sent);
                buf.put_slice(&this.out[this.sent..this.sent + n]);
                this.sent += n;
                if this.sent == this.out.len() {
                    this.out.clear();
                    this.sent = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if let Some(cause) = this.tripped.cause() {
                return Poll::Ready(Err(Self::error(cause)));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = std::mem::take(&mut this.chunk);
            let mut read = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut read);
            let filled = read.filled().len();
            match polled {
                Poll::Ready(Ok(())) if filled == 0 => {
                    // The end: a last line without its newline goes as it is.
                    this.eof = true;
                    if !this.line.is_empty() {
                        let line = std::mem::take(&mut this.line);
                        this.out.extend_from_slice(&line);
                    }
                }
                Poll::Ready(Ok(())) => {
                    if let Err(cause) = this.take(&chunk[..filled]) {
                        this.tripped.set(cause);
                        this.line = Vec::new();
                    }
                }
                Poll::Ready(Err(e)) => {
                    this.chunk = chunk;
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => {
                    this.chunk = chunk;
                    return Poll::Pending;
                }
            }
            this.chunk = chunk;
        }
    }
}

/// What one pass over a line finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scanned {
    /// It nests arrays and objects more than [`MAX_DEPTH`] levels deep,
    /// outside strings (the pass stops there).
    too_deep: bool,
    /// It may be a response whose id is not a number: a key `id` whose
    /// value starts otherwise than a number or `null` does, or a string
    /// with a `\u` escape (which may spell the key). A line without
    /// either (nearly every line: numeric ids, notifications) is not
    /// parsed again.
    may_have_foreign_id: bool,
}

/// Where the pass is after a string, for the check of an `id` key.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AfterString {
    /// Not after a string spelled `id`.
    Other,
    /// After the string `id`: a `:` makes it a key.
    Id,
    /// After the key `id` and its `:`: the value's first byte tells.
    IdKey,
}

/// One pass over `line` for [`Scanned`]: strings are skipped to their end
/// with `memchr`, and what lies between them is JSON's punctuation,
/// numbers and literals.
fn scan(line: &[u8]) -> Scanned {
    let mut found = Scanned {
        too_deep: false,
        may_have_foreign_id: false,
    };
    let (mut depth, mut at) = (0usize, 0usize);
    let mut after = AfterString::Other;
    while let Some(&byte) = line.get(at) {
        at += 1;
        if byte.is_ascii_whitespace() {
            continue;
        }
        match (after, byte) {
            (AfterString::Id, b':') => {
                after = AfterString::IdKey;
                continue;
            }
            (AfterString::IdKey, b'0'..=b'9' | b'-' | b'n') => {}
            (AfterString::IdKey, _) => found.may_have_foreign_id = true,
            _ => {}
        }
        after = AfterString::Other;
        match byte {
            b'"' => {
                let start = at;
                // To the closing quote; an escape skips the byte it escapes.
                loop {
                    let rest = line.get(at..).unwrap_or_default();
                    let Some(offset) = memchr::memchr2(b'"', b'\\', rest) else {
                        // Unterminated: not JSON, which rmcp refuses.
                        return found;
                    };
                    let closing = rest.get(offset) == Some(&b'"');
                    at += offset + 1;
                    if closing {
                        break;
                    }
                    if line.get(at) == Some(&b'u') {
                        found.may_have_foreign_id = true;
                    }
                    at += 1;
                }
                if line.get(start..at - 1) == Some(b"id".as_slice()) {
                    after = AfterString::Id;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    found.too_deep = true;
                    return found;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    found
}

/// The id of `line` when it is a response whose id is not a number (the
/// id as JSON text), else `None` (a request, a notification, a response to
/// a numeric id, or not JSON: rmcp deals with those).
fn foreign_response_id(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Envelope {
        id: Option<serde_json::Value>,
        method: Option<IgnoredAny>,
        result: Option<IgnoredAny>,
        error: Option<IgnoredAny>,
    }
    let envelope: Envelope = serde_json::from_slice(line).ok()?;
    let response =
        envelope.method.is_none() && (envelope.result.is_some() || envelope.error.is_some());
    match envelope.id {
        Some(id) if response && !id.is_number() && !id.is_null() => Some(id.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn lines_of(text: &'static [u8], limit: usize) -> (BoundedLines<&'static [u8]>, Arc<Tripped>) {
        let tripped = Arc::new(Tripped::default());
        (
            BoundedLines::new(text, limit, "s", tripped.clone()),
            tripped,
        )
    }

    #[tokio::test]
    async fn a_line_over_the_limit_fails_every_read_after() {
        let (mut reader, tripped) = lines_of(b"short\nline\n0123456789abcdef\nmore\n", 10);
        let mut out = Vec::new();
        let error = reader.read_to_end(&mut out).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert_eq!(tripped.cause(), Some(Cause::TooLong));
        let mut more = [0u8; 4];
        assert!(reader.read(&mut more).await.is_err());

        let (mut reader, tripped) = lines_of(b"exactly10!\nok\nlast", 10);
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        assert_eq!(tripped.cause(), None, "a line of exactly the limit passes");
        assert_eq!(out, b"exactly10!\nok\nlast");
    }

    #[tokio::test]
    async fn a_message_nested_too_deep_ends_the_output() {
        let deep: &'static [u8] = Box::leak(
            format!(
                "{{\"id\":1,\"result\":{}1{}}}\n",
                "[".repeat(300),
                "]".repeat(300)
            )
            .into_bytes()
            .into_boxed_slice(),
        );
        let (mut reader, tripped) = lines_of(deep, 1 << 20);
        let mut out = Vec::new();
        let error = reader.read_to_end(&mut out).await.unwrap_err();
        assert!(
            error.to_string().contains("nested more than 127"),
            "{error}"
        );
        assert_eq!(tripped.cause(), Some(Cause::TooDeep));
        // Brackets inside strings are text, not nesting.
        let text: &'static [u8] = Box::leak(
            format!(
                "{{\"id\":1,\"result\":{{\"t\":\"{}\\\"[\"}}}}\n",
                "[".repeat(300)
            )
            .into_bytes()
            .into_boxed_slice(),
        );
        let (mut reader, tripped) = lines_of(text, 1 << 20);
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        assert_eq!((tripped.cause(), out.as_slice()), (None, text));
    }

    #[tokio::test]
    async fn a_response_with_a_string_id_is_dropped_and_the_rest_passes() {
        let (mut reader, _) = lines_of(
            b"{\"jsonrpc\":\"2.0\",\"id\":\"3\",\"result\":{}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}\n\
              not json\n",
            1 << 20,
        );
        let mut out = String::new();
        reader.read_to_string(&mut out).await.unwrap();
        assert_eq!(
            out,
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\
             {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}\n\
             not json\n"
        );
    }

    #[tokio::test]
    async fn ids_hidden_behind_escapes_or_spaces_are_still_read() {
        let (mut reader, _) = lines_of(
            b"{\"jsonrpc\":\"2.0\",\"\\u0069d\":\"3\",\"result\":{}}\n\
              {\"jsonrpc\":\"2.0\", \"id\" :\t\"4\",\"result\":{}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"structuredContent\":{\"id\":\"x\"}}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1,\"message\":\"m\"}}\n",
            1 << 20,
        );
        let mut out = String::new();
        reader.read_to_string(&mut out).await.unwrap();
        assert_eq!(
            out,
            "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"structuredContent\":{\"id\":\"x\"}}}\n\
             {\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1,\"message\":\"m\"}}\n"
        );
    }

    /// Nesting counted as a byte-by-byte walk does it: the reference
    /// [`scan`] is checked against.
    fn deepest(line: &[u8]) -> usize {
        let (mut depth, mut deepest) = (0usize, 0usize);
        let (mut in_string, mut escaped) = (false, false);
        for &byte in line {
            if in_string {
                match (escaped, byte) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        deepest
    }

    /// JSON values with keys and strings that come near what [`scan`]
    /// looks for: `id`, quotes, backslashes, control characters, non-ASCII.
    fn values() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let text = prop_oneof![
            Just("id".to_owned()),
            Just("\"id\"".to_owned()),
            "[a-z\"\\\\\u{1}\n é:{}\\[\\]]{0,8}",
        ];
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            (-1e6f64..1e6).prop_map(serde_json::Value::from),
            text.clone().prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(6, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::from),
                prop::collection::btree_map(text.clone(), inner, 0..5)
                    .prop_map(|map| serde_json::Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// A line [`scan`] lets pass unparsed holds no foreign id that a
        /// parse would find, whatever the envelope, spelling or spacing;
        /// and its nesting check agrees with a byte-by-byte count.
        #[test]
        fn one_pass_misses_no_foreign_id_and_counts_nesting_exactly(
            id in values(),
            body in values(),
            kind in 0..3usize,
            pretty in proptest::bool::ANY,
            escaped_key in proptest::bool::ANY,
            cut in 0..400usize,
        ) {
            let envelope = match kind {
                0 => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": body}),
                1 => serde_json::json!({"jsonrpc": "2.0", "id": id, "error": body}),
                _ => serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "m", "params": body}),
            };
            let mut text = if pretty {
                // Newlines inside strings are escaped: these are spacing.
                serde_json::to_string_pretty(&envelope).unwrap().replace('\n', " \t")
            } else {
                serde_json::to_string(&envelope).unwrap()
            };
            if escaped_key {
                text = text.replacen("\"id\"", "\"\\u0069d\"", 1);
            }
            for line in [text.as_bytes(), &text.as_bytes()[..cut.min(text.len())]] {
                let scanned = scan(line);
                proptest::prop_assert_eq!(scanned.too_deep, deepest(line) > MAX_DEPTH);
                if !scanned.may_have_foreign_id {
                    proptest::prop_assert_eq!(foreign_response_id(line), None, "{}", text);
                }
            }
        }

        /// Any bytes: no panic, and the same agreement.
        #[test]
        fn one_pass_holds_on_any_bytes(line in proptest::collection::vec(
            proptest::sample::select(b"{}[]\":\\ \tidu0-9n,e".to_vec()), 0..200)
        ) {
            let scanned = scan(&line);
            proptest::prop_assert_eq!(scanned.too_deep, deepest(&line) > MAX_DEPTH);
            if !scanned.may_have_foreign_id {
                proptest::prop_assert_eq!(foreign_response_id(&line), None);
            }
        }
    }

    #[test]
    fn nesting_past_the_limit_is_found_in_one_pass() {
        let at = |levels: usize| {
            format!(
                "{{\"id\":1,\"result\":{}1{}}}",
                "[".repeat(levels),
                "]".repeat(levels)
            )
        };
        // The envelope is one level: 126 more make the limit, 127 pass it.
        assert!(!scan(at(MAX_DEPTH - 1).as_bytes()).too_deep);
        assert!(scan(at(MAX_DEPTH).as_bytes()).too_deep);
        let numeric = scan(br#"{"jsonrpc":"2.0","id":12,"result":{"id":"x"}}"#);
        assert!(
            numeric.may_have_foreign_id,
            "a nested id key is looked at too"
        );
        let plain = scan(br#"{"jsonrpc":"2.0","id" : -3,"result":{"content":[]}}"#);
        assert!(!plain.may_have_foreign_id && !plain.too_deep);
        assert!(scan(br#"{"jsonrpc":"2.0","id":"7","result":{}}"#).may_have_foreign_id);
        assert!(scan(br#"{"x":"\u0041","id":1}"#).may_have_foreign_id);
    }

    #[tokio::test]
    async fn lines_longer_than_a_read_pass_whole_up_to_the_limit() {
        let limit = 3 * CHUNK + 17;
        let text = |len: usize| -> &'static [u8] {
            let line = format!("{{\"id\":1,\"result\":\"{}\"}}", "a".repeat(len - 20));
            assert_eq!(line.len(), len);
            Box::leak(format!("{line}\n{line}\n").into_bytes().into_boxed_slice())
        };
        // Read a little at a time, as a pipe gives it.
        let trickle = |text: &'static [u8]| {
            let tripped = Arc::new(Tripped::default());
            let inner = tokio::io::BufReader::with_capacity(1000, text);
            (
                BoundedLines::new(inner, limit, "s", tripped.clone()),
                tripped,
            )
        };
        let mut out = Vec::new();
        let whole = text(limit);
        let (mut reader, tripped) = trickle(whole);
        reader.read_to_end(&mut out).await.unwrap();
        assert_eq!((tripped.cause(), out.as_slice()), (None, whole));

        let (mut reader, tripped) = trickle(text(limit + 1));
        assert!(reader.read_to_end(&mut Vec::new()).await.is_err());
        assert_eq!(tripped.cause(), Some(Cause::TooLong));
    }
}
