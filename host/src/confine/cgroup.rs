//! Keeping track of every process a program starts, and killing them all:
//! a control group of its own per program, where the host may make one.
//!
//! A process group is not enough: a child that calls `setsid` (or whose
//! parent exits, a "double fork") leaves the group, and killing the group
//! then misses it. Membership of a control group is inherited by every
//! descendant and cannot be left without write access to the hierarchy
//! (which Landlock takes away), so killing what the group holds kills
//! everything the program started.
//!
//! Two hierarchies are used when they can be written:
//! - the unified one (cgroup v2): `cgroup.kill` kills every member at once,
//!   races with `fork` included; `pids.max` too when the pids controller is
//!   enabled there;
//! - the v1 `pids` hierarchy: `pids.max` bounds the number of processes (a
//!   fork bomb meets `EAGAIN`), and its members are killed until none is
//!   left (bounded, since they cannot multiply past `pids.max`).
//!
//! Invariants:
//! - The program joins its groups in the child, before `exec` and before
//!   Landlock applies (by writing `0` to descriptors opened in the parent),
//!   so it never runs outside them.
//! - [`Contained::kill`] leaves no member running, and dropping a
//!   [`Contained`] kills and removes its groups.
//! - Where neither hierarchy can be written (no privilege, no delegation),
//!   [`Containment::available`] says so and programs run in a process group
//!   only; `tiny-harness plugins` shows which is in force.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where this process may create control groups.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Containment {
    /// Our own group in the unified hierarchy, when writable.
    unified: Option<PathBuf>,
    /// Our own group in the v1 `pids` hierarchy, when writable.
    pids: Option<PathBuf>,
}

/// How long [`Contained::kill`] keeps killing members before it gives up.
const KILL_FOR: Duration = Duration::from_secs(2);

impl Containment {
    /// What this process can use, found once.
    pub fn get() -> &'static Containment {
        static FOUND: OnceLock<Containment> = OnceLock::new();
        FOUND.get_or_init(|| {
            let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
            let membership = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
            let (unified, pids) = find(&mountinfo, &membership);
            Containment {
                unified: unified.filter(|dir| writable(dir)),
                pids: pids.filter(|dir| writable(dir)),
            }
        })
    }

    /// Whether programs are kept in control groups (and so cannot escape
    /// by `setsid` or a double fork).
    pub fn available(&self) -> bool {
        self.unified.is_some() || self.pids.is_some()
    }

    /// Whether the number of processes is bounded by `pids.max`.
    pub fn bounds_processes(&self) -> bool {
        self.pids.is_some()
    }

    /// How `plugins` shows it.
    pub fn describe(&self) -> &'static str {
        match (&self.unified, &self.pids) {
            (Some(_), Some(_)) => "cgroup (kill, pids.max)",
            (Some(_), None) => "cgroup (kill)",
            (None, Some(_)) => "cgroup (pids.max)",
            (None, None) => "process group only (no writable cgroup)",
        }
    }

    /// Makes the groups of one program, at most `processes` processes in
    /// it. `None` when no hierarchy is writable.
    pub fn create(&self, processes: u64) -> io::Result<Option<Contained>> {
        if !self.available() {
            return Ok(None);
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "tiny-harness-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut contained = Contained::default();
        if let Some(base) = &self.unified {
            let dir = base.join(&name);
            fs::create_dir(&dir)?;
            contained.unified = Some(dir.clone());
            if fs::read_to_string(dir.join("cgroup.controllers"))
                .unwrap_or_default()
                .split_whitespace()
                .any(|c| c == "pids")
            {
                fs::write(dir.join("pids.max"), processes.to_string())?;
            }
            contained.procs.push(open_procs(&dir)?);
        }
        if let Some(base) = &self.pids {
            let dir = base.join(&name);
            fs::create_dir(&dir)?;
            contained.pids = Some(dir.clone());
            fs::write(dir.join("pids.max"), processes.to_string())?;
            contained.procs.push(open_procs(&dir)?);
        }
        Ok(Some(contained))
    }
}

/// The groups of one program: joined in its child, killed and removed
/// when dropped.
#[derive(Debug, Default)]
pub struct Contained {
    unified: Option<PathBuf>,
    pids: Option<PathBuf>,
    procs: Vec<File>,
}

