//! What the tests need from outside this repository (npm and PyPI
//! packages, toolchains, Debian packages), installed on first use, once.
//!
//! `cargo test --workspace` runs several test binaries at once and many
//! tests in each at once; several of them may find a prerequisite missing
//! at the same moment. Invariants:
//! - [`once`] runs an install at most once at a time across threads and
//!   processes: it holds an exclusive file lock (`.NAME.install-lock` in
//!   the directory installed into) while it checks whether the
//!   prerequisite is ready and, if not, installs it; every other caller
//!   waits for that lock and then finds it ready. No caller ever looks at
//!   a half-made install: it checks only under the lock, and an installer
//!   (`npm ci` deletes `node_modules` first) holds the lock throughout.
//! - [`system_program`] finds a program a Debian package provides, and
//!   when it is missing installs the package with apt-get if running as
//!   root (under a lock of its own: apt's lock refuses rather than waits),
//!   otherwise fails with one line naming the command to run.
//! - An install from a package registry ([`npm_ci`], and the tests' pip
//!   installs through [`retried`]) is tried [`INSTALL_TRIES`] times, 5 s
//!   apart, before it fails: a registry that resets one download must not
//!   fail a fresh machine's first run.
//! - A failure is a panic with one line that says what to do: these are
//!   test fixtures, and a test that cannot get its prerequisite has
//!   nothing to test.

// Test fixtures: a prerequisite that cannot be had is a panic saying why.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `install` unless `ready` says the prerequisite `name` in `dir` is
/// there, holding `dir/.NAME.install-lock` throughout, so that parallel
/// tests and test binaries wait for one install; then checks that it is
/// ready.
pub fn once(dir: &Path, name: &str, ready: impl Fn() -> bool, install: impl FnOnce()) {
    with_lock(dir, name, || {
        if !ready() {
            install();
            assert!(
                ready(),
                "{name} in {} is still missing after its install",
                dir.display()
            );
        }
    });
}

/// Runs `f` holding `dir/.NAME.install-lock` (an exclusive lock that
/// other threads and processes taking it wait for).
pub fn with_lock<T>(dir: &Path, name: &str, f: impl FnOnce() -> T) -> T {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
    let path = dir.join(format!(".{name}.install-lock"));
    let file = lock_file(&path);
    let result = f();
    drop(file);
    result
}

/// Opens and locks `path`, waiting for another holder.
fn lock_file(path: &Path) -> File {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        // Another user made it (CI runs the tests again unprivileged): a
        // lock is taken on a file open for reading as well.
        .or_else(|_| File::open(path))
        .unwrap_or_else(|e| panic!("cannot open the install lock {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
    file
}

/// How many times an install from a package registry is tried.
pub const INSTALL_TRIES: u32 = 3;

/// Runs `install` until it succeeds, [`INSTALL_TRIES`] times at most, 5 s
/// apart: a registry can reset a connection in the middle of a download
/// (npm does not retry a body cut short), and a test suite's first run on
/// a fresh machine should not fail for it. Each failure is said on
/// stderr; after the last, a panic says `what` failed and why.
pub fn retried(what: &str, mut install: impl FnMut() -> Result<(), String>) {
    for attempt in 1..=INSTALL_TRIES {
        match install() {
            Ok(()) => return,
            Err(why) if attempt < INSTALL_TRIES => {
                eprintln!("{what}: {why} (try {attempt} of {INSTALL_TRIES}; again in 5 s)");
                std::thread::sleep(std::time::Duration::from_secs(5));
            }
            Err(why) => panic!("{what}: {why} ({INSTALL_TRIES} tries): is the registry reachable?"),
        }
    }
}

/// Runs `program` with `args` in `dir` until it succeeds, as [`retried`]
/// says; `what` names the install in its messages.
pub fn run_retried(program: &str, args: &[&str], dir: &Path, what: &str) {
    retried(what, || {
        let status = Command::new(program)
            .args(args)
            .current_dir(dir)
            .status()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} {} in {} failed ({status})",
                args.join(" "),
                dir.display()
            ))
        }
    });
}

/// `npm ci` in `dir` (the package's lock file pinning every version and
/// hash), once, unless `ready`.
pub fn npm_ci(dir: &Path, ready: impl Fn() -> bool, extra: &[&str]) {
    once(dir, "npm-ci", ready, || {
        let mut args = vec!["ci", "--no-audit", "--no-fund"];
        args.extend_from_slice(extra);
        run_retried(
            "npm",
            &args,
            dir,
            "installing the test's npm packages (Node.js 20 or later with npm is needed)",
        );
    });
}

/// The program at `path` (absolute), which Debian's `package` provides:
/// installed with apt-get first when it is missing and this process runs
/// as root; otherwise a panic naming the command to run.
pub fn system_program(path: &str, package: &str) -> PathBuf {
    let program = PathBuf::from(path);
    if program.is_file() {
        return program;
    }
    if !is_root() {
        panic!("{path} is missing: install Debian's {package} (sudo apt-get install {package})");
    }
    with_lock(&std::env::temp_dir(), "tiny-harness-apt", || {
        if program.is_file() {
            return;
        }
        let quiet = |args: &[&str]| {
            let status = Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .unwrap_or_else(|e| panic!("{path} is missing and apt-get cannot run: {e}"));
            status.success()
        };
        // The package lists may be missing or stale on a fresh machine.
        let _ = quiet(&["update", "-qq"]);
        assert!(
            quiet(&["install", "-y", "-qq", "--no-install-recommends", package]),
            "{path} is missing and apt-get install {package} failed: install it by hand"
        );
    });
    assert!(
        program.is_file(),
        "{path} is still missing after apt-get install {package}"
    );
    program
}

/// Whether this process runs as root.
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn many_callers_at_once_install_once() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().to_owned();
        let installs = Arc::new(AtomicUsize::new(0));
        let marker = dir.join("installed");
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (dir, installs, marker) = (dir.clone(), installs.clone(), marker.clone());
                std::thread::spawn(move || {
                    once(
                        &dir,
                        "thing",
                        || marker.is_file(),
                        || {
                            installs.fetch_add(1, Ordering::SeqCst);
                            // Half-made for a while: nobody may see it.
                            std::fs::write(dir.join("partial"), "").unwrap();
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            std::fs::write(&marker, "").unwrap();
                        },
                    );
                    assert!(marker.is_file());
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(installs.load(Ordering::SeqCst), 1);
    }
}
