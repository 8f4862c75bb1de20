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
//! The hierarchies used, each when it can be written:
//! - the unified one (cgroup v2): `cgroup.kill` kills every member at once,
//!   races with `fork` included; `pids.max` and `memory.max` too when those
//!   controllers are enabled there;
//! - the v1 `pids` hierarchy: `pids.max` bounds the number of processes (a
//!   fork bomb meets `EAGAIN`), and its members are killed until none is
//!   left (bounded, since they cannot multiply past `pids.max`);
//! - the v1 `memory` hierarchy: `memory.limit_in_bytes` bounds the memory
//!   of all the program's processes together (past it the kernel's OOM
//!   killer picks one of them, never the host), where `RLIMIT_AS` alone
//!   bounds each process and so lets many processes add up.
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

/// A kind of control-group hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// cgroup v2.
    Unified,
    /// The v1 `pids` controller.
    Pids,
    /// The v1 `memory` controller.
    Memory,
}

/// Where this process may create control groups: its own group in each
/// hierarchy it can write.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Containment {
    hierarchies: Vec<(Kind, PathBuf)>,
    /// The controllers the unified hierarchy enables for the groups made
    /// under our own (read once).
    unified_controllers: Vec<String>,
}

/// What one program's groups bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupLimits {
    /// Processes at once, the program included.
    pub processes: u64,
    /// Memory of all its processes together, bytes.
    pub memory: u64,
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
            let hierarchies: Vec<(Kind, PathBuf)> = find(&mountinfo, &membership)
                .into_iter()
                .filter(|(_, dir)| writable(dir))
                .collect();
            let unified_controllers = (hierarchies.iter())
                .find(|(kind, _)| *kind == Kind::Unified)
                .map(|(_, base)| {
                    fs::read_to_string(base.join("cgroup.subtree_control"))
                        .unwrap_or_default()
                        .split_whitespace()
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let found = Containment {
                hierarchies,
                unified_controllers,
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
        for (kind, base) in &self.hierarchies {
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
                // Killed and removed as it drops.
                drop(Contained {
                    groups: vec![(*kind, dir.clone())],
                    procs: Vec::new(),
                });
                removed += usize::from(!dir.exists());
            }
        }
        removed
    }

    fn has(&self, kind: Kind) -> Option<&Path> {
        (self.hierarchies.iter())
            .find(|(k, _)| *k == kind)
            .map(|(_, dir)| dir.as_path())
    }

    /// Whether a controller is enabled for the groups made in the unified
    /// hierarchy.
    fn unified_controls(&self, controller: &str) -> bool {
        self.unified_controllers.iter().any(|c| c == controller)
    }

    /// Whether programs are kept in control groups (and so cannot escape
    /// by `setsid` or a double fork).
    pub fn available(&self) -> bool {
        !self.hierarchies.is_empty()
    }

    /// Whether the number of processes is bounded by `pids.max`.
    pub fn bounds_processes(&self) -> bool {
        self.has(Kind::Pids).is_some() || self.unified_controls("pids")
    }

    /// Whether the memory of a program's processes together is bounded.
    pub fn bounds_memory(&self) -> bool {
        self.has(Kind::Memory).is_some() || self.unified_controls("memory")
    }

    /// How `plugins` shows it.
    pub fn describe(&self) -> String {
        if !self.available() {
            return "process group only (no writable cgroup)".to_owned();
        }
        let mut what = Vec::new();
        if self.has(Kind::Unified).is_some() {
            what.push("kill");
        }
        if self.bounds_processes() {
            what.push("pids.max");
        }
        if self.bounds_memory() {
            what.push("memory");
        }
        format!("cgroup ({})", what.join(", "))
    }

    /// Makes the groups of one program, bounded by `limits`. `None` when
    /// no hierarchy is writable.
    pub fn create(&self, limits: GroupLimits) -> io::Result<Option<Contained>> {
        if !self.available() {
            return Ok(None);
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = group_name(NEXT.fetch_add(1, Ordering::Relaxed));
        let mut contained = Contained::default();
        for (kind, base) in &self.hierarchies {
            let dir = base.join(&name);
            fs::create_dir(&dir)?;
            contained.groups.push((*kind, dir.clone()));
            let processes = limits.processes.to_string();
            let memory = limits.memory.to_string();
            match kind {
                Kind::Unified => {
                    if self.unified_controls("pids") {
                        fs::write(dir.join("pids.max"), &processes)?;
                    }
                    if self.unified_controls("memory") {
                        fs::write(dir.join("memory.max"), &memory)?;
                        // No swap beyond it, where swap is accounted.
                        let _ = fs::write(dir.join("memory.swap.max"), "0");
                    }
                }
                Kind::Pids => fs::write(dir.join("pids.max"), &processes)?,
                Kind::Memory => {
                    fs::write(dir.join("memory.limit_in_bytes"), &memory)?;
                    // Memory and swap together no more than memory alone,
                    // where swap is accounted.
                    let _ = fs::write(dir.join("memory.memsw.limit_in_bytes"), &memory);
                }
            }
            contained.procs.push(open_procs(&dir)?);
        }
        Ok(Some(contained))
    }
}

/// The groups of one program: joined in its child, killed and removed
/// when dropped.
#[derive(Debug, Default)]
pub struct Contained {
    groups: Vec<(Kind, PathBuf)>,
    procs: Vec<File>,
}

impl Contained {
    /// The descriptors the child writes `0` to, to join (valid while this
    /// lives).
    pub(super) fn join_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// Kills every member; returns once none is left running (or after
    /// two seconds, which only a kernel refusing the kill could reach).
    pub fn kill(&self) {
        let started = Instant::now();
        for (kind, dir) in &self.groups {
            if *kind == Kind::Unified {
                let _ = fs::write(dir.join("cgroup.kill"), "1");
            }
        }
        loop {
            let members: Vec<i32> = (self.groups.iter())
                .flat_map(|(_, dir)| members(dir))
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
        self.groups.iter().all(|(_, dir)| members(dir).is_empty())
    }

    /// Where its groups are.
    pub fn dirs(&self) -> impl Iterator<Item = &Path> {
        self.groups.iter().map(|(_, dir)| dir.as_path())
    }
}

impl Drop for Contained {
    fn drop(&mut self) {
        self.kill();
        self.procs.clear();
        for (_, dir) in self.groups.drain(..) {
            // A killed process leaves its group a moment after the signal.
            let started = Instant::now();
            while fs::remove_dir(&dir).is_err() && started.elapsed() < KILL_FOR {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// Makes `command`'s child join groups of its own, bounded by `limits`,
/// where the host can make groups; `None` where it cannot. Keep the result
/// alive until the child has been killed: dropping it kills what the
/// groups hold.
pub fn contain(
    command: &mut tokio::process::Command,
    limits: GroupLimits,
) -> io::Result<Option<Contained>> {
    let Some(contained) = Containment::get().create(limits)? else {
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
        unsafe { forked_probe(|| libc::write(fd, b"0".as_ptr().cast(), 1) == 1) }
    });
    let started = Instant::now();
    while fs::remove_dir(&probe).is_err() && started.elapsed() < KILL_FOR {
        std::thread::sleep(Duration::from_millis(1));
    }
    joined
}

/// Whether `check`, run in a forked child that then exits, holds: how the
/// host learns what the kernel lets a child do, without doing it itself.
///
/// # Safety
/// `check` runs between `fork` and `_exit` in a copy of a multi-threaded
/// process: it may make only async-signal-safe calls on memory made before.
pub(super) unsafe fn forked_probe(check: impl FnOnce() -> bool) -> bool {
    // SAFETY: the child runs only `check` (see above) and `_exit`s; the
    // parent reaps it at once.
    unsafe {
        match libc::fork() {
            0 => libc::_exit(if check() { 0 } else { 1 }),
            -1 => false,
            child => {
                let mut status = 0;
                libc::waitpid(child, &mut status, 0) == child
                    && libc::WIFEXITED(status)
                    && libc::WEXITSTATUS(status) == 0
            }
        }
    }
}

/// Our own group's directory in the unified hierarchy and in the v1
/// `pids` and `memory` ones, from `/proc/self/mountinfo` and
/// `/proc/self/cgroup`.
fn find(mountinfo: &str, membership: &str) -> Vec<(Kind, PathBuf)> {
    let mut found: Vec<(Kind, PathBuf)> = Vec::new();
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
        let mounts = |controller: &str| {
            *fstype == "cgroup"
                && right
                    .get(2)
                    .is_some_and(|opts| opts.split(',').any(|o| o == controller))
        };
        let (kind, dir) = if *fstype == "cgroup2" {
            (Kind::Unified, own(None).map(dir))
        } else if mounts("pids") {
            (Kind::Pids, own(Some("pids")).map(dir))
        } else if mounts("memory") {
            (Kind::Memory, own(Some("memory")).map(dir))
        } else {
            continue;
        };
        if let Some(dir) = dir
            && !found.iter().any(|(k, _)| *k == kind)
        {
            found.push((kind, dir));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_both_hierarchies_from_mountinfo() {
        let mountinfo = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let membership = "8:pids:/a/b\n4:memory:/m\n0::/c\n";
        assert_eq!(
            find(mountinfo, membership),
            [
                (Kind::Pids, PathBuf::from("/sys/fs/cgroup/pids/a/b")),
                (Kind::Memory, PathBuf::from("/sys/fs/cgroup/memory/m")),
                (Kind::Unified, PathBuf::from("/sys/fs/cgroup/unified/c")),
            ]
        );
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
        let dirs: Vec<PathBuf> = (containment.hierarchies.iter())
            .map(|(_, base)| base.join(&name))
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
        let own = containment
            .create(GroupLimits {
                processes: 8,
                memory: 1 << 30,
            })
            .unwrap()
            .unwrap();

        assert!(containment.sweep() >= 1);
        for dir in &dirs {
            assert!(!dir.exists(), "{} was not removed", dir.display());
        }
        let status = left.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9));
        assert!(own.dirs().all(Path::exists));
    }

    #[test]
    fn a_pure_v2_system_has_no_v1_pids() {
        let mountinfo = "29 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            find(mountinfo, "0::/user.slice/x.scope\n"),
            [(
                Kind::Unified,
                PathBuf::from("/sys/fs/cgroup/user.slice/x.scope")
            )]
        );
    }
}
