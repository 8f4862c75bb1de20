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
//! - A group is named `tiny-harness-<pid>-<start>-<n>` after the host
//!   process that made it (its pid and start time). A host killed before
//!   it could clean up (SIGKILL) leaves its groups, and the programs in
//!   them, behind; the next host to start in the same control group kills
//!   them and removes the groups ([`Containment::sweep`]). A group whose
//!   host still runs, or whose members are not all visible from here (a
//!   host in another PID namespace), is left alone.
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

/// The most stale groups one [`Containment::sweep`] removes per hierarchy.
pub const MAX_SWEPT: usize = 256;

/// This process's start time, in clock ticks since boot (field 22 of
/// `/proc/<pid>/stat`): with the pid, it names this process even after
/// the pid is reused.
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: the
    // fields after it start after the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process `pid` that started at `start` still runs.
fn alive(pid: u32, start: u64) -> bool {
    start_time(pid) == Some(start)
}

/// The host that made the group named `name`: its pid and start time.
fn owner(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix("tiny-harness-")?.split('-');
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    let _counter: u64 = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((pid, start))
}

/// The name of this host's `n`th group.
fn group_name(n: u64) -> String {
    static START: OnceLock<u64> = OnceLock::new();
    let pid = std::process::id();
    let start = *START.get_or_init(|| start_time(pid).unwrap_or(0));
    format!("tiny-harness-{pid}-{start}-{n}")
}

impl Containment {
    /// What this process can use, found once.
    pub fn get() -> &'static Containment {
        static FOUND: OnceLock<Containment> = OnceLock::new();
        FOUND.get_or_init(|| {
            let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
            let membership = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
            let (unified, pids) = find(&mountinfo, &membership);
            let found = Containment {
                unified: unified.filter(|dir| writable(dir)),
                pids: pids.filter(|dir| writable(dir)),
            };
            found.sweep();
            found
        })
    }

    /// Kills what the groups of hosts that are gone still hold, and
    /// removes those groups (at most [`MAX_SWEPT`] per hierarchy). Returns
    /// how many groups it removed. Run once, when a host first looks for
    /// control groups.
    pub fn sweep(&self) -> usize {
        let mut removed = 0;
        for base in [&self.unified, &self.pids].into_iter().flatten() {
            let Ok(entries) = fs::read_dir(base) else {
                continue;
            };
            let stale: Vec<PathBuf> = entries
                .flatten()
                .filter(|entry| {
                    let name = entry.file_name();
                    name.to_str()
                        .and_then(owner)
                        .is_some_and(|(pid, start)| !alive(pid, start))
                })
                .map(|entry| entry.path())
                .filter(|dir| !members(dir).contains(&0))
                .take(MAX_SWEPT)
                .collect();
            for dir in stale {
                let group = Contained {
                    unified: (Some(base) == self.unified.as_ref()).then(|| dir.clone()),
                    pids: (Some(base) == self.pids.as_ref()).then(|| dir.clone()),
                    procs: Vec::new(),
                };
                // Killed and removed as it drops.
                drop(group);
                removed += usize::from(!dir.exists());
            }
        }
        removed
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
        let name = group_name(NEXT.fetch_add(1, Ordering::Relaxed));
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
    fn group_names_carry_their_host() {
        let name = group_name(7);
        let me = std::process::id();
        assert_eq!(owner(&name), Some((me, start_time(me).unwrap())));
        assert!(alive(me, start_time(me).unwrap()));
        assert_eq!(owner("tiny-harness-probe-12"), None);
        assert_eq!(owner("tiny-harness-1-2-3-4"), None);
        assert_eq!(owner("other-1-2-3"), None);
    }

    #[test]
    fn the_groups_of_a_host_that_is_gone_are_swept() {
        let containment = Containment::get();
        assert!(containment.available(), "{}", containment.describe());
        // A "host" that has exited: its pid, with a start time it never had.
        let mut gone = std::process::Command::new("/bin/true").spawn().unwrap();
        let pid = gone.id();
        gone.wait().unwrap();
        let name = format!("tiny-harness-{pid}-1-0");
        let dirs: Vec<PathBuf> = [&containment.unified, &containment.pids]
            .into_iter()
            .flatten()
            .map(|base| base.join(&name))
            .collect();
        for dir in &dirs {
            fs::create_dir(dir).unwrap();
        }
        // A program it left behind, in its groups.
        let procs: Vec<File> = dirs.iter().map(|d| open_procs(d).unwrap()).collect();
        let fds: Vec<RawFd> = procs.iter().map(AsRawFd::as_raw_fd).collect();
        let mut left = std::process::Command::new("/bin/sleep");
        left.arg("30");
        use std::os::unix::process::CommandExt;
        // SAFETY: only `write` on descriptors kept open past the spawn.
        unsafe {
            left.pre_exec(move || join(&fds));
        }
        let mut left = left.spawn().unwrap();
        drop(procs);
        // The live host's own groups are not touched.
        let own = containment.create(8).unwrap().unwrap();

        assert!(containment.sweep() >= 1);
        for dir in &dirs {
            assert!(!dir.exists(), "{} was not removed", dir.display());
        }
        let status = left.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9));
        assert!(own.unified.as_ref().or(own.pids.as_ref()).unwrap().exists());
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
