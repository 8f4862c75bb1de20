//! Loading one plugin into a host: the component checked against the lock,
//! its own servers pinned, its MCP servers started (or registered from the
//! lock), and everything registered in one swap of the registry.
//!
//! Invariants:
//! - All or nothing: a plugin that fails anywhere leaves the registry, the
//!   lock, the host's list of plugins and its lists of what loading told
//!   (tools pinned again, tools left out) as they were.
//! - Each of the plugin's own tools is judged on its own account first: one
//!   the registry would refuse for itself is left out, with why
//!   ([`Host::refused_tools`]), before anything is pinned, so it is never
//!   pinned, locked or shown as drift; the others register.
//! - A plugin name is taken once: a second plugin of that name is refused
//!   before anything of it is read.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

#[cfg(feature = "mcp")]
use crate::mcp_runtime::{McpSource, SourceError, SourceLimits, State};
use crate::plugin::{Limits, LoadError, Plugin, PluginSpec};
use crate::registry::{Registry, RegistryError};
use crate::source::PendingTool;
#[cfg(feature = "mcp")]
use crate::source::{CallLimits, ToolSource};
use crate::tool::ToolDefinition;
use tiny_harness_core::declaration::Declaration;

use super::guard::{Guarded, ServerTools};
use super::{Host, HostError};

/// How an MCP server got its tools at load.
#[cfg(feature = "mcp")]
enum Start {
    /// From the lock, without starting it.
    FromLock(Vec<ToolDefinition>),
    /// From a listing.
    Listed(Vec<ToolDefinition>),
}

/// An MCP server of the plugin being loaded, and how its start went: why
/// it did not, with the error behind it as the source.
#[cfg(feature = "mcp")]
type Started = (Arc<McpSource>, Result<Start, SourceError>);
/// Without the `mcp` feature no server starts (a plugin that declares one
/// is refused).
#[cfg(not(feature = "mcp"))]
type Started = std::convert::Infallible;

/// How a plugin's tools are pinned at load.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pinning {
    /// Held to the lock: a tool that differs from its pin is refused.
    Held,
    /// Pinned again as they are (a plugin marked `dev`), each difference
    /// told; `known`: the lock pinned tools of the plugin before this load,
    /// so that the tools of a server new to it are told as new too.
    Again { known: bool },
}

impl Host {
    /// Loads one more plugin into this host while it runs, and registers
    /// its tools; calls in flight keep the registry they started with. On
    /// any error nothing of the plugin is registered or pinned. Writes the
    /// lock if the plugin added pins (never when `locked`). Returns how
    /// many tools it added.
    ///
    /// Each of the plugin's own tools that the registry refuses for itself
    /// (a bad name, a duplicate, a description or title over its limit, a
    /// schema that does not compile or is over its limits) is left out and
    /// recorded with why ([`Host::refused_tools`]); the plugin's other
    /// tools register. Its name, its limits on the number of tools and
    /// servers and on the registration's total size, and the loader's
    /// checks of the text it sends (sizes, schemas that are not JSON)
    /// still refuse it whole.
    ///
    /// The MCP servers the plugin declares are started (or reached) and
    /// listed concurrently, each as a source of its own. One that its
    /// grants refuse, that fails to start, or whose tools are refused is
    /// recorded as failed, with why, and contributes no tools; the plugin's
    /// other tools and servers still register (see [`Host::mcp_sources`]).
    pub async fn load_plugin(&self, spec: PluginSpec) -> Result<usize, HostError> {
        let count = self.load(spec).await?;
        self.state.save_lock()?;
        Ok(count)
    }

    /// [`Host::load_plugin`] without writing the lock.
    pub(super) async fn load(&self, spec: PluginSpec) -> Result<usize, HostError> {
        let _loading = self.state.loading.lock().await;
        if self.state.loaded().guards.contains_key(&spec.name) {
            return Err(HostError::Registry {
                plugin: spec.name.clone(),
                source: RegistryError::DuplicatePlugin(spec.name),
            });
        }
        let before = self.state.with_lock(|lock| lock.clone());
        let told = self.state.repinned_len();
        let refused = self.state.refused_len();
        let loaded = self.load_whole(spec).await;
        if loaded.is_err() {
            self.state.forget_repinned(told);
            self.state.forget_refused(refused);
            if let Some(before) = before {
                *self.state.lock_state() = Some(before);
            }
        }
        loaded
    }

