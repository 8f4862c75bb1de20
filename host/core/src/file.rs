//! Reading a file whose path comes from outside: a config given with
//! `--config`, a plugin component named in a config.
//!
//! Such a path may name anything, and an attacker who controls it chooses
//! what: a FIFO with no writer (a plain `open` blocks for ever), a device
//! such as `/dev/zero` (a plain `read` to the end never ends and grows
//! memory until the process is killed), a directory, a socket.
//! [`read_regular`] guarantees:
//!
//! - it never blocks on opening: the file is opened with `O_NONBLOCK` (and
//!   `O_NOCTTY`, so a terminal never becomes ours, and `O_CLOEXEC`);
//! - it does not even open what the path names unless `stat` says it is a
//!   regular file (opening some devices has effects of its own, such as
//!   rewinding a tape);
//! - it reads only regular files, and decides that from `fstat` on the
//!   descriptor it opened, not from the path, so the path cannot be swapped
//!   between the check and the read;
//! - it returns at most `max_bytes` bytes and reads at most one byte more,
//!   whatever the file's size says (a file may grow after `fstat`, and some
//!   regular files, such as those in `/proc`, report a size of 0);
//! - every refusal is a [`FileError`] that displays as one line naming the
//!   path, what is wrong and what to do.
//!
//! Writing one is atomic ([`replace`], and [`write`](mod@write) for a private file):
//! a reader or a crash sees the old file or the new one, never a part.
//! Edits by processes at once are ordered by [`edit::EditLock`].

pub mod edit;
pub mod write;

use std::fmt;
use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The largest config file read, 1 MiB. A config lists plugins and their
/// grants: a real one is a few KiB, so anything near this is a mistake (or
/// an attack), and parsing it with spans for every key should stay cheap.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The largest plugin component read, 128 MiB. The whole file is held in
/// memory, hashed and compiled; large real components (componentize-py
/// output, a whole interpreter) are about 40 MB, so this leaves room
/// without letting a path make the host read without bound.
pub const MAX_COMPONENT_BYTES: u64 = 128 << 20;

/// What a path names when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A FIFO (named pipe).
    Fifo,
    /// A character device, such as `/dev/zero` or a terminal.
    CharacterDevice,
    /// A block device, such as a disk.
    BlockDevice,
    /// A Unix domain socket.
    Socket,
    /// Something the operating system does not classify as any of these.
    Unknown,
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO",
            FileKind::CharacterDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Unknown => "an unknown kind of file",
        })
    }
}

/// A file that [`read_regular`] would not or could not read.
///
/// Displays as `cannot read PATH: REASON`, on one line.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {reason}", .path.display())]
#[non_exhaustive]
pub struct FileError {
    /// The path as given.
    pub path: PathBuf,
    /// What is wrong, without the path (for messages that name it already).
    #[source]
    pub reason: Reason,
}

/// Why a file was not read: the [`FileError::reason`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Reason {
    /// It is not a regular file.
    #[error("it is {kind}, not a regular file: give the path of the {what} itself")]
    NotRegular {
        /// What it is instead.
        kind: FileKind,
        /// What the file was to be (`config file`).
        what: &'static str,
    },
    /// It holds more than the limit.
    #[error("{}", too_large(*.size, *.max, .what))]
    TooLarge {
        /// Its size from `fstat`, or `None` when it was within the limit
        /// then but more was read (it grew, or it reports no size).
        size: Option<u64>,
        /// The limit, in bytes.
        max: u64,
        /// What the file was to be (`plugin component`).
        what: &'static str,
    },
    /// Opening, inspecting or reading it failed.
    #[error(transparent)]
    Io(std::io::Error),
}

/// The message of [`Reason::TooLarge`].
fn too_large(size: Option<u64>, max: u64, what: &str) -> String {
    match size {
        Some(size) => format!(
            "it is {}, more than the {} a {what} may be",
            Bytes(size),
            Bytes(max)
        ),
        None => format!("it holds more than the {} a {what} may be", Bytes(max)),
    }
}

/// A byte count in the largest binary unit that shows it exactly
/// (`128 MiB`, `3 KiB`, `1048577 bytes`), so that a size just over a limit
/// never displays as the limit itself.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if n != 0 && n.trailing_zeros() >= shift {
                return write!(f, "{} {unit}", n >> shift);
            }
        }
        write!(f, "{n} bytes")
    }
}

