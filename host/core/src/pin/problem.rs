//! How a pin in a lock contradicts itself ([`Problem`]), and the check of
//! a recorded component source.
//!
//! Invariant: every [`Problem`] displays on one line, text from the file
//! escaped and cut short in it.

use super::shown;
use crate::tool::MAX_SCHEMA_DEPTH;

/// The longest component source a lock records (an `oci://` reference:
/// a 255-byte name, a 128-byte tag and a digest fit well inside).
pub const MAX_SOURCE: usize = 512;

/// Whether `value` is a source a lock may record: `oci://`, then at most
/// [`MAX_SOURCE`] printable ASCII characters in all.
pub(super) fn is_source(value: &str) -> bool {
    value.len() <= MAX_SOURCE
        && value.starts_with("oci://")
        && value.bytes().all(|b| b.is_ascii_graphic())
}

/// How a pin contradicts itself ([`LockError::Corrupt`](super::LockError::Corrupt),
/// [`LockError::Unwritable`](super::LockError::Unwritable)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The recorded hash is not the hash of the recorded definition.
    #[error(
        "the recorded hash {} is not the hash of its definition ({}): one of them was edited",
        shown(.recorded, 16),
        shown(.computed, 16)
    )]
    HashMismatch {
        /// The hash in the lock.
        recorded: String,
        /// The hash of the definition in the lock.
        computed: String,
    },
    /// The definition is named otherwise than the key it is pinned under.
    #[error(
        "its definition is named {}, which is not its key",
        shown(&format!("{:?}", .name), 200)
    )]
    NameMismatch {
        /// The definition's name.
        name: String,
    },
    /// A server's installed code that is not consistent.
    #[error("its installed code is unusable: {problem}")]
    Code {
        /// What is wrong with it.
        problem: String,
    },
    /// A component hash that is not a sha256.
    #[error(
        "the component hash {} is not a sha256 (64 lowercase hex digits)",
        shown(&format!("{:?}", .value), 100)
    )]
    ComponentHash {
        /// The value recorded.
        value: String,
    },
    /// A component's source that is not an `oci://` reference.
    #[error(
        "the component's source {} is not an oci:// reference of at most {MAX_SOURCE} printable characters",
        shown(&format!("{:?}", .value), 100)
    )]
    Source {
        /// The value recorded.
        value: String,
    },
    /// A schema nested deeper than a lock file can hold.
    #[error(
        "its {field} nests {depth} levels of arrays and objects, more than the \
         {MAX_SCHEMA_DEPTH} a lock file holds"
    )]
    TooDeep {
        /// `input_schema` or `output_schema`.
        field: &'static str,
        /// How deep it nests.
        depth: usize,
    },
}

impl Problem {
    /// Text in the file that locates the problem, if there is such.
    pub(super) fn needle(&self) -> Option<String> {
        match self {
            Problem::HashMismatch { recorded: s, .. }
            | Problem::NameMismatch { name: s }
            | Problem::ComponentHash { value: s }
            | Problem::Source { value: s } => serde_json::to_string(s).ok(),
            Problem::TooDeep { .. } | Problem::Code { .. } => None,
        }
    }

    /// What a caller of [`Lock::save`] should do about it.
    pub(super) fn save_hint(&self) -> &'static str {
        match self {
            Problem::HashMismatch { .. } | Problem::NameMismatch { .. } => {
                "pin each tool with `ToolPin::new`, under its own name"
            }
            Problem::ComponentHash { .. } => {
                "record the component's sha256 as 64 lowercase hex digits"
            }
            Problem::Code { .. } => "run tiny-harness mcp install for the server again",
            Problem::Source { .. } => "record the config's oci:// path as it is written",
            Problem::TooDeep { .. } => "this tool cannot be pinned until its schema nests less",
        }
    }
}
