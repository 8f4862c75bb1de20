//! Tool names: `<plugin>/<server>.<tool>`, or a bare tool name, with the
//! parts kept apart so that nothing ever splits the string.
//!
//! Invariant: every part is checked when a name is built (plugin and
//! server `[a-z0-9_-]{1,64}`, tool `[A-Za-z0-9_.-]{1,128}`), so a tool
//! part never holds a `/` and a bare name can never equal a full one.

use std::fmt;

use super::RegistryError;

/// The longest plugin or server name.
pub const MAX_SEGMENT_LEN: usize = 64;
/// The longest tool name (MCP's limit).
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// A tool's full name, with its parts kept apart so that nothing ever needs
/// to split the string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolName {
    pub(super) full: String,
    plugin: String,
    server: String,
    tool: String,
}

impl ToolName {
    /// Checks each part and builds the name.
    pub fn new(plugin: &str, server: &str, tool: &str) -> Result<Self, RegistryError> {
        check_segment("plugin", plugin)?;
        check_segment("server", server)?;
        check_tool_name(tool)?;
        Ok(ToolName {
            full: format!("{plugin}/{server}.{tool}"),
            plugin: plugin.to_owned(),
            server: server.to_owned(),
            tool: tool.to_owned(),
        })
    }

    /// A bare name: the tool name alone (checked as a tool name, so it
    /// holds no `/`), with empty plugin and server parts. Only
    /// [`Registry::register_bare`](crate::registry::Registry::register_bare) registers such names.
    pub fn bare(tool: &str) -> Result<Self, RegistryError> {
        check_tool_name(tool)?;
        Ok(ToolName {
            full: tool.to_owned(),
            plugin: String::new(),
            server: String::new(),
            tool: tool.to_owned(),
        })
    }

    /// True for a bare name (see [`ToolName::bare`]).
    pub fn is_bare(&self) -> bool {
        self.plugin.is_empty()
    }

    /// `<plugin>/<server>.<tool>`, or the tool name alone for a bare name.
    pub fn as_str(&self) -> &str {
        &self.full
    }
    /// The plugin part, as the host config names it (empty for a bare name).
    pub fn plugin(&self) -> &str {
        &self.plugin
    }
    /// The server part (empty for a bare name).
    pub fn server(&self) -> &str {
        &self.server
    }
    /// The tool part, as the source knows it.
    pub fn tool(&self) -> &str {
        &self.tool
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

/// Checks a plugin or server name: 1 to 64 characters of `[a-z0-9_-]`.
pub fn check_segment(what: &'static str, name: &str) -> Result<(), RegistryError> {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
    let reason = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if name.len() > MAX_SEGMENT_LEN {
        Some(format!("it is longer than {MAX_SEGMENT_LEN} characters"))
    } else {
        name.chars()
            .find(|c| !ok_char(*c))
            .map(|c| format!("{c:?} is not allowed; use only a-z, 0-9, '_' and '-'"))
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(RegistryError::InvalidName {
            what,
            name: name.to_owned(),
            reason,
        }),
    }
}

/// Checks a tool name: 1 to 128 characters of `[A-Za-z0-9_.-]`.
pub fn check_tool_name(name: &str) -> Result<(), RegistryError> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    let reason = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if name.len() > MAX_TOOL_NAME_LEN {
        Some(format!("it is longer than {MAX_TOOL_NAME_LEN} characters"))
    } else {
        name.chars()
            .find(|c| !ok_char(*c))
            .map(|c| format!("{c:?} is not allowed; use only A-Z, a-z, 0-9, '_', '.' and '-'"))
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(RegistryError::InvalidName {
            what: "tool",
            name: name.to_owned(),
            reason,
        }),
    }
}