/// Reads the whole of the regular file at `path`, refusing anything else
/// and anything over `max_bytes` bytes; see the [module docs](self) for
/// what is guaranteed.
///
/// `what` names the file in messages, as a noun without article that takes
/// "a" (`"config file"`, `"plugin component"`): "give the path of the
/// config file itself", "more than the 1 MiB a config file may be".
pub fn read_regular(path: &Path, what: &'static str, max_bytes: u64) -> Result<Vec<u8>, FileError> {
    let fail = |reason: Reason| FileError {
        path: path.to_owned(),
        reason,
    };
    // A first look by path, so that a device is not even opened; the
    // decision that counts is `inspect` on the descriptor, below.
    if let Ok(meta) = std::fs::metadata(path)
        && let Some(kind) = kind_of(&meta)
    {
        return Err(fail(Reason::NotRegular { kind, what }));
    }
    let file = open(path).map_err(|e| fail(open_failure(path, what, e)))?;
    let (kind, size) = inspect(&file).map_err(|e| fail(Reason::Io(e)))?;
    if let Some(kind) = kind {
        return Err(fail(Reason::NotRegular { kind, what }));
    }
    if size > max_bytes {
        return Err(fail(Reason::TooLarge {
            size: Some(size),
            max: max_bytes,
            what,
        }));
    }
    // `size` is only a hint: the file may have grown since, or (in /proc)
    // report 0. One byte past the limit is enough to know it is too large.
    let mut bytes = Vec::with_capacity(usize::try_from(size).map_or(0, |s| s.saturating_add(1)));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| fail(Reason::Io(e)))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max_bytes {
        return Err(fail(Reason::TooLarge {
            size: None,
            max: max_bytes,
            what,
        }));
    }
    Ok(bytes)
}

/// Opens `path` for reading without blocking: `O_NONBLOCK` makes opening a
/// FIFO with no writer return at once (a blocking open would wait for a
/// writer for ever), `O_NOCTTY` keeps a terminal from becoming the
/// process's controlling terminal, `O_CLOEXEC` keeps the descriptor from
/// leaking into programs started later. `O_NONBLOCK` changes nothing for
/// the regular files that are then read.
#[cfg(unix)]
fn open(path: &Path) -> std::io::Result<File> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::OpenOptionsExt as _;
    let flags = OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    std::fs::OpenOptions::new()
        .read(true)
        // The flags are small positive constants: the cast cannot wrap.
        .custom_flags(flags.bits() as std::ffi::c_int)
        .open(path)
}

/// Opens `path` for reading (no FIFOs to block on here).
#[cfg(not(unix))]
fn open(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// Why opening failed. Opening a socket fails (`ENXIO`) before there is a
/// descriptor to inspect, so a failure on a path that names one says so;
/// looking at the path here only chooses the message, never whether to read.
fn open_failure(path: &Path, what: &'static str, error: std::io::Error) -> Reason {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
            return Reason::NotRegular {
                kind: FileKind::Socket,
                what,
            };
        }
    }
    #[cfg(not(unix))]
    let _ = (path, what);
    Reason::Io(error)
}

/// What `meta` describes, when it is not a regular file.
fn kind_of(meta: &std::fs::Metadata) -> Option<FileKind> {
    let file_type = meta.file_type();
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some(FileKind::Directory);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return Some(FileKind::Fifo);
        }
        if file_type.is_char_device() {
            return Some(FileKind::CharacterDevice);
        }
        if file_type.is_block_device() {
            return Some(FileKind::BlockDevice);
        }
        if file_type.is_socket() {
            return Some(FileKind::Socket);
        }
    }
    Some(FileKind::Unknown)
}

/// The kind of the opened file (`None` for a regular file) and its size,
/// from `fstat` on the descriptor itself.
#[cfg(unix)]
fn inspect(file: &File) -> std::io::Result<(Option<FileKind>, u64)> {
    use rustix::fs::FileType;
    let stat = rustix::fs::fstat(file)?;
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => None,
        FileType::Directory => Some(FileKind::Directory),
        FileType::Fifo => Some(FileKind::Fifo),
        FileType::CharacterDevice => Some(FileKind::CharacterDevice),
        FileType::BlockDevice => Some(FileKind::BlockDevice),
        FileType::Socket => Some(FileKind::Socket),
        // An opened descriptor is never a symlink itself.
        FileType::Symlink | FileType::Unknown => Some(FileKind::Unknown),
    };
    Ok((kind, u64::try_from(stat.st_size).unwrap_or(0)))
}

/// The kind of the opened file (`None` for a regular file) and its size.
#[cfg(not(unix))]
fn inspect(file: &File) -> std::io::Result<(Option<FileKind>, u64)> {
    let meta = file.metadata()?;
    let kind = if meta.is_file() {
        None
    } else if meta.is_dir() {
        Some(FileKind::Directory)
    } else {
        Some(FileKind::Unknown)
    };
    Ok((kind, meta.len()))
}

