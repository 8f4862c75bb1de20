//! Search clients: a client whose entry says `search = true` is listed
//! two tools of the gateway's own, `search_tools` and `call_tool`, and
//! the `always` tools of its set, instead of its whole set; it finds the
//! rest by searching and runs them through `call_tool` (or by name).
//!
//! Invariants:
//! - A client finds only tools of its set, less those it is listed
//!   directly: each search client's index is built from its own view
//!   ([`searched`], from [`crate::clients::ClientSets::views`]), once per
//!   registry snapshot, never on a call. A reload or a registry change
//!   gets new views, so new indexes.
//! - `call_tool` runs exactly what a direct `tools/call` of the name it
//!   gives runs ([`Gateway::call`]): a name outside the client's set is
//!   `unknown_tool`, as for a tool that does not exist, and nothing runs.
//! - The gateway's two tools are named without a `/`, so no registry name
//!   (nor its wire name, which holds `__`) is ever one of them; a rename
//!   to one of them is refused for a search client
//!   ([`ClientEntry::check_search_names`]).
//! - Every search a client runs is given to the invoker's recorder (the
//!   journal's `"event": "search"` line: the query's sha256 and each
//!   found tool's registry name and definition hash); arguments refused
//!   before the search are not.
//! - What a 2025-11-25 session keeps of its searches ([`Found`]) is at
//!   most the client's searchable set, checked against the current view at
//!   every search; a stateless 2026-07-28 request keeps nothing.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Value, json};
use tiny_harness_core::invoke::{Disclosed, Disclosure};
use tiny_harness_core::schema::CompiledSchema;
use tiny_harness_core::search::{DEFAULT_RESULTS, MAX_QUERY_BYTES, MAX_RESULTS, SearchIndex};
use tiny_harness_host::{CallError, CallOutcome, Caller, Registry};

use crate::clients::View;
use crate::config::ClientEntry;
use crate::gateway::{Gateway, result_of};

/// The name of the gateway's search tool: the host's own search tool's
/// name, which a model meets through a provider too.
pub(crate) const SEARCH_TOOLS: &str = tiny_harness_host::SEARCH_TOOL;
/// The name of the gateway's tool that runs a tool found.
pub(crate) const CALL_TOOL: &str = "call_tool";
/// The names a search client's own tools take.
pub(crate) const OWN_TOOLS: [&str; 2] = [SEARCH_TOOLS, CALL_TOOL];

/// What a search client may find in one registry snapshot.
#[derive(Debug)]
pub(crate) struct SearchView {
    /// The index over the tools below, with their pinned definition
    /// hashes.
    index: SearchIndex,
    /// Each tool a search may find, as the client sees it (under its
    /// name for it), by registry name.
    tools: HashMap<String, Tool>,
}

/// `view` (a search client's whole set) made a search client's: its
/// listing becomes `search_tools`, `call_tool` and the tools of the set
/// that `entry.always` or the host's `[search] always` patterns match, in
/// registry-name order; the others are indexed. Every name of the set
/// stays callable.
pub(crate) fn searched(mut view: View, entry: &ClientEntry, registry: &Registry) -> View {
    let deferral = registry.deferral();
    let always = |name: &str| {
        entry.always.iter().any(|glob| glob.matches(name))
            || deferral.always.iter().any(|pattern| pattern.matches(name))
    };
    let mut listed: Vec<Tool> = own_tools().to_vec();
    let mut tools = HashMap::new();
    for tool in view.tools.iter() {
        let Some(name) = view.names.get(&*tool.name) else {
            continue;
        };
        if always(name) {
            listed.push(tool.clone());
        } else {
            tools.insert(name.clone(), tool.clone());
        }
    }
    let index = tiny_harness_core::registry::index_tools(
        registry
            .tools()
            .filter(|tool| tools.contains_key(tool.name.as_str())),
    );
    view.tools = Arc::new(listed);
    view.search = Some(Arc::new(SearchView { index, tools }));
    view
}

/// The two tools of the gateway's own, as listed.
fn own_tools() -> &'static [Tool; 2] {
    static TOOLS: OnceLock<[Tool; 2]> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let tool = |value: Value| serde_json::from_value::<Tool>(value).unwrap_or_default();
        [
            tool(json!({
                "name": SEARCH_TOOLS,
                "title": "Search tools",
                "description": "Finds the tools of this server that fit what you need, best \
                    first: each one's name, title, description and input schema. Run one with \
                    call_tool, giving its name and its arguments.",
                "inputSchema": search_input(),
                "outputSchema": {
                    "type": "object",
                    "properties": {"tools": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "title": {"type": "string"},
                            "description": {"type": "string"},
                            "inputSchema": {"type": "object"},
                        },
                        "required": ["name", "inputSchema"],
                    }}},
                    "required": ["tools"],
                },
                "annotations": {
                    "readOnlyHint": true,
                    "idempotentHint": true,
                    "openWorldHint": false,
                },
            })),
            tool(json!({
                "name": CALL_TOOL,
                "title": "Call a tool",
                "description": "Runs a tool that search_tools found, by its name, with its \
                    arguments, and returns that tool's result.",
                "inputSchema": call_input(),
            })),
        ]
    })
}

