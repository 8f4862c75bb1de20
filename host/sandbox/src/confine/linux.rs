//! Landlock, seccomp, network namespaces and resource limits on Linux.

use std::os::fd::{AsRawFd, OwnedFd};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

use super::{ConfineError, Network, Policy, Rlimits, SYSTEM_READ, SYSTEM_WRITE, seccomp};

/// The oldest ABI that has everything we need: filesystem rules with
/// `truncate` (ABI 3) and TCP rules (ABI 4).
const NEEDED: ABI = ABI::V4;

/// The ruleset's descriptor and what else the child must do.
#[derive(Debug)]
pub struct Prepared {
    ruleset: OwnedFd,
    new_network: bool,
    rlimits: Rlimits,
    filter: Vec<libc::sock_filter>,
}

/// The kernel's Landlock ABI version.
pub fn abi() -> i32 {
    // SAFETY: `landlock_create_ruleset(NULL, 0, VERSION)` only returns a
    // number; it takes no memory from us.
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        ) as i32
    }
    .max(0)
}

pub fn prepare(policy: &Policy) -> Result<Prepared, ConfineError> {
    let unsupported = |e: &dyn std::fmt::Display| {
        ConfineError::Unsupported(format!("Landlock ABI {}: {e}", abi()))
    };
    let abi = abi();
    let read = AccessFs::from_read(NEEDED);
    let all = AccessFs::from_all(NEEDED);
    // Handled, so denied unless a rule grants it: ioctls on device files
    // (ABI 5: no TIOCSTI on a terminal, whatever the program opens) and
    // connecting to socket files (ABI 9).
    let mut handled = all;
    if abi >= 5 {
        handled |= AccessFs::IoctlDev;
    }
    let resolve_unix = abi >= 9;
    if resolve_unix {
        handled |= AccessFs::ResolveUnix;
    }
    // With any port allowed, only `bind` is handled (and so refused).
    let net = match policy.network {
        Network::Any => AccessNet::BindTcp.into(),
        _ => AccessNet::from_all(NEEDED),
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(|e| unsupported(&e))?
        .handle_access(net)
        .map_err(|e| unsupported(&e))?;
    if abi >= 6 {
        // No signal to a process outside its domain (the host, other
        // programs), no abstract socket made outside it.
        ruleset = ruleset
            .scope(Scope::Signal | Scope::AbstractUnixSocket)
            .map_err(|e| unsupported(&e))?;
    }
    let mut ruleset = ruleset
        .create()
        .map_err(|e| unsupported(&e))?
        .add_rules(path_beneath_rules(SYSTEM_READ, read))
        .map_err(|e| unsupported(&e))?
        .add_rules(path_beneath_rules(SYSTEM_WRITE, all))
        .map_err(|e| unsupported(&e))?
        .add_rules(path_beneath_rules(&policy.read, read))
        .map_err(|e| unsupported(&e))?
        .add_rules(path_beneath_rules(&policy.write, all))
        .map_err(|e| unsupported(&e))?;
    if resolve_unix {
        ruleset = ruleset
            .add_rules(path_beneath_rules(
                &policy.unix_sockets,
                AccessFs::ResolveUnix,
            ))
            .map_err(|e| unsupported(&e))?;
    }
    if let Network::Ports(ports) = &policy.network {
        for &port in ports {
            ruleset = ruleset
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(|e| unsupported(&e))?;
        }
    }
    let fd: Option<OwnedFd> = ruleset.into();
    let ruleset = fd.ok_or_else(|| unsupported(&"no ruleset was created"))?;
    // Below ABI 9 socket files are held by seccomp instead: every AF_UNIX
    // socket is refused unless the program is granted one (and then,
    // the kernel being unable to tell them apart, any is reachable).
    let deny_unix = !resolve_unix && policy.unix_sockets.is_empty();
    Ok(Prepared {
        ruleset,
        new_network: policy.network == Network::None,
        rlimits: policy.rlimits,
        filter: seccomp::filter(deny_unix),
    })
}

impl Prepared {
    pub fn apply_to(self, command: &mut tokio::process::Command) {
        let Prepared {
            ruleset,
            new_network,
            rlimits,
            filter,
        } = self;
        let fd = ruleset.as_raw_fd();
        // SAFETY: the closure runs in the child between fork and exec and
        // makes only async-signal-safe system calls on values copied in
        // (no allocation, no locks). The ruleset descriptor stays open in
        // the parent until the command is dropped, so `fd` is valid in the
        // child.
        unsafe {
            command.pre_exec(move || {
                let _keep = &ruleset;
                confine_self(fd, new_network, rlimits)?;
                seccomp::install(&filter)
            });
        }
    }
}

/// In the child: limits, then (best effort) a network namespace, then
/// `no_new_privs` and the Landlock ruleset. Any failure fails the spawn.
fn confine_self(ruleset: i32, new_network: bool, rlimits: Rlimits) -> std::io::Result<()> {
    let limits = |resource, soft: u64, hard: u64| {
        let limit = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        // SAFETY: a plain system call on a value on the stack.
        if unsafe { libc::setrlimit(resource, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    let limit = |resource, value: u64| limits(resource, value, value);
    // At the soft limit the program gets SIGXCPU (which says why it
    // ended); a second later, at the hard limit, SIGKILL.
    limits(
        libc::RLIMIT_CPU,
        rlimits.cpu_seconds,
        rlimits.cpu_seconds.saturating_add(1),
    )?;
    limit(libc::RLIMIT_AS, rlimits.address_space)?;
    limit(libc::RLIMIT_FSIZE, rlimits.file_size)?;
    limit(libc::RLIMIT_NOFILE, rlimits.open_files)?;
    limit(libc::RLIMIT_CORE, rlimits.core)?;
    if new_network {
        // Defence in depth beside Landlock's TCP rules (which already deny
        // every TCP connect and bind): no interface but a private loopback,
        // so no UDP either. Where the kernel refuses (no privilege, no user
        // namespaces), Landlock's rules still hold.
        // SAFETY: system calls without memory arguments.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNET) != 0 {
                let _ = libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET);
            }
        }
    }
    // SAFETY: system calls without memory arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
