//! Confining a program the host starts for a plugin (an exec call, a stdio
//! MCP server: both start through [`command`]) by the kernel, with the
//! plugin's own grants.
//!
//! Once a program runs natively the WebAssembly sandbox no longer holds
//! it, so the grants are enforced again, in the child, before `exec`:
//! - **Filesystem (Landlock)**: read and execute of a documented system set
//!   ([`SYSTEM_READ`]) and of the paths an exec grant adds, the plugin's
//!   granted directories with their modes, read-write of the program's
//!   private directory, and nothing else.
//! - **Network**: Landlock's TCP rules allow `connect` only to the ports
//!   of the plugin's `net` grants and `bind` to none; with no `net` grant
//!   the child also gets a network namespace of its own (no interface but
//!   its own loopback), where the kernel allows one.
//! - `no_new_privs`, and resource limits ([`Rlimits`]): CPU seconds,
//!   address space, file size, open files; the number of processes through
//!   the program's control group ([`cgroup`]), which also lets the host kill
//!   every process it started, those that left its process group included.
//!
//! Invariants:
//! - Fail closed: where the kernel lacks what confinement needs (Landlock
//!   with TCP rules, ABI 4), the program is not started, unless the
//!   plugin's config says `confinement = "none"`.
//! - Everything that allocates happens in the parent ([`Policy::prepare`]);
//!   the child, between `fork` and `exec`, makes only system calls.

pub mod cgroup;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub mod pidns;
mod run;
#[cfg(target_os = "linux")]
mod seccomp;
mod start;

pub use cgroup::{Contained, Containment, GroupLimits};
pub use run::{Exited, RunOutput, Stdio3, run};
pub use start::{Group, PRIVATE_ENV, PrivateDir, Started, apply, command};
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::PathBuf;

/// What the kernel is asked to enforce for a plugin's programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Mode {
    /// Landlock filesystem and TCP rules, `no_new_privs`, resource limits,
    /// and a network namespace when the plugin has no `net` grant. The
    /// default.
    #[default]
    Landlock,
    /// None: the program runs with the host's own access (only the checks
    /// the host makes before starting it apply). Only when a config says
    /// so explicitly.
    None,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Landlock => "landlock",
            Mode::None => "none",
        })
    }
}

/// Host paths every confined program may read and execute: what running
/// ordinary programs needs (binaries, libraries, the dynamic loader's
/// files, time zones, certificates, name resolution, user names, device
/// files that are not devices). Paths missing here are skipped.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    // Which system this is (pip's user agent reads them, as do other
    // installers): no secret in them.
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/lsb-release",
    // Media types by file name (Python's mimetypes reads it at start), and
    // locale names (`/usr/share/locale/locale.alias` links here).
    "/etc/mime.types",
    "/etc/locale.alias",
    "/dev/urandom",
    "/dev/random",
];

/// Device files every confined program may read and write (writes to them
/// go nowhere). Not `/dev/tty`: a program the host starts has no
/// controlling terminal, and none of the user's.
pub const SYSTEM_WRITE: &[&str] = &["/dev/null", "/dev/zero"];

/// Resource limits of a program the host starts (`setrlimit`, soft and
/// hard, inherited by everything it starts; the process count is its
/// control group's `pids.max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rlimits {
    /// CPU seconds each of its processes may use (`RLIMIT_CPU`).
    pub cpu_seconds: u64,
    /// Virtual memory each of its processes may map (`RLIMIT_AS`), bytes;
    /// also the memory all of them together may use, where the host can
    /// make a memory control group.
    pub address_space: u64,
    /// Largest file it may write, in bytes.
    pub file_size: u64,
    /// Most descriptors it may hold open.
    pub open_files: u64,
    /// Core dumps: none.
    pub core: u64,
    /// Most processes it may have at once, itself included (where the host
    /// can make a control group).
    pub processes: u64,
}

impl Rlimits {
    /// What the program's control groups bound: its processes, and the
    /// memory of all of them together (the same figure as each one's
    /// address space).
    pub fn group(&self) -> GroupLimits {
        GroupLimits {
            processes: self.processes,
            memory: self.address_space,
        }
    }

    /// One hour of CPU per process.
    pub const DEFAULT_CPU_SECONDS: u64 = 3600;
    /// 4 GiB of address space per process (Node.js and CPython start in
    /// well under 1 GiB).
    pub const DEFAULT_ADDRESS_SPACE: u64 = 4 << 30;
    /// 256 processes.
    pub const DEFAULT_PROCESSES: u64 = 256;
}

