//! What a plugin's grants give a program the host starts for it (an exec
//! call, a stdio MCP server): [`prepare`] is the one check both launchers
//! make, and [`Program`] what they both start (through
//! [`crate::confine::command`]), so a rule added here holds for both.
//!
//! Invariants:
//! - Only a program in the plugin's `exec` grants runs, with arguments its
//!   grant's patterns allow.
//! - The environment is the baseline ([`BASELINE_ENV`]) plus what the
//!   caller sets; a `${NAME}` reference resolves only for a host variable
//!   in the plugin's `env` grants.
//! - A working directory is inside a granted directory.
//! - The policy gives the program its own file, what its exec grant adds,
//!   the plugin's directories with their modes and the ports of its `net`
//!   grants, and nothing else; it is refused where the kernel cannot
//!   confine.
//! - Each refusal is one line naming the grant that would allow it.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

use super::{ExecGrant, Grants};

/// A program a plugin asked for, checked against its grants and resolved:
/// what the host starts, for an exec call and a stdio MCP server alike.
pub struct Program {
    /// The command as asked for (`node`).
    pub command: String,
    /// The absolute path that is run.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its whole environment.
    pub env: Vec<(String, String)>,
    /// Its working directory; `None` for a private empty directory.
    pub cwd: Option<PathBuf>,
    /// How the kernel confines it (the private directory is added when it
    /// is made); `None` with `confinement = "none"`.
    pub policy: Option<crate::confine::Policy>,
    /// The values the plugin set (granted host variables among them):
    /// redacted from everything quoted of the program's output.
    pub secrets: Vec<String>,
}

// Environment values may be secrets: `Debug` names the variables only.
impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Program")
            .field("command", &self.command)
            .field("program", &self.program)
            .field("args", &self.args.len())
            .field("env", &keys)
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// Checks a request of plugin `plugin` to run `command` with `args`,
/// setting `set`, in `cwd` (a host directory the caller has already found
/// inside the grants), and resolves it: the program its `exec` grants
/// allow, its whole environment ([`environment`]) and its confinement
/// policy ([`policy`], none under `confinement = "none"`).
pub fn prepare(
    plugin: &str,
    grants: &Grants,
    command: &str,
    args: &[String],
    set: &[(String, String)],
    cwd: Option<PathBuf>,
) -> Result<Program, LaunchError> {
    let path = std::env::var_os("PATH");
    let granted =
        super::find_program(grants.exec(), command, path.as_deref()).map_err(|denied| {
            // A grant of it that is unusable on this machine says why.
            if let Some(missing) = grants.unusable().iter().find(|u| u.names(command)) {
                return LaunchError::Unusable(missing.reason().to_owned());
            }
            match &denied.resolved {
                Some(resolved) => LaunchError::NotGranted {
                    plugin: plugin.to_owned(),
                    what: format!(
                        "program {:?} ({})",
                        tiny_harness_core::display::one_line(command),
                        resolved.display()
                    ),
                    grant: denied.suggestion(),
                },
                // Not found, or a path no grant can allow: its own words say
                // what to do.
                None => LaunchError::Invalid(denied.to_string()),
            }
        })?;
    prepare_granted(plugin, grants, granted, command, args, set, cwd)
}

/// [`prepare`] with the grant already chosen: `granted` is what runs (a
/// stand-in for a launcher that is not on this machine, see
/// [`super::UnusableProgram::stand_in`]).
pub fn prepare_granted(
    plugin: &str,
    grants: &Grants,
    granted: &ExecGrant,
    command: &str,
    args: &[String],
    set: &[(String, String)],
    cwd: Option<PathBuf>,
) -> Result<Program, LaunchError> {
    granted
        .check_args(args)
        .map_err(|e| LaunchError::Invalid(e.to_string()))?;
    let confined = grants.confinement != crate::confine::Mode::None;
    let env = environment(plugin, granted, grants, set, confined)?;
    let secrets = env
        .iter()
        .filter(|(name, _)| set.iter().any(|(asked, _)| asked == name))
        .map(|(_, value)| value.clone())
        .collect();
    let policy = match grants.confinement {
        crate::confine::Mode::None => None,
        crate::confine::Mode::Landlock => Some(policy(granted, grants)?),
    };
    Ok(Program {
        command: command.to_owned(),
        program: granted.program().to_owned(),
        args: args.to_vec(),
        env,
        cwd,
        policy,
        secrets,
    })
}

/// Host variables a program gets without any grant, when the host has
/// them: what ordinary programs need to find their tools, their home, and
/// their language. A confined program's `HOME` and `TMPDIR` are its
/// private directory instead (the host's home is not readable to it).
pub const BASELINE_ENV: &[&str] = &[
    "PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ", "USER",
];

pub use crate::confine::PRIVATE_ENV;

