//! What one source may register, and the meter that applies it.
//!
//! Every count and size here is chosen by a source and paid for by the
//! host: at every start (parsing, compiling, memory) and, through schemas,
//! at every call. The registry applies these limits to every kind of
//! source; a plugin's loader applies them once more to the text it
//! receives, before parsing anything.

use super::{RegistryError, ToolName};
use crate::schema::SchemaError;

/// How much one source (a plugin, with the MCP servers it declares) may
/// register. Every field is a count or size the source chooses and the host
/// pays for at every start (parsing, compiling schemas, memory) and, through
/// schemas, at every call. The defaults are far above what large real tool
/// servers use (the largest MCP servers we know of list about a hundred
/// tools, descriptions of a few KiB and schemas of tens of KiB); the config
/// raises them per plugin. Non-exhaustive: start from the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegistrationLimits {
    /// The most tools. Default 1024 (`limits.tools`).
    pub tools: usize,
    /// The most servers. Default 64 (`limits.servers`).
    pub servers: usize,
    /// The longest description, in bytes. Default 32 KiB
    /// (`limits.description_kib`).
    pub description_bytes: usize,
    /// The longest title, in bytes. Default 1 KiB (`limits.title_kib`).
    pub title_bytes: usize,
    /// The largest schema (input or output), in bytes of compact JSON.
    /// Default 256 KiB (`limits.schema_kib`).
    pub schema_bytes: usize,
    /// The highest evaluation cost of a schema: the most units of work
    /// validating a value may take per unit of the value's size, fixed
    /// when the schema is compiled. Default 20,000
    /// (`limits.schema_cost`).
    pub schema_cost: u64,
    /// The most bytes of names, descriptions, titles and schemas together.
    /// Default 8 MiB (`limits.registration_kib`).
    pub total_bytes: usize,
}

impl Default for RegistrationLimits {
    fn default() -> Self {
        RegistrationLimits {
            tools: 1024,
            servers: 64,
            description_bytes: 32 << 10,
            title_bytes: 1 << 10,
            schema_bytes: 256 << 10,
            schema_cost: crate::schema::DEFAULT_SCHEMA_COST,
            total_bytes: 8 << 20,
        }
    }
}

impl RegistrationLimits {
    /// The value of one limit.
    pub fn max(&self, limit: RegistrationLimit) -> u64 {
        let bytes = |n: usize| n as u64;
        match limit {
            RegistrationLimit::Tools => bytes(self.tools),
            RegistrationLimit::Servers => bytes(self.servers),
            RegistrationLimit::Description => bytes(self.description_bytes),
            RegistrationLimit::Title => bytes(self.title_bytes),
            RegistrationLimit::Schema => bytes(self.schema_bytes),
            RegistrationLimit::SchemaCost => self.schema_cost,
            RegistrationLimit::Total => bytes(self.total_bytes),
        }
    }

    /// The refusal of `what` (of `plugin`) for being `amount` over `limit`.
    pub fn refusal(
        &self,
        plugin: &str,
        what: &str,
        limit: RegistrationLimit,
        amount: u64,
        at_least: bool,
    ) -> RegistryError {
        RegistryError::OverLimit {
            plugin: plugin.to_owned(),
            // It may quote names not yet checked against the naming rules.
            what: crate::display::one_line(what).into_owned(),
            limit,
            amount,
            at_least,
            max: self.max(limit),
        }
    }
}

/// One registration limit, named as the config names it, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistrationLimit {
    /// [`RegistrationLimits::tools`].
    Tools,
    /// [`RegistrationLimits::servers`].
    Servers,
    /// [`RegistrationLimits::description_bytes`].
    Description,
    /// [`RegistrationLimits::title_bytes`].
    Title,
    /// [`RegistrationLimits::schema_bytes`].
    Schema,
    /// [`RegistrationLimits::schema_cost`].
    SchemaCost,
    /// [`RegistrationLimits::total_bytes`].
    Total,
}

