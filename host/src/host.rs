//! The library facade: a [`Host`] built by a [`HostBuilder`] from a config
//! (or plugins given one by one), with its plugins loaded, its lock
//! reconciled and its tools registered, ready to invoke.
//!
//! Invariants:
//! - There is one way to build a host: [`HostBuilder`]'s setters only
//!   record, in any order, and [`HostBuilder::build`] does everything (the
//!   engine, the lock, every plugin, the intrinsics, the lock written). The
//!   command line, [`Host::from_config`] and the tests all take it.
//! - A plugin is registered whole or not at all. If loading or registering
//!   one plugin fails, the registry and the lock hold nothing of it
//!   ([`Host::load_plugin`]); building a host fails on the first such
//!   plugin. (An MCP server a plugin declares is a part that may fail
//!   alone; see [`Host::mcp_sources`]. So is one of the plugin's own tools
//!   that the registry refuses for itself: it is left out, with why, and
//!   the plugin's other tools register; see [`Host::refused_tools`].)
//! - What is registered is what is pinned: with a lock file, a server the
//!   lock knows is registered as the lock pins it, and a tool that differs
//!   now refuses every call (`schema_changed`) until [`Host::reregister`].
//!   Without one, tools are pinned as first listed, for the run.
//! - The lock is written by the host (after a build, a plugin added, or a
//!   server registered again), atomically, and never under `--locked`.

mod builder;
mod disclose;
mod fetch;
mod guard;
#[cfg(feature = "mcp")]
mod installed;
#[cfg(feature = "intrinsics")]
mod intrinsics;
mod load;
mod lockfile;
mod repin;
mod sources;
mod turn;

pub use builder::HostBuilder;
#[cfg(feature = "intrinsics")]
pub use intrinsics::IntrinsicOutcome;
#[cfg(feature = "mcp")]
pub use repin::CodeDrift;
pub use repin::LockMigration;
pub use turn::{MAX_CALLS_PER_TURN, MAX_CONCURRENT_CALLS, Turn, TurnError};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use guard::Guarded;
use lockfile::LockState;

use crate::config::{Config, ConfigError};
use crate::invoke::{CallOutcome, Caller, Invoker, ToolCall};
#[cfg(feature = "mcp")]
use crate::mcp_runtime::McpSource;
use crate::plugin::{LoadError, Plugin, PluginEngine};
use crate::registry::{LiveRegistry, RefusedTool, RegistrationLimits, Registry, RegistryError};
use crate::watch::Drift;

/// Why a host could not be built, or a plugin added to it.
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
    /// The builder was given more deferral patterns than a host keeps.
    #[error("search: {0}")]
    Search(crate::registry::PatternError),
    /// The builder was asked to hold the host to a lock but given none.
    #[error(
        "the host is to be held to its lock (--locked), but it has no lock file: give the builder \
         a config (its lock sits beside it) or a lock file"
    )]
    NoLock,
    /// The skills root cannot be opened.
    #[cfg(feature = "intrinsics")]
    #[error(transparent)]
    Skills(crate::intrinsic::IntrinsicError),
    /// A plugin needs what this host was built without (a cargo feature
    /// of `tiny-harness-host`).
    #[error("plugin {plugin}: it {needs}, and this host was built without the {feature} feature")]
    Unsupported {
        /// The plugin.
        plugin: String,
        /// What it needs.
        needs: String,
        /// The feature that provides it.
        feature: &'static str,
    },
    /// The component of an `oci://` plugin is not in the store beside the
    /// config, and fetching it by its digest failed.
    #[cfg(feature = "oci")]
    #[error(
        "plugin {plugin}: its component is not in {}, and fetching it by its digest failed: {source}",
        .store.display()
    )]
    Fetch {
        /// The plugin.
        plugin: String,
        /// The store it was looked for in.
        store: std::path::PathBuf,
        /// Why the fetch failed.
        source: Box<tiny_harness_oci::OciError>,
    },
    /// The store's copy of an `oci://` plugin's component is not the one
    /// the config pins: it is never run.
    #[error(
        "plugin {plugin}: the store's copy of its component, {}, is not the one pinned (its sha256 is {actual}, the config pins {expected}): delete that file, and the next start fetches the pinned one by its digest",
        .path.display()
    )]
    StoreMismatch {
        /// The plugin.
        plugin: String,
        /// The file in the store.
        path: std::path::PathBuf,
        /// The sha256 the config pins.
        expected: String,
        /// The file's sha256.
        actual: String,
    },
    /// No server of that name is registered.
    #[error("no server {0:?} is registered (name it as <plugin>/<server>)")]
    UnknownServer(String),
    /// A source of the embedder's own could not list its tools.
    #[error("source {name}: it could not list its tools: {source}")]
    Listing {
        /// The name it was added under.
        name: String,
        /// Why.
        source: crate::tool::CallError,
    },
    /// A server could not be listed again.
    #[cfg(feature = "mcp")]
    #[error("server {server}: {source}")]
    Relist {
        /// `<plugin>/<server>`.
        server: String,
        /// Why (boxed: it may be large, and it is rare).
        source: Box<crate::mcp_runtime::SourceError>,
    },
}

