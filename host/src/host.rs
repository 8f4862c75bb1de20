//! The library facade: a host built from a config, with its plugins loaded
//! and their tools registered, ready to invoke.
//!
//! Invariants:
//! - A plugin is registered whole or not at all. If loading or registering
//!   one plugin fails, the registry holds nothing of it; building a host
//!   from a config fails on the first such plugin. (An MCP server a plugin
//!   declares is a part that may fail alone; see [`HostBuilder::load_plugin`].)
//! - What is registered is what is pinned: with a lock file, a server the
//!   lock knows is registered as the lock pins it, and a tool that differs
//!   now refuses every call (`schema_changed`) until [`Host::reregister`].
//!   Without one, tools are pinned as first listed, for the run.

mod guard;
mod installed;
mod lockfile;
mod repin;
mod turn;

pub use turn::{MAX_CALLS_PER_TURN, MAX_CONCURRENT_CALLS, Turn, TurnError};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use guard::Guarded;
use lockfile::LockState;

use crate::config::{Config, ConfigError};
use crate::intrinsic::{IntrinsicSource, Workflow, WorkflowCommand};
use crate::invoke::{CallOutcome, Invoker, ToolCall};
use crate::journal::Journal;
use crate::mcp::{Launch, McpSource, SourceLimits, State};
use crate::plugin::{LoadError, Plugin, PluginEngine, PluginSpec};
use crate::registry::{LiveRegistry, RegistrationLimits, Registry, RegistryError};
use crate::source::{CallLimits, PendingTool, ToolSource};
use crate::tool::ToolDefinition;

/// Why a host could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The config is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A plugin could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A plugin's tools were refused by the registry.
    #[error("plugin {plugin}: {source}")]
    Registry {
        /// The plugin.
        plugin: String,
        /// Why its tools were refused.
        source: RegistryError,
    },
    /// The lock file cannot be read or written.
    #[error(transparent)]
    Lock(#[from] crate::pin::LockError),
    /// With `--locked`, the tool surface differs from the lock.
    #[error("{}{message} (--locked)", .plugin.as_ref().map(|p| format!("plugin {p}: ")).unwrap_or_default())]
    Locked {
        /// The plugin, when the difference is one plugin's.
        plugin: Option<String>,
        /// What differs, and what to do.
        message: String,
    },
    /// No server of that name is registered.
    #[error("no server {0:?} is registered (name it as <plugin>/<server>)")]
    UnknownServer(String),
    /// A server could not be listed again.
    #[error("server {server}: {reason}")]
    Relist {
        /// `<plugin>/<server>`.
        server: String,
        /// Why.
        reason: String,
    },
}

/// Builds a registry of plugin tools, one plugin at a time.
pub struct HostBuilder {
    engine: PluginEngine,
    registry: Registry,
    journal: Option<Arc<Journal>>,
    state: HostState,
}

/// What a host keeps besides its registry: the iteration counter, the
/// lock, the plugins' guards and limits.
#[derive(Debug, Default)]
struct HostState {
    iterations: Arc<AtomicU64>,
    lock: Mutex<Option<LockState>>,
    guards: BTreeMap<String, Arc<Guarded>>,
    mcp: BTreeMap<(String, String), Arc<McpSource>>,
    limits: BTreeMap<String, RegistrationLimits>,
    /// Where `mcp install` put the servers of this config.
    store: Option<crate::mcp::store::Store>,
    /// Where `mcp login` keeps the logins of this config's HTTP servers.
    tokens: Option<Arc<crate::mcp::oauth::Tokens>>,
}

impl HostState {
    /// The lock, if the host has one (a poisoned mutex still holds a
    /// consistent lock: every change to it is one assignment).
    fn lock_state(&self) -> std::sync::MutexGuard<'_, Option<LockState>> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl HostBuilder {
    /// A builder with a fresh engine and an empty registry.
    pub fn new() -> Result<Self, HostError> {
        let engine = PluginEngine::new().map_err(|e| LoadError::Engine(e.to_string()))?;
        Ok(HostBuilder::with_engine(engine))
    }

