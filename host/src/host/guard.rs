//! A plugin's own tools, or a source of the embedder's own, behind their
//! pins: a [`ToolSource`] that refuses a tool whose definition differs
//! from its pin before the source runs it.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use crate::plugin::Plugin;
use crate::source::{CallFuture, CallLimits, ListFuture, ToolSource};
use crate::tool::{CallError, ToolDefinition};
use crate::watch::Watch;

/// A plugin, or a source of the embedder's own, whose tools are checked
/// against pins, server by server.
#[derive(Debug)]
pub struct Guarded {
    inner: Arc<dyn ToolSource>,
    /// The plugin, when the source is one.
    plugin: Option<Arc<Plugin>>,
    watches: BTreeMap<String, RwLock<Watch>>,
}

/// A server's name, its pinned tools and its tools as they are now.
pub type ServerTools = (String, Vec<ToolDefinition>, Vec<ToolDefinition>);

impl Guarded {
    /// `plugin` with one watch per server in `servers`: each pinned as
    /// `pinned` and observed as `current`.
    pub fn plugin_of(plugin: Arc<Plugin>, servers: Vec<ServerTools>) -> Guarded {
        let inner: Arc<dyn ToolSource> = plugin.clone();
        Guarded {
            plugin: Some(plugin),
            ..Guarded::new(inner, servers)
        }
    }

    /// `inner` with one watch per server in `servers`: each pinned as
    /// `pinned` and observed as `current`.
    pub fn new(inner: Arc<dyn ToolSource>, servers: Vec<ServerTools>) -> Guarded {
        let watches = servers
            .into_iter()
            .map(|(server, pinned, current)| {
                let mut watch = Watch::default();
                watch.pin(pinned);
                watch.observe(current);
                (server, RwLock::new(watch))
            })
            .collect();
        Guarded {
            inner,
            plugin: None,
            watches,
        }
    }

    /// The plugin, when the source is one.
    pub fn plugin(&self) -> Option<&Arc<Plugin>> {
        self.plugin.as_ref()
    }

    /// The source itself.
    pub fn source(&self) -> &Arc<dyn ToolSource> {
        &self.inner
    }

    /// Asks the source for its tools again and records them as each
    /// server's current tools, so that drift shows them and a tool that
    /// differs from its pin is refused. A server it no longer lists has
    /// none now; a server it did not have when it was added stays unknown
    /// until it is added again.
    pub async fn relist(&self) -> Result<(), CallError> {
        let mut current: BTreeMap<String, Vec<ToolDefinition>> = BTreeMap::new();
        for tool in self.inner.list_tools().await? {
            current
                .entry(tool.server)
                .or_default()
                .push(tool.definition);
        }
        for (server, watch) in &self.watches {
            let now = current.remove(server).unwrap_or_default();
            if let Ok(mut watch) = watch.write() {
                watch.observe(now);
            }
        }
        Ok(())
    }

    /// The watch of `server`, if the plugin has that server.
    pub fn watch(&self, server: &str) -> Option<&RwLock<Watch>> {
        self.watches.get(server)
    }

    /// The servers, by name.
    pub fn servers(&self) -> impl Iterator<Item = (&str, &RwLock<Watch>)> {
        self.watches.iter().map(|(s, w)| (s.as_str(), w))
    }
}

impl ToolSource for Guarded {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn call_limits(&self) -> CallLimits {
        self.inner.call_limits()
    }

    fn list_tools(&self) -> ListFuture<'_> {
        self.inner.list_tools()
    }

    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: &'a serde_json::Value,
        deadline: Instant,
    ) -> CallFuture<'a> {
        let refusal = self
            .watches
            .get(server)
            .and_then(|w| w.read().ok().and_then(|w| w.refusal(tool)));
        match refusal {
            Some(refusal) => Box::pin(std::future::ready(Err(refusal))),
            None => self.inner.call(server, tool, arguments, deadline),
        }
    }

    fn missing(&self, server: &str, tool: &str) -> Option<crate::source::Missing> {
        let new = self
            .watches
            .get(server)
            .is_some_and(|w| w.read().is_ok_and(|w| w.is_new(tool)));
        new.then_some(crate::source::Missing::NotPinned)
    }
}
