//! Keeping a program's processes together where no control group can be
//! made (an ordinary user without a delegated cgroup subtree): a PID
//! namespace of its own, inside a user namespace when the host is not
//! root, whose first process is the program.
//!
//! When the first process of a PID namespace ends, the kernel kills every
//! other process in it, and no process can leave its PID namespace, so a
//! child that calls `setsid` or double-forks still ends with the program.
//! Three processes, all made between `fork` and `exec` of the host's child:
//! - the **supervisor** (the host's child itself) unshares, forks the init
//!   and waits; it ends as the program did (its exit code, or its signal);
//! - the **init**, the namespace's first process, forks the program, reaps
//!   whatever is orphaned in the namespace, and reports the program's end
//!   to the supervisor on a pipe; it gets `SIGKILL` when the supervisor
//!   dies (`PR_SET_PDEATHSIG`), so killing the supervisor, or its process
//!   group, kills the whole namespace;
//! - the **program**, the namespace's second process, with the ordinary
//!   signal semantics (a namespace's first process ignores signals it has
//!   no handler for: `SIGXCPU` at the CPU limit, a shell's `kill $$`).
//!
//! Neither the supervisor nor the init holds a descriptor of the
//! program's (its standard streams end when the program's do).
//!
//! Invariants:
//! - Everything is prepared in the parent ([`Prepared`]); between `fork`
//!   and `exec` only system calls run, on buffers made before.
//! - In a user namespace the program keeps its user and group ids (a
//!   one-to-one map of the host's), so file ownership reads as before.
//! - In a user namespace (not root), `RLIMIT_NPROC` bounds the program's
//!   processes: the kernel counts them per user namespace. Memory is
//!   bounded per process only (`RLIMIT_AS`); `plugins` says so.

use std::ffi::CString;
use std::io;
use std::sync::OnceLock;

/// What the child needs, made in the parent.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Whether a user namespace is needed too (not root).
    user: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    uid_map_path: CString,
    gid_map_path: CString,
    setgroups_path: CString,
}

impl Prepared {
    fn new() -> Prepared {
        // SAFETY: plain system calls without arguments.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        Prepared {
            user: uid != 0,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            uid_map_path: c"/proc/self/uid_map".into(),
            gid_map_path: c"/proc/self/gid_map".into(),
            setgroups_path: c"/proc/self/setgroups".into(),
        }
    }
}

/// Whether programs can be given a PID namespace here: probed once, by a
/// forked child that makes one (and a user namespace, when not root) and
/// exits.
pub fn available() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| {
        let prepared = Prepared::new();
        // SAFETY: `enter` makes only system calls on buffers made before
        // the fork.
        unsafe { super::cgroup::forked_probe(|| enter(&prepared).is_ok()) }
    })
}

/// Makes `command`'s child the supervisor of a PID namespace whose second
/// process is the program (see the module's documentation). In a user
/// namespace of its own, the program and what it starts may number at
/// most `processes` (`RLIMIT_NPROC` counts per user namespace, so this
/// bounds exactly them; root is exempt from it, and has control groups).
pub fn apply(command: &mut tokio::process::Command, processes: u64) {
    let prepared = Prepared::new();
    // The supervisor and the init are counted too.
    let nproc = libc::rlimit {
        rlim_cur: processes.saturating_add(2),
        rlim_max: processes.saturating_add(2),
    };
    // SAFETY: the closure makes only async-signal-safe system calls
    // (`unshare`, `open`, `write`, `read`, `close`, `close_range`, `pipe2`,
    // `fork`, `prctl`, `setrlimit`, `waitpid`, `sigprocmask`, `signal`,
    // `kill`, `_exit`) on buffers `prepared` owns, made in the parent.
    unsafe {
        command.pre_exec(move || {
            enter(&prepared)?;
            let mut report = [0; 2];
            if libc::pipe2(report.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return Err(io::Error::last_os_error());
            }
            let [from_init, to_supervisor] = report;
            match libc::fork() {
                -1 => Err(io::Error::last_os_error()),
                0 => {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                        libc::_exit(127);
                    }
                    match libc::fork() {
                        -1 => libc::_exit(127),
                        0 => {
                            // The program.
                            libc::close(from_init);
                            libc::close(to_supervisor);
                            if prepared.user && libc::setrlimit(libc::RLIMIT_NPROC, &nproc) != 0 {
                                return Err(io::Error::last_os_error());
                            }
                            Ok(())
                        }
                        program => init(program, to_supervisor),
                    }
                }
                init => supervise(init, from_init),
            }
        });
    }
}

/// In the child: a new PID namespace for its next child (in a new user
/// namespace mapping our ids one to one, when not root).
fn enter(prepared: &Prepared) -> io::Result<()> {
    let flags = if prepared.user {
        libc::CLONE_NEWUSER | libc::CLONE_NEWPID
    } else {
        libc::CLONE_NEWPID
    };
    // SAFETY: a system call without memory arguments.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if prepared.user {
        write_file(&prepared.setgroups_path, b"deny")?;
        write_file(&prepared.uid_map_path, &prepared.uid_map)?;
        write_file(&prepared.gid_map_path, &prepared.gid_map)?;
    }
    Ok(())
}

/// Writes `data` to the file at `path` (open, write, close).
fn write_file(path: &CString, data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is a valid C string and `data` a valid buffer, both
    // made before the fork.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if written != data.len() as isize {
            return Err(error);
        }
    }
    Ok(())
}

