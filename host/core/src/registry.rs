//! The registry: every tool the model may call, by its full name.
//!
//! Invariants:
//! - A new registry is empty. The host has no tools of its own; a tool
//!   exists only once a source (a plugin) supplies it.
//! - A tool's name is `<plugin>/<server>.<tool>`. The plugin part comes from
//!   the host config, never from the plugin, so a plugin cannot pose as
//!   another. Names are resolved by map lookup on the whole string, never by
//!   splitting it.
//! - A source's tools are registered all together or not at all: a bad
//!   name, a duplicate or a schema that does not compile refuses the whole
//!   batch and leaves the registry as it was. A caller that wants each
//!   tool judged on its own account screens them first
//!   ([`Registry::screen`]): the tools the registry would refuse for
//!   themselves are left out, each with why, and the rest register.
//! - Every input schema is compiled here, once.
//! - A registry never changes under a call: [`LiveRegistry`] swaps whole
//!   snapshots, and a call keeps the one it started with.
//! - Where a tool runs is a [`ToolSource`]; the registry knows no kind of
//!   source by name.
//! - A source may instead register its tools under **bare names**
//!   ([`ToolName::bare`], [`Registry::register_bare`]): the tool name
//!   alone, such as `create_plan`. A bare name is a tool name, so it never
//!   holds a `/`, while every `<plugin>/<server>.<tool>` does: no source
//!   registered under a plugin name can pose as, or collide with, a tool
//!   of a bare-named source. Bare-named sources are kept apart from
//!   plugins ([`Registry::bare_sources`]) and their names take no plugin
//!   namespace.
//! - What a source registers is bounded ([`RegistrationLimits`]): how many
//!   tools and servers, how long each description and title, how large and
//!   how costly to evaluate each schema, and how large the whole. A source
//!   over a limit is refused whole, with the limit and how to raise it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::schema::{CompiledSchema, SchemaHash};
use crate::source::{PendingTool, ToolSource};
use crate::tool::ToolDefinition;

mod deferral;
mod derived;
mod limits;
mod live;
mod lookup;
mod name;
mod screen;

pub use deferral::{
    Deferral, MAX_PATTERN_BYTES, MAX_PATTERNS, Pattern, PatternError, SearchForm, glob_matches,
    index_tools,
};
pub use derived::Derived;
use limits::Meter;
pub use limits::{RegistrationLimit, RegistrationLimits};
pub use live::LiveRegistry;
pub use name::{MAX_SEGMENT_LEN, MAX_TOOL_NAME_LEN, ToolName, check_segment, check_tool_name};
pub use screen::{REFUSED_KEYWORD, RefusedTool};

/// A registered tool.
#[derive(Debug)]
pub struct RegisteredTool {
    /// Its full name.
    pub name: ToolName,
    /// Its definition, as the source gave it.
    pub definition: ToolDefinition,
    /// Its compiled input schema.
    pub schema: CompiledSchema,
    /// Its compiled output schema, when it declares one.
    pub output_schema: Option<CompiledSchema>,
    /// Where it runs.
    pub source: Arc<dyn ToolSource>,
    /// The definition's pin hash (the sha256 of its schemas, title,
    /// description and annotations, as `tiny-harness.lock` records it),
    /// which the call journal records for every call.
    pub definition_hash: SchemaHash,
    /// What a layer above derives from this entry once (the provider
    /// adapters' encoded entries).
    pub derived: Derived,
}

impl RegisteredTool {
    /// The sha256 of the input schema's canonical JSON.
    pub fn schema_hash(&self) -> &SchemaHash {
        self.schema.hash()
    }

    /// The sha256 of the output schema's canonical JSON, if there is one.
    pub fn output_schema_hash(&self) -> Option<&SchemaHash> {
        self.output_schema.as_ref().map(CompiledSchema::hash)
    }
}

/// Why a registration was refused. Nothing of the refused batch remains.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A plugin, server or tool name breaks the naming rules.
    #[error("invalid {what} name {name:?}: {reason}")]
    InvalidName {
        /// `plugin`, `server` or `tool`.
        what: &'static str,
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The full name is already taken.
    #[error("duplicate tool {0}: each <plugin>/<server>.<tool> must be unique")]
    Duplicate(String),
    /// A tool's input or output schema does not compile.
    #[error("tool {name} has an invalid {which} schema: {reason}")]
    InvalidSchema {
        /// The tool's full name.
        name: String,
        /// `input` or `output`.
        which: &'static str,
        /// Why it does not compile.
        reason: String,
    },
    /// A plugin of this name is already registered.
    #[error("plugin {0:?} is already registered")]
    DuplicatePlugin(String),
    /// No source of this name is registered.
    #[error("no plugin {0:?} is registered")]
    UnknownSource(String),
    /// The registration is over one of its limits.
    #[error(
        "{what} is {}{amount} {}, more than the limit of {max}; raise \
         plugins.{plugin}.limits.{} if this is expected",
        if *.at_least { "at least " } else { "" }, .limit.unit(), .limit.config_key()
    )]
    OverLimit {
        /// The plugin (the source's name in the config).
        plugin: String,
        /// What is over, e.g. `tool fs/workspace.read_file: the description`.
        what: String,
        /// Which limit.
        limit: RegistrationLimit,
        /// How much there is (or at least, when counting stopped early).
        amount: u64,
        /// Whether counting stopped at the limit, so `amount` is a floor.
        at_least: bool,
        /// The limit's value.
        max: u64,
    },
}

