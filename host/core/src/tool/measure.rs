//! Measuring what crosses the boundary of a tool, without building it:
//! how deep a JSON value nests, how long its compact text is, and what a
//! result may cost, spent part by part as a source reads it.

use super::CallError;

/// The most levels of arrays and objects a tool's schema may nest (an
/// empty `{}` is one level): what a lock file can hold (it puts a schema 8
/// levels deep, and serde_json reads at most 127). A deeper schema is
/// refused at registration, so that every registered tool can be pinned.
pub const MAX_SCHEMA_DEPTH: usize = 119;

/// How many levels of arrays and objects `value` nests, empty ones
/// included (0 for a scalar). Iterative: no recursion.
pub fn json_nesting(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    let mut deepest = 0;
    let mut stack = vec![(value, 1)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(members) => Box::new(members.values()),
            _ => continue,
        };
        deepest = deepest.max(depth);
        stack.extend(children.map(|child| (child, depth + 1)));
    }
    deepest
}

/// The length of `value` as compact JSON (as `serde_json` writes it),
/// counted without building the text, and counted only up to a little
/// past `stop_after` (so measuring a huge value costs no more than
/// measuring one just over the limit).
///
/// Counted by a walk of its own rather than through `serde_json`'s
/// writer: it runs before every call, and the writer's code is many
/// times larger, which shows on a call whose caches are cold.
pub fn compact_json_len(value: &serde_json::Value, stop_after: usize) -> usize {
    let mut count = 0;
    count_compact(value, stop_after, &mut count);
    count
}

/// Adds the compact length of `value` to `count`; false once `count` is
/// past `stop_after`.
fn count_compact(value: &serde_json::Value, stop_after: usize, count: &mut usize) -> bool {
    use serde_json::Value;
    let len = match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(number) => number_len(number),
        // Already past the limit without its escapes: not scanned.
        Value::String(text) if count.saturating_add(text.len()) >= stop_after => text.len() + 2,
        Value::String(text) => string_len(text),
        Value::Array(items) => {
            // The brackets, and a comma before every item but the first.
            *count = count.saturating_add(2);
            for (index, item) in items.iter().enumerate() {
                *count = count.saturating_add(usize::from(index > 0));
                if !count_compact(item, stop_after, count) {
                    return false;
                }
            }
            return *count <= stop_after;
        }
        Value::Object(members) => {
            // The braces, and each member's colon and (but the first's)
            // comma.
            *count = count.saturating_add(2);
            for (index, (key, member)) in members.iter().enumerate() {
                let separators = 1 + usize::from(index > 0);
                *count = count.saturating_add(string_len(key) + separators);
                if !count_compact(member, stop_after, count) {
                    return false;
                }
            }
            return *count <= stop_after;
        }
    };
    *count = count.saturating_add(len);
    *count <= stop_after
}

/// A string's length as a JSON literal: its quotes, and each byte that
/// `serde_json` escapes as two characters (`\"`, `\\`, `\n` and the other
/// short escapes) or six (`\u001f` and the other control characters).
fn string_len(text: &str) -> usize {
    let extra: usize = text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
            0..0x20 => 5,
            _ => 0,
        })
        .sum();
    text.len() + 2 + extra
}

