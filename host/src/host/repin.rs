//! Pins through the facade: the lock written, drift shown, servers
//! registered again ([`Host::reregister`], `tiny-harness pins update`).
//!
//! Invariant: a server is pinned again only after its new tools are in the
//! registry (a refused registration changes no pin), and never under
//! `--locked`.

use std::path::PathBuf;
use std::sync::Arc;

#[cfg(feature = "mcp")]
use crate::mcp_runtime::McpSource;
use crate::source::PendingTool;
use crate::watch::Drift;

use super::guard::Guarded;
use super::{Host, HostError};

/// Where a host's pins were taken from when its config had no lock of
/// its own yet ([`Host::lock_taken_from`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockMigration {
    /// The lock every config in the config's directory used to share
    /// (`tiny-harness.lock`), which the pins were read from and which is
    /// left as it is.
    pub shared: PathBuf,
    /// The config's own lock (`NAME.lock` beside `NAME.toml`), where its
    /// pins live from now on (written unless the host is held to its
    /// lock).
    pub own: PathBuf,
}

/// How one MCP server's installed code differs from the code the lock
/// records ([`Host::code_drift`]).
#[cfg(feature = "mcp")]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeDrift {
    /// The server, as `<plugin>/<server>`.
    pub server: String,
    /// One line per difference: not installed, other code installed (a
    /// line per field that differs), or its installed files changed.
    pub differences: Vec<String>,
}

/// Asks a source of the embedder's own for its tools again (a plugin's do
/// not change while it is loaded).
async fn relisted(guard: &Guarded, key: &str) -> Result<(), HostError> {
    if guard.plugin().is_some() {
        return Ok(());
    }
    guard.relist().await.map_err(|source| HostError::Listing {
        name: key.split('/').next().unwrap_or(key).to_owned(),
        source,
    })
}

/// What runs a server's tools.
enum ServerSource {
    /// A plugin, or a source of the embedder's own.
    Plugin(Arc<Guarded>),
    #[cfg(feature = "mcp")]
    Mcp(Arc<McpSource>),
}

impl Host {
    /// The lock this host's pins were taken from when its config had no
    /// lock of its own yet: the `tiny-harness.lock` that every config in
    /// the directory used to share (see [`HostBuilder::config`](crate::HostBuilder::config)).
    pub fn lock_taken_from(&self) -> Option<LockMigration> {
        let lock = self.state.lock_state();
        let lock = lock.as_ref()?;
        Some(LockMigration {
            shared: lock.migrated_from.clone()?,
            own: lock.path.clone(),
        })
    }

    /// How each server's installed code differs from the code the lock
    /// records, for every server whose code the lock records (and that
    /// `filter` accepts): not installed, other code installed, or its
    /// installed files changed. Only servers that differ, in name order.
    #[cfg(feature = "mcp")]
    pub fn code_drift(&self, filter: Option<&str>) -> Vec<CodeDrift> {
        let Some(store) = &self.state.store else {
            return Vec::new();
        };
        let recorded: Vec<(String, String, crate::pin::Code)> = {
            let lock = self.state.lock_state();
            let Some(lock) = lock.as_ref() else {
                return Vec::new();
            };
            lock.lock
                .plugins
                .iter()
                .flat_map(|(plugin, pins)| {
                    pins.servers.iter().filter_map(move |(server, pins)| {
                        Some((plugin.clone(), server.clone(), pins.code.clone()?))
                    })
                })
                .collect()
        };
        let mut out = Vec::new();
        for (plugin, server, code) in recorded {
            let key = format!("{plugin}/{server}");
            if filter.is_some_and(|f| f != key && f != plugin) {
                continue;
            }
            let lines = match store.installed(&plugin, &server) {
                Err(why) => vec![why.to_string()],
                Ok(None) => vec![format!(
                    "not installed (the lock records {}): run tiny-harness mcp install {server}",
                    code.describe()
                )],
                Ok(Some(installed)) if !code.admits(&installed.manifest.code) => code
                    .differences(&installed.manifest.code)
                    .into_iter()
                    .map(|d| format!("installed: {d}"))
                    .collect(),
                Ok(Some(installed)) => match store.verify(&installed, &server) {
                    Ok(()) => continue,
                    Err(why) => vec![why.to_string()],
                },
            };
            out.push(CodeDrift {
                server: key,
                differences: lines,
            });
        }
        out
    }

