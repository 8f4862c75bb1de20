//! [`Store`]: a content-addressed directory of components,
//! `ROOT/sha256/<64 hex>.wasm`.
//!
//! Invariants: a file in the store holds exactly the bytes whose sha256
//! its name is, as far as this module is concerned: [`Store::put`] hashes
//! the bytes first and writes nothing when they do not match, and writes
//! through a fresh temporary file in the same directory that is renamed
//! into place (`tiny_harness_core::file::write`), so a reader or a crash
//! never sees a partial file. A name is built only from a [`Digest`]
//! (hex digits), so no digest can name a path outside the store.
//! [`Store::get`] counts only a regular file (not a symlink or directory).

use std::path::PathBuf;

use crate::error::OciError;
use crate::reference::Digest;

/// A content-addressed directory of components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    /// The store's directory (made when the first component is put).
    pub root: PathBuf,
}

impl Store {
    /// The store at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Store {
        Store { root: root.into() }
    }

    /// Where the component `digest` is (or would be) kept.
    fn path(&self, digest: &Digest) -> PathBuf {
        self.root
            .join("sha256")
            .join(format!("{}.wasm", digest.hex()))
    }

    /// The file of the component `digest`, if the store has it.
    pub fn get(&self, digest: &Digest) -> Option<PathBuf> {
        let path = self.path(digest);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        meta.file_type().is_file().then_some(path)
    }

    /// Keeps `bytes` as the component `digest` and returns its file; the
    /// bytes must hash to the digest. A component already present is left
    /// as it is.
    pub fn put(&self, digest: &Digest, bytes: &[u8]) -> Result<PathBuf, OciError> {
        let path = self.path(digest);
        let actual = Digest::of(bytes);
        if actual != *digest {
            return Err(OciError::DigestMismatch {
                reference: path.display().to_string(),
                expected: digest.to_string(),
                actual: actual.to_string(),
            });
        }
        if let Some(present) = self.get(digest) {
            return Ok(present);
        }
        let dir = self.root.join("sha256");
        std::fs::create_dir_all(&dir).map_err(|source| OciError::Io { path: dir, source })?;
        tiny_harness_core::file::write::atomically(&path, bytes).map_err(|source| {
            OciError::Io {
                path: path.clone(),
                source,
            }
        })?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_then_get() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("store"));
        let digest = Digest::of(b"component");
        assert_eq!(store.get(&digest), None);
        let path = store.put(&digest, b"component").unwrap();
        assert_eq!(
            path,
            dir.path()
                .join("store/sha256")
                .join(format!("{}.wasm", digest.hex()))
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"component");
        assert_eq!(store.get(&digest), Some(path.clone()));
        assert_eq!(store.put(&digest, b"component").unwrap(), path);
        let names: Vec<_> = std::fs::read_dir(dir.path().join("store/sha256"))
            .unwrap()
            .collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
    }

    #[test]
    fn mismatched_bytes_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let digest = Digest::of(b"component");
        let error = store.put(&digest, b"something else").unwrap_err();
        assert!(matches!(error, OciError::DigestMismatch { .. }), "{error}");
        assert!(!error.to_string().contains('\n'));
        assert_eq!(store.get(&digest), None);
        assert!(!dir.path().join("sha256").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_not_a_component() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let digest = Digest::of(b"x");
        std::fs::create_dir_all(dir.path().join("sha256")).unwrap();
        std::fs::write(dir.path().join("elsewhere"), b"x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), store.path(&digest)).unwrap();
        assert_eq!(store.get(&digest), None);
    }
}
