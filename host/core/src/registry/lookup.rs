//! Answers about names that are not registered tools: why a call to one
//! answers otherwise than `unknown_tool`, and which server a name belongs
//! to.
//!
//! Invariant: a name is a model's (or a user's) text; one that is not a
//! well-formed `<plugin>/<server>.<tool>` is simply unknown, never split
//! into parts that name something else.

use super::{Registry, ToolName};

impl Registry {
    /// Why a call to `name`, which is not registered, answers otherwise
    /// than `unknown_tool`, as its server's source says (see
    /// [`ToolSource::missing`](crate::source::ToolSource::missing)). `name` is a model's text: one that is not
    /// a well-formed `<plugin>/<server>.<tool>` is simply unknown.
    pub fn missing(&self, name: &str) -> Option<crate::tool::CallError> {
        if self.tools.contains_key(name) {
            return None;
        }
        // Plugin and server names hold neither `/` nor `.`, so the first
        // of each ends them.
        let (plugin, rest) = name.split_once('/')?;
        let (server, tool) = rest.split_once('.')?;
        ToolName::new(plugin, server, tool).ok()?;
        self.servers
            .get(&(plugin.to_owned(), server.to_owned()))
            .or_else(|| self.sources.get(plugin))
            .and_then(|source| source.missing(server, tool))
            .map(|missing| match missing {
                crate::source::Missing::NotPinned => crate::tool::CallError::NotPinned {
                    name: name.to_owned(),
                },
                crate::source::Missing::Unavailable(why) => {
                    crate::tool::CallError::Unavailable(why)
                }
                crate::source::Missing::LoginRequired(why) => {
                    crate::tool::CallError::LoginRequired(why)
                }
            })
    }

    /// The plugin and server `name` belongs to: a registered tool's, or,
    /// for a name that is not registered, the server it names if the
    /// registry has that server (one that failed to start, say). `None`
    /// for an intrinsic, a name of no registered server, or one that is
    /// not a well-formed `<plugin>/<server>.<tool>`.
    pub fn server_of(&self, name: &str) -> Option<(&str, &str)> {
        if let Some(tool) = self.tools.get(name) {
            return (!tool.name.is_bare()).then(|| (tool.name.plugin(), tool.name.server()));
        }
        let (plugin, rest) = name.split_once('/')?;
        let (server, tool) = rest.split_once('.')?;
        ToolName::new(plugin, server, tool).ok()?;
        self.servers
            .get_key_value(&(plugin.to_owned(), server.to_owned()))
            .map(|((plugin, server), _)| (plugin.as_str(), server.as_str()))
    }
}