    async fn load_whole(&self, spec: PluginSpec) -> Result<usize, HostError> {
        let name = spec.name.clone();
        let limits = spec.limits;
        let dev = spec.dev;
        if spec.dev && self.state.lock_state().as_ref().is_some_and(|l| l.locked) {
            return Err(HostError::Locked {
                plugin: Some(name),
                message: "it is marked dev = true (its tools are pinned again at every load), \
                          which a host held to its lock refuses: remove dev from its config"
                    .to_owned(),
            });
        }
        let source = spec.source.clone();
        let (plugin, tools) = match Plugin::load(&self.state.engine, spec).await {
            // The store's copy of a registry's component was changed: the
            // pin's advice for a file (update it) would be wrong here.
            Err(LoadError::HashMismatch {
                plugin,
                path,
                expected,
                actual,
            }) if source.is_some() => {
                return Err(HostError::StoreMismatch {
                    plugin,
                    path,
                    expected,
                    actual,
                });
            }
            loaded => loaded?,
        };
        if let Some(checked) = self
            .state
            .with_lock(|lock| lock.component(&name, plugin.sha256(), source.as_deref()))
        {
            checked?;
        }
        let declarations = plugin.mcp_sources().to_vec();
        #[cfg(not(feature = "mcp"))]
        if let Some(first) = declarations.first() {
            return Err(HostError::Unsupported {
                plugin: name,
                needs: format!("declares the MCP server {:?}", first.name),
                feature: "mcp",
            });
        }
        let grants = plugin.grants().clone();
        let pinning = match dev {
            false => Pinning::Held,
            true => Pinning::Again {
                known: self
                    .state
                    .with_lock(|lock| !lock.servers(&name).is_empty())
                    .unwrap_or(false),
            },
        };
        let (tools, refused) = Registry::screen(&name, tools, &limits.registration);
        self.state.tell_refused(refused);
        let (servers, pending) = self.own_servers(&name, &declarations, tools, pinning)?;
        let guard = Arc::new(Guarded::plugin_of(Arc::new(plugin), servers));
        #[cfg(feature = "mcp")]
        let started = self
            .start_servers(&name, declarations, &grants, limits, pinning)
            .await;
        #[cfg(not(feature = "mcp"))]
        let started: Vec<Started> = {
            let _ = grants;
            Vec::new()
        };

        let mut count = 0;
        self.live_registry().update(|current| {
            let (next, added) =
                self.register(&name, current, pending, &guard, &started, limits, pinning)?;
            count = added;
            Ok::<Registry, HostError>(next)
        })?;
        let mut loaded = self
            .state
            .loaded
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        #[cfg(feature = "mcp")]
        for (mcp, _) in started {
            loaded
                .mcp
                .insert((name.clone(), mcp.server().to_owned()), mcp);
        }
        loaded.guards.insert(name.clone(), guard);
        loaded.limits.insert(name, limits.registration);
        Ok(count)
    }

    /// The plugin's own servers, each with its pinned and current tools
    /// (pinned from the lock where it has them, or, when `dev`, pinned
    /// again as they are), and the tools to register. A server the lock
    /// has and the plugin no longer offers stays, refused (or, when `dev`,
    /// with no tools), so that its removal is seen.
    pub(super) fn own_servers(
        &self,
        name: &str,
        declarations: &[Declaration],
        tools: Vec<PendingTool>,
        pinning: Pinning,
    ) -> Result<(Vec<ServerTools>, Vec<PendingTool>), HostError> {
        let mut current: BTreeMap<String, Vec<ToolDefinition>> = BTreeMap::new();
        for tool in tools {
            current
                .entry(tool.server)
                .or_default()
                .push(tool.definition);
        }
        let declared: Vec<&str> = declarations.iter().map(|d| d.name.as_str()).collect();
        for server in self
            .state
            .with_lock(|lock| lock.servers(name))
            .unwrap_or_default()
        {
            if !declared.contains(&server.as_str()) {
                current.entry(server).or_default();
            }
        }
        let mut servers = Vec::new();
        let mut pending = Vec::new();
        for (server, now) in current {
            let pinned = self.pinned_for(name, &server, &now, pinning)?;
            pending.extend(pinned.iter().map(|definition| PendingTool {
                server: server.clone(),
                definition: definition.clone(),
            }));
            servers.push((server, pinned, now));
        }
        Ok((servers, pending))
    }

