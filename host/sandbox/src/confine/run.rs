//! Running one program to its end, confined: stdin written, stdout and
//! stderr read with caps, the whole process group killed at the timeout
//! (and after the program exits, so nothing it left behind survives).
//!
//! Invariant: memory is bounded by the caps whatever the program writes
//! (past a cap the stream is still read, and discarded, so the program is
//! never blocked on a full pipe), and nothing of the group outlives
//! [`run`].

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::Policy;

/// How long the output readers may go on once the program is gone.
const DRAIN: Duration = Duration::from_secs(1);

/// What to run.
#[derive(Debug, Clone)]
pub struct Stdio3 {
    /// The absolute program path.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its whole environment.
    pub env: Vec<(String, String)>,
    /// Its working directory; `None` for a private one.
    pub cwd: Option<PathBuf>,
    /// Its standard input, closed once written.
    pub stdin: Vec<u8>,
}

/// How it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exited {
    /// With this exit code.
    Code(i32),
    /// By this signal.
    Signal(i32),
}

/// What it wrote and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunOutput {
    /// How it ended.
    pub exited: Exited,
    /// Standard output, up to the cap.
    pub stdout: Vec<u8>,
    /// Standard error, up to the cap.
    pub stderr: Vec<u8>,
    /// Whether standard output was cut.
    pub stdout_truncated: bool,
    /// Whether standard error was cut.
    pub stderr_truncated: bool,
    /// Whether it was killed at the timeout.
    pub timed_out: bool,
}

/// Runs `what` under `policy` (unconfined when `None`), keeping at most
/// `cap` bytes of each output stream, for at most `timeout`.
pub async fn run(
    what: Stdio3,
    policy: Option<Policy>,
    cap: usize,
    timeout: Duration,
) -> io::Result<RunOutput> {
    let super::Started {
        mut command,
        private: _private,
        contained,
    } = super::command(
        &what.program,
        &what.args,
        &what.env,
        what.cwd.as_deref(),
        policy.as_ref(),
        "exec",
    )?;
    let mut child = command.spawn()?;
    // Killed when this ends, however it ends: a call abandoned by its
    // caller (dropped at its deadline) takes the whole group with it.
    let group = super::Group::of(&child, contained);
    let mut stdin = child.stdin.take();
    let input = what.stdin;
    let writer = async move {
        if let Some(pipe) = stdin.as_mut() {
            // A program that does not read its input closes the pipe: fine.
            let _ = pipe.write_all(&input).await;
        }
        drop(stdin);
    };
    // The streams are read by tasks of their own, so that what the program
    // wrote before its timeout is kept.
    let stdout = tokio::spawn(capped(child.stdout.take(), cap));
    let stderr = tokio::spawn(capped(child.stderr.take(), cap));
    let writer = tokio::spawn(writer);
    let waited = tokio::time::timeout(timeout, child.wait()).await;
    // Whatever it started goes with it (which also closes the pipes those
    // processes held, so the readers end).
    group.kill();
    let (status, timed_out) = match waited {
        Ok(status) => (status?, false),
        Err(_) => {
            let _ = child.start_kill();
            (child.wait().await?, true)
        }
    };
    writer.abort();
    // Without a control group, a process that left the group (`setsid`)
    // may still hold a pipe: the readers get a moment to finish what is
    // buffered, then are stopped.
    let finish = |reader: tokio::task::JoinHandle<(Vec<u8>, bool)>| async move {
        let abort = reader.abort_handle();
        match tokio::time::timeout(DRAIN, reader).await {
            Ok(Ok(read)) => read,
            _ => {
                abort.abort();
                (Vec::new(), true)
            }
        }
    };
    let (stdout, stdout_truncated) = finish(stdout).await;
    let (stderr, stderr_truncated) = finish(stderr).await;
    use std::os::unix::process::ExitStatusExt;
    let exited = match (status.code(), status.signal()) {
        (Some(code), _) => Exited::Code(code),
        (None, Some(signal)) => Exited::Signal(signal),
        (None, None) => Exited::Signal(0),
    };
    Ok(RunOutput {
        exited,
        stdout,
        stderr,
        stdout_truncated,
        stderr_truncated,
        timed_out,
    })
}

/// Reads `pipe` to its end, keeping the first `cap` bytes.
async fn capped(pipe: Option<impl AsyncRead + Unpin>, cap: usize) -> (Vec<u8>, bool) {
    let Some(mut pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
                truncated |= n > room;
            }
        }
    }
    (kept, truncated)
}