/// Every callable tool, by full name.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    tools: BTreeMap<String, Arc<RegisteredTool>>,
    sources: BTreeMap<String, Arc<dyn ToolSource>>,
    /// Servers of a registered source that another source runs (an MCP
    /// server a plugin declared), by plugin and server name.
    servers: BTreeMap<(String, String), Arc<dyn ToolSource>>,
    /// Sources whose tools have bare names, by the source's own label
    /// (never a plugin name: the two namespaces are apart).
    bare: BTreeMap<String, Arc<dyn ToolSource>>,
    /// Which tools are deferred, kept from snapshot to snapshot.
    deferral: Arc<Deferral>,
    /// The search index over this snapshot's deferred tools.
    index: deferral::IndexSlot,
}

impl Registry {
    /// An empty registry: no tool exists until a source supplies it.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers all of one source's tools, or none of them.
    ///
    /// `name` is the source's name in the host config (the plugin's), the
    /// first part of every tool name. Every name is checked, every limit
    /// applied, every schema compiled and every duplicate refused before
    /// anything is inserted. [`Registry::screen`] first leaves out the
    /// tools that would be refused each for itself.
    pub fn register(
        &mut self,
        name: &str,
        tools: Vec<PendingTool>,
        source: Arc<dyn ToolSource>,
        limits: &RegistrationLimits,
    ) -> Result<usize, RegistryError> {
        check_segment("plugin", name)?;
        if self.sources.contains_key(name) {
            return Err(RegistryError::DuplicatePlugin(name.to_owned()));
        }
        let batch = self.batch(name, tools, &source, limits, 0, false)?;
        let count = batch.len();
        self.tools.extend(batch);
        self.sources.insert(name.to_owned(), source);
        Ok(count)
    }

    /// Registers all of one source's tools under bare names (each
    /// definition's name alone, see [`ToolName::bare`]), or none of them.
    ///
    /// `label` names the source for people and in limit errors; it is not
    /// part of any tool name and takes no plugin name. Every pending tool
    /// must have an empty server part. Names, limits, schemas and
    /// duplicates are checked as [`Registry::register`] checks them.
    pub fn register_bare(
        &mut self,
        label: &str,
        tools: Vec<PendingTool>,
        source: Arc<dyn ToolSource>,
        limits: &RegistrationLimits,
    ) -> Result<usize, RegistryError> {
        check_segment("source", label)?;
        if self.bare.contains_key(label) {
            return Err(RegistryError::DuplicatePlugin(label.to_owned()));
        }
        if let Some(other) = tools.iter().find(|t| !t.server.is_empty()) {
            return Err(RegistryError::InvalidName {
                what: "server",
                name: crate::display::one_line(&other.server).into_owned(),
                reason: "a bare-named tool has no server part".to_owned(),
            });
        }
        let batch = self.batch(label, tools, &source, limits, 0, true)?;
        let count = batch.len();
        self.tools.extend(batch);
        self.bare.insert(label.to_owned(), source);
        Ok(count)
    }

    /// Every source registered with [`Registry::register_bare`], by label.
    pub fn bare_sources(&self) -> impl Iterator<Item = (&str, &Arc<dyn ToolSource>)> {
        self.bare
            .iter()
            .map(|(label, source)| (label.as_str(), source))
    }

