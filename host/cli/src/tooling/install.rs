//! `tiny-harness mcp install [SERVER] [--upgrade]`: every server of a
//! config whose launcher fetches its package at every start (`npx -y
//! PKG`, `uvx PKG`) installed once into the config's store, its code
//! pinned in the config's lock.
//!
//! Invariants:
//! - A server the lock records is installed exactly as recorded (the same
//!   version, and the registry must give the same integrity for it and
//!   every dependency), or not at all; `--upgrade` is the one way to move
//!   it, and says what moved.
//! - Under `--locked` nothing new is recorded: a server the lock does not
//!   record is refused.
//! - Nothing half-installed is left, and a previous install keeps working
//!   until a new one is complete (see [`tiny_harness_mcp::store`]).
//! - The lock is written once, after every install, only if it changed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use tiny_harness_core::pin::{Code, Lock};
use tiny_harness_host::Config;
use tiny_harness_mcp::launcher;
pub use tiny_harness_mcp::store::{
    DEFAULT_INSTALL_SIZE, DEFAULT_INSTALL_TIMEOUT, InstallLimits, MAX_INSTALL_SIZE,
    MAX_INSTALL_TIMEOUT,
};
use tiny_harness_mcp::store::{Fetch, Store};

/// What `mcp install` did for one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `<plugin>/<server>`.
    pub server: String,
    /// What it did, one line; or, when it was not installed, why.
    pub done: String,
    /// Whether it was left as it was for the reason in `done` (its
    /// install failed, or `--locked` refused it): the others go on.
    pub skipped: bool,
    /// How long it took.
    pub took: Duration,
}

/// What `mcp install` is doing, as it goes: for a progress display.
#[derive(Debug)]
#[non_exhaustive]
pub enum Progress<'a> {
    /// A server's install begins: `<plugin>/<server>`, and what it
    /// installs from where (`npm @scope/pkg@1.0`, `PyPI mcp-server-time`).
    Started {
        /// `<plugin>/<server>`.
        server: &'a str,
        /// The package and its registry kind.
        what: String,
    },
    /// A server's install ended (done or skipped).
    Finished(&'a Report),
}

/// How `mcp install` runs.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Options {
    /// `--upgrade`: move the one server named to the newest version.
    pub upgrade: bool,
    /// `--locked`: record nothing new.
    pub locked: bool,
    /// The time and room one server's install may take (default
    /// [`DEFAULT_INSTALL_TIMEOUT`] and [`DEFAULT_INSTALL_SIZE`]).
    pub limits: InstallLimits,
}

impl Options {
    /// The options with `upgrade`, `locked` and `limits` as given.
    pub fn new(upgrade: bool, locked: bool, limits: InstallLimits) -> Options {
        Options {
            upgrade,
            locked,
            limits,
        }
    }
}

/// A server of the config whose launcher fetches its package.
struct Candidate {
    plugin: String,
    server: String,
    fetch: Fetch,
    confined: bool,
}

