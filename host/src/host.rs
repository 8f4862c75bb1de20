//! The library facade: a host built from a config, with its plugins loaded
//! and their tools registered, ready to invoke.
//!
//! Invariant: a plugin is registered whole or not at all. If loading or
//! registering one plugin fails, the registry holds nothing of it; building
//! a host from a config fails on the first such plugin.

use std::sync::Arc;

use crate::config::{Config, ConfigError};
use crate::invoke::{CallOutcome, Invoker, ToolCall};
use crate::journal::Journal;
use crate::plugin::{LoadError, Plugin, PluginEngine, PluginSpec};
use crate::registry::{LiveRegistry, Registry, RegistryError};
use crate::source::ToolSource;

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
}

/// Builds a registry of plugin tools, one plugin at a time.
pub struct HostBuilder {
    engine: PluginEngine,
    registry: Registry,
    journal: Option<Arc<Journal>>,
}

impl HostBuilder {
    /// A builder with a fresh engine and an empty registry.
    pub fn new() -> Result<Self, HostError> {
        let engine = PluginEngine::new().map_err(|e| LoadError::Engine(e.to_string()))?;
        Ok(HostBuilder {
            engine,
            registry: Registry::new(),
            journal: None,
        })
    }

    /// Loads one plugin and registers its tools; on any error nothing of
    /// the plugin is registered. Returns how many tools it added.
    pub async fn load_plugin(&mut self, spec: PluginSpec) -> Result<usize, HostError> {
        let name = spec.name.clone();
        let limits = spec.limits.registration;
        let (plugin, tools) = Plugin::load(&self.engine, spec).await?;
        let source: Arc<dyn ToolSource> = Arc::new(plugin);
        self.registry
            .register(&name, tools, source, &limits)
            .map_err(|source| HostError::Registry {
                plugin: name,
                source,
            })
    }

    /// A builder over an existing engine, so that several hosts (or a host
    /// and code driving components directly) share one compiled-code cache,
    /// instance pool and epoch ticker.
    pub fn with_engine(engine: PluginEngine) -> Self {
        HostBuilder {
            engine,
            registry: Registry::new(),
            journal: None,
        }
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

    /// Records every call the host will make in `journal`.
    pub fn journal(&mut self, journal: Arc<Journal>) -> &mut Self {
        self.journal = Some(journal);
        self
    }

    /// Finishes the host.
    pub fn build(self) -> Host {
        let mut invoker = Invoker::new(Arc::new(LiveRegistry::new(self.registry)));
        if let Some(journal) = self.journal {
            invoker = invoker.with_journal(journal);
        }
        Host { invoker }
    }
}

/// A host: a registry of tools and the invoker over it.
#[derive(Debug, Clone)]
pub struct Host {
    invoker: Invoker,
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

    /// Runs one validated call.
    pub async fn invoke(&self, call: &ToolCall) -> CallOutcome {
        self.invoker.invoke(call).await
    }

    /// Runs one validated call that a provider made under `wire_name`.
    pub async fn invoke_as(&self, call: &ToolCall, wire_name: Option<&str>) -> CallOutcome {
        self.invoker.invoke_as(call, wire_name).await
    }
}
