//! The program behind a stdio MCP server: started in a process group of its
//! own with exactly its resolved environment, and stopped with all it
//! started.
//!
//! Invariants:
//! - The child's environment is cleared and set from its [`Process`]; its
//!   working directory is the declared one or a private empty directory
//!   that is removed when the child is.
//! - The child leads a new process group, so stopping it stops everything
//!   it forked: [`Child::shutdown`] closes nothing itself (the session
//!   closes stdin), waits a grace period for the leader, then kills the
//!   group; dropping a [`Child`] kills the group at once.
//! - Its standard error is read continuously (a full pipe would block the
//!   server) and kept only as a bounded tail, for error messages.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout};

use super::launch::Program;
use tiny_harness_sandbox::confine::PrivateDir;

/// How long a server may take to exit once its stdin is closed.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How much of a server's standard error is kept.
pub const STDERR_TAIL_BYTES: usize = 4096;

/// A running server program.
#[derive(Debug)]
pub struct Child {
    /// Its process group and control groups: everything it starts, even
    /// what leaves its process group, is killed with it. Dropped before
    /// `child`, so the group is killed while its leader is not reaped.
    group: tiny_harness_sandbox::confine::Group,
    child: tokio::process::Child,
    stderr: Arc<Mutex<Tail>>,
    _private_dir: PrivateDir,
}

/// The end of a stream, bounded.
#[derive(Debug, Default)]
pub struct Tail {
    lines: VecDeque<String>,
    bytes: usize,
}

impl Tail {
    fn push(&mut self, line: String) {
        let line: String = line.chars().take(STDERR_TAIL_BYTES / 4).collect();
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.bytes > STDERR_TAIL_BYTES
            && let Some(old) = self.lines.pop_front()
        {
            self.bytes -= old.len();
        }
    }

    /// The last non-empty line, made safe for one line of output.
    pub fn last_line(&self) -> Option<String> {
        self.lines
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| tiny_harness_core::display::one_line(l.trim()).into_owned())
    }
}

impl Child {
    /// Starts `process` for server `server`; returns the child and the
    /// pipes the session speaks MCP over.
    pub fn spawn(process: &Program, server: &str) -> io::Result<(Child, ChildStdout, ChildStdin)> {
        let tiny_harness_sandbox::confine::Started {
            mut command,
            private,
            contained,
        } = tiny_harness_sandbox::confine::command(
            &process.program,
            &process.args,
            &process.env,
            process.cwd.as_deref(),
            process.policy.as_ref(),
            server,
        )?;
        let mut child = command.spawn()?;
        let group = tiny_harness_sandbox::confine::Group::of(&child, contained);
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("no stdout"))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("no stdin"))?;
        let stderr = Arc::new(Mutex::new(Tail::default()));
        if let Some(pipe) = child.stderr.take() {
            let tail = stderr.clone();
            let server = server.to_owned();
            let redact = Redact::new(&process.secrets);
            tokio::spawn(drain_stderr(pipe, tail, server.to_owned(), redact));
        }
        Ok((
            Child {
                group,
                child,
                stderr,
                _private_dir: private,
            },
            stdout,
            stdin,
        ))
    }

    /// The last line the server wrote to standard error, if any.
    pub fn stderr_tail(&self) -> Option<String> {
        self.stderr.lock().ok().and_then(|t| t.last_line())
    }

    /// How the child ended, if it has.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits up to [`SHUTDOWN_GRACE`] for the leader to exit (its stdin is
    /// closed by then), then kills the whole group and reaps the leader.
    pub async fn shutdown(mut self) {
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.child.wait()).await;
        self.kill_group();
        let _ = self.child.wait().await;
    }

    fn kill_group(&mut self) {
        self.group.kill();
        let _ = self.child.start_kill();
    }
}

/// Lines of a server's standard error passed to the log, per child.
const MAX_LOGGED_LINES: usize = 1000;

/// Reads a server's standard error to its end in fixed chunks (so a line
/// with no newline costs no more than [`STDERR_TAIL_BYTES`]), keeping the
/// tail and logging the first [`MAX_LOGGED_LINES`] lines.
async fn drain_stderr(
    mut pipe: tokio::process::ChildStderr,
    tail: Arc<Mutex<Tail>>,
    server: String,
    redact: Redact,
) {
    let mut chunk = [0u8; 4096];
    let mut line = Vec::new();
    let mut logged = 0usize;
    let finish = |line: &mut Vec<u8>, logged: &mut usize| {
        let cut = line.len() >= STDERR_TAIL_BYTES;
        let text = redact.apply(&String::from_utf8_lossy(line), cut);
        line.clear();
        if *logged < MAX_LOGGED_LINES {
            *logged += 1;
            tracing::debug!(target: "tiny_harness::mcp", server = %server, "stderr: {}", tiny_harness_core::display::one_line(&text));
        }
        if let Ok(mut tail) = tail.lock() {
            tail.push(text);
        }
    };
    while let Ok(n) = pipe.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        for &byte in &chunk[..n] {
            if byte == b'\n' {
                finish(&mut line, &mut logged);
            } else if line.len() < STDERR_TAIL_BYTES {
                line.push(byte);
            }
        }
    }
    if !line.is_empty() {
        finish(&mut line, &mut logged);
    }
}

/// The values a program was given that may be secret, replaced by
/// `[redacted]` in every line quoted of its standard error (the tail, the
/// log), so that a server cannot read a token back to the user, a log or
/// the model.
#[derive(Debug, Clone, Default)]
pub struct Redact {
    secrets: Vec<String>,
}

impl Redact {
    /// Values shorter than this are not redacted (they would blank out
    /// ordinary words and digits).
    pub const MIN_SECRET_BYTES: usize = 4;
    /// A line cut at [`STDERR_TAIL_BYTES`] that ends with at least this
    /// much of a secret has that end redacted too.
    const MIN_PREFIX_BYTES: usize = 8;

    /// Redacts `secrets`, longest first (so that one holding another goes
    /// whole).
    pub fn new(secrets: &[String]) -> Redact {
        let mut secrets: Vec<String> = secrets
            .iter()
            .filter(|s| s.len() >= Self::MIN_SECRET_BYTES)
            .cloned()
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redact { secrets }
    }

    /// `line` with every secret replaced; when `cut` (the line was longer
    /// than what is kept), also a secret's beginning at its end.
    pub fn apply(&self, line: &str, cut: bool) -> String {
        let mut out = line.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "[redacted]");
            }
        }
        if cut {
            for secret in &self.secrets {
                let longest = secret.len().saturating_sub(1).min(out.len());
                let tail = (Self::MIN_PREFIX_BYTES..=longest)
                    .rev()
                    .filter(|&n| secret.is_char_boundary(n))
                    .find(|&n| out.ends_with(&secret[..n]));
                if let Some(n) = tail {
                    out.truncate(out.len() - n);
                    out.push_str("[redacted]");
                }
            }
        }
        out
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // Shutdown already killed the group when it ran; killing an empty
        // group again is harmless (`ESRCH`). The process group id stays
        // reserved until the leader is reaped, so this never hits another
        // group: tokio reaps the leader only after this drop.
        self.kill_group();
    }
}
