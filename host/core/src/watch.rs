//! What one source's tools are pinned as, and how what its server lists
//! now differs (the rug-pull check).
//!
//! Invariants:
//! - A pinned tool whose definition hash differs from the pin, or that is
//!   no longer listed, is refused (`schema_changed`) until it is pinned
//!   again; a tool listed but not pinned is not callable at all.
//! - Retries follow the pinned annotations, never the listed ones: a
//!   server cannot make a tool retryable by changing its hints.

use std::collections::BTreeMap;

use crate::pin::{changed_fields, definition_hash};
use crate::tool::{Annotations, CallError, ToolDefinition};

/// One pinned definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Pin {
    /// Its definition hash.
    pub hash: String,
    /// The definition.
    pub definition: ToolDefinition,
}

/// How a pinned tool differs from what the server lists now.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Change {
    /// It is listed with another definition.
    Changed {
        /// The definition listed now.
        current: ToolDefinition,
        /// Its hash.
        hash: String,
        /// Which parts differ.
        fields: Vec<&'static str>,
    },
    /// It is no longer listed.
    Removed,
}

/// What differs between the pins and the last listing.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Drift {
    /// Pinned tools that changed or went, with their pins.
    pub changed: Vec<(Pin, Change)>,
    /// Tools listed that are not pinned.
    pub added: Vec<ToolDefinition>,
}

impl Drift {
    /// True when the listing is exactly what is pinned.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.added.is_empty()
    }
}

/// The pins of one source and what differs from them.
#[derive(Debug, Default)]
pub struct Watch {
    pinned: BTreeMap<String, Pin>,
    changed: BTreeMap<String, Change>,
    added: BTreeMap<String, ToolDefinition>,
    listed: Option<Vec<ToolDefinition>>,
}

impl Watch {
    /// Pins exactly `tools`, forgetting earlier pins, and checks them
    /// against the last listing, if there is one.
    pub fn pin(&mut self, tools: Vec<ToolDefinition>) {
        self.pinned = tools
            .into_iter()
            .map(|definition| {
                let pin = Pin {
                    hash: definition_hash(&definition),
                    definition,
                };
                (pin.definition.name.clone(), pin)
            })
            .collect();
        if let Some(listed) = self.listed.take() {
            self.observe(listed);
        } else {
            self.changed.clear();
            self.added.clear();
        }
    }

    /// Records what the server lists now.
    pub fn observe(&mut self, listed: Vec<ToolDefinition>) {
        let mut changed = BTreeMap::new();
        let mut added = BTreeMap::new();
        let by_name: BTreeMap<&str, &ToolDefinition> =
            listed.iter().map(|t| (t.name.as_str(), t)).collect();
        for (name, pin) in &self.pinned {
            match by_name.get(name.as_str()) {
                None => {
                    changed.insert(name.clone(), Change::Removed);
                }
                Some(current) => {
                    let hash = definition_hash(current);
                    if hash != pin.hash {
                        changed.insert(
                            name.clone(),
                            Change::Changed {
                                fields: changed_fields(&pin.definition, current),
                                current: (*current).clone(),
                                hash,
                            },
                        );
                    }
                }
            }
        }
        for tool in &listed {
            if !self.pinned.contains_key(&tool.name) {
                added.insert(tool.name.clone(), tool.clone());
            }
        }
        self.changed = changed;
        self.added = added;
        self.listed = Some(listed);
    }

    /// Why `tool` may not be called now, if it may not.
    pub fn refusal(&self, tool: &str) -> Option<CallError> {
        let pin = self.pinned.get(tool);
        match (pin, self.changed.get(tool)) {
            (Some(pin), Some(Change::Changed { hash, fields, .. })) => {
                Some(CallError::SchemaChanged {
                    pinned: pin.hash.clone(),
                    current: Some(hash.clone()),
                    fields: fields.clone(),
                })
            }
            (Some(pin), Some(Change::Removed)) => Some(CallError::SchemaChanged {
                pinned: pin.hash.clone(),
                current: None,
                fields: Vec::new(),
            }),
            (Some(_), None) => None,
            (None, _) => Some(CallError::Unavailable(
                "the tool is not pinned; register the server again to use it".to_owned(),
            )),
        }
    }

    /// True when the last listing offers `tool` and it is not pinned.
    pub fn is_new(&self, tool: &str) -> bool {
        self.added.contains_key(tool)
    }

    /// The pinned annotations of `tool`.
    pub fn annotations(&self, tool: &str) -> Option<Annotations> {
        self.pinned.get(tool).map(|p| p.definition.annotations)
    }

    /// The pinned definitions, by name.
    pub fn pinned(&self) -> Vec<ToolDefinition> {
        self.pinned.values().map(|p| p.definition.clone()).collect()
    }

    /// The last listing, if the server has been listed.
    pub fn listed(&self) -> Option<&[ToolDefinition]> {
        self.listed.as_deref()
    }

    /// What differs from the pins.
    pub fn drift(&self) -> Drift {
        Drift {
            changed: self
                .changed
                .iter()
                .filter_map(|(name, change)| {
                    self.pinned
                        .get(name)
                        .map(|pin| (pin.clone(), change.clone()))
                })
                .collect(),
            added: self.added.values().cloned().collect(),
        }
    }
}
