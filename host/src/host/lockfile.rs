//! The lock file as a host uses it: pins read at load, new servers pinned
//! on first use, and `--locked` refusing any difference.
//!
//! Invariants:
//! - Without `--locked`, a server the lock does not know is pinned as it is
//!   now (trust on first use); a server it knows is pinned as the lock says,
//!   whatever it offers now, so a change between runs is refused at call
//!   time exactly like a change within a run.
//! - With `--locked`, any tool or component that is not in the lock, or
//!   differs from it, refuses the host; the lock is never written.
//! - The lock is written only through [`LockState::save`], atomically,
//!   and only what this host changed is written: under the file's edit
//!   lock the lock is read again and this host's changes (the components,
//!   tools and installed code it pinned) are applied to it, so two hosts
//!   pinning different plugins at once both land.
//! - A config without a lock of its own, beside the lock every config in
//!   its directory used to share, starts from that shared lock's pins for
//!   the plugins it loads (never from nothing, so what was reviewed stays
//!   pinned), and writes them to its own lock; the shared file is only
//!   read.

use std::collections::BTreeSet;
use std::path::PathBuf;

#[cfg(feature = "mcp")]
use crate::pin::Code;
use crate::pin::{Lock, ServerPins, ToolPin, changed_fields, definition_hash, load_own_or_shared};
use crate::tool::ToolDefinition;
use crate::watch::{Drift, Watch};

use super::HostError;

/// The lock of one host.
#[derive(Debug, Clone)]
pub(crate) struct LockState {
    pub path: PathBuf,
    pub lock: Lock,
    pub locked: bool,
    pub dirty: bool,
    /// The shared lock this one's pins were taken from, if they were.
    pub migrated_from: Option<PathBuf>,
    /// What this host changed since the lock was read or last saved.
    touched: Touched,
}

/// The pins of `plugin/server` in `lock`, made empty if missing.
fn server_mut<'a>(lock: &'a mut Lock, plugin: &str, server: &str) -> &'a mut ServerPins {
    lock.plugins
        .entry(plugin.to_owned())
        .or_default()
        .servers
        .entry(server.to_owned())
        .or_default()
}

/// What a host changed in its lock, by key: what [`LockState::save`]
/// applies to the lock as it is on disk when it writes.
#[derive(Debug, Clone, Default)]
struct Touched {
    /// Plugins whose component (and its source) were recorded.
    components: BTreeSet<String>,
    /// `(plugin, server)` whose tools were pinned.
    tools: BTreeSet<(String, String)>,
    /// `(plugin, server)` whose installed code was recorded.
    code: BTreeSet<(String, String)>,
}

impl Touched {
    /// Every entry of `lock`, as when a whole lock is taken over.
    fn all_of(lock: &Lock) -> Touched {
        let mut touched = Touched::default();
        for (plugin, pins) in &lock.plugins {
            touched.components.insert(plugin.clone());
            for server in pins.servers.keys() {
                touched.tools.insert((plugin.clone(), server.clone()));
                touched.code.insert((plugin.clone(), server.clone()));
            }
        }
        touched
    }

    /// Copies what was touched from `mine` into `disk`.
    fn apply(&self, mine: &Lock, disk: &mut Lock) {
        for plugin in &self.components {
            if let Some(pins) = mine.plugins.get(plugin) {
                let entry = disk.plugins.entry(plugin.clone()).or_default();
                entry.component.clone_from(&pins.component);
                entry.source.clone_from(&pins.source);
            }
        }
        for (plugin, server) in &self.tools {
            if let Some(pins) = mine.server(plugin, server) {
                server_mut(disk, plugin, server)
                    .tools
                    .clone_from(&pins.tools);
            }
        }
        for (plugin, server) in &self.code {
            if let Some(pins) = mine.server(plugin, server) {
                server_mut(disk, plugin, server).code.clone_from(&pins.code);
            }
        }
    }
}

