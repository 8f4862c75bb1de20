//! A seccomp filter for confined programs: what Landlock (ABI 7 and
//! older) does not hold.
//!
//! - `socket(AF_UNIX, …)` fails with `EACCES`, so no program can connect
//!   to a socket file (a Docker socket, an ssh agent, a session bus), since
//!   Landlock's file rules do not cover `connect` below ABI 9. Socket pairs
//!   stay allowed (runtimes use them for their own children's pipes), but
//!   not datagram pairs: `sendto` on an AF_UNIX datagram socket may name a
//!   socket file whatever the socket is connected to.
//! - `io_uring_setup`, `io_uring_enter` and `io_uring_register` fail with
//!   `EPERM`: io_uring's operations (`IORING_OP_SOCKET`, `IORING_OP_CONNECT`)
//!   are not system calls, so no filter could see them. Runtimes that try
//!   io_uring fall back to ordinary calls.
//! - Every system call of a foreign ABI (i386 or x32 on x86_64) fails with
//!   `ENOSYS`: the filter reads numbers of the native ABI only, and the same
//!   number means another call there (`socketcall` on i386).
//!
//! Invariant: the program is built in the parent; the child only passes
//! its address to `prctl`.

/// Where the filter can be built: the architectures whose numbers it knows.
pub const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

/// x32 system calls carry this bit in their number on x86_64.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

// Offsets in `struct seccomp_data`: nr, arch, then args[6] from 16 (the
// low half of each on these little-endian architectures).
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0: u32 = 16;
const ARG1: u32 = 24;

/// What a jump goes to.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum To {
    Next,
    Allow,
    Eacces,
    Eperm,
    Enosys,
    Socket,
    Pair,
}

/// One instruction before its jumps are resolved.
enum Op {
    /// Load the 32-bit word at this offset of `seccomp_data`.
    Load(u32),
    /// `A &= k`.
    And(u32),
    /// Compare `A` with `k` (`==` or `>=`) and jump.
    Jump { ge: bool, k: u32, yes: To, no: To },
    /// A label here.
    Label(To),
    /// Return this action.
    Ret(u32),
}

/// The filter: every AF_UNIX socket refused when `deny_unix`, io_uring
/// always, foreign ABIs always.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn filter(deny_unix: bool) -> Vec<libc::sock_filter> {
    use To::*;
    let errno = |e: i32| libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA);
    let nr = |n: libc::c_long| n as u32;
    let mut ops = vec![
        Op::Load(ARCH),
        Op::Jump {
            ge: false,
            k: NATIVE_ARCH,
            yes: Next,
            no: Enosys,
        },
        Op::Load(NR),
    ];
    #[cfg(target_arch = "x86_64")]
    ops.push(Op::Jump {
        ge: true,
        k: X32_SYSCALL_BIT,
        yes: Enosys,
        no: Next,
    });
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        ops.push(Op::Jump {
            ge: false,
            k: nr(call),
            yes: Eperm,
            no: Next,
        });
    }
    if deny_unix {
        ops.push(Op::Jump {
            ge: false,
            k: nr(libc::SYS_socket),
            yes: Socket,
            no: Next,
        });
        ops.push(Op::Jump {
            ge: false,
            k: nr(libc::SYS_socketpair),
            yes: Pair,
            no: Allow,
        });
        ops.extend([
            Op::Label(Socket),
            Op::Load(ARG0),
            Op::Jump {
                ge: false,
                k: libc::AF_UNIX as u32,
                yes: Eacces,
                no: Allow,
            },
            Op::Label(Pair),
            Op::Load(ARG0),
            Op::Jump {
                ge: false,
                k: libc::AF_UNIX as u32,
                yes: Next,
                no: Allow,
            },
            Op::Load(ARG1),
            // The type without SOCK_NONBLOCK and SOCK_CLOEXEC.
            Op::And(0xf),
            Op::Jump {
                ge: false,
                k: libc::SOCK_DGRAM as u32,
                yes: Eacces,
                no: Allow,
            },
        ]);
    }
    ops.extend([
        Op::Label(Allow),
        Op::Ret(libc::SECCOMP_RET_ALLOW),
        Op::Label(Eacces),
        Op::Ret(errno(libc::EACCES)),
        Op::Label(Eperm),
        Op::Ret(errno(libc::EPERM)),
        Op::Label(Enosys),
        Op::Ret(errno(libc::ENOSYS)),
    ]);
    assemble(&ops)
}

/// Resolves labels to the relative offsets classic BPF jumps take.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn assemble(ops: &[Op]) -> Vec<libc::sock_filter> {
    let mut at = std::collections::HashMap::new();
    let mut index = 0usize;
    for op in ops {
        match op {
            Op::Label(label) => {
                at.insert(*label, index);
            }
            _ => index += 1,
        }
    }
    let code = |c: u32| c as u16;
    let mut out = Vec::with_capacity(index);
    for op in ops {
        let here = out.len();
        #[allow(
            clippy::expect_used,
            reason = "the filter is fixed, and every jump in it is short and forward"
        )]
        let offset = |to: To| -> u8 {
            match to {
                To::Next => 0,
                label => {
                    let target = at[&label];
                    // Labels are always ahead (classic BPF jumps only
                    // forward), and this filter is far shorter than 256.
                    u8::try_from(target - here - 1).expect("a short forward jump")
                }
            }
        };
        let insn = match op {
            Op::Label(_) => continue,
            Op::Load(k) => libc::sock_filter {
                code: code(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS),
                jt: 0,
                jf: 0,
                k: *k,
            },
            Op::And(k) => libc::sock_filter {
                code: code(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K),
                jt: 0,
                jf: 0,
                k: *k,
            },
            Op::Jump { ge, k, yes, no } => libc::sock_filter {
                code: code(
                    libc::BPF_JMP | if *ge { libc::BPF_JGE } else { libc::BPF_JEQ } | libc::BPF_K,
                ),
                jt: offset(*yes),
                jf: offset(*no),
                k: *k,
            },
            Op::Ret(k) => libc::sock_filter {
                code: code(libc::BPF_RET | libc::BPF_K),
                jt: 0,
                jf: 0,
                k: *k,
            },
        };
        out.push(insn);
    }
    out
}

/// No filter where the architecture's numbers are not known.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn filter(_deny_unix: bool) -> Vec<libc::sock_filter> {
    Vec::new()
}

/// In the child: installs `program` (no-op when empty). `no_new_privs`
/// must be set already.
pub fn install(program: &[libc::sock_filter]) -> std::io::Result<()> {
    if program.is_empty() {
        return Ok(());
    }
    let prog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points at a filter that lives until after the call;
    // the kernel copies it.
    let done = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &prog as *const libc::sock_fprog as libc::c_ulong,
            0,
            0,
        )
    };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
