//! Deferred tools and the search that finds them, in each provider's own
//! form ([`SearchForm`]: the host's search, or the provider's).
//!
//! A request over a registry that defers some tools offers:
//! - Anthropic: every tool, the deferred ones with `"defer_loading": true`,
//!   and the search: the host's as a client tool (`search_tools`, whose
//!   result is a `tool_reference` block per tool found) or the server's
//!   `tool_search_tool_bm25_20251119` / `tool_search_tool_regex_20251119`.
//! - OpenAI Responses: with the host's search, the tools not deferred and
//!   a client-executed `tool_search` whose `tool_search_call`s are
//!   answered with a `tool_search_output` holding the found tools'
//!   definitions; with the provider's, the tools not deferred, the hosted
//!   `tool_search`, and the deferred tools with `"defer_loading": true` in
//!   one `namespace` per plugin and server.
//! - The others (Chat Completions, Gemini, Bedrock): the tools not
//!   deferred, the host's `search_tools` function, then the deferred tools
//!   found so far ([`EncodedRequest::loaded`]), in the order they were
//!   found: appended at the end, so that everything before them is the
//!   same bytes as in the request before.
//! - MCP (a gateway's listing): every tool, as without deferral (the
//!   gateway's search clients have their own form).
//!
//! Invariants:
//! - **Every tool is in the codec.** A deferred tool keeps its wire name
//!   whether or not the request lists it, so a call of a tool the model
//!   found (or guessed) decodes and runs as any call does: it is
//!   registered and pinned, and validated like every other.
//! - **No search without deferral.** A registry that defers nothing is
//!   encoded exactly as before, with no search tool: the host has no tool
//!   of its own by default.
//! - The host's search tool is the bare name [`SEARCH_TOOL`] in the
//!   codec; no registered tool has it (registered names hold a `/`, and
//!   no intrinsic is so named), and a registry that somehow holds it gets
//!   no host search.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::Provider;
use super::cache::{Encoded, ToolCache};
use super::encode::{EncodedRequest, Entries};
use super::gemini::GeminiSchema;
use super::payload::ToolsPayload;
use crate::wire::WireCodec;
use tiny_harness_core::registry::{RegisteredTool, Registry, SearchForm};

/// The name of the host's search tool, in the registry's terms (and, as
/// no other name clashes with it, its wire name for every provider).
pub const SEARCH_TOOL: &str = "search_tools";

/// What the host's search tool tells the model.
pub const SEARCH_DESCRIPTION: &str = "Finds tools that are available but not listed yet. \
Describe what you need to do in a few words (for example \"read a file\" or \"open a GitHub issue\"); \
the best matching tools are returned, best first, and can be called by name from then on.";

/// The input schema of the host's search tool: a query of 1 to 512 bytes
/// and an optional number of results, 1 to 20.
pub fn search_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": tiny_harness_core::search::MAX_QUERY_BYTES,
                "description": "What the tool should do, in a few words."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": tiny_harness_core::search::MAX_RESULTS,
                "description": "How many tools to return (default 5)."
            }
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

/// The search a request offers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OfferedSearch {
    /// The form it takes for this request's provider: [`SearchForm::Host`]
    /// for a provider without a search of its own, whatever was asked.
    pub form: SearchForm,
    /// How many tools the registry defers.
    pub deferred: usize,
}

impl OfferedSearch {
    /// Whether the host answers the searches (the model calls
    /// [`SEARCH_TOOL`]); otherwise the provider does.
    pub fn by_host(&self) -> bool {
        self.form == SearchForm::Host
    }
}

/// The form `asked` takes for `provider`.
fn form_for(provider: Provider, asked: SearchForm) -> SearchForm {
    match provider {
        Provider::Anthropic | Provider::OpenAiResponses => asked,
        _ => SearchForm::Host,
    }
}

