//! The registry as it changes while calls run.
//!
//! A [`Registry`] is immutable once shared. [`LiveRegistry`] holds the
//! current one: a call takes a snapshot when it starts and keeps it to the
//! end, and a change (re-registering a server after its schemas changed,
//! say) builds a new registry from the current one and swaps it in. So a
//! call in flight never sees half a change and never waits for one, and a
//! change never waits for calls: readers hold the lock only to clone an
//! `Arc`, writers only to replace it.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::{RegistrationLimits, Registry, RegistryError};
use crate::source::PendingTool;

/// The current registry, swapped whole on every change.
#[derive(Debug)]
pub struct LiveRegistry {
    current: RwLock<Arc<Registry>>,
    /// Serialises changes, so that two never build on the same snapshot
    /// and one's result is lost.
    writer: Mutex<()>,
}

impl LiveRegistry {
    /// Starts from `registry`.
    pub fn new(registry: Registry) -> Self {
        // Its search index (when it defers tools) is built here, not by
        // the first search.
        let _ = registry.search_index();
        LiveRegistry {
            current: RwLock::new(Arc::new(registry)),
            writer: Mutex::new(()),
        }
    }

    /// The registry as it is now; it does not change under its holder.
    pub fn snapshot(&self) -> Arc<Registry> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What `look` finds in the registry as it is now, without taking a
    /// snapshot: for a lookup that keeps only what it finds (the invoker's
    /// entry). A change waits while `look` runs, so `look` must be short
    /// and must not change this registry.
    pub(crate) fn with_current<R>(&self, look: impl FnOnce(&Registry) -> R) -> R {
        look(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Builds the next registry from the current one with `change` and
    /// swaps it in; on an error nothing changes. Calls keep running on the
    /// snapshots they hold while `change` runs.
    pub fn update<E>(
        &self,
        change: impl FnOnce(&Registry) -> Result<Registry, E>,
    ) -> Result<(), E> {
        let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let next = change(&self.snapshot())?;
        let _ = next.search_index();
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        Ok(())
    }

    /// Replaces the tools of server `server` of source `name` with `tools`,
    /// all or nothing (see [`Registry::with_server_replaced`]). Returns how
    /// many tools the server now has.
    pub fn replace_server(
        &self,
        name: &str,
        server: &str,
        tools: Vec<PendingTool>,
        limits: &RegistrationLimits,
    ) -> Result<usize, RegistryError> {
        let count = tools.len();
        self.update(|current| current.with_server_replaced(name, server, tools, limits))?;
        Ok(count)
    }
}