/// The whole environment of `granted`'s program: the baseline (without
/// [`PRIVATE_ENV`] when `confined`, which the launcher fills in), then
/// each variable the plugin sets, which must be a valid name its exec
/// grant's `env` allows, with `${NAME}` references expanded.
pub fn environment(
    plugin: &str,
    granted: &ExecGrant,
    grants: &Grants,
    set: &[(String, String)],
    confined: bool,
) -> Result<Vec<(String, String)>, LaunchError> {
    if set.len() > MAX_PAIRS {
        return Err(LaunchError::Invalid(format!(
            "it sets {} environment variables; at most {MAX_PAIRS} are allowed",
            set.len()
        )));
    }
    let mut env: Vec<(String, String)> = BASELINE_ENV
        .iter()
        .filter(|name| !(confined && PRIVATE_ENV.contains(name)))
        .filter_map(|name| {
            std::env::var(name)
                .ok()
                .map(|value| ((*name).to_owned(), value))
        })
        .collect();
    for (name, value) in set {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(LaunchError::Invalid(format!(
                "{:?} is not an environment variable name",
                tiny_harness_core::display::one_line(name)
            )));
        }
        if super::is_loader(name) {
            return Err(LaunchError::Invalid(format!(
                "variable {:?} is the dynamic loader's: no grant allows setting it for a program",
                tiny_harness_core::display::one_line(name)
            )));
        }
        if !granted.env().allows(name) {
            return Err(LaunchError::NotGranted {
                plugin: plugin.to_owned(),
                what: format!(
                    "variable {:?} for program {:?}",
                    tiny_harness_core::display::one_line(
                        &name.chars().take(128).collect::<String>()
                    ),
                    granted.written()
                ),
                grant: super::env::suggestion(granted.written(), name, granted.env()),
            });
        }
        let value = expand(plugin, value, grants.env(), &format!("env {name}"))?;
        env.retain(|(k, _)| k != name);
        env.push((name.clone(), value));
    }
    Ok(env)
}

/// Most variables (or headers) one declaration or exec call may set.
pub const MAX_PAIRS: usize = 256;

/// Why a program cannot be started (or a declared server reached) under
/// the plugin's grants. One line; it names what to change and never shows
/// a secret value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The program, URL, variable or directory is not granted.
    #[error("{what} is not granted: add {grant} to plugins.{plugin}.grants")]
    NotGranted {
        /// The plugin.
        plugin: String,
        /// What was refused, for people (`program "node" (/usr/bin/node)`).
        what: String,
        /// The grant that would allow it (`exec = [{ program = "node" }]`).
        grant: String,
    },
    /// The declaration itself is unusable.
    #[error("{0}")]
    Invalid(String),
    /// The program is granted, but the grant is unusable on this machine
    /// (the program is not there): the grant's own line, with its place in
    /// the config.
    #[error("{0}")]
    Unusable(String),
}

/// What the program may touch under confinement: its own file, what its
/// exec grant adds, the plugin's directories with their modes, and the
/// network of its `net` grants. Refused where the kernel cannot confine.
pub fn policy(granted: &ExecGrant, grants: &Grants) -> Result<crate::confine::Policy, LaunchError> {
    use crate::confine::{Network, Policy};
    let abi = crate::confine::landlock_abi();
    if abi < 4 {
        return Err(LaunchError::Invalid(
            crate::confine::ConfineError::Unsupported(format!("Landlock ABI {abi}, 4 needed"))
                .to_string(),
        ));
    }
    let mut read = granted.read().to_vec();
    read.push(granted.program().to_owned());
    read.push(granted.canonical().to_owned());
    let mut write = Vec::new();
    for dir in grants.dirs() {
        match dir.mode() {
            super::DirMode::ReadOnly => read.push(dir.host().to_owned()),
            super::DirMode::ReadWrite => write.push(dir.host().to_owned()),
        }
    }
    let network = if grants.net().is_empty() {
        Network::None
    } else if grants.net().iter().any(|g| g.port().is_none()) {
        Network::Any
    } else {
        let mut ports: Vec<u16> = grants.net().iter().filter_map(|g| g.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        Network::Ports(ports)
    };
    Ok(Policy {
        read,
        write,
        network,
        unix_sockets: granted.sockets().to_vec(),
        rlimits: grants.program_limits,
    })
}

/// The directory `cwd`, which must be absolute and inside a granted one.
pub fn granted_dir(plugin: &str, cwd: &str, grants: &Grants) -> Result<PathBuf, LaunchError> {
    let path = Path::new(cwd);
    if !path.is_absolute() {
        return Err(LaunchError::Invalid(format!(
            "cwd {:?} must be an absolute host path",
            tiny_harness_core::display::one_line(cwd)
        )));
    }
    let not_granted = || LaunchError::NotGranted {
        plugin: plugin.to_owned(),
        what: format!("directory {}", tiny_harness_core::display::one_line(cwd)),
        grant: format!(
            "dirs = [{{ host = {:?}, guest = \"/…\" }}]",
            tiny_harness_core::display::one_line(cwd)
        ),
    };
    let real = path.canonicalize().map_err(|_| not_granted())?;
    if !real.is_dir() || !grants.dirs().iter().any(|d| real.starts_with(d.host())) {
        return Err(not_granted());
    }
    Ok(real)
}

/// `value` with every `${NAME}` replaced by the host variable `NAME`, which
/// must be granted and set. `$$` is a literal `$`.
pub fn expand(
    plugin: &str,
    value: &str,
    granted: &[String],
    key: &str,
) -> Result<String, LaunchError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body.find('}').ok_or_else(|| {
                LaunchError::Invalid(format!("{key}: an unclosed ${{ in its value"))
            })?;
            let name = &body[..end];
            if !granted.iter().any(|g| g == name) {
                return Err(LaunchError::NotGranted {
                    plugin: plugin.to_owned(),
                    what: format!(
                        "host variable {:?} (named by {key})",
                        tiny_harness_core::display::one_line(name)
                    ),
                    grant: format!("env = [{:?}]", tiny_harness_core::display::one_line(name)),
                });
            }
            let found = std::env::var_os(name).ok_or_else(|| {
                LaunchError::Invalid(format!(
                    "{key}: host variable {name} is granted but not set"
                ))
            })?;
            out.push_str(&OsStr::to_string_lossy(&found));
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}