/// Installs the servers of `config` that `filter` names (`<server>` or
/// `<plugin>/<server>`; `None` for all of them), telling `progress` as
/// each begins and ends. A server that cannot be installed is reported as
/// skipped, with why, and the others are installed all the same; an error
/// is only what stops every install (an unknown server, an unreadable
/// lock).
pub async fn install(
    config: &Config,
    filter: Option<&str>,
    options: Options,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Report>, InstallError> {
    let Options {
        upgrade,
        locked,
        limits,
    } = options;
    let candidates = candidates(config).map_err(InstallError::Config)?;
    let chosen: Vec<&Candidate> = match filter {
        None => candidates.iter().collect(),
        Some(name) => {
            let found: Vec<&Candidate> = candidates
                .iter()
                .filter(|c| c.server == name || format!("{}/{}", c.plugin, c.server) == name)
                .collect();
            if found.is_empty() {
                return Err(InstallError::Unknown(unknown(config, name, &candidates)));
            }
            found
        }
    };
    if upgrade && filter.is_none() {
        return Err(InstallError::UpgradeAll);
    }
    let lock_path = tiny_harness_core::pin::lock_path(&config.path);
    let shared = tiny_harness_core::pin::legacy_lock_path(&config.path);
    let read_lock = || {
        tiny_harness_core::pin::load_own_or_shared(&lock_path, shared.as_deref())
            .map_err(InstallError::Lock)
            .map(|found| found.map(|(lock, _)| lock).unwrap_or_default())
    };
    // Fails early on a lock that cannot be read.
    read_lock()?;
    let store = Store::beside(&config.path);
    let mut reports = Vec::new();
    // The code each install recorded, applied to the lock as it is on
    // disk at the end (another command may have changed it meanwhile).
    let mut recorded_now: Vec<(String, String, Code)> = Vec::new();
    for candidate in chosen {
        let key = format!("{}/{}", candidate.plugin, candidate.server);
        progress(Progress::Started {
            server: &key,
            what: candidate.fetch.describe(),
        });
        let began = Instant::now();
        // One install into the plugin's store at a time, across
        // processes; what the lock records is read under it.
        let _installing = store
            .install_lock(&candidate.plugin, limits.time)
            .map_err(InstallError::InstallLock)?;
        let recorded = read_lock()?
            .server(&candidate.plugin, &candidate.server)
            .and_then(|s| s.code.clone());
        let one = One {
            candidate,
            store: &store,
            recorded: recorded.as_ref(),
            upgrade,
            locked,
            limits,
        };
        let (done, skipped) = match one.install().await {
            Ok((done, Some(code))) => {
                recorded_now.push((candidate.plugin.clone(), candidate.server.clone(), code));
                (done, false)
            }
            Ok((done, None)) => (done, false),
            Err(why) => (why, true),
        };
        let report = Report {
            server: key,
            done,
            skipped,
            took: began.elapsed(),
        };
        progress(Progress::Finished(&report));
        reports.push(report);
    }
    if locked {
        return Ok(reports);
    }
    let mut dropped = Vec::new();
    Lock::update(&lock_path, shared.as_deref(), |lock| {
        for (plugin, server, code) in recorded_now {
            lock.plugins
                .entry(plugin)
                .or_default()
                .servers
                .entry(server)
                .or_default()
                .code = Some(code);
        }
        // Code recorded for servers the config no longer has goes, with
        // them.
        if filter.is_none() {
            for (plugin, pins) in lock.plugins.iter_mut() {
                for (server, pins) in pins.servers.iter_mut() {
                    let declared = candidates
                        .iter()
                        .any(|c| c.plugin == *plugin && c.server == *server);
                    if pins.code.is_some() && !declared {
                        pins.code = None;
                        dropped.push((plugin.clone(), server.clone()));
                    }
                }
            }
        }
    })
    .map_err(InstallError::Lock)?;
    for (plugin, server) in dropped {
        let _ = std::fs::remove_dir_all(store.dir(&plugin, &server));
        let report = Report {
            server: format!("{plugin}/{server}"),
            done: "no longer in the config: its installed code was removed from the lock and the store".to_owned(),
            skipped: false,
            took: Duration::ZERO,
        };
        progress(Progress::Finished(&report));
        reports.push(report);
    }
    Ok(reports)
}

/// Why nothing was installed (a server that could not be is a [`Report`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// The config's servers cannot be read as launchers.
    #[error("{0}")]
    Config(String),
    /// No server of the name given: what the config has.
    #[error("{0}")]
    Unknown(String),
    /// `--upgrade` without a server's name.
    #[error(
        "--upgrade moves one server at a time: name it (tiny-harness mcp install --upgrade SERVER)"
    )]
    UpgradeAll,
    /// The lock cannot be read or written.
    #[error(transparent)]
    Lock(#[from] tiny_harness_core::pin::LockError),
    /// The plugin's store cannot be locked for the install.
    #[error(transparent)]
    InstallLock(tiny_harness_core::file::edit::EditLockError),
}

/// One server's install, as the lock has it.
struct One<'a> {
    candidate: &'a Candidate,
    store: &'a Store,
    recorded: Option<&'a Code>,
    upgrade: bool,
    locked: bool,
    limits: InstallLimits,
}

