//! A cache of compiled plugins on disk, so that a host that starts often
//! (the CLI, for one) does not recompile components that have not changed.
//! Compiling a plugin takes a few hundred milliseconds; loading it from the
//! cache takes about a millisecond.
//!
//! Invariants:
//! - An entry is keyed by the sha256 of the component file and by the
//!   engine's compatibility hash, so a changed file or a differently
//!   configured engine never picks up another's code. wasmtime checks the
//!   version and settings again when it loads an entry; an entry that fails
//!   any check is compiled afresh and replaced.
//! - A cached entry is native code that runs inside the host process, so an
//!   entry is used only from a directory that is owned by the user running
//!   the host and writable by nobody else, and only if the file itself is a
//!   regular file with the same owner and no group or world write bit.
//!   Anything else is ignored and the component compiled. (Only the last
//!   directory is checked: keep the cache below your home directory.)
//! - Entries are written to a temporary file and renamed into place, never
//!   changed in place, so a host that maps an entry never sees it change.
//! - The cache is best effort: failing to read or write it never fails a
//!   load. It keeps at most [`MAX_ENTRIES`] entries, removing the oldest.

use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

/// The most entries kept; older ones are removed when a new one is added.
pub const MAX_ENTRIES: usize = 64;

/// The file extension of a cache entry.
const EXTENSION: &str = "cwasm";

/// Where a loaded plugin's machine code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompileOrigin {
    /// Compiled from the component in this process.
    Compiled,
    /// Loaded from the compile cache.
    Cached,
}

/// A directory of compiled components.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
}

impl CompileCache {
    /// The most entries a cache keeps: past it, the oldest are removed.
    pub const MAX_ENTRIES: usize = MAX_ENTRIES;
}

impl CompileCache {
    /// A cache in `dir`, created (private to the current user) on first
    /// use.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        CompileCache { dir: dir.into() }
    }

    /// The user's cache: `$TINY_HARNESS_CACHE_DIR` if set (empty: no
    /// cache), else `$XDG_CACHE_HOME/tiny-harness`, else
    /// `$HOME/.cache/tiny-harness`; `None` when none of them is set.
    pub fn user() -> Option<Self> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(dir) = std::env::var_os("TINY_HARNESS_CACHE_DIR") {
            return (!dir.is_empty()).then(|| CompileCache::new(dir));
        }
        var("XDG_CACHE_HOME")
            .map(|dir| PathBuf::from(dir).join("tiny-harness"))
            .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache/tiny-harness")))
            .map(CompileCache::new)
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The component from the cache if a trusted entry for these bytes
    /// exists, else compiled now (and stored for next time).
    pub(crate) fn load_or_compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
        sha256: &str,
    ) -> wasmtime::Result<(Component, CompileOrigin)> {
        let entry = self.entry(engine, sha256);
        let trusted_dir = self.prepare_dir();
        if trusted_dir && is_trusted(&entry, false) {
            // SAFETY: the entry was written by this user (it is theirs, in a
            // directory only they can write) through `store` below, from
            // `Engine::precompile_component`, and entries are only ever
            // replaced by rename, never modified in place. wasmtime checks
            // that it was compiled by this version with this configuration.
            if let Ok(component) = unsafe { Component::deserialize_file(engine, &entry) } {
                return Ok((component, CompileOrigin::Cached));
            }
        }
        let compiled = engine.precompile_component(bytes)?;
        // SAFETY: `compiled` was produced just now, by this engine, from the
        // component's bytes.
        let component = unsafe { Component::deserialize(engine, &compiled)? };
        if trusted_dir {
            // Best effort: a cache that cannot be written only costs time.
            let _ = self.store(&entry, &compiled);
        }
        Ok((component, CompileOrigin::Compiled))
    }

    /// The entry for a component with this sha256, for this engine.
    fn entry(&self, engine: &Engine, sha256: &str) -> PathBuf {
        // The std hasher may change between Rust releases; that only turns
        // old entries into misses.
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        self.dir
            .join(format!("{sha256}-{:016x}.{EXTENSION}", hasher.finish()))
    }

    /// Creates the directory if needed; true if it may be trusted.
    fn prepare_dir(&self) -> bool {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&self.dir).is_ok() && is_trusted(&self.dir, true)
    }

    /// Writes an entry through a temporary file and a rename, then prunes.
    fn store(&self, entry: &Path, compiled: &[u8]) -> std::io::Result<()> {
        let temp = entry.with_extension(format!(
            "{EXTENSION}.{}.{:x}.tmp",
            std::process::id(),
            rand_u64()
        ));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options.open(&temp).and_then(|mut file| {
            file.write_all(compiled)?;
            file.sync_all()
        });
        let renamed = written.and_then(|()| std::fs::rename(&temp, entry));
        if renamed.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        renamed?;
        self.prune();
        Ok(())
    }

    /// Removes the oldest entries beyond [`MAX_ENTRIES`].
    fn prune(&self) {
        let Ok(read) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries: Vec<(std::time::SystemTime, PathBuf)> = read
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == EXTENSION))
            .filter_map(|p| {
                let modified = p.symlink_metadata().ok()?.modified().ok()?;
                Some((modified, p))
            })
            .collect();
        if entries.len() <= MAX_ENTRIES {
            return;
        }
        entries.sort();
        let excess = entries.len() - MAX_ENTRIES;
        for (_, path) in entries.into_iter().take(excess) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Whether `path` (not followed if a symlink) is a directory (`dir`) or a
/// regular file owned by the effective user and writable by nobody else.
#[cfg(unix)]
fn is_trusted(path: &Path, dir: bool) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(metadata) = path.symlink_metadata() else {
        return false;
    };
    let kind_ok = if dir {
        metadata.is_dir()
    } else {
        metadata.is_file()
    };
    kind_ok && metadata.uid() == rustix::process::geteuid().as_raw() && metadata.mode() & 0o022 == 0
}

/// Without Unix ownership and modes there is nothing to check trust by, so
/// nothing is trusted and the cache is never used.
#[cfg(not(unix))]
fn is_trusted(_path: &Path, _dir: bool) -> bool {
    false
}

/// A random number for temporary file names (collisions only cost a retry
/// on the next load).
fn rand_u64() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}