/// `registry`'s tools for `provider`, with the deferred tools and their
/// search in the provider's form, and `loaded` (registry names of
/// deferred tools found earlier) listed after them where the provider
/// needs them listed. Names in `loaded` that are not deferred tools of
/// `registry` are left out.
pub(super) fn encode_offer(
    provider: Provider,
    registry: &Registry,
    loaded: &[String],
    gemini: GeminiSchema,
) -> EncodedRequest {
    let tools: Vec<&RegisteredTool> = registry.tools().map(|tool| &**tool).collect();
    let deferred: Vec<bool> = tools
        .iter()
        .map(|tool| registry.is_deferred(tool.name.as_str()))
        .collect();
    let count = deferred.iter().filter(|d| **d).count();
    if count == 0 || provider == Provider::Mcp {
        return super::encode::encode(provider, tools, gemini);
    }
    let form = form_for(provider, registry.deferral().form);
    let host_search = form == SearchForm::Host && registry.get(SEARCH_TOOL).is_none();
    let rule = provider.rule();
    let caches: Vec<&ToolCache> = tools.iter().map(|tool| ToolCache::of(tool)).collect();
    let mut own: Vec<(Arc<str>, Arc<str>)> = caches
        .iter()
        .map(|cache| (cache.name().clone(), cache.wire(rule).clone()))
        .collect();
    if host_search {
        own.push((Arc::from(SEARCH_TOOL), rule.wire_name(SEARCH_TOOL).into()));
    }
    let codec = WireCodec::from_own_names(rule, own);
    let entries = Entries::new(provider, &codec, gemini);
    let search_wire = host_search
        .then(|| codec.encode(SEARCH_TOOL).map(str::to_owned))
        .flatten();
    let mut out = Vec::with_capacity(tools.len() + 1);
    let mut rewrites = Vec::new();
    let mut push = |entry: Arc<Encoded>, out: &mut Vec<Arc<Encoded>>| {
        if let Some(changed) = &entry.rewrites {
            rewrites.push(changed.clone());
        }
        out.push(entry);
    };
    let mut kept_loaded = Vec::new();
    let listed = tools.iter().zip(&caches).zip(&deferred);
    match (provider, form) {
        (Provider::Anthropic, _) => {
            for ((tool, cache), deferred) in listed {
                let entry = if *deferred {
                    entries.deferred(tool, cache)
                } else {
                    entries.of(tool, cache)
                };
                push(entry, &mut out);
            }
            push_search(&mut out, provider, form, search_wire.as_deref(), gemini);
        }
        (Provider::OpenAiResponses, SearchForm::Host) => {
            for ((tool, cache), _) in listed.filter(|(_, deferred)| !**deferred) {
                push(entries.of(tool, cache), &mut out);
            }
            push_search(&mut out, provider, form, search_wire.as_deref(), gemini);
        }
        (Provider::OpenAiResponses, _) => {
            let mut spaces: BTreeMap<String, (String, Vec<Value>)> = BTreeMap::new();
            for ((tool, cache), deferred) in listed {
                if !*deferred {
                    push(entries.of(tool, cache), &mut out);
                    continue;
                }
                let (key, name) = namespace_of(tool, &rule);
                let space = spaces.entry(name).or_insert_with(|| (key, Vec::new()));
                space.1.push(entries.deferred(tool, cache).value());
            }
            out.push(search_entry(provider, form, None, gemini));
            for (name, (key, functions)) in spaces {
                let space = json!({
                    "type": "namespace",
                    "name": name,
                    "description": format!("The tools of {key}, found with tool search."),
                    "tools": functions,
                });
                out.push(Arc::new(Encoded::from_value(&space)));
            }
        }
        _ => {
            for ((tool, cache), _) in listed.filter(|(_, deferred)| !**deferred) {
                push(entries.of(tool, cache), &mut out);
            }
            push_search(&mut out, provider, form, search_wire.as_deref(), gemini);
            for name in loaded {
                if kept_loaded.contains(name) || !registry.is_deferred(name) {
                    continue;
                }
                let Some(tool) = registry.get(name) else {
                    continue;
                };
                push(entries.of(tool, ToolCache::of(tool)), &mut out);
                kept_loaded.push(name.clone());
            }
        }
    }
    EncodedRequest {
        provider,
        codec,
        tools: ToolsPayload::new(provider, out),
        rewrites,
        search: Some(OfferedSearch {
            form,
            deferred: count,
        }),
        loaded: kept_loaded,
        gemini,
    }
}