impl RegistrationLimit {
    /// The key under `[plugins.<name>.limits]` that raises it.
    pub fn config_key(self) -> &'static str {
        match self {
            RegistrationLimit::Tools => "tools",
            RegistrationLimit::Servers => "servers",
            RegistrationLimit::Description => "description_kib",
            RegistrationLimit::Title => "title_kib",
            RegistrationLimit::Schema => "schema_kib",
            RegistrationLimit::SchemaCost => "schema_cost",
            RegistrationLimit::Total => "registration_kib",
        }
    }

    /// What the limit counts, for messages.
    pub fn unit(self) -> &'static str {
        match self {
            RegistrationLimit::Tools => "tools",
            RegistrationLimit::Servers => "servers",
            RegistrationLimit::SchemaCost => "cost units",
            _ => "bytes",
        }
    }
}

/// Applies one source's [`RegistrationLimits`] as its tools are checked.
pub(super) struct Meter<'a> {
    plugin: &'a str,
    limits: &'a RegistrationLimits,
    total: usize,
}

impl<'a> Meter<'a> {
    pub(super) fn new(plugin: &'a str, limits: &'a RegistrationLimits) -> Self {
        Meter {
            plugin,
            limits,
            total: 0,
        }
    }

    fn over(
        &self,
        what: String,
        limit: RegistrationLimit,
        amount: u64,
        at_least: bool,
    ) -> RegistryError {
        self.limits
            .refusal(self.plugin, &what, limit, amount, at_least)
    }

    /// Checks a count (tools, servers) against its limit.
    pub(super) fn count(
        &self,
        limit: RegistrationLimit,
        what: &str,
        n: usize,
    ) -> Result<(), RegistryError> {
        if n as u64 > self.limits.max(limit) {
            return Err(self.over(what.to_owned(), limit, n as u64, false));
        }
        Ok(())
    }

    /// Adds `bytes` to the registration's total.
    pub(super) fn spend(&mut self, bytes: usize) -> Result<(), RegistryError> {
        self.total = self.total.saturating_add(bytes);
        if self.total > self.limits.total_bytes {
            return Err(self.over(
                "the registration".into(),
                RegistrationLimit::Total,
                self.total as u64,
                true,
            ));
        }
        Ok(())
    }

    /// Checks a description or title and adds it to the total.
    pub(super) fn text(
        &mut self,
        tool: &ToolName,
        limit: RegistrationLimit,
        text: &str,
    ) -> Result<(), RegistryError> {
        let noun = match limit {
            RegistrationLimit::Title => "title",
            _ => "description",
        };
        if text.len() as u64 > self.limits.max(limit) {
            return Err(self.over(
                format!("tool {tool}: the {noun}"),
                limit,
                text.len() as u64,
                false,
            ));
        }
        self.spend(text.len())
    }

    /// Checks a schema's size and adds it to the total.
    pub(super) fn schema(
        &mut self,
        tool: &ToolName,
        which: &'static str,
        schema: &serde_json::Value,
    ) -> Result<(), RegistryError> {
        let max = self.limits.schema_bytes;
        let size = crate::tool::compact_json_len(schema, max);
        if size > max {
            return Err(self.over(
                format!("tool {tool}: the {which} schema"),
                RegistrationLimit::Schema,
                size as u64,
                true,
            ));
        }
        let depth = crate::tool::json_nesting(schema);
        if depth > crate::tool::MAX_SCHEMA_DEPTH {
            return Err(RegistryError::InvalidSchema {
                name: tool.full.clone(),
                which,
                reason: format!(
                    "it nests {depth} levels of arrays and objects, more than the {} a tool may (so that its pin fits the lock file)",
                    crate::tool::MAX_SCHEMA_DEPTH
                ),
            });
        }
        self.spend(size)
    }

    /// The error for a schema that did not compile or is over its cost.
    pub(super) fn schema_refused(
        &self,
        tool: &ToolName,
        which: &'static str,
        error: SchemaError,
    ) -> RegistryError {
        match error {
            SchemaError::TooCostly { cost, reason, .. } => self.over(
                format!("tool {tool}: the {which} schema's evaluation cost ({reason})"),
                RegistrationLimit::SchemaCost,
                cost,
                true,
            ),
            other => RegistryError::InvalidSchema {
                name: tool.full.clone(),
                which,
                // The reason may quote the schema, which the source chose.
                reason: crate::display::one_line(&other.to_string()).into_owned(),
            },
        }
    }
}