impl Default for Rlimits {
    fn default() -> Self {
        Rlimits {
            cpu_seconds: Self::DEFAULT_CPU_SECONDS,
            address_space: Self::DEFAULT_ADDRESS_SPACE,
            file_size: 1 << 30,
            open_files: 1024,
            core: 0,
            processes: Self::DEFAULT_PROCESSES,
        }
    }
}

/// What one program may touch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// Paths to read and execute, besides [`SYSTEM_READ`].
    pub read: Vec<PathBuf>,
    /// Paths to read and write (and execute).
    pub write: Vec<PathBuf>,
    /// Where it may connect.
    pub network: Network,
    /// Unix socket files it may connect to (an exec grant's `sockets`).
    /// Without any, it can create no AF_UNIX socket but a stream pair.
    pub unix_sockets: Vec<PathBuf>,
    /// Resource limits.
    pub rlimits: Rlimits,
}

/// The network a confined program may reach.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// None: every TCP connect and bind is refused, and the program gets a
    /// network namespace of its own where the kernel allows it.
    #[default]
    None,
    /// TCP connections to these ports only (any address: Landlock rules
    /// name ports, not hosts); no bind.
    Ports(Vec<u16>),
    /// Any TCP connection (a `net` grant with port `*`); no bind.
    Any,
}

/// Why a program cannot be confined (and so is not started).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfineError {
    /// The kernel lacks what confinement needs.
    #[error(
        "the kernel cannot confine it ({0}); the program is not started. Upgrade to a kernel with Landlock ABI 4 (Linux 6.7), or set confinement = \"none\" for this plugin to run it unconfined"
    )]
    Unsupported(String),
}

/// A policy made ready in the parent, to be applied in the child.
#[derive(Debug)]
pub struct Prepared {
    #[cfg(target_os = "linux")]
    inner: linux::Prepared,
}

impl Policy {
    /// Builds the kernel objects the child will apply (the Landlock
    /// ruleset), in the parent, where allocating is safe.
    pub fn prepare(&self) -> Result<Prepared, ConfineError> {
        #[cfg(target_os = "linux")]
        {
            Ok(Prepared {
                inner: linux::prepare(self)?,
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err(ConfineError::Unsupported(
                "Landlock exists only on Linux".to_owned(),
            ))
        }
    }
}

impl Prepared {
    /// Makes `command` apply the policy in its child before `exec`.
    pub fn apply_to(self, command: &mut tokio::process::Command) {
        #[cfg(target_os = "linux")]
        self.inner.apply_to(command);
        #[cfg(not(target_os = "linux"))]
        let _ = command;
    }
}

/// What the kernel holds a confined program to here, for people: the
/// Landlock ABI and what it covers, the seccomp filter, and the rest.
/// `sockets` says whether some program is granted Unix socket files.
pub fn in_force(sockets: bool) -> String {
    let abi = landlock_abi();
    let mut landlock = vec!["files", "TCP"];
    if abi >= 5 {
        landlock.push("device ioctls");
    }
    if abi >= 6 {
        landlock.push("signals and abstract sockets scoped");
    }
    if abi >= 9 {
        landlock.push("socket files");
    }
    let mut parts = vec![format!("landlock (ABI {abi}: {})", landlock.join(", "))];
    #[cfg(target_os = "linux")]
    if seccomp::SUPPORTED {
        parts.push(if abi >= 9 {
            "seccomp (no io_uring)".to_owned()
        } else if sockets {
            "seccomp (no io_uring; Unix sockets allowed for the programs granted sockets, \
             which this kernel cannot narrow to the granted files: Landlock ABI 9 can)"
                .to_owned()
        } else {
            "seccomp (no Unix socket files, no io_uring)".to_owned()
        });
    }
    parts.push("no_new_privs, rlimits, no terminal".to_owned());
    parts.join(", ")
}

/// What keeps a program's processes together here, for people: its
/// control groups, else a PID namespace, else only its process group.
pub fn containment() -> String {
    let groups = Containment::get();
    #[cfg(target_os = "linux")]
    if !groups.available() && pidns::available() {
        // SAFETY: a system call without arguments.
        let root = unsafe { libc::geteuid() } == 0;
        return if root {
            "pid namespace (no writable cgroup: processes not counted)".to_owned()
        } else {
            "pid namespace in a user namespace (no writable cgroup: RLIMIT_NPROC there, memory per process)"
                .to_owned()
        };
    }
    groups.describe()
}

/// The Landlock ABI the kernel offers (0 when it offers none).
pub fn landlock_abi() -> i32 {
    #[cfg(target_os = "linux")]
    {
        linux::abi()
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}