/// `search_tools`' input schema.
fn search_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": format!(
                    "What the tool should do, in a few words: 1 to {MAX_QUERY_BYTES} bytes of \
                     plain text."
                ),
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "default": DEFAULT_RESULTS,
                "description": format!(
                    "The most tools to return, 1 to {MAX_RESULTS} (default {DEFAULT_RESULTS})."
                ),
            },
        },
        "required": ["query"],
        "additionalProperties": false,
    })
}

/// `call_tool`'s input schema.
fn call_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "description": "The tool's name, as search_tools gave it.",
            },
            "arguments": {
                "type": "object",
                "default": {},
                "description": "The tool's arguments, as its input schema says (default {}).",
            },
        },
        "required": ["name"],
        "additionalProperties": false,
    })
}

/// Checks `arguments` against the input schema `which` makes (compiled
/// once): the refusal a tool's invalid arguments get, named `tool`.
fn check(
    tool: &str,
    id: &str,
    arguments: &Value,
    which: fn() -> Value,
    compiled: &'static OnceLock<Option<CompiledSchema>>,
) -> Result<(), Box<CallOutcome>> {
    let refuse = |error: CallError| Err(Box::new(CallOutcome::new(id, tool, Err(error))));
    match compiled.get_or_init(|| CompiledSchema::compile_default(&which()).ok()) {
        Some(schema) => match schema.validate(arguments) {
            Ok(()) => Ok(()),
            Err(violations) => refuse(CallError::InvalidArguments { violations }),
        },
        // The schemas above compile (a unit test says so).
        None => refuse(CallError::Unavailable(format!(
            "{tool}'s input schema does not compile"
        ))),
    }
}

/// The tool a `call_tool` call names and its arguments (`{}` when it
/// gives none), or the refusal of its arguments (as `invalid_arguments`,
/// nothing run).
pub(crate) fn unwrap_call(
    id: &str,
    mut arguments: Value,
) -> Result<(String, Value), Box<CallOutcome>> {
    static SCHEMA: OnceLock<Option<CompiledSchema>> = OnceLock::new();
    check(CALL_TOOL, id, &arguments, call_input, &SCHEMA)?;
    let name = arguments
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let inner = arguments
        .get_mut("arguments")
        .map(Value::take)
        .unwrap_or_else(|| json!({}));
    Ok((name, inner))
}

/// What a `search_tools` call did.
#[derive(Debug)]
pub(crate) struct Searched {
    /// Its MCP result.
    pub(crate) result: CallToolResult,
    /// Its outcome code, for the log and the metrics.
    pub(crate) code: &'static str,
    /// The registry names of the tools found, best first.
    pub(crate) found: Vec<String>,
    /// The view searched.
    pub(crate) view: Arc<View>,
}