    /// How the servers' tools differ from their pins as far as the host
    /// knows now, without listing or starting anything: a plugin's own
    /// servers as loaded, an MCP server as last listed. Only servers that
    /// differ, as `<plugin>/<server>`, in name order.
    pub fn known_drift(&self) -> Vec<(String, Drift)> {
        let loaded = self.state.loaded();
        let plugins = loaded.guards.iter().flat_map(|(plugin, guard)| {
            guard.servers().filter_map(move |(server, watch)| {
                let drift = watch.read().ok()?.drift();
                Some((format!("{plugin}/{server}"), drift))
            })
        });
        #[cfg(feature = "mcp")]
        let plugins = plugins.chain(
            loaded
                .mcp
                .iter()
                .map(|((plugin, server), mcp)| (format!("{plugin}/{server}"), mcp.drift())),
        );
        let mut out: Vec<(String, Drift)> =
            plugins.filter(|(_, drift)| !drift.is_empty()).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// How each server's tools differ from their pins, for every server
    /// `filter` accepts (`<plugin>/<server>` or `<plugin>`; `None` for all).
    /// MCP servers are listed again first (which starts those not yet
    /// started), and so are the sources of the embedder's own
    /// ([`Host::add_source`]).
    pub async fn drift(&self, filter: Option<&str>) -> Result<Vec<(String, Drift)>, HostError> {
        self.drift_except(filter, &[]).await
    }

    /// [`Host::drift`], leaving out the servers named in `except`
    /// (`<plugin>/<server>`): those whose installed code
    /// [`Host::code_drift`] reports, for one, which would be refused.
    pub async fn drift_except(
        &self,
        filter: Option<&str>,
        except: &[String],
    ) -> Result<Vec<(String, Drift)>, HostError> {
        let mut out = Vec::new();
        for (plugin, server, source) in self.servers(filter)? {
            let key = format!("{plugin}/{server}");
            if except.contains(&key) {
                continue;
            }
            let drift = match source {
                #[cfg(feature = "mcp")]
                ServerSource::Mcp(mcp) => {
                    mcp.relist().await.map_err(|source| HostError::Relist {
                        server: key.clone(),
                        source: Box::new(source),
                    })?
                }
                ServerSource::Plugin(guard) => {
                    relisted(&guard, &key).await?;
                    guard
                        .watch(&server)
                        .and_then(|w| w.read().ok().map(|w| w.drift()))
                        .unwrap_or_default()
                }
            };
            out.push((key, drift));
        }
        Ok(out)
    }

    /// Registers the server(s) `filter` names again as they are now, pins
    /// them, and (with a lock file, not `--locked`) writes the lock: what
    /// makes a changed tool callable again. Returns how many tools each
    /// server now has.
    pub async fn reregister(
        &self,
        filter: Option<&str>,
    ) -> Result<Vec<(String, usize)>, HostError> {
        if self.state.lock_state().as_ref().is_some_and(|l| l.locked) {
            return Err(HostError::Locked {
                plugin: None,
                message: "pins are never updated under --locked".to_owned(),
            });
        }
        let mut done = Vec::new();
        for (plugin, server, source) in self.servers(filter)? {
            let key = format!("{plugin}/{server}");
            let current = match &source {
                #[cfg(feature = "mcp")]
                ServerSource::Mcp(mcp) => {
                    mcp.relist().await.map_err(|source| HostError::Relist {
                        server: key.clone(),
                        source: Box::new(source),
                    })?;
                    mcp.listed().unwrap_or_default()
                }
                ServerSource::Plugin(guard) => {
                    relisted(guard, &key).await?;
                    guard
                        .watch(&server)
                        .and_then(|w| w.read().ok().and_then(|w| w.listed().map(<[_]>::to_vec)))
                        .unwrap_or_default()
                }
            };
            let limits = self
                .state
                .loaded()
                .limits
                .get(&plugin)
                .copied()
                .unwrap_or_default();
            let pending = current
                .iter()
                .map(|definition| PendingTool {
                    server: server.clone(),
                    definition: definition.clone(),
                })
                .collect();
            let count = self
                .live_registry()
                .replace_server(&plugin, &server, pending, &limits)
                .map_err(|source| HostError::Registry {
                    plugin: plugin.clone(),
                    source,
                })?;
            match &source {
                #[cfg(feature = "mcp")]
                ServerSource::Mcp(mcp) => mcp.pin(current.clone()),
                ServerSource::Plugin(guard) => {
                    if let Some(watch) = guard.watch(&server)
                        && let Ok(mut watch) = watch.write()
                    {
                        watch.pin(current.clone());
                    }
                }
            }
            if let Some(lock) = self.state.lock_state().as_mut() {
                lock.set_server(&plugin, &server, &current);
            }
            done.push((key, count));
        }
        self.state.save_lock()?;
        Ok(done)
    }

    /// The servers `filter` names, with what runs them.
    fn servers(
        &self,
        filter: Option<&str>,
    ) -> Result<Vec<(String, String, ServerSource)>, HostError> {
        let mut all = Vec::new();
        let loaded = self.state.loaded();
        for (plugin, guard) in &loaded.guards {
            for (server, _) in guard.servers() {
                all.push((
                    plugin.clone(),
                    server.to_owned(),
                    ServerSource::Plugin(guard.clone()),
                ));
            }
        }
        #[cfg(feature = "mcp")]
        for ((plugin, server), mcp) in &loaded.mcp {
            all.push((
                plugin.clone(),
                server.clone(),
                ServerSource::Mcp(mcp.clone()),
            ));
        }
        all.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let Some(filter) = filter else {
            return Ok(all);
        };
        let chosen: Vec<_> = all
            .into_iter()
            .filter(|(plugin, server, _)| {
                filter == plugin || filter == format!("{plugin}/{server}")
            })
            .collect();
        if chosen.is_empty() {
            return Err(HostError::UnknownServer(filter.to_owned()));
        }
        Ok(chosen)
    }
}