impl Contained {
    /// The descriptors the child writes `0` to, to join (valid while this
    /// lives).
    pub(super) fn join_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// Kills every member; returns once none is left running (or after
    /// [`KILL_FOR`], which only a kernel refusing the kill could reach).
    pub fn kill(&self) {
        let started = Instant::now();
        if let Some(dir) = &self.unified {
            let _ = fs::write(dir.join("cgroup.kill"), "1");
        }
        loop {
            let members: Vec<i32> = [&self.unified, &self.pids]
                .into_iter()
                .flatten()
                .flat_map(|dir| members(dir))
                .collect();
            if members.is_empty() || started.elapsed() > KILL_FOR {
                return;
            }
            for pid in members {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Whether any member is left.
    pub fn is_empty(&self) -> bool {
        [&self.unified, &self.pids]
            .into_iter()
            .flatten()
            .all(|dir| members(dir).is_empty())
    }
}

impl Drop for Contained {
    fn drop(&mut self) {
        self.kill();
        self.procs.clear();
        for dir in [self.unified.take(), self.pids.take()]
            .into_iter()
            .flatten()
        {
            // A killed process leaves its group a moment after the signal.
            let started = Instant::now();
            while fs::remove_dir(&dir).is_err() && started.elapsed() < KILL_FOR {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// Makes `command`'s child join groups of its own, with at most
/// `processes` processes, where the host can make groups; `None` where it
/// cannot. Keep the result alive until the child has been killed: dropping
/// it kills what the groups hold.
pub fn contain(
    command: &mut tokio::process::Command,
    processes: u64,
) -> io::Result<Option<Contained>> {
    let Some(contained) = Containment::get().create(processes)? else {
        return Ok(None);
    };
    let fds = contained.join_fds();
    // SAFETY: the closure only calls `write` on descriptors that
    // `contained` keeps open past the spawn (no allocation: `fds` was
    // built in the parent).
    unsafe {
        command.pre_exec(move || join(&fds));
    }
    Ok(Some(contained))
}

/// In the child: joins the groups. Only `write`, on descriptors opened in
/// the parent.
pub(super) fn join(fds: &[RawFd]) -> io::Result<()> {
    for &fd in fds {
        // SAFETY: writing one byte from a static to a descriptor that the
        // parent keeps open until the child has been spawned.
        if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn open_procs(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(dir.join("cgroup.procs"))
}

fn members(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Whether a process of ours can be put in a group made under `dir`: a
/// probe group is made, a forked child joins it and exits, and the group
/// is removed. (Being able to write `cgroup.procs` is not enough: v2 also
/// refuses a move the delegation rules forbid.)
fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!("tiny-harness-probe-{}", std::process::id()));
    if fs::create_dir(&probe).is_err() {
        return false;
    }
    let joined = open_procs(&probe).is_ok_and(|procs| {
        let fd = procs.as_raw_fd();
        // SAFETY: the child makes only async-signal-safe calls (`write`,
        // `_exit`) before it exits; the parent reaps it at once.
        unsafe {
            match libc::fork() {
                0 => {
                    let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                    libc::_exit(if ok { 0 } else { 1 })
                }
                -1 => false,
                child => {
                    let mut status = 0;
                    libc::waitpid(child, &mut status, 0) == child
                        && libc::WIFEXITED(status)
                        && libc::WEXITSTATUS(status) == 0
                }
            }
        }
    });
    let started = Instant::now();
    while fs::remove_dir(&probe).is_err() && started.elapsed() < KILL_FOR {
        std::thread::sleep(Duration::from_millis(1));
    }
    joined
}

/// Our own group's directory in the unified hierarchy and in the v1 `pids`
/// one, from `/proc/self/mountinfo` and `/proc/self/cgroup`.
fn find(mountinfo: &str, membership: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let mut unified = None;
    let mut pids = None;
    for line in mountinfo.lines() {
        // id parent dev root mountpoint options [optional...] - fstype source superoptions
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (Some(root), Some(mountpoint), Some(fstype)) =
            (left.get(3), left.get(4), right.first())
        else {
            continue;
        };
        let own = |controller: Option<&str>| {
            membership.lines().find_map(|entry| {
                let mut parts = entry.splitn(3, ':');
                let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                let matches = match controller {
                    None => controllers.is_empty(),
                    Some(c) => controllers.split(',').any(|x| x == c),
                };
                matches.then(|| path.to_owned())
            })
        };
        let dir = |path: String| {
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .trim_start_matches('/');
            Path::new(mountpoint).join(relative)
        };
        if *fstype == "cgroup2" && unified.is_none() {
            unified = own(None).map(dir);
        } else if *fstype == "cgroup"
            && pids.is_none()
            && right
                .get(2)
                .is_some_and(|opts| opts.split(',').any(|o| o == "pids"))
        {
            pids = own(Some("pids")).map(dir);
        }
    }
    (unified, pids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_both_hierarchies_from_mountinfo() {
        let mountinfo = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let membership = "8:pids:/a/b\n4:memory:/m\n0::/c\n";
        let (unified, pids) = find(mountinfo, membership);
        assert_eq!(unified, Some(PathBuf::from("/sys/fs/cgroup/unified/c")));
        assert_eq!(pids, Some(PathBuf::from("/sys/fs/cgroup/pids/a/b")));
    }

    #[test]
    fn a_pure_v2_system_has_no_v1_pids() {
        let mountinfo = "29 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        let (unified, pids) = find(mountinfo, "0::/user.slice/x.scope\n");
        assert_eq!(
            unified,
            Some(PathBuf::from("/sys/fs/cgroup/user.slice/x.scope"))
        );
        assert_eq!(pids, None);
    }
}