/// Closes every descriptor but `keep`.
///
/// # Safety
/// Between `fork` and `exec` only: nothing else may hold them.
unsafe fn close_all_but(keep: libc::c_int) {
    let keep = keep as u32;
    // SAFETY: closing descriptors nothing in this process uses any more.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32);
    }
}

/// The init: reaps every child of the namespace until the program ends,
/// then writes its wait status to `report` and exits (which ends the
/// namespace). Never returns.
fn init(program: libc::pid_t, report: libc::c_int) -> ! {
    // SAFETY: async-signal-safe system calls only, on our own stack.
    unsafe {
        close_all_but(report);
        let mut status = 0;
        loop {
            let reaped = libc::waitpid(-1, &mut status, 0);
            if reaped == program {
                break;
            }
            if reaped < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        let bytes = status.to_ne_bytes();
        libc::write(report, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(0)
    }
}

/// The supervisor: lets go of every descriptor but the init's report (so
/// that the program's streams end when its own do, and the parent's spawn
/// returns once it has `exec`ed), waits for the init, and ends as the
/// program did (as the init did, when it left no report). Never returns.
fn supervise(init: libc::pid_t, report: libc::c_int) -> ! {
    // SAFETY: async-signal-safe system calls only, on our own stack.
    unsafe {
        close_all_but(report);
        // Its signal, when the program died of one, must reach it.
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        let mut status = 0;
        loop {
            let waited = libc::waitpid(init, &mut status, 0);
            if waited == init {
                break;
            }
            if waited < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        let mut bytes = [0u8; 4];
        if libc::read(report, bytes.as_mut_ptr().cast(), bytes.len()) == 4 {
            status = i32::from_ne_bytes(bytes);
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    use super::*;

    /// `sh -c script` as the first process of a PID namespace, with a
    /// marker in its environment; its output.
    async fn run(script: &str, marker: &str) -> std::process::Output {
        assert!(available(), "this machine makes PID namespaces");
        run_as(script, marker, true).await
    }

    async fn run_as(script: &str, marker: &str, namespace: bool) -> std::process::Output {
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .args(["-c", script])
            .env("TINY_HARNESS_PIDNS_MARKER", marker)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if namespace {
            apply(&mut command, 16);
        }
        command.output().await.expect("sh runs")
    }

    fn marked_pids(marker: &str) -> Vec<i32> {
        let needle = format!("TINY_HARNESS_PIDNS_MARKER={marker}");
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| {
                let e = e.ok()?;
                let pid = e.file_name().to_str()?.parse().ok()?;
                let environ = std::fs::read(e.path().join("environ")).ok()?;
                environ
                    .split(|&b| b == 0)
                    .any(|v| v == needle.as_bytes())
                    .then_some(pid)
            })
            .collect()
    }

    fn marked(marker: &str) -> usize {
        marked_pids(marker).len()
    }

    #[tokio::test]
    async fn what_leaves_the_session_ends_with_the_program() {
        let marker = format!("escape-{}", std::process::id());
        // The sleeper leaves the session and would outlive the shell; the
        // shell says it started, then exits.
        let script = "setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $$; sleep 0.2";
        // Without the namespace it does outlive it.
        let control = format!("control-{}", std::process::id());
        run_as(script, &control, false).await;
        let escaped = marked_pids(&control);
        assert_eq!(escaped.len(), 1, "the control's sleeper");
        // SAFETY: a signal to the control's sleeper, which the test made.
        unsafe { libc::kill(escaped[0], libc::SIGKILL) };
        let output = run(script, &marker).await;
        assert!(output.status.success(), "{output:?}");
        // The program is the namespace's second process (after its init).
        assert_eq!(String::from_utf8_lossy(&output.stdout), "2\n");
        let until = Instant::now() + Duration::from_secs(10);
        while marked(&marker) > 0 {
            assert!(Instant::now() < until, "the sleeper outlived the program");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn the_program_s_exit_and_signal_are_its_supervisor_s() {
        let marker = format!("exit-{}", std::process::id());
        let output = run("echo out; echo err >&2; exit 7", &marker).await;
        assert_eq!(output.status.code(), Some(7));
        assert_eq!(String::from_utf8_lossy(&output.stdout), "out\n");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "err\n");
        // A program killed by a signal, its own included (it is not the
        // namespace's first process, which would ignore it), ends its
        // supervisor by the same signal.
        let output = run("kill -TERM $$; sleep 5", &marker).await;
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(output.status.signal(), Some(libc::SIGTERM));
        let mut command = tokio::process::Command::new("/bin/sleep");
        command.arg("30").env("TINY_HARNESS_PIDNS_MARKER", &marker);
        apply(&mut command, 16);
        let mut child = command.spawn().unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        // Only the program has `exec`ed, so only it carries the marker.
        let program = loop {
            if let Some(&pid) = marked_pids(&marker).first() {
                break pid;
            }
            assert!(Instant::now() < until, "no program under the supervisor");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        // SAFETY: a signal to the test's own great-grandchild.
        assert_eq!(unsafe { libc::kill(program, libc::SIGKILL) }, 0);
        assert_eq!(child.wait().await.unwrap().signal(), Some(libc::SIGKILL));
    }
}
