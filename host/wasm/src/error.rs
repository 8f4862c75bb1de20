//! Why a plugin could not be loaded: one variant per refusal, each
//! displayed on one line that names the plugin and what to fix.

use std::path::PathBuf;

use super::WORLD;

/// Why a plugin could not be loaded. Nothing of it is registered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The component file cannot be read, or is not a regular file of at
    /// most 128 MiB.
    #[error("plugin {plugin}: {source}")]
    Read {
        /// The plugin's name.
        plugin: String,
        /// The file.
        path: PathBuf,
        /// Why (it displays as `cannot read PATH: REASON`).
        source: tiny_harness_core::file::FileError,
    },
    /// The path names a bundled plugin (`builtin:NAME`) this host does not
    /// carry.
    #[error("plugin {plugin}: {reason}")]
    NotBundled {
        /// The plugin's name.
        plugin: String,
        /// Why, with the bundled names there are.
        reason: String,
    },
    /// The file's sha256 differs from the pinned one.
    #[error("plugin {plugin}: sha256 mismatch for {}: the config pins {expected} but the file is {actual}; rebuild the right file or update the pin", .path.display())]
    HashMismatch {
        /// The plugin's name.
        plugin: String,
        /// The file.
        path: PathBuf,
        /// The pinned digest.
        expected: String,
        /// The file's digest.
        actual: String,
    },
    /// The file is not a WebAssembly component.
    #[error("plugin {plugin}: {} is not a WebAssembly component: {reason}", .path.display())]
    NotAComponent {
        /// The plugin's name.
        plugin: String,
        /// The file.
        path: PathBuf,
        /// What it is instead.
        reason: String,
    },
    /// The component does not target the plugin world (or needs imports the
    /// host does not provide).
    #[error("plugin {plugin}: {} does not fit the {WORLD} world: {reason}", .path.display())]
    WrongWorld {
        /// The plugin's name.
        plugin: String,
        /// The file.
        path: PathBuf,
        /// What does not fit.
        reason: String,
    },
    /// `register` returned an error or failed to run.
    #[error("plugin {plugin}: register failed: {reason}")]
    Register {
        /// The plugin's name.
        plugin: String,
        /// The plugin's message, or how it failed.
        reason: String,
    },
    /// `register` returned more than the plugin's limits allow.
    #[error("plugin {plugin}: {source}")]
    OverLimit {
        /// The plugin's name.
        plugin: String,
        /// The limit and by how much.
        source: tiny_harness_core::registry::RegistryError,
    },
    /// `register` returned something the host refuses.
    #[error("plugin {plugin}: invalid registration: {reason}")]
    InvalidRegistration {
        /// The plugin's name.
        plugin: String,
        /// What is wrong.
        reason: String,
    },
    /// The engine could not be built: wasmtime's error (its causes are
    /// the error's sources; the line shows wasmtime's outermost message).
    #[error("cannot start the WebAssembly engine: {0}")]
    Engine(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl LoadError {
    /// [`LoadError::Engine`] for wasmtime's `error`, its chain kept as the
    /// sources.
    pub fn engine(error: wasmtime::Error) -> LoadError {
        LoadError::Engine(error.into_boxed_dyn_error())
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::LoadError;

    #[test]
    fn an_engine_error_keeps_wasmtimes_chain_on_one_line() {
        let cause = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "no cache dir");
        let error = LoadError::engine(wasmtime::Error::new(cause).context("cannot open the cache"));
        assert_eq!(
            error.to_string(),
            "cannot start the WebAssembly engine: cannot open the cache"
        );
        let first = error
            .source()
            .expect("the engine error keeps wasmtime's error");
        assert_eq!(first.to_string(), "cannot open the cache");
        let root = first.source().expect("wasmtime's error keeps its cause");
        assert_eq!(root.to_string(), "no cache dir");
        assert_eq!(
            root.downcast_ref::<std::io::Error>()
                .map(std::io::Error::kind),
            Some(std::io::ErrorKind::PermissionDenied)
        );
    }
}