/// A number's length as `serde_json` writes it: integers digit by digit,
/// anything else (a float, or a number kept as text) as it displays.
fn number_len(number: &serde_json::Number) -> usize {
    fn digits(mut n: u64) -> usize {
        let mut count = 1;
        while n >= 10 {
            n /= 10;
            count += 1;
        }
        count
    }
    if let Some(n) = number.as_u64() {
        return digits(n);
    }
    if let Some(n) = number.as_i64() {
        return 1 + digits(n.unsigned_abs());
    }
    struct Counter(usize);
    impl std::fmt::Write for Counter {
        fn write_str(&mut self, text: &str) -> std::fmt::Result {
            self.0 += text.len();
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing to the counter cannot fail.
    let _ = std::fmt::Write::write_fmt(&mut counter, format_args!("{number}"));
    counter.0
}

/// The bytes each content part costs beyond its body and media type: the
/// opening and closing tags a render wraps it in (two 32-digit nonces, the
/// index and the attribute syntax), rounded up. Counting it makes a result of
/// many empty parts cost what rendering it really costs.
pub const PART_FRAMING_BYTES: usize = 128;

/// What one result may cost, spent part by part as the result is read, so
/// that a source can stop reading (and copying) the moment a result is over
/// its limits. Shared by every kind of source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultBudget {
    max_bytes: usize,
    max_parts: usize,
    spent: usize,
}

impl ResultBudget {
    /// A budget of `max_bytes` (bodies, media types and framing) and
    /// `max_parts` parts.
    pub fn new(max_bytes: usize, max_parts: usize) -> Self {
        ResultBudget {
            max_bytes,
            max_parts,
            spent: 0,
        }
    }

    /// Refuses a result of `parts` parts before any of it is read.
    pub fn admit_parts(&self, parts: usize) -> Result<(), CallError> {
        if parts > self.max_parts {
            return Err(CallError::TooManyParts {
                parts,
                limit: self.max_parts,
            });
        }
        Ok(())
    }

    /// Spends one part's framing and `bytes` of its body and media type.
    pub fn admit_part(&mut self, bytes: usize) -> Result<(), CallError> {
        self.admit(bytes.saturating_add(PART_FRAMING_BYTES))
    }

    /// Spends `bytes` (an error message, say).
    pub fn admit(&mut self, bytes: usize) -> Result<(), CallError> {
        self.spent = self.spent.saturating_add(bytes);
        if self.spent > self.max_bytes {
            return Err(CallError::TooLarge {
                limit: self.max_bytes,
            });
        }
        Ok(())
    }

    /// What has been spent so far.
    pub fn spent(&self) -> usize {
        self.spent
    }

    /// The most bytes the result may cost.
    pub fn limit(&self) -> usize {
        self.max_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_counts_framing_and_parts() {
        let mut budget = ResultBudget::new(1000, 3);
        assert!(budget.admit_parts(3).is_ok());
        assert_eq!(
            budget.admit_parts(4).unwrap_err().code(),
            "too_large",
            "more parts than allowed"
        );
        // Empty parts still cost their framing: seven of them exceed 1000.
        for _ in 0..7 {
            budget.admit_part(0).unwrap();
        }
        assert_eq!(budget.spent(), 7 * PART_FRAMING_BYTES);
        assert!(matches!(
            budget.admit_part(0),
            Err(CallError::TooLarge { limit: 1000 })
        ));
    }

    #[test]
    fn compact_length_stops_past_the_limit() {
        let value = serde_json::json!({"a": [1, 2, "xyz"]});
        assert_eq!(compact_json_len(&value, 1000), value.to_string().len());
        let big = serde_json::json!(vec![1; 1 << 20]);
        let counted = compact_json_len(&big, 10);
        assert!(counted > 10 && counted < 100, "{counted}");
        let long = serde_json::json!({"text": "\n".repeat(1 << 20)});
        assert!(compact_json_len(&long, 1000) > 1000);
        assert_eq!(compact_json_len(&long, usize::MAX), long.to_string().len());
    }

    #[test]
    fn compact_length_is_what_serde_json_writes() {
        let values = [
            serde_json::json!(null),
            serde_json::json!(true),
            serde_json::json!(false),
            serde_json::json!(0),
            serde_json::json!(9),
            serde_json::json!(10),
            serde_json::json!(-1),
            serde_json::json!(-10),
            serde_json::json!(u64::MAX),
            serde_json::json!(i64::MIN),
            serde_json::json!(0.5),
            serde_json::json!(-1.25e-300),
            serde_json::json!(1e300),
            serde_json::json!(3.0),
            serde_json::json!(""),
            serde_json::json!("plain"),
            serde_json::json!("quote \" backslash \\ slash / del \u{7f}"),
            serde_json::json!("\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{1}"),
            serde_json::json!("é ✓ 𝄞"),
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!([[]]),
            serde_json::json!([1, [2, []], {"a": {}}]),
            serde_json::json!({"k\"ey": "v", "": null, "n": [1.5, -2, "x\u{2}"]}),
            serde_json::json!({"message": "bench"}),
        ];
        for value in &values {
            let written = serde_json::to_vec(value).unwrap().len();
            assert_eq!(compact_json_len(value, usize::MAX), written, "{value}");
            assert_eq!(compact_json_len(value, written), written, "{value}");
            if written > 0 {
                assert!(
                    compact_json_len(value, written - 1) > written - 1,
                    "{value}"
                );
            }
        }
    }
}