    /// Loads one plugin and registers its tools; on any error nothing of
    /// the plugin is registered. Returns how many tools it added.
    ///
    /// The MCP servers the plugin declares are started (or reached) and
    /// listed concurrently, each as a source of its own. One that its
    /// grants refuse, that fails to start, or whose tools are refused is
    /// recorded as failed, with why, and contributes no tools; the plugin's
    /// other tools and servers still register (see [`Host::mcp_sources`]).
    pub async fn load_plugin(&mut self, spec: PluginSpec) -> Result<usize, HostError> {
        let name = spec.name.clone();
        let limits = spec.limits;
        let (plugin, tools) = Plugin::load(&self.engine, spec).await?;
        if let Some(checked) = self.with_lock(|lock| lock.component(&name, plugin.sha256())) {
            checked?;
        }
        let declarations = plugin.mcp_sources().to_vec();
        let grants = plugin.grants().clone();

        // The plugin's own servers: pinned from the lock where it has them.
        let mut current: BTreeMap<String, Vec<ToolDefinition>> = BTreeMap::new();
        for tool in tools {
            current
                .entry(tool.server)
                .or_default()
                .push(tool.definition);
        }
        let declared: Vec<&str> = declarations.iter().map(|d| d.name.as_str()).collect();
        for server in self
            .with_lock(|lock| lock.servers(&name))
            .unwrap_or_default()
        {
            if !declared.contains(&server.as_str()) {
                // A server the lock has and the plugin no longer offers
                // stays, refused, so its removal is seen.
                current.entry(server).or_default();
            }
        }
        let mut servers = Vec::new();
        let mut pending = Vec::new();
        for (server, now) in current {
            let pinned = self
                .with_lock(|lock| lock.reconcile(&name, &server, &now))
                .transpose()?
                .unwrap_or_else(|| now.clone());
            pending.extend(pinned.iter().map(|definition| PendingTool {
                server: server.clone(),
                definition: definition.clone(),
            }));
            servers.push((server, pinned, now));
        }
        let guard = Arc::new(Guarded::new(Arc::new(plugin), servers));

        // Its MCP servers, each a source of its own, started concurrently
        // (or, when the lock has them, registered from it and started on
        // their first call).
        let mut started = tokio::task::JoinSet::new();
        for (index, declaration) in declarations.into_iter().enumerate() {
            let launch = self
                .launch_of(&name, &declaration, &grants, limits.timeout)
                .map(|launch| self.with_login(&name, launch));
            let from_lock = match (&launch, declaration.eager) {
                (Ok(_), false) => self
                    .with_lock(|lock| lock.pinned(&name, &declaration.name))
                    .flatten(),
                _ => None,
            };
            let mcp = Arc::new(McpSource::new(
                &name,
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
                    (None, State::Failed(why)) => Err(why),
                    (None, _) => mcp.list().await.map(|l| Start::Listed(l.tools)),
                };
                (index, mcp, listing)
            });
        }
        let mut mcp_servers = started.join_all().await;
        mcp_servers.sort_by_key(|(index, ..)| *index);