    /// Adds server `server` to the registered source `name`, its tools run
    /// by `source` instead (an MCP server the plugin declared, say). The
    /// tools are checked as [`Registry::register`] checks them, counted
    /// with the source's other tools against `limits`; all or nothing. A
    /// server with no tools is still recorded, so it is listed.
    pub fn add_server(
        &mut self,
        name: &str,
        server: &str,
        tools: Vec<PendingTool>,
        source: Arc<dyn ToolSource>,
        limits: &RegistrationLimits,
    ) -> Result<usize, RegistryError> {
        if !self.sources.contains_key(name) {
            return Err(RegistryError::UnknownSource(name.to_owned()));
        }
        check_segment("server", server)?;
        if let Some(other) = tools.iter().find(|t| t.server != server) {
            return Err(RegistryError::InvalidName {
                what: "server",
                name: crate::display::one_line(&other.server).into_owned(),
                reason: format!("only server {server:?} is being added"),
            });
        }
        let key = (name.to_owned(), server.to_owned());
        let taken = self.servers.contains_key(&key)
            || self
                .tools
                .values()
                .any(|t| t.name.plugin() == name && t.name.server() == server);
        if taken {
            return Err(RegistryError::InvalidName {
                what: "server",
                name: format!("{name}/{server}"),
                reason: "it is already registered".to_owned(),
            });
        }
        let others = self
            .tools
            .values()
            .filter(|t| t.name.plugin() == name)
            .count();
        let batch = self.batch(name, tools, &source, limits, others, false)?;
        let count = batch.len();
        self.tools.extend(batch);
        self.servers.insert(key, source);
        Ok(count)
    }

    /// Every server added with [`Registry::add_server`]: plugin, server
    /// and the source that runs it, ordered by plugin and server.
    pub fn server_sources(&self) -> impl Iterator<Item = (&str, &str, &Arc<dyn ToolSource>)> {
        self.servers
            .iter()
            .map(|((plugin, server), source)| (plugin.as_str(), server.as_str(), source))
    }

    /// A new registry in which server `server` of source `name` holds
    /// exactly `tools` (checked as [`Registry::register`] checks them,
    /// against the source's limits with its other servers' tools counted),
    /// and everything else is as here. `self` is untouched: a call that
    /// holds it keeps the tools it started with.
    pub fn with_server_replaced(
        &self,
        name: &str,
        server: &str,
        tools: Vec<PendingTool>,
        limits: &RegistrationLimits,
    ) -> Result<Registry, RegistryError> {
        let source = self
            .servers
            .get(&(name.to_owned(), server.to_owned()))
            .or_else(|| self.sources.get(name))
            .cloned()
            .ok_or_else(|| RegistryError::UnknownSource(name.to_owned()))?;
        if let Some(other) = tools.iter().find(|t| t.server != server) {
            return Err(RegistryError::InvalidName {
                what: "server",
                name: crate::display::one_line(&other.server).into_owned(),
                reason: format!("only server {server:?} is being replaced"),
            });
        }
        let mut next = self.clone();
        next.tools
            .retain(|_, t| !(t.name.plugin() == name && t.name.server() == server));
        let others = next
            .tools
            .values()
            .filter(|t| t.name.plugin() == name)
            .count();
        let batch = next.batch(name, tools, &source, limits, others, false)?;
        next.tools.extend(batch);
        Ok(next)
    }

    /// Checks and compiles one source's tools into entries, refusing names
    /// already here; `already` is how many tools the source keeps besides.
    /// With `bare`, each tool is named by its definition's name alone.
    fn batch(
        &self,
        name: &str,
        tools: Vec<PendingTool>,
        source: &Arc<dyn ToolSource>,
        limits: &RegistrationLimits,
        already: usize,
        bare: bool,
    ) -> Result<BTreeMap<String, Arc<RegisteredTool>>, RegistryError> {
        let mut meter = Meter::new(name, limits);
        let total = tools.len().saturating_add(already);
        meter.count(RegistrationLimit::Tools, "the registration", total)?;
        let servers: BTreeSet<&str> = tools
            .iter()
            .map(|t| t.server.as_str())
            .chain(
                self.tools
                    .values()
                    .filter(|t| !bare && t.name.plugin() == name)
                    .map(|t| t.name.server()),
            )
            .collect();
        meter.count(
            RegistrationLimit::Servers,
            "the registration",
            servers.len(),
        )?;
        drop(servers);
        let mut batch: BTreeMap<String, Arc<RegisteredTool>> = BTreeMap::new();
        for pending in tools {
            let tool_name = screen::tool_name(name, &pending, bare)?;
            if self.tools.contains_key(tool_name.as_str()) || batch.contains_key(tool_name.as_str())
            {
                return Err(RegistryError::Duplicate(tool_name.full));
            }
            let (schema, output_schema) =
                screen::compiled(&tool_name, &pending.definition, &mut meter, limits)?;
            let definition_hash =
                SchemaHash::from_digest(crate::pin::definition_hash(&pending.definition));
            let entry = RegisteredTool {
                definition_hash,
                name: tool_name,
                definition: pending.definition,
                schema,
                output_schema,
                source: source.clone(),
                derived: Derived::default(),
            };
            batch.insert(entry.name.full.clone(), Arc::new(entry));
        }
        Ok(batch)
    }

    /// The tool of this exact full name.
    pub fn get(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.tools.get(name)
    }

