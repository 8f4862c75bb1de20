//! Why a grant as written is refused, or a request falls outside it.

/// Why a grant as written is refused, or an argument falls outside its
/// exec grant. Display is one line naming the entry and what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
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