        let registry_error = |source| HostError::Registry {
            plugin: name.clone(),
            source,
        };
        let mut next = self.registry.clone();
        let mut count = next
            .register(&name, pending, guard.clone(), &limits.registration)
            .map_err(registry_error)?;
        let mut mcp_added = Vec::new();
        for (_, mcp, start) in mcp_servers {
            let server = mcp.server().to_owned();
            let pinned = match start {
                Ok(Start::FromLock(pinned)) => pinned,
                Ok(Start::Listed(now)) => self
                    .with_lock(|lock| lock.reconcile(&name, &server, &now))
                    .transpose()?
                    .unwrap_or(now),
                Err(_) => Vec::new(),
            };
            let pending: Vec<PendingTool> = pinned
                .iter()
                .map(|definition| PendingTool {
                    server: server.clone(),
                    definition: definition.clone(),
                })
                .collect();
            mcp_added.push(mcp.clone());
            let as_source: Arc<dyn ToolSource> = mcp.clone();
            match next.add_server(
                &name,
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
                    next.add_server(&name, &server, Vec::new(), as_source, &limits.registration)
                        .map_err(registry_error)?;
                }
            }
        }
        self.registry = next;
        for mcp in mcp_added {
            self.state
                .mcp
                .insert((name.clone(), mcp.server().to_owned()), mcp);
        }
        self.state.guards.insert(name.clone(), guard);
        self.state.limits.insert(name, limits.registration);
        Ok(count)
    }

    /// A builder over an existing engine, so that several hosts (or a host
    /// and code driving components directly) share one compiled-code cache,
    /// instance pool and epoch ticker.
    pub fn with_engine(engine: PluginEngine) -> Self {
        HostBuilder {
            engine,
            registry: Registry::new(),
            journal: None,
            state: HostState::default(),
        }
    }

    /// Pins tools with the lock file at `path` (see `pin::LOCK_FILE`):
    /// servers it knows are registered as it pins them, others are pinned
    /// on first use and added when [`Host::save_lock`] runs. With `locked`,
    /// anything not exactly as in the lock refuses the plugin, and the
    /// lock is never written. Call before loading plugins.
    pub fn lock_file(&mut self, path: PathBuf, locked: bool) -> Result<&mut Self, HostError> {
        let state = LockState::open(path, None, locked)?;
        *self.state.lock_state() = Some(state);
        Ok(self)
    }

    /// Pins tools with the lock of `config` ([`crate::pin::lock_path`]:
    /// `NAME.lock` beside `NAME.toml`), as [`HostBuilder::lock_file`] does.
    /// A config with no lock of its own yet, beside the `tiny-harness.lock`
    /// that every config in a directory used to share, starts from that
    /// lock's pins for its own plugins ([`Host::lock_taken_from`] says so)
    /// and writes its own lock; the shared one is never written. Servers
    /// `mcp install` put in the config's store (`NAME.store`) start from
    /// there (see `host/installed.rs`).
    pub fn config_lock(&mut self, config: &Config, locked: bool) -> Result<&mut Self, HostError> {
        let state = LockState::open(
            crate::pin::lock_path(&config.path),
            crate::pin::legacy_lock_path(&config.path),
            locked,
        )?;
        self.state.store = Some(crate::mcp::store::Store::beside(&config.path));
        self.state.tokens = Some(Arc::new(crate::mcp::oauth::Tokens::beside(&config.path)));
        *self.state.lock_state() = Some(state);
        Ok(self)
    }

    /// `launch` with its place in the token file, for an HTTP server of a
    /// host that keeps logins.
    fn with_login(&self, plugin: &str, mut launch: Launch) -> Launch {
        if let (Some(tokens), crate::mcp::launch::Target::Http(endpoint)) =
            (&self.state.tokens, &mut launch.target)
        {
            let key = format!("{plugin}/{}", launch.server);
            endpoint.login = Some(crate::mcp::oauth::Slot::new(
                tokens.clone(),
                &key,
                &endpoint.url,
            ));
        }
        launch
    }

    /// Runs `f` on the lock, if there is one.
    fn with_lock<T>(&self, f: impl FnOnce(&mut LockState) -> T) -> Option<T> {
        let mut lock = self.state.lock_state();
        lock.as_mut().map(f)
    }

    /// The engine plugins are loaded into.
    pub fn engine(&self) -> &PluginEngine {
        &self.engine
    }

    /// The registry so far.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Loads every plugin the config names, in name order, stopping at the
    /// first that fails (whose tools are then not registered).
    pub async fn load_config(&mut self, config: &Config) -> Result<usize, HostError> {
        let mut count = 0;
        for spec in &config.plugins {
            count += self.load_plugin(spec.clone()).await?;
        }
        Ok(count)
    }

    /// Registers the twelve intrinsics under their bare names, reading
    /// skills through `intrinsics`' skills root. A host has none unless
    /// this is called. Returns how many tools it added.
    pub fn intrinsics(&mut self, intrinsics: IntrinsicSource) -> Result<usize, HostError> {
        let mut next = self.registry.clone();
        let count = next
            .register_bare(
                crate::intrinsic::SOURCE_LABEL,
                IntrinsicSource::pending(),
                Arc::new(intrinsics),
                &RegistrationLimits::default(),
            )
            .map_err(|source| HostError::Registry {
                plugin: crate::intrinsic::SOURCE_LABEL.to_owned(),
                source,
            })?;
        self.registry = next;
        Ok(count)
    }

    /// Records every call the host will make in `journal`.
    pub fn journal(&mut self, journal: Arc<Journal>) -> &mut Self {
        self.journal = Some(journal);
        self
    }

    /// Finishes the host.
    pub fn build(self) -> Host {
        if let Some(lock) = self.state.lock_state().as_mut() {
            lock.keep_only(|plugin| self.state.guards.contains_key(plugin));
        }
        let mut invoker = Invoker::new(Arc::new(LiveRegistry::new(self.registry)));
        if let Some(journal) = self.journal {
            invoker = invoker.with_recorder(journal);
        }
        Host {
            invoker,
            state: Arc::new(self.state),
        }
    }
}

/// How an MCP server got its tools at load.
enum Start {
    /// From the lock, without starting it.
    FromLock(Vec<ToolDefinition>),
    /// From a listing.
    Listed(Vec<ToolDefinition>),
}