/// The search's entry, unless it is the host's and the host offers none
/// (a registered tool holds its name): no entry names what the codec
/// does not decode to the search.
fn push_search(
    out: &mut Vec<Arc<Encoded>>,
    provider: Provider,
    form: SearchForm,
    wire: Option<&str>,
    gemini: GeminiSchema,
) {
    if form != SearchForm::Host || wire.is_some() {
        out.push(search_entry(provider, form, wire, gemini));
    }
}

/// The namespace a deferred tool goes in for OpenAI Responses: its
/// plugin and server (`intrinsics` for a bare name), and that as a name
/// the API takes.
fn namespace_of(tool: &RegisteredTool, rule: &crate::wire::WireRule) -> (String, String) {
    let key = if tool.name.is_bare() {
        "intrinsics".to_owned()
    } else {
        format!("{}/{}", tool.name.plugin(), tool.name.server())
    };
    let name = rule.wire_name(&key);
    (key, name)
}

/// The entry of the search itself (Gemini's schema sent as `gemini` says).
fn search_entry(
    provider: Provider,
    form: SearchForm,
    wire: Option<&str>,
    gemini: GeminiSchema,
) -> Arc<Encoded> {
    let name = wire.unwrap_or(SEARCH_TOOL);
    let entry = match (provider, form) {
        (Provider::Anthropic, SearchForm::Provider) => json!({
            "type": "tool_search_tool_bm25_20251119",
            "name": "tool_search_tool_bm25",
        }),
        (Provider::Anthropic, SearchForm::ProviderRegex) => json!({
            "type": "tool_search_tool_regex_20251119",
            "name": "tool_search_tool_regex",
        }),
        (Provider::Anthropic, _) => json!({
            "name": name,
            "description": SEARCH_DESCRIPTION,
            "input_schema": search_schema(),
        }),
        (Provider::OpenAiResponses, SearchForm::Host) => json!({
            "type": "tool_search",
            "execution": "client",
            "description": SEARCH_DESCRIPTION,
            "parameters": search_schema(),
        }),
        (Provider::OpenAiResponses, _) => json!({ "type": "tool_search" }),
        (Provider::Gemini, _) => {
            let mut entry = json!({ "name": name, "description": SEARCH_DESCRIPTION });
            match gemini {
                GeminiSchema::JsonSchema => entry["parametersJsonSchema"] = search_schema(),
                GeminiSchema::Subset(limits) => {
                    entry["parameters"] = super::gemini_schema::rewrite(&search_schema(), limits).0;
                }
            }
            entry
        }
        (Provider::Bedrock, _) => json!({
            "toolSpec": {
                "name": name,
                "description": SEARCH_DESCRIPTION,
                "inputSchema": { "json": search_schema() },
            }
        }),
        _ => json!({
            "type": "function",
            "function": {
                "name": name,
                "description": SEARCH_DESCRIPTION,
                "parameters": search_schema(),
            }
        }),
    };
    Arc::new(Encoded::from_value(&entry))
}

impl EncodedRequest {
    /// What the provider is sent for the tools a search of the host's
    /// found (`found`, registered tools): Anthropic a `tool_reference`
    /// block per tool, OpenAI Responses each tool's function definition
    /// (for a `tool_search_output`); `None` for the providers whose search
    /// result is the rendered text.
    pub fn found_entries(&self, found: &[&RegisteredTool]) -> Option<Vec<Value>> {
        let entries = Entries::new(self.provider, &self.codec, GeminiSchema::JsonSchema);
        match self.provider {
            Provider::Anthropic => Some(
                found
                    .iter()
                    .filter_map(|tool| {
                        let wire = self.codec.encode(tool.name.as_str())?;
                        Some(json!({ "type": "tool_reference", "tool_name": wire }))
                    })
                    .collect(),
            ),
            Provider::OpenAiResponses => Some(
                found
                    .iter()
                    .filter(|tool| self.codec.encode(tool.name.as_str()).is_some())
                    .map(|tool| entries.of(tool, ToolCache::of(tool)).value())
                    .collect(),
            ),
            _ => None,
        }
    }
}