impl LockState {
    /// Reads the lock at `path`; a missing one is empty (and is created
    /// when saved) unless `locked`. When it is missing and `legacy` (the
    /// lock the config used to share) exists, that one's pins stand in
    /// for it.
    pub fn open(
        path: PathBuf,
        legacy: Option<PathBuf>,
        locked: bool,
    ) -> Result<LockState, HostError> {
        if let Some((lock, from)) = load_own_or_shared(&path, legacy.as_deref())? {
            let migrated_from = (from != path).then_some(from);
            return Ok(LockState {
                dirty: migrated_from.is_some(),
                path,
                lock,
                locked,
                migrated_from,
                touched: Touched::default(),
            });
        }
        if locked {
            return Err(HostError::Locked {
                plugin: None,
                message: format!(
                    "{} does not exist; run once without --locked to create it",
                    path.display()
                ),
            });
        }
        Ok(LockState {
            path,
            lock: Lock::default(),
            locked,
            dirty: true,
            migrated_from: None,
            touched: Touched::default(),
        })
    }

    /// After loading, a lock taken from a shared one keeps only the
    /// plugins that were loaded (the others belong to other configs).
    pub fn keep_only(&mut self, loaded: impl Fn(&str) -> bool) {
        if self.migrated_from.is_some() {
            self.lock.plugins.retain(|name, _| loaded(name));
            // Its own lock does not exist yet: all of it is this host's.
            self.touched = Touched::all_of(&self.lock);
        }
    }

    /// Records or checks a plugin's component hash, and where the
    /// component came from (its `oci://` reference) when not a file.
    pub fn component(
        &mut self,
        plugin: &str,
        sha256: &str,
        source: Option<&str>,
    ) -> Result<(), HostError> {
        let entry = self.lock.plugins.entry(plugin.to_owned()).or_default();
        if entry.component.as_deref() == Some(sha256) && entry.source.as_deref() == source {
            return Ok(());
        }
        if self.locked {
            let message = match (&entry.component, &entry.source) {
                (Some(pinned), _) if pinned != sha256 => {
                    format!("its component's sha256 is {sha256}, not {pinned} as in the lock")
                }
                (None, _) => "its component is not in the lock".to_owned(),
                (_, recorded) => format!(
                    "its component comes from {}, not {} as in the lock",
                    source.unwrap_or("a file"),
                    recorded.as_deref().unwrap_or("a file")
                ),
            };
            return Err(HostError::Locked {
                plugin: Some(plugin.to_owned()),
                message,
            });
        }
        entry.component = Some(sha256.to_owned());
        entry.source = source.map(str::to_owned);
        self.touched.components.insert(plugin.to_owned());
        self.dirty = true;
        Ok(())
    }

    /// The pinned definitions of a server, if the lock has its tools (a
    /// server the lock knows only by its installed code has none yet: it
    /// is listed, and pinned, at its first start).
    pub fn pinned(&self, plugin: &str, server: &str) -> Option<Vec<ToolDefinition>> {
        self.lock
            .server(plugin, server)
            .filter(|s| !s.tools.is_empty() || s.code.is_none())
            .map(|s| s.tools.values().map(|p| p.definition.clone()).collect())
    }