/// A host: a registry of tools and the invoker over it.
#[derive(Debug, Clone)]
pub struct Host {
    invoker: Invoker,
    state: Arc<HostState>,
}

impl Host {
    /// Loads every plugin the config names, in name order.
    pub async fn from_config(config: &Config) -> Result<Host, HostError> {
        let mut builder = HostBuilder::new()?;
        builder.load_config(config).await?;
        Ok(builder.build())
    }

    /// The registry as it is now (a snapshot).
    pub fn registry(&self) -> Arc<Registry> {
        self.invoker.registry()
    }

    /// The registry itself, to change it while calls run (see
    /// [`LiveRegistry`]).
    pub fn live_registry(&self) -> &Arc<LiveRegistry> {
        self.invoker.live_registry()
    }

    /// The invoker.
    pub fn invoker(&self) -> &Invoker {
        &self.invoker
    }

    /// Every MCP server the plugins declared, with its plugin, in plugin
    /// and server order: connected, not started or failed (with why).
    pub fn mcp_sources(&self) -> Vec<(String, Arc<McpSource>)> {
        self.state
            .mcp
            .iter()
            .map(|((plugin, _), source)| (plugin.clone(), source.clone()))
            .collect()
    }

    /// Closes every MCP session: each server's stdin is closed, it gets a
    /// grace period to exit, then its process group is killed. Dropping
    /// the last clone of a host kills them at once instead.
    pub async fn shutdown(&self) {
        let sources = self.mcp_sources();
        let mut closing = tokio::task::JoinSet::new();
        for (_, source) in sources {
            closing.spawn(async move { source.shutdown().await });
        }
        closing.join_all().await;
    }

    /// Begins one iteration of the tool loop: before the first call to any
    /// of a server's tools from now on, its MCP source lists its tools
    /// again and refuses those that differ from their pins. Call it once
    /// per model turn (the CLI's `call` is one iteration).
    pub fn begin_iteration(&self) {
        self.state.iterations.fetch_add(1, Ordering::SeqCst);
    }

    /// Runs one validated call.
    pub async fn invoke(&self, call: &ToolCall) -> CallOutcome {
        self.invoker.invoke(call).await
    }

    /// Runs one call of an intrinsic against a task's `workflow`, for the
    /// acting participant `actor` (bound here, never read from the
    /// arguments). The call goes through the invoker like any other; when
    /// it succeeds, its command is applied to `workflow` and returned, and
    /// when it is refused anywhere, `workflow` is left exactly as it was.
    /// The outcome holds the result the model reads next turn.
    pub async fn call_intrinsic(
        &self,
        call: &ToolCall,
        workflow: &mut Workflow,
        actor: Option<&str>,
    ) -> IntrinsicOutcome {
        self.call_intrinsic_as(call, None, workflow, actor).await
    }

    /// [`Host::call_intrinsic`] of a call a provider made under
    /// `wire_name` (which the journal records).
    pub(crate) async fn call_intrinsic_as(
        &self,
        call: &ToolCall,
        wire_name: Option<&str>,
        workflow: &mut Workflow,
        actor: Option<&str>,
    ) -> IntrinsicOutcome {
        let (outcome, command) =
            crate::intrinsic::bind(workflow, actor, self.invoke_as(call, wire_name)).await;
        let Some(command) = command.filter(|_| !outcome.is_error()) else {
            return IntrinsicOutcome {
                outcome,
                command: None,
            };
        };
        match workflow.apply(&command) {
            Ok(_) => IntrinsicOutcome {
                outcome,
                command: Some(command),
            },
            Err(error) => IntrinsicOutcome {
                outcome: CallOutcome::new(
                    outcome.call_id,
                    outcome.tool,
                    Err(crate::intrinsic::source::apply_error(&error)),
                ),
                command: None,
            },
        }
    }

    /// Runs one validated call that a provider made under `wire_name`.
    pub async fn invoke_as(&self, call: &ToolCall, wire_name: Option<&str>) -> CallOutcome {
        self.invoker.invoke_as(call, wire_name).await
    }
}

/// What [`Host::call_intrinsic`] did: the call's outcome (the result the
/// model reads next turn) and the command it applied, if any.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IntrinsicOutcome {
    /// The outcome, as for any call.
    pub outcome: CallOutcome,
    /// The command applied to the workflow: `None` for a read-only
    /// intrinsic, a refused call, or a call of a tool that is not one.
    pub command: Option<WorkflowCommand>,
}
