//! Programs the host runs for the plugin: the WIT `exec` import, with a
//! builder and errors that convert into [`ToolError`].
//!
//! ```ignore
//! let out = Command::new("git").args(["status", "--short"]).cwd("/workspace").run()?;
//! if !out.success() {
//!     return Err(ToolError::Reported(out.stderr_lossy()));
//! }
//! ```
//!
//! The host decides what may run: only programs in the plugin's `exec`
//! grants, confined by the kernel to its granted directories, each output
//! stream capped. A program the grants do not allow is
//! [`ExecError::Denied`] with a message that names the grant that would
//! allow it; `?` in a tool turns it into the call error `denied`.

use crate::ToolError;
use crate::bindings::tiny_harness::plugin::exec as wit;

pub use wit::ExecError;

/// One program to run, built up and then [`run`](Command::run).
#[derive(Debug, Clone)]
pub struct Command {
    inner: wit::Command,
}

impl Command {
    /// `program`: a bare name looked up on the host's `PATH`, or an
    /// absolute path; either way one of the plugin's exec grants.
    pub fn new(program: impl Into<String>) -> Command {
        Command {
            inner: wit::Command {
                program: program.into(),
                args: Vec::new(),
                cwd: None,
                env: Vec::new(),
                stdin: Vec::new(),
                timeout_ms: None,
            },
        }
    }

    /// Adds one argument, passed as it is (no shell interprets it).
    pub fn arg(mut self, arg: impl Into<String>) -> Command {
        self.inner.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.inner.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Runs it in guest directory `dir` (inside a granted directory, such
    /// as `/workspace/src`) rather than a private empty one.
    pub fn cwd(mut self, dir: impl Into<String>) -> Command {
        self.inner.cwd = Some(dir.into());
        self
    }

    /// Sets an environment variable; its name must be in the program's
    /// exec grant, and the value may name a granted host variable as
    /// `${NAME}`.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Command {
        self.inner.env.push((name.into(), value.into()));
        self
    }

    /// What it reads on standard input.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Command {
        self.inner.stdin = bytes.into();
        self
    }

    /// Its timeout in milliseconds (never longer than what the call has
    /// left, which is the default).
    pub fn timeout_ms(mut self, ms: u32) -> Command {
        self.inner.timeout_ms = Some(ms);
        self
    }

    /// The command as the WIT import takes it.
    pub fn as_wit(&self) -> &wit::Command {
        &self.inner
    }

    /// Runs it to its end (or its timeout).
    pub fn run(&self) -> Result<Output, ExecError> {
        wit::run(&self.inner).map(|inner| Output { inner })
    }
}

/// How a program ended and what it wrote.
#[derive(Debug, Clone)]
pub struct Output {
    inner: wit::Output,
}

impl Output {
    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        self.inner.exit_code == Some(0)
    }

    /// Its exit code, when it exited.
    pub fn exit_code(&self) -> Option<i32> {
        self.inner.exit_code
    }

    /// The signal that ended it, when one did (9 at the timeout).
    pub fn signal(&self) -> Option<i32> {
        self.inner.signal
    }

    /// Whether it was stopped at its timeout.
    pub fn timed_out(&self) -> bool {
        self.inner.timed_out
    }

    /// Its standard output (up to the host's cap).
    pub fn stdout(&self) -> &[u8] {
        &self.inner.stdout
    }

    /// Its standard error (up to the host's cap).
    pub fn stderr(&self) -> &[u8] {
        &self.inner.stderr
    }

    /// Standard output as text, invalid UTF-8 replaced.
    pub fn stdout_lossy(&self) -> String {
        String::from_utf8_lossy(&self.inner.stdout).into_owned()
    }

    /// Standard error as text, invalid UTF-8 replaced.
    pub fn stderr_lossy(&self) -> String {
        String::from_utf8_lossy(&self.inner.stderr).into_owned()
    }

    /// Whether standard output or standard error was cut at the cap.
    pub fn truncated(&self) -> bool {
        self.inner.stdout_truncated || self.inner.stderr_truncated
    }

    /// What the WIT import returned.
    pub fn into_wit(self) -> wit::Output {
        self.inner
    }
}

impl From<ExecError> for ToolError {
    fn from(err: ExecError) -> ToolError {
        match err {
            ExecError::Denied(message) => ToolError::Denied(message),
            ExecError::Failed(message) => ToolError::Failed(message),
        }
    }
}
