//! [`HostBuilder`]: what a host is to be, recorded, then built in one
//! step.
//!
//! Invariants:
//! - Setters only record: none reads a file, starts a program or can fail,
//!   and their order does not matter. Everything that can fail happens in
//!   [`HostBuilder::build`], which returns a typed error and no host.
//! - `build` never does less than it was asked: a lock that cannot be
//!   opened, `locked` without a lock file, a skills root that cannot be
//!   opened or two plugins of one name refuse the build.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use crate::ToolPattern as Pattern;
use crate::config::Config;
#[cfg(feature = "intrinsics")]
use crate::intrinsic::{SkillLimits, Skills};
use crate::invoke::{CallRecorder, Invoker};
use crate::plugin::{CompileCache, LoadError, PluginEngine, PluginSpec};
use crate::registry::{LiveRegistry, Registry, RegistryError};
use crate::source::ToolSource;

use super::lockfile::LockState;
use super::{Host, HostError, HostState, Loaded};

/// What a host is to be: its engine (or compile cache), its config or
/// plugins, its lock, its call recorders and its intrinsics. Setters
/// record, in any order; [`HostBuilder::build`] builds.
///
/// Defaults: a new engine that caches compiled plugins in the user's cache
/// directory (`$TINY_HARNESS_CACHE_DIR`, else `$XDG_CACHE_HOME/tiny-harness`,
/// else `~/.cache/tiny-harness`); no plugins; the lock beside the config
/// if there is one, else none; not `locked`; no recorder; no intrinsics.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use tiny_harness_host::{Config, HostBuilder};
/// let config = Config::load("tiny-harness.toml".as_ref())?;
/// let host = HostBuilder::new()
///     .config(&config)
///     .locked(true)
///     .intrinsics(true)
///     .build()
///     .await?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until it is built"]
pub struct HostBuilder {
    engine: Engine,
    config: Option<Config>,
    plugins: Vec<PluginSpec>,
    sources: Vec<(String, Arc<dyn ToolSource>)>,
    lock: LockChoice,
    locked: bool,
    recorders: Vec<Arc<dyn CallRecorder>>,
    search: tiny_harness_core::registry::Deferral,
    search_form: Option<tiny_harness_core::registry::SearchForm>,
    #[cfg(feature = "intrinsics")]
    intrinsics: bool,
    #[cfg(feature = "intrinsics")]
    skills_root: Option<PathBuf>,
    #[cfg(feature = "intrinsics")]
    skill_limits: Option<SkillLimits>,
}

/// Where the engine comes from.
enum Engine {
    /// Made at build, caching compiled plugins here (or nowhere).
    New(Option<CompileCache>),
    /// Given, and shared.
    Shared(PluginEngine),
}

/// Which lock file the host keeps.
enum LockChoice {
    /// The config's, if there is a config.
    Config,
    /// This one.
    File(PathBuf),
    /// None.
    Without,
}

impl Default for HostBuilder {
    fn default() -> Self {
        HostBuilder::new()
    }
}

impl HostBuilder {
    /// A builder with the defaults above.
    pub fn new() -> Self {
        HostBuilder {
            engine: Engine::New(CompileCache::user()),
            config: None,
            plugins: Vec::new(),
            sources: Vec::new(),
            lock: LockChoice::Config,
            locked: false,
            recorders: Vec::new(),
            search: tiny_harness_core::registry::Deferral::default(),
            search_form: None,
            #[cfg(feature = "intrinsics")]
            intrinsics: false,
            #[cfg(feature = "intrinsics")]
            skills_root: None,
            #[cfg(feature = "intrinsics")]
            skill_limits: None,
        }
    }

    /// Runs plugins in `engine` (from [`Host::engine`] or
    /// [`PluginEngine::new`]) instead of a new one, so that several hosts
    /// share compiled code, the instance pool and the epoch ticker while
    /// each keeps its own plugins and grants.
    pub fn engine(mut self, engine: PluginEngine) -> Self {
        self.engine = Engine::Shared(engine);
        self
    }

    /// Caches compiled plugins in `cache`, or (with `None`) compiles every
    /// plugin at every build. Ignored when an engine is given.
    pub fn compile_cache(mut self, cache: Option<CompileCache>) -> Self {
        self.engine = Engine::New(cache);
        self
    }

    /// Everything `config` says: its plugins (in name order, before any
    /// given by [`HostBuilder::plugin`]), its lock (`NAME.lock` beside it,
    /// started from the `tiny-harness.lock` every config in its directory
    /// used to share when it has none of its own yet), its store of
    /// installed servers, its logins, and its skills root and limits.
    pub fn config(mut self, config: &Config) -> Self {
        self.config = Some(config.clone());
        self
    }

