//! Per-client tool sets: which registry tools a client lists and calls,
//! and under which names.
//!
//! Invariants:
//! - A client lists and calls only its set. A name outside it resolves to
//!   nothing, exactly as a name no tool has, so a client cannot tell a
//!   tool it may not see from one that does not exist.
//! - A tool's MCP name is the wire codec's (`WireRule::Mcp`), a
//!   function of its registry name alone: the same for every client, every
//!   run and every replica with the same registry. A client's `rename`
//!   replaces that name for that client only.
//! - The listing is in registry-name order, made once per registry
//!   snapshot and client ([`Views`]), never on a call; so is a search
//!   client's index over its set ([`crate::search`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rmcp::model::Tool;
use tiny_harness_host::{Provider, Registry};

use crate::config::{ClientEntry, ServeError};

/// A glob over registry names: `*` matches any run of characters
/// (including `/` and `.`), `?` any one; everything else itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(String);

impl Glob {
    /// The longest pattern accepted.
    pub const MAX_LEN: usize = 512;

    /// A glob, refused when empty or too long.
    pub fn new(pattern: &str) -> Result<Glob, String> {
        if pattern.is_empty() || pattern.len() > Glob::MAX_LEN {
            return Err(format!(
                "a glob is 1 to {} bytes (\"fs/*\", \"mcp/github.*\")",
                Glob::MAX_LEN
            ));
        }
        if pattern.chars().any(char::is_control) {
            return Err("a glob holds no control characters".to_owned());
        }
        Ok(Glob(pattern.to_owned()))
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `name` matches (the registry's glob rule:
    /// `tiny_harness_core::registry::glob_matches`).
    pub fn matches(&self, name: &str) -> bool {
        tiny_harness_core::registry::glob_matches(&self.0, name)
    }
}

/// Every client's entry, checked against a registry.
#[derive(Debug, Clone)]
pub(crate) struct ClientSets {
    entries: BTreeMap<String, ClientEntry>,
}

/// The client of the stdio transport.
pub const STDIO_CLIENT: &str = "stdio";
/// The client of an HTTP gateway on loopback without a tokens file.
pub const ANONYMOUS_CLIENT: &str = "anonymous";

impl ClientSets {
    /// The sets of `entries`, checked against `registry`: each set must
    /// match a tool, each rename must name a tool of the set and collide
    /// with no other name the client sees.
    pub(crate) fn new(
        entries: BTreeMap<String, ClientEntry>,
        registry: &Registry,
    ) -> Result<ClientSets, ServeError> {
        let sets = ClientSets { entries };
        let encoded = Provider::Mcp.encode_registry(registry);
        let names: BTreeMap<&str, &str> = encoded.codec.iter().collect();
        for (client, entry) in &sets.entries {
            let error = |why: String| ServeError::Config(format!("clients.{client}: {why}"));
            if let Some(globs) = &entry.tools {
                for glob in globs {
                    if !names.keys().any(|name| glob.matches(name)) {
                        return Err(error(format!(
                            "tools: {:?} matches no registered tool (`tiny-harness tools` lists them)",
                            glob.as_str()
                        )));
                    }
                }
            }
            let mut targets = HashMap::new();
            for (alias, target) in &entry.rename {
                if !names.contains_key(target.as_str()) || !entry.sees(target) {
                    return Err(error(format!(
                        "rename: {alias:?} names {target:?}, which is not a tool of this client"
                    )));
                }
                if let Some(other) = targets.insert(target.as_str(), alias.as_str()) {
                    return Err(error(format!(
                        "rename: {other:?} and {alias:?} both name {target:?}"
                    )));
                }
            }
            if !entry.search && !entry.always.is_empty() {
                return Err(error(
                    "always: lists tools apart for a search client only: add search = true"
                        .to_owned(),
                ));
            }
            entry
                .check_search_names()
                .map_err(|why| error(format!("rename: {why}")))?;
            for glob in &entry.always {
                if !names
                    .keys()
                    .any(|name| entry.sees(name) && glob.matches(name))
                {
                    return Err(error(format!(
                        "always: {:?} matches no tool of this client's set",
                        glob.as_str()
                    )));
                }
            }
            let view = View::new(&names, entry, &HashMap::new());
            if view.names.len() != view.count {
                return Err(error(
                    "rename: a new name is the name of another tool this client sees".to_owned(),
                ));
            }
        }
        Ok(sets)
    }

    /// Whether `client` has an entry.
    pub(crate) fn has(&self, client: &str) -> bool {
        self.entries.contains_key(client)
    }

    /// The names with an entry.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Every client's view of `registry`.
    pub(crate) fn views(&self, registry: &Registry) -> Views {
        let encoded = Provider::Mcp.encode_registry(registry);
        let names: BTreeMap<&str, &str> = encoded.codec.iter().collect();
        let entries: HashMap<&str, Tool> = encoded
            .tools
            .entries()
            .into_iter()
            .filter_map(|entry| {
                let tool: Tool = serde_json::from_value(entry.clone()).ok()?;
                let wire = entry.get("name")?.as_str()?;
                let name = encoded.codec.decode(wire).ok()?;
                Some((name, tool))
            })
            .collect();
        let everyone = Arc::new(View::new(&names, &ClientEntry::default(), &entries));
        let by_client = self
            .entries
            .iter()
            .map(|(client, entry)| {
                let view = View::new(&names, entry, &entries);
                let view = if entry.search {
                    crate::search::searched(view, entry, registry)
                } else {
                    view
                };
                (client.clone(), Arc::new(view))
            })
            .collect();
        Views {
            everyone,
            by_client,
        }
    }
}

impl ClientEntry {
    fn sees(&self, name: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|globs| globs.iter().any(|glob| glob.matches(name)))
    }
}

/// What one client sees of one registry snapshot.
#[derive(Debug, Default)]
pub(crate) struct View {
    /// The `tools/list` entries, in registry-name order.
    pub(crate) tools: Arc<Vec<Tool>>,
    /// The client's name for each tool, to its registry name.
    pub(crate) names: HashMap<String, String>,
    /// How many tools the set holds (more than `names` holds on a
    /// collision).
    count: usize,
    /// A search client's index and the tools it may find; its `tools` are
    /// then `search_tools`, `call_tool` and its `always` tools.
    pub(crate) search: Option<Arc<crate::search::SearchView>>,
}

impl View {
    fn new(
        names: &BTreeMap<&str, &str>,
        entry: &ClientEntry,
        entries: &HashMap<&str, Tool>,
    ) -> View {
        let aliases: HashMap<&str, &str> = entry
            .rename
            .iter()
            .map(|(alias, target)| (target.as_str(), alias.as_str()))
            .collect();
        let mut view = View::default();
        let mut tools = Vec::new();
        for (&name, &wire) in names {
            if !entry.sees(name) {
                continue;
            }
            let shown = aliases.get(name).copied().unwrap_or(wire);
            view.count += 1;
            view.names.insert(shown.to_owned(), name.to_owned());
            if let Some(tool) = entries.get(name) {
                let mut tool = tool.clone();
                tool.name = shown.to_owned().into();
                tools.push(tool);
            }
        }
        view.tools = Arc::new(tools);
        view
    }
}

/// Every client's view of one registry snapshot.
#[derive(Debug)]
pub(crate) struct Views {
    everyone: Arc<View>,
    by_client: HashMap<String, Arc<View>>,
}

impl Views {
    /// `client`'s view: its entry's, or every tool for a client without
    /// one (`stdio`, `anonymous`).
    pub(crate) fn of(&self, client: &str) -> Arc<View> {
        self.by_client.get(client).unwrap_or(&self.everyone).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        let glob = |p: &str| Glob::new(p).unwrap();
        assert!(glob("fs/*").matches("fs/workspace.read_file"));
        assert!(!glob("fs/*").matches("fsx/workspace.read_file"));
        assert!(glob("mcp/github.*").matches("mcp/github.search"));
        assert!(!glob("mcp/github.*").matches("mcp/gitlab.search"));
        assert!(glob("*").matches("anything/at.all"));
        assert!(glob("fs/ws.read_?ile").matches("fs/ws.read_file"));
        assert!(!glob("fs/ws.read").matches("fs/ws.read_file"));
        assert!(glob("*.*.*").matches("a/b.c.d"));
        assert!(!glob("*a*a*a*a*a*b").matches(&"a".repeat(200)));
        assert!(Glob::new("").is_err());
    }
}
