//! A slot on each registered entry for what a layer above the registry
//! derives from the entry once and keeps for the entry's life (today: the
//! provider adapters' encoded entries, in the host's `provider::cache`).
//!
//! Invariants:
//! - **True for the entry's life.** An entry never changes once
//!   registered (a change builds a new entry in a new snapshot), so what is
//!   derived from it never goes stale; and it is dropped with the entry, so
//!   it never outlives the snapshots that hold the entry.
//! - **The registry names nothing above it.** The slot holds any one
//!   `Send + Sync` type, chosen by its single user; the registry never
//!   reads it.

use std::any::Any;
use std::fmt;
use std::sync::OnceLock;

/// One value of a type of its user's choosing, made on first use.
#[derive(Default)]
pub struct Derived(OnceLock<Box<dyn Any + Send + Sync>>);

impl Derived {
    /// The value, made with `init` on first use. `None` if the slot holds
    /// a value of another type (a second user: give it a slot of its own).
    pub fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Option<&T> {
        self.0.get_or_init(|| Box::new(init())).downcast_ref()
    }
}

impl fmt::Debug for Derived {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Derived(filled)"
        } else {
            "Derived(empty)"
        })
    }
}