    /// Defers the tools whose full names `pattern` matches (as the
    /// config's `[search] defer`), beside the config's: a search over the
    /// registry ([`Host::search`]) finds them.
    pub fn defer(mut self, pattern: Pattern) -> Self {
        self.search.defer.push(pattern);
        self
    }

    /// Never defers the tools whose full names `pattern` matches (as the
    /// config's `[search] always`), whatever defers them.
    pub fn always(mut self, pattern: Pattern) -> Self {
        self.search.always.push(pattern);
        self
    }

    /// How a model is offered the search over the deferred tools (as the
    /// config's `[search] form`, which it overrides): the host's own
    /// search by default ([`crate::SearchForm::Host`]).
    pub fn search_form(mut self, form: crate::SearchForm) -> Self {
        self.search_form = Some(form);
        self
    }

    /// One more plugin, loaded after the config's.
    pub fn plugin(mut self, spec: PluginSpec) -> Self {
        self.plugins.push(spec);
        self
    }

    /// One more source of tools, of the embedder's own, added under `name`
    /// after the plugins: its tools are registered as
    /// `<name>/<server>.<tool>` and pinned like a plugin's (see
    /// [`Host::add_source`] for how, and for an example).
    pub fn source(mut self, name: impl Into<String>, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push((name.into(), source));
        self
    }

