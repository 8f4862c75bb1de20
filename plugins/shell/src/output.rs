//! Turning a program's output into `run`'s result: decoding, fitting both
//! streams into the plugin's output budget, and the one-line summary.
//!
//! Invariant: stdout and stderr together never take more than the budget
//! in the result's JSON text (measured as serde_json escapes them), each is
//! cut only at a character boundary and keeps its beginning, and
//! `truncated` is true whenever anything the program wrote is missing
//! (cut by the host as it read the stream, or here).

use serde_json::json;
use tiny_harness_plugin::exec::Output as Ran;
use tiny_harness_plugin::{Output, ToolError};

/// The result of a program that ran (to its end or its timeout): a line
/// of text, then the JSON part. An error result unless it exited with 0.
pub fn result(ran: &Ran, budget: usize) -> Result<Output, ToolError> {
    let stdout = String::from_utf8_lossy(ran.stdout());
    let stderr = String::from_utf8_lossy(ran.stderr());
    let (stdout_kept, stderr_kept) = fit(&stdout, &stderr, budget);
    let truncated =
        ran.truncated() || stdout_kept.len() < stdout.len() || stderr_kept.len() < stderr.len();
    let data = json!({
        "exit_code": ran.exit_code(),
        "signal": ran.signal(),
        "stdout": stdout_kept,
        "stderr": stderr_kept,
        "truncated": truncated,
        "timed_out": ran.timed_out(),
    });
    let result = Output::new().text(summary(ran, truncated)).json(&data)?;
    Ok(if ran.success() && !ran.timed_out() {
        result
    } else {
        result.error()
    })
}

/// How the program ended, in a few words: `exit 0`, `killed by signal 9
/// at the timeout`, with `; output truncated` when some was cut.
pub fn summary(ran: &Ran, truncated: bool) -> String {
    let mut text = match (ran.exit_code(), ran.signal(), ran.timed_out()) {
        (_, Some(signal), true) => format!("killed by signal {signal} at the timeout"),
        (_, Some(signal), false) => format!("killed by signal {signal}"),
        (Some(code), None, true) => format!("exit {code} at the timeout"),
        (Some(code), None, false) => format!("exit {code}"),
        (None, None, true) => "stopped at the timeout".to_owned(),
        (None, None, false) => "ended with neither an exit code nor a signal".to_owned(),
    };
    if truncated {
        text.push_str("; output truncated");
    }
    text
}

/// The beginnings of `stdout` and `stderr` that together take at most
/// `budget` bytes of JSON text. Each stream is guaranteed half the budget;
/// what one of them does not need, the other may use.
pub fn fit<'a>(stdout: &'a str, stderr: &'a str, budget: usize) -> (&'a str, &'a str) {
    let half = budget / 2;
    let stderr_wants = escaped_len(stderr).min(half);
    let stdout_kept = prefix(stdout, budget - stderr_wants);
    let stderr_kept = prefix(stderr, budget - escaped_len(stdout_kept));
    (stdout_kept, stderr_kept)
}

/// The longest prefix of `text` (at a character boundary) whose JSON
/// escaping takes at most `max` bytes.
fn prefix(text: &str, max: usize) -> &str {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += escaped_char_len(c);
        if used > max {
            return &text[..at];
        }
    }
    text
}

/// The bytes `text` takes inside a JSON string (without the quotes).
fn escaped_len(text: &str) -> usize {
    text.chars().map(escaped_char_len).sum()
}

/// The bytes `c` takes inside a JSON string as serde_json writes it:
/// `\"`, `\\` and the short escapes of `\b \f \n \r \t` take two, other
/// control characters six (`\u001b`), everything else its UTF-8 length.
fn escaped_char_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        '\0'..='\u{1f}' => 6,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_lengths_match_serde_json() {
        for text in [
            "plain",
            "a\"b\\c",
            "\n\r\t\u{8}\u{c}",
            "\0\u{1b}\u{7f}",
            "é€😀",
        ] {
            let encoded = serde_json::to_string(text).unwrap();
            assert_eq!(escaped_len(text), encoded.len() - 2, "{text:?}");
        }
    }

    #[test]
    fn both_streams_fit_when_small() {
        assert_eq!(fit("out", "err", 6), ("out", "err"));
    }

    #[test]
    fn a_long_stream_gets_what_the_other_leaves() {
        let long = "x".repeat(100);
        assert_eq!(fit(&long, "err", 10), (&long[..7], "err"));
        assert_eq!(fit("out", &long, 10), ("out", &long[..7]));
    }

    #[test]
    fn two_long_streams_share_the_budget() {
        let long = "y".repeat(100);
        assert_eq!(fit(&long, &long, 11), (&long[..6], &long[..5]));
    }

    #[test]
    fn cuts_at_a_character_and_counts_escapes() {
        assert_eq!(prefix("ab€c", 4), "ab");
        assert_eq!(prefix("a\nb", 2), "a");
        assert_eq!(prefix("a\u{1b}", 6), "a");
    }
}
