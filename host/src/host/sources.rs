//! Sources of an embedder's own in a host: tools that run in the
//! embedder's process, registered under a name of their own and pinned
//! like a plugin's ([`Host::add_source`], [`crate::HostBuilder::source`]).
//!
//! Invariants:
//! - All or nothing, as for a plugin: a source whose listing fails, whose
//!   tools the registry refuses or that `--locked` refuses leaves the
//!   registry, the lock and the host's sources as they were.
//! - A name is taken once, by a plugin or a source.

use std::sync::{Arc, PoisonError};

use crate::registry::{RegistrationLimits, RegistryError};
use crate::source::ToolSource;

use super::guard::Guarded;
use super::load::Pinning;
use super::{Host, HostError};

impl Host {
    /// Adds `source`, a tool set of the embedder's own, under `name` while
    /// the host runs: its tools (as [`ToolSource::list_tools`] lists them)
    /// are registered as `<name>/<server>.<tool>`, pinned in memory and in
    /// the lock like a plugin's, shown by [`Host::drift`] and pinned again
    /// by [`Host::reregister`]. A tool that differs from its pin in the
    /// lock is registered as pinned and refused (`schema_changed`) until
    /// it is pinned again; under `--locked`, any difference refuses the
    /// source. Calls in flight keep the registry they started with. On any
    /// error nothing of the source is registered or pinned. Writes the
    /// lock if the source added pins. Returns how many tools it added.
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use tiny_harness_host::{
    ///     CallFuture, HostBuilder, ListFuture, PendingTool, ToolCall, ToolDefinition, ToolResult,
    ///     ToolSource, boxed,
    /// };
    ///
    /// #[derive(Debug)]
    /// struct Clock;
    ///
    /// impl ToolSource for Clock {
    ///     fn list_tools(&self) -> ListFuture<'_> {
    ///         let now = ToolDefinition::new(
    ///             "now",
    ///             "The seconds since 1970.",
    ///             serde_json::json!({"type": "object"}),
    ///         );
    ///         boxed(async move { Ok(vec![PendingTool::new("clock", now)]) })
    ///     }
    ///
    ///     fn call<'a>(
    ///         &'a self,
    ///         _server: &'a str,
    ///         _tool: &'a str,
    ///         _arguments: &'a serde_json::Value,
    ///         _deadline: std::time::Instant,
    ///     ) -> CallFuture<'a> {
    ///         boxed(async move {
    ///             let since = std::time::UNIX_EPOCH.elapsed().unwrap_or_default();
    ///             Ok(ToolResult::text(since.as_secs().to_string()))
    ///         })
    ///     }
    /// }
    ///
    /// let host = HostBuilder::new().without_lock().build().await?;
    /// assert_eq!(host.add_source("app", Arc::new(Clock)).await?, 1);
    /// let call = ToolCall {
    ///     id: "c1".into(),
    ///     name: "app/clock.now".into(),
    ///     arguments: serde_json::json!({}),
    /// };
    /// assert!(!host.invoke(&call).await.is_error());
    /// # Ok(()) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap();
    /// ```
    pub async fn add_source(
        &self,
        name: &str,
        source: Arc<dyn ToolSource>,
    ) -> Result<usize, HostError> {
        let count = self.add(name, source).await?;
        self.state.save_lock()?;
        Ok(count)
    }

    /// [`Host::add_source`] without writing the lock.
    pub(super) async fn add(
        &self,
        name: &str,
        source: Arc<dyn ToolSource>,
    ) -> Result<usize, HostError> {
        let _loading = self.state.loading.lock().await;
        if self.state.loaded().guards.contains_key(name) {
            return Err(HostError::Registry {
                plugin: name.to_owned(),
                source: RegistryError::DuplicatePlugin(name.to_owned()),
            });
        }
        let before = self.state.with_lock(|lock| lock.clone());
        let added = self.add_whole(name, source).await;
        if added.is_err()
            && let Some(before) = before
        {
            *self.state.lock_state() = Some(before);
        }
        added
    }

    async fn add_whole(&self, name: &str, source: Arc<dyn ToolSource>) -> Result<usize, HostError> {
        let tools = source
            .list_tools()
            .await
            .map_err(|why| HostError::Listing {
                name: name.to_owned(),
                source: why,
            })?;
        let (servers, pending) = self.own_servers(name, &[], tools, Pinning::Held)?;
        let guard = Arc::new(Guarded::new(source, servers));
        let limits = RegistrationLimits::default();
        let mut count = 0;
        self.live_registry()
            .update(|current| {
                let mut next = current.clone();
                count = next.register(name, pending, guard.clone(), &limits)?;
                Ok(next)
            })
            .map_err(|source| HostError::Registry {
                plugin: name.to_owned(),
                source,
            })?;
        let mut loaded = self
            .state
            .loaded
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        loaded.guards.insert(name.to_owned(), guard);
        loaded.limits.insert(name.to_owned(), limits);
        Ok(count)
    }

    /// Every source of the embedder's own added so far, by name, in name
    /// order (the plugins are [`Host::plugins`]).
    pub fn sources(&self) -> Vec<(String, Arc<dyn ToolSource>)> {
        self.state
            .loaded()
            .guards
            .iter()
            .filter(|(_, guard)| guard.plugin().is_none())
            .map(|(name, guard)| (name.clone(), guard.source().clone()))
            .collect()
    }
}