    /// What to pin for server `server` of plugin `name`, which offers `now`:
    /// what the lock pins (held to it), or, for a plugin marked `dev`, `now`
    /// itself, with how it differs from the lock told.
    fn pinned_for(
        &self,
        name: &str,
        server: &str,
        now: &[ToolDefinition],
        pinning: Pinning,
    ) -> Result<Vec<ToolDefinition>, HostError> {
        if let Pinning::Again { known } = pinning {
            let accepted = self
                .state
                .with_lock(|lock| lock.accept(name, server, now, known));
            if let Some(Some(drift)) = accepted {
                self.state.tell_repinned(format!("{name}/{server}"), drift);
            }
            return Ok(now.to_vec());
        }
        Ok(self
            .state
            .with_lock(|lock| lock.reconcile(name, server, now))
            .transpose()?
            .unwrap_or_else(|| now.to_vec()))
    }

    #[cfg(feature = "mcp")]
    /// The plugin's MCP servers, each a source of its own, started and
    /// listed concurrently (or, when the lock has them and the plugin is
    /// not `dev`, registered from it and started on their first call), in
    /// declaration order.
    async fn start_servers(
        &self,
        name: &str,
        declarations: Vec<Declaration>,
        grants: &crate::grant::Grants,
        limits: Limits,
        pinning: Pinning,
    ) -> Vec<Started> {
        let mut started = tokio::task::JoinSet::new();
        for (index, declaration) in declarations.into_iter().enumerate() {
            let launch = self
                .state
                .launch_of(name, &declaration, grants, limits.timeout)
                .map(|launch| self.state.with_login(name, launch));
            let from_lock = match (
                &launch,
                declaration.eager || matches!(pinning, Pinning::Again { .. }),
            ) {
                (Ok(_), false) => self
                    .state
                    .with_lock(|lock| lock.pinned(name, &declaration.name))
                    .flatten(),
                _ => None,
            };
            let mcp = Arc::new(McpSource::new(
                name,
                &declaration.name,
                launch,
                SourceLimits {
                    call: CallLimits::new(limits.timeout, limits.arguments_bytes),
                    result_bytes: limits.result_bytes,
                    result_parts: limits.result_parts,
                    registration: limits.registration,
                },
                self.state.iterations.clone(),
            ));
            started.spawn(async move {
                let listing = match (from_lock, mcp.status().state) {
                    (Some(pinned), _) => Ok(Start::FromLock(pinned)),
                    (None, State::Failed(why)) => Err(SourceError::unavailable(why)),
                    (None, _) => mcp.list().await.map(|l| Start::Listed(l.tools)),
                };
                (index, mcp, listing)
            });
        }
        let mut servers = started.join_all().await;
        servers.sort_by_key(|(index, ..)| *index);
        servers
            .into_iter()
            .map(|(_, mcp, listing)| (mcp, listing))
            .collect()
    }

    /// `current` with the plugin's own tools and its MCP servers' added,
    /// and how many tools that is. An MCP server whose tools the registry
    /// refuses is marked failed and registered with none.
    #[allow(clippy::too_many_arguments)]
    fn register(
        &self,
        name: &str,
        current: &Registry,
        pending: Vec<PendingTool>,
        guard: &Arc<Guarded>,
        started: &[Started],
        limits: Limits,
        pinning: Pinning,
    ) -> Result<(Registry, usize), HostError> {
        #[cfg(not(feature = "mcp"))]
        let _ = (started, pinning);
        let registry_error = |source| HostError::Registry {
            plugin: name.to_owned(),
            source,
        };
        let mut next = current.clone();
        #[allow(unused_mut)]
        let mut count = next
            .register(name, pending, guard.clone(), &limits.registration)
            .map_err(registry_error)?;
        #[cfg(feature = "mcp")]
        for (mcp, start) in started {
            let server = mcp.server().to_owned();
            let pinned = match start {
                Ok(Start::FromLock(pinned)) => pinned.clone(),
                Ok(Start::Listed(now)) => self.pinned_for(name, &server, now, pinning)?,
                Err(_) => Vec::new(),
            };
            let pending: Vec<PendingTool> = pinned
                .iter()
                .map(|definition| PendingTool {
                    server: server.clone(),
                    definition: definition.clone(),
                })
                .collect();
            let as_source: Arc<dyn ToolSource> = mcp.clone();
            match next.add_server(
                name,
                &server,
                pending,
                as_source.clone(),
                &limits.registration,
            ) {
                Ok(added) => {
                    count += added;
                    mcp.pin(pinned);
                }
                Err(refused) => {
                    mcp.fail(refused.to_string());
                    next.add_server(name, &server, Vec::new(), as_source, &limits.registration)
                        .map_err(registry_error)?;
                }
            }
        }
        Ok((next, count))
    }
}
