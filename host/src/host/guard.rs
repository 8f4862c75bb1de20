//! A plugin's own tools behind their pins: a [`ToolSource`] that refuses a
//! tool whose definition differs from its pin before the plugin runs it.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use crate::plugin::Plugin;
use crate::source::{CallFuture, CallLimits, ToolSource};
use crate::tool::ToolDefinition;
use crate::watch::Watch;

/// A plugin whose tools are checked against pins, server by server.
#[derive(Debug)]
pub struct Guarded {
    inner: Arc<Plugin>,
    watches: BTreeMap<String, RwLock<Watch>>,
}

impl Guarded {
    /// `inner` with one watch per server in `servers`: each pinned as
    /// `pinned` and observed as `current`.
    pub fn new(
        inner: Arc<Plugin>,
        servers: Vec<(String, Vec<ToolDefinition>, Vec<ToolDefinition>)>,
    ) -> Guarded {
        let watches = servers
            .into_iter()
            .map(|(server, pinned, current)| {
                let mut watch = Watch::default();
                watch.pin(pinned);
                watch.observe(current);
                (server, RwLock::new(watch))
            })
            .collect();
        Guarded { inner, watches }
    }

    /// The plugin itself.
    pub fn plugin(&self) -> &Arc<Plugin> {
        &self.inner
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
            None => ToolSource::call(&*self.inner, server, tool, arguments, deadline),
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