/// Replaces the file at `path` with `bytes` atomically: a reader (or a
/// crash) sees the old file or the new one, never a part of either; the
/// new file keeps the old one's permissions.
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write::atomically(path, bytes)
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Runs `read_regular` on another thread and fails the test if it has
    /// not returned within a generous bound (a blocked open never would).
    fn read_live(path: &Path, max: u64) -> Result<Vec<u8>, FileError> {
        let (send, receive) = mpsc::channel();
        let path = path.to_owned();
        std::thread::spawn(move || {
            let _ = send.send(read_regular(&path, "config file", max));
        });
        receive
            .recv_timeout(Duration::from_secs(60))
            .expect("read_regular returns without blocking")
    }

    fn not_regular(error: &FileError) -> FileKind {
        match error.reason {
            Reason::NotRegular { kind, .. } => kind,
            ref other => panic!("expected a not-a-regular-file refusal, got {other:?}"),
        }
    }

    /// A FIFO named `fifo` in `dir`, which nothing writes to.
    fn make_fifo(dir: &Path) -> PathBuf {
        let fifo = dir.join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .unwrap();
        fifo
    }

    #[test]
    fn a_fifo_without_a_writer_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = make_fifo(dir.path());
        let error = read_live(&fifo, MAX_CONFIG_BYTES).unwrap_err();
        assert_eq!(not_regular(&error), FileKind::Fifo);
        assert_eq!(
            error.to_string(),
            format!(
                "cannot read {}: it is a FIFO, not a regular file: give the path of the config file itself",
                fifo.display()
            )
        );
    }

    /// The path is looked at before it is opened, but a FIFO swapped in
    /// between must not block the open either: the open itself is
    /// non-blocking, and `inspect` then refuses what it opened.
    #[test]
    fn opening_a_fifo_itself_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = make_fifo(dir.path());
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let opened = open(&fifo).and_then(|file| inspect(&file));
            let _ = sender.send(opened.map(|(kind, _)| kind));
        });
        let kind = receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("opening a FIFO blocked")
            .unwrap();
        assert_eq!(kind, Some(FileKind::Fifo));
    }

    #[test]
    fn dev_zero_is_refused() {
        let error = read_live(Path::new("/dev/zero"), MAX_CONFIG_BYTES).unwrap_err();
        assert_eq!(not_regular(&error), FileKind::CharacterDevice);
        assert!(
            error
                .to_string()
                .contains("/dev/zero: it is a character device, not a regular file"),
            "{error}"
        );
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let error = read_live(dir.path(), MAX_CONFIG_BYTES).unwrap_err();
        assert_eq!(not_regular(&error), FileKind::Directory);
    }

    #[test]
    fn a_socket_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let error = read_live(&socket, MAX_CONFIG_BYTES).unwrap_err();
        assert_eq!(not_regular(&error), FileKind::Socket);
        assert!(error.to_string().contains("it is a socket"), "{error}");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_from_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.wasm");
        let file = File::create(&path).unwrap();
        // Sparse: 300 MiB of size, no disk or memory spent.
        file.set_len(300 << 20).unwrap();
        let error = read_regular(&path, "plugin component", MAX_COMPONENT_BYTES).unwrap_err();
        assert!(matches!(
            error.reason,
            Reason::TooLarge {
                size: Some(s),
                max: MAX_COMPONENT_BYTES,
                ..
            } if s == 300 << 20
        ));
        assert_eq!(
            error.reason.to_string(),
            "it is 300 MiB, more than the 128 MiB a plugin component may be"
        );

        // One byte over shows as bytes, not as the limit rounded.
        std::fs::write(&path, vec![b'x'; 1025]).unwrap();
        let error = read_regular(&path, "config file", 1024).unwrap_err();
        assert_eq!(
            error.reason.to_string(),
            "it is 1025 bytes, more than the 1 KiB a config file may be"
        );
    }

    /// A regular file whose size says 0 but which holds more: the read
    /// itself is bounded, not only the size check (the same bound stops a
    /// file that grows between `fstat` and `read`).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_read_is_bounded_whatever_the_size_says() {
        let path = Path::new("/proc/self/status");
        let error = read_regular(path, "config file", 16).unwrap_err();
        assert!(
            matches!(
                error.reason,
                Reason::TooLarge {
                    size: None,
                    max: 16,
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(
            error.reason.to_string(),
            "it holds more than the 16 bytes a config file may be"
        );
    }

    #[test]
    fn a_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.toml");
        let text = "[plugins]\n".repeat(100);
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read_live(&path, MAX_CONFIG_BYTES).unwrap(), text.as_bytes());
        // Exactly at the limit is still within it.
        let len = u64::try_from(text.len()).unwrap();
        assert_eq!(
            read_regular(&path, "config file", len).unwrap().len(),
            text.len()
        );
        let empty = dir.path().join("empty.toml");
        std::fs::write(&empty, "").unwrap();
        assert!(read_regular(&empty, "config file", 0).unwrap().is_empty());
    }

    #[test]
    fn a_missing_file_reports_the_operating_system_error() {
        let error = read_regular(Path::new("/nonexistent/x.toml"), "config file", 10).unwrap_err();
        assert!(matches!(&error.reason, Reason::Io(e) if e.kind() == std::io::ErrorKind::NotFound));
        assert!(
            error
                .to_string()
                .starts_with("cannot read /nonexistent/x.toml: "),
            "{error}"
        );
    }
}