/// What a host keeps besides its invoker: the engine its plugins run in,
/// the iteration counter, the lock, and what each plugin loaded.
struct HostState {
    engine: PluginEngine,
    iterations: Arc<AtomicU64>,
    lock: Mutex<Option<LockState>>,
    loaded: RwLock<Loaded>,
    /// Serialises plugin loads, so that two of one name cannot both pass
    /// the check for a name already taken.
    loading: tokio::sync::Mutex<()>,
    /// What loading plugins marked `dev` pinned again, by server.
    repinned: Mutex<Vec<(String, Drift)>>,
    /// The plugins' own tools the registry refused each for itself, in
    /// load order.
    refused: Mutex<Vec<RefusedTool>>,
    /// Where `mcp install` put the servers of this config.
    #[cfg(feature = "mcp")]
    store: Option<crate::mcp_runtime::store::Store>,
    /// Where `mcp login` keeps the logins of this config's HTTP servers.
    #[cfg(feature = "oauth")]
    tokens: Option<Arc<crate::mcp_runtime::oauth::Tokens>>,
}

/// What the plugins loaded so far brought, by plugin.
#[derive(Debug, Default, Clone)]
struct Loaded {
    guards: BTreeMap<String, Arc<Guarded>>,
    #[cfg(feature = "mcp")]
    mcp: BTreeMap<(String, String), Arc<McpSource>>,
    limits: BTreeMap<String, RegistrationLimits>,
}

impl std::fmt::Debug for HostState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostState")
            .field("iterations", &self.iterations)
            .field("lock", &self.lock)
            .field("loaded", &self.loaded)
            .finish_non_exhaustive()
    }
}

impl HostState {
    /// The lock, if the host has one (a poisoned mutex still holds a
    /// consistent lock: every change to it is one assignment).
    fn lock_state(&self) -> std::sync::MutexGuard<'_, Option<LockState>> {
        self.lock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the lock, if there is one.
    fn with_lock<T>(&self, f: impl FnOnce(&mut LockState) -> T) -> Option<T> {
        let mut lock = self.lock_state();
        lock.as_mut().map(f)
    }