    /// Pins tools with the lock file at `path` instead of the config's
    /// (`NAME.lock` beside it): servers it knows are registered as it pins
    /// them, others are pinned on first use and written at the end of the
    /// build.
    pub fn lock_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.lock = LockChoice::File(path.into());
        self
    }

    /// Keeps no lock file, not even the config's: every tool is pinned as
    /// first listed, for the run.
    pub fn without_lock(mut self) -> Self {
        self.lock = LockChoice::Without;
        self
    }

    /// With `true` (`--locked`), anything not exactly as in the lock
    /// refuses the plugin, and the lock is never written.
    pub fn locked(mut self, locked: bool) -> Self {
        self.locked = locked;
        self
    }

    /// Gives every call the host makes to `recorder` as it ends (a
    /// [`crate::Journal`] is one): every call whose outcome a model is
    /// shown, those of a model's reply that [`crate::Host::run_calls`]
    /// refuses while decoding it (a name nobody was offered, arguments
    /// that are not JSON) included, with their codes (their arguments are
    /// `null` and they have no definition). Several recorders each get
    /// every call, in the order they were given.
    pub fn recorder(mut self, recorder: Arc<dyn CallRecorder>) -> Self {
        self.recorders.push(recorder);
        self
    }

    #[cfg(feature = "intrinsics")]
    /// With `true`, registers the twelve intrinsic tools under their bare
    /// names, reading skills from the skills root (the config's `[skills]`
    /// or [`HostBuilder::skills_root`]; without one, the skill intrinsics
    /// say that none is configured).
    pub fn intrinsics(mut self, intrinsics: bool) -> Self {
        self.intrinsics = intrinsics;
        self
    }

    #[cfg(feature = "intrinsics")]
    /// Reads skills from `root` instead of the config's skills root.
    pub fn skills_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.skills_root = Some(root.into());
        self
    }

    #[cfg(feature = "intrinsics")]
    /// Reads skills within `limits` instead of the config's.
    pub fn skill_limits(mut self, limits: SkillLimits) -> Self {
        self.skill_limits = Some(limits);
        self
    }

    /// Builds the host: the engine, the lock, every plugin (the config's in
    /// name order, then those given), the sources given, the intrinsics;
    /// then keeps in a lock
    /// taken from a shared one only the plugins loaded, and writes the
    /// lock if anything was pinned (never when `locked`). The first failure
    /// ends the build, and nothing is written.
    pub async fn build(mut self) -> Result<Host, HostError> {
        let mut plugins = self
            .config
            .as_ref()
            .map(|c| c.plugins.clone())
            .unwrap_or_default();
        plugins.append(&mut self.plugins);
        let names: Vec<&str> = plugins
            .iter()
            .map(|spec| spec.name.as_str())
            .chain(self.sources.iter().map(|(name, _)| name.as_str()))
            .collect();
        for (index, name) in names.iter().enumerate() {
            if names[..index].contains(name) {
                return Err(HostError::Registry {
                    plugin: (*name).to_owned(),
                    source: RegistryError::DuplicatePlugin((*name).to_owned()),
                });
            }
        }
        if let Some(config) = &self.config {
            super::fetch::missing_components(config).await?;
        }
        let config_path = self.config.as_ref().map(|c| c.path.clone());
        let lock = match (&self.lock, &config_path) {
            (LockChoice::File(path), _) => Some(LockState::open(path.clone(), None, self.locked)?),
            (LockChoice::Config, Some(config)) => Some(LockState::open(
                crate::pin::lock_path(config),
                crate::pin::legacy_lock_path(config),
                self.locked,
            )?),
            (LockChoice::Config, None) | (LockChoice::Without, _) => None,
        };
        if self.locked && lock.is_none() {
            return Err(HostError::NoLock);
        }
        #[cfg(feature = "intrinsics")]
        let intrinsics = match self.intrinsics {
            true => Some(self.skills(self.config.as_ref())?),
            false => None,
        };
        let engine = match self.engine {
            Engine::Shared(engine) => engine,
            Engine::New(cache) => {
                PluginEngine::with_compile_cache(cache).map_err(LoadError::engine)?
            }
        };
        let state = HostState {
            engine,
            iterations: Arc::default(),
            lock: Mutex::new(lock),
            loaded: RwLock::new(Loaded::default()),
            loading: tokio::sync::Mutex::new(()),
            repinned: Mutex::default(),
            refused: Mutex::default(),
            #[cfg(feature = "mcp")]
            store: config_path
                .as_deref()
                .map(crate::mcp_runtime::store::Store::beside),
            #[cfg(feature = "oauth")]
            tokens: config_path
                .as_deref()
                .map(|path| Arc::new(crate::mcp_runtime::oauth::Tokens::beside(path))),
        };
        // Deferred: the plugins so marked, and what the config's and the
        // builder's patterns say.
        let mut search = self
            .config
            .as_ref()
            .map(|c| c.search.clone())
            .unwrap_or_default();
        search.defer.append(&mut self.search.defer);
        search.always.append(&mut self.search.always);
        if let Some(form) = self.search_form {
            search.form = form;
        }
        search.plugins = plugins
            .iter()
            .filter(|spec| spec.defer)
            .map(|spec| spec.name.clone())
            .collect();
        search.check().map_err(HostError::Search)?;
        let mut registry = Registry::new();
        registry.set_deferral(search);
        let mut invoker = Invoker::new(Arc::new(LiveRegistry::new(registry)));
        match self.recorders.len() {
            0 => {}
            1 => invoker = invoker.with_recorder(self.recorders[0].clone()),
            _ => invoker = invoker.with_recorder(Arc::new(Recorders(self.recorders))),
        }
        let host = Host {
            invoker,
            state: Arc::new(state),
        };
        for spec in plugins {
            host.load(spec).await?;
        }
        for (name, source) in self.sources {
            host.add(&name, source).await?;
        }
        #[cfg(feature = "intrinsics")]
        if let Some(intrinsics) = intrinsics {
            host.register_intrinsics(intrinsics)?;
        }
        let loaded = host.state.loaded();
        if let Some(lock) = host.state.lock_state().as_mut() {
            lock.keep_only(|plugin| loaded.guards.contains_key(plugin));
        }
        host.state.save_lock()?;
        Ok(host)
    }

    #[cfg(feature = "intrinsics")]
    /// The skills the intrinsics read: the root set here, else the
    /// config's, opened now; with neither, none.
    fn skills(&self, config: Option<&Config>) -> Result<Skills, HostError> {
        let root = self
            .skills_root
            .clone()
            .or_else(|| config.and_then(|c| c.skills_root.clone()));
        let limits = self
            .skill_limits
            .or_else(|| config.map(|c| c.skill_limits))
            .unwrap_or_default();
        match root {
            Some(root) => Ok(Skills::open(&root)
                .map_err(HostError::Skills)?
                .with_limits(limits)),
            None => Ok(Skills::none()),
        }
    }
}

/// Several recorders, each given every call in turn.
struct Recorders(Vec<Arc<dyn CallRecorder>>);

impl std::fmt::Debug for Recorders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Recorders({})", self.0.len())
    }
}

impl CallRecorder for Recorders {
    fn record(
        &self,
        call: &crate::invoke::ToolCall,
        outcome: &crate::invoke::CallOutcome,
        definition: Option<&crate::SchemaHash>,
        wire_name: Option<&str>,
    ) {
        for recorder in &self.0 {
            recorder.record(call, outcome, definition, wire_name);
        }
    }
}
