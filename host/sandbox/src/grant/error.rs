//! Why a grant as written is refused, or a request falls outside it.

use std::path::PathBuf;
use std::sync::Arc;

use super::shown;

/// Why a grant as written is refused, or an argument falls outside its
/// exec grant. Display is one line naming the entry and what to fix.
///
/// The config prefixes it with the file, line and key of the entry; an
/// embedder building [`Grants`](super::Grants) gets the same words.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// A directory grant's guest path that is not absolute, or holds a
    /// `.` or `..` segment.
    #[error(
        "{guest:?} must be an absolute guest path without . or .. (for example \"/workspace\")"
    )]
    GuestPath {
        /// The guest path as given.
        guest: String,
    },
    /// A second directory grant at a guest path already granted.
    #[error("{guest:?} is granted twice")]
    GuestTwice {
        /// The guest path granted twice.
        guest: String,
    },
    /// A directory grant's host path that is not a directory.
    #[error("{} is not a directory", shown(.host))]
    NotADirectory {
        /// The host path as given.
        host: PathBuf,
    },
    /// A path a grant names (a directory, a file a program may read) that
    /// cannot be resolved to a real path.
    #[error("cannot resolve {}: {source}", shown(.path))]
    Unresolvable {
        /// The path as given.
        path: PathBuf,
        /// Why it cannot be resolved.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A Unix socket an exec grant names that is not one (or does not
    /// exist).
    #[error(
        "{} is not a Unix socket: give the path of one that exists (start its server first)",
        shown(.path)
    )]
    NotASocket {
        /// The path as given.
        path: PathBuf,
    },
    /// A passed-through variable name (`env` in the grants) that is empty
    /// or holds `=` or a NUL byte.
    #[error("{name:?} is not an environment variable name")]
    EnvName {
        /// The name as given.
        name: String,
    },
    /// A second exec grant of a program already granted (the same file,
    /// whatever name or path each gives it).
    #[error("program {written:?} is granted twice (as {twin:?}): grant it once")]
    ProgramTwice {
        /// The second grant's program as written.
        written: String,
        /// The first grant's program as written.
        twin: String,
    },
    /// A second grant of a program that is not on this machine, written
    /// the same way as the first.
    #[error("program {written:?} is granted twice: grant it once")]
    UnusableTwice {
        /// The program as written.
        written: String,
    },
    /// A second net grant of a destination already granted.
    #[error("{written:?} is granted twice (as {twin:?}): grant it once")]
    NetTwice {
        /// The second grant as written.
        written: String,
        /// The first grant as written.
        twin: String,
    },
    /// A net grant that is not `scheme://host[:port]`.
    #[error("{written:?} {why}")]
    Net {
        /// The grant as written.
        written: String,
        /// What is wrong with it and how to write it.
        why: String,
    },
    /// More argument patterns than one exec grant may have.
    #[error("{count} argument patterns; at most {max} are allowed")]
    TooManyPatterns {
        /// How many were written.
        count: usize,
        /// The most allowed.
        max: usize,
    },
    /// An argument pattern that does not compile (or compiles too large).
    #[error("argument pattern {pattern:?} does not compile: {why}")]
    Pattern {
        /// The pattern as written.
        pattern: String,
        /// The regex engine's reason.
        why: String,
    },
    /// More variable names than one grant may list.
    #[error("{count} variable names; at most {max} are allowed")]
    TooManyNames {
        /// How many were written.
        count: usize,
        /// The most allowed.
        max: usize,
    },
    /// An entry that is not a variable name or pattern.
    #[error(
        "{name:?} is not a variable name or pattern: use letters, digits, _ and * (at most {max} bytes)"
    )]
    NotAName {
        /// The entry, on one line and cut to 64 characters.
        name: String,
        /// The longest name allowed, in bytes.
        max: usize,
    },
    /// A name or pattern reaching the dynamic loader's variables.
    #[error("{name:?} names the dynamic loader's variables, which no grant can allow: remove it")]
    LoaderName {
        /// The entry as written.
        name: String,
    },
    /// An argument that none of its exec grant's patterns matches.
    #[error(
        "argument {position} {arg:?} of program {program:?} matches none of its grant's args patterns {patterns:?}: call it with allowed arguments, or add a pattern to exec = [{{ program = {program_toml}, args = [...] }}]"
    )]
    Argument {
        /// Its position among the arguments, from 1.
        position: usize,
        /// The argument, on one line and cut to 200 characters.
        arg: String,
        /// The program as its grant names it.
        program: String,
        /// The grant's patterns as written.
        patterns: Vec<String>,
        /// The program as a TOML string, for the suggestion.
        program_toml: String,
    },
}
