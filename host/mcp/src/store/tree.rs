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
    walk(root, "", 0, &mut hasher, &mut count, &|_| false)?;
    Ok(hex::encode(hasher.finalize()))
}

/// npm's lockfiles in an install (`package-lock.json`, and the copy npm
/// keeps in `node_modules`): they name the registry each package came
/// from, which differs between machines, and no runtime loads them.
const NPM_LOCKFILES: [&str; 2] = ["package-lock.json", "node_modules/.package-lock.json"];

/// sha256 over an npm install's tree as any machine that installs the
/// same code from any registry gets it: [`tree_hash`] without npm's
/// lockfiles. What the lock records as the install's `tree`, and what
/// `--locked` holds the installed files to.
pub fn npm_tree_hash(root: &Path) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut count = 0;
    walk(root, "", 0, &mut hasher, &mut count, &|path| {
        NPM_LOCKFILES.contains(&path)
    })?;
    Ok(hex::encode(hasher.finalize()))
}

/// The one `site-packages` of the venv in a PyPI install at `root`.
pub(super) fn site_packages(root: &Path) -> io::Result<std::path::PathBuf> {
    let lib = root.join("venv/lib");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&lib)? {
        let path = entry?.path().join("site-packages");
        if path.is_dir() {
            found.push(path);
        }
    }
    match <[_; 1]>::try_from(found) {
        Ok([one]) => Ok(one),
        Err(found) => Err(io::Error::other(format!(
            "{} holds {} site-packages directories, not one",
            lib.display(),
            found.len()
        ))),
    }
}

/// sha256 over a PyPI install's packages as any machine that installs the
/// same wheels with the same Python gets them, wherever the install is:
/// its `site-packages` (relative to it) without the bytecode pip compiled
/// (`__pycache__`, whose files name the place they were compiled in, and
/// which `--locked` starts do not load) and without each
/// `*.dist-info/RECORD` (which lists the venv's scripts, whose first line
/// names the place). What the lock records as the install's `tree`, and
/// what `--locked` holds the installed packages to. Every other file is
/// in: one a wheel did not bring (a `.pth` file, a `sitecustomize.py`)
/// changes it.
pub fn pypi_tree_hash(root: &Path) -> io::Result<String> {
    let site = site_packages(root)?;
    let mut hasher = Sha256::new();
    let mut count = 0;
    walk(
        &site,
        "site-packages/",
        1,
        &mut hasher,
        &mut count,
        &|path| path.ends_with("/__pycache__") || path.ends_with(".dist-info/RECORD"),
    )?;
    Ok(hex::encode(hasher.finalize()))
}

fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    hasher: &mut Sha256,
    count: &mut usize,
    skip: &dyn Fn(&str) -> bool,
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
        if depth == 0 && (name == super::MANIFEST || name == STAT_FILE) {
            continue;
        }
        let path = format!("{prefix}{name}");
        if skip(&path) {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            let target = std::fs::read_link(entry.path())?;
            hasher.update(format!("l {path}\0{}\n", target.display()).as_bytes());
        } else if kind.is_dir() {
            hasher.update(format!("d {path}\n").as_bytes());
            walk(
                &entry.path(),
                &format!("{path}/"),
                depth + 1,
                hasher,
                count,
                skip,
            )?;
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

/// Where an install keeps [`stat_record`], beside [`super::MANIFEST`]
/// (both left out of every walk).
pub const STAT_FILE: &str = "install.stat";

/// Whether the file at `path` (its path in the install) is one no
/// runtime loads: documentation (`*.md`, `*.markdown`), type declarations
/// (`*.d.ts`, `*.d.mts`, `*.d.cts`, `*.pyi`) and source maps (`*.map`).
/// About a third of an npm tree; the cheap check leaves them out (their
/// directories stay in, so one added, removed or renamed still shows),
/// and the full hash does not.
fn inert(path: &str) -> bool {
    const ENDINGS: [&str; 7] = [
        ".md",
        ".markdown",
        ".d.ts",
        ".d.mts",
        ".d.cts",
        ".pyi",
        ".map",
    ];
    ENDINGS.iter().any(|end| {
        path.len() > end.len()
            && path
                .get(path.len() - end.len()..)
                .is_some_and(|tail| tail.eq_ignore_ascii_case(end))
    })
}

/// What `lstat` says of every entry at `root` but `inert` files, one
/// line each in a fixed order: mode, size, modification and change times
/// to the nanosecond, inode, then the path. Directories are included, so
/// an entry added, removed or renamed shows in its directory's times
/// without the directory being read again; a change time cannot be set
/// back by `touch`, and a copy of the install elsewhere has new inodes.
/// `None` when a path holds a line break (such an install is checked in
/// full).
pub fn stat_record(root: &Path) -> io::Result<Option<String>> {
    let mut out = String::new();
    let mut count = 0;
    if !record_walk(root, "", 0, &mut out, &mut count)? {
        return Ok(None);
    }
    Ok(Some(out))
}

/// One entry's line of [`stat_record`] without its path, written into
/// `out` (cleared first), so that a check of thousands of entries
/// allocates once.
fn write_status(out: &mut String, meta: &std::fs::Metadata) {
    use std::fmt::Write as _;
    use std::os::unix::fs::MetadataExt as _;
    out.clear();
    let _ = write!(
        out,
        "{:o} {} {}.{} {}.{} {}",
        meta.mode(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
        meta.ino()
    );
}

/// What `statx` says of `path` (below the directory `base`, a link not
/// followed), written into `out` as [`write_status`] writes it; whether
/// it is a directory.
fn entry_status(base: &rustix::fd::OwnedFd, path: &str, out: &mut String) -> io::Result<bool> {
    use rustix::fs::{AtFlags, FileType, StatxFlags};
    use std::fmt::Write as _;
    let status = rustix::fs::statx(
        base,
        path,
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC,
        StatxFlags::TYPE
            | StatxFlags::MODE
            | StatxFlags::SIZE
            | StatxFlags::MTIME
            | StatxFlags::CTIME
            | StatxFlags::INO,
    )?;
    out.clear();
    let _ = write!(
        out,
        "{:o} {} {}.{} {}.{} {}",
        u32::from(status.stx_mode),
        status.stx_size,
        status.stx_mtime.tv_sec,
        status.stx_mtime.tv_nsec,
        status.stx_ctime.tv_sec,
        status.stx_ctime.tv_nsec,
        status.stx_ino
    );
    Ok(FileType::from_raw_mode(u32::from(status.stx_mode)) == FileType::Directory)
}

fn record_walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    out: &mut String,
    count: &mut usize,
) -> io::Result<bool> {
    if depth > MAX_DEPTH {
        return Err(io::Error::other(format!(
            "{} nests deeper than {MAX_DEPTH} directories",
            dir.display()
        )));
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| (e.file_name(), e)))
        .collect::<Result<_, _>>()?;
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (name, entry) in entries {
        *count += 1;
        if *count > MAX_TREE_FILES {
            return Err(io::Error::other(format!(
                "it holds more than {MAX_TREE_FILES} files"
            )));
        }
        let Some(name) = name.to_str() else {
            return Ok(false);
        };
        if depth == 0 && (name == super::MANIFEST || name == STAT_FILE) {
            continue;
        }
        if name.contains('\n') {
            return Ok(false);
        }
        let path = format!("{prefix}{name}");
        let meta = entry.metadata()?;
        if !meta.is_dir() && inert(&path) {
            continue;
        }
        let mut line = String::new();
        write_status(&mut line, &meta);
        out.push_str(&line);
        out.push(' ');
        out.push_str(&path);
        out.push('\n');
        if meta.is_dir() && !record_walk(&entry.path(), &format!("{path}/"), depth + 1, out, count)?
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The first entry of `record` ([`stat_record`] of `root` as it was) whose
/// status is not what it says now, with why; `None` when every one is.
/// `inert` files are passed over (a record written before they were
/// left out names them). The entries are checked on as many threads as
/// the machine runs at once (at most 8), in order.
pub fn stat_changed(root: &Path, record: &str) -> Option<String> {
    let lines: Vec<&str> = record.lines().collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let chunk = lines.len().div_ceil(threads).max(1);
    // Each path is looked up from the install's own directory, not from
    // `/` (a fifth fewer directories walked per entry).
    let Ok(base) = rustix::fs::open(
        root,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) else {
        return Some(format!("{} cannot be opened", root.display()));
    };
    let base = &base;
    let check = |part: &[&str]| {
        // One status buffer for the whole part.
        let mut now = String::with_capacity(96);
        part.iter().find_map(|line| {
            let Some((recorded, path)) = split_status(line) else {
                return Some(format!("the install's record is damaged ({STAT_FILE})"));
            };
            if !recorded_dir(recorded) && inert(path) {
                return None;
            }
            match entry_status(base, path, &mut now) {
                Err(_) => Some(format!("{path} is gone")),
                Ok(dir) => (now != recorded).then(|| {
                    if dir {
                        format!("an entry in {path}/ was added, removed or renamed")
                    } else {
                        format!("{path} is not as the install left it")
                    }
                }),
            }
        })
    };
    let check = &check;
    std::thread::scope(|scope| {
        let parts: Vec<_> = lines
            .chunks(chunk)
            .map(|part| scope.spawn(move || check(part)))
            .collect();
        parts
            .into_iter()
            .map(|part| {
                part.join()
                    .unwrap_or_else(|_| Some("the check failed".to_owned()))
            })
            .find(Option::is_some)
            .flatten()
    })
}

/// Whether a recorded status (mode first, in octal) is a directory's.
fn recorded_dir(recorded: &str) -> bool {
    const KIND: u32 = 0o170_000;
    const DIRECTORY: u32 = 0o040_000;
    recorded
        .split(' ')
        .next()
        .and_then(|mode| u32::from_str_radix(mode, 8).ok())
        .is_some_and(|mode| mode & KIND == DIRECTORY)
}

/// A line of a record: the status (its first five fields) and the path.
fn split_status(line: &str) -> Option<(&str, &str)> {
    let mut end = 0;
    for _ in 0..5 {
        end += line.get(end..)?.find(' ')? + 1;
    }
    Some((line.get(..end - 1)?, line.get(end..)?))
}