    /// Every server of `plugin` the lock has.
    pub fn servers(&self, plugin: &str) -> Vec<String> {
        self.lock
            .plugins
            .get(plugin)
            .map(|p| p.servers.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// What to pin for `plugin/server`, which offers `current` now.
    pub fn reconcile(
        &mut self,
        plugin: &str,
        server: &str,
        current: &[ToolDefinition],
    ) -> Result<Vec<ToolDefinition>, HostError> {
        let Some(pinned) = self.pinned(plugin, server) else {
            if self.locked {
                return Err(HostError::Locked {
                    plugin: Some(plugin.to_owned()),
                    message: format!("server {plugin}/{server} is not in the lock"),
                });
            }
            self.set_server(plugin, server, current);
            return Ok(current.to_vec());
        };
        if self.locked {
            let differences = differences(plugin, server, &pinned, current);
            if let Some(first) = differences.first() {
                let more = match differences.len() {
                    1 => String::new(),
                    n => format!(" (and {} more differences)", n - 1),
                };
                return Err(HostError::Locked {
                    plugin: Some(plugin.to_owned()),
                    message: format!(
                        "{first}{more}; review with `tiny-harness pins diff` and accept with `tiny-harness pins update`"
                    ),
                });
            }
        }
        Ok(pinned)
    }

    /// Pins `current` as server `server` of `plugin` whatever was pinned
    /// (a plugin marked `dev`): how it differs from what was pinned, when
    /// something was and it differs, or, with `tell_new`, every tool of a
    /// server nothing was pinned of.
    pub fn accept(
        &mut self,
        plugin: &str,
        server: &str,
        current: &[ToolDefinition],
        tell_new: bool,
    ) -> Option<Drift> {
        let pinned = self.pinned(plugin, server);
        let mut watch = Watch::default();
        watch.pin(pinned.clone().unwrap_or_default());
        watch.observe(current.to_vec());
        let drift = watch.drift();
        if pinned.is_none() || !drift.is_empty() {
            self.set_server(plugin, server, current);
        }
        ((pinned.is_some() || tell_new) && !drift.is_empty()).then_some(drift)
    }

    /// Pins `tools` as server `server` of `plugin`.
    pub fn set_server(&mut self, plugin: &str, server: &str, tools: &[ToolDefinition]) {
        // Its installed code stays as `mcp install` recorded it.
        let code = self
            .lock
            .server(plugin, server)
            .and_then(|s| s.code.clone());
        let pins = ServerPins {
            tools: tools
                .iter()
                .map(|t| (t.name.clone(), ToolPin::new(t.clone())))
                .collect(),
            code,
        };
        self.lock
            .plugins
            .entry(plugin.to_owned())
            .or_default()
            .servers
            .insert(server.to_owned(), pins);
        let key = (plugin.to_owned(), server.to_owned());
        self.touched.tools.insert(key);
        self.dirty = true;
    }

    /// The installed code the lock records for `plugin/server`.
    #[cfg(feature = "mcp")]
    pub fn code(&self, plugin: &str, server: &str) -> Option<Code> {
        self.lock.server(plugin, server)?.code.clone()
    }

    /// Records `code` as the installed code of `plugin/server` (never
    /// under `--locked`, which refuses instead).
    #[cfg(feature = "mcp")]
    pub fn set_code(&mut self, plugin: &str, server: &str, code: Code) -> Result<(), HostError> {
        if self.locked {
            return Err(HostError::Locked {
                plugin: Some(plugin.to_owned()),
                message: format!(
                    "the installed code of server {plugin}/{server} is not in the lock"
                ),
            });
        }
        self.lock
            .plugins
            .entry(plugin.to_owned())
            .or_default()
            .servers
            .entry(server.to_owned())
            .or_default()
            .code = Some(code);
        let key = (plugin.to_owned(), server.to_owned());
        self.touched.code.insert(key);
        self.dirty = true;
        Ok(())
    }

    /// Writes what this host changed into the lock as it is on disk now
    /// (read again under its edit lock), if anything changed; never with
    /// `--locked`. True if it was written.
    pub fn save(&mut self) -> Result<bool, HostError> {
        if self.locked || !self.dirty {
            return Ok(false);
        }
        let (mine, touched) = (&self.lock, &self.touched);
        let (merged, mut written) =
            Lock::update(&self.path, None, |disk| touched.apply(mine, disk))?;
        if !written && !self.path.exists() {
            // A first run writes its lock even when it pinned nothing, so
            // that `--locked` finds one.
            merged.save(&self.path)?;
            written = true;
        }
        self.lock = merged;
        self.touched = Touched::default();
        self.dirty = false;
        Ok(written)
    }
}

/// How `current` differs from `pinned`, one line per tool.
fn differences(
    plugin: &str,
    server: &str,
    pinned: &[ToolDefinition],
    current: &[ToolDefinition],
) -> Vec<String> {
    let name = |tool: &str| format!("tool {plugin}/{server}.{tool}");
    let mut lines = Vec::new();
    for pin in pinned {
        match current.iter().find(|t| t.name == pin.name) {
            None => lines.push(format!(
                "{} is in the lock but no longer offered",
                name(&pin.name)
            )),
            Some(now) if definition_hash(now) != definition_hash(pin) => lines.push(format!(
                "{} changed since it was pinned ({})",
                name(&pin.name),
                changed_fields(pin, now).join(", ")
            )),
            Some(_) => {}
        }
    }
    for now in current {
        if !pinned.iter().any(|p| p.name == now.name) {
            lines.push(format!("{} is not in the lock", name(&now.name)));
        }
    }
    lines
}