impl One<'_> {
    /// Installs it: what was done, and the code to record in the lock when
    /// it changed; an error is why it was left as it was.
    async fn install(&self) -> Result<(String, Option<Code>), String> {
        let candidate = self.candidate;
        let server = &candidate.server;
        match (self.recorded, self.upgrade) {
            (None, _) | (Some(_), true) if self.locked => Err(
                "its code is not in the lock, and --locked records nothing new: run tiny-harness mcp install without --locked".to_owned(),
            ),
            (Some(recorded), false) => {
                if let Some(conflict) = candidate.fetch.conflict(recorded, server) {
                    return Err(conflict);
                }
                // A lock written before trees were kept records the tree
                // the install has (not under --locked).
                let completes = |installed: tiny_harness_mcp::store::Installed| {
                    (recorded.tree.is_none() && installed.manifest.code.tree.is_some() && !self.locked)
                        .then_some(installed.manifest.code)
                };
                // An install made before trees were kept is made again
                // (exactly as recorded) to get one.
                if let Ok(Some(installed)) = self.store.installed(&candidate.plugin, server)
                    && installed.manifest.code.tree.is_some()
                    && recorded.admits(&installed.manifest.code)
                    && self.store.verify(&installed, server).is_ok()
                {
                    return Ok((
                        format!("{}: installed already, as the lock records", recorded.describe()),
                        completes(installed),
                    ));
                }
                let exact = exactly(&candidate.fetch, recorded);
                let installed = self
                    .store
                    .install(
                        &candidate.plugin,
                        server,
                        &exact,
                        candidate.confined,
                        Some(recorded),
                        self.limits,
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                Ok((
                    format!("{}: installed, as the lock records", recorded.describe()),
                    completes(installed),
                ))
            }
            (_, _) => {
                let installed = self
                    .store
                    .install(
                        &candidate.plugin,
                        server,
                        &candidate.fetch,
                        candidate.confined,
                        None,
                        self.limits,
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                let code = installed.manifest.code;
                let done = match self.recorded {
                    Some(old) if old.admits(&code) => {
                        format!("{}: the newest, as the lock records", code.describe())
                    }
                    Some(old) => format!("upgraded: {}", old.differences(&code).join("; ")),
                    None => format!("{}: installed, pinned in the lock", code.describe()),
                };
                Ok((done, Some(code)))
            }
        }
    }
}

/// `fetch` pinned to the version `recorded` holds.
fn exactly(fetch: &Fetch, recorded: &Code) -> Fetch {
    match fetch {
        Fetch::Npm { command, .. } => Fetch::Npm {
            package: format!("{}@{}", recorded.package, recorded.version),
            command: command.clone(),
        },
        Fetch::PyPi { command, .. } => Fetch::PyPi {
            package: format!("{}=={}", recorded.package, recorded.version),
            command: command.clone(),
        },
    }
}

/// Every server of `config` (in the `mcpServers` shape of the bundled
/// `mcp` plugin) whose launcher fetches its package at every start.
fn candidates(config: &Config) -> Result<Vec<Candidate>, String> {
    let path = std::env::var_os("PATH");
    let cwd = config.path.parent().map(PathBuf::from).unwrap_or_default();
    let mut out = Vec::new();
    for spec in &config.plugins {
        let Some(servers) = spec.config.get("mcpServers").and_then(Value::as_object) else {
            continue;
        };
        for (key, entry) in servers {
            if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let Some(command) = entry.get("command").and_then(Value::as_str) else {
                continue;
            };
            let args: Vec<String> = entry
                .get("args")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let plan = launcher::plan(command, &args, path.as_deref(), &cwd);
            if let Some((fetch, _)) = plan.fetch() {
                out.push(Candidate {
                    plugin: spec.name.clone(),
                    server: server_name(key),
                    fetch,
                    confined: spec.grants.confinement != tiny_harness_sandbox::confine::Mode::None,
                });
            }
        }
    }
    Ok(out)
}

/// Why `name` names no server to install.
fn unknown(config: &Config, name: &str, candidates: &[Candidate]) -> String {
    let declared = config.plugins.iter().any(|spec| {
        spec.config
            .get("mcpServers")
            .and_then(Value::as_object)
            .is_some_and(|s| {
                s.keys().any(|k| {
                    server_name(k) == name || format!("{}/{}", spec.name, server_name(k)) == name
                })
            })
    });
    let names: Vec<String> = candidates
        .iter()
        .map(|c| format!("{}/{}", c.plugin, c.server))
        .collect();
    let which = if names.is_empty() {
        "none of its servers is started by npx, npm exec, bunx, uvx, uv tool run or pipx run"
            .to_owned()
    } else {
        format!("those it installs: {}", names.join(", "))
    };
    let name = tiny_harness_core::display::one_line(name);
    if declared {
        format!(
            "server {name} is not started by a launcher that fetches its package, so there is nothing to install ({which})"
        )
    } else {
        format!("{} has no server {name} ({which})", config.path.display())
    }
}

/// The server name a `mcpServers` key becomes, as the bundled `mcp`
/// plugin makes it: lowercased, every character outside `[a-z0-9_-]` made
/// `_`, at most 64.
pub fn server_name(key: &str) -> String {
    key.chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}
