//! The `exec` interface: a plugin asks the host to run a program, and the
//! host runs it only as the plugin's grants allow, confined by the kernel
//! to those same grants (see [`tiny_harness_sandbox::confine`]).
//!
//! Invariants:
//! - Only a program in the plugin's `exec` grants runs; a `cwd` must be a
//!   guest path inside a granted directory; `${NAME}` in `env` resolves
//!   only for granted variables: the checks of
//!   [`tiny_harness_sandbox::grant::start::prepare`], the same as a stdio MCP server's.
//!   Each refusal is `denied` with the grant that would allow it.
//! - It runs no longer than the call has left, its output is capped at the
//!   plugin's result limit per stream, and its whole process group is
//!   killed at the end.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bindings::tiny_harness::plugin::exec::{Command, ExecError, Output};
use super::limits::Limits;
use tiny_harness_sandbox::confine::{self, Exited, Stdio3};
use tiny_harness_sandbox::grant::Grants;

/// What a plugin's calls may run: its name, grants and limits.
#[derive(Debug)]
pub struct ExecContext {
    /// The plugin's name, for messages.
    pub plugin: String,
    /// What its programs may be and touch.
    pub grants: Grants,
    /// How much one call may use.
    pub limits: Limits,
    /// For tests: what answers instead of running programs.
    pub stand_in: Option<Arc<dyn crate::StandIn>>,
}

/// One call's access to `exec`: its plugin's context and its deadline.
#[derive(Debug, Clone)]
pub struct ExecAccess {
    /// Its plugin's context.
    pub context: Arc<ExecContext>,
    /// When the call must be over.
    pub deadline: Instant,
}

impl ExecAccess {
    /// Runs `command` for the call, as its plugin's grants allow.
    pub async fn run(&self, command: Command) -> Result<Output, ExecError> {
        let ctx = &self.context;
        let cwd = command
            .cwd
            .as_deref()
            .map(|guest| self.host_dir(guest))
            .transpose()?;
        if let Some(stand_in) = &ctx.stand_in {
            return stand_in.exec(&command);
        }
        // The same check and resolution as a stdio MCP server's.
        let program = tiny_harness_sandbox::grant::start::prepare(
            &ctx.plugin,
            &ctx.grants,
            &command.program,
            &command.args,
            &command.env,
            cwd,
        )
        .map_err(|e| ExecError::Denied(e.to_string()))?;
        let left = self
            .deadline
            .checked_duration_since(Instant::now())
            .ok_or_else(|| ExecError::Failed("the call has no time left".to_owned()))?;
        let timeout = command.timeout_ms.map_or(left, |ms| {
            Duration::from_millis(u64::from(ms.max(1))).min(left)
        });
        let shown = program.program.display().to_string();
        let what = Stdio3 {
            program: program.program,
            args: program.args,
            env: program.env,
            cwd: program.cwd,
            stdin: command.stdin,
        };
        let ran = confine::run(what, program.policy, ctx.limits.result_bytes, timeout)
            .await
            .map_err(|e| {
                ExecError::Failed(format!(
                    "cannot run {shown}: {}",
                    tiny_harness_core::display::one_line(&e.to_string())
                ))
            })?;
        let (exit_code, signal) = match ran.exited {
            Exited::Code(code) => (Some(code), None),
            Exited::Signal(signal) => (None, Some(signal)),
            // An end this host does not know yet: neither code nor signal.
            _ => (None, None),
        };
        Ok(Output {
            exit_code,
            signal,
            stdout: ran.stdout,
            stderr: ran.stderr,
            stdout_truncated: ran.stdout_truncated,
            stderr_truncated: ran.stderr_truncated,
            timed_out: ran.timed_out,
        })
    }

    /// The host directory of guest path `guest`, which must lie inside a
    /// granted directory (and stay inside it once symlinks are resolved).
    fn host_dir(&self, guest: &str) -> Result<PathBuf, ExecError> {
        let outside = || {
            ExecError::Denied(format!(
                "cwd {:?} is outside every granted directory (granted: {})",
                tiny_harness_core::display::one_line(guest),
                self.granted_guests()
            ))
        };
        let path = Path::new(guest);
        if !path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        {
            return Err(outside());
        }
        // The grant the plugin sees there: the longest guest path that
        // holds it (a grant may be nested in another).
        let grant = self
            .context
            .grants
            .dirs()
            .iter()
            .filter(|dir| path.starts_with(dir.guest()))
            .max_by_key(|dir| Path::new(dir.guest()).components().count())
            .ok_or_else(outside)?;
        let rest = path.strip_prefix(grant.guest()).map_err(|_| outside())?;
        let root = grant.host().canonicalize().map_err(|_| outside())?;
        let real = root.join(rest).canonicalize().map_err(|_| outside())?;
        if real.starts_with(&root) && real.is_dir() {
            Ok(real)
        } else {
            Err(outside())
        }
    }

    fn granted_guests(&self) -> String {
        let dirs: Vec<&str> = self
            .context
            .grants
            .dirs()
            .iter()
            .map(|d| d.guest())
            .collect();
        if dirs.is_empty() {
            "none".to_owned()
        } else {
            dirs.join(", ")
        }
    }
}
