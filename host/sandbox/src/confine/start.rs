//! The one way the host makes a program it starts for a plugin, an exec
//! call or a stdio MCP server alike: [`command`].
//!
//! Invariants:
//! - Every such program gets a private directory of its own (its cwd when
//!   it names none, and its `TMPDIR`; also its `HOME` when confined),
//!   removed when the [`Started`] is dropped.
//! - Its environment is exactly the one given (plus those private
//!   variables, unless given); its standard streams are pipes.
//! - It starts in a session of its own (no controlling terminal), in
//!   control groups or a PID namespace of its own where the host can make
//!   them, and, with a policy, confined by it ([`apply`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::cgroup::{self, Contained};
#[cfg(target_os = "linux")]
use super::pidns;
use super::{Policy, Rlimits};

/// A program ready to spawn, and what must live as long as it runs.
#[derive(Debug)]
pub struct Started {
    /// The command, ready to spawn.
    pub command: tokio::process::Command,
    /// Its private directory (removed when dropped).
    pub private: PrivateDir,
    /// Its control groups, where the host made them (dropping kills what
    /// they hold).
    pub contained: Option<Contained>,
}

/// Everything a started program started: its process group (it leads a
/// group of its own) and, where the host made them, its control groups.
/// [`Group::kill`] kills both, and so does dropping it. The one place a
/// program's processes are killed, for exec calls, installs and servers.
#[derive(Debug)]
pub struct Group {
    leader: Option<rustix::process::Pid>,
    contained: Option<Contained>,
}

impl Group {
    /// The group of `child` (just spawned from a [`Started`] command) and
    /// its control groups.
    pub fn of(child: &tokio::process::Child, contained: Option<Contained>) -> Group {
        Group {
            leader: child
                .id()
                .and_then(|id| rustix::process::Pid::from_raw(id as i32)),
            contained,
        }
    }

    /// Kills every process of the group and of its control groups. The
    /// group's id stays reserved until its leader is reaped, so this never
    /// reaches another program's group; killing an empty one again is
    /// harmless (`ESRCH`).
    pub fn kill(&self) {
        if let Some(leader) = self.leader {
            let _ = rustix::process::kill_process_group(leader, rustix::process::Signal::KILL);
        }
        if let Some(contained) = &self.contained {
            contained.kill();
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `program` with `args`, exactly the environment `env` (plus the private
/// variables [`PRIVATE_ENV`] it does not set), in `cwd` or its private
/// directory, with piped standard streams, made as [`apply`] says. The
/// private directory is named after `label`.
pub fn command(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&Path>,
    policy: Option<&Policy>,
    label: &str,
) -> std::io::Result<Started> {
    let private = PrivateDir::create(label)?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd.unwrap_or(private.path()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    private_env(&mut command, env, policy.is_some(), private.path());
    let contained = apply(&mut command, policy, Some(private.path()))?;
    Ok(Started {
        command,
        private,
        contained,
    })
}

/// Makes `command` start as a program the host runs for a plugin: in
/// control groups of its own (where the host can make them), bounded by
/// `policy`'s limits or the defaults, and, with a policy, confined by it
/// with `private` (its private directory) writable too. Keep the result
/// alive until the program has been killed: dropping it kills what its
/// groups hold.
pub fn apply(
    command: &mut tokio::process::Command,
    policy: Option<&Policy>,
    private: Option<&std::path::Path>,
) -> std::io::Result<Option<Contained>> {
    let rlimits = policy.map_or_else(Rlimits::default, |p| p.rlimits);
    // A session of its own, confined or not: no controlling terminal (so
    // `/dev/tty` opens nothing) and a process group it leads, which the
    // launchers kill as a whole. Its standard streams are pipes.
    // SAFETY: `setsid` is one system call on no memory of ours.
    unsafe {
        command.pre_exec(|| {
            rustix::process::setsid()?;
            Ok(())
        });
    }
    // Every process it starts stays in its groups, so that all of them are
    // killed when it ends (those that left its process group too).
    let contained = cgroup::contain(command, rlimits.group())?;
    // Without a control group, a PID namespace holds them together.
    #[cfg(target_os = "linux")]
    if contained.is_none() && pidns::available() {
        pidns::apply(command, rlimits.processes);
    }
    if let Some(policy) = policy {
        let mut policy = policy.clone();
        policy.write.extend(private.map(std::path::Path::to_owned));
        policy
            .prepare()
            .map_err(std::io::Error::other)?
            .apply_to(command);
    }
    Ok(contained)
}

/// Variables a confined program's launcher sets to its private directory,
/// unless the plugin sets them under its grant.
pub const PRIVATE_ENV: &[&str] = &["HOME", "TMPDIR"];

/// Points `HOME` and `TMPDIR` of a confined program at its private
/// directory (the host's home is unreadable to it: git, npm and pip would
/// fail on their config files), unless `env` sets them already (a plugin
/// may, under its exec grant's `env`). An unconfined program keeps the
/// host's `HOME` and gets the private `TMPDIR`.
fn private_env(
    command: &mut tokio::process::Command,
    env: &[(String, String)],
    confined: bool,
    private: &std::path::Path,
) {
    for name in PRIVATE_ENV {
        let set = env.iter().any(|(k, _)| k == name);
        if !set && (confined || *name == "TMPDIR") {
            command.env(name, private);
        }
    }
}

/// A private, initially empty directory (mode 0700) for one program: its
/// cwd and `TMPDIR` when it declares none. Removed when dropped.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// Creates `tiny-harness-<label>-<random>` in the system temp directory.
    pub fn create(label: &str) -> std::io::Result<PrivateDir> {
        use std::os::unix::fs::DirBuilderExt;
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(std::io::Error::other)?;
        let path =
            std::env::temp_dir().join(format!("tiny-harness-{label}-{}", hex::encode(nonce)));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(PrivateDir { path })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
