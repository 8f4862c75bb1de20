//! A hash over every file of an install: what finds a tampered file.
//!
//! Invariant: the hash covers each entry's path, kind, executable bit and
//! contents (a symlink's target), in a fixed order, so two trees hash
//! alike exactly when they hold the same entries; the manifest itself is
//! left out (it holds the hash). Bounded: at most [`MAX_TREE_FILES`]
//! entries, [`MAX_DEPTH`] levels.

use std::io::{self, Read as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The most entries one install may hold.
pub const MAX_TREE_FILES: usize = 500_000;

/// The deepest directory nesting followed.
const MAX_DEPTH: usize = 64;

/// sha256 (64 lowercase hex) over the tree at `root`, [`super::MANIFEST`]
/// at its top left out.
pub fn tree_hash(root: &Path) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut count = 0;
    walk(root, "", 0, &mut hasher, &mut count)?;
    Ok(hex::encode(hasher.finalize()))
}

fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    hasher: &mut Sha256,
    count: &mut usize,
) -> io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(io::Error::other(format!(
            "{} nests deeper than {MAX_DEPTH} directories",
            dir.display()
        )));
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        *count += 1;
        if *count > MAX_TREE_FILES {
            return Err(io::Error::other(format!(
                "it holds more than {MAX_TREE_FILES} files"
            )));
        }
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if depth == 0 && name == super::MANIFEST {
            continue;
        }
        let path = format!("{prefix}{name}");
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            let target = std::fs::read_link(entry.path())?;
            hasher.update(format!("l {path}\0{}\n", target.display()).as_bytes());
        } else if kind.is_dir() {
            hasher.update(format!("d {path}\n").as_bytes());
            walk(&entry.path(), &format!("{path}/"), depth + 1, hasher, count)?;
        } else if kind.is_file() {
            let mode = entry.metadata()?.permissions().mode();
            let mut file_hash = Sha256::new();
            let mut file = std::fs::File::open(entry.path())?;
            let mut buffer = vec![0u8; 64 << 10];
            loop {
                let n = file.read(&mut buffer)?;
                if n == 0 {
                    break;
                }
                file_hash.update(&buffer[..n]);
            }
            let x = if mode & 0o111 != 0 { 'x' } else { '-' };
            hasher
                .update(format!("f {path}\0{x}{}\n", hex::encode(file_hash.finalize())).as_bytes());
        } else {
            hasher.update(format!("o {path}\n").as_bytes());
        }
    }
    Ok(())
}

/// sha256 (64 lowercase hex) over what `lstat` says of every entry at
/// `root` ([`super::MANIFEST`] at its top left out): path, kind, size,
/// modification and change times to the nanosecond, inode and mode. No
/// file is read, so it costs a directory walk; an edited, replaced, added,
/// removed or re-linked entry changes it (a change time cannot be set back
/// by `touch`), and so does a copy of the whole install elsewhere (new
/// inodes). What `--locked` checks is [`tree_hash`], which reads every
/// byte.
pub fn stat_digest(root: &Path) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut count = 0;
    stat_walk(root, "", 0, &mut hasher, &mut count)?;
    Ok(hex::encode(hasher.finalize()))
}

fn stat_walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    hasher: &mut Sha256,
    count: &mut usize,
) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    if depth > MAX_DEPTH {
        return Err(io::Error::other(format!(
            "{} nests deeper than {MAX_DEPTH} directories",
            dir.display()
        )));
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        *count += 1;
        if *count > MAX_TREE_FILES {
            return Err(io::Error::other(format!(
                "it holds more than {MAX_TREE_FILES} files"
            )));
        }
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if depth == 0 && name == super::MANIFEST {
            continue;
        }
        let path = format!("{prefix}{name}");
        let meta = std::fs::symlink_metadata(entry.path())?;
        hasher.update(
            format!(
                "{path}\0{:o} {} {}.{} {}.{} {}\n",
                meta.mode(),
                meta.size(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ctime(),
                meta.ctime_nsec(),
                meta.ino()
            )
            .as_bytes(),
        );
        if meta.is_dir() {
            stat_walk(&entry.path(), &format!("{path}/"), depth + 1, hasher, count)?;
        }
    }
    Ok(())
}
