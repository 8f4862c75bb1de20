//! Why the store refuses an install, or cannot make one.

use std::path::PathBuf;

/// Why the store refuses an install, or cannot make one. Display is one
/// line naming the server and what to run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A server's directory in the store has no readable manifest.
    #[error("{} holds no usable install ({why}): run tiny-harness mcp install {server} again", dir.display())]
    NoManifest {
        /// The server.
        server: String,
        /// Its directory.
        dir: PathBuf,
        /// Why the manifest cannot be read.
        why: String,
    },
    /// A manifest that is not JSON of the manifest's shape.
    #[error("the manifest of {} is damaged ({source}): run tiny-harness mcp install {server} again", dir.display())]
    DamagedManifest {
        /// The server.
        server: String,
        /// Its directory.
        dir: PathBuf,
        /// The parser's reason.
        source: serde_json::Error,
    },
    /// A manifest whose code no server can run from.
    #[error("the manifest of {} is unusable ({problem}): run tiny-harness mcp install {server} again", dir.display())]
    UnusableManifest {
        /// The server.
        server: String,
        /// Its directory.
        dir: PathBuf,
        /// What is wrong with its code.
        problem: String,
    },
    /// An entry whose status differs from what the install recorded.
    #[error(
        "the installed files of {server} in {} were changed since it was installed ({what}; with \
         --locked every file's content is checked): run tiny-harness mcp install {server} to \
         install it again",
        dir.display()
    )]
    EntryChanged {
        /// The server.
        server: String,
        /// Its directory.
        dir: PathBuf,
        /// The first entry changed, and how.
        what: String,
    },
    /// Installed files that are not the tree the lock pins.
    #[error(
        "the installed files of {server} in {} were changed since it was installed (tree sha256 \
         {}, the lock pins {}): run tiny-harness mcp install {server} to install them again",
        dir.display(), short(now), short(pinned)
    )]
    NotAsPinned {
        /// The server.
        server: String,
        /// Its directory.
        dir: PathBuf,
        /// The tree's hash now.
        now: String,
        /// The tree's hash the lock pins.
        pinned: String,
    },
    /// Installed files that are not as the install recorded them.
    #[error(
        "the installed files of {server} in {} were changed since it was installed (tree sha256 \
         {}, installed {}): run tiny-harness mcp install {server} to install it again",
        dir.display(), short(now), short(installed)
    )]
    NotAsInstalled {
        /// The server.
        server: String,
        /// Its directory.
        dir: PathBuf,
        /// The tree's hash now.
        now: String,
        /// The tree's hash the install recorded.
        installed: String,
    },
    /// A PyPI install's venv that runs another interpreter, or sees the
    /// system's packages.
    #[error(
        "the venv of {server} in {} is not as installed ({why}): run tiny-harness mcp install \
         {server} to install it again",
        dir.display()
    )]
    Venv {
        /// The server.
        server: String,
        /// Its directory.
        dir: PathBuf,
        /// What differs.
        why: String,
    },
    /// An install that cannot be read.
    #[error("cannot read the install of {server} in {}: {source}", dir.display())]
    Unreadable {
        /// The server.
        server: String,
        /// Its directory.
        dir: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The registry gives other code than the lock records: nothing was
    /// changed.
    #[error(
        "the registry now gives other code than the lock records ({}): nothing was changed; \
         accept the new code with tiny-harness mcp install --upgrade {server}",
        differences.join("; ")
    )]
    OtherCode {
        /// The server.
        server: String,
        /// What differs, a line each.
        differences: Vec<String>,
    },
    /// A file of the store that cannot be made, written or moved.
    #[error("{what}: {source}")]
    Io {
        /// What was being done (`cannot make the store ...`).
        what: String,
        /// The reason.
        source: std::io::Error,
    },
    /// The package manager's refusal, or what the install it made lacks:
    /// one line in its own words, with what to do.
    #[error("{0}")]
    Install(String),
    /// What an install needs to run is missing (node, python3, the
    /// console script's entry point).
    #[error("{0}")]
    Runtime(String),
}

/// A hash for people: its first 12 characters.
fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

impl From<String> for StoreError {
    fn from(why: String) -> Self {
        StoreError::Install(why)
    }
}
