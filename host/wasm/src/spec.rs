//! How a plugin is to be loaded ([`PluginSpec`]): what the host config
//! says about one plugin, before anything of it is read.

use std::path::PathBuf;

use crate::{Grants, Limits};

/// How a plugin is to be loaded: everything the host config says about it.
///
/// Non-exhaustive, as grants and limits are: start from
/// [`PluginSpec::new`] and set what differs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PluginSpec {
    /// The name the host config gives it: the first part of its tool names.
    pub name: String,
    /// The `.wasm` component file, or `builtin:NAME` for a plugin the host
    /// carries (`fs`, `shell`, `net`, `mcp`).
    pub wasm: PathBuf,
    /// If set, the component's sha256 (64 hex digits) must match.
    pub sha256: Option<String>,
    /// Where the component came from when `wasm` is a copy of it: the
    /// config's `oci://` reference, recorded in the lock beside its sha256.
    /// Never read to load it.
    pub source: Option<String>,
    /// What it may touch. Each grant is checked as it is made and as it
    /// is added (see [`Grants`]), so a spec holds only grants a config
    /// would accept: the builder has nothing left to refuse.
    pub grants: Grants,
    /// How much one call may use.
    pub limits: Limits,
    /// Its own configuration, passed to `register` and every `call`.
    pub config: serde_json::Value,
    /// How the names its HTTP requests use are resolved. Default: the
    /// system's resolver.
    pub resolver: std::sync::Arc<dyn crate::http::Resolve>,
    /// For tests: what answers the plugin's programs and HTTP requests
    /// instead of running and sending them (the `tiny-harness-testing`
    /// crate scripts one). None (the default, and always from a config
    /// file): the real thing.
    pub stand_in: Option<std::sync::Arc<dyn crate::StandIn>>,
    /// A plugin its author is developing (the config's `dev = true`): at
    /// every load, its tools, and its MCP servers' tools, are pinned again
    /// as they are instead of being held to the lock, and the host reports
    /// what changed. A host held to its lock (`--locked`) refuses it.
    pub dev: bool,
    /// All its tools are deferred (the config's `defer = true`): a search
    /// over the registry finds them (see the host's `[search]`).
    pub defer: bool,
}

impl PluginSpec {
    /// The component at `wasm`, loaded under `name`, unpinned, granted
    /// nothing, with the default limits and an empty config (`{}`).
    pub fn new(name: impl Into<String>, wasm: impl Into<PathBuf>) -> Self {
        PluginSpec {
            name: name.into(),
            wasm: wasm.into(),
            sha256: None,
            source: None,
            grants: Grants::default(),
            limits: Limits::default(),
            config: serde_json::json!({}),
            resolver: std::sync::Arc::new(crate::http::SystemResolver),
            stand_in: None,
            dev: false,
            defer: false,
        }
    }
}
