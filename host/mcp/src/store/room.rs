//! The room one install takes while it is made: its downloads, its
//! package manager's cache and temporary files, and what they unpack to,
//! all inside the install's staging directory, measured while the package
//! manager runs.
//!
//! Invariant: the measure is bounded whatever the tree holds: it stops
//! counting once past the limit (bytes or entries), follows no symlink and
//! goes no deeper than [`MAX_DEPTH`].

use std::path::{Path, PathBuf};

use super::MAX_TREE_FILES;

/// The deepest nesting measured; deeper is past the limit.
const MAX_DEPTH: usize = 128;

/// The directory inside the staging directory that holds the package
/// manager's cache and temporary files, removed before the install is
/// hashed.
pub(super) const WORK: &str = ".install-work";

/// What a measure found past the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Over {
    /// More bytes than the limit.
    Bytes,
    /// More entries than [`MAX_TREE_FILES`], or nested past [`MAX_DEPTH`].
    Entries,
}

/// Whether the tree at `root` holds more than `limit` bytes (each file's
/// apparent size, so a sparse file counts whole) or more entries than an
/// install may.
pub(super) fn over(root: &Path, limit: u64) -> Option<Over> {
    let mut bytes = 0u64;
    let mut entries = 0usize;
    let mut pending: Vec<(PathBuf, usize)> = vec![(root.to_owned(), 0)];
    while let Some((dir, depth)) = pending.pop() {
        if depth > MAX_DEPTH {
            return Some(Over::Entries);
        }
        // What vanished or cannot be read while the package manager works
        // is not counted: the next measure sees what is there then.
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            entries += 1;
            if entries > MAX_TREE_FILES {
                return Some(Over::Entries);
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push((entry.path(), depth + 1));
            } else {
                bytes = bytes.saturating_add(meta.len());
                if bytes > limit {
                    return Some(Over::Bytes);
                }
            }
        }
    }
    None
}

/// The work directory of the install staged at `staging`, made with its
/// `cache` and `tmp`.
pub(super) fn work(staging: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
    let work = staging.join(WORK);
    let (cache, tmp) = (work.join("cache"), work.join("tmp"));
    std::fs::create_dir_all(&cache)?;
    std::fs::create_dir_all(&tmp)?;
    Ok((cache, tmp))
}

/// `bytes` for people: whole MiB.
pub(super) fn mib(bytes: u64) -> u64 {
    bytes >> 20
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_over_once_its_files_together_pass_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/one"), vec![1u8; 600]).unwrap();
        std::fs::write(dir.path().join("a/b/two"), vec![2u8; 600]).unwrap();
        assert_eq!(over(dir.path(), 1200), None);
        assert_eq!(over(dir.path(), 1199), Some(Over::Bytes));
        // A sparse file counts whole.
        let sparse = std::fs::File::create(dir.path().join("sparse")).unwrap();
        sparse.set_len(10 << 20).unwrap();
        assert_eq!(over(dir.path(), 10 << 20), Some(Over::Bytes));
    }

    #[test]
    fn a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![0u8; 4096]).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        assert_eq!(over(dir.path(), 100), None);
    }
}
