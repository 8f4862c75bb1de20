//! Replacing a file atomically.
//!
//! Invariants: the new contents go to a temporary file created afresh
//! (`O_EXCL`) in the target's own directory (so the rename never crosses a
//! file system), are synced to disk, and are renamed over the target; the
//! directory is then synced, where the file system can, so that the rename
//! itself survives a crash. A reader sees the old file or the new one,
//! never a part of either. On any failure before the rename the temporary
//! file is removed and the target is untouched. The new file keeps the old
//! one's permissions, except a private one (for secrets), which is mode
//! 0600 from its creation on. A symlink at the target is replaced by the file, not
//! followed.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// How many fresh temporary names are tried before giving up.
const ATTEMPTS: usize = 16;

/// Replaces the file at `path` with `bytes`, atomically.
pub fn atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, false)
}

/// Replaces the file at `path` with `bytes`, atomically, as a file only
/// its owner may read or write (mode 0600 from its creation on, whatever
/// the old file's mode was): for secrets.
pub fn privately(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, true)
}

fn replace(path: &Path, bytes: &[u8], private: bool) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "the path does not name a file")
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let (temp, file) = create_temp(dir, name, private)?;
    let written = fill(file, path, bytes, private).and_then(|()| fs::rename(&temp, path));
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(error);
    }
    sync_dir(dir);
    Ok(())
}

/// A new, empty temporary file beside the target: `.NAME.RANDOM.tmp`.
fn create_temp(dir: &Path, name: &std::ffi::OsStr, private: bool) -> io::Result<(PathBuf, File)> {
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let mut temp = OsString::from(".");
        temp.push(name);
        temp.push(format!(".{:016x}.tmp", random()));
        let temp = dir.join(temp);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        if private {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        #[cfg(not(unix))]
        let _ = private;
        match options.open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => last = Some(error),
            Err(error) => return Err(error),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary file name was free")))
}

/// Writes `bytes` to `file`, gives it the permissions of the file at
/// `target` (if there is one, and unless the file is private) and syncs
/// it.
fn fill(mut file: File, target: &Path, bytes: &[u8], private: bool) -> io::Result<()> {
    file.write_all(bytes)?;
    if !private
        && let Ok(old) = fs::symlink_metadata(target)
        && old.is_file()
    {
        file.set_permissions(old.permissions())?;
    }
    file.sync_all()
}

/// Syncs the directory, so that the rename survives a crash. The rename
/// has already happened and readers see the new file, so a failure here
/// (some file systems cannot sync a directory) is not one of the write's.
#[cfg(unix)]
fn sync_dir(dir: &Path) {
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

/// Directories cannot be opened as files here; the rename is what it is.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) {}

/// A name-spreading number: random when the system can say, else the
/// process id and the time (`create_new` makes a collision harmless).
fn random() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        u64::from(std::process::id()) << 32 | u64::from(nanos)
    })
}