    /// What the plugins loaded so far brought (a copy: cheap, every value
    /// is an `Arc`).
    fn loaded(&self) -> Loaded {
        self.loaded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many servers loading has told as pinned again so far.
    fn repinned_len(&self) -> usize {
        self.repinned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Tells that loading pinned `server` again, as `drift` says.
    fn tell_repinned(&self, server: String, drift: Drift) {
        self.repinned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((server, drift));
    }

    /// Forgets what a load that failed told, keeping the first `kept`.
    fn forget_repinned(&self, kept: usize) {
        self.repinned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .truncate(kept);
    }

    /// How many tools loading has left out so far.
    fn refused_len(&self) -> usize {
        self.refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Tells that loading left out `refused`.
    fn tell_refused(&self, refused: Vec<RefusedTool>) {
        self.refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(refused);
    }

    /// Forgets the tools a load that failed left out, keeping the first
    /// `kept`.
    fn forget_refused(&self, kept: usize) {
        self.refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .truncate(kept);
    }

    /// Writes the lock file if pins were added (trust on first use). Never
    /// writes with `--locked`. True if it was written.
    fn save_lock(&self) -> Result<bool, HostError> {
        match self.lock_state().as_mut() {
            Some(lock) => lock.save(),
            None => Ok(false),
        }
    }
}

/// A host: a registry of tools and the invoker over it. Cheap to clone;
/// the clones share everything.
#[derive(Debug, Clone)]
pub struct Host {
    invoker: Invoker,
    state: Arc<HostState>,
}

impl Host {
    /// A host with everything `config` says: its plugins, the lock beside
    /// it (`NAME.lock`), the servers `mcp install` put in its store, the
    /// logins of `mcp login`, and the intrinsics with its skills root;
    /// compiled plugins are cached in the user's cache directory
    /// ([`HostBuilder::compile_cache`]). The same as
    /// `HostBuilder::new().config(config).intrinsics(true).build()`.
    pub async fn from_config(config: &Config) -> Result<Host, HostError> {
        let builder = HostBuilder::new().config(config);
        #[cfg(feature = "intrinsics")]
        let builder = builder.intrinsics(true);
        builder.build().await
    }

    /// The engine this host's plugins run in: give it to another
    /// [`HostBuilder::engine`] to share compiled code, the instance pool
    /// and the epoch ticker.
    pub fn engine(&self) -> &PluginEngine {
        &self.state.engine
    }

    /// The registry as it is now (a snapshot).
    pub fn registry(&self) -> Arc<Registry> {
        self.invoker.registry()
    }

    /// The deferred tools that best fit `query` (at most `limit`, by
    /// default 5, at most 20), best first, with their scores' parts: what a
    /// model's search of this registry finds. None is found when nothing
    /// is deferred (`[search]`, a plugin's `defer = true`,
    /// [`HostBuilder::defer`]). A query that is empty, over 512 bytes or
    /// not plain text is refused.
    pub fn search(
        &self,
        query: &str,
        limit: Option<usize>,
    ) -> Result<Vec<crate::SearchHit>, crate::SearchError> {
        self.registry().search(query, limit)
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

    /// Every plugin loaded, by name, in name order: its component, grants
    /// and limits as loaded (what `tiny-harness plugins` shows). The MCP
    /// servers each declared are [`Host::mcp_sources`].
    pub fn plugins(&self) -> Vec<(String, Arc<Plugin>)> {
        self.state
            .loaded()
            .guards
            .iter()
            .filter_map(|(name, guard)| Some((name.clone(), guard.plugin()?.clone())))
            .collect()
    }

    /// What loading the plugins marked `dev` ([`PluginSpec::dev`](crate::PluginSpec::dev)) pinned
    /// again: each server whose tools differed from the lock, as
    /// `<plugin>/<server>`, with how (tools new, changed or gone), in load
    /// order. Empty when no plugin is marked `dev`, or none changed.
    pub fn repinned(&self) -> Vec<(String, Drift)> {
        self.state
            .repinned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Each tool a plugin offered that was not registered, with why, in
    /// load order: a tool the registry refuses for itself (a tool or server
    /// name that breaks the naming rules, a second tool of the same full
    /// name, a description or title over its limit, an input or output
    /// schema too large, too costly or that does not compile) is left out
    /// and the plugin's other tools register (see [`Registry::screen`]).
    /// What is the whole plugin's (its name, how many tools and servers it
    /// registers, their total size) still refuses the whole plugin, and so
    /// do the loader's checks of the text a plugin sends, made before
    /// anything is parsed (a description or schema over its size limit, a
    /// schema that is not JSON); a plugin that is refused leaves nothing
    /// here. Tools an MCP server lists are not here: its listing skips
    /// those it cannot register.
    pub fn refused_tools(&self) -> Vec<RefusedTool> {
        self.state
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    #[cfg(feature = "mcp")]
    /// Every MCP server the plugins declared, with its plugin, in plugin
    /// and server order: connected, not started or failed (with why).
    pub fn mcp_sources(&self) -> Vec<(String, Arc<McpSource>)> {
        self.state
            .loaded()
            .mcp
            .iter()
            .map(|((plugin, _), source)| (plugin.clone(), source.clone()))
            .collect()
    }

    /// Closes every MCP session: each server's stdin is closed, it gets a
    /// grace period to exit, then its process group is killed. Dropping
    /// the last clone of a host kills them at once instead.
    pub async fn shutdown(&self) {
        #[cfg(feature = "mcp")]
        {
            let mut closing = tokio::task::JoinSet::new();
            for (_, source) in self.mcp_sources() {
                closing.spawn(async move { source.shutdown().await });
            }
            closing.join_all().await;
        }
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

    /// Runs one validated call that a provider made under `wire_name`.
    pub async fn invoke_as(&self, call: &ToolCall, wire_name: Option<&str>) -> CallOutcome {
        self.invoker.invoke_as(call, wire_name).await
    }

    /// Runs one validated call that `caller` made (a gateway's client,
    /// under a wire name), as the recorder sees it.
    pub async fn invoke_from(&self, call: &ToolCall, caller: Caller<'_>) -> CallOutcome {
        self.invoker.invoke_from(call, caller).await
    }
}