impl Gateway {
    /// Runs `client`'s `search_tools` call `id` over its view of the
    /// registry as it is now: its arguments checked against the tool's
    /// input schema (`invalid_arguments`), its query checked (a tool error
    /// that says what to change), then the best matches of its set by the
    /// default ranking, recorded with their definition hashes.
    pub(crate) fn search(&self, client: &str, id: &str, arguments: &Value) -> Searched {
        static SCHEMA: OnceLock<Option<CompiledSchema>> = OnceLock::new();
        let served = self.served();
        let view = served.view(client);
        let refused = |outcome: &CallOutcome, view: Arc<View>| Searched {
            result: result_of(outcome),
            code: outcome.result.as_ref().err().map_or("ok", CallError::code),
            found: Vec::new(),
            view,
        };
        let Some(search) = view.search.clone() else {
            let unknown = CallError::UnknownTool {
                name: SEARCH_TOOLS.to_owned(),
            };
            return refused(&CallOutcome::new(id, SEARCH_TOOLS, Err(unknown)), view);
        };
        if let Err(outcome) = check(SEARCH_TOOLS, id, arguments, search_input, &SCHEMA) {
            return refused(&outcome, view);
        }
        let query = arguments
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // An integer of 1 to MAX_RESULTS, the schema says (5.0 is one).
        let limit = arguments
            .get("limit")
            .and_then(Value::as_f64)
            .map_or(DEFAULT_RESULTS, |limit| limit as usize);
        let hits = match search.index.search(query, limit) {
            Ok(hits) => hits,
            Err(why) => {
                return Searched {
                    result: CallToolResult::error(vec![ContentBlock::text(why.to_string())]),
                    code: "tool_error",
                    found: Vec::new(),
                    view,
                };
            }
        };
        let disclosed: Vec<Disclosed<'_>> = hits
            .iter()
            .map(|hit| Disclosed::new(&hit.name, &hit.definition_hash))
            .collect();
        served.host.invoker().record_disclosure(
            &Disclosure::Search {
                id,
                query,
                found: &disclosed,
            },
            Caller::new(Some(SEARCH_TOOLS), Some(client)),
        );
        let tools: Vec<Value> = hits
            .iter()
            .filter_map(|hit| search.tools.get(&hit.name).map(found_entry))
            .collect();
        Searched {
            result: CallToolResult::structured(json!({ "tools": tools })),
            code: "ok",
            found: hits.into_iter().map(|hit| hit.name).collect(),
            view,
        }
    }
}

/// A found tool as `search_tools` returns it: the client's name for it,
/// its title if any, its description and its input schema.
fn found_entry(tool: &Tool) -> Value {
    let mut entry = serde_json::Map::new();
    entry.insert("name".to_owned(), json!(tool.name));
    if let Some(title) = &tool.title {
        entry.insert("title".to_owned(), json!(title));
    }
    if let Some(description) = &tool.description {
        entry.insert("description".to_owned(), json!(description));
    }
    entry.insert(
        "inputSchema".to_owned(),
        Value::Object((*tool.input_schema).clone()),
    );
    Value::Object(entry)
}

/// The tools a 2025-11-25 session's searches found, listed after its
/// fixed tools, in the order they were first found. At most the client's
/// searchable set: a name is kept only while the current view can find
/// it.
#[derive(Debug, Default)]
pub(crate) struct Found(Mutex<Seen>);

#[derive(Debug, Default)]
struct Seen {
    /// The client whose searches these are (a session has one).
    client: Option<Arc<str>>,
    /// Registry names, in the order found.
    order: Vec<String>,
    /// The same, to look up.
    listed: HashSet<String>,
}

impl Found {
    /// Keeps what `client` found (registry names) in `view`; whether one
    /// was not listed yet (the session's tool list changed).
    pub(crate) fn add(&self, client: &Arc<str>, view: &View, found: &[String]) -> bool {
        let Some(search) = &view.search else {
            return false;
        };
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.client.as_deref() != Some(&**client) {
            *seen = Seen {
                client: Some(client.clone()),
                ..Seen::default()
            };
        }
        // What the set no longer holds (after a reload) goes first.
        if seen
            .order
            .iter()
            .any(|name| !search.tools.contains_key(name))
        {
            seen.order.retain(|name| search.tools.contains_key(name));
            seen.listed = seen.order.iter().cloned().collect();
        }
        let mut changed = false;
        for name in found {
            if search.tools.contains_key(name) && seen.listed.insert(name.clone()) {
                seen.order.push(name.clone());
                changed = true;
            }
        }
        changed
    }

    /// The tools `client` found that `view` still holds, in the order
    /// found, as it sees them.
    pub(crate) fn tools(&self, client: &str, view: &View) -> Vec<Tool> {
        let Some(search) = &view.search else {
            return Vec::new();
        };
        let seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.client.as_deref() != Some(client) {
            return Vec::new();
        }
        seen.order
            .iter()
            .filter_map(|name| search.tools.get(name).cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_tools_schemas_compile_and_check_what_the_docs_say() {
        for schema in [search_input(), call_input()] {
            assert!(CompiledSchema::compile_default(&schema).is_ok());
        }
        let tools = own_tools();
        assert_eq!(tools[0].name, SEARCH_TOOLS);
        assert!(tools[0].output_schema.is_some());
        assert_eq!(tools[1].name, CALL_TOOL);
        assert!(!tools[0].input_schema.is_empty() && !tools[1].input_schema.is_empty());
        assert!(unwrap_call("1", json!({"name": "x", "arguments": []})).is_err());
        assert!(unwrap_call("1", json!({"arguments": {}})).is_err());
        let (name, arguments) = unwrap_call("1", json!({"name": "x"})).unwrap();
        assert_eq!((name.as_str(), arguments), ("x", json!({})));
    }
}
