//! Ordering the edits of one file between processes: the config, the lock,
//! the token file and the install store are each read, changed and
//! written back by commands that may run at the same time (two `plugin
//! add` in one directory, a `call` pinning on first use beside `mcp
//! install`, replicas sharing a lock).
//!
//! Invariants:
//! - [`EditLock::take`] holds an exclusive advisory lock (`flock`) on the
//!   hidden file `.NAME.lock` beside the file `NAME` until the guard is dropped (or the
//!   process ends: the kernel releases it, so a crash never leaves it
//!   held). The lock is on a file of its own because the edited file is
//!   replaced by a rename ([`write`](super::write)): a lock on the old
//!   file's inode would not order anything after the first write.
//! - A symlink planted at the lock file's path is not followed, and the lock file
//!   is created readable and writable by its owner only; it is empty and
//!   left in place (removing it would let two processes lock two
//!   different files of the same name).
//! - Waiting is bounded: a lock still held after the wait given is a
//!   [`EditLockError::Busy`] naming the file, never a hang.
//! - What a holder must do, and the callers do: read the file again
//!   under the lock, apply its change to what it read, and write it
//!   back atomically before dropping the guard. Two edits at once then
//!   both land, in either order.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long [`EditLock::take`] waits by default for another command's
/// edit to finish: a config or lock edit takes milliseconds, so a minute
/// means the holder is stuck.
pub const DEFAULT_EDIT_WAIT: Duration = Duration::from_secs(60);

/// How often a waiting [`EditLock::take`] tries again.
const POLL: Duration = Duration::from_millis(20);

/// An exclusive lock on the edits of one file, held until dropped.
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct EditLock {
    _file: File,
}

/// Why an edit lock could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditLockError {
    /// Another process held the lock for the whole wait.
    #[error(
        "{} is being changed by another command (it holds {}) for {}s or more: \
         wait for it to finish, or end it",
        path.display(),
        lock.display(),
        waited.as_secs()
    )]
    Busy {
        /// The file being edited.
        path: PathBuf,
        /// Its lock file.
        lock: PathBuf,
        /// How long this process waited.
        waited: Duration,
    },
    /// The lock file could not be opened or locked.
    #[error("cannot lock {} for an edit ({}): {source}", path.display(), lock.display())]
    Io {
        /// The file being edited.
        path: PathBuf,
        /// Its lock file.
        lock: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

impl EditLock {
    /// Takes the edit lock of `path`, waiting up to [`DEFAULT_EDIT_WAIT`].
    pub fn take(path: &Path) -> Result<EditLock, EditLockError> {
        EditLock::take_within(path, DEFAULT_EDIT_WAIT)
    }

    /// Takes the edit lock of `path`, waiting up to `wait` for another
    /// holder to release it.
    pub fn take_within(path: &Path, wait: Duration) -> Result<EditLock, EditLockError> {
        let lock = lock_path(path);
        let io = |source| EditLockError::Io {
            path: path.to_owned(),
            lock: lock.clone(),
            source,
        };
        let file = open(&lock).map_err(io)?;
        lock_within(file, path, &lock, wait)
    }
}

impl EditLock {
    /// Takes an exclusive lock on the directory `dir` itself (no lock file
    /// is made: a store's directory is locked while something is
    /// installed into it), waiting up to `wait`.
    pub fn take_directory_within(dir: &Path, wait: Duration) -> Result<EditLock, EditLockError> {
        let io = |source| EditLockError::Io {
            path: dir.to_owned(),
            lock: dir.to_owned(),
            source,
        };
        let file = File::open(dir).map_err(io)?;
        if !file.metadata().map_err(io)?.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "not a directory",
            )));
        }
        lock_within(file, dir, dir, wait)
    }
}

/// Locks `file` (the lock of `path`, at `lock`), waiting up to `wait`.
fn lock_within(
    file: File,
    path: &Path,
    lock: &Path,
    wait: Duration,
) -> Result<EditLock, EditLockError> {
    let began = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(EditLock { _file: file }),
            Err(TryLockError::Error(source)) => {
                return Err(EditLockError::Io {
                    path: path.to_owned(),
                    lock: lock.to_owned(),
                    source,
                });
            }
            Err(TryLockError::WouldBlock) if began.elapsed() >= wait => {
                return Err(EditLockError::Busy {
                    path: path.to_owned(),
                    lock: lock.to_owned(),
                    waited: began.elapsed(),
                });
            }
            Err(TryLockError::WouldBlock) => std::thread::sleep(POLL),
        }
    }
}

/// `DIR/.NAME.lock`: the lock file of the edits of `DIR/NAME`.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or(path.as_os_str()));
    name.push(".lock");
    path.with_file_name(name)
}

/// Opens (creating it if needed) the lock file, never through a symlink.
fn open(lock: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    options.open(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_waits_for_the_first_and_is_refused_past_its_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tiny-harness.toml");
        let held = EditLock::take(&path).unwrap();
        assert!(dir.path().join(".tiny-harness.toml.lock").is_file());
        let error = EditLock::take_within(&path, Duration::from_millis(100)).unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, EditLockError::Busy { .. }), "{text}");
        assert!(text.contains(".tiny-harness.toml.lock"), "{text}");
        assert!(!text.contains('\n'), "{text}");
        drop(held);
        // Released: taken at once.
        let _again = EditLock::take_within(&path, Duration::ZERO).unwrap();
    }

    #[test]
    fn a_waiting_taker_gets_the_lock_when_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tiny-harness.lock");
        let held = EditLock::take(&path).unwrap();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || EditLock::take_within(&path, Duration::from_secs(60)))
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        assert!(waiter.join().unwrap().is_ok());
    }

    #[test]
    fn a_directory_is_locked_without_a_file_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let held = EditLock::take_directory_within(dir.path(), Duration::ZERO).unwrap();
        let error = EditLock::take_directory_within(dir.path(), Duration::from_millis(50));
        assert!(matches!(error, Err(EditLockError::Busy { .. })));
        drop(held);
        assert!(EditLock::take_directory_within(dir.path(), Duration::ZERO).is_ok());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_lock_path_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, dir.path().join(".config.toml.lock")).unwrap();
        let error = EditLock::take(&dir.path().join("config.toml")).unwrap_err();
        assert!(matches!(error, EditLockError::Io { .. }), "{error}");
        assert!(!target.exists());
    }
}
