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

/// The length of `value` as compact JSON, counted without building the
/// text, and counted only up to a little past `stop_after` (so measuring a
/// huge value costs no more than measuring one just over the limit).
pub fn compact_json_len(value: &serde_json::Value, stop_after: usize) -> usize {
    struct Counter {
        count: usize,
        stop_after: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.count = self.count.saturating_add(buf.len());
            if self.count > self.stop_after {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter {
        count: 0,
        stop_after,
    };
    // The only error is the counter's own stop.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.count
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
    }
}