    /// Every tool, ordered by name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.tools.values()
    }

    /// Every registered source (including any that supplies no tools), by
    /// its name in the config, ordered by name.
    pub fn sources(&self) -> impl Iterator<Item = (&str, &Arc<dyn ToolSource>)> {
        self.sources
            .iter()
            .map(|(name, source)| (name.as_str(), source))
    }

    /// The source registered under `name`.
    pub fn source(&self, name: &str) -> Option<&Arc<dyn ToolSource>> {
        self.sources.get(name)
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_per_part() {
        let name = ToolName::new("fs", "workspace", "read_file").unwrap();
        assert_eq!(name.as_str(), "fs/workspace.read_file");
        assert_eq!(
            (name.plugin(), name.server(), name.tool()),
            ("fs", "workspace", "read_file")
        );
        assert!(ToolName::new("Fs", "workspace", "x").is_err());
        assert!(ToolName::new("fs", "work.space", "x").is_err());
        assert!(ToolName::new("fs", "workspace", "bad name").is_err());
        assert!(ToolName::new("fs", "workspace", "").is_err());
        assert!(ToolName::new("fs", "workspace", &"a".repeat(129)).is_err());
        assert!(ToolName::new("fs", "workspace", &"a".repeat(128)).is_ok());
        assert!(ToolName::new("fs", "workspace", "v1.Read-file_2").is_ok());
        assert!(ToolName::new(&"p".repeat(65), "s", "t").is_err());
    }

    #[derive(Debug)]
    pub(super) struct Nothing;
    impl ToolSource for Nothing {
        fn kind(&self) -> &'static str {
            "test"
        }
        fn call_limits(&self) -> crate::source::CallLimits {
            crate::source::CallLimits::new(std::time::Duration::from_secs(1), 1024)
        }
        fn list_tools(&self) -> crate::source::ListFuture<'_> {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn call<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: &'a serde_json::Value,
            _: std::time::Instant,
        ) -> crate::source::CallFuture<'a> {
            Box::pin(async { Err(crate::tool::CallError::Failed("nothing".into())) })
        }
    }

    pub(super) fn pending(server: &str, name: &str) -> PendingTool {
        PendingTool {
            server: server.to_owned(),
            definition: ToolDefinition {
                name: name.to_owned(),
                title: None,
                description: "d".to_owned(),
                input_schema: serde_json::json!({"type": "object"}),
                output_schema: None,
                annotations: Default::default(),
            },
        }
    }

    #[test]
    fn bare_names_are_tool_names_and_never_plugin_names() {
        let bare = ToolName::bare("create_plan").unwrap();
        assert_eq!(bare.as_str(), "create_plan");
        assert!(bare.is_bare());
        assert!(!ToolName::new("fs", "ws", "create_plan").unwrap().is_bare());
        assert!(
            ToolName::bare("fs/ws.create_plan").is_err(),
            "a / is refused"
        );
        assert!(ToolName::bare("").is_err());

        let limits = RegistrationLimits::default();
        let mut registry = Registry::new();
        registry
            .register_bare(
                "intrinsic",
                vec![pending("", "create_plan")],
                Arc::new(Nothing),
                &limits,
            )
            .unwrap();
        // A plugin may even be called like the label, and offer a tool of
        // the same name: its name holds a `/`, so nothing collides.
        registry
            .register(
                "intrinsic",
                vec![pending("x", "create_plan")],
                Arc::new(Nothing),
                &limits,
            )
            .unwrap();
        let names: Vec<&str> = registry.tools().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["create_plan", "intrinsic/x.create_plan"]);
        assert!(registry.get("create_plan").unwrap().name.is_bare());
        assert_eq!(
            registry.sources().count(),
            1,
            "bare sources are not plugins"
        );
        assert_eq!(registry.bare_sources().count(), 1);

        // Duplicates, a server part and a second source of the same label
        // are refused whole.
        let before = registry.len();
        let err = registry
            .register_bare(
                "other",
                vec![pending("", "emit_ui"), pending("", "create_plan")],
                Arc::new(Nothing),
                &limits,
            )
            .unwrap_err();
        assert_eq!(err, RegistryError::Duplicate("create_plan".into()));
        assert!(
            registry
                .register_bare("other", vec![pending("s", "x")], Arc::new(Nothing), &limits)
                .is_err()
        );
        assert!(
            registry
                .register_bare("intrinsic", vec![], Arc::new(Nothing), &limits)
                .is_err()
        );
        assert_eq!(registry.len(), before);
        assert!(registry.get("emit_ui").is_none());
    }

    #[test]
    fn a_new_registry_is_empty() {
        let registry = Registry::new();
        assert!(registry.is_empty());
        assert_eq!(registry.tools().count(), 0);
        assert!(registry.get("fs/workspace.read_file").is_none());
    }
}
